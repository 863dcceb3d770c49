package service_test

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/goyang/pkg/yang"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestErrorsNamePathOnce: an error about a request's path names the path
// once, whichever element is at fault. The caller names the whole path
// ("path P:", "update[0] P:") and the schema's or the pattern's error adds
// the part at fault only when it is shorter (not in the schema: /lhcnp/nope).
// It failed before when the last element was at fault: "path P: not in the
// schema: P", "path P: P: \"...\" cannot have keys" (Get, Set and
// Subscribe, as gnmic showed against `lhcnp switch`). A key value not of its
// type, a Set's validation error and a path in the deprecated element field
// are named as sent, keys included (their cases say what they were before).
// Under a prefix, Subscribe's own checks (sample_interval, the pattern) named
// the subscription's path alone, "path /config:", no path of the tree, where
// the schema's check named prefix and path, as Get and Set do; and
// Subscribe's refusal of a pattern named no part ("..." with keys before
// the last element: "path /lhcnp/...[a=b]/state: \"...\" cannot have keys").
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
	getPrefix := func(p *gnmi.Path) error {
		_, err := e.c.Get(ctx(t), &gnmi.GetRequest{Prefix: p, Path: []*gnmi.Path{mustPath("/config")}, Encoding: gnmi.Encoding_JSON_IETF})
		return err
	}
	updatePrefix := func(p *gnmi.Path) error {
		_, err := e.c.Set(ctx(t), &gnmi.SetRequest{Prefix: p, Update: []*gnmi.Update{{Path: mustPath("/config/enabled"), Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_BoolVal{BoolVal: true}}}}})
		return err
	}
	updateEmpty := func(p *gnmi.Path) error {
		_, err := e.c.Set(ctx(t), &gnmi.SetRequest{Update: []*gnmi.Update{{Path: p, Val: ietf(`{}`)}}})
		return err
	}
	updateVal := func(v string) func(*gnmi.Path) error {
		return func(p *gnmi.Path) error {
			_, err := e.c.Set(ctx(t), &gnmi.SetRequest{Update: []*gnmi.Update{{Path: p, Val: ietf(v)}}})
			return err
		}
	}
	element := func(names ...string) *gnmi.Path { return &gnmi.Path{Element: names} }
	// underPrefix subscribes to p under the prefix wan0, with a
	// sample_interval ONCE refuses: an error names prefix and path.
	underPrefix := func(p *gnmi.Path) error {
		_, err := subscribeOnce(t, c, &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_ONCE, Prefix: mustPath("/lhcnp/interfaces/interface[name=wan0]"),
			Subscription: []*gnmi.Subscription{{Path: p, SampleInterval: uint64(time.Second)}}})
		return err
	}
	// bothOrigins subscribes to p, origin lhcnp, under the prefix wan0 of
	// the same origin: one too many.
	bothOrigins := func(p *gnmi.Path) error {
		prefix := mustPath("/lhcnp/interfaces/interface[name=wan0]")
		prefix.Origin, p.Origin = "lhcnp", "lhcnp"
		_, err := subscribeOnce(t, c, &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_ONCE, Prefix: prefix,
			Subscription: []*gnmi.Subscription{{Path: p}}})
		return err
	}
	const wan0 = "/lhcnp/interfaces/interface[name=wan0]"
	const q = wan0 + "/queues/queue"
	const deprecated = "malformed path: the deprecated element field is not supported, use elem"
	const receiver = "/lhcnp/global/rocev2-receivers/receiver"
	const policy = "/lhcnp/rate-advice/policies/policy"
	const notPrefix = `receiver key prefix: "bogus" is not of type ip-prefix (ipv4-prefix or ipv6-prefix)`
	for _, tt := range []struct {
		desc string
		call func(*gnmi.Path) error
		path *gnmi.Path
		code codes.Code
		want string
		// cut: want is the message's beginning (what follows quotes a
		// YANG pattern).
		cut bool
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
		// A name qualified with another module than lhcnp (which defines
		// every data node): taken as lhcnp's before, in Get, Set and
		// Subscribe ("/bogus:lhcnp/..." set lhcnp's leaf).
		{desc: "get: another module's qualifier", call: get, path: mustPath("/bogus:lhcnp/global/config/enabled"), code: codes.InvalidArgument,
			want: `path /bogus:lhcnp/global/config/enabled: not in the schema: /bogus:lhcnp: module "bogus" is not served (use "lhcnp" or no prefix)`},
		{desc: "set update: the types module's qualifier", call: update, path: mustPath(wan0 + "/config/lhcnp-types:rtt-est"), code: codes.NotFound,
			want: `update[0] ` + wan0 + `/config/lhcnp-types:rtt-est: not in the schema: module "lhcnp-types" defines types, no data nodes (every data node is in "lhcnp": use "lhcnp" or no prefix)`},
		{desc: "subscribe: another module's qualifier", call: subscribe, path: mustPath("/lhcnp/openconfig-interfaces:interfaces"), code: codes.InvalidArgument,
			want: `path /lhcnp/openconfig-interfaces:interfaces: not in the schema: module "openconfig-interfaces" is not served (use "lhcnp" or no prefix)`},
		{desc: "subscribe: unknown leaf", call: subscribe, path: mustPath(wan0 + "/config/nope"), code: codes.InvalidArgument,
			want: "path " + wan0 + "/config/nope: not in the schema"},
		{desc: "subscribe: keys on a leaf", call: subscribe, path: mustPath(wan0 + "/config/rtt-est[x=1]"), code: codes.InvalidArgument,
			want: "path " + wan0 + "/config/rtt-est[x=1]: malformed path: rtt-est is not a list and takes no keys"},
		{desc: "subscribe: ... with keys", call: subscribe, path: mustPath("/lhcnp/...[a=b]"), code: codes.InvalidArgument,
			want: `path /lhcnp/...[a=b]: "..." cannot have keys`},
		{desc: "subscribe: empty element name", call: subscribe, path: emptyName, code: codes.InvalidArgument,
			want: "path /lhcnp/global/: empty element name"},
		{desc: "subscribe under a prefix: a subscription's fault", call: underPrefix, path: mustPath("/config"), code: codes.InvalidArgument,
			want: "path " + wan0 + "/config: sample_interval is not allowed in ONCE mode"},
		{desc: "subscribe under a prefix: ... with keys", call: underPrefix, path: mustPath("/...[a=b]"), code: codes.InvalidArgument,
			want: "path " + wan0 + `/...[a=b]: "..." cannot have keys`},
		{desc: "subscribe under a prefix: origin in both", call: bothOrigins, path: mustPath("/config"), code: codes.InvalidArgument,
			want: "path " + wan0 + "/config: origin set in both the prefix and the path"},
		{desc: "subscribe: ... with keys before the last, named", call: subscribe, path: mustPath("/lhcnp/...[a=b]/state"), code: codes.InvalidArgument,
			want: `path /lhcnp/...[a=b]/state: /lhcnp/...[a=b]: "..." cannot have keys`},
		{desc: "subscribe: prefix with ... with keys before its last, named", call: subscribePrefix, path: mustPath("/lhcnp/...[a=b]/state"), code: codes.InvalidArgument,
			want: `prefix /lhcnp/...[a=b]/state: /lhcnp/...[a=b]: "..." cannot have keys`},
		{desc: "subscribe: prefix with ... with keys", call: subscribePrefix, path: mustPath("/lhcnp/...[a=b]"), code: codes.InvalidArgument,
			want: `prefix /lhcnp/...[a=b]: "..." cannot have keys`},

		// A key value not of its key's type: ygot's gRPC error embedded
		// in Set's message before ("invalid value: rpc error: code =
		// InvalidArgument desc = cannot convert key"), NOT_FOUND "no data"
		// at Get; out of the type's range, Set's validation named the
		// list without keys.
		{desc: "get: key of the wrong type", call: get, path: mustPath(q + "[id=x]/config/kmax"), code: codes.InvalidArgument,
			want: `path ` + q + `[id=x]/config/kmax: malformed path: ` + q + `[id=x]: queue key id: "x" is not a uint8 in 0..15`},
		{desc: "get: key out of its type's range", call: get, path: mustPath(q + "[id=99]/config/kmax"), code: codes.InvalidArgument,
			want: `path ` + q + `[id=99]/config/kmax: malformed path: ` + q + `[id=99]: queue key id: "99" is not a uint8 in 0..15`},
		{desc: "set update: key of the wrong type", call: update, path: mustPath(q + "[id=x]/config/kmax"), code: codes.InvalidArgument,
			want: `update[0] ` + q + `[id=x]/config/kmax: malformed path: ` + q + `[id=x]: queue key id: "x" is not a uint8 in 0..15`},
		{desc: "set update: key out of its type's range", call: update, path: mustPath(q + "[id=99]/config/kmax"), code: codes.InvalidArgument,
			want: `update[0] ` + q + `[id=99]/config/kmax: malformed path: ` + q + `[id=99]: queue key id: "99" is not a uint8 in 0..15`},
		// A number's key not in its canonical form: Get found no data
		// under queue[id=00], a Set to it changed queue 0 (ygot read the
		// number), Subscribe took it and never matched.
		{desc: "get: key not in its canonical form", call: get, path: mustPath(q + "[id=00]/config/kmax"), code: codes.InvalidArgument,
			want: `path ` + q + `[id=00]/config/kmax: malformed path: ` + q + `[id=00]: queue key id: "00" is not a uint8 in its canonical form (0)`},
		{desc: "set update: key not in its canonical form", call: update, path: mustPath(q + "[id=00]/config/kmax"), code: codes.InvalidArgument,
			want: `update[0] ` + q + `[id=00]/config/kmax: malformed path: ` + q + `[id=00]: queue key id: "00" is not a uint8 in its canonical form (0)`},
		// "+3" is 3 in a value (RFC 7950 §9.2.1) but not as a key.
		{desc: "set update: key with a plus sign", call: update, path: mustPath(q + "[id=+3]/config/kmax"), code: codes.InvalidArgument,
			want: `update[0] ` + q + `[id=+3]/config/kmax: malformed path: ` + q + `[id=+3]: queue key id: "+3" is not a uint8 in its canonical form (3)`},
		{desc: "subscribe: key with a space", call: subscribe, path: mustPath(q + "[id= 1]/config/kmax"), code: codes.InvalidArgument,
			want: `path ` + q + `[id= 1]/config/kmax: malformed path: ` + q + `[id= 1]: queue key id: " 1" is not a uint8 in its canonical form (1)`},
		{desc: "set delete: key of the wrong type, last element", call: del, path: mustPath(q + "[id=300]"), code: codes.InvalidArgument,
			want: `delete[0] ` + q + `[id=300]: malformed path: queue key id: "300" is not a uint8 in 0..15`},
		{desc: "subscribe: key of the wrong type", call: subscribe, path: mustPath(q + "[id=x]/config/kmax"), code: codes.InvalidArgument,
			want: `path ` + q + `[id=x]/config/kmax: malformed path: ` + q + `[id=x]: queue key id: "x" is not a uint8 in 0..15`},
		// A key value outside its type's patterns (a union of two) or
		// length: Get answered NOT_FOUND "no data", Subscribe took it,
		// Set's validation refused it ("validation: …/config/prefix:
		// "bogus" does not match regular expression pattern …").
		{desc: "get: key outside its type's patterns", call: get, path: mustPath(receiver + "[prefix=bogus]/config"), code: codes.InvalidArgument,
			want: `path ` + receiver + `[prefix=bogus]/config: malformed path: ` + receiver + `[prefix=bogus]: ` + notPrefix},
		{desc: "set update: key outside its type's patterns", call: updateEmpty, path: mustPath(receiver + "[prefix=bogus]/config"), code: codes.InvalidArgument,
			want: `update[0] ` + receiver + `[prefix=bogus]/config: malformed path: ` + receiver + `[prefix=bogus]: ` + notPrefix},
		{desc: "set delete: key outside its type's patterns, last element", call: del, path: mustPath(receiver + "[prefix=10.0.0.0/33]"), code: codes.InvalidArgument,
			want: `delete[0] ` + receiver + `[prefix=10.0.0.0/33]: malformed path: receiver key prefix: "10.0.0.0/33" is not of type ip-prefix (ipv4-prefix or ipv6-prefix)`},
		{desc: "subscribe: key outside its type's patterns", call: subscribe, path: mustPath(receiver + "[prefix=bogus]/config"), code: codes.InvalidArgument,
			want: `path ` + receiver + `[prefix=bogus]/config: malformed path: ` + receiver + `[prefix=bogus]: ` + notPrefix},
		{desc: "get: key outside its type's length", call: get, path: mustPath(policy + "[name=]/config"), code: codes.InvalidArgument,
			want: `path ` + policy + `[name=]/config: malformed path: ` + policy + `[name=]: policy key name: "" is outside the length 1..64 of its type`},
		// A value ygot refuses (a pattern, a length): named with the keys
		// of the operation's path, where it was the schema's
		// ("invalid value: /lhcnp/rate-advice/policies/policy/config/source-prefix: …").
		{desc: "set update: an invalid value names the keys", call: updateVal(`{"name": "p1", "source-prefix": "bogus"}`),
			path: mustPath(policy + "[name=p1]/config"), code: codes.InvalidArgument, cut: true,
			want: `update[0] ` + policy + `[name=p1]/config: invalid value: ` + policy + `[name=p1]/config/source-prefix: "bogus" does not match regular expression pattern`},
		// ygot names the schema node; of the entries that fail there,
		// the first in path order is named, a number's key by its value
		// (schema.ComparePaths): [name=2] before [name=10], which text put
		// first.
		{desc: "set update: of two entries ygot refuses, the first by a number key's value",
			call: updateVal(`{"policy": [{"name": "10", "config": {"name": "10", "source-prefix": "bogus"}}, {"name": "2", "config": {"name": "2", "source-prefix": "bogus"}}]}`),
			path: mustPath("/lhcnp/rate-advice/policies"), code: codes.InvalidArgument, cut: true,
			want: `update[0] /lhcnp/rate-advice/policies: invalid value: ` + policy + `[name=2]/config/source-prefix: "bogus" does not match regular expression pattern`},
		{desc: "set update: an invalid leaf names the keys", call: updateVal(`""`),
			path: mustPath(wan0 + "/config/name"), code: codes.InvalidArgument,
			want: `update[0] ` + wan0 + `/config/name: invalid value: length 0 is outside range 1..255`},
		{desc: "set update: an invalid value below a list entry names its keys", call: updateVal(`{"name": ""}`),
			path: mustPath(wan0 + "/config"), code: codes.InvalidArgument,
			want: `update[0] ` + wan0 + `/config: invalid value: ` + wan0 + `/config/name: length 0 is outside range 1..255`},

		// Only the deprecated element field: Get and Set read the path as
		// the root before (a Get answered the whole tree, a Set updated
		// the root), Subscribe named it "/".
		{desc: "get: path in element", call: get, path: element("lhcnp", "global"), code: codes.InvalidArgument,
			want: "path /lhcnp/global: " + deprecated},
		{desc: "get: prefix in element", call: getPrefix, path: element("lhcnp", "global"), code: codes.InvalidArgument,
			want: "prefix /lhcnp/global: " + deprecated},
		{desc: "set update: path in element", call: update, path: element("lhcnp", "global", "config", "metric-type"), code: codes.InvalidArgument,
			want: "update[0] /lhcnp/global/config/metric-type: " + deprecated},
		{desc: "set delete: path in element", call: del, path: element("lhcnp"), code: codes.InvalidArgument,
			want: "delete[0] /lhcnp: " + deprecated},
		{desc: "set: prefix in element", call: updatePrefix, path: element("lhcnp", "global"), code: codes.InvalidArgument,
			want: "prefix /lhcnp/global: " + deprecated},
		{desc: "subscribe: path in element", call: subscribe, path: element("lhcnp", "global"), code: codes.InvalidArgument,
			want: "path /lhcnp/global: the deprecated element field is not supported"},
		{desc: "subscribe: prefix in element", call: subscribePrefix, path: element("lhcnp", "global"), code: codes.InvalidArgument,
			want: "prefix /lhcnp/global: the deprecated element field is not supported"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			st := status.Convert(tt.call(tt.path))
			if st.Code() != tt.code {
				t.Errorf("code %v, want %v (%s)", st.Code(), tt.code, st.Message())
			}
			got := st.Message()
			if tt.cut && len(got) > len(tt.want) {
				got = got[:len(tt.want)]
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("message (-want, +got):\n%s", diff)
			}
		})
	}
}

// TestValueIsTheNodeItself: a replace of /lhcnp with a file of the whole
// configuration (examples/switch.json holds "lhcnp:lhcnp") said only
// "invalid value: lhcnp: not in the schema"; it now says the value is the
// node itself and what to send.
func TestValueIsTheNodeItself(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct {
		desc, path, val, want string
	}{
		{desc: "module-qualified", path: "/lhcnp", val: `{"lhcnp:lhcnp": {"global": {}}}`,
			want: `replace[0] /lhcnp: invalid value: lhcnp: not in the schema (the value is the node itself, one member "lhcnp:lhcnp": send what is inside it, or set its parent)`},
		{desc: "by name", path: "/lhcnp/global", val: `{"global": {}}`,
			want: `(the value is the node itself, one member "global": send what is inside it, or set its parent)`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			_, err := e.c.Set(ctx(t), &gnmi.SetRequest{Replace: []*gnmi.Update{{Path: mustPath(tt.path), Val: ietf(tt.val)}}})
			if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), tt.want) {
				t.Errorf("got %v %q, want INVALID_ARGUMENT with %q", st.Code(), st.Message(), tt.want)
			}
		})
	}
}

// TestSetValidationNamesTheEntry: a Set whose candidate is refused after
// every operation's own checks passed (a list entry's key leaf set to
// another value than its key, which ygot checked on the list, not the
// entry, and schema.NormalizeKeys now checks on the entry) names the entry
// with its keys and the operation that wrote the key. With several
// operations the Set once named ygot's schema path without keys and no
// operation ("validation: /lhcnp/interfaces/interface/queues/queue: key
// field Id: …", every operation ABORTED): a user sending five updates was
// not told which entry failed; then ygot's words below the entry ("validation:
// …/queue[id=4]: key field Id: element key 5 != map key 4"), where the
// entry's config/id got ours: one wording for both now
// (TestSetKeyLeafOfEveryList). A value refused below the operation's path,
// in a list entry the path does not name, named the schema path
// ("…/policies/policy/config/source-prefix"). failed is the operation at
// fault, in the order applied (deletes, replaces, updates).
func TestSetValidationNamesTheEntry(t *testing.T) {
	const wan0 = "/lhcnp/interfaces/interface[name=wan0]"
	const q = wan0 + "/queues/queue"
	const policies = "/lhcnp/rate-advice/policies"
	const pattern = `"bogus" does not match regular expression pattern`
	for _, tt := range []struct {
		desc   string
		req    *gnmi.SetRequest
		want   string
		failed int
		// cut: want is the message's beginning (what follows quotes a
		// YANG pattern).
		cut bool
	}{
		{desc: "the second of two updates, under another entry",
			req: &gnmi.SetRequest{Update: []*gnmi.Update{
				{Path: mustPath(q + "[id=3]/config/alpha"), Val: ietf(`"0.5"`)},
				{Path: mustPath(q + "[id=4]/id"), Val: ietf(`5`)},
			}},
			want:   `update[1] ` + q + `[id=4]/id: 5 differs from the list key 4`,
			failed: 1},
		{desc: "the first of two updates of one entry: the one that wrote its key",
			req: &gnmi.SetRequest{Update: []*gnmi.Update{
				{Path: mustPath(q + "[id=4]/id"), Val: ietf(`5`)},
				{Path: mustPath(q + "[id=4]/config/kmax"), Val: ietf(`1000`)},
			}},
			want:   `update[0] ` + q + `[id=4]/id: 5 differs from the list key 4`,
			failed: 0},
		{desc: "a replace of the entry, then an update of its key",
			req: &gnmi.SetRequest{
				Replace: []*gnmi.Update{{Path: mustPath(q + "[id=3]"), Val: ietf(`{"id": 3, "config": {"id": 3}}`)}},
				Update:  []*gnmi.Update{{Path: mustPath(q + "[id=3]/id"), Val: ietf(`7`)}},
			},
			want:   `update[0] ` + q + `[id=3]/id: 7 differs from the list key 3`,
			failed: 1},
		{desc: "under a prefix",
			req: &gnmi.SetRequest{Prefix: mustPath(wan0), Update: []*gnmi.Update{
				{Path: mustPath("/config/rtt-est"), Val: ietf(`20000`)},
				{Path: mustPath("/queues/queue[id=2]/id"), Val: ietf(`9`)},
			}},
			want:   `update[1] ` + q + `[id=2]/id: 9 differs from the list key 2`,
			failed: 1},
		// The commit's naming of the only operation's node (ygot's list,
		// the entry here).
		{desc: "the only operation",
			req:    &gnmi.SetRequest{Update: []*gnmi.Update{{Path: mustPath(q + "[id=3]/id"), Val: ietf(`4`)}}},
			want:   `update[0] ` + q + `[id=3]/id: 4 differs from the list key 3`,
			failed: 0},
		{desc: "an invalid value in an entry below the operation's path",
			req: &gnmi.SetRequest{Update: []*gnmi.Update{
				{Path: mustPath(policies + "/policy[name=p0]/config/name"), Val: ietf(`"p0"`)},
				{Path: mustPath(policies), Val: ietf(`{"policy": [{"name": "p1", "config": {"name": "p1", "source-prefix": "bogus"}}]}`)},
			}},
			want:   `update[1] ` + policies + `: invalid value: ` + policies + `/policy[name=p1]/config/source-prefix: ` + pattern,
			failed: 1, cut: true},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			st := refuse(t, tt.req)
			cut := func(s string) string {
				if tt.cut && len(s) > len(tt.want) {
					return s[:len(tt.want)]
				}
				return s
			}
			if diff := cmp.Diff(tt.want, cut(st.Message())); diff != "" {
				t.Errorf("message (-want, +got):\n%s", diff)
			}
			checkDetails(t, st, tt.failed, codes.InvalidArgument)
			for _, d := range st.Details() {
				if r, ok := d.(*gnmi.SetResponse); ok && tt.failed < len(r.GetResponse()) {
					if got := r.GetResponse()[tt.failed].GetMessage().GetMessage(); got != st.Message() {
						t.Errorf("the failed operation's UpdateResult says %q, the status %q", got, st.Message())
					}
				}
			}
		})
	}
}

// TestSetKeyLeafOfEveryList: for every keyed list of the model that a
// client may write (yang/, walked: the config lists), a Set of the entry's
// own key leaf (…/queue[id=4]/id) to another value than its key is refused
// in the words of its config copy (…/queue[id=4]/config/id), "5 differs
// from the list key 4", naming the leaf with the entry's keys and the
// operation that wrote it, beside an operation that created the entry (and
// the config copy, beside one that wrote the key leaf). The key leaf got
// ygot's words before, "validation: …/queue[id=4]: key field Id: element
// key 5 != map key 4" (failing on the old code for each list).
func TestSetKeyLeafOfEveryList(t *testing.T) {
	// A key value of each list and another; the lists below a list
	// are under its entry of the first value.
	values := map[string][2]string{
		"/lhcnp/interfaces/interface":                   {"wan0", "wan1"},
		"/lhcnp/interfaces/interface/queues/queue":      {"4", "5"},
		"/lhcnp/global/rocev2-receivers/receiver":       {"10.0.0.0/8", "10.1.0.0/16"},
		"/lhcnp/fast-cnp/source-prefixes/source-prefix": {"2001:db8::/32", "2001:db9::/32"},
		"/lhcnp/rate-advice/policies/policy":            {"p0", "p1"},
	}
	type list struct {
		entry        *gnmi.Path // with the first value of its key
		key, another string
	}
	var lists []list
	seen := map[string]bool{}
	var walk func(e *yang.Entry, elems []*gnmi.PathElem, schemaPath string)
	walk = func(e *yang.Entry, elems []*gnmi.PathElem, schemaPath string) {
		for _, name := range slices.Sorted(maps.Keys(e.Dir)) {
			c := e.Dir[name]
			if c.ReadOnly() {
				continue
			}
			sp := schemaPath + "/" + name
			pe := &gnmi.PathElem{Name: name}
			if c.IsList() {
				v, ok := values[sp]
				if !ok {
					t.Errorf("%s: a config list without key values in the test: add them", sp)
					continue
				}
				seen[sp] = true
				if len(strings.Fields(c.Key)) != 1 {
					t.Fatalf("%s: key %q: the test takes one key", sp, c.Key)
				}
				pe.Key = map[string]string{c.Key: v[0]}
				lists = append(lists, list{entry: &gnmi.Path{Elem: append(slices.Clip(elems), pe)}, key: c.Key, another: v[1]})
			}
			walk(c, append(slices.Clip(elems), pe), sp)
		}
	}
	walk(testSchema.Root(), nil, "")
	for sp := range values {
		if !seen[sp] {
			t.Errorf("%s: not a config list of the model", sp)
		}
	}
	jsonString := func(s string) *gnmi.TypedValue {
		if _, err := strconv.ParseUint(s, 10, 64); err == nil {
			return ietf(s)
		}
		return ietf(strconv.Quote(s))
	}
	for _, l := range lists {
		entry := schema.PathString(l.entry)
		v := l.entry.GetElem()[len(l.entry.GetElem())-1].GetKey()[l.key]
		for _, tt := range []struct{ first, second string }{
			{first: "/config/" + l.key, second: "/" + l.key},
			{first: "/" + l.key, second: "/config/" + l.key},
		} {
			t.Run(entry+tt.second, func(t *testing.T) {
				st := refuse(t, &gnmi.SetRequest{Update: []*gnmi.Update{
					{Path: mustPath(entry + tt.first), Val: jsonString(v)},
					{Path: mustPath(entry + tt.second), Val: jsonString(l.another)},
				}})
				if want := "update[1] " + entry + tt.second + ": " + l.another + " differs from the list key " + v; st.Message() != want {
					t.Errorf("Set: %q, want %q", st.Message(), want)
				}
				checkDetails(t, st, 1, codes.InvalidArgument)
			})
		}
	}
}

// TestSetNamesEveryBrokenEntry: a Set whose candidate breaks the model's
// rules in several entries names every one, each with the operation that
// broke it (up to 8, the others counted), in path order, and the status
// details give each operation at fault its own errors, the others ABORTED.
// The old code named the first entry alone, the operation that broke
// another ABORTED: a user who fixed one met the next.
func TestSetNamesEveryBrokenEntry(t *testing.T) {
	const q = "/lhcnp/interfaces/interface[name=wan0]/queues/queue"
	const kmaxMissing = "/config/kmax: must be set when kmax-mode is EXPLICIT"
	explicit := func(ids ...int) *gnmi.TypedValue {
		var entries []string
		for _, id := range ids {
			entries = append(entries, fmt.Sprintf(`{"id": %d, "config": {"id": %d, "kmax-mode": "EXPLICIT"}}`, id, id))
		}
		return ietf(`{"queue": [` + strings.Join(entries, ", ") + `]}`)
	}
	var named []string
	for id := range 8 {
		named = append(named, fmt.Sprintf("replace[0] %s[id=%d]%s", q, id, kmaxMissing))
	}
	eightNamed := strings.Join(named, "; ")
	for _, tt := range []struct {
		desc string
		req  *gnmi.SetRequest
		want string
		// results are the messages of the UpdateResults, "" for ABORTED.
		results []string
	}{
		{desc: "two operations, two entries",
			req: &gnmi.SetRequest{Update: []*gnmi.Update{
				{Path: mustPath(q + "[id=4]/config/kmax-mode"), Val: ietf(`"EXPLICIT"`)},
				{Path: mustPath(q + "[id=3]/config/alpha"), Val: ietf(`"0.5"`)},
				{Path: mustPath(q + "[id=3]/config/kmin-mode"), Val: ietf(`"EXPLICIT"`)},
			}},
			want: `update[2] ` + q + `[id=3]/config/kmin: must be set when kmin-mode is EXPLICIT; update[0] ` + q + `[id=4]` + kmaxMissing,
			results: []string{`update[0] ` + q + `[id=4]` + kmaxMissing, "",
				`update[2] ` + q + `[id=3]/config/kmin: must be set when kmin-mode is EXPLICIT`}},
		{desc: "one operation, two entries",
			req:     &gnmi.SetRequest{Update: []*gnmi.Update{{Path: mustPath("/lhcnp/interfaces/interface[name=wan0]/queues"), Val: explicit(5, 6)}}},
			want:    `update[0] ` + q + `[id=5]` + kmaxMissing + `; update[0] ` + q + `[id=6]` + kmaxMissing,
			results: []string{`update[0] ` + q + `[id=5]` + kmaxMissing + `; update[0] ` + q + `[id=6]` + kmaxMissing}},
		{desc: "a number's key in order of its value (2 before 10)",
			req:     &gnmi.SetRequest{Update: []*gnmi.Update{{Path: mustPath("/lhcnp/interfaces/interface[name=wan0]/queues"), Val: explicit(10, 2)}}},
			want:    `update[0] ` + q + `[id=2]` + kmaxMissing + `; update[0] ` + q + `[id=10]` + kmaxMissing,
			results: []string{`update[0] ` + q + `[id=2]` + kmaxMissing + `; update[0] ` + q + `[id=10]` + kmaxMissing}},
		{desc: "two key leaves",
			req: &gnmi.SetRequest{Update: []*gnmi.Update{
				{Path: mustPath(q + "[id=4]/id"), Val: ietf(`5`)},
				{Path: mustPath(q + "[id=6]/config/id"), Val: ietf(`7`)},
			}},
			want: `update[0] ` + q + `[id=4]/id: 5 differs from the list key 4; update[1] ` + q + `[id=6]/config/id: 7 differs from the list key 6`,
			results: []string{`update[0] ` + q + `[id=4]/id: 5 differs from the list key 4`,
				`update[1] ` + q + `[id=6]/config/id: 7 differs from the list key 6`}},
		{desc: "more than are named",
			req: &gnmi.SetRequest{
				Update:  []*gnmi.Update{{Path: mustPath(q + "[id=3]/config/alpha"), Val: ietf(`"0.5"`)}},
				Replace: []*gnmi.Update{{Path: mustPath("/lhcnp/interfaces/interface[name=wan0]/queues"), Val: explicit(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)}},
			},
			want:    eightNamed + "; and 2 more",
			results: []string{eightNamed, ""}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			st := refuse(t, tt.req)
			if diff := cmp.Diff(tt.want, st.Message()); diff != "" {
				t.Errorf("message (-want, +got):\n%s", diff)
			}
			var got []string
			for _, d := range st.Details() {
				if r, ok := d.(*gnmi.SetResponse); ok {
					for _, u := range r.GetResponse() {
						switch m := u.GetMessage(); codes.Code(m.GetCode()) {
						case codes.Aborted:
							got = append(got, "")
						case codes.InvalidArgument:
							got = append(got, m.GetMessage())
						default:
							got = append(got, fmt.Sprintf("code %d: %s", m.GetCode(), m.GetMessage()))
						}
					}
				}
			}
			if diff := cmp.Diff(tt.results, got); diff != "" {
				t.Errorf("UpdateResults (-want, +got):\n%s", diff)
			}
		})
	}
}

// refuse sends req to the target of a new env and returns its status,
// failing the test unless it is INVALID_ARGUMENT and the configuration is
// as it was.
func refuse(t *testing.T, req *gnmi.SetRequest) *status.Status {
	t.Helper()
	e := newEnv(t)
	before := configLeaves(t, e)
	_, err := e.c.Set(ctx(t), req)
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("Set: %v, want INVALID_ARGUMENT", err)
	}
	if diff := cmp.Diff(before, configLeaves(t, e)); diff != "" {
		t.Errorf("config changed (-before, +after):\n%s", diff)
	}
	return st
}

// TestSetListEntryWithoutKey: a list entry without its key inside a
// subtree is refused at its operation by the schema's decoder, naming the
// entry by its index below the operation's path and the key, the other
// operations ABORTED; ygot refused it in its words, with Go types and the
// value quoted uncut ("failed to update struct … key field name (*string)
// has nil value <nil>").
func TestSetListEntryWithoutKey(t *testing.T) {
	const q = "/lhcnp/interfaces/interface[name=wan0]/queues/queue"
	st := refuse(t, &gnmi.SetRequest{Update: []*gnmi.Update{
		{Path: mustPath(q + "[id=3]/config/alpha"), Val: ietf(`"0.5"`)},
		{Path: mustPath("/lhcnp/interfaces"), Val: ietf(`{"interface": [{"config": {"rtt-est": 1}}]}`)},
	}})
	const want = `update[1] /lhcnp/interfaces: invalid value: interface[0]: a list entry without its key "name"`
	if m := st.Message(); m != want {
		t.Errorf("message %q, want %q", m, want)
	}
	checkDetails(t, st, 1, codes.InvalidArgument)
}

// TestSetListEntryGivenTwice: two entries of one list with the same keys
// in a value (RFC 7950 §7.8.2: a list's keys are unique) are refused at
// the operation, in JSON and JSON_IETF alike, naming the entry with its
// keys; the Set succeeded, the last entry kept.
func TestSetListEntryGivenTwice(t *testing.T) {
	for _, tt := range []struct {
		desc string
		val  *gnmi.TypedValue
	}{
		{"json_ietf_val", ietf(`{"interface": [{"name": "wan0", "config": {"rtt-est": 5}}, {"name": "wan0", "config": {"rtt-est": 7}}]}`)},
		{"json_val", &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonVal{JsonVal: []byte(`{"interface": [{"name": "wan0"}, {"lhcnp:name": "wan0"}]}`)}}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			st := refuse(t, &gnmi.SetRequest{Replace: []*gnmi.Update{{Path: mustPath("/lhcnp/interfaces"), Val: tt.val}}})
			const want = `replace[0] /lhcnp/interfaces: invalid value: interface[name=wan0]: list entry given twice (entries 0 and 1 of the array): a list's keys are unique (RFC 7950 §7.8.2)`
			if m := st.Message(); m != want {
				t.Errorf("message %q, want %q", m, want)
			}
			checkDetails(t, st, 0, codes.InvalidArgument)
		})
	}
}

// TestSetMemberGivenTwice: a member given twice in one object of a value
// ({"alpha": "0.5", "alpha": "0.7"}) is refused at its operation, naming
// the member's path below the operation's and the member, in JSON and
// JSON_IETF alike: the Set succeeded, the last one kept (encoding/json's
// way; RFC 8259 §4 leaves an object with names not unique to the
// receiver, and which one the client meant is not known).
func TestSetMemberGivenTwice(t *testing.T) {
	const q = "/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=3]"
	for _, tt := range []struct {
		desc string
		path string
		val  *gnmi.TypedValue
		want string
	}{
		{"json_ietf_val, a leaf", q + "/config", ietf(`{"alpha": "0.5", "alpha": "0.7"}`),
			`update[0] ` + q + `/config: invalid value: alpha: member "alpha" given twice in one object (RFC 8259 §4: the names in an object should be unique; which one was meant is not known)`},
		{"json_val, in a list entry", "/lhcnp/interfaces", &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonVal{JsonVal: []byte(
			`{"interface": [{"name": "wan0", "config": {"rtt-est": 5, "rtt-est": 7}}]}`)}},
			`update[0] /lhcnp/interfaces: invalid value: interface[0]/config/rtt-est: member "rtt-est" given twice in one object (RFC 8259 §4: the names in an object should be unique; which one was meant is not known)`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			st := refuse(t, &gnmi.SetRequest{Update: []*gnmi.Update{{Path: mustPath(tt.path), Val: tt.val}}})
			if m := st.Message(); m != tt.want {
				t.Errorf("message %q, want %q", m, tt.want)
			}
			checkDetails(t, st, 0, codes.InvalidArgument)
		})
	}
}
