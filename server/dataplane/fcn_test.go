package dataplane_test

import (
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
// /lhcnp/fcn/config in effect while fcn-role is DISABLED too, as the other
// mechanisms' state does once they ran: here after a transit role. The old
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
