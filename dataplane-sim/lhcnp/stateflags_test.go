package lhcnp

import (
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// TestConditionFlagsNow: a queue's qd-above-kmax, emr-above-v-ecn and
// qgr-above-v-growth say whether §5.4's conditions hold at the snapshot:
// true while a 2:1 bottleneck's queue grows past K_max, false once the
// flow has ended and the queue drained, though no packet came since (the
// node's own flags change at an enqueue only).
func TestConditionFlagsNow(t *testing.T) {
	cfg := testConfig(200_000, 100*engine.Microsecond)
	q := &cfg.Interface.Queue
	q.VECNPercent = 5
	q.VGrowthBytesPerSec = 100_000_000 // 0.8 Gb/s: a 2:1 bottleneck of 5 Gb/s grows at 5
	// No CM exchange: its DREQ after the last ACK would pass the queue,
	// and an enqueue refreshes the node's flags.
	l := newLine(t, lineOpts{srcRate: 10e9, midRate: 5e9, flowBytes: 4_000_000, cfg1: &cfg, noRP: true, noCM: true})
	st := func() QueueState { return l.node1.State(false).Ports[l.n1Out.Index()].Queues[0] }
	var busy QueueState
	for now := engine.Millisecond / 10; now < 20*engine.Millisecond; now += engine.Millisecond / 10 {
		l.sim.Run(now)
		if s := st(); s.QueueBytes > busy.QueueBytes {
			busy = s
		}
	}
	if !busy.QDAboveKMax || !busy.EMRAboveVECN {
		t.Errorf("at the peak (QD %d B, K_max %d B, EMR %.1f %%): qd-above-kmax %v, emr-above-v-ecn %v, want both",
			busy.QueueBytes, busy.KMaxBytes, busy.ECNMarkingPercent, busy.QDAboveKMax, busy.EMRAboveVECN)
	}
	l.sim.Run(500 * engine.Millisecond)
	if s := st(); s.QueueBytes != 0 || s.QDAboveKMax || s.EMRAboveVECN || s.QGRAboveVGrowth {
		t.Errorf("0.5 s after the flow, the queue drained (QD %d B, EMR %.1f %%, QGR %d B/s): qd-above-kmax %v, emr-above-v-ecn %v, qgr-above-v-growth %v, want none",
			s.QueueBytes, s.ECNMarkingPercent, s.QueueGrowthBytesPerSec, s.QDAboveKMax, s.EMRAboveVECN, s.QGRAboveVGrowth)
	}
}

// TestActionCountersAreLongHauls: cnp-rate-reduce-sent and the other
// per-action counters count Long-haul CNPs; a Notifier's notification
// (Fast CNP, FCN: FormatExternal) counts in SentExternal only, though the
// node chose an action for it.
func TestActionCountersAreLongHauls(t *testing.T) {
	l, _, ps, q, e := optionsLine(t, false)
	before := q.counters
	m := &wire.LongHaul{Action: wire.ActionRateReduce, Parameter: 30}
	now := l.sim.Now()
	l.node1.account(ps, q, e, m, FormatExternal, TriggerQD, false, now)
	c := q.counters
	if c.SentRateReduce != before.SentRateReduce || c.SentExternal != before.SentExternal+1 {
		t.Errorf("a Notifier's Rate Reduce: cnp-rate-reduce-sent %d → %d, external %d → %d; want it in external only",
			before.SentRateReduce, c.SentRateReduce, before.SentExternal, c.SentExternal)
	}
	l.node1.account(ps, q, e, m, FormatRoCEv2, TriggerQD, false, now)
	if c2 := q.counters; c2.SentRateReduce != c.SentRateReduce+1 || c2.SentRoCEv2 != c.SentRoCEv2+1 {
		t.Errorf("a Long-haul CNP's Rate Reduce: cnp-rate-reduce-sent %d → %d, rocev2 %d → %d; want one each",
			c.SentRateReduce, c2.SentRateReduce, c.SentRoCEv2, c2.SentRoCEv2)
	}
}

// TestDeferringNow: a flow's deferring and the node's deferring-flows say
// whether the node defers the flow now: for the deferral's window, not for
// good (the node looks at a deferral again only when it picks the flow for
// a notification, which an episode that ended never does).
func TestDeferringNow(t *testing.T) {
	l, _, ps, q, e := optionsLine(t, false)
	now := l.sim.Now()
	e.deferring, e.deferStart, e.deferQD = true, now, q.qd
	win, _ := l.node1.deferWindow(ps, q, e)
	deferring := func() (bool, int) {
		s := l.node1.State(true)
		for _, f := range s.FlowTable.Flows {
			if f.Key == e.key {
				return f.Deferring, s.Collaborative.DeferringFlows
			}
		}
		t.Fatal("the flow is not in the state")
		return false, 0
	}
	l.sim.Run(now + win/2)
	if d, n := deferring(); !d || n != 1 {
		t.Errorf("half a window (%v) into the deferral: deferring %v, deferring-flows %d, want true and 1", win, d, n)
	}
	l.sim.Run(now + win + engine.Microsecond)
	if d, n := deferring(); d || n != 0 {
		t.Errorf("after the deferral's window, no notification since: deferring %v, deferring-flows %d, want false and 0", d, n)
	}
}

// TestDropsAreBufferOverflows: a queue's Drops (YANG dropped-packets,
// "packets dropped at the queue (buffer overflow)") counts the packets its
// full buffer refused, not those lost because the egress link went down
// (flushed from the queue, or routed to the port while down), which the
// port counts in DownDropPackets alone.
func TestDropsAreBufferOverflows(t *testing.T) {
	cfg := testConfig(10_000_000, 100*engine.Microsecond)
	l := newLine(t, lineOpts{srcRate: 10e9, midRate: 5e9, cfg1: &cfg, noRP: true})
	pc := l.n1Out.Config()
	pc.BufferBytes = 300_000
	if err := l.n1Out.SetConfig(pc); err != nil {
		t.Fatal(err)
	}
	drops := func() int64 { return l.node1.State(false).Ports[l.n1Out.Index()].Queues[0].Counters.Drops }
	l.sim.Run(2 * engine.Millisecond)
	st := l.n1Out.Stats()
	if st.DropPackets == 0 || drops() != st.DropPackets {
		t.Fatalf("2:1 into a 300 KB buffer: drops %d, want the port's overflows %d (> 0)", drops(), st.DropPackets)
	}
	overflows := drops()
	l.n1Out.Out().SetUp(false)
	l.sim.Run(3 * engine.Millisecond)
	if st := l.n1Out.Stats(); st.DownDropPackets == 0 || drops() != overflows {
		t.Errorf("the link down for 1 ms (%d packets lost to it): drops %d, want the %d overflows before", st.DownDropPackets, drops(), overflows)
	}
}

// TestLinkDownIsNotOverload: packets lost because the egress link is down
// are not a tail drop for OverloadCut's severity (severe: "a tail drop
// within the per-flow interval"): a queue that never overflowed, its link
// down, is not severely congested, where every such loss made it so and an
// OverloadCut node cut its flows for a failure, not for congestion.
func TestLinkDownIsNotOverload(t *testing.T) {
	cfg := testConfig(10_000_000, 100*engine.Microsecond)
	l := newLine(t, lineOpts{srcRate: 5e9, midRate: 10e9, cfg1: &cfg, noRP: true})
	l.sim.Run(2 * engine.Millisecond)
	q := &l.node1.portOf(l.n1Out).queues[0]
	if st := l.n1Out.Stats(); st.DropPackets != 0 || q.severe(l.sim.Now()) {
		t.Fatalf("5 Gb/s into 10 Gb/s: %d overflows, severe %v, want none and false", st.DropPackets, q.severe(l.sim.Now()))
	}
	l.n1Out.Out().SetUp(false)
	l.sim.Run(2*engine.Millisecond + 50*engine.Microsecond)
	if st := l.n1Out.Stats(); st.DownDropPackets == 0 || st.DropPackets != 0 {
		t.Fatalf("the link down 50 µs: %d packets lost to it, %d overflows, want some and none", st.DownDropPackets, st.DropPackets)
	}
	if q.severe(l.sim.Now()) {
		t.Errorf("the link down, no overflow (QD %d B, K_max %d B): severe, want not", q.qd, q.kmax)
	}
}

// TestECNMarkingActive: a queue's ecn-marking-active ("QD exceeds K_min:
// the first-level response is active") holds when the node marks the queue
// (it programs the port's ECN with its thresholds) and QD is above K_min;
// a node, port or queue disabled marks nothing of its own, whatever QD.
func TestECNMarkingActive(t *testing.T) {
	for _, tt := range []struct {
		desc string
		off  func(*Config)
		want bool
	}{
		{"on", func(*Config) {}, true},
		{"node disabled", func(c *Config) { c.Enabled = false }, false},
		{"port disabled", func(c *Config) { c.Interface.Enabled = false }, false},
		{"queue disabled", func(c *Config) { c.Interface.Queue.Enabled = false }, false},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := testConfig(1_000_000, 100*engine.Microsecond)
			tt.off(&cfg)
			l := newLine(t, lineOpts{srcRate: 10e9, midRate: 5e9, cfg1: &cfg, noRP: true})
			l.sim.Run(2 * engine.Millisecond)
			s := l.node1.State(false).Ports[l.n1Out.Index()].Queues[0]
			if s.QueueBytes <= s.KMinBytes {
				t.Fatalf("QD %d B, not above K_min %d B", s.QueueBytes, s.KMinBytes)
			}
			if s.ECNMarkingActive != tt.want {
				t.Errorf("QD %d B above K_min %d B: ecn-marking-active %v, want %v", s.QueueBytes, s.KMinBytes, s.ECNMarkingActive, tt.want)
			}
		})
	}
}
