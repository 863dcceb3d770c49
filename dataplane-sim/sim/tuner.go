package sim

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/report"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/tuner/policy"
)

// DefaultSetDelay is the delay between a decision and its effect when the
// scenario's tuner gives none: the measured latency of the tuner's own
// push, one gNMI Set of a queue's alpha and V_growth with the Commit
// Confirmed extension against a real `lhcnp switch` process on loopback
// whose engine runs with traffic (tuner.BenchmarkSetCommitConfirmed: p50
// 2.15-2.36 ms over three runs of 1000 on the 2-core test machine under a
// load average of 7, p99 8-17 ms; docs/tuner.md). The Set returns once
// the switch applied the change, so this bounds decision to effect.
const DefaultSetDelay = 2200 * time.Microsecond

// TunerChange is one change the closed-loop tuner made, with its fate.
type TunerChange struct {
	At            engine.Time // decision
	Node, Port    string
	Prio          int
	Rule          policy.Rule
	Direction     policy.Direction
	Reason        string
	Before, After policy.Settings
	// Outcome: "pending", "confirmed" or "rolled-back" (the objective over
	// the judge window was worse: the previous settings came back, as a
	// switch rolls back an unconfirmed commit).
	Outcome string
	// JudgedAt is when the outcome was decided, Judgement why.
	JudgedAt  engine.Time
	Judgement string
}

// TunerDecision is one decision of the closed-loop tuner on one queue's
// window, held or not, or the judgement of a change (Rule "judge").
type TunerDecision struct {
	At         engine.Time
	Node, Port string
	Prio       int
	Rule       policy.Rule
	Direction  policy.Direction
	Change     bool
	Metrics    policy.Metrics
	Objective  float64
	Settings   policy.Settings // in effect when decided (after, for a change)
	Reason     string
}

// TunerCSV is the file of a run's tuner decisions (TunerDecisions).
const TunerCSV = "tuner.csv"

// The derived durations, in the queue's RTT_est: the tuner decides ten
// times per round trip on the last tenth (the first decision as soon as a
// new queue has min_samples samples), judges a change over the round trip
// after it took effect, and changes a queue at most every half round trip.
const periodRTT, windowRTT, judgeRTT, cooldownRTT = 0.1, 0.1, 1.0, TunerCooldownRTT

// TunerCooldownRTT is the derived cool-down of a queue, in RTT_est: the
// closed loop changes a queue at most once per half round trip.
const TunerCooldownRTT = 0.5

// tunerLoop runs tuner/policy on every Long-haul CNP queue that carries
// traffic, on the node's own telemetry: the same controller as the tuner
// service, with the commit-confirmed judgement emulated (apply after the
// Set delay, judge over the judge window, restore when worse).
type tunerLoop struct {
	env      *Env
	m        *LongHaulCNP
	spec     scenario.Tuner
	base     policy.Config
	interval engine.Time
	queues   map[tqKey]*tunedQueue
	order    []*tunedQueue
}

type tqKey struct {
	node int
	port string
	prio int
}

// counts are the cumulative counters a sample takes differences of.
type counts struct {
	tx, packets, drops, pauses int64
	notif                      policy.Notifications
}

type tunedQueue struct {
	node    *lhcnp.Node
	name    string // node name
	port    string
	pt      *netsim.Port
	prio    int
	samples []policy.Sample
	prev    counts
	mem     policy.Memory
	next    engine.Time
	born    engine.Time // first sampled
	pending *tunerPending
	// applied is the tuner's current setting, re-applied when a link
	// event rewrites the port's configuration.
	applied *policy.Settings
	changes int
}

type tunerPending struct {
	log       int // index into LongHaulCNP.Tuner
	commit    policy.Commit
	decidedAt engine.Time
	appliedAt engine.Time
	judgeAt   engine.Time
	giveUp    engine.Time
}

// installTuner starts the closed loop on the installed mechanism.
func installTuner(env *Env, m *LongHaulCNP, spec scenario.Tuner) {
	base := policy.DefaultConfig()
	if p := runOf(env).r.opts.tunerPolicy; p != nil {
		base = *p
	}
	w := &base.Weights
	set := func(dst *float64, v float64) {
		if v > 0 {
			*dst = v
		}
	}
	set(&w.Utilisation, spec.Weights.Utilisation)
	set(&w.Delay, spec.Weights.Delay)
	set(&w.Loss, spec.Weights.Loss)
	set(&w.Notifications, spec.Weights.Notifications)
	set(&base.SearchAfterRTT, spec.SearchAfterRTT)
	if spec.AlphaStart != nil {
		base.AlphaStart = *spec.AlphaStart
	}
	if spec.RulesOff != nil {
		base.RulesOff = []policy.Rule{}
		for _, r := range *spec.RulesOff {
			base.RulesOff = append(base.RulesOff, policy.Rule(r))
		}
	}
	if spec.SetDelay == 0 {
		spec.SetDelay = DefaultSetDelay
	}
	t := &tunerLoop{env: env, m: m, spec: spec, base: base, queues: map[tqKey]*tunedQueue{},
		interval: engine.FromDuration(env.Scenario.SampleInterval)}
	env.Group.EveryGlobal(t.interval, t.interval, t.tick)
	env.OnLinkChange(func(_ *scenario.Link, a, b *netsim.Port) {
		for _, q := range t.order {
			if (q.pt == a || q.pt == b) && q.applied != nil {
				s := *q.applied
				if s.KMaxMode == policy.KMaxExplicit {
					continue // explicit K_max follows the new BDP; the tuner starts from it
				}
				t.apply(q, s)
			}
		}
	})
	env.OnSummary(func(*report.Input) { t.summarize() })
	env.OnWrite(t.writeCSV)
}

func simTime(t engine.Time) time.Time { return time.Unix(0, t.Nanos()).UTC() }

// tick samples every queue and lets the due ones decide.
func (t *tunerLoop) tick(now engine.Time) {
	for ni, node := range t.m.Nodes {
		st := node.State(false)
		pauses := switchPauses(&st)
		for _, ps := range st.Ports {
			for prio := range ps.Queues {
				qs := &ps.Queues[prio]
				k := tqKey{ni, ps.Name, prio}
				q := t.queues[k]
				if q == nil {
					// Every queue from the first tick, traffic or not: the
					// service decides on each queue of its switches from its
					// first period (rule start), before traffic reaches it.
					q = &tunedQueue{node: node, name: st.Node, port: ps.Name, prio: prio, pt: portNamed(node.Switch(), ps.Name)}
					if q.pt == nil {
						continue
					}
					q.prev = queueCounts(qs, pauses[prio])
					// The first decision as soon as a window can hold
					// min_samples: a new queue's window starts with it.
					q.born = now
					q.next = now + engine.Time(t.base.MinSamples)*t.interval
					t.queues[k] = q
					t.order = append(t.order, q)
					continue
				}
				c := queueCounts(qs, pauses[prio])
				q.samples = append(q.samples, policy.Sample{Time: simTime(now),
					QueueDepthBytes: qs.QueueBytes, PeakQueueDepthBytes: qs.QueueBytes,
					GrowthRateBytesPerSec: qs.QueueGrowthBytesPerSec, ECNMarkingPercent: qs.ECNMarkingPercent,
					TxBytes: c.tx - q.prev.tx, Packets: c.packets - q.prev.packets, Drops: c.drops - q.prev.drops,
					Pauses: c.pauses - q.prev.pauses,
					Notifications: policy.Notifications{Notify: c.notif.Notify - q.prev.notif.Notify,
						Pause: c.notif.Pause - q.prev.notif.Pause, RateReduce: c.notif.RateReduce - q.prev.notif.RateReduce,
						Resume: c.notif.Resume - q.prev.notif.Resume}})
				q.prev = c
				if now >= q.next {
					q.next = now + t.period(ps.RTTEst)
					// A queue that has carried no packet gets its first
					// decision (the policy's start) and that change's
					// judgement, then none until traffic comes: a decision
					// on an idle window changes nothing but the trace (the
					// service's steady rows).
					if qs.Counters.Packets > 0 || q.changes == 0 || q.pending != nil {
						t.decide(q, now, &ps, qs)
					}
				}
				t.trim(q, now, ps.RTTEst)
			}
		}
	}
}

// queueCounts are the queue's counters as the gNMI target publishes them
// (server/dataplane) and the service's tuner reads them (tuner.PGSource):
// the bytes and packets sent from the queue, its drops, and pauses, the
// PFC PAUSE frames the switch sent for the queue's priority on any of its
// interfaces (switchPauses), so that the simulated tuner's windows are the
// service's. (The node's own Packets count data packets enqueued, and the
// port's TxBytes every priority's frames and PFC's.)
func queueCounts(qs *lhcnp.QueueState, pauses int64) counts {
	c := qs.Counters
	return counts{tx: qs.TxBytes, packets: qs.TxPackets, drops: c.Drops, pauses: pauses,
		notif: policy.Notifications{Notify: c.SentNotify, Pause: c.SentPause, RateReduce: c.SentRateReduce, Resume: c.SentResume}}
}

// switchPauses are the PFC PAUSE frames the switch sent, by priority, on
// all its interfaces. A queue's pfc-pause-frames counts those its own
// interface sent upstream, and a congested egress queue's pauses leave by
// the ports its traffic arrives on: its own reads 0 while the switch
// pauses its senders for it. The tuner counts the priority's (every
// congested queue of a priority is charged with all its pauses).
func switchPauses(st *lhcnp.State) [netsim.NumPrio]int64 {
	var out [netsim.NumPrio]int64
	for _, ps := range st.Ports {
		for prio := range ps.Queues {
			out[prio] += ps.Queues[prio].PFCPauseFrames
		}
	}
	return out
}

// orRTT is d, or when d is 0 the fraction of RTT_est.
func orRTT(d time.Duration, rtt engine.Time, frac float64) engine.Time {
	if d > 0 {
		return engine.FromDuration(d)
	}
	return engine.Time(frac * float64(rtt))
}

func (t *tunerLoop) period(rtt engine.Time) engine.Time {
	return max(orRTT(t.spec.Period, rtt, periodRTT), t.interval)
}

// windowLen is the length of a decision's window: the scenario's, or
// RTT_est / 10, and never shorter than min_samples samples span (a DC-side
// port's RTT_est of 2 µs would give a window with one sample, and its
// queue, however long, would never be decided on).
func (t *tunerLoop) windowLen(rtt engine.Time) engine.Time {
	return max(orRTT(t.spec.Window, rtt, windowRTT), t.minSpan())
}

// judgeLen is the length of a judge window, with the same floor.
func (t *tunerLoop) judgeLen(rtt engine.Time) engine.Time {
	return max(orRTT(t.spec.JudgeWindow, rtt, judgeRTT), t.minSpan())
}

// minSpan is the time min_samples samples span.
func (t *tunerLoop) minSpan() engine.Time { return engine.Time(t.base.MinSamples-1) * t.interval }

// trim keeps the samples a window or a judge window can still need.
func (t *tunerLoop) trim(q *tunedQueue, now, rtt engine.Time) {
	keep := 2*max(t.windowLen(rtt), t.judgeLen(rtt)) + 2*t.interval
	if p := q.pending; p != nil {
		// A pending commit is judged on everything from its decision (the
		// Set) on, however long its Set delay and judge window: kept whole.
		keep = max(keep, now-p.decidedAt+2*t.interval)
	}
	from := simTime(now - keep)
	i := 0
	for i < len(q.samples) && q.samples[i].Time.Before(from) {
		i++
	}
	if i > 0 {
		q.samples = append(q.samples[:0], q.samples[i:]...)
	}
}

func (t *tunerLoop) config(rtt engine.Time) policy.Config {
	c := t.base
	c.Cooldown = orRTT(t.spec.Cooldown, rtt, cooldownRTT).Duration()
	c.MaxGap = 3 * t.interval.Duration()
	return c
}

// window is the queue's window [from, to] with its current settings.
func (t *tunerLoop) window(q *tunedQueue, from, to engine.Time, ps *lhcnp.PortState, qs *lhcnp.QueueState) policy.Window {
	qc := queueConfig(q.node.Config(), q.port, q.prio)
	w := policy.Window{Start: simTime(from), End: simTime(to), Config: settingsOf(qc), KBaseBytes: qc.KBaseBytes,
		EffectiveKMaxBytes: qs.KMaxBytes, RTTEst: ps.RTTEst.Duration(), PortRateBitsPerSec: ps.PortRateBitsPerSec,
		BufferBytes: ps.BufferBytes, OverloadCutSupported: true}
	for _, s := range q.samples {
		if !s.Time.Before(w.Start) && !s.Time.After(w.End) {
			w.Samples = append(w.Samples, s)
		}
	}
	return w
}

func (t *tunerLoop) decide(q *tunedQueue, now engine.Time, ps *lhcnp.PortState, qs *lhcnp.QueueState) {
	rtt := ps.RTTEst
	cfg := t.config(rtt)
	log := &t.m.Tuner
	if p := q.pending; p != nil {
		if now < p.judgeAt {
			return
		}
		// The judge window starts at the decision, not where the change
		// took effect: what happens during the Set delay (drops, a queue
		// reaching the buffer) is part of the commit's judgement, and
		// would otherwise fall in no window at all.
		w := t.window(q, p.decidedAt, now, ps, qs)
		j := p.commit.Judge(cfg, w)
		if j.Wait {
			if now < p.giveUp {
				return
			}
			// No complete window in time: the commit is not confirmed.
			t.trace(q, now, TunerDecision{Rule: ruleJudge, Direction: p.commit.Direction, Settings: w.Config,
				Reason: "rolled-back: no complete window to judge on"})
			t.restore(q, p, now, cfg, "rolled-back", false)
			return
		}
		(*log)[p.log].Judgement = j.Reason
		outcome := "rolled-back"
		if j.Keep {
			outcome = "confirmed"
		}
		t.trace(q, now, TunerDecision{Rule: ruleJudge, Direction: p.commit.Direction, Metrics: j.Metrics,
			Objective: j.After, Settings: w.Config, Reason: outcome + ": " + j.Reason})
		if j.Keep {
			(*log)[p.log].Outcome, (*log)[p.log].JudgedAt = "confirmed", now
			q.pending = nil
			q.mem = cfg.Judged(q.mem, j)
			return
		}
		t.restore(q, p, now, cfg, "rolled-back", true)
		q.mem = cfg.Judged(q.mem, j)
		return
	}
	w := t.window(q, max(q.born, now-t.windowLen(rtt)), now, ps, qs)
	if f := t.spec.Fixed; f != nil {
		t.fixed(q, now, w, f)
		return
	}
	d, mem := policy.Decide(cfg, w, q.mem)
	q.mem = mem
	t.trace(q, now, TunerDecision{Rule: d.Rule, Direction: d.Direction, Change: d.Change, Metrics: d.Metrics,
		Objective: d.Objective, Settings: d.After, Reason: d.Reason})
	if !d.Change {
		return
	}
	q.changes++
	*log = append(*log, TunerChange{At: now, Node: q.name, Port: q.port, Prio: q.prio, Rule: d.Rule, Direction: d.Direction, Reason: d.Reason,
		Before: d.Before, After: d.After, Outcome: "pending"})
	delay := engine.FromDuration(t.spec.SetDelay)
	judge := t.judgeLen(rtt)
	if d.JudgeRTT > 0 { // a search experiment's longer judge window
		judge = max(judge, engine.Time(d.JudgeRTT*float64(rtt)))
	}
	q.pending = &tunerPending{log: len(*log) - 1, commit: policy.CommitOf(d, w), decidedAt: now, appliedAt: now + delay,
		judgeAt: now + delay + judge, giveUp: now + delay + 3*judge}
	after := d.After
	t.env.Group.AtGlobal(now+delay, func() { t.apply(q, after) })
}

// ruleFixed names the one change of a Tuner.Fixed loop.
const ruleFixed policy.Rule = "fixed"

// fixed is a Tuner.Fixed loop's decision: the fixed setting at the
// queue's first decision (applied the Set delay later, never judged),
// nothing after it.
func (t *tunerLoop) fixed(q *tunedQueue, now engine.Time, w policy.Window, f *scenario.TunerFixed) {
	if q.changes > 0 {
		return
	}
	q.changes++
	after := w.Config
	// As a static block's params give them (longhaul.go): alpha with the
	// BDP-adaptive K_max, V_growth in bytes per second.
	after.KMaxMode, after.Alpha, after.VGrowthBytesPerSec = policy.KMaxBDP, f.Alpha, int64(f.VGrowth)/8
	t.trace(q, now, TunerDecision{Rule: ruleFixed, Direction: policy.Hold, Change: true, Metrics: policy.Measure(w),
		Settings: after, Reason: "the fixed setting (Tuner.Fixed) at the queue's first decision"})
	t.m.Tuner = append(t.m.Tuner, TunerChange{At: now, Node: q.name, Port: q.port, Prio: q.prio, Rule: ruleFixed,
		Before: w.Config, After: after, Outcome: "confirmed", JudgedAt: now})
	t.env.Group.AtGlobal(now+engine.FromDuration(t.spec.SetDelay), func() { t.apply(q, after) })
}

// ruleJudge names the judgement of a change in TunerDecisions.
const ruleJudge policy.Rule = "judge"

// trace records one decision or judgement of q.
func (t *tunerLoop) trace(q *tunedQueue, now engine.Time, d TunerDecision) {
	d.At, d.Node, d.Port, d.Prio = now, q.name, q.port, q.prio
	t.m.TunerDecisions = append(t.m.TunerDecisions, d)
}

// writeCSV writes every decision and judgement into tuner.csv: what the
// tuner saw (the window's metrics), which rule decided and why.
func (t *tunerLoop) writeCSV(outDir string) error {
	f, err := os.Create(filepath.Join(outDir, TunerCSV))
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"time_ns", "node", "port", "queue", "rule", "direction", "change", "objective",
		"utilisation", "delay_rtt", "last_delay_rtt", "trend_rtt", "peak_queue_bytes", "ecn_marking_percent",
		"notifications", "loss", "kmax_mode", "alpha", "kmax_bytes", "v_growth_bytes_per_second", "overload_cut", "reason"})
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
	for _, d := range t.m.TunerDecisions {
		m, s := d.Metrics, d.Settings
		_ = w.Write([]string{strconv.FormatInt(d.At.Nanos(), 10), d.Node, d.Port, strconv.Itoa(d.Prio), string(d.Rule),
			d.Direction.String(), strconv.FormatBool(d.Change), g(d.Objective), g(m.Utilisation), g(m.DelayRTT),
			g(m.LastDelayRTT), g(m.TrendRTT), strconv.FormatInt(m.PeakQueueBytes, 10), g(m.ECNMarkingPercent),
			strconv.FormatInt(m.Notifications.Total(), 10), g(m.Loss), string(s.KMaxMode), g(s.Alpha),
			strconv.FormatInt(s.KMaxBytes, 10), strconv.FormatInt(s.VGrowthBytesPerSec, 10), strconv.FormatBool(s.OverloadCut), d.Reason})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("sim: %s: %w", TunerCSV, err)
	}
	return f.Close()
}

// restore brings the previous settings back after the Set delay, as the
// switch does when a commit is not confirmed. worse says the commit was
// judged worse; one given up unjudged (no complete window in time) is
// undone without that verdict (policy.Config.Reverted), as the service's
// unjudged cancels are.
func (t *tunerLoop) restore(q *tunedQueue, p *tunerPending, now engine.Time, cfg policy.Config, outcome string, worse bool) {
	e := &t.m.Tuner[p.log]
	e.Outcome, e.JudgedAt = outcome, now
	// The cool-down restarts where the rollback takes effect: a decision
	// before it would read (and step from) the settings rolled back.
	back := now + engine.FromDuration(t.spec.SetDelay)
	q.mem = cfg.Reverted(q.mem, simTime(back), worse)
	q.pending = nil
	s := p.commit.From
	t.env.Group.AtGlobal(back, func() { t.apply(q, s) })
}

// apply writes the settings into the node's configuration of the queue.
func (t *tunerLoop) apply(q *tunedQueue, s policy.Settings) {
	cfg := q.node.Config()
	ic, ok := cfg.Interfaces[q.port]
	if !ok {
		ic = cfg.Interface
	}
	qc := ic.Queue
	if pq, ok := ic.Queues[uint8(q.prio)]; ok {
		qc = pq
	}
	switch s.KMaxMode {
	case policy.KMaxExplicit:
		qc.KMaxMode, qc.KMaxBytes = lhcnp.KMaxExplicit, s.KMaxBytes
		if qc.KMinMode == lhcnp.KMinExplicit {
			qc.KMinBytes = min(qc.KMinBytes, s.KMaxBytes/2)
		}
	default:
		qc.KMaxMode, qc.Alpha = lhcnp.KMaxBDP, s.Alpha
	}
	qc.VGrowthBytesPerSec = s.VGrowthBytesPerSec
	qc.OverloadCut = s.OverloadCut
	if _, ok := ic.Queues[uint8(q.prio)]; ok {
		ic.Queues[uint8(q.prio)] = qc
	} else {
		ic.Queue = qc
	}
	if cfg.Interfaces == nil {
		cfg.Interfaces = map[string]lhcnp.InterfaceConfig{}
	}
	cfg.Interfaces[q.port] = ic
	if err := q.node.ApplyConfig(cfg); err != nil {
		t.env.Warn("tuner: %s %s queue %d: %v", q.name, q.port, q.prio, err)
		return
	}
	q.applied = &s
}

func (t *tunerLoop) summarize() {
	c := t.env.Counters()
	var maxChanges int
	for _, q := range t.order {
		maxChanges = max(maxChanges, q.changes)
	}
	c["tuner_queues"] = int64(len(t.order))
	c["tuner_max_changes_per_queue"] = int64(maxChanges)
	for _, e := range t.m.Tuner {
		c["tuner_changes"]++
		c["tuner_"+e.Outcome]++
	}
	// When the last change after each step came (the settling time the
	// bars measure), relative to the step: a step is a timed event or a
	// flow starting after the first ones.
	steps := t.steps()
	for i, at := range steps {
		end := engine.Time(1<<62 - 1)
		if i+1 < len(steps) {
			end = steps[i+1]
		}
		var settle engine.Time
		for _, e := range t.m.Tuner {
			if e.At >= at && e.At < end {
				settle = e.At - at
			}
		}
		c[fmt.Sprintf("%s%d", SettleCounterPrefix, at.Nanos())] = settle.Nanos()
	}
}

// SettleCounterPrefix names the mechanism counters (summary.json) that
// give, per step of the scenario (the suffix: its time in ns), how long
// after it the tuner's last change in its segment came (0: none).
const SettleCounterPrefix = "tuner_settle_ns@"

// steps are the scenario's timed events and the flow starts after the
// first, in time order, without repeats.
func (t *tunerLoop) steps() []engine.Time {
	sc := t.env.Scenario
	var out []engine.Time
	for _, ev := range sc.Events {
		out = append(out, engine.FromDuration(ev.At))
	}
	if len(sc.Flows) > 0 {
		first := sc.Flows[0].Start // flows are sorted by start
		for _, f := range sc.Flows {
			if f.Start > first {
				out = append(out, engine.FromDuration(f.Start))
			}
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	// Only the steps inside the run (a run may be shortened).
	return slices.DeleteFunc(out, func(at engine.Time) bool { return at >= t.env.Group.Now() })
}

func portNamed(sw *netsim.Switch, name string) *netsim.Port {
	for _, pt := range sw.Ports() {
		if pt.Name() == name {
			return pt
		}
	}
	return nil
}

// queueConfig is the configuration of one queue of a port.
func queueConfig(c lhcnp.Config, port string, prio int) lhcnp.QueueConfig {
	ic, ok := c.Interfaces[port]
	if !ok {
		ic = c.Interface
	}
	if q, ok := ic.Queues[uint8(prio)]; ok {
		return q
	}
	return ic.Queue
}

func settingsOf(q lhcnp.QueueConfig) policy.Settings {
	s := policy.Settings{KMaxMode: policy.KMaxBDP, Alpha: q.Alpha, VGrowthBytesPerSec: q.VGrowthBytesPerSec, OverloadCut: q.OverloadCut}
	if q.KMaxMode == lhcnp.KMaxExplicit {
		s.KMaxMode, s.KMaxBytes = policy.KMaxExplicit, q.KMaxBytes
	}
	return s
}
