package dataplane_test

import (
	"context"
	"encoding/json"
	"strconv"
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
	gnmicAt(t, n1.addr, "set", "-e", "json_ietf", "--update-path", "/lhcnp", "--update-value",
		`{"global": {"config": {"enabled": true, "rate-advice-enabled": true}}, "rate-advice": {"policies": {"policy": [{"name": "p1", "config": {"name": "p1", "rate": 3000}}]}}}`)
	nw.Sim.Run(4 * engine.Millisecond)
	if err := n1.pub.PublishNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	get := func(path string) uint64 {
		t.Helper()
		out := gnmicAt(t, n1.addr, "get", "-e", "json_ietf", "--type", "state", "--path", path)
		var resp []struct {
			Updates []struct {
				Values map[string]json.RawMessage `json:"values"`
			} `json:"updates"`
		}
		if err := json.Unmarshal([]byte(out), &resp); err != nil || len(resp) != 1 || len(resp[0].Updates) != 1 || len(resp[0].Updates[0].Values) != 1 {
			t.Fatalf("gnmic get %s: %v\n%s", path, err, out)
		}
		for _, raw := range resp[0].Updates[0].Values {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				s = string(raw)
			}
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				t.Fatalf("gnmic get %s: %s", path, raw)
			}
			return n
		}
		return 0
	}
	sent := get("/lhcnp/rate-advice/state/counters/messages-sent")
	perQueue := get(q0 + "/state/counters/rate-advice-sent")
	if sent == 0 || perQueue != sent {
		t.Errorf("%s/state/counters/rate-advice-sent = %d, want the node's messages-sent %d (> 0)", q0, perQueue, sent)
	}
}
