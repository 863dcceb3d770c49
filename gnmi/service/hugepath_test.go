package service_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/status"
)

// TestHugePathInErrors: a request's path is named in its error capped
// (schema.MaxErrorPathBytes, then "… (N bytes)"), whatever its size: a
// path of a thousand elements, one element of a megabyte, a key value of
// a megabyte. Each is refused by Get, Set and Subscribe with a message of
// a few hundred bytes. It failed before: the whole path came back, up to
// the 4 MiB a request may have, and went into whatever logged the error.
func TestHugePathInErrors(t *testing.T) {
	e := newEnv(t)
	c := subscribeClient(t, e)
	big := strings.Repeat("x", 1<<20)
	many := &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "lhcnp"}}}
	for range 100_000 {
		many.Elem = append(many.Elem, &gnmi.PathElem{Name: "abcdefgh"})
	}
	for _, tt := range []struct {
		desc string
		path *gnmi.Path
	}{
		{"100 000 elements", many},
		{"an element of 1 MiB", &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "lhcnp"}, {Name: big}}}},
		{"a key of 1 MiB", &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "lhcnp"}, {Name: "interfaces"},
			{Name: "interface", Key: map[string]string{"name": big}}, {Name: "config"}, {Name: "bogus"}}}},
		{"a key name of 1 MiB", &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "lhcnp"}, {Name: "interfaces"},
			{Name: "interface", Key: map[string]string{big: "wan0"}}, {Name: "config"}, {Name: "rtt-est"}}}},
		{"an origin of 1 MiB", &gnmi.Path{Origin: big, Elem: []*gnmi.PathElem{{Name: "lhcnp"}, {Name: "global"}}}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			// The test is about the error's size, not its speed: ctx's 10 s
			// is for a hung server, and under -race on a loaded CI machine
			// a Set delete of the 100 000-element path (1.3 MB) took more.
			ctx := func(t *testing.T) context.Context {
				c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				t.Cleanup(cancel)
				return c
			}
			check := func(rpc string, err error) {
				t.Helper()
				msg := status.Convert(err).Message()
				if err == nil || len(msg) > 2048 || !strings.Contains(msg, " bytes)") {
					t.Errorf("%s: %v (%d bytes), want an error of at most 2 KiB with the path capped", rpc, status.Code(err), len(msg))
					msg = regexp.MustCompile(`(x{20})x+`).ReplaceAllString(msg, "$1...")
					msg = regexp.MustCompile(`(/abcdefgh){3}(/abcdefgh)+`).ReplaceAllString(msg, "/abcdefgh...")
					t.Logf("%s: %s", rpc, msg)
				}
			}
			_, err := e.c.Get(ctx(t), &gnmi.GetRequest{Path: []*gnmi.Path{tt.path}, Encoding: gnmi.Encoding_JSON_IETF})
			check("get", err)
			_, err = e.c.Set(ctx(t), &gnmi.SetRequest{Update: []*gnmi.Update{{Path: tt.path, Val: uintVal(1)}}})
			check("set update", err)
			_, err = e.c.Set(ctx(t), &gnmi.SetRequest{Delete: []*gnmi.Path{tt.path}})
			check("set delete", err)
			_, err = subscribeOnce(t, c, &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_ONCE,
				Subscription: []*gnmi.Subscription{{Path: tt.path}}})
			check("subscribe", err)
		})
	}
}
