package compare

import (
	"bytes"
	"context"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	famspec "github.com/lhcnp/lhcnp/dataplane-sim/family"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/dataplane-sim/sim"
	"github.com/lhcnp/lhcnp/tuner/policy"
)

// TestEvalMarkdownChangesPerCycle: the set's table reports each run's
// busiest queue in changes per judgement cycle and the set's largest
// against its bound of one (issue #24: "changes per queue per second
// bounded and reported").
func TestEvalMarkdownChangesPerCycle(t *testing.T) {
	d := famspec.Draw{Seed: 1, Set: "train", Rate: 10e9, RTT: time.Millisecond, Congestion: "mid-wan", Overload: 2, Step: famspec.StepNone, IP: "v4"}
	rows := []EvalRow{
		{Draw: d, Tuner: 1, Best: 1, ChangesPerQueuePerSec: 100, ChangesPerCycle: 0.32},
		{Draw: d, Tuner: 1, Best: 1, ChangesPerQueuePerSec: 50, ChangesPerCycle: 0.16},
	}
	s := Summarise(rows)
	if s.MaxChangesPerCycle != 0.32 {
		t.Errorf("MaxChangesPerCycle %v, want 0.32", s.MaxChangesPerCycle)
	}
	var b bytes.Buffer
	if err := WriteEvalMarkdown(&b, "train", rows); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| … per judgement cycle (Set delay + RTT_est), the busiest queue of the set | ≤ 1 | 0.32 | holds |",
		"| 100.0 (0 / 0) | 0.32 |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	rows[1].ChangesPerCycle = 1.5
	b.Reset()
	if err := WriteEvalMarkdown(&b, "train", rows); err != nil {
		t.Fatal(err)
	}
	if want := "| ≤ 1 | 1.50 | **fails** |"; !strings.Contains(b.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, b.String())
	}
}

// tinyFamily is testdata/tiny-family.yaml: a family whose runs take
// milliseconds of simulated time (its train seeds 1..2, test seeds 3..4).
func tinyFamily(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/tiny-family.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEvalSimSeeds: at two simulation seeds a row's J is the mean of its
// two single-seed runs (the first the one-seed evaluation's, the second
// the same setting run alone at the second seed), the best static setting
// is chosen on that mean and re-measured at the third seed; the same
// evaluation twice writes the same table.
func TestEvalSimSeeds(t *testing.T) {
	s, err := famspec.Parse("tiny.yaml", []byte(tinyFamily(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	one, err := EvalFamily(ctx, s, "train", []int64{1}, t.TempDir(), 1, EvalOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	two, err := EvalFamily(ctx, s, "train", []int64{1}, t.TempDir(), 1, EvalOptions{SimSeeds: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r1, r2 := one[0], two[0]
	if r1.SimSeeds != 1 || !math.IsNaN(r1.Remeasured) || r1.TunerSE != 0 {
		t.Errorf("one seed: SimSeeds %d, Remeasured %v, TunerSE %v; want 1, NaN, 0", r1.SimSeeds, r1.Remeasured, r1.TunerSE)
	}
	if r2.SimSeeds != 2 || len(r2.TunerJs) != 2 || len(r2.BestJs) != 2 {
		t.Fatalf("two seeds: SimSeeds %d, %d tuner and %d best J", r2.SimSeeds, len(r2.TunerJs), len(r2.BestJs))
	}
	if r2.TunerJs[0] != r1.Tuner {
		t.Errorf("tuner J at k=0 %v, the one-seed evaluation's %v", r2.TunerJs[0], r1.Tuner)
	}
	if r2.TunerJs[0] == r2.TunerJs[1] {
		t.Errorf("tuner J %v at both simulation seeds: the seed changed nothing", r2.TunerJs[0])
	}
	if want := (r2.TunerJs[0] + r2.TunerJs[1]) / 2; math.Abs(r2.Tuner-want) > 1e-12 {
		t.Errorf("tuner J %v, want the mean %v", r2.Tuner, want)
	}
	if want := (r2.BestJs[0] + r2.BestJs[1]) / 2; math.Abs(r2.Best-want) > 1e-12 {
		t.Errorf("best static J %v, want the mean %v", r2.Best, want)
	}
	if want := math.Abs(r2.TunerJs[0]-r2.TunerJs[1]) / 2; math.Abs(r2.TunerSE-want) > 1e-12 {
		t.Errorf("tuner standard error %v, want %v (half the difference at two seeds)", r2.TunerSE, want)
	}
	// The best setting's J at each seed, run alone: k=1 from GenerateAt,
	// k=2 the re-measured one.
	var alpha float64
	var vg scenario.Rate
	var alphas []float64
	for _, a := range GridAlphas {
		for _, f := range []float64{1 / math.Sqrt2, 1, math.Sqrt2} {
			alphas = append(alphas, math.Round(a*f*1000)/1000)
		}
	}
	for _, pt := range alphas {
		for _, sh := range FinerVGrowthShares {
			if gridName(pt, scenario.Rate(sh*float64(r2.Draw.Rate))) == r2.BestSetting {
				alpha, vg = pt, scenario.Rate(sh*float64(r2.Draw.Rate))
			}
		}
	}
	if alpha == 0 {
		t.Fatalf("best setting %q not on the grid", r2.BestSetting)
	}
	node, peer, _ := strings.Cut(r2.Bottleneck, "→")
	for k, want := range map[int]float64{1: r2.BestJs[1], 2: r2.Remeasured} {
		_, _, sc, err := s.GenerateAt("train", 1, k)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := sim.Run(ctx, withStatic(sc, alpha, vg), t.TempDir(), Options{SummaryOnly: true}.simOptions(false)...)
		if err != nil {
			t.Fatal(err)
		}
		if _, j := Objective(sum, node, peer, r2.Draw.RTT, policy.DefaultWeights()); j != want {
			t.Errorf("%s at simulation seed k=%d alone: J %v, the evaluation's %v", r2.BestSetting, k, j, want)
		}
	}
	// The untuned run and the coarse grid, each J the mean over the seeds:
	// the coarse best is the least of the grid's.
	if len(r2.Grid) != len(GridSettings()) || slices.Min(r2.Grid) != r2.Coarse || !(r2.Untuned > 0) {
		t.Errorf("grid %v (coarse best %v), untuned %v: want %d settings whose least is the coarse best, an untuned J",
			r2.Grid, r2.Coarse, r2.Untuned, len(GridSettings()))
	}
	var a, b bytes.Buffer
	if err := WriteEvalMarkdown(&a, "train", two); err != nil {
		t.Fatal(err)
	}
	again, err := EvalFamily(ctx, s, "train", []int64{1}, t.TempDir(), 1, EvalOptions{SimSeeds: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteEvalMarkdown(&b, "train", again); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("the same evaluation twice, two tables:\n%s\n%s", a.String(), b.String())
	}
}

// TestSummariseFixed: the one setting for a whole set is the coarse
// setting with the least mean ratio to each scenario's best (not the least
// mean J), and the tuner is read against it and against the untuned run,
// each as the mean and worst tenth of the per-scenario ratios; rows
// without the grid (a tuned-only run, a table) have neither line.
func TestSummariseFixed(t *testing.T) {
	names := GridSettings()
	if len(names) != 15 || names[0] != "alpha=0.25,v_growth=off" || names[4] != "alpha=0.5,v_growth=0.1R" {
		t.Fatalf("GridSettings %v", names)
	}
	grid := func(fill float64, at map[int]float64) []float64 {
		g := make([]float64, len(names))
		for i := range g {
			g[i] = fill
		}
		for i, j := range at {
			g[i] = j
		}
		return g
	}
	d := famspec.Draw{Seed: 1, Set: "test", Step: famspec.StepNone}
	rows := []EvalRow{
		// Setting 4 is twice the best here, setting 7 best; a scenario of
		// large J, so setting 7 has the lower mean J over the set ...
		{Draw: d, Tuner: 12, Best: 10, Untuned: 30, Grid: grid(50, map[int]float64{4: 20, 7: 10})},
		// ... but setting 4 the lower mean ratio (1.5 against 2.5).
		{Draw: d, Tuner: 1.5, Best: 1, Untuned: 1, Grid: grid(5, map[int]float64{4: 1, 7: 4})},
	}
	s := Summarise(rows)
	if !s.Fixed || s.FixedSetting != names[4] || s.MeanFixedRatio != 1.5 || s.WorstTenthFixed != 2 {
		t.Errorf("fixed: %v %q, mean %v, worst tenth %v; want %q, 1.5, 2", s.Fixed, s.FixedSetting, s.MeanFixedRatio, s.WorstTenthFixed, names[4])
	}
	if s.MeanTunerOverFixed != (0.6+1.5)/2 || s.WorstTenthOverFixed != 1.5 {
		t.Errorf("tuner over the fixed setting: %v, %v; want 1.05, 1.5", s.MeanTunerOverFixed, s.WorstTenthOverFixed)
	}
	if !s.Untuned || s.MeanUntunedRatio != 2 || s.WorstTenthUntuned != 3 || s.MeanTunerOverUntuned != (0.4+1.5)/2 || s.WorstTenthOverUntd != 1.5 {
		t.Errorf("untuned: %+v", s)
	}
	var b bytes.Buffer
	if err := WriteEvalMarkdown(&b, "test", rows); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| the draft's defaults, untuned (the file's params, no tuner): mean, worst tenth / best static | (no bar) | 2.000, 3.000 | |",
		"| … the tuner / the draft's defaults: mean, worst tenth | (no bar) | 0.950, 1.500 | |",
		"| one setting for every scenario, the coarse grid's best over the set in hindsight (alpha=0.5,v_growth=0.1R, R the bottleneck's rate): mean, worst tenth / best static | (no bar) | 1.500, 2.000 | |",
		"| … the tuner / that setting: mean, worst tenth | (no bar) | 1.050, 1.500 | |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no line %q in\n%s", want, b.String())
		}
	}
	// Another set's choice read on these rows: setting 7 here.
	b.Reset()
	if err := WriteEvalMarkdownFrom(&b, "test", rows, "train", names[7]); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| the one setting for every scenario chosen on the train seeds (alpha=1,v_growth=0.1R), here: mean, worst tenth / best static | (no bar) | 2.500, 4.000 | |",
		"| … the tuner / that setting: mean, worst tenth | (no bar) | 0.787, 1.200 | |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no line %q in\n%s", want, b.String())
		}
	}
	// The tuner's start (setting 4 here) held from the first packet, and
	// the tuner against it: 12 / 20 better, 1.5 / 1 worse.
	b.Reset()
	if err := WriteEvalMarkdownStart(&b, "test", rows, "", "", names[4]); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| the tuner's start held from the first packet (alpha=0.5,v_growth=0.1R: the start's alpha, v_growth_start_share), never changed: mean, worst tenth / best static | (no bar) | 1.500, 2.000 | |",
		"| … the tuner / its start: mean, worst tenth; better / equal / worse (by 0.02) | (no bar) | 1.050, 1.500; 1 / 0 / 1 | |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no line %q in\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "chosen on the") {
		t.Errorf("no other set given, but its line:\n%s", b.String())
	}
	if f := FixedReadingOf(rows, names[4]); f.Better != 1 || f.Equal != 0 || f.Worse != 1 {
		t.Errorf("counts %+v, want 1 better, 1 worse", f)
	}
	rows[0].Tuner = 20.3 // within 2 % of the start's 20
	if f := FixedReadingOf(rows, names[4]); f.Better != 0 || f.Equal != 1 || f.Worse != 1 {
		t.Errorf("counts with one within 2 %%: %+v, want 1 equal, 1 worse", f)
	}
	rows[0].Tuner = 12
	if f := FixedReadingOf(rows, "alpha=3,v_growth=off"); f.OK {
		t.Errorf("a setting off the grid read as %+v", f)
	}
	rows[1].Grid, rows[1].Untuned = nil, math.NaN()
	if f := FixedReadingOf(rows, names[7]); f.OK {
		t.Errorf("a row without the grid read as %+v", f)
	}
	if s := Summarise(rows); s.Fixed || s.Untuned {
		t.Errorf("a row without the grid or the untuned run: Fixed %v, Untuned %v", s.Fixed, s.Untuned)
	}
}

// TestEvalMarkdownSimSeeds: rows measured at several simulation seeds
// show each J with its standard error and the set's mean ratio with the
// standard error across seeds; rows whose best static setting was
// re-measured add its J, the ratio against it, and the bars against it;
// rows at one seed without re-measuring keep the one-seed table.
func TestEvalMarkdownSimSeeds(t *testing.T) {
	d := famspec.Draw{Seed: 1, Set: "train", Rate: 10e9, RTT: time.Millisecond, Congestion: "mid-wan", Overload: 2, Step: famspec.StepNone, IP: "v4"}
	rows := []EvalRow{
		{Draw: d, SimSeeds: 2, TunerJs: []float64{1, 3}, Tuner: 2, TunerSE: 1, BestJs: []float64{1, 1}, Best: 1, Remeasured: 1.6},
		{Draw: d, SimSeeds: 2, TunerJs: []float64{2, 2}, Tuner: 2, BestJs: []float64{2, 2}, Best: 2, Remeasured: 4},
	}
	s := Summarise(rows)
	// Per seed: (1/1 + 2/2)/2 = 1 and (3/1 + 2/2)/2 = 2: standard error 0.5.
	for _, c := range []struct {
		desc      string
		got, want float64
	}{
		{"MeanRatio", s.MeanRatio, 1.5},
		{"MeanRatioSE", s.MeanRatioSE, 0.5},
		{"MeanRemeasuredRatio", s.MeanRemeasuredRatio, (2/1.6 + 0.5) / 2},
		{"WorstTenthReme", s.WorstTenthReme, 2 / 1.6},
	} {
		if math.Abs(c.got-c.want) > 1e-12 {
			t.Errorf("%s %v, want %v", c.desc, c.got, c.want)
		}
	}
	var b bytes.Buffer
	if err := WriteEvalMarkdown(&b, "train", rows); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| mean J, tuner / best static (J the mean over 2 simulation seeds; ± the standard error across them) | ≤ 1.05 | 1.500 ± 0.500 | **fails** |",
		"| mean J, tuner / best static re-measured (its setting at simulation seed k = 2, never used to choose it) | ≤ 1.05 | 0.875 | holds |",
		"| worst tenth, tuner / best static re-measured | ≤ 1.10 | 1.250 | **fails** |",
		"| tuner / best | best static re-measured | tuner / re-measured | beats every static |",
		"| 2.0000 ± 1.0000 | 0.0000 () | 1.0000 ± 0.0000 () | 2.000 | 1.6000 | 1.250 | — |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	// One seed, no re-measuring: the one-seed table, no new column.
	for i := range rows {
		rows[i].SimSeeds, rows[i].TunerJs, rows[i].BestJs, rows[i].Remeasured = 1, rows[i].TunerJs[:1], rows[i].BestJs[:1], math.NaN()
	}
	b.Reset()
	if err := WriteEvalMarkdown(&b, "train", rows); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"±", "re-measured"} {
		if strings.Contains(b.String(), bad) {
			t.Errorf("one-seed table has %q:\n%s", bad, b.String())
		}
	}
	// One seed, re-measured at k = 1.
	rows[0].Remeasured, rows[1].Remeasured = 1.6, 4
	b.Reset()
	if err := WriteEvalMarkdown(&b, "train", rows); err != nil {
		t.Fatal(err)
	}
	if want := "re-measured (its setting at simulation seed k = 1, never used to choose it)"; !strings.Contains(b.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, b.String())
	}
}

// TestStartSetting: the policy's starting point as the coarse grid names
// it (the defaults: alpha 0.5, V_growth 0.1 × R), "" where it is off the
// grid or there is none.
func TestStartSetting(t *testing.T) {
	c := policy.DefaultConfig()
	if got := StartSetting(c, false); got != "alpha=0.5,v_growth=0.1R" || !slices.Contains(GridSettings(), got) {
		t.Errorf("defaults: %q, want alpha=0.5,v_growth=0.1R on the grid", got)
	}
	// On a node that cuts to the overload the start keeps the draft's
	// alpha (alpha_start_overload_cut); 0 there: alpha_start.
	if got := StartSetting(c, true); got != "alpha=1,v_growth=0.1R" {
		t.Errorf("defaults, overload_cut on: %q, want alpha=1,v_growth=0.1R", got)
	}
	oc := c
	oc.AlphaStartOverloadCut = 0
	if got := StartSetting(oc, true); got != "alpha=0.5,v_growth=0.1R" {
		t.Errorf("alpha_start_overload_cut 0, overload_cut on: %q, want alpha_start's", got)
	}
	for _, tt := range []struct {
		desc string
		edit func(*policy.Config)
	}{
		{"alpha_start 0 (the switch's K_max kept)", func(c *policy.Config) { c.AlphaStart = 0 }},
		{"alpha_start off the grid", func(c *policy.Config) { c.AlphaStart = 0.707 }},
		{"no V_growth start", func(c *policy.Config) { c.VGrowthStartShare = 0 }},
		{"a V_growth share off the grid", func(c *policy.Config) { c.VGrowthStartShare = 0.03 }},
	} {
		c := policy.DefaultConfig()
		tt.edit(&c)
		if got := StartSetting(c, false); got != "" {
			t.Errorf("%s: %q, want none", tt.desc, got)
		}
	}
	c.AlphaStart, c.VGrowthStartShare = 1, 1
	if got := StartSetting(c, false); got != "alpha=1,v_growth=1R" {
		t.Errorf("alpha_start 1, v_growth_start_share 1: %q", got)
	}
}
