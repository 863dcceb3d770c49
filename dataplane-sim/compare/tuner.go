package compare

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/report"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/dataplane-sim/sim"
	"github.com/lhcnp/lhcnp/tuner/policy"
)

// The tuner's mechanisms (docs/tuner.md, "In the simulator"): TunerSuffix
// runs the file's params with alpha and V_growth at the draft's defaults
// (scenario.DefaultLongHaulCNP: 1.0 and 10 Gb/s, what a real node starts
// with) and the closed-loop tuner (scenario key tuner,
// the file's own tuner block if it has one); BestStaticSuffix runs every
// static setting of the grid (GridAlphas × GridVGrowths, the file's other
// params) and keeps the one with the lowest objective.
const (
	TunerSuffix      = "+tuner"
	BestStaticSuffix = ":best-static"
)

// The grid of the best static setting: alpha, and V_growth as a share of
// the rate of the link between the congestion-aware nodes (0: the QGR
// trigger off, as §7 has it; 0.1 is the default, 10 Gb/s, at 100 Gb/s).
var (
	GridAlphas        = []float64{0.25, 0.5, 1, 2, 4}
	GridVGrowthShares = []float64{0, 0.1, 1}
)

// nodesLinkRate is the highest rate of a link between two switches (the
// WAN of the scenarios), or of any link when there is none.
func nodesLinkRate(sc *scenario.Scenario) scenario.Rate {
	isSwitch := map[string]bool{}
	for _, s := range sc.Switches {
		isSwitch[s.Name] = true
	}
	var best, any scenario.Rate
	for _, l := range sc.Links {
		any = max(any, l.Rate)
		if isSwitch[l.A] && isSwitch[l.B] {
			best = max(best, l.Rate)
		}
	}
	if best == 0 {
		return any
	}
	return best
}

// Objective is the tuner's objective (tuner/policy.Objective, default
// weights) of a whole run at one port: its utilisation, its mean queue as
// delay in rtt, its drops and PFC pauses per packet it sent (the frames
// the port counted, IPv4 and IPv6, small and PFC alike: not bytes over a
// frame size), and the Long-haul CNPs of the run per rtt.
func Objective(s *report.Summary, node, peer string, rtt time.Duration, w policy.Weights) (policy.Metrics, float64) {
	var m policy.Metrics
	for _, p := range s.Ports {
		if p.Node != node || p.Port != peer {
			continue
		}
		m.Utilisation = float64(p.Utilisation)
		m.MeanQueueBytes = float64(p.MeanQueueBytes)
		m.PeakQueueBytes = p.PeakQueueBytes
		if p.RateBitsPerSec > 0 && rtt > 0 {
			m.DelayRTT = policy.DelayRTT(m.MeanQueueBytes, p.RateBitsPerSec, rtt)
		}
		m.Packets = p.TxPackets
		m.Drops, m.Pauses = p.DropPackets, p.PFCPauseFrames
		if lost := m.Drops + m.Pauses; lost > 0 {
			m.Loss = float64(lost) / float64(max(m.Packets, 1))
		}
	}
	m.Duration = time.Duration(s.DurationNs)
	if s.DurationNs > 0 {
		m.NotificationsPerRTT = float64(s.Notifications["long-haul-cnp"]) * rtt.Seconds() / m.Duration.Seconds()
	}
	return m, policy.Objective(m, w)
}

// bottleneckRTT is the round trip the objective measures delay in: twice
// the one-way delay of the bottleneck's link when the run starts.
func bottleneckRTT(sc *scenario.Scenario, node, peer string) time.Duration {
	for _, l := range sc.Links {
		if (l.A == node && l.B == peer) || (l.A == peer && l.B == node) {
			return 2 * l.Delay
		}
	}
	return 0
}

// gridName names one static setting of the grid.
func gridName(alpha float64, vg scenario.Rate) string {
	v := "off"
	if vg > 0 {
		v = vg.String()
	}
	return "alpha=" + strconv.FormatFloat(alpha, 'g', -1, 64) + ",v_growth=" + v
}

// withTuner returns sc with the tuner on, alpha and V_growth at the
// draft's defaults (the switch's configuration the tuner starts from; its
// first decision moves them to the policy's starting point), the file's
// other params.
func withTuner(sc *scenario.Scenario) *scenario.Scenario {
	c := *sc
	d := scenario.DefaultLongHaulCNP()
	c.Mechanism = withLongHaul(c.Mechanism, d.Alpha, d.VGrowth)
	if c.Tuner == nil {
		c.Tuner = &scenario.Tuner{}
	}
	return &c
}

// withStatic returns sc with alpha and V_growth set, the file's other
// params, and no tuner.
func withStatic(sc *scenario.Scenario, alpha float64, vg scenario.Rate) *scenario.Scenario {
	c := *sc
	c.Mechanism = withLongHaul(c.Mechanism, alpha, vg)
	c.Tuner = nil
	return &c
}

// withLongHaul returns m with alpha and V_growth set when it is a
// long-haul-cnp block; another kind's params are not Long-haul CNP's.
func withLongHaul(m scenario.Mechanism, alpha float64, vg scenario.Rate) scenario.Mechanism {
	if p, ok := m.Params.(scenario.LongHaulCNP); ok {
		p.Alpha, p.VGrowth = alpha, vg
		m.Params = p
	}
	return m
}

// GridRun is one static setting's run.
type GridRun struct {
	Setting   string
	Alpha     float64
	VGrowth   scenario.Rate
	Summary   *report.Summary
	Objective float64
}

// fillObjective computes the row's objective at its bottleneck.
func fillObjective(r *Row, sc *scenario.Scenario) {
	rtt := bottleneckRTT(sc, r.BottleneckNode, r.BottleneckPeer)
	r.Metrics, r.Objective = Objective(r.Summary, r.BottleneckNode, r.BottleneckPeer, rtt, policy.DefaultWeights())
}

// runBestStatic runs the grid of mechanism m (long-haul-cnp:best-static)
// on sc and returns the row of the setting with the lowest objective at
// the baseline's bottleneck (the first row's; the grid's first run's when
// m comes first).
func runBestStatic(ctx context.Context, sc *scenario.Scenario, m, outDir string, o Options, rows []Row) (Row, error) {
	if base := strings.TrimSuffix(m, BestStaticSuffix); scenario.MechanismKind(base) != scenario.MechanismLongHaulCNP {
		return Row{}, fmt.Errorf("compare: unknown mechanism %q (%s applies to long-haul-cnp)", m, BestStaticSuffix)
	}
	if sc.Mechanism.Kind != scenario.MechanismLongHaulCNP || len(sc.Mechanism.Nodes) == 0 {
		return Row{}, fmt.Errorf("compare: %s: %s needs the file to name its congestion-aware nodes", scenarioAt(sc), m)
	}
	dir := filepath.Join(sc.Name, dirName(m))
	if o.Progress != nil {
		o.Progress(sc.Name, m)
	}
	opts := o.simOptions(false)
	var runs []GridRun
	for _, a := range GridAlphas {
		for _, share := range GridVGrowthShares {
			vg := scenario.Rate(share * float64(nodesLinkRate(sc)))
			name := gridName(a, vg)
			sub := strings.NewReplacer("=", "-", ",", "_").Replace(name)
			sum, err := sim.Run(ctx, withStatic(sc, a, vg), filepath.Join(outDir, dir, sub), opts...)
			if err != nil {
				return Row{}, fmt.Errorf("compare: %s grid %s: %w", sc.Name, name, err)
			}
			runs = append(runs, GridRun{Setting: name, Alpha: a, VGrowth: vg, Summary: sum})
		}
	}
	ref := rows
	if len(ref) == 0 {
		ref = []Row{{Summary: runs[0].Summary}}
	}
	node, peer := bottleneck(ref)
	rtt := bottleneckRTT(sc, node, peer)
	best := 0
	for i := range runs {
		_, runs[i].Objective = Objective(runs[i].Summary, node, peer, rtt, policy.DefaultWeights())
		if runs[i].Objective < runs[best].Objective {
			best = i
		}
	}
	b := runs[best]
	sub := strings.NewReplacer("=", "-", ",", "_").Replace(b.Setting)
	return Row{Scenario: sc.Name, Mechanism: m, Dir: filepath.Join(dir, sub), Summary: b.Summary, Setting: b.Setting, Grid: runs}, nil
}

// ratioPct is 100·(a/b − 1), "—" when b is 0.
func ratioPct(a, b float64) string {
	if b == 0 || math.IsNaN(a) {
		return "—"
	}
	return strconv.FormatFloat(100*(a/b-1), 'f', 1, 64) + " %"
}

// TunerMechanisms are the rows a tuner comparison needs: DCQCN (the
// baseline that picks the bottleneck, as in the comparison), the
// scenario's own params, the tuned run and the best static setting.
var TunerMechanisms = []string{"dcqcn", "long-haul-cnp", "long-haul-cnp" + TunerSuffix, "long-haul-cnp" + BestStaticSuffix}

// settles returns the tuner row's settling time after each step (the
// sim.SettleCounterPrefix counters), in step order.
func settles(row Row) (at, settle []int64) {
	type st struct{ at, settle int64 }
	var all []st
	for k, v := range row.Summary.MechanismCounters {
		if rest, ok := strings.CutPrefix(k, sim.SettleCounterPrefix); ok {
			if n, err := strconv.ParseInt(rest, 10, 64); err == nil {
				all = append(all, st{n, v})
			}
		}
	}
	slices.SortFunc(all, func(a, b st) int { return cmp.Compare(a.at, b.at) })
	for _, s := range all {
		at, settle = append(at, s.at), append(settle, s.settle)
	}
	return at, settle
}

// rttAfter is the bottleneck's round trip in effect just after t: its
// link's delay changed by the rtt and link-delay events up to t.
func rttAfter(sc *scenario.Scenario, node, peer string, t int64) time.Duration {
	rtt := bottleneckRTT(sc, node, peer)
	var link string
	for _, l := range sc.Links {
		if (l.A == node && l.B == peer) || (l.A == peer && l.B == node) {
			link = l.Name
		}
	}
	for _, ev := range sc.Events {
		if ev.At.Nanoseconds() > t || ev.Target != link {
			continue
		}
		switch ev.Kind {
		case scenario.EventRTT:
			rtt = ev.Delay
		case scenario.EventLinkDelay:
			rtt = 2 * ev.Delay
		}
	}
	return rtt
}

// TunerBars checks the tuner's bars on one scenario of r (docs/tuner.md):
// the tuned run's objective within 5 % of the best static setting's; for
// a step scenario (steps: its timed events and flows starting after the
// first are the steps), its last change after each step within 10 RTT and
// its objective below every static setting of the grid; and its changes
// per queue per second, reported against the bound the cool-down sets.
func (r *Result) TunerBars(sc *scenario.Scenario, steps bool) ([]Bar, error) {
	t, ok1 := r.find(sc.Name, "long-haul-cnp"+TunerSuffix)
	b, ok2 := r.find(sc.Name, "long-haul-cnp"+BestStaticSuffix)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("%w: %s with the tuner and the best static setting", ErrNoRun, sc.Name)
	}
	var bars []Bar
	add := func(name, want, got string, holds bool) {
		bars = append(bars, Bar{Scenario: sc.Name, Name: name, Want: want, Got: got, Holds: holds})
	}
	add("objective", "≤ 1.05 × the best static setting's",
		fmt.Sprintf("%.4f vs %.4f (%s, %s)", t.Objective, b.Objective, b.Setting, ratioPct(t.Objective, b.Objective)),
		t.Objective <= 1.05*b.Objective)
	if at, settle := settles(t); steps {
		for i := range at {
			rtt := rttAfter(sc, t.BottleneckNode, t.BottleneckPeer, at[i])
			add(fmt.Sprintf("re-convergence after the step at %s", dur(float64(at[i]))), "last change ≤ 10 RTT after it",
				fmt.Sprintf("%s (%.1f RTT of %s)", dur(float64(settle[i])), float64(settle[i])/float64(rtt.Nanoseconds()), rtt),
				settle[i] <= 10*rtt.Nanoseconds())
		}
		worst, best := "", math.Inf(1)
		for _, g := range b.Grid {
			if g.Objective < best {
				best, worst = g.Objective, g.Setting
			}
		}
		add("beats every static setting", "objective < the grid's lowest",
			fmt.Sprintf("%.4f vs %.4f (%s)", t.Objective, best, worst), t.Objective < best)
	}
	mc := t.Summary.MechanismCounters
	secs := float64(t.Summary.DurationNs) / 1e9
	rate := float64(mc["tuner_max_changes_per_queue"]) / secs
	rtt := bottleneckRTT(sc, t.BottleneckNode, t.BottleneckPeer)
	bound := 1 / (sim.TunerCooldownRTT * rtt.Seconds())
	add("changes per queue per second", fmt.Sprintf("bounded: ≤ %.0f (one per cool-down, RTT_est / 2)", bound),
		fmt.Sprintf("%.1f (at most %d changes on one queue in %s; %d confirmed, %d rolled back)", rate,
			mc["tuner_max_changes_per_queue"], dur(float64(t.Summary.DurationNs)), mc["tuner_confirmed"], mc["tuner_rolled-back"]),
		rate <= bound)
	return bars, nil
}

// WriteTunerMarkdown writes the tuner table: per scenario the objective
// (and its terms) of the scenario's own params, the tuned run and the best
// static setting, and the tuner's changes.
func (r *Result) WriteTunerMarkdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("| scenario | mechanism | setting | objective J | utilisation | queueing delay (RTT) | loss | notifications per RTT | tuner changes (confirmed / rolled back) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		if !slices.Contains(TunerMechanisms[1:], row.Mechanism) {
			continue
		}
		setting := row.Setting
		changes := "—"
		switch {
		case row.Mechanism == "long-haul-cnp":
			setting = "the file's params"
		case strings.HasSuffix(row.Mechanism, TunerSuffix):
			d := scenario.DefaultLongHaulCNP()
			setting = "from " + gridName(d.Alpha, d.VGrowth)
			mc := row.Summary.MechanismCounters
			changes = fmt.Sprintf("%d (%d / %d)", mc["tuner_changes"], mc["tuner_confirmed"], mc["tuner_rolled-back"])
		}
		m := row.Metrics
		fmt.Fprintf(&b, "| %s | %s | %s | %.4f | %.2f%% | %.3f | %.2g | %.2f | %s |\n", row.Scenario, row.Mechanism, setting,
			row.Objective, 100*m.Utilisation, m.DelayRTT, m.Loss, m.NotificationsPerRTT, changes)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// TunerDoc is the tuner's part of docs/results.md: its rows (the tuned
// run, the best static setting and the file's params of every scenario)
// and its bars.
type TunerDoc struct {
	Results []*Result
	BarSets []BarSet
	// Scenarios lists the scenario files, for the reader.
	Scenarios []string
	// HeldOut are the rows of the tuner family's latest held-out read
	// (HeldOutFile, an evaluation's CSV file; none: nil): its bars are
	// quoted beside these, which were written while the policy was
	// developed.
	HeldOut     []EvalRow
	HeldOutFile string
}

// writeHeldOut quotes the bars of a held-out read of the tuner's family
// (docs/tuner.md): the scenarios above were written while the policy was
// developed, those were not.
func writeHeldOut(b *strings.Builder, file string, rows []EvalRow) {
	s := Summarise(rows)
	lo, hi := rows[0].Draw.Seed, rows[0].Draw.Seed
	for _, r := range rows {
		lo, hi = min(lo, r.Draw.Seed), max(hi, r.Draw.Seed)
	}
	verdict := "fail"
	if s.MeanRatio <= BarMeanRatio && s.WorstTenthRatio <= BarWorstTenthRatio {
		verdict = "hold"
	}
	fmt.Fprintf(b, "**These scenarios were written while the policy was developed; read on scenarios it never saw, the bars %s.** "+
		"The tuner family's latest held-out read (`%s`: %s seeds %d–%d, %d generated scenarios, J the mean over %d "+
		"simulation seeds, its nodes with the family's node_params; docs/tuner.md, \"Test seeds (held out)\") puts the tuner's J at "+
		"×%.3f of each scenario's best static setting on the mean and ×%.3f on the worst tenth (the bar: ×%.2f and ×%.2f)",
		verdict, file, rows[0].Draw.Set, lo, hi, s.N, max(1, rows[0].SimSeeds), s.MeanRatio, s.WorstTenthRatio, BarMeanRatio, BarWorstTenthRatio)
	if s.Remeasured {
		fmt.Fprintf(b, ", ×%.3f and ×%.3f against that setting re-measured at a simulation seed its choice never saw", s.MeanRemeasuredRatio, s.WorstTenthReme)
	}
	fmt.Fprintf(b, ". docs/tuner.md compares it there with the draft's defaults and with one fixed setting for every scenario.\n\n")
}

// WriteTuner writes the tuner's section of docs/results.md.
func WriteTuner(w io.Writer, d TunerDoc) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("## The tuner\n\n")
	p("docs/tuner.md describes the policy and its objective J = (1 − u) + 0.5·d + 100·l + 0.001·n (utilisation,\n")
	p("queueing delay in RTT, dropped and paused packets per packet, Long-haul CNPs per RTT; lower is better), here\n")
	p("measured over the whole run at the bottleneck (delay in the bottleneck's RTT at the start, loss per frame the\n")
	p("bottleneck's port sent). Rows:\n\n")
	p("- **long-haul-cnp**: the scenario file's params, as in the comparison above;\n")
	def := scenario.DefaultLongHaulCNP()
	p("- **long-haul-cnp%s**: the file's params with alpha and V_growth at the draft's defaults (%g and %s, what\n", TunerSuffix, def.Alpha, def.VGrowth)
	p("  a real node starts with) and the closed-loop tuner (scenario key `tuner`): tuner/policy on each queue's own\n")
	p("  telemetry every RTT_est / 10, its changes applied through the node's configuration %s later (the measured\n", sim.DefaultSetDelay)
	p("  p50 of the tuner's Set with Commit Confirmed against a real switch, docs/tuner.md) and judged over the next\n")
	p("  RTT_est like a commit-confirmed Set; nothing in it knows the scenario; every decision, held or not, with its\n")
	p("  rule and reason is in the run's %s;\n", sim.TunerCSV)
	p("- **long-haul-cnp%s**: every static setting of the grid alpha ∈ %v × V_growth ∈ %v of the\n", BestStaticSuffix, GridAlphas, GridVGrowthShares)
	p("  WAN's rate (0: the trigger off), the file's other params; the row is the setting with the lowest J.\n\n")
	p("Scenarios: %s.\n\n", strings.Join(d.Scenarios, ", "))
	for _, r := range d.Results {
		if err := r.WriteTunerMarkdown(&b); err != nil {
			return err
		}
		p("\n")
	}
	p("### Bars of the tuner\n\n")
	p("Within 5 %% of the best static setting on every scenario; on the step scenarios (`scenarios/tuner/`: the RTT\n")
	p("step 10 → 20 → 10 ms, the load step 2:1 → 8:1), the last change within 10 RTT of each step and a J below every\n")
	p("static setting of the grid; the changes per queue per second, against the bound the cool-down sets.\n\n")
	if len(d.HeldOut) > 0 {
		writeHeldOut(&b, d.HeldOutFile, d.HeldOut)
	}
	for _, bs := range d.BarSets {
		p("**%s**\n\n", bs.Title)
		if err := WriteBarsMarkdown(&b, bs.Bars); err != nil {
			return err
		}
		p("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
