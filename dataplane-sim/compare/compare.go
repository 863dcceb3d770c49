// Package compare runs congestion-notification mechanisms side by side on
// the same scenarios and reports them: one sim.Run per scenario and
// mechanism, a table (markdown and CSV) of the figures docs/results.md
// compares them on, the pass/fail of stated bars, and plots of the most
// congested port's queue and of the senders' total rate over time, one
// line per mechanism.
//
// The package does not print; progress goes to a callback. It depends on
// sim, scenario and report, and on nothing network-model specific: every
// figure comes from the runs' summaries and CSV files.
package compare

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
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

// Mechanism names accepted besides the scenario kinds: "long-haul-cnp"
// runs the file's params, DefaultsSuffix appended runs the draft's
// defaults (scenario.DefaultLongHaulCNP) on the same nodes.
const DefaultsSuffix = ":defaults"

// PaperSuffix appended to "dcqcn" runs DCQCN with the paper's parameter set
// (scenario dcqcn.profile paper) instead of NVIDIA's firmware defaults.
const PaperSuffix = ":paper"

// DefaultMechanisms is what Run compares when given none: every variant,
// then the tuner's row and the best static setting it is measured against
// (issue 10: within 5 % on every comparison scenario, shown in
// docs/results.md), and the options row tuned in hindsight as
// dcqcn:wan-tuned is (issue 27's like-for-like comparison). Each grid
// costs 15 runs per scenario.
func DefaultMechanisms() []string {
	return append(VariantNames(), "long-haul-cnp"+TunerSuffix, "long-haul-cnp"+OptionsSuffix+TunerSuffix, "long-haul-cnp"+BestStaticSuffix,
		"long-haul-cnp"+OptionsSuffix+WanTunedSuffix)
}

// CheckMechanisms refuses a list of mechanisms Run would not run to the
// end: none, a name given twice (both rows would write one directory), a
// name that is no row (of DefaultVariants, the tuner's, extra's, or a
// static Long-haul CNP row with WanTunedSuffix) and a BestStaticSuffix
// on another mechanism than long-haul-cnp. A command checks its list
// with it before it loads anything.
func CheckMechanisms(names []string, extra []Variant) error {
	if len(names) == 0 {
		return errors.New("no mechanism to compare")
	}
	for i, m := range names {
		if slices.Contains(names[:i], m) {
			return fmt.Errorf("mechanism %q named twice", m)
		}
		if base, ok := strings.CutSuffix(m, BestStaticSuffix); ok {
			if scenario.MechanismKind(base) != scenario.MechanismLongHaulCNP {
				return fmt.Errorf("unknown mechanism %q (%s applies to long-haul-cnp)", m, BestStaticSuffix)
			}
			continue
		}
		if _, err := findVariant(extra, m); err != nil {
			return err
		}
	}
	return nil
}

// needsNodes reports whether mechanism m (a name CheckMechanisms took)
// runs on the file's congestion-aware nodes, which its row refuses to do
// without (nodes, runBestStatic): every row but DCQCN's and PFC's. A
// caller's own row (extra) is not known here: its Apply says.
func needsNodes(extra []Variant, m string) bool {
	if slices.ContainsFunc(extra, func(v Variant) bool { return v.Name == m }) {
		return false
	}
	base := m
	if i := strings.IndexAny(m, ":+"); i >= 0 {
		base = m[:i]
	}
	return base != "dcqcn" && base != "pfc"
}

// ConfigError is a refusal of the scenarios and mechanisms a caller gives,
// made before anything runs (Check, CheckPhases, Shift): a mistake of the
// caller's configuration, not a failure of a run. A command tells the two
// apart with errors.As (lhcnp's exit status 2 and 1).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Check refuses what Run refuses before its first run: a list of
// mechanisms CheckMechanisms refuses, and a scenario without
// congestion-aware nodes under a mechanism that needs them. Its errors are
// *ConfigError. A command may call it before it prepares anything.
func Check(scenarios []*scenario.Scenario, o Options) error {
	mechs := o.mechanisms()
	if err := CheckMechanisms(mechs, o.Variants); err != nil {
		return &ConfigError{fmt.Errorf("compare: %w", err)}
	}
	for _, sc := range scenarios {
		for _, m := range mechs {
			if len(sc.Mechanism.Nodes) == 0 && needsNodes(o.Variants, m) {
				return &ConfigError{errNoNodes(sc, m)}
			}
		}
	}
	return nil
}

// ErrNoNodes is the refusal of a mechanism that needs congestion-aware
// nodes on a scenario that names none (errors.Is).
var ErrNoNodes = errors.New("needs the file to name its congestion-aware nodes (mechanism.nodes)")

// errNoNodes is the refusal of mechanism m on a scenario without
// congestion-aware nodes, naming the scenario and the file it came from.
func errNoNodes(sc *scenario.Scenario, m string) error {
	return fmt.Errorf("compare: %s: %s %w", scenarioAt(sc), m, ErrNoNodes)
}

// scenarioAt names a scenario and, when it was read from one, its file.
func scenarioAt(sc *scenario.Scenario) string {
	if sc.File == "" {
		return "scenario " + sc.Name
	}
	return fmt.Sprintf("scenario %s (%s)", sc.Name, sc.File)
}

// Options configure Run.
type Options struct {
	// Mechanisms to run, in table order; the first is the baseline that
	// picks each scenario's bottleneck. Empty: DefaultMechanisms (every
	// variant's name, then the tuner's rows).
	Mechanisms []string
	// Variants are rows of the caller's own, looked up by name before
	// DefaultVariants.
	Variants []Variant
	// Duration overrides every scenario's duration when positive.
	Duration time.Duration
	// Plots writes the PNG plots (and each run's own plots). An earlier
	// comparison's plots of the same scenarios in the output directory are
	// removed either way: off, or a plot this one does not draw (an FCT
	// plot without finite flows), they would be read as this run's.
	Plots bool
	// SummaryOnly writes each run's summary.json and tuner.csv only, not
	// its time series (sim.WithoutSeries); Plots must be off.
	SummaryOnly bool
	// Progress, if set, is told when a run starts.
	Progress func(scenario, mechanism string)
	// TunerPolicy, when set, is the tuned rows' policy configuration in
	// place of its defaults (sim.WithTunerPolicy).
	TunerPolicy *policy.Config
}

// mechanisms are the rows Run runs: Mechanisms, or DefaultMechanisms.
func (o Options) mechanisms() []string {
	if len(o.Mechanisms) == 0 {
		return DefaultMechanisms()
	}
	return o.Mechanisms
}

// simOptions are the options of one run: the duration, no plots unless
// plots, no time series with SummaryOnly.
func (o Options) simOptions(plots bool) []sim.Option {
	var opts []sim.Option
	if o.Duration > 0 {
		opts = append(opts, sim.WithDuration(o.Duration))
	}
	if !plots {
		opts = append(opts, sim.WithoutPlots())
	}
	if o.TunerPolicy != nil {
		opts = append(opts, sim.WithTunerPolicy(*o.TunerPolicy))
	}
	if o.SummaryOnly {
		opts = append(opts, sim.WithoutSeries())
	}
	return opts
}

// Result is a comparison: one Row per scenario and mechanism.
type Result struct {
	Rows []Row
	// Plots are the PNG files written, relative to the output directory:
	// <scenario>-queue.png and -rate.png for every scenario, -fct.png for
	// those with finite flows.
	Plots []string
	// DCQCNRef, when set, adds a column to the tables: how far our DCQCN
	// is from the reference simulator, for the rows that react through
	// DCQCN (docs/validation.md).
	DCQCNRef *DCQCNRef
}

// DCQCNRef is how far our DCQCN is from the RDMA ns-3 (HPCC's simulator),
// from the stored validation summaries (package refsim).
type DCQCNRef struct {
	// Cell is the distance for the rows whose RNICs run DCQCN with
	// NVIDIA's firmware timing, FCT the same for the FCT tables, Paper the
	// cell of the rows with the paper's timing (which the reference
	// cannot run).
	Cell, FCT, Paper string
	// Footnote explains the column under the comparison table.
	Footnote string
}

// DCQCNRefColumn is the column's header.
const DCQCNRefColumn = "our DCQCN vs the reference¹"

// cell is the column's value for a row of mechanism m: none for pfc (no
// DCQCN at the RNICs).
func (d *DCQCNRef) cell(m string, fct bool) string {
	switch {
	case m == "pfc":
		return "— (no DCQCN)"
	case strings.HasSuffix(m, PaperSuffix):
		return d.Paper
	case fct:
		return d.FCT
	}
	return d.Cell
}

// Row is one run.
type Row struct {
	Scenario, Mechanism string
	// Dir is the run's output directory (relative to the output directory).
	Dir     string
	Summary *report.Summary
	// Bottleneck is the port (node, peer) with the highest peak queue
	// under the baseline mechanism, the same for every mechanism of the
	// scenario.
	BottleneckNode, BottleneckPeer string

	// Feedback latency over the senders (see docs/results.md): mean and
	// max in ns, and how many senders have one. FeedbackSignal is the kind
	// of signal timed.
	FeedbackSignal       string
	FeedbackSenders      int
	FeedbackMeanNs       float64
	FeedbackMaxNs        int64
	ReactionMeanNs       float64
	ReactionMaxNs        int64
	PeakQueueBytes       int64   // at the bottleneck
	BottleneckDrops      int64   // packets dropped at the bottleneck
	Drops                int64   // packets dropped anywhere
	Utilisation          float64 // bottleneck, over its congested period
	CongestedNs          int64   // length of that period
	RunUtilisation       float64 // bottleneck, over the whole run
	Jain                 float64
	LongHaulCNPs, RxCNPs int64 // notifications sent
	// Notifications counts what the mechanism's nodes sent (every kind
	// but the receivers' cnp); PFCPausedNs the time switch ports were
	// held by PFC, summed over ports.
	Notifications int64
	PFCPausedNs   int64
	// Buckets are the FCT slowdowns of finite flows by size (web-search
	// mixes; empty when the scenario has no finite flow).
	Buckets []Bucket
	// Fabric are the figures of a scenario on generated fabrics (per-DC
	// and cross-DC FCT, the WAN's utilisation); nil for others.
	Fabric *FabricFigures
	// Note is what the variant chose (the tuned thresholds).
	Note string
	// The tuner's objective of the run at the bottleneck (Objective), and
	// for the best static setting its name and every grid run.
	Metrics   policy.Metrics
	Objective float64
	Setting   string
	Grid      []GridRun
}

// Bucket is the FCT slowdown of one flow-size class.
type Bucket struct {
	Name            string
	Flows, Finished int
	P50, P95, P99   float64
}

// Run simulates every scenario with every mechanism, writing each run
// into outDir/<scenario>/<mechanism>/ and, with Plots, the comparison plots
// into outDir/<scenario>-queue.png and outDir/<scenario>-rate.png, and
// outDir/<scenario>-fct.png for a scenario with finite flows.
func Run(ctx context.Context, scenarios []*scenario.Scenario, outDir string, o Options) (*Result, error) {
	if o.Plots && o.SummaryOnly {
		return nil, errors.New("compare: plots need the runs' time series: Plots and SummaryOnly together")
	}
	// Every name is checked before the first run: a misspelt or
	// inapplicable mechanism fails at once, not after the scenarios before it.
	if err := Check(scenarios, o); err != nil {
		return nil, err
	}
	mechs := o.mechanisms()
	res := &Result{}
	for _, sc := range scenarios {
		var rows []Row
		for _, m := range mechs {
			if strings.HasSuffix(m, BestStaticSuffix) {
				row, err := runBestStatic(ctx, sc, m, outDir, o, rows)
				if err != nil {
					return nil, err
				}
				rows = append(rows, row)
				continue
			}
			v, err := findVariant(o.Variants, m)
			if err != nil {
				return nil, fmt.Errorf("compare: %w", err)
			}
			dir := filepath.Join(sc.Name, dirName(m))
			msc, note, err := v.Apply(ctx, sc, filepath.Join(outDir, dir+"-grid"))
			if err != nil {
				return nil, err
			}
			if o.Progress != nil {
				o.Progress(sc.Name, m)
			}
			sum, err := sim.Run(ctx, msc, filepath.Join(outDir, dir), o.simOptions(o.Plots)...)
			if err != nil {
				return nil, fmt.Errorf("compare: %s with %s: %w", sc.Name, m, err)
			}
			rows = append(rows, Row{Scenario: sc.Name, Mechanism: m, Dir: dir, Summary: sum, Note: note})
		}
		node, peer := bottleneck(rows)
		for i := range rows {
			fill(&rows[i], node, peer)
			fillObjective(&rows[i], sc)
			rows[i].Fabric = fabricFigures(rows[i].Summary, sc)
		}
		if err := removePlots(outDir, sc.Name); err != nil {
			return nil, err
		}
		if o.Plots {
			files, err := writePlots(outDir, sc.Name, rows)
			if err != nil {
				return nil, err
			}
			res.Plots = append(res.Plots, files...)
			fct, err := writeFCTPlot(outDir, sc.Name, rows)
			if err != nil {
				return nil, err
			}
			if fct != "" {
				res.Plots = append(res.Plots, fct)
			}
			ffct, err := writeFabricPlot(outDir, sc.Name, rows)
			if err != nil {
				return nil, err
			}
			if ffct != "" {
				res.Plots = append(res.Plots, ffct)
			}
		}
		res.Rows = append(res.Rows, rows...)
	}
	return res, nil
}

func dirName(m string) string { return strings.ReplaceAll(m, ":", "-") }

// bottleneck returns the port with the highest peak queue in the first
// run (the baseline); ties go to the first port.
func bottleneck(rows []Row) (node, peer string) {
	var best int64 = -1
	for _, p := range rows[0].Summary.Ports {
		if p.PeakQueueBytes > best {
			best, node, peer = p.PeakQueueBytes, p.Node, p.Port
		}
	}
	return node, peer
}

func fill(r *Row, node, peer string) {
	s := r.Summary
	r.BottleneckNode, r.BottleneckPeer = node, peer
	r.Drops = s.Totals.DropPackets
	r.Jain = float64(s.Totals.JainFairness)
	r.RxCNPs = s.Notifications["cnp"]
	r.LongHaulCNPs = s.Notifications["long-haul-cnp"]
	r.Notifications = 0
	for k, n := range s.Notifications {
		if k != "cnp" {
			r.Notifications += n
		}
	}
	r.PFCPausedNs = s.Totals.PFCPausedNs
	r.Buckets = buckets(s)
	if fb := s.Feedback; fb != nil {
		r.FeedbackSignal = fb.Signal
		r.FeedbackSenders = fb.Senders
		r.FeedbackMeanNs = float64(fb.MeanLatencyNs)
		r.FeedbackMaxNs = fb.MaxLatencyNs
		r.ReactionMeanNs = float64(fb.MeanReactionNs)
		r.ReactionMaxNs = fb.MaxReactionNs
	}
	for _, p := range s.Ports {
		if p.Node != node || p.Port != peer {
			continue
		}
		r.PeakQueueBytes = p.PeakQueueBytes
		r.BottleneckDrops = p.DropPackets
		r.RunUtilisation = float64(p.Utilisation)
		r.CongestedNs = p.CongestedNs
		if p.CongestedUtilisation != nil {
			r.Utilisation = float64(*p.CongestedUtilisation)
		}
	}
}

// Bar is one stated bar and whether it held.
type Bar struct {
	Scenario, Name string
	Want, Got      string
	Holds          bool
}

// ErrNoRun is returned by Bars when a scenario or mechanism is missing.
var ErrNoRun = errors.New("compare: no such run")

// Bars checks the four bars of candidate against baseline on a scenario:
// feedback latency at least 10x shorter (mean and max), peak queue at the
// bottleneck at most half, no drops where the baseline drops, and at least
// 95% utilisation of the bottleneck over its congested period.
func (r *Result) Bars(scenarioName, baseline, candidate string) ([]Bar, error) {
	b, ok1 := r.find(scenarioName, baseline)
	c, ok2 := r.find(scenarioName, candidate)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("%w: %s with %s and %s", ErrNoRun, scenarioName, baseline, candidate)
	}
	var bars []Bar
	add := func(name, want, got string, holds bool) {
		bars = append(bars, Bar{Scenario: scenarioName, Name: name, Want: want, Got: got, Holds: holds})
	}
	fbOK := c.FeedbackSenders > 0 && b.FeedbackSenders > 0 &&
		c.FeedbackMeanNs*10 <= b.FeedbackMeanNs && float64(c.FeedbackMaxNs)*10 <= float64(b.FeedbackMaxNs)
	add("feedback latency", "≥ 10× shorter (mean and max)",
		fmt.Sprintf("mean %s vs %s (%s), max %s vs %s", dur(c.FeedbackMeanNs), dur(b.FeedbackMeanNs),
			ratio(b.FeedbackMeanNs, c.FeedbackMeanNs), dur(float64(c.FeedbackMaxNs)), dur(float64(b.FeedbackMaxNs))), fbOK)
	add("peak queue", "≤ ½ of the baseline's",
		fmt.Sprintf("%s vs %s (%.2f)", mb(c.PeakQueueBytes), mb(b.PeakQueueBytes), float64(c.PeakQueueBytes)/float64(max(b.PeakQueueBytes, 1))),
		2*c.PeakQueueBytes <= b.PeakQueueBytes)
	add("drops", "none where the baseline drops",
		fmt.Sprintf("%d vs %d packets", c.Drops, b.Drops), b.Drops > 0 && c.Drops == 0)
	add("utilisation", "≥ 95% of the bottleneck over its congested period",
		fmt.Sprintf("%.2f%% (baseline %.2f%%)", 100*c.Utilisation, 100*b.Utilisation), c.CongestedNs > 0 && c.Utilisation >= 0.95)
	return bars, nil
}

func (r *Result) find(sc, m string) (Row, bool) {
	for _, row := range r.Rows {
		if row.Scenario == sc && row.Mechanism == m {
			return row, true
		}
	}
	return Row{}, false
}

// WriteMarkdown writes the comparison table.
func (r *Result) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("| scenario | mechanism | bottleneck | feedback latency mean / max (senders) | reaction time mean / max | peak queue | drops at bottleneck / total | PFC pause time | utilisation congested / run | Jain | notifications sent | receiver CNPs |")
	if r.DCQCNRef != nil {
		b.WriteString(" " + DCQCNRefColumn + " |\n|---")
	} else {
		b.WriteString("\n")
	}
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		fb := "—"
		if row.FeedbackSenders > 0 {
			fb = fmt.Sprintf("%s / %s (%d, %s)", dur(row.FeedbackMeanNs), dur(float64(row.FeedbackMaxNs)), row.FeedbackSenders, row.FeedbackSignal)
		}
		react := "—"
		if row.ReactionMeanNs > 0 || row.ReactionMaxNs > 0 {
			react = fmt.Sprintf("%s / %s", dur(row.ReactionMeanNs), dur(float64(row.ReactionMaxNs)))
		}
		util := "—"
		if row.CongestedNs > 0 {
			util = fmt.Sprintf("%.2f%% over %s", 100*row.Utilisation, dur(float64(row.CongestedNs)))
		}
		fmt.Fprintf(&b, "| %s | %s | %s→%s | %s | %s | %s | %d / %d | %s | %s / %.2f%% | %.3f | %d | %d |",
			row.Scenario, row.Mechanism, row.BottleneckNode, row.BottleneckPeer, fb, react, mb(row.PeakQueueBytes),
			row.BottleneckDrops, row.Drops, dur(float64(row.PFCPausedNs)), util, 100*row.RunUtilisation, row.Jain,
			row.Notifications, row.RxCNPs)
		if r.DCQCNRef != nil {
			fmt.Fprintf(&b, " %s |", r.DCQCNRef.cell(row.Mechanism, false))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteFCTMarkdown writes the FCT slowdowns by flow size of the rows that
// have finite flows (nothing when none has).
func (r *Result) WriteFCTMarkdown(w io.Writer) error {
	var b strings.Builder
	for _, row := range r.Rows {
		if len(row.Buckets) == 0 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("| scenario | mechanism |")
			for _, bk := range row.Buckets {
				fmt.Fprintf(&b, " %s p50 / p99 (finished/flows) |", bk.Name)
			}
			if r.DCQCNRef != nil {
				b.WriteString(" " + DCQCNRefColumn + " |\n|---")
			} else {
				b.WriteString("\n")
			}
			b.WriteString("|---|---|---|---|---|\n")
		}
		fmt.Fprintf(&b, "| %s | %s |", row.Scenario, row.Mechanism)
		for _, bk := range row.Buckets {
			if bk.Finished == 0 {
				fmt.Fprintf(&b, " — (0/%d) |", bk.Flows)
				continue
			}
			fmt.Fprintf(&b, " %.2f / %.2f (%d/%d) |", bk.P50, bk.P99, bk.Finished, bk.Flows)
		}
		if r.DCQCNRef != nil {
			fmt.Fprintf(&b, " %s |", r.DCQCNRef.cell(row.Mechanism, true))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteBarsMarkdown writes bars as a table.
func WriteBarsMarkdown(w io.Writer, bars []Bar) error {
	var b strings.Builder
	b.WriteString("| bar | wanted | measured | holds |\n|---|---|---|---|\n")
	for _, x := range bars {
		holds := "yes"
		if !x.Holds {
			holds = "**no**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", x.Name, x.Want, x.Got, holds)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// CSVHeader is the header of WriteCSV.
var CSVHeader = []string{"scenario", "mechanism", "bottleneck_node", "bottleneck_port", "feedback_signal",
	"feedback_senders", "feedback_mean_ns", "feedback_max_ns", "reaction_mean_ns", "reaction_max_ns",
	"peak_queue_bytes", "bottleneck_drops", "drops", "congested_ns", "utilisation_congested", "utilisation_run",
	"jain", "long_haul_cnps", "receiver_cnps", "notifications", "pfc_paused_ns",
	"small_p50", "small_p99", "medium_p50", "medium_p99", "large_p50", "large_p99", "note"}

// WriteCSV writes one line per run.
func (r *Result) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, row := range r.Rows {
		// The signal is the one the meter looked for; without a sender
		// that got it (PFC alone: none) there is no feedback to name, and
		// the tables write —.
		signal := row.FeedbackSignal
		if row.FeedbackSenders == 0 {
			signal = ""
		}
		rec := []string{row.Scenario, row.Mechanism, row.BottleneckNode, row.BottleneckPeer, signal,
			strconv.Itoa(row.FeedbackSenders), f(row.FeedbackMeanNs), i(row.FeedbackMaxNs), f(row.ReactionMeanNs),
			i(row.ReactionMaxNs), i(row.PeakQueueBytes), i(row.BottleneckDrops), i(row.Drops), i(row.CongestedNs),
			f(row.Utilisation), f(row.RunUtilisation), f(row.Jain), i(row.LongHaulCNPs), i(row.RxCNPs),
			i(row.Notifications), i(row.PFCPausedNs)}
		for k := range 3 {
			// A bucket without a finished flow has no percentile (the
			// tables write —): empty, not 0, a slowdown no flow can have.
			if k < len(row.Buckets) && row.Buckets[k].Finished > 0 {
				rec = append(rec, f(row.Buckets[k].P50), f(row.Buckets[k].P99))
			} else {
				rec = append(rec, "", "")
			}
		}
		rec = append(rec, row.Note)
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// TableFiles names the files WriteFiles writes: results.md,
// results.csv, and fabrics.md when a run is on generated fabrics.
func (r *Result) TableFiles() []string {
	names := []string{"results.md", "results.csv"}
	if slices.ContainsFunc(r.Rows, func(row Row) bool { return row.Fabric != nil }) {
		names = append(names, "fabrics.md")
	}
	return names
}

// WriteFiles writes results.csv and results.md (the table only) into dir,
// and fabrics.md (WriteFabricMarkdown) when a run is on generated fabrics.
func (r *Result) WriteFiles(dir string) error {
	writers := map[string]func(io.Writer) error{"results.csv": r.WriteCSV, "results.md": r.WriteMarkdown, "fabrics.md": r.WriteFabricMarkdown}
	for _, name := range r.TableFiles() {
		write := writers[name]
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := write(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

func dur(ns float64) string {
	switch {
	case ns >= 1e6:
		return strconv.FormatFloat(ns/1e6, 'f', 3, 64) + " ms"
	case ns >= 1e3:
		return strconv.FormatFloat(ns/1e3, 'f', 3, 64) + " µs"
	}
	return strconv.FormatFloat(ns, 'f', 0, 64) + " ns"
}

func mb(b int64) string { return strconv.FormatFloat(float64(b)/1e6, 'f', 1, 64) + " MB" }

func ratio(a, b float64) string {
	if b <= 0 {
		return "∞"
	}
	return strconv.FormatFloat(a/b, 'f', 0, 64) + "×"
}
