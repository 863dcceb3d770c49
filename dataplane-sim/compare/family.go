package compare

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	famspec "github.com/lhcnp/lhcnp/dataplane-sim/family"
	"github.com/lhcnp/lhcnp/dataplane-sim/report"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/dataplane-sim/sim"
	"github.com/lhcnp/lhcnp/tuner/policy"
)

// EvalMechanisms are the rows of a family evaluation besides the static
// grid (run by EvalFamily itself, V_growth a share of the bottleneck's
// rate): the file's params (the draft's defaults in a generated scenario:
// the baseline that picks the bottleneck) and the tuned run.
var EvalMechanisms = []string{"long-haul-cnp", "long-haul-cnp" + TunerSuffix}

// The finer grid around the coarse grid's best setting (GridAlphas ×
// GridVGrowthShares of the bottleneck's rate: alpha in factors of 2,
// V_growth off, 0.1 and 1): alpha times and divided by √2, V_growth's
// share at its neighbours in FinerVGrowthShares (the coarse shares and the
// points between them).
var FinerVGrowthShares = []float64{0, 0.01, 0.03, 0.1, 0.3, 1}

// EvalTuner is the closed loop's configuration in a family evaluation:
// the policy with its online search on (search_after_rtt; rule search,
// docs/tuner.md "The search"), where the policy's default leaves it off.
var EvalTuner = scenario.Tuner{SearchAfterRTT: 0}

// evalTunerVariant is the tuner's row with EvalTuner's search.
func evalTunerVariant() Variant {
	v := tunerVariant
	v.Apply = func(ctx context.Context, sc *scenario.Scenario, scratch string) (*scenario.Scenario, string, error) {
		c, note, err := tunerVariant.Apply(ctx, sc, scratch)
		if err != nil {
			return nil, "", err
		}
		t := *c.Tuner
		if t.SearchAfterRTT == 0 {
			t.SearchAfterRTT = EvalTuner.SearchAfterRTT
		}
		c.Tuner = &t
		return c, note, nil
	}
	return v
}

// EvalRow is one scenario of a family evaluation.
type EvalRow struct {
	Draw famspec.Draw
	// Tuner is the tuned run's objective; Coarse the coarse grid's best
	// (CoarseSetting); Best the best of the coarse and the finer grid
	// (BestSetting); Lowest the lowest of every static setting run.
	Tuner, Coarse, Best        float64
	CoarseSetting, BestSetting string
	Statics                    int
	ChangesPerQueuePerSec      float64
	// ChangesPerCycle is ChangesPerQueuePerSec in judgement cycles (the
	// Set delay and the scenario's RTT_est, family.Judgement): a queue has
	// one commit pending at a time, judged a Set delay and a judge window
	// of at least one RTT_est after its decision, so it is at most 1 (and
	// one change over the run's length).
	ChangesPerCycle             float64
	Confirmed, RolledBack, Runs int64
	Bottleneck                  string
}

// Ratio is the tuner's objective over the best static setting's.
func (r EvalRow) Ratio() float64 {
	if r.Best <= 0 {
		return math.NaN()
	}
	return r.Tuner / r.Best
}

// BeatsEvery says whether the tuned run's objective is below every static
// setting's (coarse and finer grid): the step bar.
func (r EvalRow) BeatsEvery() bool { return r.Tuner < r.Best }

// EvalFamily runs every seed of the family's set: the tuned run, the
// coarse grid and the finer grid around its best, jobs scenarios at a
// time, under outDir/<scenario>/ (summaries and tuner.csv only).
func EvalFamily(ctx context.Context, s *famspec.Spec, set string, seeds []int64, outDir string, jobs int, progress func(string)) ([]EvalRow, error) {
	rows := make([]EvalRow, len(seeds))
	errs := make([]error, len(seeds))
	sem := make(chan struct{}, max(1, jobs))
	var wg sync.WaitGroup
	for i, seed := range seeds {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			rows[i], errs[i] = evalOne(ctx, s, set, seed, outDir)
			if progress != nil && errs[i] == nil {
				progress(fmt.Sprintf("%s seed %d: %s: tuner %.4f, best static %.4f (%s), ×%.3f", set, seed, rows[i].Draw.Short(),
					rows[i].Tuner, rows[i].Best, rows[i].BestSetting, rows[i].Ratio()))
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return rows, nil
}

func evalOne(ctx context.Context, s *famspec.Spec, set string, seed int64, outDir string) (EvalRow, error) {
	d, _, sc, err := s.Generate(set, seed)
	if err != nil {
		return EvalRow{}, err
	}
	o := Options{Mechanisms: EvalMechanisms, SummaryOnly: true, Variants: []Variant{evalTunerVariant()}}
	res, err := Run(ctx, []*scenario.Scenario{sc}, outDir, o)
	if err != nil {
		return EvalRow{}, err
	}
	t, ok := res.find(sc.Name, "long-haul-cnp"+TunerSuffix)
	if !ok {
		return EvalRow{}, fmt.Errorf("%w: %s with the tuner", ErrNoRun, sc.Name)
	}
	// J at the baseline's bottleneck, its delay in the WAN's round trip
	// (the nodes' RTT_est in a generated scenario: a far-end bottleneck's
	// own link is a microsecond long).
	node, peer := t.BottleneckNode, t.BottleneckPeer
	objective := func(sum *report.Summary) float64 {
		_, j := Objective(sum, node, peer, d.RTT, policy.DefaultWeights())
		return j
	}
	row := EvalRow{Draw: d, Tuner: objective(t.Summary), Best: math.Inf(1), Bottleneck: node + "→" + peer}
	dir := filepath.Join(outDir, sc.Name, "static")
	type point struct{ alpha, share float64 }
	done := map[point]bool{}
	var best point
	runAt := func(pt point) error {
		if done[pt] {
			return nil
		}
		done[pt] = true
		vg := scenario.Rate(pt.share * float64(d.Rate))
		name := gridName(pt.alpha, vg)
		sum, err := sim.Run(ctx, withStatic(sc, pt.alpha, vg), filepath.Join(dir, strings.NewReplacer("=", "-", ",", "_").Replace(name)),
			Options{SummaryOnly: true}.simOptions(false)...)
		if err != nil {
			return fmt.Errorf("compare: %s static %s: %w", sc.Name, name, err)
		}
		row.Statics++
		if j := objective(sum); j < row.Best {
			row.Best, row.BestSetting, best = j, name, pt
		}
		return nil
	}
	// The coarse grid, V_growth a share of the bottleneck's rate.
	for _, a := range GridAlphas {
		for _, sh := range GridVGrowthShares {
			if err := runAt(point{a, sh}); err != nil {
				return EvalRow{}, err
			}
		}
	}
	row.Coarse, row.CoarseSetting = row.Best, row.BestSetting
	// The finer grid around the coarse best.
	coarse := best
	si := slices.Index(FinerVGrowthShares, coarse.share)
	for _, a := range []float64{coarse.alpha / math.Sqrt2, coarse.alpha, coarse.alpha * math.Sqrt2} {
		a = math.Round(a*1000) / 1000
		for j := max(0, si-1); si >= 0 && j <= min(len(FinerVGrowthShares)-1, si+1); j++ {
			if err := runAt(point{a, FinerVGrowthShares[j]}); err != nil {
				return EvalRow{}, err
			}
		}
	}
	mc := t.Summary.MechanismCounters
	if secs := float64(t.Summary.DurationNs) / 1e9; secs > 0 {
		row.ChangesPerQueuePerSec = float64(mc["tuner_max_changes_per_queue"]) / secs
		row.ChangesPerCycle = row.ChangesPerQueuePerSec * famspec.Judgement(d.RTT).Seconds()
	}
	row.Runs, row.Confirmed, row.RolledBack = mc["tuner_changes"], mc["tuner_confirmed"], mc["tuner_rolled-back"]
	return row, nil
}

// EvalSummary are the bars over a set's rows.
type EvalSummary struct {
	N                    int
	MeanRatio            float64 // mean of the per-scenario ratios tuner / best static
	WorstTenthRatio      float64 // mean ratio of the worst tenth (at least one scenario)
	RatioOfMeans         float64 // mean tuner J over mean best static J
	Steps, StepsBeaten   int
	MaxChangesPerQueueS  float64
	MeanChangesPerQueueS float64
	MaxChangesPerCycle   float64 // the busiest queue's changes per judgement cycle (at most 1)
}

// Summarise computes the bars of docs/tuner.md over rows.
func Summarise(rows []EvalRow) EvalSummary {
	var s EvalSummary
	s.N = len(rows)
	if s.N == 0 {
		return s
	}
	ratios := make([]float64, 0, len(rows))
	var jt, jb float64
	for _, r := range rows {
		ratios = append(ratios, r.Ratio())
		jt += r.Tuner
		jb += r.Best
		if r.Draw.IsStep() {
			s.Steps++
			if r.BeatsEvery() {
				s.StepsBeaten++
			}
		}
		s.MaxChangesPerQueueS = max(s.MaxChangesPerQueueS, r.ChangesPerQueuePerSec)
		s.MeanChangesPerQueueS += r.ChangesPerQueuePerSec / float64(s.N)
		s.MaxChangesPerCycle = max(s.MaxChangesPerCycle, r.ChangesPerCycle)
	}
	for _, x := range ratios {
		s.MeanRatio += x / float64(len(ratios))
	}
	slices.SortFunc(ratios, func(a, b float64) int { return cmp.Compare(b, a) })
	k := max(1, len(ratios)/10)
	for _, x := range ratios[:k] {
		s.WorstTenthRatio += x / float64(k)
	}
	s.RatioOfMeans = jt / jb
	return s
}

// WriteEvalMarkdown writes a set's table and its bars.
func WriteEvalMarkdown(w io.Writer, set string, rows []EvalRow) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	s := Summarise(rows)
	holds := func(ok bool) string {
		if ok {
			return "holds"
		}
		return "**fails**"
	}
	p("| bar (%s seeds, %d scenarios) | want | measured | |\n|---|---|---|---|\n", set, s.N)
	p("| mean J, tuner / best static | ≤ 1.05 | %.3f | %s |\n", s.MeanRatio, holds(s.MeanRatio <= 1.05))
	p("| worst tenth, tuner / best static | ≤ 1.10 | %.3f | %s |\n", s.WorstTenthRatio, holds(s.WorstTenthRatio <= 1.10))
	p("| step scenarios where the tuner beats every static setting | all | %d of %d | %s |\n", s.StepsBeaten, s.Steps, holds(s.StepsBeaten == s.Steps))
	p("| changes per queue per second (the busiest queue of each run) | bounded | mean %.1f, max %.1f | |\n", s.MeanChangesPerQueueS, s.MaxChangesPerQueueS)
	p("| … per judgement cycle (Set delay + RTT_est), the busiest queue of the set | ≤ 1 | %.2f | %s |\n", s.MaxChangesPerCycle, holds(s.MaxChangesPerCycle <= 1))
	p("| mean tuner J / mean best static J | | %.3f | |\n\n", s.RatioOfMeans)
	p("| seed | scenario | bottleneck | tuner J | coarse best (setting) | finer best (setting) | tuner / best | beats every static | changes per queue per s (confirmed / rolled back) | per cycle |\n")
	p("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		beats := "—"
		if r.Draw.IsStep() {
			beats = "no"
			if r.BeatsEvery() {
				beats = "yes"
			}
		}
		p("| %d | %s | %s | %.4f | %.4f (%s) | %.4f (%s) | %.3f | %s | %.1f (%d / %d) | %.2f |\n", r.Draw.Seed, r.Draw.Short(), r.Bottleneck,
			r.Tuner, r.Coarse, r.CoarseSetting, r.Best, r.BestSetting, r.Ratio(), beats, r.ChangesPerQueuePerSec, r.Confirmed, r.RolledBack, r.ChangesPerCycle)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
