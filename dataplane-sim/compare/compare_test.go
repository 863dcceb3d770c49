package compare

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

func loadScenario(t *testing.T, name string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.LoadFile(filepath.Join("..", "..", "scenarios", "compare", name))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// The four bars of Long-haul CNP against DCQCN with receiver CNPs on the
// near-source 4:1 incast (100 Gb/s, 10 ms RTT), the shipped scenario at its
// full duration (the numbers docs/results.md shows). Two runs with the
// same seed give the same table.
func TestNearSourceIncastBars(t *testing.T) {
	sc := loadScenario(t, "near-source-incast.yaml")
	if sc.Duration < 60*time.Millisecond {
		t.Fatalf("scenario runs %v: the bars are stated for its full 60 ms", sc.Duration)
	}
	opts := Options{Mechanisms: []string{"dcqcn", "long-haul-cnp"}}
	var tables [2][]byte
	var res *Result
	for i := range tables {
		r, err := Run(context.Background(), []*scenario.Scenario{sc}, t.TempDir(), opts)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := r.WriteCSV(&buf); err != nil {
			t.Fatal(err)
		}
		tables[i], res = buf.Bytes(), r
	}
	if !bytes.Equal(tables[0], tables[1]) {
		t.Errorf("two runs with the same seed differ:\n%s\n%s", tables[0], tables[1])
	}
	bars, err := res.Bars("near-source-incast", "dcqcn", "long-haul-cnp")
	if err != nil {
		t.Fatal(err)
	}
	if len(bars) != 4 {
		t.Fatalf("%d bars, want 4", len(bars))
	}
	for _, b := range bars {
		if !b.Holds {
			t.Errorf("bar %s (%s) does not hold: %s", b.Name, b.Want, b.Got)
		} else {
			t.Logf("bar %s holds: %s", b.Name, b.Got)
		}
	}
	for _, row := range res.Rows {
		if row.BottleneckNode != "n1" || row.BottleneckPeer != "n2" {
			t.Errorf("%s: bottleneck %s->%s, want n1->n2", row.Mechanism, row.BottleneckNode, row.BottleneckPeer)
		}
	}
}

// TestMechanismNames: every default variant applies to a shipped
// scenario, unknown names are refused, and applying never changes the
// caller's scenario.
func TestMechanismNames(t *testing.T) {
	sc := loadScenario(t, "rtt-step.yaml")
	for _, tt := range []struct {
		desc, mech string
		kind       scenario.MechanismKind
		ok         bool
	}{
		{"pfc only", "pfc", scenario.MechanismNone, true},
		{"baseline", "dcqcn", scenario.MechanismDCQCN, true},
		{"fast cnp", "fast-cnp", scenario.MechanismFastCNP, true},
		{"white paper", "switch-cnp", scenario.MechanismSwitchCNP, true},
		{"fcn", "fcn", scenario.MechanismFCN, true},
		{"rate advice", "rate-advice", scenario.MechanismRateAdvice, true},
		{"file params", "long-haul-cnp", scenario.MechanismLongHaulCNP, true},
		{"icmpv6", "long-haul-cnp:icmpv6", scenario.MechanismLongHaulCNP, true},
		{"draft defaults", "long-haul-cnp:defaults", scenario.MechanismLongHaulCNP, true},
		{"defaults of dcqcn", "dcqcn:defaults", "", false},
		{"unknown", "fcn-ish", "", false},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			v, ok := lookupVariant(nil, tt.mech)
			if ok != tt.ok {
				t.Fatalf("lookup(%q) = %v", tt.mech, ok)
			}
			if !ok {
				return
			}
			c, _, err := v.Apply(context.Background(), sc, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if c.Mechanism.Kind != tt.kind {
				t.Errorf("kind %s, want %s", c.Mechanism.Kind, tt.kind)
			}
			if !sc.Switches[0].CongestionAware || sc.Mechanism.Kind != scenario.MechanismLongHaulCNP {
				t.Errorf("the caller's scenario was changed")
			}
			switch tt.mech {
			case "dcqcn", "pfc":
				for _, s := range c.Switches {
					if s.CongestionAware || (tt.mech == "pfc") != s.Queue.PFC.Enabled {
						t.Errorf("switch %s: congestion-aware %v, pfc %v", s.Name, s.CongestionAware, s.Queue.PFC.Enabled)
					}
				}
			case "long-haul-cnp:defaults":
				if c.Mechanism.LongHaulCNP() != scenario.DefaultLongHaulCNP() {
					t.Errorf("defaults not applied: %+v", c.Mechanism.LongHaulCNP())
				}
			case "long-haul-cnp:icmpv6":
				if c.Mechanism.LongHaulCNP().Format != "icmpv6" {
					t.Errorf("format %q", c.Mechanism.LongHaulCNP().Format)
				}
			}
		})
	}
	if _, err := Run(context.Background(), []*scenario.Scenario{sc}, t.TempDir(), Options{Mechanisms: []string{"hpcc"}}); err == nil ||
		!strings.Contains(err.Error(), `unknown mechanism "hpcc"`) {
		t.Errorf("Run with an unknown mechanism: %v", err)
	}
}

// The FCT plot is drawn for a scenario with finite flows and linked from the
// FCT section of the document; a scenario without finite flows has none.
func TestFCTPlot(t *testing.T) {
	dir := t.TempDir()
	mix := []Row{
		{Scenario: "mix", Mechanism: "dcqcn", Buckets: []Bucket{{Name: "small", Flows: 3, Finished: 3, P50: 1.1, P99: 2},
			{Name: "medium", Flows: 2, Finished: 2, P50: 1.5, P99: 4}, {Name: "large", Flows: 1}}},
		{Scenario: "mix", Mechanism: "long-haul-cnp", Buckets: []Bucket{{Name: "small", Flows: 3, Finished: 3, P50: 1.05, P99: 1.5},
			{Name: "medium", Flows: 2, Finished: 2, P50: 1.2, P99: 3}, {Name: "large", Flows: 1, Finished: 1, P50: 9, P99: 9}}},
	}
	f, err := writeFCTPlot(dir, "mix", mix)
	if err != nil || f != "mix-fct.png" {
		t.Fatalf("writeFCTPlot = %q, %v; want mix-fct.png", f, err)
	}
	if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
		t.Fatal(err)
	}
	if f, err := writeFCTPlot(dir, "long", []Row{{Scenario: "long", Mechanism: "dcqcn"}}); f != "" || err != nil {
		t.Errorf("without finite flows: %q, %v; want no plot", f, err)
	}
	var b strings.Builder
	doc := Doc{Result: &Result{Rows: mix, Plots: []string{"mix-queue.png", "mix-rate.png", "mix-fct.png"}}, PlotDir: "results"}
	if err := WriteDocument(&b, doc); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"![mix: FCT slowdown p50 to p99 by flow size and mechanism](results/mix-fct.png)",
		"![mix: bottleneck queue](results/mix-queue.png)", "![mix: total sending rate](results/mix-rate.png)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("document lacks %q", want)
		}
	}
}

// The Mechanisms list describes long-haul-cnp:best-static, right after the
// tuner's row, when the tables have such rows; without them it does not.
func TestDocumentListsBestStatic(t *testing.T) {
	for _, tt := range []struct {
		desc string
		rows []Row
		want bool
	}{
		{"with best-static rows", []Row{{Scenario: "s", Mechanism: "dcqcn"}, {Scenario: "s", Mechanism: "long-haul-cnp" + BestStaticSuffix}}, true},
		{"without", []Row{{Scenario: "s", Mechanism: "dcqcn"}}, false},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var b strings.Builder
			doc := Doc{Result: &Result{Rows: tt.rows}, Variants: []Variant{DefaultVariants()[0], TunerVariant()}}
			if err := WriteDocument(&b, doc); err != nil {
				t.Fatal(err)
			}
			tuner := "- **" + TunerVariant().Name + "**: " + TunerVariant().Doc + ".\n"
			line := "- **long-haul-cnp" + BestStaticSuffix + "**: Long-haul CNP with the best static alpha and V_growth"
			if got := strings.Contains(b.String(), tuner+line); got != tt.want {
				t.Errorf("best-static line after the tuner's: %v, want %v\n%s", got, tt.want, b.String()[:min(len(b.String()), 3000)])
			}
			if tt.want && !strings.Contains(b.String(), fmt.Sprintf("(alpha ∈ %v × V_growth ∈ %v of the WAN's rate", GridAlphas, GridVGrowthShares)) {
				t.Error("the line does not state the grid")
			}
		})
	}
}

// TestNodesCheckedFirst: a scenario without congestion-aware nodes and a
// mechanism that needs them are refused before the first run, not after
// the rows before it ran (a default comparison ran pfc, dcqcn, the DCQCN
// grid and dcqcn:paper before fast-cnp said so). needsNodes agrees with
// every row's own refusal: the variant's Apply, and runBestStatic's. The
// refusal is a *ConfigError.
func TestNodesCheckedFirst(t *testing.T) {
	sc, err := scenario.LoadFile("../../scenarios/incast-dcqcn.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Mechanism.Nodes) != 0 {
		t.Fatal("incast-dcqcn names congestion-aware nodes")
	}
	out := t.TempDir()
	_, err = Run(context.Background(), []*scenario.Scenario{sc}, out, Options{Mechanisms: []string{"dcqcn", "fast-cnp"}, Duration: 100 * time.Microsecond})
	if err == nil || !strings.Contains(err.Error(), "compare: scenario incast-dcqcn (../../scenarios/incast-dcqcn.yaml): fast-cnp needs the file to name its congestion-aware nodes (mechanism.nodes)") {
		t.Errorf("Run: %v, want fast-cnp's refusal", err)
	}
	if _, ok := errors.AsType[*ConfigError](err); !ok {
		t.Errorf("Run: %v is no *ConfigError: a command takes it for a failed run", err)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("a run went ahead: %s holds %d entries", out, len(entries))
	}
	for _, m := range DefaultMechanisms() {
		var refused bool
		if strings.HasSuffix(m, BestStaticSuffix) {
			_, err := runBestStatic(context.Background(), sc, m, t.TempDir(), Options{}, nil)
			refused = err != nil && strings.Contains(err.Error(), "needs the file to name its congestion-aware nodes")
		} else {
			v, err := LookupVariant(m)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(m, WanTunedSuffix) && !needsNodes(nil, m) {
				continue // a grid of runs: its base row's Apply says the same
			}
			_, _, err = v.Apply(context.Background(), sc, t.TempDir())
			refused = err != nil && strings.Contains(err.Error(), "needs the file to name its congestion-aware nodes")
		}
		if refused != needsNodes(nil, m) {
			t.Errorf("%s: its row refuses a scenario without nodes: %v; needsNodes says %v", m, refused, needsNodes(nil, m))
		}
	}
}

// TestRunRemovesEarlierPlots: a comparison's plots replace an earlier
// comparison's of the same scenario, and one it does not draw (Plots off;
// the FCT plot of a scenario without finite flows) is removed, not left to
// be read as this run's. Files of other names stay. Before, a run without
// plots left the earlier <scenario>-queue.png and -rate.png.
func TestRunRemovesEarlierPlots(t *testing.T) {
	sc := loadScenario(t, "rtt-step.yaml")
	out := t.TempDir()
	for _, name := range []string{"rtt-step-fct.png", "other.png"} {
		if err := os.WriteFile(filepath.Join(out, name), []byte("earlier"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	present := func() []string {
		var names []string
		for _, name := range []string{"rtt-step-queue.png", "rtt-step-rate.png", "rtt-step-fct.png", "other.png"} {
			if _, err := os.Stat(filepath.Join(out, name)); err == nil {
				names = append(names, name)
			}
		}
		return names
	}
	for _, tt := range []struct {
		desc  string
		plots bool
		want  []string
	}{
		{"plotted", true, []string{"rtt-step-queue.png", "rtt-step-rate.png", "other.png"}},
		{"without plots", false, []string{"other.png"}},
	} {
		o := Options{Mechanisms: []string{"dcqcn"}, Duration: 3 * time.Millisecond, Plots: tt.plots}
		if _, err := Run(context.Background(), []*scenario.Scenario{sc}, out, o); err != nil {
			t.Fatal(err)
		}
		if got := present(); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %s holds %v, want %v", tt.desc, out, got, tt.want)
		}
	}
}

// results.csv leaves a size bucket without a finished flow empty, as the
// tables write — for it: it wrote 0.000000, a slowdown no flow can have.
func TestCSVEmptyBucket(t *testing.T) {
	r := &Result{Rows: []Row{{Scenario: "s", Mechanism: "dcqcn", Buckets: []Bucket{
		{Name: "small", Flows: 2, Finished: 2, P50: 1.5, P95: 2, P99: 2}, {Name: "medium"}, {Name: "large", Flows: 1}}}}}
	var b strings.Builder
	if err := r.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("results.csv:\n%s", b.String())
	}
	if want := ",1.500000,2.000000,,,,,"; !strings.HasSuffix(lines[1], want) {
		t.Errorf("row %q does not end with %q (small p50, p99; medium and large empty; note)", lines[1], want)
	}
}

// TestCSVFeedbackWithoutSenders: a row whose meter timed no sender (PFC
// alone) has an empty feedback_signal in results.csv, as the tables write
// — (it named the signal looked for, ce-mark, with 0 senders); a row with
// senders names its signal.
func TestCSVFeedbackWithoutSenders(t *testing.T) {
	r := &Result{Rows: []Row{
		{Scenario: "s", Mechanism: "pfc", FeedbackSignal: "ce-mark"},
		{Scenario: "s", Mechanism: "dcqcn", FeedbackSignal: "ce-mark", FeedbackSenders: 3},
	}}
	var b strings.Builder
	if err := r.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "s,pfc,,,,0,") || !strings.HasPrefix(lines[2], "s,dcqcn,,,ce-mark,3,") {
		t.Errorf("results.csv:\n%s\nwant pfc's feedback_signal empty, dcqcn's ce-mark", b.String())
	}
}
