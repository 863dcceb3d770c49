package dataplane_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/server/dataplane"
)

// ratePolicy turns Rate Advice on (/lhcnp, JSON_IETF; the master switch
// with it) with one policy
// that advises every flow 3 Gb/s.
const ratePolicy = `{
  "global": {"config": {"enabled": true, "rate-advice-enabled": true}},
  "rate-advice": {"policies": {"policy": [{"name": "p1", "config": {"name": "p1", "rate": 3000}}]}}
}`

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
	if err := r.setIETF("/lhcnp", ratePolicy, false); err != nil {
		t.Fatalf("enable rate advice: %v", err)
	}
	r.run(t, 4*engine.Millisecond)
	const c = "/lhcnp/rate-advice/state/counters"
	if got := r.uint(t, c+"/messages-sent"); got == 0 || r.uint(t, c+"/policy-advice") != got {
		t.Errorf("%s: messages-sent %d, all from the policy expected", c, got)
	}
	for _, h := range r.sw.Net.Hosts() {
		for _, q := range h.SendQPs() {
			if q.CeilingBitsPerSec() != 3e9 {
				t.Errorf("%s QP %d: ceiling %d, want the policy's 3 Gb/s", h.Name(), q.QPN, q.CeilingBitsPerSec())
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

// TestRateAdviceSentPerQueue: the per-queue rate-advice-sent counter, read
// with gnmic over a real socket, is filled: here every message the node
// sent was for flows through the WAN queue, so it equals the node's
// messages-sent (as fast-cnp-sent does for Fast CNP).
func TestRateAdviceSentPerQueue(t *testing.T) {
	nw, sw := serveNetwork(t, "testdata/line.yaml", "n1")
	n1 := sw[0]
	gnmicAt(t, n1.addr, "set", "-e", "json_ietf", "--update-path", "/lhcnp", "--update-value", ratePolicy)
	nw.Sim.Run(4 * engine.Millisecond)
	if err := n1.pub.PublishNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	sent := gnmicSum(t, n1.addr, "/lhcnp/rate-advice/state/counters/messages-sent")
	perQueue := gnmicSum(t, n1.addr, q0+"/state/counters/rate-advice-sent")
	if sent == 0 || perQueue != sent {
		t.Errorf("%s/state/counters/rate-advice-sent = %d, want the node's messages-sent %d (> 0)", q0, perQueue, sent)
	}
}

// TestNotificationsSentCountRateAdvice: Rate Advice messages are
// switch-originated notifications (the global notifications-sent: "all
// formats and actions") for congestion on the port of the flows they
// advise (the interface's: "all queues and formats"). Long-haul CNP sends
// nothing here, so both equal the Rate Advice counts; the old target left
// Rate Advice out of both (0).
func TestNotificationsSentCountRateAdvice(t *testing.T) {
	r := newRig(t)
	if err := r.setIETF("/lhcnp", ratePolicy, false); err != nil {
		t.Fatalf("enable rate advice: %v", err)
	}
	r.run(t, 4*engine.Millisecond)
	if got := r.uint(t, q0+"/state/counters/cnp-rocev2-sent"); got != 0 {
		t.Fatalf("cnp-rocev2-sent %d: the test wants no Long-haul CNP", got)
	}
	sent := r.uint(t, "/lhcnp/rate-advice/state/counters/messages-sent")
	if sent == 0 {
		t.Fatal("no Rate Advice sent")
	}
	for _, tt := range []struct{ path, want string }{
		{"/lhcnp/global/state/counters/notifications-sent", "/lhcnp/rate-advice/state/counters/messages-sent"},
		{"/lhcnp/interfaces/interface[name=wan]/state/counters/notifications-sent", q0 + "/state/counters/rate-advice-sent"},
	} {
		if got, want := r.uint(t, tt.path), r.uint(t, tt.want); got != want {
			t.Errorf("%s = %d, want %s = %d", tt.path, got, tt.want, want)
		}
	}
}

// TestRateAdviceOpcodeReachesReceivers: rate-advice-opcode changed while
// Rate Advice runs reaches the hosts' receivers with the node
// (rateadvice.Function.Configure, as Fast CNP's does): the new advice is
// applied. The old target left the receivers with the code points and
// access list Rate Advice was created with: the advice was passed by and
// the senders kept the old ceiling (this test failed before the fix).
func TestRateAdviceOpcodeReachesReceivers(t *testing.T) {
	r := newRig(t)
	r.run(t, engine.Millisecond)
	if err := r.setIETF("/lhcnp", ratePolicy, false); err != nil {
		t.Fatalf("enable rate advice: %v", err)
	}
	r.run(t, 4*engine.Millisecond)
	if err := r.setMany([][2]string{
		{"/lhcnp/global/code-points/config/rate-advice-opcode", "193"},
		{"/lhcnp/rate-advice/policies/policy[name=p1]/config/rate", "2000"},
	}); err != nil {
		t.Fatalf("new opcode and rate: %v", err)
	}
	sent := r.uint(t, "/lhcnp/rate-advice/state/counters/messages-sent")
	r.run(t, 8*engine.Millisecond)
	if got := r.uint(t, "/lhcnp/rate-advice/state/counters/messages-sent"); got <= sent {
		t.Fatalf("no Rate Advice sent after the change (%d, %d before): the test needs some", got, sent)
	}
	for _, h := range r.sw.Net.Hosts() {
		for _, q := range h.SendQPs() {
			if q.CeilingBitsPerSec() != 2e9 {
				t.Errorf("%s QP %d: ceiling %d after rate-advice-opcode 193 and rate 2000, want 2 Gb/s", h.Name(), q.QPN, q.CeilingBitsPerSec())
			}
		}
	}
}

// TestRateAdviceOnTwoSwitches: Rate Advice turned on by Set on n1 (a
// policy of 3 Gb/s) and then on n2 of the same network (two targets in one
// process, as in the lab), n2 advising nothing: the senders still take
// n1's ceiling. n2's management put its own receivers in front of every
// host after n1's; the old ones took all advice and dropped n1's as
// untrusted: the senders had no ceiling and this test failed.
func TestRateAdviceOnTwoSwitches(t *testing.T) {
	rigs := newRigs(t, "testdata/line.yaml", map[string]string{"n1": lineConfig, "n2": lineConfig})
	n1, n2 := rigs["n1"], rigs["n2"]
	n1.run(t, engine.Millisecond)
	if err := n1.setIETF("/lhcnp", ratePolicy, false); err != nil {
		t.Fatalf("n1: enable rate advice: %v", err)
	}
	silent := `{"global": {"config": {"rate-advice-enabled": true}}, "rate-advice": {"config": {"queue-based": false}}}`
	if err := n2.setIETF("/lhcnp", silent, false); err != nil {
		t.Fatalf("n2: enable rate advice: %v", err)
	}
	n1.run(t, 4*engine.Millisecond)
	if got := n1.uint(t, "/lhcnp/rate-advice/state/counters/messages-sent"); got == 0 {
		t.Fatal("n1 sent no advice: the test needs some")
	}
	for _, h := range n1.sw.Net.Hosts() {
		for _, q := range h.SendQPs() {
			if q.CeilingBitsPerSec() != 3e9 {
				t.Errorf("%s QP %d: ceiling %d, want n1's policy's 3 Gb/s", h.Name(), q.QPN, q.CeilingBitsPerSec())
			}
		}
	}
}

// TestTwoBesideTheMode: two mechanisms beside the mode (Rate Advice and a
// test one that counts what is enqueued) both watch the switch's ports.
// The old target put each beside the mode in turn, and each replaced the
// one before (mechanism.Beside): the later in the kinds' order ran, Rate
// Advice saw nothing and advised no flow (this test failed).
func TestTwoBesideTheMode(t *testing.T) {
	var enqueued int64
	dataplane.RegisterWatcher(t, "watcher", func(l *oc.Lhcnp_Lhcnp) bool { return l.GetGlobal().GetConfig().GetRateAdviceEnabled() }, &enqueued)
	r := newRig(t)
	r.run(t, engine.Millisecond)
	if err := r.setIETF("/lhcnp", ratePolicy, false); err != nil {
		t.Fatalf("enable rate advice: %v", err)
	}
	r.run(t, 4*engine.Millisecond)
	if got := r.uint(t, "/lhcnp/rate-advice/state/counters/messages-sent"); got == 0 {
		t.Error("Rate Advice sent nothing beside the other mechanism")
	}
	if enqueued == 0 {
		t.Error("the other mechanism beside the mode saw no enqueue")
	}
}
