package store

import (
	"testing"

	"google.golang.org/protobuf/proto"
)

// FuzzParsePath: no panic, and what parses prints back (PathString) to a
// string that parses to the same path.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"", "/", "/lhcnp/interfaces/interface[name=eth0]/state/counters/in-octets",
		"/a/b[k=v][k2=v2]/c", `/a[k=x\]y\\z]/b`, "/a/*/b[k=*]", "/a/.../b", "/a[", "/a[k]", "//", "/a[k=v"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePath(s)
		if err != nil {
			return
		}
		back, err := ParsePath(PathString(p))
		if err != nil {
			t.Fatalf("%q -> %q does not parse: %v", s, PathString(p), err)
		}
		if !proto.Equal(p, back) {
			t.Fatalf("%q -> %v -> %q -> %v", s, p, PathString(p), back)
		}
	})
}
