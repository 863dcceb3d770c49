package schema

import (
	"testing"

	"github.com/lhcnp/lhcnp/gnmi/store"
)

// FuzzResolve: any path a client can send is resolved against the schema or
// rejected with an error; it never panics.
func FuzzResolve(f *testing.F) {
	s, err := New()
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range []string{"/", "/lhcnp", "/lhcnp/interfaces/interface[name=eth0]/queues/queue[id=3]/config/alpha",
		"/lhcnp/interfaces/interface[name=*]/queues/queue[id=*]/state/counters", "/lhcnp/.../state",
		"/lhcnp/flow-table/flows/flow[source-address=10.0.0.1]", "/lhcnp/interfaces/interface[bogus=1]",
		"/nope", "/lhcnp/interfaces/interface[name=eth0]/queues/queue[id=x]/config"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := store.ParsePath(in)
		if err != nil {
			return
		}
		_, _ = s.Resolve(p)
	})
}

// FuzzDecodeJSON: any JSON a client can send as a value, for any node, is
// decoded or refused with a *ValueError; it never panics, and what it
// accepts it writes as valid JSON that it accepts again unchanged.
func FuzzDecodeJSON(f *testing.F) {
	s, err := New()
	if err != nil {
		f.Fatal(err)
	}
	paths := []string{"/", "/lhcnp/interfaces/interface[name=a]", "/lhcnp/interfaces/interface[name=a]/queues/queue[id=0]/config",
		"/lhcnp/interfaces/interface[name=a]/queues/queue[id=0]/config/alpha", "/lhcnp/global/config/enabled",
		"/lhcnp/interfaces/interface[name=a]/queues/queue[id=0]/config/v-growth"}
	for i, v := range []string{`0.5`, `"0.5"`, `{"lhcnp:lhcnp":{"global":{"config":{"enabled":true}}}}`,
		`{"config":{"alpha":1,"id":0}}`, `{"queues":{"queue":[{"id":1}]}}`, `true`, `18446744073709551616`, `[1,2]`, `{"a":`,
		`1e-3`, `"+00.50"`, `".5"`, `9223372036854775.807`, `1E+2`, `0e-99999999999`} {
		f.Add(uint8(i), v)
	}
	f.Fuzz(func(t *testing.T, which uint8, in string) {
		res, err := s.Resolve(store.MustPath(paths[int(which)%len(paths)]))
		if err != nil {
			t.Fatal(err)
		}
		out, err := DecodeJSON(res.Entry, []byte(in))
		if err != nil {
			if _, ok := err.(*ValueError); !ok {
				t.Fatalf("error %T %v, want *ValueError", err, err)
			}
			return
		}
		again, err := DecodeJSON(res.Entry, out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("DecodeJSON(%s) = %s, again %s, %v", in, out, again, err)
		}
	})
}
