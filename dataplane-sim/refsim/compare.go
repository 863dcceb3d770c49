package refsim

import (
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strings"
)

// Figure is one compared quantity of a scenario: ours, the reference's,
// and the tolerance on their relative difference (Tol 0: must be equal).
type Figure struct {
	Name      string
	Ours, Ref float64
	Tol       float64
	// Abs marks a figure whose difference is already relative (a distance
	// between series): Diff is Ours itself, Ref is 0.
	Abs bool
}

// Diff is the relative difference (ours - ref) / ref; 0 when both are 0,
// +Inf when only the reference's is 0.
func (f Figure) Diff() float64 {
	if f.Abs {
		return f.Ours
	}
	switch {
	case f.Ours == f.Ref:
		return 0
	case f.Ref == 0:
		return math.Inf(1)
	}
	return (f.Ours - f.Ref) / f.Ref
}

// Within reports whether the difference is within the tolerance.
func (f Figure) Within() bool { return math.Abs(f.Diff()) <= f.Tol+1e-12 }

// The tolerances, set before the comparison from the examples
// (steady-state queue and FCT p50/p99 within 10 %) and the bound on what
// the two frame formats can explain (utilisation: our frame carries 14
// bytes more header than the reference's 1048-byte frame, 1.3 %).
const (
	tolQueue       = 0.10
	tolQueueSeries = 0.20
	tolUtil        = 0.02
	tolFairness    = 0.05
	tolPFC         = 0.10
	tolFCT         = 0.10
	// tolFirstCutNs is the "within one CNP interval" for the time
	// to the first rate cut: the compared scenarios echo every mark (no
	// CNP interval), so one rate-decrease interval (4 µs), the step at
	// which the reference checks for a cut.
	tolFirstCutNs = 4000
)

// Compare computes the figures of one scenario from several runs of each
// simulator (seeds for ours, RngRun for the reference): run-averaged where
// a figure is per run, pooled where it is a percentile.
func Compare(ours, ref []*Summary) []Figure {
	lineRate := 0.0 // the busiest step's total throughput of the reference: the bottleneck's rate
	for _, s := range ref {
		for i := range s.QueueBytes {
			lineRate = max(lineRate, total(s, i))
		}
	}
	busy := busySteps(ref)
	qo, qr := avgSeries(ours), avgSeries(ref)
	var dist, refMean float64
	for _, i := range busy {
		dist += math.Abs(qo[i] - qr[i])
		refMean += qr[i]
	}
	figs := []Figure{
		{Name: "queue, mean while busy (B)", Ours: meanAt(qo, busy), Ref: meanAt(qr, busy), Tol: tolQueue},
		{Name: "queue series distance (mean abs. difference / ref. mean)", Ours: dist / max(refMean, 1), Tol: tolQueueSeries, Abs: true},
		{Name: "bottleneck utilisation while busy", Ours: runMean(ours, func(s *Summary) float64 { return util(s, busy, lineRate) }),
			Ref: runMean(ref, func(s *Summary) float64 { return util(s, busy, lineRate) }), Tol: tolUtil},
		{Name: "Jain fairness of active flows while busy", Ours: runMean(ours, func(s *Summary) float64 { return fairness(s, busy) }),
			Ref: runMean(ref, func(s *Summary) float64 { return fairness(s, busy) }), Tol: tolFairness},
		{Name: "PFC pause time (ns)", Ours: runMean(ours, func(s *Summary) float64 { return float64(s.PFCPauseNs) }),
			Ref: runMean(ref, func(s *Summary) float64 { return float64(s.PFCPauseNs) }), Tol: tolPFC},
		{Name: "drops", Ours: runMean(ours, func(s *Summary) float64 { return float64(s.Drops) }),
			Ref: runMean(ref, func(s *Summary) float64 { return float64(s.Drops) })},
	}
	// The time to the first cut over the runs whose reference run had its
	// rate log (the runs made with the logging build), ours with the same
	// seeds.
	var oc, rc []*Summary
	for i, r := range ref {
		if i < len(ours) && slices.ContainsFunc(r.Flows, func(f FlowSummary) bool { return f.FirstCutNs > 0 }) {
			oc, rc = append(oc, ours[i]), append(rc, r)
		}
	}
	if co, cr := meanFirstCut(oc), meanFirstCut(rc); cr > 0 {
		figs = append(figs, Figure{Name: "time to first rate cut, mean over flows (ns)", Ours: co, Ref: cr, Tol: tolFirstCutNs / cr})
	}
	fo, fr := pooledFCT(ours), pooledFCT(ref)
	if len(fr) > 0 {
		figs = append(figs,
			Figure{Name: "FCT p50 (ns)", Ours: pct(fo, 0.50), Ref: pct(fr, 0.50), Tol: tolFCT},
			Figure{Name: "FCT p99 (ns)", Ours: pct(fo, 0.99), Ref: pct(fr, 0.99), Tol: tolFCT})
	}
	return figs
}

func total(s *Summary, i int) float64 {
	var t float64
	for _, f := range s.Flows {
		if i < len(f.ThroughputBitsPerSec) {
			t += f.ThroughputBitsPerSec[i]
		}
	}
	return t
}

// busySteps are the steps in which the reference's bottleneck carried
// data in every run.
func busySteps(ref []*Summary) []int {
	var out []int
	if len(ref) == 0 {
		return nil
	}
	for i := range ref[0].QueueBytes {
		all := true
		for _, s := range ref {
			all = all && i < len(s.QueueBytes) && total(s, i) > 0
		}
		if all {
			out = append(out, i)
		}
	}
	return out
}

func avgSeries(ss []*Summary) []float64 {
	var out []float64
	for _, s := range ss {
		if out == nil {
			out = make([]float64, len(s.QueueBytes))
		}
		for i := range min(len(out), len(s.QueueBytes)) {
			out[i] += s.QueueBytes[i] / float64(len(ss))
		}
	}
	return out
}

func meanAt(xs []float64, idx []int) float64 {
	if len(idx) == 0 {
		return 0
	}
	var t float64
	for _, i := range idx {
		if i < len(xs) {
			t += xs[i]
		}
	}
	return t / float64(len(idx))
}

func runMean(ss []*Summary, f func(*Summary) float64) float64 {
	if len(ss) == 0 {
		return 0
	}
	var t float64
	for _, s := range ss {
		t += f(s)
	}
	return t / float64(len(ss))
}

func util(s *Summary, busy []int, lineRate float64) float64 {
	if lineRate == 0 || len(busy) == 0 {
		return 0
	}
	var t float64
	for _, i := range busy {
		t += min(total(s, i), lineRate)
	}
	return t / float64(len(busy)) / lineRate
}

// fairness is Jain's index over the flows with throughput in a step,
// averaged over the busy steps.
func fairness(s *Summary, busy []int) float64 {
	var acc float64
	n := 0
	for _, i := range busy {
		var sum, sq float64
		k := 0
		for _, f := range s.Flows {
			if i < len(f.ThroughputBitsPerSec) && f.ThroughputBitsPerSec[i] > 0 {
				x := f.ThroughputBitsPerSec[i]
				sum, sq, k = sum+x, sq+x*x, k+1
			}
		}
		if k > 0 {
			acc += sum * sum / (float64(k) * sq)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return acc / float64(n)
}

func pooledFCT(ss []*Summary) []float64 {
	var out []float64
	for _, s := range ss {
		for _, f := range s.Flows {
			if f.FCTNs > 0 {
				out = append(out, float64(f.FCTNs))
			}
		}
	}
	slices.Sort(out)
	return out
}

// pct is the nearest-rank percentile of sorted xs.
func pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return xs[max(0, int(math.Ceil(p*float64(len(xs))))-1)]
}

// LoadRuns reads dir/run*.json in run order.
func LoadRuns(dir string) ([]*Summary, error) {
	return loadRuns(nil, dir)
}

// loadRuns is LoadRuns in fsys (nil: the operating system's files).
func loadRuns(fsys fs.FS, dir string) ([]*Summary, error) {
	paths, err := glob(fsys, join(fsys, dir, "run*.json"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%s: no run*.json", dir)
	}
	slices.SortFunc(paths, func(a, b string) int { return runNumber(a) - runNumber(b) })
	var out []*Summary
	for _, p := range paths {
		s, err := readSummary(fsys, p)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func runNumber(path string) int {
	var n int
	_, _ = fmt.Sscanf(strings.TrimPrefix(filepath.Base(path), "run"), "%d", &n)
	return n
}

// Table formats figures as Markdown rows: scenario, figure, ours,
// reference, difference, tolerance, and whether it is within.
func Table(scenario string, figs []Figure) string {
	var b strings.Builder
	for _, f := range figs {
		ok := "yes"
		if !f.Within() {
			ok = "**no**"
		}
		ref := fmt.Sprintf("%.4g", f.Ref)
		if f.Abs {
			ref = "—"
		}
		fmt.Fprintf(&b, "| %s | %s | %.4g | %s | %+.1f %% | %.0f %% | %s |\n", scenario, f.Name, f.Ours, ref, 100*f.Diff(), 100*f.Tol, ok)
	}
	return b.String()
}

// meanFirstCut is the mean time to the first rate cut over the flows of
// all runs that cut; 0 when none did (or the runs have no rate log).
func meanFirstCut(ss []*Summary) float64 {
	var t float64
	n := 0
	for _, s := range ss {
		for _, f := range s.Flows {
			if f.FirstCutNs > 0 {
				t += float64(f.FirstCutNs)
				n++
			}
		}
	}
	if n == 0 {
		return 0
	}
	return t / float64(n)
}
