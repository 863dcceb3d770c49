package dataplane_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// TestSetSwitchCNP: the white paper's practice configured through gNMI
// runs on the switch and its counters are published; beside Long-haul CNP
// it is refused naming the leaf.
func TestSetSwitchCNP(t *testing.T) {
	r := newRig(t)
	r.run(t, engine.Millisecond)
	err := r.setJSON(t, "/lhcnp/switch-cnp/config/enabled", "true")
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "/lhcnp/switch-cnp/config/enabled") ||
		!strings.Contains(err.Error(), "cannot both run on one node") {
		t.Fatalf("switch cnp beside long-haul cnp: %v, want InvalidArgument naming the leaf", err)
	}
	if err := r.setIETF("/lhcnp", `{
  "global": {"config": {"enabled": true, "long-haul-cnp-rocev2": false, "cnp-dscp": 26}},
  "switch-cnp": {"config": {"enabled": true, "delay-threshold": 20, "buffer-share": 1}}
}`, true); err != nil {
		t.Fatalf("replace with the switch cnp: %v", err)
	}
	r.run(t, 6*engine.Millisecond)
	const c = "/lhcnp/switch-cnp/state/counters"
	if got := r.uint(t, c+"/sent"); got == 0 {
		t.Errorf("%s/sent = 0, want standard CNPs", c)
	}
	if d, k := r.uint(t, c+"/delayed-packets"), r.uint(t, c+"/congestion-confirmed"); d == 0 || k == 0 || k > d {
		t.Errorf("delayed %d, confirmed %d", d, k)
	}
	// The queue's last CNP is a standard CNP, with none of a Long-haul
	// CNP's fields.
	if last := r.getJSON(t, q0+"/state/last-cnp"); !strings.Contains(last, `"lhcnp:format":"STANDARD_CNP"`) ||
		strings.Contains(last, `"lhcnp:action"`) {
		t.Errorf("%s/state/last-cnp = %s, want format STANDARD_CNP and no action", q0, last)
	}
	if got := r.uint(t, "/lhcnp/switch-cnp/state/buffer-share"); got != 1 {
		t.Errorf("state buffer-share %d", got)
	}
}

// TestSourceAddressUnderSwitchCNPAndFCN: source-address ("the source
// address of switch-originated notifications") reaches the switch CNP and
// FCN as it does Fast CNP and Rate Advice: their detection node runs with
// it, and their CNPs and FCN messages leave from it (switchcnp and fcn
// TestSourceAddress). The old target left it out of both: the leaf was
// ignored (this test failed before the fix).
func TestSourceAddressUnderSwitchCNPAndFCN(t *testing.T) {
	for _, tt := range []struct{ desc, config string }{
		{"switch cnp", switchCNP},
		{"fcn ingress pe", ingressPE},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := strings.Replace(tt.config, `"enabled": true,`, `"enabled": true, "source-address": "2001:db8::99",`, 1)
			r := newRigFrom(t, "testdata/line6.yaml", wholeTree(cfg))
			r.run(t, engine.Millisecond)
			if got := r.getJSON(t, "/lhcnp/global/config/source-address"); !strings.Contains(got, "2001:db8::99") {
				t.Fatalf("config source-address = %s: the test needs it set", got)
			}
			if got := r.sw.Node.Config().SourceAddress.String(); got != "2001:db8::99" {
				t.Errorf("%s: the notifications' source address (the detection node's) = %s, want the configured 2001:db8::99", tt.desc, got)
			}
			if got := r.getJSON(t, "/lhcnp/global/state/source-address"); !strings.Contains(got, "2001:db8::99") {
				t.Errorf("%s: state source-address = %s, want the configured 2001:db8::99", tt.desc, got)
			}
		})
	}
}
