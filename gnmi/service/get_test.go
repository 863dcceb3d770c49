package service_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/openconfig/gnmi/proto/gnmi"
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
			{Name: "lhcnp", Organization: "The lhcnp project", Version: "2026-12-06"},
			{Name: "lhcnp-types", Organization: "The lhcnp project", Version: "2026-12-06"},
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
		desc:  "container, JSON_IETF, module-qualified top level",
		paths: []string{q3 + "/config"}, enc: gnmi.Encoding_JSON_IETF, typ: gnmi.GetRequest_CONFIG,
		want: [][]string{{q3 + `/config = {"lhcnp:alpha":"1","lhcnp:id":3,"lhcnp:kmax-mode":"BDP_ADAPTIVE","lhcnp:v-growth":"1250000000"}`}},
	}, {
		desc:  "list entry, CONFIG only",
		paths: []string{q3}, enc: gnmi.Encoding_JSON, typ: gnmi.GetRequest_CONFIG,
		want: [][]string{{q3 + ` = {"config":{"alpha":1,"id":3,"kmax-mode":"BDP_ADAPTIVE","v-growth":1250000000},"id":3}`}},
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
	want := []string{`/ = {"lhcnp:lhcnp":{"global":{"config":{"enabled":true,"long-haul-cnp-icmpv6":true,"metric-type":"QUEUE_DEPTH"}},` +
		`"interfaces":{"interface":[{"config":{"name":"wan0","rtt-est":10000},"name":"wan0","queues":{"queue":[{"config":` +
		`{"alpha":"1","id":3,"kmax-mode":"BDP_ADAPTIVE","v-growth":"1250000000"},"id":3}]}}]}}}`}
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
