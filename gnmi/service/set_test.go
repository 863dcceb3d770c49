package service_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"
)

func upd(path string, v *gnmi.TypedValue) *gnmi.Update {
	return &gnmi.Update{Path: mustPath(path), Val: v}
}

func jsonv(s string) *gnmi.TypedValue {
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonVal{JsonVal: []byte(s)}}
}

func dbl(v float64) *gnmi.TypedValue {
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_DoubleVal{DoubleVal: v}}
}

// configLeaves returns the config as "path = value" lines, from a Get.
func configLeaves(t *testing.T, e *env) []string {
	t.Helper()
	resp, err := e.c.Get(ctx(t), &gnmi.GetRequest{Type: gnmi.GetRequest_CONFIG, Encoding: gnmi.Encoding_PROTO})
	if err != nil {
		t.Fatal(err)
	}
	return render(resp.GetNotification()[0])
}

func has(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}

func TestSetOperations(t *testing.T) {
	for _, tt := range []struct {
		desc    string
		req     *gnmi.SetRequest
		present []string
		absent  []string
		// unset: config leaves the Set removed from the intended
		// configuration; Get shows those with a YANG default at it.
		unset []string
	}{{
		desc:    "update a leaf (PROTO)",
		req:     &gnmi.SetRequest{Update: []*gnmi.Update{upd(q3+"/config/v-growth", uintVal(5000))}},
		present: []string{q3 + "/config/v-growth = uint 5000"},
	}, {
		desc:    "update a leaf (JSON_IETF scalar)",
		req:     &gnmi.SetRequest{Update: []*gnmi.Update{upd(q3+"/config/v-growth", ietf(`"6000"`))}},
		present: []string{q3 + "/config/v-growth = uint 6000"},
	}, {
		desc:    "update a decimal64 leaf with json_val 0.5 (gnmic's default)",
		req:     &gnmi.SetRequest{Update: []*gnmi.Update{upd(q3+"/config/alpha", jsonv(`0.5`))}},
		present: []string{q3 + "/config/alpha = double 0.5"},
	}, {
		desc:    "update a decimal64 leaf with a bare number in json_ietf_val (gnmic -e json_ietf)",
		req:     &gnmi.SetRequest{Update: []*gnmi.Update{upd(q3+"/config/alpha", ietf(`0.5`))}},
		present: []string{q3 + "/config/alpha = double 0.5"},
	}, {
		desc:    "update a uint64 leaf with a JSON number",
		req:     &gnmi.SetRequest{Update: []*gnmi.Update{upd(q3+"/config/v-growth", jsonv(`2500000000`))}},
		present: []string{q3 + "/config/v-growth = uint 2500000000"},
	}, {
		desc: "replace a container with plain JSON, numbers as numbers",
		req: &gnmi.SetRequest{Replace: []*gnmi.Update{upd(q3+"/config",
			jsonv(`{"id":3,"alpha":0.25,"kmax-mode":"EXPLICIT","kmax":2000000}`))}},
		present: []string{q3 + "/config/alpha = double 0.25", q3 + "/config/kmax = uint 2000000", q3 + `/config/kmax-mode = "EXPLICIT"`},
		unset:   []string{q3 + "/config/v-growth"},
	}, {
		desc: "update creates a list entry; its config key is filled in",
		req:  &gnmi.SetRequest{Update: []*gnmi.Update{upd("/lhcnp/interfaces/interface[name=wan1]/queues/queue[id=5]/config/alpha", dbl(0.5))}},
		present: []string{
			"/lhcnp/interfaces/interface[name=wan1]/config/name = \"wan1\"",
			"/lhcnp/interfaces/interface[name=wan1]/queues/queue[id=5]/config/id = uint 5",
			"/lhcnp/interfaces/interface[name=wan1]/queues/queue[id=5]/config/alpha = double 0.5",
		},
	}, {
		desc: "replace a container drops what it omits",
		req:  &gnmi.SetRequest{Replace: []*gnmi.Update{upd(q3+"/config", ietf(`{"lhcnp:id":3,"lhcnp:alpha":"2.5"}`))}},
		// The leaves omitted are back at their defaults, which
		// initialConfig had set them to.
		present: []string{q3 + "/config/alpha = double 2.5", q3 + "/config/v-growth = uint 1250000000", q3 + `/config/kmax-mode = "BDP_ADAPTIVE"`},
		unset:   []string{q3 + "/config/v-growth", q3 + "/config/kmax-mode"},
	}, {
		desc:    "delete a leaf: its default is in use",
		req:     &gnmi.SetRequest{Delete: []*gnmi.Path{mustPath(q3 + "/config/v-growth")}},
		present: []string{q3 + "/config/v-growth = uint 1250000000"},
		unset:   []string{q3 + "/config/v-growth"},
	}, {
		desc:   "delete a leaf without a default",
		req:    &gnmi.SetRequest{Delete: []*gnmi.Path{mustPath("/lhcnp/interfaces/interface[name=wan0]/config/rtt-est")}},
		absent: []string{"/lhcnp/interfaces/interface[name=wan0]/config/rtt-est = uint 10000"},
		unset:  []string{"/lhcnp/interfaces/interface[name=wan0]/config/rtt-est"},
	}, {
		desc:    "delete with a wildcard key",
		req:     &gnmi.SetRequest{Delete: []*gnmi.Path{mustPath("/lhcnp/interfaces/interface[name=*]/queues/queue[id=*]/config/alpha")}},
		unset:   []string{q3 + "/config/alpha"},
		present: []string{q3 + "/config/v-growth = uint 1250000000"},
	}, {
		desc:   "delete with omitted keys (a partial-key match)",
		req:    &gnmi.SetRequest{Delete: []*gnmi.Path{mustPath("/lhcnp/interfaces/interface/queues/queue[id=3]")}},
		absent: []string{q3 + "/config/alpha = double 1", q3 + "/config/id = uint 3"},
	}, {
		desc:  "delete with ...",
		req:   &gnmi.SetRequest{Delete: []*gnmi.Path{mustPath("/lhcnp/.../kmax-mode")}},
		unset: []string{q3 + "/config/kmax-mode"},
	}, {
		desc:    "delete of something absent is accepted",
		req:     &gnmi.SetRequest{Delete: []*gnmi.Path{mustPath("/lhcnp/interfaces/interface[name=nope]")}},
		present: []string{q3 + "/config/alpha = double 1"},
	}, {
		desc: "order: delete, then replace, then update",
		req: &gnmi.SetRequest{
			Update:  []*gnmi.Update{upd(q3+"/config/alpha", dbl(3))},
			Replace: []*gnmi.Update{upd(q3+"/config/alpha", dbl(2))},
			Delete:  []*gnmi.Path{mustPath(q3 + "/config/alpha")},
		},
		present: []string{q3 + "/config/alpha = double 3"},
	}, {
		desc:    "prefix joins every path",
		req:     &gnmi.SetRequest{Prefix: mustPath(q3), Update: []*gnmi.Update{upd("/config/v-growth", uintVal(7))}},
		present: []string{q3 + "/config/v-growth = uint 7"},
	}} {
		t.Run(tt.desc, func(t *testing.T) {
			e := newEnv(t)
			if _, err := e.c.Set(ctx(t), tt.req); err != nil {
				t.Fatalf("Set: %v", err)
			}
			got := configLeaves(t, e)
			for _, w := range tt.present {
				if !has(got, w) {
					t.Errorf("missing %s in\n%s", w, strings.Join(got, "\n"))
				}
			}
			for _, w := range tt.absent {
				if has(got, w) {
					t.Errorf("still there: %s", w)
				}
			}
			intended, err := e.h.Intended()
			if err != nil {
				t.Fatal(err)
			}
			set, err := testSchema.Values(intended)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range set {
				if p := schema.PathString(v.Path); slices.Contains(tt.unset, p) {
					t.Errorf("still in the intended configuration: %s", p)
				}
			}
			if e.dp.count() != 2 {
				t.Errorf("dataplane applied %d times, want 2 (load and set)", e.dp.count())
			}
		})
	}
}

func TestSetResponse(t *testing.T) {
	e := newEnv(t)
	prefix := &gnmi.Path{Target: "sw1", Elem: mustPath(q3).Elem}
	resp, err := e.c.Set(ctx(t), &gnmi.SetRequest{
		Prefix:  prefix,
		Delete:  []*gnmi.Path{mustPath("/config/v-growth")},
		Replace: []*gnmi.Update{upd("/config/alpha", dbl(2))},
		Update:  []*gnmi.Update{upd("/config/k-base", uintVal(100000))},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := resp.GetTimestamp()
	if ts == 0 {
		t.Fatal("no timestamp")
	}
	want := &gnmi.SetResponse{Prefix: prefix, Timestamp: ts, Response: []*gnmi.UpdateResult{
		{Path: mustPath("/config/v-growth"), Op: gnmi.UpdateResult_DELETE, Timestamp: ts},
		{Path: mustPath("/config/alpha"), Op: gnmi.UpdateResult_REPLACE, Timestamp: ts},
		{Path: mustPath("/config/k-base"), Op: gnmi.UpdateResult_UPDATE, Timestamp: ts},
	}}
	if diff := cmp.Diff(want, resp, protocmp.Transform()); diff != "" {
		t.Errorf("SetResponse (-want, +got):\n%s", diff)
	}
}

func TestSetFailuresChangeNothing(t *testing.T) {
	for _, tt := range []struct {
		desc   string
		req    *gnmi.SetRequest
		refuse error
		code   codes.Code
		msg    []string // substrings of the status message
		failed int      // index of the operation blamed in the details; -1: none
	}{{
		desc: "a later operation fails: the earlier ones are rolled back",
		req: &gnmi.SetRequest{Update: []*gnmi.Update{
			upd(q3+"/config/v-growth", uintVal(1)),
			upd(q3+"/config/alpha", dbl(1)),
			upd(q3+"/config/no-such-leaf", uintVal(1)),
		}},
		code: codes.NotFound, msg: []string{"update[2]", q3 + "/config/no-such-leaf", "not in the schema"}, failed: 2,
	}, {
		desc: "K_min not below K_max: the rule names the leaf",
		req: &gnmi.SetRequest{Update: []*gnmi.Update{
			upd(q3+"/config/kmax-mode", strVal("EXPLICIT")),
			upd(q3+"/config/kmax", uintVal(100000)),
			upd(q3+"/config/kmin-mode", strVal("EXPLICIT")),
			upd(q3+"/config/kmin", uintVal(200000)),
		}},
		code: codes.InvalidArgument, msg: []string{q3 + "/config/kmin", "not below K_max 100000", "§5.3.2"}, failed: 3,
	}, {
		desc: "explicit K_min at or above k-base in BDP mode",
		req: &gnmi.SetRequest{Update: []*gnmi.Update{
			upd(q3+"/config/kmin-mode", strVal("EXPLICIT")), upd(q3+"/config/kmin", uintVal(64000)),
		}},
		code: codes.InvalidArgument, msg: []string{q3 + "/config/kmin", "K_base 64000"}, failed: 1,
	}, {
		desc: "EXPLICIT kmax-mode without kmax",
		req:  &gnmi.SetRequest{Update: []*gnmi.Update{upd(q3+"/config/kmax-mode", strVal("EXPLICIT"))}},
		code: codes.InvalidArgument, msg: []string{q3 + "/config/kmax", "must be set when kmax-mode is EXPLICIT"}, failed: 0,
	}, {
		// The rule broken is kmax's; of its two sibling updates, the one
		// without which it holds is named: the last sibling (alpha) was.
		desc: "EXPLICIT kmax-mode without kmax, beside another update of its container",
		req: &gnmi.SetRequest{Update: []*gnmi.Update{
			upd(q3+"/config/kmax-mode", strVal("EXPLICIT")), upd(q3+"/config/alpha", dbl(0.5)),
		}},
		code: codes.InvalidArgument, msg: []string{"update[0] " + q3 + "/config/kmax: must be set when kmax-mode is EXPLICIT"}, failed: 0,
	}, {
		desc: "RESUME as the default action",
		req:  &gnmi.SetRequest{Update: []*gnmi.Update{upd(q3+"/action-policy/config/default-action", strVal("RESUME"))}},
		code: codes.InvalidArgument, msg: []string{q3 + "/action-policy/config/default-action", "RESUME"}, failed: 0,
	}, {
		desc: "value of the wrong type",
		req:  &gnmi.SetRequest{Update: []*gnmi.Update{upd(q3+"/config/v-growth", strVal("fast"))}},
		code: codes.InvalidArgument, msg: []string{"update[0]", q3 + "/config/v-growth", "invalid value"}, failed: 0,
	}, {
		desc: "a fraction for an integer leaf is refused, not truncated",
		req:  &gnmi.SetRequest{Update: []*gnmi.Update{upd(q3+"/config/k-base", jsonv(`65536.5`))}},
		code: codes.InvalidArgument, msg: []string{"update[0] " + q3 + "/config/k-base: invalid value: 65536.5 is not an integer (uint64)"}, failed: 0,
	}, {
		desc: "a bad leaf inside a JSON subtree is named by its YANG path, not a Go field",
		req:  &gnmi.SetRequest{Update: []*gnmi.Update{upd(q3, jsonv(`{"config":{"alpha":"fast"}}`))}},
		code: codes.InvalidArgument, msg: []string{"update[0] " + q3 + `: invalid value: config/alpha: the string "fast" is not a decimal64 number`}, failed: 0,
	}, {
		desc: "value out of range",
		req:  &gnmi.SetRequest{Update: []*gnmi.Update{upd(q3+"/config/alpha", dbl(5000))}},
		code: codes.InvalidArgument, msg: []string{q3 + "/config/alpha", "outside"}, failed: 0,
	}, {
		desc: "read-only state",
		req:  &gnmi.SetRequest{Update: []*gnmi.Update{upd(q3+"/state/alpha", dbl(2))}},
		code: codes.InvalidArgument, msg: []string{q3 + "/state/alpha", "read-only"}, failed: 0,
	}, {
		desc: "read-only state inside a JSON value",
		req:  &gnmi.SetRequest{Update: []*gnmi.Update{upd(q3, ietf(`{"state":{"alpha":"2"}}`))}},
		code: codes.InvalidArgument, msg: []string{q3 + "/state/alpha", "read-only"}, failed: 0,
	}, {
		desc: "wildcard update",
		req:  &gnmi.SetRequest{Update: []*gnmi.Update{upd("/lhcnp/interfaces/interface[name=*]/config/rtt-est", uintVal(1))}},
		code: codes.InvalidArgument, msg: []string{"exactly one node"}, failed: 0,
	}, {
		desc: "config key differs from the list key",
		req:  &gnmi.SetRequest{Update: []*gnmi.Update{upd("/lhcnp/interfaces/interface[name=wan0]/config/name", strVal("other"))}},
		code: codes.InvalidArgument, msg: []string{"/lhcnp/interfaces/interface[name=wan0]/config/name", "differs from the list key"}, failed: 0,
	}, {
		desc:   "the dataplane refuses the only operation: it carries the error",
		req:    &gnmi.SetRequest{Update: []*gnmi.Update{upd(q3+"/config/v-growth", uintVal(1))}},
		refuse: errRefused,
		code:   codes.InvalidArgument, msg: []string{"update[0] rejected by the dataplane", "k-max too small"}, failed: 0,
	}, {
		desc: "the dataplane refuses several operations together: all ABORTED",
		req: &gnmi.SetRequest{Update: []*gnmi.Update{
			upd(q3+"/config/v-growth", uintVal(1)), upd("/lhcnp/interfaces/interface[name=wan0]/config/rtt-est", uintVal(1)),
		}},
		refuse: errRefused,
		code:   codes.InvalidArgument, msg: []string{"rejected by the dataplane", "k-max too small"}, failed: -1,
	}, {
		desc: "union_replace",
		req:  &gnmi.SetRequest{UnionReplace: []*gnmi.Update{upd(q3+"/config/v-growth", uintVal(1))}},
		code: codes.Unimplemented, failed: -2,
	}} {
		t.Run(tt.desc, func(t *testing.T) {
			e := newEnv(t)
			before := configLeaves(t, e)
			storeBefore := e.st.Len()
			e.dp.refuse = tt.refuse
			_, err := e.c.Set(ctx(t), tt.req)
			st := status.Convert(err)
			if st.Code() != tt.code {
				t.Fatalf("Set: %v, want %v", err, tt.code)
			}
			for _, m := range tt.msg {
				if !strings.Contains(st.Message(), m) {
					t.Errorf("message %q lacks %q", st.Message(), m)
				}
			}
			if tt.failed > -2 {
				checkDetails(t, st, tt.failed, tt.code)
			}
			if diff := cmp.Diff(before, configLeaves(t, e)); diff != "" {
				t.Errorf("config changed (-before, +after):\n%s", diff)
			}
			if e.st.Len() != storeBefore {
				t.Errorf("store has %d leaves, had %d", e.st.Len(), storeBefore)
			}
			if e.dp.count() != 1 {
				t.Errorf("dataplane applied %d times, want 1 (the load)", e.dp.count())
			}
		})
	}
}

// checkDetails checks the SetResponse in the status details: the failed
// operation carries the error, the others ABORTED (gNMI 3.4.7).
func checkDetails(t *testing.T, st *status.Status, failed int, code codes.Code) {
	t.Helper()
	var resp *gnmi.SetResponse
	for _, d := range st.Details() {
		if r, ok := d.(*gnmi.SetResponse); ok {
			resp = r
		}
	}
	if resp == nil {
		t.Fatalf("no SetResponse in the status details: %v", st.Details())
	}
	for i, r := range resp.GetResponse() {
		want := codes.Aborted
		if i == failed {
			want = code
		}
		if got := codes.Code(r.GetMessage().GetCode()); got != want {
			t.Errorf("operation %d: code %v, want %v", i, got, want)
		}
	}
}

// TestSetPublishesConfig: a Set's leaves are in the store as config, and
// a leaf deleted goes back to its YANG default there (an update, 3.5.2.3)
// while the dataplane is given the intended configuration without it.
func TestSetPublishesConfig(t *testing.T) {
	e := newEnv(t)
	p := mustPath(q3 + "/config/v-growth")
	if _, _, ok := e.st.Get(p); !ok {
		t.Fatal("loaded config not in the store")
	}
	if _, err := e.c.Set(ctx(t), &gnmi.SetRequest{Update: []*gnmi.Update{upd(q3+"/config/v-growth", uintVal(42))}}); err != nil {
		t.Fatal(err)
	}
	v, k, ok := e.st.Get(p)
	if !ok || v.TV.GetUintVal() != 42 || k != store.Config {
		t.Errorf("store: %v %v %v, want 42 of kind config", v, k, ok)
	}
	if got := e.dp.last().GetInterfaces().GetInterface("wan0").GetQueues().GetQueue(3).GetConfig().GetVGrowth(); got != 42 {
		t.Errorf("dataplane got v-growth %d, want 42", got)
	}
	if _, err := e.c.Set(ctx(t), &gnmi.SetRequest{Delete: []*gnmi.Path{p}}); err != nil {
		t.Fatal(err)
	}
	if v, k, ok := e.st.Get(p); !ok || v.TV.GetUintVal() != 1250000000 || k != store.Config {
		t.Errorf("store after the delete: %v %v %v, want the default 1250000000 of kind config", v, k, ok)
	}
	if got := e.dp.last().GetInterfaces().GetInterface("wan0").GetQueues().GetQueue(3).GetConfig().VGrowth; got != nil {
		t.Errorf("dataplane got v-growth %d after the delete, want it unset", *got)
	}
}

func TestSetTakesWhatGetGives(t *testing.T) {
	for _, enc := range []gnmi.Encoding{gnmi.Encoding_JSON, gnmi.Encoding_JSON_IETF} {
		for _, p := range []string{"/", "/lhcnp", "/lhcnp/interfaces/interface[name=wan0]", q3 + "/config"} {
			t.Run(enc.String()+" "+p, func(t *testing.T) {
				e := newEnv(t)
				before := configLeaves(t, e)
				resp, err := e.c.Get(ctx(t), &gnmi.GetRequest{Path: []*gnmi.Path{mustPath(p)}, Type: gnmi.GetRequest_CONFIG, Encoding: enc})
				if err != nil {
					t.Fatal(err)
				}
				u := resp.GetNotification()[0].GetUpdate()[0]
				if _, err := e.c.Set(ctx(t), &gnmi.SetRequest{Replace: []*gnmi.Update{{Path: u.GetPath(), Val: u.GetVal()}}}); err != nil {
					t.Fatalf("Set of %s: %v", valString(u.GetVal()), err)
				}
				if diff := cmp.Diff(before, configLeaves(t, e)); diff != "" {
					t.Errorf("config changed (-before +after):\n%s", diff)
				}
			})
		}
	}
}

// TestLoadJSON: the initial configuration takes the forms Set takes, and a
// bad one is refused naming the YANG path, not a Go field.
func TestLoadJSON(t *testing.T) {
	e := newEnv(t)
	plain := `{"lhcnp": {"interfaces": {"interface": [{"name": "wan0", "config": {"name": "wan0"},
		"queues": {"queue": [{"id": 3, "config": {"id": 3, "alpha": 0.5, "v-growth": 7}}]}}]}}}`
	if err := e.h.LoadJSON(ctx(t), []byte(plain)); err != nil {
		t.Fatalf("LoadJSON of plain JSON: %v", err)
	}
	if got := configLeaves(t, e); !has(got, q3+"/config/alpha = double 0.5") || !has(got, q3+"/config/v-growth = uint 7") {
		t.Errorf("config after LoadJSON: %q", got)
	}
	err := e.h.LoadJSON(ctx(t), []byte(`{"lhcnp:lhcnp": {"global": {"config": {"enabled": "maybe"}}}}`))
	if err == nil || !strings.Contains(err.Error(), `lhcnp/global/config/enabled: the string "maybe" is not a boolean`) {
		t.Errorf("LoadJSON of a bad value: %v", err)
	}
	// A value ygot's validation of the whole candidate refuses, in an
	// entry of a keyed list: named with its keys, as a Set's is (it was
	// ygot's schema path, .../policy/config/source-prefix).
	err = e.h.LoadJSON(ctx(t), []byte(`{"lhcnp:lhcnp": {"rate-advice": {"policies": {"policy": [
		{"name": "p0", "config": {"name": "p0", "source-prefix": "10.0.0.0/8"}},
		{"name": "p1", "config": {"name": "p1", "source-prefix": "10.0.0.0/33"}}]}}}}`))
	want := `validation: /lhcnp/rate-advice/policies/policy[name=p1]/config/source-prefix: "10.0.0.0/33" does not match regular expression pattern`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("LoadJSON of a bad value in a keyed entry: %v\nwant %s ...", err, want)
	}
}

// TestSetReplaceListEntryNeedsItsKeys: gNMI 3.4.4, "it is invalid to
// replace a keyed list element (e.g. /a/f[k=10]) with an empty JSON object
// {}, which implicitly deletes the list's keys ... the target MUST reject
// the operation by returning INVALID_ARGUMENT". The old target accepted {}
// and wiped the entry down to its keys (NormalizeKeys put them back); this
// test failed on it. A value with the key member (module prefix or not) is
// still a replace of the entry.
func TestSetReplaceListEntryNeedsItsKeys(t *testing.T) {
	for _, tt := range []struct {
		desc string
		path string
		val  string
	}{
		{desc: "interface with {}", path: "/lhcnp/interfaces/interface[name=wan0]", val: `{}`},
		{desc: "queue with {}", path: q3, val: `{}`},
		{desc: "interface with its config key only", path: "/lhcnp/interfaces/interface[name=wan0]", val: `{"config":{"name":"wan0"}}`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			e := newEnv(t)
			before := configLeaves(t, e)
			_, err := e.c.Set(ctx(t), &gnmi.SetRequest{Replace: []*gnmi.Update{upd(tt.path, ietf(tt.val))}})
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "must carry its key") {
				t.Errorf("replace %s with %s: %v, want INVALID_ARGUMENT naming the key", tt.path, tt.val, err)
			}
			if diff := cmp.Diff(before, configLeaves(t, e)); diff != "" {
				t.Errorf("config changed (-before, +after):\n%s", diff)
			}
		})
	}
	// A key that is not the path's, in the entry or in its config, in a
	// replace or an update: named with both values (ygot's own words were
	// "element key wan9 != map key wan0").
	for _, tt := range []struct {
		desc string
		kind string
		path string
		val  string
		want string
	}{
		{"replace, the entry's key", "replace", "/lhcnp/interfaces/interface[name=wan0]", `{"name":"wan9","config":{"name":"wan9"}}`, "name wan9 (the path's wan0)"},
		{"update, the config's key", "update", "/lhcnp/interfaces/interface[name=wan0]", `{"config":{"name":"wan9"}}`, "name wan9 (the path's wan0)"},
		{"replace, a queue's numeric key", "replace", q3, `{"id":4,"config":{"id":4}}`, "id 4 (the path's 3)"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			e := newEnv(t)
			req := &gnmi.SetRequest{Replace: []*gnmi.Update{upd(tt.path, ietf(tt.val))}}
			if tt.kind == "update" {
				req = &gnmi.SetRequest{Update: []*gnmi.Update{upd(tt.path, ietf(tt.val))}}
			}
			_, err := e.c.Set(ctx(t), req)
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), tt.want) {
				t.Errorf("%s %s with %s: %v, want INVALID_ARGUMENT naming %q", tt.kind, tt.path, tt.val, err, tt.want)
			}
		})
	}
	e := newEnv(t)
	if _, err := e.c.Set(ctx(t), &gnmi.SetRequest{Replace: []*gnmi.Update{upd("/lhcnp/interfaces/interface[name=wan0]",
		ietf(`{"lhcnp:name":"wan0","config":{"name":"wan0","rtt-est":5000}}`))}}); err != nil {
		t.Fatalf("replace of an entry with its key: %v", err)
	}
	got := configLeaves(t, e)
	if !has(got, "/lhcnp/interfaces/interface[name=wan0]/config/rtt-est = uint 5000") || has(got, q3+"/config/id = uint 3") {
		t.Errorf("after the replace of wan0:\n%s", strings.Join(got, "\n"))
	}
}

// TestSetDeleteOfAKeyLeafRefused: a list's key leaf exists as long as its
// entry (RFC 7950 §7.8.2). The old target accepted a delete of one
// (ytypes.DeleteNode removed it, NormalizeKeys put it back) and told the
// client it was applied while nothing changed; this test failed on it. Now
// the delete is INVALID_ARGUMENT naming the entry to delete instead; a
// wildcard that reaches key leaves among other nodes deletes the others.
func TestSetDeleteOfAKeyLeafRefused(t *testing.T) {
	const wan0 = "/lhcnp/interfaces/interface[name=wan0]"
	for _, tt := range []struct {
		desc, path, entry string
	}{
		{"config copy of the key", wan0 + "/config/name", wan0},
		{"the key leaf", wan0 + "/name", wan0},
		{"a queue's config key", q3 + "/config/id", q3},
		{"a wildcard reaching key leaves only", "/lhcnp/interfaces/interface[name=*]/config/name", wan0},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			e := newEnv(t)
			before := configLeaves(t, e)
			_, err := e.c.Set(ctx(t), &gnmi.SetRequest{Delete: []*gnmi.Path{mustPath(tt.path)}})
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "delete "+tt.entry+" instead") {
				t.Errorf("delete %s: %v, want INVALID_ARGUMENT naming %s", tt.path, err, tt.entry)
			}
			if diff := cmp.Diff(before, configLeaves(t, e)); diff != "" {
				t.Errorf("config changed (-before, +after):\n%s", diff)
			}
		})
	}
	e := newEnv(t)
	if _, err := e.c.Set(ctx(t), &gnmi.SetRequest{Delete: []*gnmi.Path{mustPath("/lhcnp/interfaces/interface[name=*]/config/*")}}); err != nil {
		t.Fatalf("delete of every config leaf of every interface: %v", err)
	}
	got := configLeaves(t, e)
	if !has(got, wan0+`/config/name = "wan0"`) || has(got, wan0+"/config/rtt-est = uint 10000") {
		t.Errorf("after deleting interface[name=*]/config/*:\n%s", strings.Join(got, "\n"))
	}
}

// TestSetSingleOperationRefusedIsNotAborted: gNMI 3.4.7, the target "MUST
// set the message field of the UpdateResult corresponding to the failed
// operation to an Error message indicating failure", the others ABORTED.
// The old target answered the only operation of a Set the dataplane
// refused ABORTED, "another operation failed", with no other operation in
// the request; this test failed on it. With several operations refused
// together, each is ABORTED saying that none failed alone, with the reason.
func TestSetSingleOperationRefusedIsNotAborted(t *testing.T) {
	results := func(t *testing.T, err error) []*gnmi.UpdateResult {
		t.Helper()
		st := status.Convert(err)
		if st.Code() != codes.InvalidArgument {
			t.Fatalf("Set: %v, want INVALID_ARGUMENT", err)
		}
		for _, d := range st.Details() {
			if r, ok := d.(*gnmi.SetResponse); ok {
				return r.GetResponse()
			}
		}
		t.Fatal("no SetResponse in the status details")
		return nil
	}
	e := newEnv(t)
	e.dp.refuse = errRefused
	_, err := e.c.Set(ctx(t), &gnmi.SetRequest{Update: []*gnmi.Update{upd(q3+"/config/v-growth", uintVal(1))}})
	if m := results(t, err)[0].GetMessage(); codes.Code(m.GetCode()) != codes.InvalidArgument || !strings.Contains(m.GetMessage(), "k-max too small") {
		t.Errorf("UpdateResult of the only operation: %v %q, want INVALID_ARGUMENT with the reason", codes.Code(m.GetCode()), m.GetMessage())
	}
	_, err = e.c.Set(ctx(t), &gnmi.SetRequest{Update: []*gnmi.Update{upd(q3+"/config/v-growth", uintVal(1)), upd(q3+"/config/alpha", dbl(2))}})
	for i, r := range results(t, err) {
		if m := r.GetMessage(); codes.Code(m.GetCode()) != codes.Aborted || !strings.Contains(m.GetMessage(), "none alone") || !strings.Contains(m.GetMessage(), "k-max too small") {
			t.Errorf("UpdateResult %d of two refused together: %v %q, want ABORTED saying so, with the reason", i, codes.Code(m.GetCode()), m.GetMessage())
		}
	}
}
