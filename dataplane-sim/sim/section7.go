package sim

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/lhcnp/lhcnp/dataplane-sim/build"
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// The §7 example of draft-tian-ccwg-long-haul-cnp-00, as scenarios/section7.yaml
// stages it: the flow, its nodes and the WAN link.
const (
	s7Source, s7Dest = "source", "dest"
	s7N1, s7N2       = "n1", "n2"
	s7SrcQP, s7DstQP = 100, 200
)

// Section7Result is what a run of the §7 scenario showed, step by step.
// Times are simulated; -1 (or zero values) when the step did not happen.
type Section7Result struct {
	Flow lhcnp.FlowKey
	// The connection: the source's QP connects when the CM REP arrives,
	// one path round trip (PathRTT, from the links' delays) after the
	// flow's start; data flows from then.
	FlowStart, SourceConnectedAt, PathRTT engine.Time
	// Step 1: N1 learned the flow (LearnedFrom: CM or data).
	LearnedAt   engine.Time
	LearnedFrom lhcnp.LearnSource
	// Step 2: N1's WAN port thresholds.
	KMaxBytes, KMinBytes int64
	// Step 3: N1's WAN queue when its first ECN mark was seen (polled every
	// PollInterval) and at the poll before; KMinCrossedAt is the first poll
	// with QD above K_min.
	FirstMarkAt                 engine.Time
	QDAtFirstMark, QDBeforeMark int64
	MarksBeforeKMin             int64
	KMinCrossedAt               engine.Time
	PeakQDBytes                 int64
	// Step 4: N1's first notification to the flow.
	CNP            lhcnp.Event
	CNPValid       bool
	SourceAccepted lhcnp.ReactionCounters
	// Step 5: when the source reduced because of it, and the rates.
	ReactedAt                                 engine.Time
	RateBeforeBitsPerSec, RateAfterBitsPerSec int64
	N1ToSourceDelay                           engine.Time
	// Step 6: N2's deferral for the flow; the flow's arrival rate at N2
	// (polled) at the deferral and its peak over the observation window
	// before it.
	Deferral                       lhcnp.Event
	DeferralValid                  bool
	N2NotifiedFlow                 int64 // notifications N2 sent to the flow
	N2RateAtDeferralBitsPerSec     int64
	N2PeakBeforeDeferralBitsPerSec int64
	N2ObservationWindow            engine.Time
	N2ArrivalRateDropThreshold     int // percent
	// Step 7: the source's additive recovery.
	RecoveryAt                  engine.Time
	RateAtRecoveryBitsPerSec    int64
	RateRecoveryLaterBitsPerSec int64 // one recovery step interval and a poll later
	NotificationsBeforeRecovery int64 // to the flow, after step 4's and before RecoveryAt
	// Step 8: N1's Resume, how long QD had been below K_min, and the
	// source's rate just before and just after the Resume arrived.
	Resume                     lhcnp.Event
	ResumeValid                bool
	BelowKMinFor               engine.Time
	ResumeArrivedAt            engine.Time
	RateBeforeResumeBitsPerSec int64
	RateAfterResumeBitsPerSec  int64
	LastReductionBitsPerSec    int64
	// RecoveryStepBitsPerSec is one additive recovery step of the source.
	RecoveryStepBitsPerSec int64
	// PollInterval is how often queue, marks and rates were polled.
	PollInterval engine.Time
	// Events is every event the nodes reported, in time order.
	Events []lhcnp.Event
}

// Section7Step is one step of §7: what the draft says, what the run
// showed and whether it matches within the stated tolerance.
type Section7Step struct {
	N        int
	Draft    string
	Measured string
	OK       bool
}

// CheckSection7 refuses a scenario RunSection7 refuses before its run:
// one without the §7 example's hosts or without a long-haul-cnp block. A
// command that runs it after other runs checks it before the first.
func CheckSection7(sc *scenario.Scenario) error {
	_, ok1 := hostIP(sc, s7Source)
	_, ok2 := hostIP(sc, s7Dest)
	if !ok1 || !ok2 {
		return fmt.Errorf("sim: scenario %s is not the §7 example (no hosts %s and %s)", sc.Name, s7Source, s7Dest)
	}
	return CheckLongHaulReport(sc)
}

// RunSection7 runs the §7 scenario (scenarios/section7.yaml) and observes
// the eight steps. opts are passed to Run (WithoutPlots, WithDuration...).
func RunSection7(ctx context.Context, sc *scenario.Scenario, outDir string, opts ...Option) (*Section7Result, error) {
	if err := CheckSection7(sc); err != nil {
		return nil, err
	}
	src, _ := hostIP(sc, s7Source)
	dst, _ := hostIP(sc, s7Dest)
	res := &Section7Result{Flow: lhcnp.FlowKey{Src: src, Dst: dst, SrcQP: s7SrcQP, DstQP: s7DstQP},
		LearnedAt: -1, FirstMarkAt: -1, KMinCrossedAt: -1, ReactedAt: -1, RecoveryAt: -1, ResumeArrivedAt: -1,
		SourceConnectedAt: -1, PollInterval: 10 * engine.Microsecond}
	if f, ok := sc.Flow(flowName(sc, s7Source, s7SrcQP)); ok {
		res.FlowStart = engine.FromDuration(f.Start)
	}
	var mech *LongHaulCNP
	type poll struct {
		t          engine.Time
		qd, marks  int64
		rate       int64
		recovering bool
		lastCut    int64
		n2Rate     int64 // the flow's arrival rate at N2
	}
	var polls []poll
	var setupErr error
	observe := func(m *LongHaulCNP, env *Env) {
		mech = m
		n1 := m.Node(s7N1)
		srcHost, _ := env.Net.NodeByName(s7Source).(*netsim.Host)
		n2, _ := env.Net.NodeByName(s7N2).(*netsim.Switch)
		if n1 == nil || srcHost == nil || n2 == nil || srcHost.QP(s7SrcQP) == nil {
			setupErr = fmt.Errorf("sim: scenario %s is not the §7 example (need nodes %s, %s and QP %d on %s)", sc.Name, s7N1, s7N2, s7SrcQP, s7Source)
			return
		}
		q := srcHost.QP(s7SrcQP)
		rp := m.ReactionPoints[s7Source]
		n2Node := m.Node(s7N2)
		res.PathRTT = pathRTT(env.Net, srcHost, env.Net.NodeByName(s7Dest))
		if nc := n2Node.Config(); nc.Collaborative.ObservationWindow > 0 {
			res.N2ObservationWindow = nc.Collaborative.ObservationWindow
			res.N2ArrivalRateDropThreshold = nc.Collaborative.ArrivalRateDropPercent
		}
		var wan *netsim.Port
		for _, pt := range n1.Switch().Ports() {
			if pt.Peer().Node() == netsim.Node(n2) {
				wan = pt
			}
		}
		wanIdx := wan.Index()
		st := n1.State(false)
		res.KMaxBytes, res.KMinBytes = st.Ports[wanIdx].Queues[0].KMaxBytes, st.Ports[wanIdx].Queues[0].KMinBytes
		res.N1ToSourceDelay = build.PortTowards(n1.Switch(), s7Source).Out().Delay()
		env.Group.EveryGlobal(0, res.PollInterval, func(now engine.Time) {
			qs := n1.State(false).Ports[wanIdx].Queues[0]
			r, _ := rp.QP(q)
			rate := q.RateBitsPerSec()
			if q.PausedUntil() > now {
				rate = 0
			}
			var n2Rate int64
			if fs, ok := n2Node.Flow(res.Flow); ok {
				n2Rate = fs.ArrivalRateBitsPerSec
			}
			polls = append(polls, poll{t: now, qd: wan.QueueBytes(0), marks: qs.Counters.ECNMarked, rate: rate,
				recovering: r.Recovering, lastCut: r.LastReductionBitsPerSec, n2Rate: n2Rate})
			if res.SourceConnectedAt < 0 && q.Active() {
				res.SourceConnectedAt = q.ConnectedAt()
			}
		})
	}
	opts = append(opts, WithLongHaulCNP(observe))
	sum, err := Run(ctx, sc, outDir, opts...)
	if err != nil {
		return nil, err
	}
	if setupErr != nil {
		return nil, setupErr
	}
	res.SourceAccepted = mech.ReactionPoints[s7Source].Counters()
	rpc := mech.ReactionPoints[s7Source].Config()
	res.Events = mech.Events

	// Events.
	var resumeRx engine.Time = -1
	for _, e := range mech.Events {
		if e.Flow != res.Flow {
			continue
		}
		switch {
		case e.Kind == lhcnp.EventFlowLearned && e.Node == s7N1 && res.LearnedAt < 0:
			res.LearnedAt, res.LearnedFrom = e.Time, e.Learned
		case e.Kind == lhcnp.EventCNPSent && e.Node == s7N1 && e.Action != wire.ActionResume && !res.CNPValid:
			res.CNP, res.CNPValid = e, true
		case e.Kind == lhcnp.EventCNPSent && e.Node == s7N1 && e.Action == wire.ActionResume && !res.ResumeValid:
			res.Resume, res.ResumeValid = e, true
			resumeRx = e.Time + res.N1ToSourceDelay
		case e.Kind == lhcnp.EventDeferral && e.Node == s7N2 && !res.DeferralValid:
			res.Deferral, res.DeferralValid = e, true
		case e.Kind == lhcnp.EventCNPSent && e.Node == s7N2:
			res.N2NotifiedFlow++
		}
	}
	if sum.Feedback != nil {
		for _, f := range sum.Feedback.Flows {
			if f.Flow == flowName(sc, s7Source, s7SrcQP) && f.ReactionNs != nil {
				res.ReactedAt = engine.Time(*f.ReactionNs)
			}
		}
	}

	// Polls.
	rateAt := func(t engine.Time) (before, after int64) {
		before, after = -1, -1
		for _, p := range polls {
			if p.t <= t {
				before = p.rate
			} else if after < 0 {
				after = p.rate
			}
		}
		return before, after
	}
	for i, p := range polls {
		res.PeakQDBytes = max(res.PeakQDBytes, p.qd)
		if res.KMinCrossedAt < 0 && p.qd > res.KMinBytes {
			res.KMinCrossedAt = p.t
		}
		if res.FirstMarkAt < 0 && p.marks > 0 {
			res.FirstMarkAt, res.QDAtFirstMark = p.t, p.qd
			if i > 0 {
				res.QDBeforeMark = polls[i-1].qd
			}
			if res.KMinCrossedAt < 0 {
				res.MarksBeforeKMin = p.marks
			}
		}
		if res.RecoveryAt < 0 && p.recovering {
			res.RecoveryAt = p.t
			res.RateAtRecoveryBitsPerSec = p.rate
			_, res.RateRecoveryLaterBitsPerSec = rateAt(p.t + 1100*engine.Microsecond)
		}
	}
	if res.ReactedAt >= 0 {
		res.RateBeforeBitsPerSec, _ = rateAt(res.ReactedAt - 1)
		_, res.RateAfterBitsPerSec = rateAt(res.ReactedAt)
		res.RecoveryStepBitsPerSec = rpc.RecoveryStepBitsPerSec
		if res.RecoveryStepBitsPerSec == 0 {
			res.RecoveryStepBitsPerSec = res.RateBeforeBitsPerSec * int64(rpc.RecoveryStepPercent) / 100 // the normal rate's step
		}
	}
	if res.CNPValid && res.RecoveryAt >= 0 {
		for _, e := range mech.Events {
			if e.Kind == lhcnp.EventCNPSent && e.Flow == res.Flow && e.Time > res.CNP.Time && e.Time < res.RecoveryAt {
				res.NotificationsBeforeRecovery++
			}
		}
	}
	if res.ResumeValid {
		var lastAbove engine.Time = -1
		for _, p := range polls {
			if p.t <= res.Resume.Time && p.qd >= res.KMinBytes {
				lastAbove = p.t
			}
			if p.t <= res.Resume.Time {
				res.LastReductionBitsPerSec = p.lastCut
			}
		}
		if lastAbove >= 0 {
			res.BelowKMinFor = res.Resume.Time - lastAbove
		}
		res.ResumeArrivedAt = resumeRx
		res.RateBeforeResumeBitsPerSec, res.RateAfterResumeBitsPerSec = rateAt(resumeRx)
	}
	if res.DeferralValid {
		for _, p := range polls {
			if p.t >= res.Deferral.Time-res.N2ObservationWindow && p.t <= res.Deferral.Time {
				res.N2PeakBeforeDeferralBitsPerSec = max(res.N2PeakBeforeDeferralBitsPerSec, p.n2Rate)
				res.N2RateAtDeferralBitsPerSec = p.n2Rate
			}
		}
	}
	return res, nil
}

// Steps compares the run with the draft's eight steps. The tolerances are
// in each Draft text; docs/results.md explains the reading of the draft.
func (r *Section7Result) Steps() []Section7Step {
	mb := func(b int64) string { return fmt.Sprintf("%.3f MB", float64(b)/1e6) }
	gb := func(b int64) string { return fmt.Sprintf("%.2f Gb/s", float64(b)/1e9) }
	ms := func(t engine.Time) string { return fmt.Sprintf("%.3f ms", float64(t)/1e6) }
	near := func(a, b, tol int64) bool { return a >= b-tol && a <= b+tol }
	var s []Section7Step
	add := func(draft string, ok bool, format string, args ...any) {
		s = append(s, Section7Step{N: len(s) + 1, Draft: draft, Measured: fmt.Sprintf(format, args...), OK: ok})
	}
	add("N1 learns {Src=10.0.0.1, Dst=10.0.0.4, SrcQP=100, DstQP=200}", r.LearnedAt >= 0,
		"learned %v at %s from %v (the flow started at %s and connected at %s, one path RTT of %s later)",
		r.Flow, ms(r.LearnedAt), r.LearnedFrom, ms(r.FlowStart), ms(r.SourceConnectedAt), ms(r.PathRTT))
	add("K_max = 125 MB, K_min = 62.5 MB on N1's 100 Gb/s egress (RTT_est 10 ms); exact",
		r.KMaxBytes == 125_000_000 && r.KMinBytes == 62_500_000, "K_max %s, K_min %s", mb(r.KMaxBytes), mb(r.KMinBytes))
	add("ECN marking begins once QD exceeds K_min (the draft: at 70 MB); no marks below K_min, first mark with QD in (62.5, 70] MB",
		r.FirstMarkAt >= 0 && r.MarksBeforeKMin == 0 && r.QDAtFirstMark > r.KMinBytes && r.QDAtFirstMark <= 70_000_000,
		"first mark by %s with QD %s (previous poll %s); marks before QD passed K_min: %d",
		ms(r.FirstMarkAt), mb(r.QDAtFirstMark), mb(r.QDBeforeMark), r.MarksBeforeKMin)
	c := r.CNP
	add("at QD 130 MB (129..131) Rate Reduce 30, CongLevel 180 (178..182), MetricType 1, MetricValue 130000 (129000..131000), to 10.0.0.1 QP 100, RoCEv2 (BTH DestQP 100, E=1)",
		r.CNPValid && c.Action == wire.ActionRateReduce && c.Parameter == 30 && c.CongLevel >= 178 && c.CongLevel <= 182 &&
			c.MetricType == wire.MetricQueueDepth && c.MetricValue >= 129000 && c.MetricValue <= 131000 &&
			c.Format == lhcnp.FormatRoCEv2 && c.Flow.SrcQP == 100 && r.SourceAccepted.AcceptedRateReduce >= 1 &&
			r.SourceAccepted.Inconsistent == 0 && r.SourceAccepted.Malformed == 0,
		"%s at %s: %v %d, level %d, metric type %d value %d, %v, trigger %v; source accepted %d Rate Reduce (0 inconsistent, 0 malformed: RoCEv2 DestQP = Source QP = %d); queue peak %s",
		c.Node, ms(c.Time), c.Action, c.Parameter, c.CongLevel, c.MetricType, c.MetricValue, c.Format, c.Trigger,
		r.SourceAccepted.AcceptedRateReduce, c.Flow.SrcQP, mb(r.PeakQDBytes))
	delay := r.ReactedAt - c.Time
	add("the source gets it within about half an RTT, 5 ms (4.9..5.1 ms: N1's one-way delay to the source plus at most 10 µs), and cuts QP 100 by 30% (±0.5 Gb/s)",
		r.CNPValid && r.ReactedAt >= 0 && delay >= r.N1ToSourceDelay && delay <= r.N1ToSourceDelay+10*engine.Microsecond &&
			delay >= 4900*engine.Microsecond && delay <= 5100*engine.Microsecond &&
			near(r.RateAfterBitsPerSec, r.RateBeforeBitsPerSec*70/100, 500_000_000),
		"reduced at %s, %s after N1 sent it (one-way delay %s); %s -> %s",
		ms(r.ReactedAt), ms(delay), ms(r.N1ToSourceDelay), gb(r.RateBeforeBitsPerSec), gb(r.RateAfterBitsPerSec))
	d := r.Deferral
	fell := r.N2PeakBeforeDeferralBitsPerSec > 0 &&
		r.N2RateAtDeferralBitsPerSec*100 <= r.N2PeakBeforeDeferralBitsPerSec*int64(100-r.N2ArrivalRateDropThreshold)
	add("N2 sees the flow's arrival rate fall (by at least the drop threshold below its peak within the observation window) and defers; no Long-haul CNP from N2 to QP 100",
		r.DeferralValid && fell && r.N2NotifiedFlow == 0,
		"deferral at %s on %s (%s): arrival rate %s, peak %s in the %s before (threshold %d%%); N2 notifications to the flow: %d",
		ms(d.Time), d.Port, deferralKind(d), gb(r.N2RateAtDeferralBitsPerSec), gb(r.N2PeakBeforeDeferralBitsPerSec), ms(r.N2ObservationWindow),
		r.N2ArrivalRateDropThreshold, r.N2NotifiedFlow)
	rx := c.Time + r.N1ToSourceDelay
	since := r.RecoveryAt - rx
	add("20 ms (2 x RTT_est) without a new Long-haul CNP, then additive recovery (19.9..20.1 ms, rate rising)",
		r.RecoveryAt >= 0 && r.NotificationsBeforeRecovery == 0 && since >= 20*engine.Millisecond-100*engine.Microsecond &&
			since <= 20*engine.Millisecond+100*engine.Microsecond && r.RateRecoveryLaterBitsPerSec > r.RateAtRecoveryBitsPerSec,
		"recovery from %s, %s after the Rate Reduce arrived (polled every %s); %s then %s a millisecond later; notifications in between: %d",
		ms(r.RecoveryAt), ms(since), ms(r.PollInterval), gb(r.RateAtRecoveryBitsPerSec), gb(r.RateRecoveryLaterBitsPerSec), r.NotificationsBeforeRecovery)
	rs := r.Resume
	inc := r.RateAfterResumeBitsPerSec - r.RateBeforeResumeBitsPerSec
	add("QD below K_min for over 10 ms, then Resume 50, CongLevel 20 (17..23), MetricType 1, MetricValue 30000 (25000..35000); on its arrival the source adds 50% of the last reduction (± one recovery step, which may fall in the same 10 µs poll)",
		r.ResumeValid && rs.Action == wire.ActionResume && rs.Parameter == 50 && rs.CongLevel >= 17 && rs.CongLevel <= 23 &&
			rs.MetricType == wire.MetricQueueDepth && rs.MetricValue >= 25000 && rs.MetricValue <= 35000 &&
			r.BelowKMinFor >= 10*engine.Millisecond && near(inc, r.LastReductionBitsPerSec/2, r.RecoveryStepBitsPerSec+1),
		"%s at %s after %s below K_min: %v %d, level %d, metric type %d value %d; arrived at %s: source %s -> %s (+%s, last reduction %s)",
		rs.Node, ms(rs.Time), ms(r.BelowKMinFor), rs.Action, rs.Parameter, rs.CongLevel, rs.MetricType, rs.MetricValue,
		ms(r.ResumeArrivedAt), gb(r.RateBeforeResumeBitsPerSec), gb(r.RateAfterResumeBitsPerSec), gb(inc), gb(r.LastReductionBitsPerSec))
	return s
}

// deferralKind says why a node deferred (§5.7).
func deferralKind(e lhcnp.Event) string {
	if e.Upstream {
		return "upstream priority: N1 is on the flow's route from its source"
	}
	return "the flow's arrival rate fell"
}

func hostIP(sc *scenario.Scenario, name string) (netip.Addr, bool) {
	for _, h := range sc.Hosts {
		if h.Name == name {
			return h.IP, true
		}
	}
	return netip.Addr{}, false
}

// flowName returns the name of the flow from host src with queue pair qp.
func flowName(sc *scenario.Scenario, src string, qp uint32) string {
	for _, f := range sc.Flows {
		if f.Src == src && f.SrcQP == qp {
			return f.Name
		}
	}
	return ""
}

// pathRTT is twice the propagation delay of the route from h to dst.
func pathRTT(net *netsim.Network, h *netsim.Host, dst netsim.Node) engine.Time {
	var d engine.Time
	pt := h.Port()
	for i := 0; pt != nil && i < 64; i++ {
		d += pt.Out().Delay()
		next := pt.Peer().Node()
		sw, ok := next.(*netsim.Switch)
		if next == dst || !ok {
			break
		}
		pt = sw.Route(dst.ID())
	}
	return 2 * d
}
