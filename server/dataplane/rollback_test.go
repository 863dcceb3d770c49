package dataplane_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/rateadvice"
	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/server/dataplane"
)

// TestFailedSetRollsBack: a Set that fails at the second mechanism, after
// the first was set (Fast CNP made the node's mode, then a mechanism
// beside it that cannot be created), leaves the switch as before: the
// node's configuration and its ports' observer (Long-haul CNP, no Fast
// CNP), and the state, every leaf (the count of RTT_est updates too, which
// counted the failed Set's configuration and the one that set it back
// when the switch was set back, not left alone). Fast CNP ran on, the Set
// answered with an error, and this test failed. A later Set applies.
func TestFailedSetRollsBack(t *testing.T) {
	dataplane.RegisterUncreatable(t, "fault", func(l *oc.Lhcnp_Lhcnp) bool { return l.GetGlobal().GetConfig().GetFastCnpEnabled() })
	r := newRigFrom(t, "testdata/line6.yaml", lineConfig)
	r.run(t, 2*engine.Millisecond)
	snapshot := func() string { return stateJSON(t, r) }
	before, cfg := snapshot(), r.sw.Node.Config()
	handlers := map[*netsim.Host]netsim.ControlHandler{}
	for _, h := range r.sw.Net.Hosts() {
		handlers[h] = h.ControlHandler()
	}
	filter := r.sw.Switch.Forwarder(netsim.StageFilter)

	err := r.setIETF("/lhcnp", fastConfig, true)
	if err == nil || !strings.Contains(err.Error(), "fault: cannot be created") {
		t.Fatalf("Set with Fast CNP and the fault: %v, want the fault's error", err)
	}
	if diff := cmp.Diff(fmt.Sprintf("%+v", cfg), fmt.Sprintf("%+v", r.sw.Node.Config())); diff != "" {
		t.Errorf("the node's configuration after the failed Set (-before +after):\n%s", diff)
	}
	for _, pt := range r.sw.Switch.Ports() {
		if pt.Observer() != r.sw.Node {
			t.Errorf("port %s reports to %T after the failed Set, want the node (Long-haul CNP)", pt.Name(), pt.Observer())
		}
	}
	if diff := cmp.Diff(before, snapshot()); diff != "" {
		t.Errorf("state after the failed Set (-before +after):\n%s", diff)
	}
	for _, h := range r.sw.Net.Hosts() {
		if h.ControlHandler() != handlers[h] {
			t.Errorf("host %s: control handler %T after the failed Set, want %T as before (no Fast CNP receiver)", h.Name(), h.ControlHandler(), handlers[h])
		}
	}
	if f := r.sw.Switch.Forwarder(netsim.StageFilter); f != filter {
		t.Errorf("the switch's filter stage holds %T after the failed Set, want %T as before", f, filter)
	}

	if err := r.set(t, q0+"/config/kmax", 40_000_000); err != nil {
		t.Fatalf("a Set after the failed one: %v", err)
	}
	r.run(t, 3*engine.Millisecond)
	if got := r.uint(t, q0+"/state/kmax"); got != 40_000_000 {
		t.Errorf("state kmax %d after a Set of 40000000 that follows the failed one", got)
	}
}

// TestFailedSetRemovesRateAdvice: a Set that turns Rate Advice on and
// fails at a mechanism after it (one beside the mode that cannot be
// created) leaves the hosts as before: no Rate Advice receiver in front
// of their control handlers, no QP announcing the capability
// (rateadvice.CapabilityBit), new QPs neither, and the ports reporting to
// the node alone. It failed before: the function the failed Set created
// stayed, off, its receivers on the hosts announcing the capability on
// every QP. A later Set turns Rate Advice on.
func TestFailedSetRemovesRateAdvice(t *testing.T) {
	dataplane.RegisterUncreatable(t, "zz-fault", func(l *oc.Lhcnp_Lhcnp) bool { return l.GetGlobal().GetConfig().GetRateAdviceEnabled() })
	r := newRig(t)
	r.run(t, engine.Millisecond)
	hosts := r.sw.Net.Hosts()
	handlers := map[*netsim.Host]netsim.ControlHandler{}
	for _, h := range hosts {
		handlers[h] = h.ControlHandler()
	}

	err := r.setIETF("/lhcnp", ratePolicy, false)
	if err == nil || !strings.Contains(err.Error(), "zz-fault: cannot be created") {
		t.Fatalf("Set with Rate Advice and the fault: %v, want the fault's error", err)
	}
	for _, h := range hosts {
		if h.ControlHandler() != handlers[h] {
			t.Errorf("host %s: control handler %T after the failed Set, want %T as before", h.Name(), h.ControlHandler(), handlers[h])
		}
		if h.ReservedBits()&rateadvice.CapabilityBit != 0 {
			t.Errorf("host %s announces Rate Advice on new QPs after the failed Set", h.Name())
		}
		for _, q := range h.SendQPs() {
			if q.ReservedBits()&rateadvice.CapabilityBit != 0 {
				t.Errorf("host %s QP %d announces Rate Advice after the failed Set", h.Name(), q.QPN)
			}
		}
	}
	for _, pt := range r.sw.Switch.Ports() {
		if pt.Observer() != r.sw.Node {
			t.Errorf("port %s reports to %T after the failed Set, want the node alone", pt.Name(), pt.Observer())
		}
	}

	dataplane.Unregister("zz-fault")
	if err := r.setIETF("/lhcnp", ratePolicy, false); err != nil {
		t.Fatalf("Rate Advice after the failed Set: %v", err)
	}
	qps := 0
	for _, h := range hosts {
		for _, q := range h.SendQPs() {
			qps++
			if q.ReservedBits()&rateadvice.CapabilityBit == 0 {
				t.Errorf("host %s QP %d: no capability with Rate Advice on", h.Name(), q.QPN)
			}
		}
	}
	if qps == 0 {
		t.Fatal("no sending QP: the test needs some")
	}
}
