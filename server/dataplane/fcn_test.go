package dataplane_test

import (
	"math"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// TestSetFCNIngressPE: FCN's ingress PE configured through gNMI runs on
// the switch: it learns a mapping per flow it tunnels (its port towards
// n2) and, congested itself, sends the senders standard CNPs. FCN beside
// Long-haul CNP is refused naming fcn-role, in either role.
func TestSetFCNIngressPE(t *testing.T) {
	r := newRigFrom(t, "testdata/line6.yaml", lineConfig)
	r.run(t, engine.Millisecond)
	for _, tt := range []struct{ role, why string }{
		{"INGRESS_PE", "cannot both run on one node"},
		{"TRANSIT", "cannot both run on one node"},
	} {
		err := r.setJSON(t, "/lhcnp/global/config/fcn-role", `"`+tt.role+`"`)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "fcn-role") || !strings.Contains(err.Error(), tt.why) {
			t.Errorf("fcn-role %s: %v, want InvalidArgument naming fcn-role (%s)", tt.role, err, tt.why)
		}
	}
	if err := r.setIETF("/lhcnp", `{
  "global": {"config": {"enabled": true, "long-haul-cnp-rocev2": false, "fcn-role": "INGRESS_PE"}},
  "fcn": {"config": {"congestion-threshold": "1000000", "domain": ["2001:db8::/32"]}}
}`, true); err != nil {
		t.Fatalf("replace with an ingress PE: %v", err)
	}
	r.run(t, 6*engine.Millisecond)
	if got := r.uint(t, "/lhcnp/fcn/state/mapping-count"); got != 2 {
		t.Errorf("mapping-count %d, want 2 (one per flow into the tunnel)", got)
	}
	if got := r.uint(t, "/lhcnp/fcn/state/counters/mappings-created"); got != 2 {
		t.Errorf("mappings-created %d, want 2", got)
	}
	// The PE's own congestion: standard CNPs it sent, counted as the
	// port's notifications.
	sent := "/lhcnp/interfaces/interface[name=wan]/state/counters/notifications-sent"
	if got := r.uint(t, sent); got == 0 {
		t.Errorf("%s = 0, want the PE's direct CNPs", sent)
	}
	if s := r.getJSON(t, "/lhcnp/fcn/mappings"); !strings.Contains(s, `"source-qp":100`) {
		t.Errorf("mappings %s, want QP 100's", s)
	}
}

// TestFCNStateEchoesConfigWhenDisabled: /lhcnp/fcn/state repeats the
// /lhcnp/fcn/config in effect while fcn-role is DISABLED too, as every
// mechanism's state does: here after a transit role. The old
// target echoed the ingress PE's configuration then, which a switch that
// never was one did not have: every leaf read 0.
func TestFCNStateEchoesConfigWhenDisabled(t *testing.T) {
	r := newRigFrom(t, "testdata/line6.yaml", lineConfig)
	if err := r.setIETF("/lhcnp", `{
  "global": {"config": {"long-haul-cnp-rocev2": false, "fcn-role": "TRANSIT"}},
  "fcn": {"config": {"congestion-threshold": "1000000", "max-mappings": 1000, "aging-timeout": 30, "min-cnp-interval": 70}}
}`, false); err != nil {
		t.Fatalf("transit: %v", err)
	}
	r.run(t, engine.Millisecond)
	if err := r.setIETF("/lhcnp/global/config", `{"long-haul-cnp-rocev2": true, "fcn-role": "DISABLED"}`, false); err != nil {
		t.Fatalf("back to Long-haul CNP: %v", err)
	}
	r.run(t, 2*engine.Millisecond)
	for _, tt := range []struct {
		leaf string
		want uint64
	}{{"congestion-threshold", 1_000_000}, {"max-mappings", 1000}, {"aging-timeout", 30}, {"min-cnp-interval", 70}} {
		if got := r.uint(t, "/lhcnp/fcn/state/"+tt.leaf); got != tt.want {
			t.Errorf("fcn-role DISABLED: /lhcnp/fcn/state/%s = %d, want the configured %d", tt.leaf, got, tt.want)
		}
	}
	if s := r.getJSON(t, "/lhcnp/global/state/fcn-role"); !strings.Contains(s, "DISABLED") {
		t.Errorf("fcn-role state %s, want DISABLED", s)
	}
}

// TestFCNMaxMappingsRange: a max-mappings above the dataplane's 2^20-1
// flow labels (YANG takes any uint32) is refused naming the leaf; the old
// target named the container, /lhcnp/fcn/config (this test failed before
// the fix).
func TestFCNMaxMappingsRange(t *testing.T) {
	r := newRig(t)
	err := r.setJSON(t, "/lhcnp/fcn/config/max-mappings", "2000000")
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "/lhcnp/fcn/config/max-mappings") {
		t.Errorf("max-mappings 2000000: %v, want InvalidArgument naming /lhcnp/fcn/config/max-mappings", err)
	}
	if err := r.setJSON(t, "/lhcnp/fcn/config/max-mappings", "1048575"); err != nil {
		t.Errorf("max-mappings 1048575, every flow label: %v", err)
	}
}

// TestFlowTableUnderFCN: the flow table's leaves reach FCN's detection
// node as they reach the other mechanisms' (lc.FlowTable), and its state
// shows them. The old target ran lhcnp's default table under FCN, the
// leaves silently ignored (this test failed before the fix).
func TestFlowTableUnderFCN(t *testing.T) {
	cfg := strings.Replace(ingressPE, `"fcn":`, `"flow-table": {"config": {"max-entries": 1, "idle-timeout": 5}},
  "fcn":`, 1)
	r := newRigFrom(t, "testdata/line6.yaml", wholeTree(cfg))
	r.run(t, engine.Millisecond)
	ft := r.sw.Node.Config().FlowTable
	if ft.MaxEntries != 1 || ft.IdleTimeout != 5*engine.Second {
		t.Errorf("FCN on: the node's flow table max-entries %d, idle-timeout %v; want the configured 1 and 5s", ft.MaxEntries, ft.IdleTimeout)
	}
	if got := r.uint(t, "/lhcnp/flow-table/state/max-entries"); got != 1 {
		t.Errorf("FCN on: state max-entries %d, want the configured 1", got)
	}
}

// TestFCNCongestionThresholdAboveInt64: a congestion-threshold above the
// node's int64 range is held at its top (2^63-1 bytes), as for Fast CNP
// (TestFastCNPThresholdsAboveInt64); the old target wrapped 2^64-1 to -1,
// refused as a K_max that must be positive (this test failed before the
// fix).
func TestFCNCongestionThresholdAboveInt64(t *testing.T) {
	r := newRigFrom(t, "testdata/line6.yaml", wholeTree(ingressPE))
	r.run(t, engine.Millisecond)
	if err := r.setJSON(t, "/lhcnp/fcn/config/congestion-threshold", `"18446744073709551615"`); err != nil {
		t.Fatalf("congestion-threshold 2^64-1: %v", err)
	}
	r.run(t, 2*engine.Millisecond)
	if got := r.sw.Node.Config().Interface.Queue.KMaxBytes; got != math.MaxInt64 {
		t.Errorf("the node's K_max %d, want 2^63-1", got)
	}
	if got := r.uint(t, "/lhcnp/fcn/state/congestion-threshold"); got != math.MaxInt64 {
		t.Errorf("state congestion-threshold %d, want the value held, 2^63-1", got)
	}
}
