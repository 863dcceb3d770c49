package service_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/ygot/ygot"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"
)

const q3 = "/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=3]"

func TestCapabilities(t *testing.T) {
	e := newEnv(t)
	got, err := e.c.Capabilities(ctx(t), &gnmi.CapabilityRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := &gnmi.CapabilityResponse{
		SupportedModels: []*gnmi.ModelData{
			{Name: "lhcnp", Organization: "The lhcnp project", Version: "2026-12-07"},
			{Name: "lhcnp-types", Organization: "The lhcnp project", Version: "2026-12-07"},
		},
		SupportedEncodings: []gnmi.Encoding{gnmi.Encoding_JSON_IETF, gnmi.Encoding_JSON, gnmi.Encoding_PROTO},
		GNMIVersion:        "0.10.0",
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("Capabilities (-want, +got):\n%s", diff)
	}
}

func TestGet(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct {
		desc   string
		prefix string
		target string
		paths  []string
		typ    gnmi.GetRequest_DataType
		enc    gnmi.Encoding
		want   [][]string // per notification
	}{{
		desc:  "leaf, JSON_IETF, 64-bit as a string",
		paths: []string{q3 + "/config/v-growth"}, enc: gnmi.Encoding_JSON_IETF,
		want: [][]string{{q3 + `/config/v-growth = "1250000000"`}},
	}, {
		desc:  "leaf, JSON, numbers stay numbers",
		paths: []string{q3 + "/config/v-growth"}, enc: gnmi.Encoding_JSON,
		want: [][]string{{q3 + `/config/v-growth = 1250000000`}},
	}, {
		desc:  "leaf, PROTO, typed",
		paths: []string{q3 + "/config/alpha", q3 + "/config/kmax-mode"}, enc: gnmi.Encoding_PROTO,
		want: [][]string{{q3 + `/config/alpha = double 1`}, {q3 + `/config/kmax-mode = "BDP_ADAPTIVE"`}},
	}, {
		desc:  "container, JSON_IETF, module-qualified top level, YANG defaults in use included",
		paths: []string{q3 + "/config"}, enc: gnmi.Encoding_JSON_IETF, typ: gnmi.GetRequest_CONFIG,
		want: [][]string{{q3 + `/config = {"lhcnp:alpha":"1.0","lhcnp:ecn-max-probability":"0.2","lhcnp:enabled":true,"lhcnp:id":3,"lhcnp:k-base":"64000","lhcnp:kmax-mode":"BDP_ADAPTIVE","lhcnp:kmin-mode":"DERIVED","lhcnp:measure` +
			`ment-interval":100,"lhcnp:one-cut-per-episode":false,"lhcnp:overload-cut":false,"lhcnp:overload-cut-growth":false,"lhcnp:per-flow-rtt":false,"lhcnp:trigger-persistence":0,"lhcnp:v-ecn":"20.0","lhcnp:v-growth":"1250000000"}`}},
	}, {
		desc:  "list entry, CONFIG only",
		paths: []string{q3}, enc: gnmi.Encoding_JSON, typ: gnmi.GetRequest_CONFIG,
		want: [][]string{{q3 + ` = {"action-policy":{"config":{"default-action":"RATE_REDUCE","pause-congestion-level":224,` +
			`"pause-duration":1000,"rate-reduce-percent":30,"repeat-resume":false,"resume-enabled":true,"resume-on-drain":false,` +
			`"resume-percent":50}},"config":{"alpha":1.0,"ecn-max-probability":0.2,"enabled":true,"id":3,"k-base":64000,` +
			`"kmax-mode":"BDP_ADAPTIVE","kmin-mode":"DERIVED","measurement-interval":100,"one-cut-per-episode":false,` +
			`"overload-cut":false,"overload-cut-growth":false,"per-flow-rtt":false,"trigger-persistence":0,"v-ecn":20.0,"v-growth":1250000000},"id":3}`}},
	}, {
		desc:  "STATE: applied config and operational state",
		paths: []string{q3 + "/state"}, enc: gnmi.Encoding_PROTO, typ: gnmi.GetRequest_STATE,
		want: [][]string{{
			q3 + `/state/alpha = double 1`,
			q3 + `/state/counters/cnp-rate-reduce-sent = uint 7`,
			q3 + `/state/effective-kmax = uint 1250000`,
			q3 + `/state/id = uint 3`,
			q3 + `/state/last-cnp/action = "RATE_REDUCE"`,
			q3 + `/state/queue-depth = uint 4096`,
		}},
	}, {
		desc:  "OPERATIONAL: no applied config",
		paths: []string{q3 + "/state"}, enc: gnmi.Encoding_PROTO, typ: gnmi.GetRequest_OPERATIONAL,
		want: [][]string{{
			q3 + `/state/counters/cnp-rate-reduce-sent = uint 7`,
			q3 + `/state/effective-kmax = uint 1250000`,
			q3 + `/state/last-cnp/action = "RATE_REDUCE"`,
			q3 + `/state/queue-depth = uint 4096`,
		}},
	}, {
		desc:  "ALL under a queue, both trees",
		paths: []string{q3 + "/*/alpha"}, enc: gnmi.Encoding_PROTO,
		want: [][]string{{q3 + `/config/alpha = double 1`, q3 + `/state/alpha = double 1`}},
	}, {
		desc: "wildcard key, omitted key and ... give the same leaves",
		paths: []string{
			"/lhcnp/interfaces/interface[name=*]/queues/queue[id=*]/state/effective-kmax",
			"/lhcnp/interfaces/interface/queues/queue/state/effective-kmax",
			"/lhcnp/.../effective-kmax",
		},
		enc: gnmi.Encoding_JSON_IETF,
		want: [][]string{
			{q3 + `/state/effective-kmax = "1250000"`},
			{q3 + `/state/effective-kmax = "1250000"`},
			{q3 + `/state/effective-kmax = "1250000"`},
		},
	}, {
		desc:  "wildcard node, JSON: one value per matched node",
		paths: []string{"/lhcnp/interfaces/interface/queues/queue/state/counters"}, enc: gnmi.Encoding_JSON,
		want: [][]string{{q3 + `/state/counters = {"cnp-rate-reduce-sent":7}`}},
	}, {
		desc:   "prefix and target echoed, paths relative to the prefix",
		prefix: q3, target: "sw1", paths: []string{"config/v-growth"}, enc: gnmi.Encoding_PROTO,
		want: [][]string{{`/config/v-growth = uint 1250000000`}},
	}, {
		desc:  "module-qualified names and our origin accepted",
		paths: []string{"/lhcnp:lhcnp/global/config/enabled"}, enc: gnmi.Encoding_PROTO,
		want: [][]string{{`/lhcnp/global/config/enabled = bool true`}},
	}, {
		desc:  "wildcard without data: empty notification",
		paths: []string{"/lhcnp/flow-table/flows/flow"}, enc: gnmi.Encoding_PROTO,
		want: [][]string{nil},
	}} {
		t.Run(tt.desc, func(t *testing.T) {
			req := &gnmi.GetRequest{Type: tt.typ, Encoding: tt.enc}
			if tt.prefix != "" || tt.target != "" {
				req.Prefix = mustPath(tt.prefix)
				req.Prefix.Target = tt.target
			}
			for _, p := range tt.paths {
				pp := mustPath(p)
				if p[0] != '/' {
					pp = mustPath("/" + p)
				}
				req.Path = append(req.Path, pp)
			}
			if tt.desc == "module-qualified names and our origin accepted" {
				req.Path[0].Origin = schema.Origin
			}
			resp, err := e.c.Get(ctx(t), req)
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			var got [][]string
			for _, n := range resp.GetNotification() {
				if n.GetPrefix().GetTarget() != tt.target {
					t.Errorf("prefix target %q, want %q", n.GetPrefix().GetTarget(), tt.target)
				}
				if n.GetTimestamp() == 0 {
					t.Errorf("notification without timestamp")
				}
				got = append(got, render(n))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Get (-want, +got):\n%s", diff)
			}
		})
	}
}

func TestGetRootJSONIETF(t *testing.T) {
	e := newEnv(t)
	resp, err := e.c.Get(ctx(t), &gnmi.GetRequest{Type: gnmi.GetRequest_CONFIG, Encoding: gnmi.Encoding_JSON_IETF})
	if err != nil {
		t.Fatal(err)
	}
	got := render(resp.GetNotification()[0])
	// What initialConfig sets, and every YANG default in use (3.3.4).
	want := []string{`/ = {"lhcnp:lhcnp":{"collaborative-suppression":{"config":{"arrival-rate-drop-threshold":20,"enabled":true,` +
		`"escalation-action":"PAUSE","upstream-first":true,"upstream-first-marked":false}},"fast-cnp":{"config":{"congestion-threshold":"100000",` +
		`"ecn-mark-alongside":true,"ecn-pmax":"0.2","ioam-trace":false,"max-flows-per-trigger":4,"min-cnp-interval":50,` +
		`"port-cnp-burst":100,"port-cnp-rate":1000000}},"fcn":{"config":{"aging-timeout":60,"congestion-threshold":"100000",` +
		`"max-mappings":65536,"min-cnp-interval":50}},"flow-table":{"config":{"idle-timeout":60,"learn-from-cm-messages":true,` +
		`"learn-from-data-packets":true,"max-entries":65536,"replacement-policy":"REPLACE_LEAST_ACTIVE"}},` +
		`"global":{"code-points":{"config":{"extension-class-num":247,"fast-cnp-ioam-option-type":157,"fast-cnp-option-type":158,` +
		`"fcn-udp-port":1021,"icmpv6-type":200,"rate-advice-opcode":192}},"config":{"cnp-dscp":48,"enabled":true,` +
		`"fast-cnp-enabled":false,"fcn-role":"DISABLED","long-haul-cnp-icmpv6":true,"long-haul-cnp-rocev2":false,` +
		`"metric-disclosure":true,"metric-type":"QUEUE_DEPTH","rate-advice-enabled":false,"rocev2-partition-key":65535,` +
		`"timestamp-object":false}},"interfaces":{"interface":[{"config":{"cnp-burst":100,"cnp-rate-limit":10000,"enabled":true,` +
		`"name":"wan0","rtt-est":10000,"rtt-source":"STATIC"},"name":"wan0","queues":{"queue":[{"action-policy":{"config":` +
		`{"default-action":"RATE_REDUCE","pause-congestion-level":224,"pause-duration":1000,"rate-reduce-percent":30,` +
		`"repeat-resume":false,"resume-enabled":true,"resume-on-drain":false,"resume-percent":50}},"config":{"alpha":"1.0",` +
		`"ecn-max-probability":"0.2","enabled":true,"id":3,"k-base":"64000","kmax-mode":"BDP_ADAPTIVE","kmin-mode":"DERIVED",` +
		`"measurement-interval":100,"one-cut-per-episode":false,"overload-cut":false,"overload-cut-growth":false,"per-flow-rtt":false,` +
		`"trigger-persistence":0,"v-ecn":"20.0","v-growth":"1250000000"},"id":3}]}}]},"rate-advice":{"config":{"queue-based":true}},` +
		`"switch-cnp":{"config":{"buffer-share":1,"delay-threshold":20,"enabled":false,"min-cnp-interval":50}}}}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Get / CONFIG (-want, +got):\n%s", diff)
	}
}

func TestGetErrors(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct {
		desc string
		req  *gnmi.GetRequest
		code codes.Code
	}{
		{"path outside the schema: INVALID_ARGUMENT (3.3.1)",
			&gnmi.GetRequest{Path: []*gnmi.Path{mustPath("/lhcnp/bogus")}}, codes.InvalidArgument},
		{"keys on a container", &gnmi.GetRequest{Path: []*gnmi.Path{mustPath("/lhcnp/global[x=1]")}}, codes.InvalidArgument},
		{"unknown key name", &gnmi.GetRequest{Path: []*gnmi.Path{mustPath("/lhcnp/interfaces/interface[ifname=a]")}}, codes.InvalidArgument},
		{"foreign origin", &gnmi.GetRequest{Path: []*gnmi.Path{{Origin: "cli", Elem: mustPath("/lhcnp").Elem}}}, codes.InvalidArgument},
		{"unsupported encoding: UNIMPLEMENTED", &gnmi.GetRequest{Encoding: gnmi.Encoding_ASCII}, codes.Unimplemented},
		{"unknown model", &gnmi.GetRequest{UseModels: []*gnmi.ModelData{{Name: "openconfig-interfaces"}}}, codes.InvalidArgument},
		{"no data at a concrete path: NOT_FOUND",
			&gnmi.GetRequest{Path: []*gnmi.Path{mustPath("/lhcnp/interfaces/interface[name=nope]/config/rtt-est")}}, codes.NotFound},
		{"config leaf asked as STATE",
			&gnmi.GetRequest{Type: gnmi.GetRequest_STATE, Path: []*gnmi.Path{mustPath(q3 + "/config/alpha")}}, codes.NotFound},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			_, err := e.c.Get(ctx(t), tt.req)
			if status.Code(err) != tt.code {
				t.Errorf("Get: %v, want %v", err, tt.code)
			}
		})
	}
}

// TestOriginInPrefixAndPathRefused: gNMI 2.7, "A single request MUST NOT
// specify origin in both prefix and path fields in any RPC payload
// messages". Subscribe refused it; the old Get and Set accepted it (Set
// applied the update), and this test failed on them. The origin in the
// prefix alone is still served.
func TestOriginInPrefixAndPathRefused(t *testing.T) {
	e := newEnv(t)
	elems := mustPath(q3 + "/config/alpha").Elem
	both := &gnmi.Path{Origin: "lhcnp", Elem: elems}
	prefix := &gnmi.Path{Origin: "openconfig"}
	_, err := e.c.Get(ctx(t), &gnmi.GetRequest{Prefix: prefix, Path: []*gnmi.Path{both}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "gNMI 2.7") {
		t.Errorf("Get with origin in prefix and path: %v, want INVALID_ARGUMENT citing 2.7", err)
	}
	_, err = e.c.Set(ctx(t), &gnmi.SetRequest{Prefix: prefix, Update: []*gnmi.Update{{Path: both, Val: dbl(0.5)}}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "update[0]") {
		t.Errorf("Set with origin in prefix and path: %v, want INVALID_ARGUMENT naming update[0]", err)
	}
	if got := configLeaves(t, e); !has(got, q3+"/config/alpha = double 1") {
		t.Errorf("the refused Set changed alpha:\n%s", strings.Join(got, "\n"))
	}
	if _, err := e.c.Get(ctx(t), &gnmi.GetRequest{Prefix: prefix, Path: []*gnmi.Path{{Elem: elems}}}); err != nil {
		t.Errorf("Get with the origin in the prefix only: %v", err)
	}
	if _, err := e.c.Set(ctx(t), &gnmi.SetRequest{Prefix: prefix, Update: []*gnmi.Update{{Path: &gnmi.Path{Elem: elems}, Val: dbl(0.5)}}}); err != nil {
		t.Errorf("Set with the origin in the prefix only: %v", err)
	}
}

// TestGetOrderByKeyValue: a Get's values come in path order with a number
// key by its value, as Set's errors name them (schema.ComparePaths):
// queue[id=2] before queue[id=3] before queue[id=10], one update each for
// a wildcard. The values were sorted as text, queue[id=10] first. (A
// list within one JSON value is in ygot's order, Marshal7951's: its keys
// as text.)
func TestGetOrderByKeyValue(t *testing.T) {
	e := newEnv(t)
	root := &oc.Root{}
	for _, id := range []uint8{10, 2} {
		q := root.GetOrCreateLhcnp().GetOrCreateInterfaces().GetOrCreateInterface("wan0").GetOrCreateQueues().GetOrCreateQueue(id)
		q.GetOrCreateState().Id = ygot.Uint8(id)
		q.GetOrCreateState().EffectiveKmax = ygot.Uint64(1000 * uint64(id))
	}
	vals, err := testSchema.Values(root)
	if err != nil {
		t.Fatal(err)
	}
	var b store.Batch
	for _, v := range vals {
		if l, ok := testSchema.LeafAt(v.Path); ok && l.Class != schema.ClassConfig {
			b.Update(v.Path, v.Val, l.Kind)
		}
	}
	if _, err := e.st.Apply(&b, 0); err != nil {
		t.Fatal(err)
	}
	const queues = "/lhcnp/interfaces/interface[name=wan0]/queues"
	for _, tt := range []struct {
		desc string
		path string
		enc  gnmi.Encoding
		want []string
	}{
		{"wildcard, JSON", queues + "/queue[id=*]/state/effective-kmax", gnmi.Encoding_JSON, []string{
			queues + "/queue[id=2]/state/effective-kmax = 2000",
			queues + "/queue[id=3]/state/effective-kmax = 1250000",
			queues + "/queue[id=10]/state/effective-kmax = 10000",
		}},
		{"wildcard, PROTO", queues + "/queue/state/id", gnmi.Encoding_PROTO, []string{
			queues + "/queue[id=2]/state/id = uint 2",
			queues + "/queue[id=3]/state/id = uint 3",
			queues + "/queue[id=10]/state/id = uint 10",
		}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			resp, err := e.c.Get(ctx(t), &gnmi.GetRequest{Type: gnmi.GetRequest_STATE, Encoding: tt.enc, Path: []*gnmi.Path{mustPath(tt.path)}})
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if diff := cmp.Diff(tt.want, render(resp.GetNotification()[0])); diff != "" {
				t.Errorf("Get %s (-want, +got):\n%s", tt.path, diff)
			}
		})
	}
}
