package compare

import (
	"bytes"
	"context"
	"path/filepath"
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

func TestMechanismNames(t *testing.T) {
	sc := loadScenario(t, "rtt-step.yaml")
	for _, tt := range []struct {
		desc, mech string
		ok         bool
	}{
		{"baseline", "dcqcn", true},
		{"file params", "long-haul-cnp", true},
		{"draft defaults", "long-haul-cnp:defaults", true},
		{"defaults of dcqcn", "dcqcn:defaults", false},
		{"unknown", "fcn-ish", false},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			c, err := withMechanism(sc, tt.mech)
			if (err == nil) != tt.ok {
				t.Fatalf("withMechanism(%q) = %v", tt.mech, err)
			}
			if err != nil {
				return
			}
			if tt.mech == "dcqcn" {
				for _, s := range c.Switches {
					if s.CongestionAware {
						t.Errorf("switch %s still congestion-aware under dcqcn", s.Name)
					}
				}
				if !sc.Switches[0].CongestionAware {
					t.Errorf("the caller's scenario was changed")
				}
			}
			if tt.mech == "long-haul-cnp:defaults" && c.Mechanism.LongHaulCNP != scenario.DefaultLongHaulCNP() {
				t.Errorf("defaults not applied: %+v", c.Mechanism.LongHaulCNP)
			}
		})
	}
}
