package dataplane_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// TestSetRateAdvice: Rate Advice configured through gNMI runs beside
// Long-haul CNP on the same switch (the two coexist): the senders get the
// policy's rate as their ceiling, the state shows the counters and the
// flows' advice. A policy without a rate is refused naming the leaf.
func TestSetRateAdvice(t *testing.T) {
	r := newRig(t)
	r.run(t, engine.Millisecond)
	err := r.setIETF("/lhcnp/rate-advice/policies", `{"policy": [{"name": "p1", "config": {"name": "p1"}}]}`, false)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "policy[name=p1]/config/rate") {
		t.Fatalf("policy without a rate: %v, want InvalidArgument naming its rate", err)
	}
	if err := r.setIETF("/lhcnp", `{
  "global": {"config": {"rate-advice-enabled": true}},
  "rate-advice": {"policies": {"policy": [{"name": "p1", "config": {"name": "p1", "rate": 3000}}]}}
}`, false); err != nil {
		t.Fatalf("enable rate advice: %v", err)
	}
	r.run(t, 4*engine.Millisecond)
	const c = "/lhcnp/rate-advice/state/counters"
	if got := r.uint(t, c+"/messages-sent"); got == 0 || r.uint(t, c+"/policy-advice") != got {
		t.Errorf("%s: messages-sent %d, all from the policy expected", c, got)
	}
	for _, h := range r.sw.Net.Hosts() {
		for _, q := range h.SendQPs() {
			if q.CeilingBps() != 3e9 {
				t.Errorf("%s QP %d: ceiling %d, want the policy's 3 Gb/s", h.Name(), q.QPN, q.CeilingBps())
			}
		}
	}
	if s := r.getJSON(t, "/lhcnp/rate-advice/flows"); !strings.Contains(s, `"advised-rate":3000`) || !strings.Contains(s, `"POLICY"`) {
		t.Errorf("flows state %s, want the advice", s)
	}
	if !r.sw.Node.Config().FormatRoCEv2 {
		t.Errorf("Long-haul CNP was turned off")
	}
}
