package compare

import (
	"bytes"
	"context"
	"path/filepath"
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
				if c.Mechanism.LongHaulCNP != scenario.DefaultLongHaulCNP() {
					t.Errorf("defaults not applied: %+v", c.Mechanism.LongHaulCNP)
				}
			case "long-haul-cnp:icmpv6":
				if c.Mechanism.LongHaulCNP.Format != "icmpv6" {
					t.Errorf("format %q", c.Mechanism.LongHaulCNP.Format)
				}
			}
		})
	}
	if _, err := Run(context.Background(), []*scenario.Scenario{sc}, t.TempDir(), Options{Mechanisms: []string{"hpcc"}}); err == nil ||
		!strings.Contains(err.Error(), `unknown mechanism "hpcc"`) {
		t.Errorf("Run with an unknown mechanism: %v", err)
	}
}
