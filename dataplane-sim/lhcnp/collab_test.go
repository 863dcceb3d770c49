package lhcnp

import (
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// TestCollaborativeSuppression runs two nodes in series (§5.7): the source
// sends 10 Gb/s, N1's egress is 9 Gb/s and N2's 4 Gb/s. N1, nearest the
// source, fills first and cuts the flow by 30%; N2 sees the flow's arrival
// rate fall from 9 to 7 Gb/s and defers; its own queue keeps growing (7 >
// 4 Gb/s), so after a whole observation window it escalates with Pause and
// a higher congestion level. Without N1, N2 sends its own Rate Reduce.
func TestCollaborativeSuppression(t *testing.T) {
	const rtt2 = 4 * engine.Millisecond
	mk := func(withN1 bool) *line {
		var c1 *Config
		if withN1 {
			c := testConfig(100_000, 500*engine.Microsecond)
			c.Interface.Queue.Action.ResumeEnabled = false
			c1 = &c
		}
		c2 := testConfig(2_000_000, rtt2)
		c2.Interface.Queue.Action.ResumeEnabled = false
		// The source recovers after 2 x 10 ms, outside the test.
		rc := DefaultReactionConfig()
		rc.RTTEst = 10 * engine.Millisecond
		rc.TrustedSources = trusted(false)
		return newLine(t, lineOpts{srcRate: 10e9, midRate: 9e9, dstRate: 4e9, cfg1: c1, cfg2: &c2, rc: rc})
	}

	t.Run("n1 acts, n2 defers then escalates", func(t *testing.T) {
		l := mk(true)
		l.sim.Run(12 * engine.Millisecond)
		sent1 := eventsOf(l.events1, EventCNPSent)
		if len(sent1) == 0 || sent1[0].Action != wire.ActionRateReduce {
			t.Fatalf("n1 sent %+v, want a rate reduce first", sent1)
		}
		if d := eventsOf(l.events1, EventDeferral); len(d) != 0 {
			t.Errorf("n1 deferred %d times: its own notification must not count as upstream control", len(d))
		}
		defs := eventsOf(l.events2, EventDeferral)
		if len(defs) == 0 {
			t.Fatalf("n2 never deferred; events %+v", l.events2)
		}
		if defs[0].Time < sent1[0].Time {
			t.Errorf("n2 deferred at %v, before n1 acted at %v", defs[0].Time, sent1[0].Time)
		}
		sent2 := eventsOf(l.events2, EventCNPSent)
		if len(sent2) == 0 {
			t.Fatal("n2 never escalated")
		}
		esc := sent2[0]
		if !esc.Escalated || esc.Action != wire.ActionPause || esc.CongLevel < 224 {
			t.Errorf("n2's first notification %+v, want an escalated pause at level >= 224", esc)
		}
		if esc.Time-defs[0].Time < rtt2 {
			t.Errorf("escalated %v after deferring, before the %v window", esc.Time-defs[0].Time, rtt2)
		}
		c := l.node2.State(false).Ports[l.n2Out.Index()].Queues[0].Counters
		if c.SuppressedDeferral == 0 || c.Deferrals == 0 || c.Escalations == 0 {
			t.Errorf("n2 counters %+v", c)
		}
		if s := l.node2.State(false).Collaborative; s.Deferrals == 0 || s.Escalations == 0 || s.ObservationWindow != rtt2 {
			t.Errorf("collaborative state %+v", s)
		}
	})

	t.Run("n2 alone acts itself", func(t *testing.T) {
		l := mk(false)
		l.sim.Run(12 * engine.Millisecond)
		sent2 := eventsOf(l.events2, EventCNPSent)
		if len(sent2) == 0 || sent2[0].Action != wire.ActionRateReduce || sent2[0].Escalated {
			t.Fatalf("n2 sent %+v, want a plain rate reduce", sent2)
		}
		if d := eventsOf(l.events2, EventDeferral); len(d) != 0 {
			t.Errorf("n2 deferred without upstream control: %+v", d)
		}
	})

	t.Run("suppression disabled", func(t *testing.T) {
		l := mk(true)
		c := l.node2.Config()
		c.Collaborative.Enabled = false
		if err := l.node2.ApplyConfig(c); err != nil {
			t.Fatal(err)
		}
		l.sim.Run(12 * engine.Millisecond)
		if d := eventsOf(l.events2, EventDeferral); len(d) != 0 {
			t.Errorf("deferred with suppression off")
		}
		if sent2 := eventsOf(l.events2, EventCNPSent); len(sent2) == 0 || sent2[0].Escalated {
			t.Errorf("n2 sent %+v, want plain notifications", sent2)
		}
	})
}
