package service_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/openconfig/gnmi/proto/gnmi"
)

// TestDecimal64CanonicalForm: a decimal64 leaf is written in its canonical
// form (RFC 7950 §9.3.2: a digit at least on each side of the point, no
// other leading or trailing zeros) in every text encoding, by Get and by
// Subscribe, as a leaf and inside a container's value: alpha set to 2 is
// "2.0", engine-speed 0.00001 is "0.00001", and a state value computed in
// floating point (0.1 + 0.2) is rounded to its type's fraction digits.
// Get and Subscribe wrote "2" and 2, "0.30000000000000004", and ygot's
// "1e-05" inside a container, which is not a decimal64's lexical form
// (RFC 7950 §9.3.1: a Set refuses it): this failed before. PROTO's
// double_val has no text form.
func TestDecimal64CanonicalForm(t *testing.T) {
	e := newEnv(t)
	c := subscribeClient(t, e)
	if _, err := e.c.Set(ctx(t), &gnmi.SetRequest{Update: []*gnmi.Update{{Path: mustPath(q3 + "/config/alpha"), Val: ietf(`"2"`)}}}); err != nil {
		t.Fatalf("Set alpha 2: %v", err)
	}
	double := func(f float64) *gnmi.TypedValue {
		return &gnmi.TypedValue{Value: &gnmi.TypedValue_DoubleVal{DoubleVal: f}}
	}
	tenth := 0.1 // a variable: the constant 0.1 + 0.2 is exactly 0.3
	var b store.Batch
	b.Update(mustPath("/lhcnp/global/state/engine-speed"), double(0.00001), store.Gauge)
	b.Update(mustPath(q3+"/state/alpha"), double(tenth+0.2), store.DiscreteState)
	if _, err := e.st.Apply(&b, 0); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		desc string
		path string
		enc  gnmi.Encoding
		want string // the value, or for a container a member of it
	}{
		{"a config leaf, JSON_IETF", q3 + "/config/alpha", gnmi.Encoding_JSON_IETF, `"2.0"`},
		{"a config leaf, JSON", q3 + "/config/alpha", gnmi.Encoding_JSON, `2.0`},
		{"a config leaf, PROTO", q3 + "/config/alpha", gnmi.Encoding_PROTO, `double 2`},
		{"in a container, JSON_IETF", q3 + "/config", gnmi.Encoding_JSON_IETF, `"lhcnp:alpha":"2.0"`},
		{"in a container, JSON", q3 + "/config", gnmi.Encoding_JSON, `"alpha":2.0`},
		{"a small state value, JSON_IETF", "/lhcnp/global/state/engine-speed", gnmi.Encoding_JSON_IETF, `"0.00001"`},
		{"a small state value in a container, JSON_IETF", "/lhcnp/global/state", gnmi.Encoding_JSON_IETF, `"lhcnp:engine-speed":"0.00001"`},
		{"a small state value in a container, JSON", "/lhcnp/global/state", gnmi.Encoding_JSON, `"engine-speed":0.00001`},
		{"a computed state value, JSON_IETF", q3 + "/state/alpha", gnmi.Encoding_JSON_IETF, `"0.3"`},
		{"a computed state value in a container, JSON", q3 + "/state", gnmi.Encoding_JSON, `"alpha":0.3`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			resp, err := e.c.Get(ctx(t), &gnmi.GetRequest{Path: []*gnmi.Path{mustPath(tt.path)}, Encoding: tt.enc})
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			got := render(resp.GetNotification()[0])
			if len(got) != 1 {
				t.Fatalf("Get %s: %d updates, want 1: %q", tt.path, len(got), got)
			}
			if _, v, _ := strings.Cut(got[0], " = "); v != tt.want && !strings.Contains(v, tt.want+",") && !strings.Contains(v, tt.want+"}") {
				t.Errorf("Get %s = %s, want %s", tt.path, v, tt.want)
			}
			if strings.Contains(tt.desc, "container") {
				return // Subscribe sends leaves
			}
			sub, err := subscribeOnce(t, c, &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_ONCE, Encoding: tt.enc,
				Subscription: []*gnmi.Subscription{{Path: mustPath(tt.path)}}})
			if err != nil {
				t.Fatalf("Subscribe: %v", err)
			}
			if diff := cmp.Diff([]string{tt.path + " = " + tt.want}, sub); diff != "" {
				t.Errorf("Subscribe ONCE (-want, +got):\n%s", diff)
			}
		})
	}
}

// TestGetListInPathOrder: the entries of a list inside one JSON value are
// in the order of a notification's updates (path order, a number key by
// its value: queue 2 before queue 10), in JSON and JSON_IETF. They were in
// ygot's order, the keys' text (1, 10, 11, 2, 3): this failed before.
func TestGetListInPathOrder(t *testing.T) {
	e := newEnv(t)
	const queues = "/lhcnp/interfaces/interface[name=wan0]/queues"
	if _, err := e.c.Set(ctx(t), &gnmi.SetRequest{Update: []*gnmi.Update{{Path: mustPath(queues),
		Val: ietf(`{"queue": [{"id": 10}, {"id": 2}, {"id": 11}, {"id": 1}]}`)}}}); err != nil {
		t.Fatalf("Set: %v", err)
	}
	// The order of a PROTO Get's updates, one per leaf.
	resp, err := e.c.Get(ctx(t), &gnmi.GetRequest{Path: []*gnmi.Path{mustPath(queues + "/queue/config/id")},
		Type: gnmi.GetRequest_CONFIG, Encoding: gnmi.Encoding_PROTO})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, u := range resp.GetNotification()[0].GetUpdate() {
		want = append(want, u.GetPath().GetElem()[4].GetKey()["id"])
	}
	if diff := cmp.Diff([]string{"1", "2", "3", "10", "11"}, want); diff != "" {
		t.Fatalf("PROTO updates' order (-want, +got):\n%s", diff)
	}
	for _, enc := range []gnmi.Encoding{gnmi.Encoding_JSON_IETF, gnmi.Encoding_JSON} {
		t.Run(enc.String(), func(t *testing.T) {
			resp, err := e.c.Get(ctx(t), &gnmi.GetRequest{Path: []*gnmi.Path{mustPath(queues)}, Type: gnmi.GetRequest_CONFIG, Encoding: enc})
			if err != nil {
				t.Fatal(err)
			}
			v := resp.GetNotification()[0].GetUpdate()[0].GetVal()
			var got struct {
				Queue []struct {
					ID json.Number `json:"id"`
				} `json:"queue"`
				QueueIETF []struct {
					ID json.Number `json:"id"`
				} `json:"lhcnp:queue"`
			}
			if err := json.Unmarshal(append(v.GetJsonVal(), v.GetJsonIetfVal()...), &got); err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, q := range append(got.Queue, got.QueueIETF...) {
				ids = append(ids, q.ID.String())
			}
			if diff := cmp.Diff(want, ids); diff != "" {
				t.Errorf("queue ids in the value (-want, +got):\n%s", diff)
			}
		})
	}
}
