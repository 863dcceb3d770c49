package compare

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/tuner/policy"
)

// TestTunerRows: the tuned run and the best static setting come out of
// compare.Run; the best static row is the grid run with the lowest
// objective; the tuner starts from the draft's alpha and V_growth; the
// bars and the table are written.
func TestTunerRows(t *testing.T) {
	sc := loadScenario(t, "rtt-step.yaml")
	res, err := Run(context.Background(), []*scenario.Scenario{sc}, t.TempDir(),
		Options{Mechanisms: TunerMechanisms, Duration: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	tuned, ok1 := res.find(sc.Name, "long-haul-cnp"+TunerSuffix)
	best, ok2 := res.find(sc.Name, "long-haul-cnp"+BestStaticSuffix)
	if !ok1 || !ok2 {
		t.Fatalf("rows %v: no tuner or best static row", res.Rows)
	}
	if len(best.Grid) != len(GridAlphas)*len(GridVGrowthShares) {
		t.Fatalf("%d grid runs, want %d", len(best.Grid), len(GridAlphas)*len(GridVGrowthShares))
	}
	for _, g := range best.Grid {
		if g.Objective < best.Objective {
			t.Errorf("grid run %s has J %v below the best static row's %v (%s)", g.Setting, g.Objective, best.Objective, best.Setting)
		}
	}
	if _, j := Objective(best.Summary, best.BottleneckNode, best.BottleneckPeer, 10*time.Millisecond, policy.DefaultWeights()); j != best.Objective {
		t.Errorf("best static row's objective %v, recomputed %v", best.Objective, j)
	}
	if tuned.Summary.MechanismCounters["tuner_queues"] == 0 {
		t.Errorf("tuned row without tuner counters: %v", tuned.Summary.MechanismCounters)
	}
	bars, err := res.TunerBars(sc, true)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range bars {
		names = append(names, b.Name)
	}
	want := []string{"objective", "beats every static setting", "changes per queue per second"}
	if diff := cmp.Diff(want, names); diff != "" { // the step at 30 ms is after the 20 ms run
		t.Errorf("bars (-want +got):\n%s", diff)
	}
	var md bytes.Buffer
	if err := WriteTuner(&md, TunerDoc{Results: []*Result{res}, BarSets: []BarSet{{Title: "rtt-step", Bars: bars}}}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| rtt-step | long-haul-cnp+tuner | from alpha=1,v_growth=10Gbps |", "| rtt-step | long-haul-cnp:best-static | " + best.Setting + " |"} {
		if !strings.Contains(md.String(), s) {
			t.Errorf("tuner section lacks %q:\n%s", s, md.String())
		}
	}
}

func TestTunerMechanismNames(t *testing.T) {
	sc := loadScenario(t, "rtt-step.yaml")
	v, ok := lookupVariant(nil, "long-haul-cnp"+TunerSuffix)
	if !ok {
		t.Fatal("no long-haul-cnp+tuner variant")
	}
	c, _, err := v.Apply(context.Background(), sc, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d := scenario.DefaultLongHaulCNP()
	if c.Tuner == nil || c.Mechanism.LongHaulCNP.Alpha != d.Alpha || c.Mechanism.LongHaulCNP.VGrowth != d.VGrowth {
		t.Errorf("tuned scenario: tuner %v, alpha %v, v_growth %v; want a tuner from the draft's alpha and V_growth",
			c.Tuner, c.Mechanism.LongHaulCNP.Alpha, c.Mechanism.LongHaulCNP.VGrowth)
	}
	if c.Mechanism.LongHaulCNP.CNPInterval != sc.Mechanism.LongHaulCNP.CNPInterval {
		t.Error("the file's other params were not kept")
	}
	if sc.Tuner != nil {
		t.Error("the caller's scenario was changed")
	}
	if _, ok := lookupVariant(nil, "dcqcn"+TunerSuffix); ok {
		t.Error("dcqcn+tuner accepted")
	}
	if _, err := runBestStatic(context.Background(), sc, "dcqcn"+BestStaticSuffix, t.TempDir(), Options{}, nil); err == nil {
		t.Error("dcqcn:best-static accepted")
	}
}
