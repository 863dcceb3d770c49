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

// EvalOptions are a family evaluation's measuring protocol.
type EvalOptions struct {
	// SimSeeds repeats every run (the tuned run, each static setting of
	// the coarse and the finer grid) at simulation seeds k = 0..SimSeeds-1
	// (famspec.SimSeed); a setting's J is the mean over them and the best
	// static setting is chosen on that mean. 0 or 1: one run each.
	SimSeeds int
	// Remeasure runs the chosen best static setting once more at the
	// disjoint simulation seed k = SimSeeds (EvalRow.Remeasured): the
	// best of many noisy runs, measured again, without the winner's
	// curse. Always on when SimSeeds > 1.
	Remeasure bool
	// Oracle also runs the oracle floor (EvalRow.Oracle): the best static
	// setting applied at the tuned run's first decision on each queue.
	Oracle bool
	// TunerPolicy, when set, is the tuned runs' policy configuration in
	// place of its defaults (Options.TunerPolicy).
	TunerPolicy *policy.Config
}

func (o EvalOptions) simSeeds() int { return max(1, o.SimSeeds) }

func (o EvalOptions) remeasure() bool { return o.Remeasure || o.simSeeds() > 1 }

// EvalRow is one scenario of a family evaluation.
type EvalRow struct {
	Draw famspec.Draw
	// Tuner is the tuned run's objective; Coarse the coarse grid's best
	// (CoarseSetting); Best the best of the coarse and the finer grid
	// (BestSetting); each the mean over the SimSeeds simulation seeds.
	Tuner, Coarse, Best        float64
	CoarseSetting, BestSetting string
	Statics                    int
	// SimSeeds is how many simulation seeds each J is the mean of;
	// TunerJs and BestJs are the tuned run's and the best static
	// setting's J at each (k = 0..SimSeeds-1), TunerSE and BestSE the
	// standard errors of their means (0 at one seed).
	SimSeeds        int
	TunerJs, BestJs []float64
	TunerSE, BestSE float64
	// Remeasured is the best static setting's J at simulation seed
	// k = SimSeeds, a seed its choice never saw (NaN: not measured).
	Remeasured float64
	// Oracle is the oracle floor's J, the mean over the SimSeeds
	// simulation seeds (OracleJs at each, OracleSE its standard error;
	// OracleJs nil: not measured): the tuned run with the policy replaced
	// by the best static setting (BestSetting), set at each queue's first
	// decision through the Set delay and never changed (scenario.Tuner's
	// Fixed). What a tuner that starts from the switch's configuration
	// and sees only telemetry can reach at best with a single setting: the
	// run until its first Set takes effect is the switch's configuration's.
	Oracle   float64
	OracleJs []float64
	OracleSE float64
	// Untuned is the file's params' run (the draft's defaults in a
	// generated scenario, no tuner) at the row's bottleneck, and Grid the
	// coarse grid's J in GridSettings' order, each the mean over the
	// SimSeeds simulation seeds (Untuned not above 0, Grid nil: not
	// measured, as in a tuned-only run or a table read back). What one fixed setting for a
	// whole set does (Summarise's FixedSetting) is read from Grid.
	Untuned               float64
	Grid                  []float64
	ChangesPerQueuePerSec float64
	// ChangesPerCycle is ChangesPerQueuePerSec in judgement cycles (the
	// Set delay and the scenario's RTT_est, family.Judgement): a queue has
	// one commit pending at a time, judged a Set delay and a judge window
	// of at least one RTT_est after its decision, so it is at most 1 (and
	// one change over the run's length).
	ChangesPerCycle             float64
	Confirmed, RolledBack, Runs int64
	Bottleneck                  string
	// Scenario is the draw in a few words as a stored evaluation gave it
	// (ReadEvalCSV, EvalRowsFromMarkdown: their Draw holds the seed and
	// the set alone); empty in a row just measured (Draw.Short()).
	Scenario string
}

// Name is the row's draw in a few words.
func (r EvalRow) Name() string {
	if r.Scenario != "" {
		return r.Scenario
	}
	return r.Draw.Short()
}

// Ratio is the tuner's objective over the best static setting's.
func (r EvalRow) Ratio() float64 {
	if r.Best <= 0 {
		return math.NaN()
	}
	return r.Tuner / r.Best
}

// RemeasuredRatio is the tuner's objective over the best static
// setting's re-measured at a disjoint simulation seed (NaN: not
// measured).
func (r EvalRow) RemeasuredRatio() float64 {
	if !(r.Remeasured > 0) {
		return math.NaN()
	}
	return r.Tuner / r.Remeasured
}

// HasOracle says whether the row's oracle floor was measured.
func (r EvalRow) HasOracle() bool { return len(r.OracleJs) > 0 }

// OracleRatio is the oracle floor's objective over the best static
// setting's (NaN: not measured).
func (r EvalRow) OracleRatio() float64 {
	if !r.HasOracle() || r.Best <= 0 {
		return math.NaN()
	}
	return r.Oracle / r.Best
}

// OracleRemeasuredRatio is the oracle floor's objective over the best
// static setting's re-measured (NaN: either not measured).
func (r EvalRow) OracleRemeasuredRatio() float64 {
	if !r.HasOracle() || !(r.Remeasured > 0) {
		return math.NaN()
	}
	return r.Oracle / r.Remeasured
}

// BeatsEvery says whether the tuned run's objective is below every static
// setting's (coarse and finer grid): the step bar.
func (r EvalRow) BeatsEvery() bool { return r.Tuner < r.Best }

// EvalFamily runs every seed of the family's set: the tuned run, the
// coarse grid and the finer grid around its best, each at o's simulation
// seeds, jobs scenarios at a time, under outDir/<scenario>/ (summaries and
// tuner.csv only; simulation seed k > 0 under outDir/sim-seed-k/).
func EvalFamily(ctx context.Context, s *famspec.Spec, set string, seeds []int64, outDir string, jobs int, o EvalOptions, progress func(string)) ([]EvalRow, error) {
	return evalEach(len(seeds), jobs, o.remeasure(), set, progress, func(i int) (EvalRow, error) {
		rs, err := evalSeed(ctx, s, set, seeds[i], outDir, []EvalOptions{o}, "", "")
		if err != nil {
			return EvalRow{}, err
		}
		return rs[0], nil
	})
}

// evalEach evaluates n scenarios with eval, jobs at a time, and reports
// each row as it ends (with its re-measured best static J if remeasured).
func evalEach(n, jobs int, remeasured bool, set string, progress func(string), eval func(i int) (EvalRow, error)) ([]EvalRow, error) {
	rows := make([]EvalRow, n)
	errs := make([]error, n)
	sem := make(chan struct{}, max(1, jobs))
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			rows[i], errs[i] = eval(i)
			if errs[i] != nil {
				return
			}
			if progress != nil {
				line := fmt.Sprintf("%s seed %d: %s: tuner %.4f, best static %.4f (%s), ×%.3f", set, rows[i].Draw.Seed, rows[i].Draw.Short(),
					rows[i].Tuner, rows[i].Best, rows[i].BestSetting, rows[i].Ratio())
				if remeasured {
					line += fmt.Sprintf("; re-measured %.4f, ×%.3f", rows[i].Remeasured, rows[i].RemeasuredRatio())
				}
				progress(line)
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

// EvalTuned is EvalFamily's tuned runs alone, against a stored
// evaluation of the same seeds (base: its rows, ReadEvalCSV): each
// seed's tuned run at o's simulation seeds, run and measured as
// EvalFamily runs and measures it, J at the base row's bottleneck; the
// static grid is not run, its columns (coarse and finer best, their J at
// each simulation seed, the re-measured J) are the base row's. A seed of
// a retired held-out set is generated as the test set's (the draw is the
// seed's alone); a seed of the family's fresh held-out set is refused
// (DevSpec). The development loop of docs/tuner.md, `make tuner-dev`.
func EvalTuned(ctx context.Context, s *famspec.Spec, set string, base []EvalRow, outDir string, jobs int, o EvalOptions, progress func(string)) ([]EvalRow, error) {
	for _, b := range base {
		if !strings.Contains(b.Bottleneck, "→") {
			return nil, fmt.Errorf("compare: seed %d: bottleneck %q is not NODE→PEER", b.Draw.Seed, b.Bottleneck)
		}
	}
	return evalEach(len(base), jobs, len(base) > 0 && !math.IsNaN(base[0].Remeasured), set, progress, func(i int) (EvalRow, error) {
		b := base[i]
		ds, err := DevSpec(s, set, b.Draw.Seed)
		if err != nil {
			return EvalRow{}, err
		}
		rs, err := evalSeed(ctx, ds, set, b.Draw.Seed, outDir, []EvalOptions{o}, b.Bottleneck, b.BestSetting)
		if err != nil {
			return EvalRow{}, err
		}
		r := rs[0]
		if b.Scenario != "" && b.Scenario != r.Draw.Short() {
			return EvalRow{}, fmt.Errorf("compare: seed %d: the stored evaluation's scenario %q is not the family's draw %q (another family spec?)", b.Draw.Seed, b.Scenario, r.Draw.Short())
		}
		r.Coarse, r.CoarseSetting, r.Best, r.BestSetting = b.Coarse, b.CoarseSetting, b.Best, b.BestSetting
		r.BestJs, r.BestSE, r.Remeasured, r.Statics = b.BestJs, b.BestSE, b.Remeasured, b.Statics
		r.Untuned, r.Grid = b.Untuned, b.Grid // the untuned run is the baseline's, as the static grid
		return r, nil
	})
}

// DevSpec is the spec that generates seed of set for development runs
// (EvalTuned): s itself for a seed of its train set; for set "test", a
// copy whose test set is the retired set that holds seed. A seed of the
// family's test set (the fresh held-out set, read once by the full
// evaluation) and a seed of no set are errors.
func DevSpec(s *famspec.Spec, set string, seed int64) (*famspec.Spec, error) {
	in := func(r famspec.Seeds) bool { return seed >= r.From && seed <= r.To }
	switch set {
	case "train":
		if in(s.Train) {
			return s, nil
		}
		return nil, fmt.Errorf("seed %d is not in %s's train_seeds %d..%d", seed, s.File, s.Train.From, s.Train.To)
	case "test":
		if in(s.Test) {
			return nil, fmt.Errorf("seed %d is of %s's test_seeds %d..%d, the fresh held-out set: it is read once, by the full evaluation (`make tuner-eval`), never in development; retire it first", seed, s.File, s.Test.From, s.Test.To)
		}
		for _, r := range s.Retired {
			if in(r) {
				c := *s
				c.Test = r
				return &c, nil
			}
		}
		return nil, fmt.Errorf("seed %d is in no retired held-out set of %s (retired_seeds)", seed, s.File)
	}
	return nil, fmt.Errorf("no seed set %q (want train or test)", set)
}

// evalSeed evaluates one scenario under each protocol of protos, sharing
// the runs they have in common (a run is a setting at a simulation seed;
// the same run always gives the same J): one row per protocol. With
// bottleneck ("NODE→PEER", a stored evaluation's) it runs the tuned runs
// alone and measures their J there (EvalTuned): the baseline mechanism
// that picks the bottleneck and the static grid are not run, and the
// rows' static columns are left empty; the oracle floor (EvalOptions.Oracle)
// is then of bestSetting, the stored evaluation's best.
func evalSeed(ctx context.Context, s *famspec.Spec, set string, seed int64, outDir string, protos []EvalOptions, bottleneck, bestSetting string) ([]EvalRow, error) {
	type point struct{ alpha, share float64 }
	type key struct {
		pt    point
		k     int
		tuned bool
	}
	// The tuned runs are shared by the protocols: one policy for all.
	var tp *policy.Config
	for i, o := range protos {
		if i == 0 {
			tp = o.TunerPolicy
		} else if o.TunerPolicy != tp {
			return nil, fmt.Errorf("compare: seed %d: protocols with different tuner policies share the tuned runs", seed)
		}
	}
	var d famspec.Draw
	node, peer, tunedOnly := strings.Cut(bottleneck, "→")
	var mc map[string]int64
	var durNs int64
	js := map[key]float64{}
	untuned := map[int]float64{} // the file's params' J at simulation seed k
	scs := map[int]*scenario.Scenario{}
	scenarioAt := func(k int) (*scenario.Scenario, error) {
		if sc, ok := scs[k]; ok {
			return sc, nil
		}
		dk, _, sc, err := s.GenerateAt(set, seed, k)
		if err != nil {
			return nil, err
		}
		if k == 0 {
			d = dk
		}
		scs[k] = sc
		return sc, nil
	}
	dirAt := func(k int) string {
		if k == 0 {
			return outDir
		}
		return filepath.Join(outDir, fmt.Sprintf("sim-seed-%d", k))
	}
	objective := func(sum *report.Summary) float64 {
		_, j := Objective(sum, node, peer, d.RTT, policy.DefaultWeights())
		return j
	}
	// The tuned run at k = 0 first: its bottleneck is J's for every run.
	tunedAt := func(k int) (float64, error) {
		if j, ok := js[key{k: k, tuned: true}]; ok {
			return j, nil
		}
		sc, err := scenarioAt(k)
		if err != nil {
			return 0, err
		}
		mechs := EvalMechanisms
		if tunedOnly {
			mechs = EvalMechanisms[1:]
		}
		o := Options{Mechanisms: mechs, SummaryOnly: true, Variants: []Variant{evalTunerVariant()}, TunerPolicy: tp}
		res, err := Run(ctx, []*scenario.Scenario{sc}, dirAt(k), o)
		if err != nil {
			return 0, err
		}
		t, ok := res.find(sc.Name, "long-haul-cnp"+TunerSuffix)
		if !ok {
			return 0, fmt.Errorf("%w: %s with the tuner", ErrNoRun, sc.Name)
		}
		if k == 0 {
			// J at the baseline's bottleneck, its delay in the WAN's round
			// trip (the nodes' RTT_est in a generated scenario: a far-end
			// bottleneck's own link is a microsecond long).
			if !tunedOnly {
				node, peer = t.BottleneckNode, t.BottleneckPeer
			}
			mc, durNs = t.Summary.MechanismCounters, t.Summary.DurationNs
		}
		j := objective(t.Summary)
		js[key{k: k, tuned: true}] = j
		if u, ok := res.find(sc.Name, "long-haul-cnp"); ok && !tunedOnly {
			untuned[k] = objective(u.Summary)
		}
		return j, nil
	}
	if _, err := tunedAt(0); err != nil {
		return nil, err
	}
	// The oracle floor of a static setting at simulation seed k: the tuned
	// run (its variant, search and Set delay) with the policy replaced by
	// the setting at each queue's first decision (scenario.Tuner's Fixed).
	oracleAt := func(setting string, k int) (float64, error) {
		alpha, vg, err := parseGridName(setting)
		if err != nil {
			return 0, fmt.Errorf("compare: seed %d: the oracle's setting: %w", seed, err)
		}
		sc, err := scenarioAt(k)
		if err != nil {
			return 0, err
		}
		r, err := runOracle(ctx, sc, dirAt(k), alpha, vg)
		if err != nil {
			return 0, err
		}
		return objective(r.Summary), nil
	}
	staticAt := func(pt point, k int) (float64, error) {
		if j, ok := js[key{pt: pt, k: k}]; ok {
			return j, nil
		}
		sc, err := scenarioAt(k)
		if err != nil {
			return 0, err
		}
		vg := scenario.Rate(pt.share * float64(d.Rate))
		name := gridName(pt.alpha, vg)
		dir := filepath.Join(dirAt(k), sc.Name, "static", strings.NewReplacer("=", "-", ",", "_").Replace(name))
		sum, err := sim.Run(ctx, withStatic(sc, pt.alpha, vg), dir, Options{SummaryOnly: true}.simOptions(false)...)
		if err != nil {
			return 0, fmt.Errorf("compare: %s static %s: %w", sc.Name, name, err)
		}
		j := objective(sum)
		js[key{pt: pt, k: k}] = j
		return j, nil
	}
	// at is a run's J at each of n simulation seeds.
	at := func(n int, f func(k int) (float64, error)) ([]float64, error) {
		out := make([]float64, n)
		for k := range n {
			j, err := f(k)
			if err != nil {
				return nil, err
			}
			out[k] = j
		}
		return out, nil
	}
	var rows []EvalRow
	for _, o := range protos {
		n := o.simSeeds()
		tj, err := at(n, tunedAt)
		if err != nil {
			return nil, err
		}
		row := EvalRow{Draw: d, Tuner: mean(tj), TunerJs: tj, TunerSE: meanStdErr(tj), SimSeeds: n,
			Best: math.Inf(1), Remeasured: math.NaN(), Untuned: math.NaN(), Bottleneck: node + "→" + peer}
		if len(untuned) >= n {
			uj := make([]float64, n)
			for k := range n {
				uj[k] = untuned[k]
			}
			row.Untuned = mean(uj)
		}
		oracle := func(setting string) error {
			if !o.Oracle {
				return nil
			}
			if row.OracleJs, err = at(n, func(k int) (float64, error) { return oracleAt(setting, k) }); err != nil {
				return err
			}
			row.Oracle, row.OracleSE = mean(row.OracleJs), meanStdErr(row.OracleJs)
			return nil
		}
		if tunedOnly {
			row.Best = math.NaN()
			if err := oracle(bestSetting); err != nil {
				return nil, err
			}
			changes(&row, d, mc, durNs)
			rows = append(rows, row)
			continue
		}
		done := map[point]bool{}
		var best point
		runAt := func(pt point) error {
			if done[pt] {
				return nil
			}
			done[pt] = true
			sj, err := at(n, func(k int) (float64, error) { return staticAt(pt, k) })
			if err != nil {
				return err
			}
			row.Statics++
			if j := mean(sj); j < row.Best {
				row.Best, row.BestSetting, best = j, gridName(pt.alpha, scenario.Rate(pt.share*float64(d.Rate))), pt
				row.BestJs, row.BestSE = sj, meanStdErr(sj)
			}
			return nil
		}
		// The coarse grid, V_growth a share of the bottleneck's rate.
		for _, a := range GridAlphas {
			for _, sh := range GridVGrowthShares {
				if err := runAt(point{a, sh}); err != nil {
					return nil, err
				}
				gj := make([]float64, n)
				for k := range n {
					gj[k] = js[key{pt: point{a, sh}, k: k}]
				}
				row.Grid = append(row.Grid, mean(gj))
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
					return nil, err
				}
			}
		}
		if o.remeasure() {
			if row.Remeasured, err = staticAt(best, n); err != nil {
				return nil, err
			}
		}
		if err := oracle(row.BestSetting); err != nil {
			return nil, err
		}
		changes(&row, d, mc, durNs)
		rows = append(rows, row)
	}
	return rows, nil
}

// OracleSuffix names the oracle floor's runs (EvalRow.Oracle): the
// tuned row with scenario.Tuner's Fixed, under each simulation seed's
// directory as <scenario>/long-haul-cnp+oracle.
const OracleSuffix = "+oracle"

// runOracle runs the oracle floor of the static setting (alpha, vg) on
// sc into dir: the tuned run (its variant, search and Set delay) with the
// policy replaced by the setting at each queue's first decision
// (scenario.Tuner's Fixed).
func runOracle(ctx context.Context, sc *scenario.Scenario, dir string, alpha float64, vg scenario.Rate) (Row, error) {
	name := "long-haul-cnp" + OracleSuffix
	v := evalTunerVariant()
	tuned := v.Apply
	v.Name, v.Apply = name, func(ctx context.Context, sc *scenario.Scenario, scratch string) (*scenario.Scenario, string, error) {
		c, note, err := tuned(ctx, sc, scratch)
		if err != nil {
			return nil, "", err
		}
		t := *c.Tuner
		t.Fixed = &scenario.TunerFixed{Alpha: alpha, VGrowth: vg}
		c.Tuner = &t
		return c, note, nil
	}
	res, err := Run(ctx, []*scenario.Scenario{sc}, dir, Options{Mechanisms: []string{name}, SummaryOnly: true, Variants: []Variant{v}})
	if err != nil {
		return Row{}, err
	}
	r, ok := res.find(sc.Name, name)
	if !ok {
		return Row{}, fmt.Errorf("%w: %s %s", ErrNoRun, sc.Name, name)
	}
	return r, nil
}

// parseGridName reads gridName's "alpha=A,v_growth=RATE|off".
func parseGridName(s string) (float64, scenario.Rate, error) {
	a, v, ok := strings.Cut(s, ",")
	as, ok1 := strings.CutPrefix(a, "alpha=")
	vs, ok2 := strings.CutPrefix(v, "v_growth=")
	if !ok || !ok1 || !ok2 {
		return 0, 0, fmt.Errorf("setting %q is not alpha=A,v_growth=RATE", s)
	}
	alpha, err := strconv.ParseFloat(as, 64)
	if err != nil || !(alpha > 0) {
		return 0, 0, fmt.Errorf("setting %q: alpha %q is not a positive number", s, as)
	}
	if vs == "off" {
		return alpha, 0, nil
	}
	vg, err := scenario.ParseRate(vs)
	if err != nil {
		return 0, 0, fmt.Errorf("setting %q: %w", s, err)
	}
	return alpha, vg, nil
}

// changes fills a row's changes and judgements from the tuned run at the
// file's seed (its mechanism counters mc and length durNs).
func changes(row *EvalRow, d famspec.Draw, mc map[string]int64, durNs int64) {
	if secs := float64(durNs) / 1e9; secs > 0 {
		row.ChangesPerQueuePerSec = float64(mc["tuner_max_changes_per_queue"]) / secs
		row.ChangesPerCycle = row.ChangesPerQueuePerSec * famspec.Judgement(d.RTT).Seconds()
	}
	row.Runs, row.Confirmed, row.RolledBack = mc["tuner_changes"], mc["tuner_confirmed"], mc["tuner_rolled-back"]
}

func mean(xs []float64) float64 {
	var m float64
	for _, x := range xs {
		m += x / float64(len(xs))
	}
	return m
}

// meanStdErr is the standard error of xs's mean: the sample standard
// deviation (n − 1) over √n; 0 for fewer than two.
func meanStdErr(xs []float64) float64 {
	n := float64(len(xs))
	if n < 2 {
		return 0
	}
	m := mean(xs)
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss/(n-1)) / math.Sqrt(n)
}

// Issue #24's bars on a seed set: the tuner's J over each scenario's best
// static setting, at most BarMeanRatio on the mean and BarWorstTenthRatio
// on the worst tenth.
const (
	BarMeanRatio       = 1.05
	BarWorstTenthRatio = 1.10
)

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
	// SimSeeds is the rows' simulation seeds per J (the fewest); with two
	// or more, MeanRatioSE is the standard error of MeanRatio across them
	// (the set's mean of tuner / best-setting J at each seed k).
	SimSeeds    int
	MeanRatioSE float64
	// Remeasured says every row has the best static setting re-measured
	// at a disjoint simulation seed; then the mean and worst tenth of
	// tuner / that J.
	Remeasured                          bool
	MeanRemeasuredRatio, WorstTenthReme float64
	// Oracle says every row has its oracle floor (EvalRow.Oracle); then
	// the mean and worst tenth of oracle / best static, and of oracle /
	// best static re-measured where Remeasured.
	Oracle                                       bool
	MeanOracleRatio, WorstTenthOracle            float64
	MeanOracleRemeasured, WorstTenthOracleRemeas float64
	// Untuned says every row has the untuned run's J (EvalRow.Untuned);
	// then the mean and worst tenth of untuned / best static, and of
	// tuner / untuned: what running the tuner does against leaving the
	// switch at its defaults.
	Untuned                                  bool
	MeanUntunedRatio, WorstTenthUntuned      float64
	MeanTunerOverUntuned, WorstTenthOverUntd float64
	// Fixed says every row has the coarse grid (EvalRow.Grid); then
	// FixedSetting is the one coarse setting (GridSettings) with the
	// lowest mean ratio to each scenario's best over the set, chosen in
	// hindsight over the whole set (what an operator who picks one
	// setting for every port could do at best), with the mean and worst
	// tenth of its ratio to the best static setting, and of tuner / it.
	Fixed                                   bool
	FixedSetting                            string
	MeanFixedRatio, WorstTenthFixed         float64
	MeanTunerOverFixed, WorstTenthOverFixed float64
}

// GridSettings names the coarse grid's settings in EvalRow.Grid's order,
// V_growth as a share of the bottleneck's rate R: alpha=0.25,v_growth=off,
// alpha=0.25,v_growth=0.1R, ...
func GridSettings() []string {
	var out []string
	for _, pt := range gridPoints() {
		out = append(out, "alpha="+pt[0]+",v_growth="+pt[1])
	}
	return out
}

// gridPoints are the coarse grid's settings in EvalRow.Grid's order, as
// text: alpha, and V_growth "off" or its share of the bottleneck's rate R
// ("0.1R").
func gridPoints() [][2]string {
	var out [][2]string
	for _, a := range GridAlphas {
		for _, sh := range GridVGrowthShares {
			v := "off"
			if sh > 0 {
				v = strconv.FormatFloat(sh, 'g', -1, 64) + "R"
			}
			out = append(out, [2]string{strconv.FormatFloat(a, 'g', -1, 64), v})
		}
	}
	return out
}

// ratiosOver are the per-row ratios num(r) / den(r).
func ratiosOver(rows []EvalRow, num, den func(EvalRow) float64) []float64 {
	out := make([]float64, 0, len(rows))
	for _, r := range rows {
		out = append(out, num(r)/den(r))
	}
	return out
}

// meanAndWorstTenth are the mean of ratios and the mean of their worst
// tenth (at least one).
func meanAndWorstTenth(ratios []float64) (m, worst float64) {
	m = mean(ratios)
	r := slices.Clone(ratios)
	slices.SortFunc(r, func(a, b float64) int { return cmp.Compare(b, a) })
	k := max(1, len(r)/10)
	for _, x := range r[:k] {
		worst += x / float64(k)
	}
	return m, worst
}

// Summarise computes the bars of docs/tuner.md over rows.
func Summarise(rows []EvalRow) EvalSummary {
	var s EvalSummary
	s.N = len(rows)
	if s.N == 0 {
		return s
	}
	ratios := make([]float64, 0, len(rows))
	reme := make([]float64, 0, len(rows))
	var orc, orcReme []float64
	s.Oracle = true
	var jt, jb float64
	s.SimSeeds = math.MaxInt
	s.Remeasured = true
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
		s.SimSeeds = min(s.SimSeeds, max(1, r.SimSeeds), len(r.TunerJs), len(r.BestJs))
		if !(r.Remeasured > 0) {
			s.Remeasured = false
		}
		reme = append(reme, r.RemeasuredRatio())
		if !r.HasOracle() {
			s.Oracle = false
		}
		orc, orcReme = append(orc, r.OracleRatio()), append(orcReme, r.OracleRemeasuredRatio())
	}
	s.MeanRatio, s.WorstTenthRatio = meanAndWorstTenth(ratios)
	s.RatioOfMeans = jt / jb
	if s.SimSeeds >= 2 {
		perSeed := make([]float64, s.SimSeeds)
		for k := range perSeed {
			for _, r := range rows {
				perSeed[k] += r.TunerJs[k] / r.BestJs[k] / float64(s.N)
			}
		}
		s.MeanRatioSE = meanStdErr(perSeed)
	} else {
		s.SimSeeds = 1
	}
	if s.Remeasured {
		s.MeanRemeasuredRatio, s.WorstTenthReme = meanAndWorstTenth(reme)
	}
	if s.Oracle {
		s.MeanOracleRatio, s.WorstTenthOracle = meanAndWorstTenth(orc)
		if s.Remeasured {
			s.MeanOracleRemeasured, s.WorstTenthOracleRemeas = meanAndWorstTenth(orcReme)
		}
	}
	s.Untuned = !slices.ContainsFunc(rows, func(r EvalRow) bool { return !(r.Untuned > 0) || !(r.Best > 0) })
	if s.Untuned {
		tuner := func(r EvalRow) float64 { return r.Tuner }
		best := func(r EvalRow) float64 { return r.Best }
		untuned := func(r EvalRow) float64 { return r.Untuned }
		s.MeanUntunedRatio, s.WorstTenthUntuned = meanAndWorstTenth(ratiosOver(rows, untuned, best))
		s.MeanTunerOverUntuned, s.WorstTenthOverUntd = meanAndWorstTenth(ratiosOver(rows, tuner, untuned))
	}
	if s.Fixed = hasGrids(rows); s.Fixed {
		for _, name := range GridSettings() {
			f := FixedReadingOf(rows, name)
			if s.FixedSetting == "" || f.MeanRatio < s.MeanFixedRatio {
				s.FixedSetting, s.MeanFixedRatio, s.WorstTenthFixed = name, f.MeanRatio, f.WorstTenthRatio
				s.MeanTunerOverFixed, s.WorstTenthOverFixed = f.MeanTunerOver, f.WorstTenthTunerOver
			}
		}
	}
	return s
}

// hasGrids says whether every row has the coarse grid and a best J.
func hasGrids(rows []EvalRow) bool {
	return len(rows) > 0 && !slices.ContainsFunc(rows, func(r EvalRow) bool { return !r.hasGrid() || !(r.Best > 0) })
}

// FixedReading is one coarse setting read over a set's rows.
type FixedReading struct {
	// OK says every row has the grid (and so the setting).
	OK bool
	// MeanRatio, WorstTenthRatio: the setting's J over the best static
	// setting's; MeanTunerOver, WorstTenthTunerOver: the tuner's over
	// the setting's.
	MeanRatio, WorstTenthRatio         float64
	MeanTunerOver, WorstTenthTunerOver float64
	// Better, Equal, Worse count the rows whose tuner J is under, within
	// or over the setting's by more than 2 % (Within).
	Better, Equal, Worse int
}

// Within is the share by which two J count as equal in FixedReading's
// counts (the docs' "better / worse by 0.02").
const Within = 0.02

// FixedReadingOf reads the coarse setting named as GridSettings names it
// over rows (not OK: a row without the grid, or no such setting): what
// one fixed setting for every scenario does, against each scenario's best
// and against the tuner.
func FixedReadingOf(rows []EvalRow, setting string) FixedReading {
	i := slices.Index(GridSettings(), setting)
	if i < 0 || !hasGrids(rows) {
		return FixedReading{}
	}
	at := func(r EvalRow) float64 { return r.Grid[i] }
	f := FixedReading{OK: true}
	f.MeanRatio, f.WorstTenthRatio = meanAndWorstTenth(ratiosOver(rows, at, func(r EvalRow) float64 { return r.Best }))
	over := ratiosOver(rows, func(r EvalRow) float64 { return r.Tuner }, at)
	f.MeanTunerOver, f.WorstTenthTunerOver = meanAndWorstTenth(over)
	for _, x := range over {
		switch {
		case x < 1-Within:
			f.Better++
		case x > 1+Within:
			f.Worse++
		default:
			f.Equal++
		}
	}
	return f
}

// StartSetting is the coarse grid's name (GridSettings) of the policy's
// starting point on a node with overload_cut on (overloadCut) or off, the
// start's alpha (policy.Config.StartAlpha: alpha_start, or
// alpha_start_overload_cut) with V_growth at v_growth_start_share of the
// bottleneck's rate, "" when either is off the grid (alpha 0 keeps the
// switch's K_max): the setting a tuner that only started and never
// changed a queue would hold from the first packet.
func StartSetting(c policy.Config, overloadCut bool) string {
	alpha := c.StartAlpha(overloadCut)
	if !slices.Contains(GridAlphas, alpha) || !slices.Contains(GridVGrowthShares, c.VGrowthStartShare) || c.VGrowthStartShare <= 0 {
		return ""
	}
	a := strconv.FormatFloat(alpha, 'g', -1, 64)
	return "alpha=" + a + ",v_growth=" + strconv.FormatFloat(c.VGrowthStartShare, 'g', -1, 64) + "R"
}

// WriteEvalMarkdown writes a set's table and its bars. Rows measured at
// more than one simulation seed show each J's standard error across them;
// rows whose best static setting was re-measured show that J and the
// bars against it beside the in-sample ones.
func WriteEvalMarkdown(w io.Writer, set string, rows []EvalRow) error {
	return WriteEvalMarkdownFrom(w, set, rows, "", "")
}

// WriteEvalMarkdownFrom is WriteEvalMarkdown with one more reference: the
// coarse setting chosen as one setting for every scenario on another set
// (from, its name: `make tuner-eval` passes the train set's to the test
// set's table), read on these rows — what an operator who picked a fixed
// setting on the development seeds would have had on the held-out ones.
// from "" leaves it out.
func WriteEvalMarkdownFrom(w io.Writer, set string, rows []EvalRow, from, setting string) error {
	return WriteEvalMarkdownStart(w, set, rows, from, setting, "")
}

// WriteEvalMarkdownStart is WriteEvalMarkdownFrom with the tuned runs'
// starting point (start, a coarse setting's name: StartSetting) read as a
// fixed setting held from the first packet, and the tuner against it:
// what the tuner's changes bought over its start. start "" (or a set
// without the coarse grid) leaves it out.
func WriteEvalMarkdownStart(w io.Writer, set string, rows []EvalRow, from, setting, start string) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	s := Summarise(rows)
	holds := func(ok bool) string {
		if ok {
			return "holds"
		}
		return "**fails**"
	}
	multi := s.SimSeeds > 1
	p("| bar (%s seeds, %d scenarios) | want | measured | |\n|---|---|---|---|\n", set, s.N)
	if multi {
		p("| mean J, tuner / best static (J the mean over %d simulation seeds; ± the standard error across them) | ≤ %.2f | %.3f ± %.3f | %s |\n",
			s.SimSeeds, BarMeanRatio, s.MeanRatio, s.MeanRatioSE, holds(s.MeanRatio <= BarMeanRatio))
	} else {
		p("| mean J, tuner / best static | ≤ %.2f | %.3f | %s |\n", BarMeanRatio, s.MeanRatio, holds(s.MeanRatio <= BarMeanRatio))
	}
	p("| worst tenth, tuner / best static | ≤ %.2f | %.3f | %s |\n", BarWorstTenthRatio, s.WorstTenthRatio, holds(s.WorstTenthRatio <= BarWorstTenthRatio))
	if s.Remeasured {
		p("| mean J, tuner / best static re-measured (its setting at simulation seed k = %d, never used to choose it) | ≤ %.2f | %.3f | %s |\n",
			s.SimSeeds, BarMeanRatio, s.MeanRemeasuredRatio, holds(s.MeanRemeasuredRatio <= BarMeanRatio))
		p("| worst tenth, tuner / best static re-measured | ≤ %.2f | %.3f | %s |\n", BarWorstTenthRatio, s.WorstTenthReme, holds(s.WorstTenthReme <= BarWorstTenthRatio))
	}
	p("| step scenarios where the tuner beats every static setting | all | %d of %d | %s |\n", s.StepsBeaten, s.Steps, holds(s.StepsBeaten == s.Steps))
	p("| changes per queue per second (the busiest queue of each run) | bounded | mean %.1f, max %.1f | |\n", s.MeanChangesPerQueueS, s.MaxChangesPerQueueS)
	p("| … per judgement cycle (Set delay + RTT_est), the busiest queue of the set | ≤ 1 | %.2f | %s |\n", s.MaxChangesPerCycle, holds(s.MaxChangesPerCycle <= 1))
	p("| mean tuner J / mean best static J | | %.3f | |\n", s.RatioOfMeans)
	if s.Oracle {
		p("| the oracle floor (the best static setting set at the tuned run's first decision, never changed): mean, worst tenth / best static | (no bar) | %.3f, %.3f | |\n",
			s.MeanOracleRatio, s.WorstTenthOracle)
		if s.Remeasured {
			p("| … / best static re-measured | (no bar) | %.3f, %.3f | |\n", s.MeanOracleRemeasured, s.WorstTenthOracleRemeas)
		}
	}
	if s.Untuned {
		p("| the draft's defaults, untuned (the file's params, no tuner): mean, worst tenth / best static | (no bar) | %.3f, %.3f | |\n",
			s.MeanUntunedRatio, s.WorstTenthUntuned)
		p("| … the tuner / the draft's defaults: mean, worst tenth | (no bar) | %.3f, %.3f | |\n", s.MeanTunerOverUntuned, s.WorstTenthOverUntd)
	}
	if s.Fixed {
		p("| one setting for every scenario, the coarse grid's best over the set in hindsight (%s, R the bottleneck's rate): mean, worst tenth / best static | (no bar) | %.3f, %.3f | |\n",
			s.FixedSetting, s.MeanFixedRatio, s.WorstTenthFixed)
		p("| … the tuner / that setting: mean, worst tenth | (no bar) | %.3f, %.3f | |\n", s.MeanTunerOverFixed, s.WorstTenthOverFixed)
	}
	if f := FixedReadingOf(rows, setting); from != "" && f.OK {
		p("| the one setting for every scenario chosen on the %s seeds (%s), here: mean, worst tenth / best static | (no bar) | %.3f, %.3f | |\n",
			from, setting, f.MeanRatio, f.WorstTenthRatio)
		p("| … the tuner / that setting: mean, worst tenth | (no bar) | %.3f, %.3f | |\n", f.MeanTunerOver, f.WorstTenthTunerOver)
	}
	if f := FixedReadingOf(rows, start); f.OK {
		p("| the tuner's start held from the first packet (%s: the start's alpha, v_growth_start_share), never changed: mean, worst tenth / best static | (no bar) | %.3f, %.3f | |\n",
			start, f.MeanRatio, f.WorstTenthRatio)
		p("| … the tuner / its start: mean, worst tenth; better / equal / worse (by %g) | (no bar) | %.3f, %.3f; %d / %d / %d | |\n",
			Within, f.MeanTunerOver, f.WorstTenthTunerOver, f.Better, f.Equal, f.Worse)
	}
	p("\n")
	p("| seed | scenario | bottleneck | tuner J | coarse best (setting) | finer best (setting) | tuner / best |")
	if s.Remeasured {
		p(" best static re-measured | tuner / re-measured |")
	}
	if s.Oracle {
		p(" oracle floor J | oracle / best |")
	}
	p(" beats every static | changes per queue per s (confirmed / rolled back) | per cycle |\n")
	p("|---|---|---|---|---|---|---|")
	if s.Remeasured {
		p("---|---|")
	}
	if s.Oracle {
		p("---|---|")
	}
	p("---|---|---|\n")
	for _, r := range rows {
		beats := "—"
		if r.Draw.IsStep() {
			beats = "no"
			if r.BeatsEvery() {
				beats = "yes"
			}
		}
		tuner, best := fmt.Sprintf("%.4f", r.Tuner), fmt.Sprintf("%.4f", r.Best)
		if multi {
			tuner += fmt.Sprintf(" ± %.4f", r.TunerSE)
			best += fmt.Sprintf(" ± %.4f", r.BestSE)
		}
		p("| %d | %s | %s | %s | %.4f (%s) | %s (%s) | %.3f |", r.Draw.Seed, r.Draw.Short(), r.Bottleneck,
			tuner, r.Coarse, r.CoarseSetting, best, r.BestSetting, r.Ratio())
		if s.Remeasured {
			p(" %.4f | %.3f |", r.Remeasured, r.RemeasuredRatio())
		}
		if s.Oracle {
			orc := fmt.Sprintf("%.4f", r.Oracle)
			if multi {
				orc += fmt.Sprintf(" ± %.4f", r.OracleSE)
			}
			p(" %s | %.3f |", orc, r.OracleRatio())
		}
		p(" %s | %.1f (%d / %d) | %.2f |\n", beats, r.ChangesPerQueuePerSec, r.Confirmed, r.RolledBack, r.ChangesPerCycle)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
