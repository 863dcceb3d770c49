package service_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestErrorsNamePathOnce: an error about a request's path names the path
// once, whichever element is at fault. The caller names the whole path
// ("path P:", "update[0] P:") and the schema's or the pattern's error adds
// the part at fault only when it is shorter (not in the schema: /lhcnp/nope).
// It failed before when the last element was at fault: "path P: not in the
// schema: P", "path P: P: \"...\" cannot have keys" (Get, Set and
// Subscribe, as gnmic showed against `lhcnp switch`).
func TestErrorsNamePathOnce(t *testing.T) {
	e := newEnv(t)
	c := subscribeClient(t, e)
	emptyName := &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "lhcnp"}, {Name: "global"}, {Name: ""}}}
	get := func(p *gnmi.Path) error {
		_, err := e.c.Get(ctx(t), &gnmi.GetRequest{Path: []*gnmi.Path{p}, Encoding: gnmi.Encoding_JSON_IETF})
		return err
	}
	update := func(p *gnmi.Path) error {
		_, err := e.c.Set(ctx(t), &gnmi.SetRequest{Update: []*gnmi.Update{{Path: p, Val: uintVal(1)}}})
		return err
	}
	del := func(p *gnmi.Path) error {
		_, err := e.c.Set(ctx(t), &gnmi.SetRequest{Delete: []*gnmi.Path{p}})
		return err
	}
	subscribe := func(p *gnmi.Path) error {
		_, err := subscribeOnce(t, c, &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_ONCE,
			Subscription: []*gnmi.Subscription{{Path: p}}})
		return err
	}
	subscribePrefix := func(p *gnmi.Path) error {
		_, err := subscribeOnce(t, c, &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_ONCE, Prefix: p,
			Subscription: []*gnmi.Subscription{{Path: mustPath("/config")}}})
		return err
	}
	const wan0 = "/lhcnp/interfaces/interface[name=wan0]"
	for _, tt := range []struct {
		desc string
		call func(*gnmi.Path) error
		path *gnmi.Path
		code codes.Code
		want string
	}{
		{desc: "get: unknown leaf", call: get, path: mustPath(wan0 + "/config/nope"), code: codes.InvalidArgument,
			want: "path " + wan0 + "/config/nope: not in the schema"},
		{desc: "get: unknown element before the last, named", call: get, path: mustPath("/lhcnp/nope/x"), code: codes.InvalidArgument,
			want: "path /lhcnp/nope/x: not in the schema: /lhcnp/nope"},
		{desc: "get: unknown key name of the last element", call: get, path: mustPath("/lhcnp/interfaces/interface[nam=wan0]"), code: codes.InvalidArgument,
			want: `path /lhcnp/interfaces/interface[nam=wan0]: malformed path: interface has no key "nam" (keys: name)`},
		{desc: "get: unknown key name before the last, named", call: get, path: mustPath("/lhcnp/interfaces/interface[nam=wan0]/config"), code: codes.InvalidArgument,
			want: `path /lhcnp/interfaces/interface[nam=wan0]/config: malformed path: /lhcnp/interfaces/interface[nam=wan0]: interface has no key "nam" (keys: name)`},
		{desc: "get: keys on a leaf", call: get, path: mustPath(wan0 + "/config/rtt-est[x=1]"), code: codes.InvalidArgument,
			want: "path " + wan0 + "/config/rtt-est[x=1]: malformed path: rtt-est is not a list and takes no keys"},
		{desc: "get: ... with keys", call: get, path: mustPath("/lhcnp/...[a=b]"), code: codes.InvalidArgument,
			want: `path /lhcnp/...[a=b]: malformed path: "..." cannot have keys`},
		{desc: "get: empty element name", call: get, path: emptyName, code: codes.InvalidArgument,
			want: "path /lhcnp/global/: malformed path: empty element name"},
		{desc: "set update: unknown leaf", call: update, path: mustPath(wan0 + "/config/nope"), code: codes.NotFound,
			want: "update[0] " + wan0 + "/config/nope: not in the schema"},
		{desc: "set delete: unknown list", call: del, path: mustPath("/lhcnp/nope"), code: codes.NotFound,
			want: "delete[0] /lhcnp/nope: not in the schema"},
		{desc: "set delete: unknown key name", call: del, path: mustPath("/lhcnp/interfaces/interface[nam=x]"), code: codes.InvalidArgument,
			want: `delete[0] /lhcnp/interfaces/interface[nam=x]: malformed path: interface has no key "nam" (keys: name)`},
		{desc: "subscribe: unknown leaf", call: subscribe, path: mustPath(wan0 + "/config/nope"), code: codes.InvalidArgument,
			want: "path " + wan0 + "/config/nope: not in the schema"},
		{desc: "subscribe: keys on a leaf", call: subscribe, path: mustPath(wan0 + "/config/rtt-est[x=1]"), code: codes.InvalidArgument,
			want: "path " + wan0 + "/config/rtt-est[x=1]: malformed path: rtt-est is not a list and takes no keys"},
		{desc: "subscribe: ... with keys", call: subscribe, path: mustPath("/lhcnp/...[a=b]"), code: codes.InvalidArgument,
			want: `path /lhcnp/...[a=b]: "..." cannot have keys`},
		{desc: "subscribe: empty element name", call: subscribe, path: emptyName, code: codes.InvalidArgument,
			want: "path /lhcnp/global/: empty element name"},
		{desc: "subscribe: prefix with ... with keys", call: subscribePrefix, path: mustPath("/lhcnp/...[a=b]"), code: codes.InvalidArgument,
			want: `prefix /lhcnp/...[a=b]: "..." cannot have keys`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			st := status.Convert(tt.call(tt.path))
			if st.Code() != tt.code {
				t.Errorf("code %v, want %v (%s)", st.Code(), tt.code, st.Message())
			}
			if diff := cmp.Diff(tt.want, st.Message()); diff != "" {
				t.Errorf("message (-want, +got):\n%s", diff)
			}
		})
	}
}
