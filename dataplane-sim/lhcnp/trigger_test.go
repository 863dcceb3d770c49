package lhcnp

import (
	"net/netip"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// TestDefaultTriggersAtOnce runs DefaultConfig as it is (only enabled,
// with a format and RTT_est set so that K_max is 200 KB on a 5 Gb/s port)
// and a finite burst that keeps the queue above K_max for about 30 µs:
// §5.4 "MUST trigger Long-haul CNP generation when any of the following
// conditions is satisfied", so the node sends on the packet that takes QD
// past K_max. A default trigger persistence (the 100 µs this replaced)
// sends nothing on the QD trigger.
func TestDefaultTriggersAtOnce(t *testing.T) {
	if p := DefaultQueueConfig().TriggerPersistence; p != 0 {
		t.Errorf("default trigger persistence %v, want 0 (§5.4)", p)
	}
	const kmax = 200_000
	cfg := DefaultConfig()
	cfg.Enabled, cfg.FormatRoCEv2 = true, true
	cfg.RoCEv2Receivers = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}
	cfg.Interface.RTTEst = 320 * engine.Microsecond // 5 Gb/s x 320 µs / 8 = 200 KB
	// 10 Gb/s into 5 Gb/s: QD grows by 625 bytes per µs while the flow
	// sends (335 µs: 209 KB at the peak) and drains as fast; above K_max
	// for about 30 µs.
	l := newLine(t, lineOpts{srcRate: 10e9, midRate: 5e9, flowBytes: 418_750, cfg1: &cfg})
	if got := l.node1.State(false).Ports[l.n1Out.Index()].Queues[0].KMaxBytes; got != kmax {
		t.Fatalf("K_max %d, want %d", got, kmax)
	}
	var crossed, above engine.Time = -1, 0
	l.sim.Every(0, engine.Microsecond, func(now engine.Time) {
		if l.n1Out.QueueBytes(0) > kmax {
			if crossed < 0 {
				crossed = now
			}
			above += engine.Microsecond
		}
	})
	l.sim.Run(2 * engine.Millisecond)
	if crossed < 0 || above > 40*engine.Microsecond {
		t.Fatalf("QD above K_max from %v for %v: want an excursion of about 30 µs", crossed, above)
	}
	sent := eventsOf(l.events1, EventCNPSent)
	if len(sent) == 0 {
		t.Fatalf("nothing sent for QD above K_max for %v", above)
	}
	e := sent[0]
	if e.Trigger != TriggerQD || e.Time < crossed-engine.Microsecond || e.Time > crossed+engine.Microsecond {
		t.Errorf("first notification %v on %v; QD passed K_max at %v: want the QD trigger at once", e.Time, e.Trigger, crossed)
	}
	if e.Action != wire.ActionRateReduce || e.CongLevel < 170 || e.CongLevel > 176 {
		t.Errorf("first notification %v at level %d, want rate-reduce at 170..176 (QD within a packet of K_max)", e.Action, e.CongLevel)
	}
}

// TestNotifyCarriesNoParameter checks §6.1 "Notify: Parameter unused, MUST
// be set to zero" on the node: with Notify as its default action the node
// sends Notify with Parameter 0 (the encoder refuses any other), and the
// source takes it as the DCQCN response.
func TestNotifyCarriesNoParameter(t *testing.T) {
	cfg := testConfig(200_000, 400*engine.Microsecond)
	cfg.Interface.Queue.Action.DefaultAction = wire.ActionNotify
	cfg.Interface.Queue.Action.PauseLevel = PauseLevelNever
	l := newLine(t, lineOpts{srcRate: 10e9, midRate: 5e9, cfg1: &cfg})
	l.sim.Run(2 * engine.Millisecond)
	sent := eventsOf(l.events1, EventCNPSent)
	if len(sent) == 0 {
		t.Fatalf("nothing sent; counters %+v", l.node1.State(false).Counters)
	}
	for _, e := range sent {
		if e.Action == wire.ActionNotify && e.Parameter != 0 {
			t.Errorf("notify with parameter %d", e.Parameter)
		}
	}
	if c := l.rp.Counters(); c.AcceptedNotify == 0 {
		t.Errorf("source accepted no notify: %+v", c)
	}
}

// TestPauseNeedsSevereQueue checks §5.5.1 "Pause SHOULD be used only for
// severe congestion": the node pauses a flow only when its queue itself is
// past the Pause level (QD >= 1.21 K_max for level 224). Here the first
// Rate Reduce is not enough (10 Gb/s cut to 7 Gb/s into 2 Gb/s) and the
// next notification, one RTT_est later, finds the queue far past K_max.
func TestPauseNeedsSevereQueue(t *testing.T) {
	const kmax = 100_000
	_, sent := overloaded(t, kmax, 300*engine.Microsecond, 2e9, 2*engine.Millisecond)
	pauses := 0
	for i, e := range sent {
		qd := int64(e.MetricValue) * 1000 // queue depth in KB
		severe := levelQD(qd, kmax/2, kmax) >= 224
		switch {
		case i == 0 && e.Action != wire.ActionRateReduce:
			t.Errorf("first notification %+v, want rate reduce", e)
		case e.Action == wire.ActionPause && qd < kmax*121/100-1000:
			t.Errorf("pause %d at QD %d KB, below 1.21 K_max", i, e.MetricValue)
		case e.Action == wire.ActionRateReduce && severe && qd > kmax*122/100:
			t.Errorf("rate reduce %d at QD %d KB, severe: want pause", i, e.MetricValue)
		}
		if e.Action == wire.ActionPause {
			pauses++
			if e.Parameter != 1000 {
				t.Errorf("pause parameter %d µs, want 1000", e.Parameter)
			}
		}
	}
	if pauses == 0 {
		t.Errorf("no pause with the queue at %d KB", sent[len(sent)-1].MetricValue)
	}
	// The default policy's Pause level is QD = 1.21 K_max: a queue just
	// below it gets the default action, just above it Pause.
	a := DefaultQueueConfig().Action
	for _, tt := range []struct {
		qd   int64
		want wire.Action
	}{{kmax * 120 / 100, wire.ActionRateReduce}, {kmax * 122 / 100, wire.ActionPause}} {
		if act, _ := policy(&a, int(levelQD(tt.qd, kmax/2, kmax))); act != tt.want {
			t.Errorf("default policy at QD %d (K_max %d): %v, want %v", tt.qd, kmax, act, tt.want)
		}
	}
}

// TestPauseLevel: a configured PauseLevel (pause-congestion-level, a
// deviation below the default 224 = 1.21 · K_max) moves where the node
// chooses Pause. 1 % cuts of 10 Gb/s into 9 Gb/s leave the queue growing
// past K_max (400 KB) by about 24 levels a notification (one RTT_est
// apart): the default answers the queue at levels 172, 193 and 212 with
// Rate Reduce and pauses at 228; with level 180 the node pauses at 193,
// and with 170 (QD = K_max: Pause without severe congestion) at once, at
// 172. Every notification is Pause exactly when its queue's level is at or
// above the configured level.
func TestPauseLevel(t *testing.T) {
	for _, tt := range []struct {
		desc       string
		pauseLevel int
		band       [2]uint8    // levels [from, to) the run must reach
		inBand     wire.Action // and the action there
	}{
		{desc: "default 224", pauseLevel: DefaultQueueConfig().Action.PauseLevel, band: [2]uint8{180, 224}, inBand: wire.ActionRateReduce},
		{desc: "configured 180", pauseLevel: 180, band: [2]uint8{180, 224}, inBand: wire.ActionPause},
		{desc: "configured 170", pauseLevel: 170, band: [2]uint8{170, 180}, inBand: wire.ActionPause},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := testConfig(400_000, 300*engine.Microsecond)
			a := &cfg.Interface.Queue.Action
			a.ResumeEnabled = false
			a.RateReducePercent = 1
			a.PauseLevel = tt.pauseLevel
			// One node: no upstream node to defer to, no escalation.
			cfg.Collaborative.Enabled = false
			l := newLine(t, lineOpts{srcRate: 10e9, midRate: 9e9, cfg1: &cfg})
			l.sim.Run(8 * engine.Millisecond)
			inBand := 0
			for _, e := range eventsOf(l.events1, EventCNPSent) {
				want := wire.ActionRateReduce
				if int(e.CongLevel) >= tt.pauseLevel {
					want = wire.ActionPause
				}
				if e.Trigger != TriggerQD || e.Action != want {
					t.Errorf("%v on %v at level %d (QD %d KB), want %v from the QD trigger", e.Action, e.Trigger, e.CongLevel, e.MetricValue, want)
				}
				if e.CongLevel >= tt.band[0] && e.CongLevel < tt.band[1] && e.Action == tt.inBand {
					inBand++
				}
			}
			if inBand == 0 {
				t.Errorf("no %v at a level in [%d, %d): the run shows nothing about the Pause level", tt.inBand, tt.band[0], tt.band[1])
			}
		})
	}
}

// TestZeroThresholdTurnsTriggerOff: V_ecn or V_growth 0 (a deviation: the
// YANG ranges start above 0) leaves its trigger unconfigured. 20 Gb/s into
// 5 Gb/s below a 4 MB K_max, K_min 20 KB and P_max 1: the default V_ecn
// (20 %) fires the EMR trigger and the default V_growth (10 Gb/s of
// growth) the QGR trigger; with both 0 the queue is marked and nothing
// fires.
func TestZeroThresholdTurnsTriggerOff(t *testing.T) {
	d := DefaultQueueConfig()
	for _, tt := range []struct {
		desc             string
		vecn             float64
		vgrowth          int64
		wantEMR, wantQGR bool
	}{
		{desc: "v_ecn default, v_growth 0", vecn: d.VECNPercent, wantEMR: true},
		{desc: "v_ecn 0, v_growth default", vgrowth: d.VGrowthBytesPerSec, wantQGR: true},
		{desc: "both 0"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := testConfig(4_000_000, 400*engine.Microsecond)
			q := &cfg.Interface.Queue
			q.KMinMode, q.KMinBytes, q.PMax = KMinExplicit, 20_000, 1
			q.VECNPercent, q.VGrowthBytesPerSec = tt.vecn, tt.vgrowth
			l := newLine(t, lineOpts{srcRate: 20e9, midRate: 5e9, cfg1: &cfg})
			l.sim.Run(engine.Millisecond)
			c := l.node1.State(false).Ports[l.n1Out.Index()].Queues[0].Counters
			sent := len(eventsOf(l.events1, EventCNPSent))
			if c.ECNMarked == 0 || c.QDTriggers != 0 {
				t.Fatalf("%d marks, %d QD triggers: want marks and no QD trigger (the test shows nothing otherwise)", c.ECNMarked, c.QDTriggers)
			}
			if (c.EMRTriggers > 0) != tt.wantEMR || (c.QGRTriggers > 0) != tt.wantQGR || (sent > 0) != (tt.wantEMR || tt.wantQGR) {
				t.Errorf("EMR triggers %d, QGR triggers %d, %d sent; want EMR %v, QGR %v", c.EMRTriggers, c.QGRTriggers, sent, tt.wantEMR, tt.wantQGR)
			}
		})
	}
}

// TestIdleEMRDoesNotTrigger: the EMR trigger reads the marking rate the
// node has when a packet arrives, not that of the last window it closed.
// A flow marked heavily ends; 5 ms later (50 EMR windows, no packet in
// between) a second flow starts at a fifth of the port rate, which
// neither queues nor marks: its first packet found the last busy
// window's EMR and fired a Rate Reduce at it.
func TestIdleEMRDoesNotTrigger(t *testing.T) {
	// K_min and K_max one and two packets: every packet dequeued from a
	// queue of more is marked, so the window the first flow's last
	// packets leave in is marked almost wholly.
	cfg := testConfig(8_400, 400*engine.Microsecond)
	q := &cfg.Interface.Queue
	q.KMinMode, q.KMinBytes, q.PMax, q.VECNPercent = KMinExplicit, 4_200, 1, 10
	q.Action.ResumeEnabled = false
	// No reaction point: the notifications do not slow the first flow down.
	l := newLine(t, lineOpts{srcRate: 10e9, midRate: 5e9, cfg1: &cfg, flowBytes: 1_000_000, noRP: true, noCM: true})
	const start2 = 20 * engine.Millisecond
	if _, err := l.net.AddFlow(netsim.FlowConfig{Name: "g", Src: l.src, Dst: l.dst, SrcQPN: 101, DstQPN: 201,
		Start: start2, MaxRateBitsPerSec: 1e9, NoCM: true}); err != nil {
		t.Fatal(err)
	}
	l.sim.Run(start2 - engine.Nanosecond)
	if done, _ := l.flow.Done(); !done {
		t.Fatal("the first flow has not finished before the second starts")
	}
	qs := &l.node1.portOf(l.n1Out).queues[0]
	if qs.emr <= q.VECNPercent || qs.counters.EMRTriggers == 0 {
		t.Fatalf("before the second flow: last window's EMR %v %%, %d EMR triggers; want above V_ecn %v %% and some (the test shows nothing otherwise)",
			qs.emr, qs.counters.EMRTriggers, q.VECNPercent)
	}
	before := len(eventsOf(l.events1, EventCNPSent))
	l.sim.Run(start2 + 2*engine.Millisecond)
	if sent := eventsOf(l.events1, EventCNPSent)[before:]; len(sent) != 0 {
		t.Errorf("the uncongested second flow got %d notifications, the first at %v by trigger %v (EMR of the last busy window)",
			len(sent), sent[0].Time, sent[0].Trigger)
	}
}
