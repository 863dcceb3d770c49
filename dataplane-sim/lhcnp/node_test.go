package lhcnp

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// TestEndToEndRateReduce runs a congested line (10 Gb/s into 5 Gb/s) with
// a node on n1, in both formats: the node sends Rate Reduce 30 on QD >
// K_max, the frame crosses the network, the source decodes it and cuts
// the QP's rate by 30%.
func TestEndToEndRateReduce(t *testing.T) {
	for _, tt := range []struct {
		desc   string
		v6     bool
		icmp   bool
		format Format
	}{
		{desc: "rocev2 over ipv4", format: FormatRoCEv2},
		{desc: "rocev2 over ipv6", v6: true, format: FormatRoCEv2},
		{desc: "icmpv6", v6: true, icmp: true, format: FormatICMPv6},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := testConfig(200_000, 400*engine.Microsecond)
			if tt.icmp {
				cfg.FormatRoCEv2 = false
			}
			l := newLine(t, lineOpts{v6: tt.v6, srcRate: 10e9, midRate: 5e9, cfg1: &cfg})
			// Until the source has applied the first notification: later
			// ones (Pause, Resume) change the rate again.
			for l.sim.Now() < 2*engine.Millisecond && l.rp.Counters().AcceptedRateReduce == 0 {
				l.sim.Run(l.sim.Now() + engine.Microsecond)
			}
			sent := eventsOf(l.events1, EventCNPSent)
			if len(sent) == 0 {
				t.Fatalf("no notification sent; state %+v", l.node1.State(false).Ports[1].Queues[0])
			}
			first := sent[0]
			if first.Format != tt.format || first.Action != wire.ActionRateReduce || first.Parameter != 30 ||
				first.Trigger != TriggerQD || first.MetricType != wire.MetricQueueDepth || first.Flow.SrcQP != 100 {
				t.Errorf("first notification %+v", first)
			}
			if first.MetricValue < 200 || first.CongLevel < 170 {
				t.Errorf("metric %d KB level %d, want >= 200 KB and level >= 170 above K_max", first.MetricValue, first.CongLevel)
			}
			c := l.rp.Counters()
			if c.AcceptedRateReduce == 0 || c.Malformed != 0 || c.Untrusted != 0 {
				t.Fatalf("reaction counters %+v", c)
			}
			r, ok := l.rp.QP(l.flow.Sender)
			if !ok || !r.Reduced || r.NormalBitsPerSec != 10e9 {
				t.Fatalf("qp reaction %+v", r)
			}
			if got := l.flow.Sender.RateBitsPerSec(); got != 7e9 || l.flow.Sender.CeilingBitsPerSec() != 7e9 {
				t.Errorf("rate %d, ceiling %d after rate reduce, want 7 Gb/s held", got, l.flow.Sender.CeilingBitsPerSec())
			}
		})
	}
}

// TestThresholdsSection7 checks §5.3.2 with the numbers of §7 step 2:
// K_max = max(64KB, 1.0 * 100e9 * 0.010 / 8) = 125 MB and K_min = 62.5 MB,
// programmed into the port's ECN marking (the first-level response), and
// the floor, explicit and K_min < K_max cases.
func TestThresholdsSection7(t *testing.T) {
	for _, tt := range []struct {
		desc               string
		rate               int64
		edit               func(q *QueueConfig)
		wantKMax, wantKMin int64
	}{
		{desc: "§7: 100 Gb/s, 10 ms", rate: 100e9, wantKMax: 125_000_000, wantKMin: 62_500_000},
		{desc: "alpha 0.5", rate: 100e9, edit: func(q *QueueConfig) { q.Alpha = 0.5 }, wantKMax: 62_500_000, wantKMin: 31_250_000},
		{desc: "k_base floor", rate: 1e6, wantKMax: 64_000, wantKMin: 32_000}, // the draft's 64KB, KB = 1000 bytes
		// A K_base below one maximum-sized frame (a WRITE FIRST of 4194
		// bytes at a 4096-byte MTU; a deviation, validation asks only for
		// 1 byte) is accepted and is the floor in its place.
		{desc: "k_base below one frame", rate: 1e6, edit: func(q *QueueConfig) { q.KBaseBytes = 4000 }, wantKMax: 4000, wantKMin: 2000},
		{desc: "explicit k_max", rate: 100e9, edit: func(q *QueueConfig) { q.KMaxMode, q.KMaxBytes = KMaxExplicit, 1000 }, wantKMax: 1000, wantKMin: 500},
		{desc: "explicit k_min", rate: 100e9, edit: func(q *QueueConfig) { q.KMinMode, q.KMinBytes = KMinExplicit, 1000 }, wantKMax: 125_000_000, wantKMin: 1000},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Enabled, cfg.FormatRoCEv2 = true, true
			cfg.Interface.RTTEst = 10 * engine.Millisecond
			if tt.edit != nil {
				tt.edit(&cfg.Interface.Queue)
			}
			l := newLine(t, lineOpts{srcRate: tt.rate, cfg1: &cfg, noRP: true})
			q := l.node1.State(false).Ports[l.n1Out.Index()].Queues[0]
			if q.KMaxBytes != tt.wantKMax || q.KMinBytes != tt.wantKMin {
				t.Errorf("K_max %d K_min %d, want %d %d", q.KMaxBytes, q.KMinBytes, tt.wantKMax, tt.wantKMin)
			}
			ecn := l.n1Out.Config().ECN[0]
			if !ecn.Enabled || ecn.KMaxBytes != tt.wantKMax || ecn.KMinBytes != tt.wantKMin || ecn.PMax != 0.2 {
				t.Errorf("port ecn %+v", ecn)
			}
		})
	}
}

// TestKMinBelowKMax checks the run-time side of §5.3.2 "K_min MUST be
// configured to a value less than K_max": thresholds keeps K_min below
// K_max whatever it is given (validation refuses such a configuration
// first: TestValidate).
func TestKMinBelowKMax(t *testing.T) {
	for _, tt := range []struct {
		desc               string
		qc                 QueueConfig
		wantKMax, wantKMin int64
	}{
		{"explicit k_min at explicit k_max", QueueConfig{KMaxMode: KMaxExplicit, KMaxBytes: 1000, KMinMode: KMinExplicit, KMinBytes: 1000}, 1000, 999},
		{"explicit k_min above a bdp k_max", QueueConfig{KBaseBytes: 64_000, Alpha: 1, KMinMode: KMinExplicit, KMinBytes: 100_000}, 64_000, 63_999},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			kmax, kmin := thresholds(&tt.qc, 1e6, engine.Millisecond)
			if kmax != tt.wantKMax || kmin != tt.wantKMin {
				t.Errorf("K_max %d K_min %d, want %d %d", kmax, kmin, tt.wantKMax, tt.wantKMin)
			}
		})
	}
}

// TestCheckpointRestore: a configuration that changes RTT_est and a
// smaller CNP burst, then the one before applied again and the node's
// Checkpoint from before restored (a Set that failed after it configured
// the node, set back), leave the count and time of RTT_est updates and
// the CNP tokens as they were; without Restore the two changes count. A
// port whose RTT_est is not back keeps its count.
func TestCheckpointRestore(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Enabled, cfg.FormatRoCEv2 = true, true
	cfg.Interface.RTTEst = 2 * engine.Millisecond
	l := newLine(t, lineOpts{srcRate: 10e9, cfg1: &cfg, noRP: true})
	other := cfg
	other.Interface.RTTEst = 3 * engine.Millisecond
	other.Interface.CNPBurst = 1
	apply := func(c Config) {
		t.Helper()
		if err := l.node1.ApplyConfig(c); err != nil {
			t.Fatal(err)
		}
	}
	port := func() PortState { return l.node1.State(false).Ports[l.n1Out.Index()] }
	l.sim.Run(engine.Millisecond)
	before, tokens := port(), l.node1.ports[l.n1Out.Index()].tokens
	cp := l.node1.Checkpoint()
	apply(other)
	apply(cfg)
	if st := port(); st.RTTUpdates != before.RTTUpdates+2 {
		t.Errorf("without Restore: %d RTT_est updates, want the two changes counted, %d", st.RTTUpdates, before.RTTUpdates+2)
	}
	l.node1.Restore(cp)
	if st := port(); st.RTTUpdates != before.RTTUpdates || st.RTTUpdatedAt != before.RTTUpdatedAt {
		t.Errorf("restored: %d RTT_est updates, the last at %v; want %d at %v as before", st.RTTUpdates, st.RTTUpdatedAt,
			before.RTTUpdates, before.RTTUpdatedAt)
	}
	if got := l.node1.ports[l.n1Out.Index()].tokens; got != tokens {
		t.Errorf("restored: %d nano-tokens, want %d as before", got, tokens)
	}
	cp = l.node1.Checkpoint()
	apply(other)
	l.node1.Restore(cp)
	if st := port(); st.RTTUpdates != before.RTTUpdates+1 || st.RTTEst != 3*engine.Millisecond {
		t.Errorf("RTT_est not back: %d updates, RTT_est %v; want %d, 3ms", st.RTTUpdates, st.RTTEst, before.RTTUpdates+1)
	}
}

// TestKMaxRecompute checks that K_max follows RTT_est (probed from the
// link, reported, or configured) and the port rate (§5.3.2: SHOULD
// recalculate upon RTT_est changes).
func TestKMaxRecompute(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Enabled, cfg.FormatRoCEv2 = true, true
	cfg.Interface.RTTSource = RTTProbed
	l := newLine(t, lineOpts{srcRate: 10e9, midDelay: 500 * engine.Microsecond, cfg1: &cfg, noRP: true})
	kmax := func() int64 { return l.node1.State(false).Ports[l.n1Out.Index()].Queues[0].KMaxBytes }
	// Probed: 2 x 500 µs plus two 64-byte probes at 10 Gb/s (51.2 ns each).
	rtt := engine.Millisecond + 2*engine.TxTime(64, 10e9)
	want := int64(10e9 * rtt.Seconds() / 8)
	if got := kmax(); got != want {
		t.Fatalf("probed K_max %d, want %d", got, want)
	}
	// The link gets longer: the node hears it from netsim at once.
	l.n1Out.Out().SetDelay(5 * engine.Millisecond)
	rtt = 10*engine.Millisecond + 2*engine.TxTime(64, 10e9)
	if got, want := kmax(), int64(10e9*rtt.Seconds()/8); got != want {
		t.Errorf("after delay change K_max %d, want %d", got, want)
	}
	if st := l.node1.State(false).Ports[l.n1Out.Index()]; st.RTTUpdates != 1 || st.RTTEst != rtt {
		t.Errorf("rtt updates %d rtt %v", st.RTTUpdates, st.RTTEst)
	}
	// The port slows down: recomputed at once too (LinkChanged on top
	// changes nothing and counts no second RTT update).
	l.n1Out.Out().SetRateBitsPerSec(1e9)
	rtt = 10*engine.Millisecond + 2*engine.TxTime(64, 1e9)
	if got, want := kmax(), int64(1e9*rtt.Seconds()/8); got != want {
		t.Errorf("after rate change K_max %d, want %d", got, want)
	}
	l.node1.LinkChanged(l.n1Out)
	if got, want := kmax(), int64(1e9*rtt.Seconds()/8); got != want {
		t.Errorf("after rate change K_max %d, want %d", got, want)
	}
	if ecn := l.n1Out.Config().ECN[0]; ecn.KMaxBytes != kmax() || ecn.KMinBytes != kmax()/2 {
		t.Errorf("port ecn not reprogrammed: %+v", ecn)
	}
	// Reported RTT.
	cfg.Interface.RTTSource = RTTReported
	if err := l.node1.ApplyConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if got, want := kmax(), int64(1e9*0.001/8); got != want {
		t.Errorf("reported source before a report: K_max %d, want %d (configured 1 ms)", got, want)
	}
	if err := l.node1.ReportRTT(l.n1Out, 20*engine.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got, want := kmax(), int64(1e9*0.020/8); got != want {
		t.Errorf("after report K_max %d, want %d", got, want)
	}

	// Per egress port (§5.3.1): a configured RTT_est for n1's port
	// towards n2 alone; the port back to the source keeps the node's.
	lp := newLine(t, lineOpts{srcRate: 10e9, noRP: true})
	pc := DefaultConfig()
	pc.Enabled, pc.FormatRoCEv2 = true, true
	pc.Interface.RTTEst = 10 * engine.Millisecond
	ic := pc.Interface
	ic.RTTEst = 2 * engine.Millisecond
	pc.Interfaces = map[string]InterfaceConfig{lp.n1Out.Name(): ic}
	node, err := Attach(lp.net, lp.n1, pc)
	if err != nil {
		t.Fatal(err)
	}
	st := node.State(false)
	for _, pt := range lp.n1.Ports() {
		rtt := 10 * engine.Millisecond
		if pt == lp.n1Out {
			rtt = 2 * engine.Millisecond
		}
		ps := st.Ports[pt.Index()]
		if want := int64(10e9 * rtt.Seconds() / 8); ps.RTTEst != rtt || ps.Queues[0].KMaxBytes != want {
			t.Errorf("port %s: RTT_est %v K_max %d, want %v and %d", pt.Name(), ps.RTTEst, ps.Queues[0].KMaxBytes, rtt, want)
		}
	}

	// A configured R_port (the port-rate leaf) is the BDP's rate, not the
	// link's 10 Gb/s (§5.3.2: R_port is the port's rate as the node takes
	// it), and the state says it is the one in use.
	ic.PortRateBitsPerSec = 4e9
	pc.Interfaces = map[string]InterfaceConfig{lp.n1Out.Name(): ic}
	if err := node.ApplyConfig(pc); err != nil {
		t.Fatal(err)
	}
	ps := node.State(false).Ports[lp.n1Out.Index()]
	if want := int64(4e9 * 0.002 / 8); ps.PortRateBitsPerSec != 4e9 || ps.Queues[0].KMaxBytes != want {
		t.Errorf("configured port rate: R_port %d, K_max %d; want 4e9 and %d", ps.PortRateBitsPerSec, ps.Queues[0].KMaxBytes, want)
	}
}

// TestSeverityMapping checks the documented severity → level and action
// mapping on the numbers of §7 steps 4 and 8.
func TestSeverityMapping(t *testing.T) {
	const kmax, kmin = 125_000_000, 62_500_000
	for _, tt := range []struct {
		qd   int64
		want uint8
	}{
		{0, 0}, {30_000_000, 20}, {kmin, 43}, {kmax, 170}, {130_000_000, 180}, {kmax + kmax/3, 255}, {10 * kmax, 255},
	} {
		if got := levelQD(tt.qd, kmin, kmax); got != tt.want {
			t.Errorf("levelQD(%d) = %d, want %d", tt.qd, got, tt.want)
		}
	}
	a := DefaultQueueConfig().Action
	if act, p := policy(&a, 180); act != wire.ActionRateReduce || p != 30 {
		t.Errorf("level 180: %v %d, want rate-reduce 30 (§7 step 4)", act, p)
	}
	if act, p := policy(&a, 224); act != wire.ActionPause || p != 1000 {
		t.Errorf("level 224: %v %d, want pause 1000 µs", act, p)
	}
	if _, v := metric(&portState{}, &queueState{qd: 130_000_000}, wire.MetricQueueDepth, 0); v != 130000 {
		t.Errorf("metric value %d, want 130000 KB (§7 step 4)", v)
	}
	if _, v := metric(&portState{}, &queueState{qd: 30_000_000}, wire.MetricQueueDepth, 0); v != 30000 {
		t.Errorf("metric value %d, want 30000 KB (§7 step 8)", v)
	}
	if _, v := metric(&portState{}, &queueState{qgr: 625_000_000, cfg: QueueConfig{MeasurementInterval: 100 * engine.Microsecond}}, wire.MetricQueueGrowth, 0); v != 625 {
		t.Errorf("qgr metric %d, want 625 KB/ms", v)
	}
}

// TestTriggers runs each second-level condition of §5.4 alone and checks
// the reported metric and the trigger counters; and checks that between
// K_min and K_max only ECN marking happens (first level).
func TestTriggers(t *testing.T) {
	for _, tt := range []struct {
		desc     string
		edit     func(q *QueueConfig)
		want     Trigger
		wantType wire.MetricType
		count    func(c QueueCounters) int64
		minLevel uint8
	}{
		{desc: "qd above k_max", want: TriggerQD, wantType: wire.MetricQueueDepth,
			count: func(c QueueCounters) int64 { return c.QDTriggers }},
		{desc: "emr above v_ecn", edit: func(q *QueueConfig) {
			q.KMaxBytes, q.KMinMode, q.KMinBytes, q.PMax, q.VECNPercent = 400_000, KMinExplicit, 20_000, 1, 10
		}, want: TriggerEMR, wantType: wire.MetricECNMarkingRate,
			count: func(c QueueCounters) int64 { return c.EMRTriggers }},
		{desc: "qgr above v_growth", edit: func(q *QueueConfig) {
			q.KMaxBytes, q.VGrowthBytesPerSec = 400_000, 100_000_000
		}, want: TriggerQGR, wantType: wire.MetricQueueGrowth,
			count: func(c QueueCounters) int64 { return c.QGRTriggers }, minLevel: 224},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := testConfig(200_000, 400*engine.Microsecond)
			if tt.edit != nil {
				tt.edit(&cfg.Interface.Queue)
			}
			l := newLine(t, lineOpts{srcRate: 10e9, midRate: 5e9, cfg1: &cfg})
			// When QD first passes K_max, sampled every microsecond: the
			// node reads QD at every enqueue (§5.3.1 continuously), so
			// the QD trigger fires on the packet that crosses.
			kmax := l.node1.State(false).Ports[l.n1Out.Index()].Queues[0].KMaxBytes
			var crossed engine.Time = -1
			l.sim.Every(0, engine.Microsecond, func(now engine.Time) {
				if crossed < 0 && l.n1Out.QueueBytes(0) > kmax {
					crossed = now
				}
			})
			l.sim.Run(2 * engine.Millisecond)
			sent := eventsOf(l.events1, EventCNPSent)
			if len(sent) == 0 {
				t.Fatal("nothing sent")
			}
			if tt.want == TriggerQD && (sent[0].Time < crossed-engine.Microsecond || sent[0].Time > crossed+engine.Microsecond) {
				t.Errorf("first notification at %v, QD passed K_max at %v: want it on the packet that crossed", sent[0].Time, crossed)
			}
			if sent[0].Trigger != tt.want || sent[0].MetricType != tt.wantType {
				t.Errorf("first notification: trigger %v metric %v, want %v %v", sent[0].Trigger, sent[0].MetricType, tt.want, tt.wantType)
			}
			// §5.5.1: Pause only for severe congestion. The first action
			// is the default one under every trigger kind, even when an
			// EMR or QGR level is far above PauseLevel (224).
			if sent[0].Action != wire.ActionRateReduce || sent[0].Parameter != 30 {
				t.Errorf("first notification %v %d at level %d, want rate-reduce 30", sent[0].Action, sent[0].Parameter, sent[0].CongLevel)
			}
			if tt.minLevel > 0 && sent[0].CongLevel < tt.minLevel {
				t.Errorf("first notification at level %d, want >= %d (the metric is far past its threshold)", sent[0].CongLevel, tt.minLevel)
			}
			c := l.node1.State(false).Ports[l.n1Out.Index()].Queues[0].Counters
			if tt.count(c) == 0 {
				t.Errorf("trigger not counted: %+v", c)
			}
		})
	}
	t.Run("first level only", func(t *testing.T) {
		// K_min 20 KB, K_max 4 MB: the queue marks but never triggers.
		cfg := testConfig(4_000_000, 400*engine.Microsecond)
		cfg.Interface.Queue.KMinMode, cfg.Interface.Queue.KMinBytes = KMinExplicit, 20_000
		cfg.Interface.Queue.PMax = 1
		l := newLine(t, lineOpts{srcRate: 10e9, midRate: 5e9, cfg1: &cfg})
		l.sim.Run(2 * engine.Millisecond)
		c := l.node1.State(false).Ports[l.n1Out.Index()].Queues[0].Counters
		if c.ECNMarked == 0 || len(eventsOf(l.events1, EventCNPSent)) != 0 {
			t.Errorf("marked %d, sent %d: want marks and no notification", c.ECNMarked, len(eventsOf(l.events1, EventCNPSent)))
		}
	})
}

// TestRateLimits checks the per-flow minimum interval (§5.5, §9: RTT_est
// by default) and the per-port token bucket (§9).
func TestRateLimits(t *testing.T) {
	t.Run("per flow", func(t *testing.T) {
		l, sent := overloaded(t, 100_000, 300*engine.Microsecond, 2e9, 5*engine.Millisecond)
		for i := 1; i < len(sent); i++ {
			if d := sent[i].Time - sent[i-1].Time; d < 300*engine.Microsecond {
				t.Errorf("notifications %d and %d %v apart, below RTT_est 300µs", i-1, i, d)
			}
		}
		if c := l.node1.State(false).Ports[l.n1Out.Index()].Queues[0].Counters; c.SuppressedFlowInterval == 0 {
			t.Errorf("no suppression counted: %+v", c)
		}
	})
	// A configured MinCNPInterval (cnp_interval, a deviation from one
	// RTT_est) is the flow's minimum gap: 1 ms, where the same queue at
	// RTT_est's 300 µs notifies the flow less than 1 ms apart.
	t.Run("per flow, configured interval", func(t *testing.T) {
		gaps := func(interval engine.Time) (shortest engine.Time, n int) {
			cfg := testConfig(100_000, 300*engine.Microsecond)
			cfg.Interface.Queue.Action.ResumeEnabled = false
			cfg.Interface.Queue.MinCNPInterval = interval
			l := newLine(t, lineOpts{srcRate: 10e9, midRate: 2e9, cfg1: &cfg})
			l.sim.Run(5 * engine.Millisecond)
			sent := eventsOf(l.events1, EventCNPSent)
			shortest = engine.Never
			for i := 1; i < len(sent); i++ {
				shortest = min(shortest, sent[i].Time-sent[i-1].Time)
			}
			return shortest, len(sent)
		}
		if d, n := gaps(0); n < 2 || d >= engine.Millisecond {
			t.Fatalf("at RTT_est: %d notifications, shortest gap %v; want several, less than 1 ms apart", n, d)
		}
		if d, n := gaps(engine.Millisecond); n < 2 || d < engine.Millisecond {
			t.Errorf("at a configured 1 ms: %d notifications, shortest gap %v; want several, at least 1 ms apart", n, d)
		}
	})
	t.Run("per port", func(t *testing.T) {
		cfg := testConfig(100_000, 300*engine.Microsecond)
		cfg.Interface.Queue.MinCNPInterval = engine.Microsecond
		cfg.Interface.Queue.Action.ResumeEnabled = false
		// 1 % cuts and no Pause: the queue stays above K_max and the
		// flow asks for a notification every measurement interval, far
		// more than the bucket gives.
		cfg.Interface.Queue.Action.RateReducePercent = 1
		cfg.Interface.Queue.Action.PauseLevel = PauseLevelNever
		cfg.Interface.CNPRatePerSec, cfg.Interface.CNPBurst = 1000, 2
		l := newLine(t, lineOpts{srcRate: 10e9, midRate: 2e9, cfg1: &cfg})
		l.sim.Run(5 * engine.Millisecond)
		sent := eventsOf(l.events1, EventCNPSent)
		if len(sent) == 0 {
			t.Fatal("nothing sent")
		}
		// Burst 2 at the first trigger, then 1000/s for the rest of the
		// 5 ms: one token a millisecond.
		want := 2 + int((5*engine.Millisecond-sent[0].Time)/engine.Millisecond)
		if len(sent) < want-1 || len(sent) > want {
			t.Errorf("%d notifications in 5 ms from %v, want the burst of 2 and one a millisecond: %d", len(sent), sent[0].Time, want)
		}
		st := l.node1.State(false).Ports[l.n1Out.Index()]
		if st.Counters.SuppressedPortLimit == 0 || st.Queues[0].Counters.SuppressedPortLimit == 0 {
			t.Errorf("no port-limit suppression counted: %+v", st.Counters)
		}
	})
}

// TestResumeAfterKMinHold checks that Resume goes only to flows the node
// slowed, after QD stayed below K_min for the hold time (RTT_est), with
// the configured percentage and a level from QD (§5.5.1).
func TestResumeAfterKMinHold(t *testing.T) {
	const rtt = 500 * engine.Microsecond
	cfg := testConfig(200_000, rtt)
	l := newLine(t, lineOpts{srcRate: 10e9, midRate: 5e9, cfg1: &cfg})
	type sample struct {
		t  engine.Time
		qd int64
	}
	var samples []sample
	l.sim.Every(0, engine.Microsecond, func(now engine.Time) {
		samples = append(samples, sample{now, l.n1Out.QueueBytes(0)})
	})
	l.sim.Run(6 * engine.Millisecond)
	var resumes int
	for _, e := range eventsOf(l.events1, EventCNPSent) {
		if e.Action != wire.ActionResume {
			continue
		}
		resumes++
		if e.Parameter != 50 || e.MetricType != wire.MetricQueueDepth || e.CongLevel > 43 {
			t.Errorf("resume %+v: want parameter 50, queue-depth metric, level below K_min's 43", e)
		}
		for _, s := range samples {
			if s.t > e.Time-rtt && s.t < e.Time && s.qd >= 100_000 {
				t.Fatalf("resume at %v but QD %d >= K_min at %v, within the hold", e.Time, s.qd, s.t)
			}
		}
	}
	if resumes == 0 {
		t.Fatal("no resume sent")
	}
	if c := l.rp.Counters(); c.AcceptedResume == 0 {
		t.Errorf("source accepted no resume: %+v", c)
	}
}

// TestResumeDisabled: with ResumeEnabled false (resume-enabled, a
// deviation from §5.5.1's Resume once the queue stayed below K_min) the
// node sends no Resume where the default sends one. TestResumeAfterKMinHold's
// line: a Rate Reduce and a Pause drain the queue below K_min for more
// than RTT_est; the default resumes the flow then, and the run without
// Resume is the same notification for notification up to that moment and
// sends none after it (the source's own recovery timer brings it back).
func TestResumeDisabled(t *testing.T) {
	run := func(resume bool) (*line, []Event) {
		cfg := testConfig(200_000, 500*engine.Microsecond)
		cfg.Interface.Queue.Action.ResumeEnabled = resume
		l := newLine(t, lineOpts{srcRate: 10e9, midRate: 5e9, cfg1: &cfg})
		l.sim.Run(6 * engine.Millisecond)
		return l, eventsOf(l.events1, EventCNPSent)
	}
	_, on := run(true)
	first := slices.IndexFunc(on, func(e Event) bool { return e.Action == wire.ActionResume })
	if first < 1 {
		t.Fatalf("by default: first Resume at %d of %d notifications, want one after a cut", first, len(on))
	}
	l, off := run(false)
	if len(off) <= first {
		t.Fatalf("without Resume: %d notifications, want the %d cuts before the default's first Resume and more", len(off), first)
	}
	if diff := cmp.Diff(on[:first], off[:first], addrCmp); diff != "" {
		t.Errorf("before the default's first Resume the runs differ (-default, +without Resume):\n%s", diff)
	}
	for _, e := range off {
		if e.Action == wire.ActionResume {
			t.Errorf("without Resume: Resume sent at %v (the default's first at %v)", e.Time, on[first].Time)
		}
	}
	if c := l.rp.Counters(); c.AcceptedResume != 0 || c.Recoveries == 0 {
		t.Errorf("without Resume: source counters %+v, want no Resume and its own recovery", c)
	}
}

// TestMetricDisclosure checks §9 Information Disclosure: with disclosure
// off, Metric Type and Congestion Metric Value are zero and the action
// still goes out. NoMetric (the YANG model's UNSPECIFIED) sends Metric
// Type 0 and value 0 too, with disclosure on, where MetricType's zero
// value sends the trigger's metric (queue depth here); the node had no way
// to send Metric Type 0 with disclosure on before NoMetric.
func TestMetricDisclosure(t *testing.T) {
	for _, tt := range []struct {
		desc string
		edit func(c *Config)
		want wire.MetricType
	}{
		{desc: "disclosure off", edit: func(c *Config) { c.MetricDisclosure = false }, want: wire.MetricUnspecified},
		{desc: "no metric", edit: func(c *Config) { c.NoMetric = true }, want: wire.MetricUnspecified},
		{desc: "trigger's metric", edit: func(*Config) {}, want: wire.MetricQueueDepth},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := testConfig(200_000, 400*engine.Microsecond)
			tt.edit(&cfg)
			l := newLine(t, lineOpts{srcRate: 10e9, midRate: 5e9, cfg1: &cfg})
			l.sim.Run(time2ms)
			sent := eventsOf(l.events1, EventCNPSent)
			if len(sent) == 0 {
				t.Fatal("nothing sent")
			}
			for _, e := range sent {
				if e.MetricType != tt.want || (tt.want == wire.MetricUnspecified && e.MetricValue != 0) {
					t.Errorf("metric %v %d, want %v (value 0 for type 0)", e.MetricType, e.MetricValue, tt.want)
				}
			}
			if l.rp.Counters().AcceptedRateReduce == 0 {
				t.Error("the action was not applied")
			}
		})
	}
	cfg := DefaultConfig()
	cfg.NoMetric, cfg.MetricType = true, wire.MetricRTT
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "no-metric") {
		t.Errorf("NoMetric with metric type RTT: %v, want an error naming no-metric", err)
	}
}

const time2ms = 2 * engine.Millisecond

// TestFormatChoice checks §4 (IPv4 sources get the RoCEv2 format only),
// §10.5 (RoCEv2 only to configured receivers) and the device identifier
// object that fits in the ICMPv6 format.
func TestFormatChoice(t *testing.T) {
	for _, tt := range []struct {
		desc     string
		v6       bool
		edit     func(c *Config)
		want     Format
		noFormat bool
		objects  int // extension objects the source decodes
	}{
		{desc: "ipv4 source, icmpv6 only", edit: func(c *Config) { c.FormatRoCEv2 = false }, noFormat: true},
		{desc: "ipv4 source outside rocev2 receivers", edit: func(c *Config) {
			c.RoCEv2Receivers = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
		}, noFormat: true},
		{desc: "ipv6 source outside rocev2 receivers falls back to icmpv6", v6: true, edit: func(c *Config) {
			c.RoCEv2Receivers = nil
		}, want: FormatICMPv6},
		{desc: "icmpv6 with device id", v6: true, edit: func(c *Config) {
			c.FormatRoCEv2, c.DeviceID = false, "n1"
		}, want: FormatICMPv6, objects: 1},
		// Objects that did not fit in netsim's 40-byte header before the
		// packets carried whole frames.
		{desc: "rocev2 with device id and timestamp", edit: func(c *Config) {
			c.DeviceID, c.TimestampObject = "n1.dc-a.example.net", true
		}, want: FormatRoCEv2, objects: 2},
		{desc: "icmpv6 with a long device id and timestamp", v6: true, edit: func(c *Config) {
			c.FormatRoCEv2, c.DeviceID, c.TimestampObject = false, "n1.dc-a.example.net/line-card-3", true
		}, want: FormatICMPv6, objects: 2},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := testConfig(200_000, 400*engine.Microsecond)
			tt.edit(&cfg)
			l := newLine(t, lineOpts{v6: tt.v6, srcRate: 10e9, midRate: 5e9, cfg1: &cfg})
			l.sim.Run(time2ms)
			sent := eventsOf(l.events1, EventCNPSent)
			st := l.node1.State(false)
			if tt.noFormat {
				if len(sent) != 0 || st.Counters.NoFormat == 0 {
					t.Errorf("sent %d, no-format %d: want none sent", len(sent), st.Counters.NoFormat)
				}
				return
			}
			if len(sent) == 0 || sent[0].Format != tt.want {
				t.Fatalf("sent %+v, want format %v", sent, tt.want)
			}
			if st.Counters.ObjectsOmitted != 0 || l.rp.Counters().Malformed != 0 {
				t.Errorf("objects omitted %d, malformed %d", st.Counters.ObjectsOmitted, l.rp.Counters().Malformed)
			}
			// The last frame the source decoded carried them all.
			if got := len(l.rp.frame.LongHaul.Objects); got != tt.objects || l.rp.Counters().AcceptedRateReduce == 0 {
				t.Errorf("source decoded %d objects (want %d), counters %+v", got, tt.objects, l.rp.Counters())
			}
		})
	}
}

// TestResumeHoldCountsFromTheAction checks that a Rate Reduce sent while
// QD is below K_min (here by the QGR trigger) is not followed by a Resume
// until the queue stayed below K_min, with no second-level condition, for
// the whole hold after it: the hold counts from when congestion subsided,
// not from when QD last crossed K_min (§5.5.1).
func TestResumeHoldCountsFromTheAction(t *testing.T) {
	const hold = 2 * engine.Millisecond
	cfg := testConfig(50_000_000, 500*engine.Microsecond) // K_min 25 MB: never reached
	q := &cfg.Interface.Queue
	q.VGrowthBytesPerSec = 125_000_000 // 1 Gb/s of growth
	q.MinCNPInterval = 200 * engine.Microsecond
	q.Action.ResumeHold = hold
	q.Action.PauseLevel = 256
	l := newLine(t, lineOpts{srcRate: 10e9, midRate: 5e9, cfg1: &cfg})
	// The last microsecond at which a second-level condition held, as
	// the node last evaluated it, before each moment: a notification
	// the per-flow interval held back still means congestion has not
	// subsided. The flags change at enqueues only, so a sample can be
	// up to a packet's gap (about 7 µs here) after the last evaluation
	// that held: slack 10 µs.
	qs := &l.node1.portOf(l.n1Out).queues[0]
	var held []engine.Time
	l.sim.Every(0, engine.Microsecond, func(now engine.Time) {
		if qs.qdAbove || qs.emrAbove || qs.qgrAbove {
			held = append(held, now)
		}
	})
	l.sim.Run(8 * engine.Millisecond)
	lastHeld := func(before engine.Time) engine.Time {
		i, _ := slices.BinarySearch(held, before)
		if i == 0 {
			return -1
		}
		return held[i-1]
	}
	var lastCut engine.Time = -1
	var cuts, resumes int
	for _, e := range eventsOf(l.events1, EventCNPSent) {
		if h := lastHeld(e.Time); e.Action == wire.ActionResume && h >= 0 && e.Time-h < hold-10*engine.Microsecond {
			t.Errorf("resume at %v, %v after a condition last held at %v: want at least the hold, %v", e.Time, e.Time-h, h, hold)
		}
		if e.Action != wire.ActionResume {
			if e.Trigger != TriggerQGR {
				t.Fatalf("notification %+v: want the QGR trigger", e)
			}
			lastCut = e.Time
			cuts++
			continue
		}
		resumes++
		if lastCut < 0 || e.Time-lastCut < hold {
			t.Errorf("resume at %v, %v after the last rate reduce at %v: want at least the hold, %v",
				e.Time, e.Time-lastCut, lastCut, hold)
		}
	}
	if cuts == 0 || resumes == 0 {
		t.Fatalf("%d rate reduces, %d resumes: want both", cuts, resumes)
	}
}

// TestTriggerPersistence checks QueueConfig.TriggerPersistence: the node
// generates only once a second-level condition has held that long, so the
// notification reports the queue it then sees; with 0 it fires on the
// packet that takes QD past K_max.
func TestTriggerPersistence(t *testing.T) {
	const kmax = 200_000
	for _, tt := range []struct {
		desc    string
		persist engine.Time
	}{
		{"at once", 0},
		{"one measurement interval", 100 * engine.Microsecond},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := testConfig(kmax, 500*engine.Microsecond)
			cfg.Interface.Queue.TriggerPersistence = tt.persist
			cfg.Interface.Queue.Action.PauseLevel = 256
			l := newLine(t, lineOpts{srcRate: 10e9, midRate: 5e9, cfg1: &cfg})
			var crossed engine.Time = -1
			l.sim.Every(0, engine.Microsecond, func(now engine.Time) {
				if crossed < 0 && l.n1Out.QueueBytes(0) > kmax {
					crossed = now
				}
			})
			l.sim.Run(3 * engine.Millisecond)
			sent := eventsOf(l.events1, EventCNPSent)
			if len(sent) == 0 || crossed < 0 {
				t.Fatalf("sent %d, QD crossed K_max at %v", len(sent), crossed)
			}
			e := sent[0]
			// 10 Gb/s into 5 Gb/s: QD grows by 625 bytes per µs.
			wantKB := uint32((kmax + 625*int64(tt.persist/engine.Microsecond)) / 1000)
			if d := e.Time - crossed; d < tt.persist-engine.Microsecond || d > tt.persist+5*engine.Microsecond {
				t.Errorf("first notification %v after QD passed K_max, want %v", d, tt.persist)
			}
			if e.MetricValue+5 < wantKB || e.MetricValue > wantKB+5 {
				t.Errorf("metric %d KB, want about %d", e.MetricValue, wantKB)
			}
		})
	}
}

// TestArrivalRateCountsDrops: a 10 Gb/s flow into a 5 Gb/s port whose
// 100 KB buffer is full arrives at 10 Gb/s, though the port accepts 5: the
// flow's arrival rate (§5.3.1) counts the packets dropped too.
func TestArrivalRateCountsDrops(t *testing.T) {
	cfg := testConfig(1<<30, engine.Millisecond) // no trigger
	l := newLine(t, lineOpts{srcRate: 10e9, midRate: 5e9, cfg1: &cfg, noRP: true})
	pc := l.n1Out.Config()
	pc.BufferBytes = 100_000
	if err := l.n1Out.SetConfig(pc); err != nil {
		t.Fatal(err)
	}
	l.sim.Run(5 * engine.Millisecond)
	if l.n1Out.Stats().DropPackets == 0 {
		t.Fatal("no drop")
	}
	f, ok := l.node1.Flow(key(addrSrc4, addrDst4, 100, 200))
	if !ok {
		t.Fatal("no entry")
	}
	if r := f.ArrivalRateBitsPerSec; r < 9.5e9 || r > 10.5e9 {
		t.Errorf("arrival rate %d b/s, want about 10 Gb/s", r)
	}
}

// TestCheckpointDefersTable: a configuration with a smaller flow table
// and another idle timeout, then the one before applied again and the
// Checkpoint from before restored (a Set refused after it configured the
// node, set back), leaves every entry and the aging sweep's timer as they
// were: no entry evicted, no sweep re-armed (a stale one would stay
// pending). Committed instead, the change takes effect once: the table
// shrunk, the sweep re-armed one time. ApplyConfig used to do both at
// once, which Restore could not undo (this test failed then).
func TestCheckpointDefersTable(t *testing.T) {
	cfg := testConfig(1<<30, engine.Millisecond)
	l := newLine(t, lineOpts{cfg1: &cfg, noRP: true, noCM: true})
	if _, err := l.net.AddFlow(netsim.FlowConfig{Src: l.src, Dst: l.dst, SrcQPN: 101, DstQPN: 201, Bytes: 40_000, NoCM: true}); err != nil {
		t.Fatal(err)
	}
	l.sim.Run(100 * engine.Microsecond)
	small := cfg
	small.FlowTable.MaxEntries, small.FlowTable.IdleTimeout = 1, cfg.FlowTable.IdleTimeout+engine.Second
	apply := func(c Config) {
		t.Helper()
		if err := l.node1.ApplyConfig(c); err != nil {
			t.Fatal(err)
		}
	}
	type seen struct {
		Entries int
		Pending int
		Table   FlowTableCounters
	}
	look := func() seen {
		s := l.node1.State(true)
		return seen{Entries: s.FlowTable.Entries, Pending: l.sim.Pending(), Table: s.FlowTable.Counters}
	}
	before := look()
	if before.Entries != 2 {
		t.Fatalf("%d entries, want the two flows'", before.Entries)
	}
	cp := l.node1.Checkpoint()
	apply(small)
	apply(cfg)
	l.node1.Restore(cp)
	if diff := cmp.Diff(before, look()); diff != "" {
		t.Errorf("set back and restored (-before +after):\n%s", diff)
	}
	cp = l.node1.Checkpoint()
	apply(small)
	l.node1.Commit(cp)
	want := before
	want.Entries, want.Pending = 1, before.Pending+1
	if diff := cmp.Diff(want, look()); diff != "" {
		t.Errorf("committed (-want +got):\n%s", diff)
	}
}
