package dataplane_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/gnmi/store"
)

// TestLongHaulEchoUnderFastCNP: while Fast CNP is the node's mode, the
// Long-haul CNP leaves' state echoes them as configured (global,
// interface, queue, flow table, collaborative suppression), and the
// effective-* leaves what runs: the mode's detection configuration. It
// failed before Binding.Snapshot echoed the translated configuration: it
// wrote the running one, so rtt-est 2000 read 1000, metric-disclosure
// false read true, collaborative-suppression enabled (default true) read
// false, a queue's enabled false read true.
func TestLongHaulEchoUnderFastCNP(t *testing.T) {
	cfg := strings.Replace(fastMarking, `"global": {"config": {"enabled": true, "fast-cnp-enabled": true}},`,
		`"global": {"config": {"enabled": true, "fast-cnp-enabled": true, "metric-disclosure": false}},
  "interfaces": {"interface": [{"name": "wan", "config": {"name": "wan", "rtt-est": 2000},
    "queues": {"queue": [{"id": 0, "config": {"id": 0, "enabled": false}}]}}]},
  "flow-table": {"config": {"max-entries": 1000}},`, 1)
	r := newRigFrom(t, "testdata/line6.yaml", wholeTree(cfg))
	r.run(t, engine.Millisecond)
	const wan = "/lhcnp/interfaces/interface[name=wan]"
	for _, tt := range []struct{ path, want string }{
		{wan + "/state/rtt-est", "2000"},
		{wan + "/state/effective-rtt-est", "1000"}, // the detection configuration's
		{q0 + "/state/enabled", "false"},
		{"/lhcnp/global/state/metric-disclosure", "false"},
		{"/lhcnp/global/state/fast-cnp-enabled", "true"},
		{"/lhcnp/collaborative-suppression/state/enabled", "true"}, // the default
		{"/lhcnp/flow-table/state/max-entries", "1000"},
	} {
		if got := r.getJSON(t, tt.path); got != tt.want {
			t.Errorf("%s = %s, want %s", tt.path, got, tt.want)
		}
	}
}

// TestMechanismEchoBeforeFirstRun: the state containers of the mechanisms
// beside Long-haul CNP (/lhcnp/{switch-cnp,fast-cnp,fcn,rate-advice}/state)
// echo their configuration from the first Set, counters 0, before the
// mechanism was ever turned on; the node's notifications still count as
// its own (no fast-cnp-sent on a switch that never had Fast CNP). It
// failed before the binding echoed a mechanism whose function does not
// exist yet: those containers were absent until its own leaf was first on.
func TestMechanismEchoBeforeFirstRun(t *testing.T) {
	r := newRig(t)
	if err := r.setMany([][2]string{
		{"/lhcnp/switch-cnp/config/delay-threshold", "40"},
		{"/lhcnp/fast-cnp/config/min-cnp-interval", "70"},
		{"/lhcnp/fcn/config/max-mappings", "1000"},
		{"/lhcnp/rate-advice/config/min-advice-interval", "300"},
	}); err != nil {
		t.Fatal(err)
	}
	r.run(t, engine.Millisecond)
	for _, tt := range []struct {
		path string
		want uint64
	}{
		{"/lhcnp/switch-cnp/state/delay-threshold", 40},
		{"/lhcnp/switch-cnp/state/counters/sent", 0},
		{"/lhcnp/fast-cnp/state/min-cnp-interval", 70},
		{"/lhcnp/fast-cnp/state/counters/sent", 0},
		{"/lhcnp/fcn/state/max-mappings", 1000},
		{"/lhcnp/fcn/state/counters/fcn-received", 0},
		{"/lhcnp/rate-advice/state/min-advice-interval", 300},
		{"/lhcnp/rate-advice/state/counters/messages-sent", 0},
	} {
		if got := r.uint(t, tt.path); got != tt.want {
			t.Errorf("%s = %d, want %d", tt.path, got, tt.want)
		}
	}
	if got := r.getJSON(t, "/lhcnp/switch-cnp/state/enabled"); got != "false" {
		t.Errorf("switch-cnp state enabled = %s, want false", got)
	}
	const fastSent = q0 + "/state/counters/fast-cnp-sent"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := r.c.Get(ctx, &gnmi.GetRequest{Path: []*gnmi.Path{store.MustPath(fastSent)}, Encoding: gnmi.Encoding_PROTO})
	if status.Code(err) != codes.NotFound {
		t.Errorf("get %s: %v, want NotFound (the switch never had Fast CNP)", fastSent, err)
	}
}
