package compare

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/report"
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
	// The loss term's packets are the frames the run counted at the
	// bottleneck: a mean between a PFC frame and a full data frame (a
	// 4096-byte payload in an IPv6 frame with its FCS is 4182 bytes).
	for _, p := range best.Summary.Ports {
		if p.Node != best.BottleneckNode || p.Port != best.BottleneckPeer {
			continue
		}
		if p.TxPackets != best.Metrics.Packets || p.TxPackets == 0 || p.TxBytes/p.TxPackets < 64 || p.TxBytes/p.TxPackets > 4182 {
			t.Errorf("bottleneck port sent %d bytes in %d frames, the objective counted %d packets", p.TxBytes, p.TxPackets, best.Metrics.Packets)
		}
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
	if strings.Contains(md.String(), "held-out read") {
		t.Errorf("a held-out paragraph without a held-out read:\n%s", md.String())
	}
	// With a held-out read (an evaluation's rows), its bars are quoted.
	held := evalRows()
	md.Reset()
	if err := WriteTuner(&md, TunerDoc{Results: []*Result{res}, HeldOut: held, HeldOutFile: "scenarios/family/evals/test.csv"}); err != nil {
		t.Fatal(err)
	}
	sum := Summarise(held)
	if !strings.Contains(md.String(), "read on scenarios it never saw, the bars fail.") {
		t.Errorf("held-out rows over the bars:\n%s", md.String())
	}
	wantHeld := fmt.Sprintf("The tuner family's latest held-out read (`scenarios/family/evals/test.csv`: train seeds 7–8, 2 generated scenarios, "+
		"J the mean over 2 simulation seeds, its nodes with the family's node_params; docs/tuner.md, \"Test seeds (held out)\") puts the tuner's J "+
		"at ×%.3f of each scenario's best static setting on the mean and ×%.3f on the worst tenth (the bar: ×1.05 and ×1.10).", sum.MeanRatio, sum.WorstTenthRatio)
	if !strings.Contains(md.String(), wantHeld) {
		t.Errorf("tuner section lacks\n%s\nin\n%s", wantHeld, md.String())
	}
	// The headline follows the numbers: rows within the bars hold them.
	for i := range held {
		held[i].Tuner = held[i].Best
	}
	md.Reset()
	if err := WriteTuner(&md, TunerDoc{Results: []*Result{res}, HeldOut: held, HeldOutFile: "x.csv"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "read on scenarios it never saw, the bars hold.") {
		t.Errorf("held-out rows within the bars:\n%s", md.String())
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
	if c.Tuner == nil || c.Mechanism.LongHaulCNP().Alpha != d.Alpha || c.Mechanism.LongHaulCNP().VGrowth != d.VGrowth {
		t.Errorf("tuned scenario: tuner %v, alpha %v, v_growth %v; want a tuner from the draft's alpha and V_growth",
			c.Tuner, c.Mechanism.LongHaulCNP().Alpha, c.Mechanism.LongHaulCNP().VGrowth)
	}
	if c.Mechanism.LongHaulCNP().CNPInterval != sc.Mechanism.LongHaulCNP().CNPInterval {
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

// TestObjectiveLoss: the loss term is drops and PFC pauses per frame the
// bottleneck port sent, counted, not estimated from its bytes: small
// frames (ACKs, CNPs) and IPv6 frames count one each.
func TestObjectiveLoss(t *testing.T) {
	port := func(txBytes, txPackets, drops, pauses int64) report.PortSummary {
		return report.PortSummary{Node: "n1", Port: "n2", RateBitsPerSec: 10_000_000_000, Utilisation: 1,
			TxBytes: txBytes, TxPackets: txPackets, DropPackets: drops, PFCPauseFrames: pauses}
	}
	tests := []struct {
		desc string
		port report.PortSummary
		want policy.Metrics
	}{
		{desc: "4178-byte IPv6 frames: one packet each", port: port(1000*4178, 1000, 10, 0),
			want: policy.Metrics{Utilisation: 1, Packets: 1000, Drops: 10, Loss: 0.01}},
		{desc: "half the frames small: they count too", port: port(500*4154+500*78, 1000, 5, 5),
			want: policy.Metrics{Utilisation: 1, Packets: 1000, Drops: 5, Pauses: 5, Loss: 0.01}},
		{desc: "nothing lost", port: port(4154, 1, 0, 0),
			want: policy.Metrics{Utilisation: 1, Packets: 1}},
		{desc: "drops and nothing sent: loss is the drops (per at least one packet)", port: port(0, 0, 3, 0),
			want: policy.Metrics{Utilisation: 1, Drops: 3, Loss: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			s := &report.Summary{Ports: []report.PortSummary{port(1, 1, 1, 1), tt.port}}
			s.Ports[0].Port = "h1" // another port of the node: not counted
			got, _ := Objective(s, "n1", "n2", 0, policy.DefaultWeights())
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Objective metrics (-want +got):\n%s", diff)
			}
		})
	}
}
