package compare

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// webRow is a row of a web-search mix: its buckets' p99 slowdowns.
func webRow(drops int64, util float64, peak int64, p99s ...float64) *Row {
	r := &Row{Drops: drops, Utilisation: util, PeakQueueBytes: peak}
	for _, p := range p99s {
		r.Buckets = append(r.Buckets, Bucket{P99: p, Flows: 1, Finished: 1})
	}
	return r
}

// TestTunedBetter: the criterion every wan-tuned row shares picks as
// documented: fewest drops; then, in web-search mixes, the lowest p99 of
// the worst bucket (utilisation not read), else the highest utilisation;
// then the lowest peak queue; a tie on every figure keeps the earlier.
func TestTunedBetter(t *testing.T) {
	for _, tt := range []struct {
		desc string
		a, b *Row
		want bool
	}{
		{"fewer drops first, whatever the utilisation", &Row{Drops: 1, Utilisation: 1}, &Row{Drops: 2, Utilisation: 0.5}, true},
		{"more drops lose", &Row{Drops: 2, Utilisation: 1}, &Row{Drops: 1, Utilisation: 0.5}, false},
		{"then the higher utilisation", &Row{Utilisation: 0.9, PeakQueueBytes: 9}, &Row{Utilisation: 0.8, PeakQueueBytes: 1}, true},
		{"then the lower peak queue", &Row{Utilisation: 0.9, PeakQueueBytes: 1}, &Row{Utilisation: 0.9, PeakQueueBytes: 2}, true},
		{"a tie keeps the earlier", &Row{Utilisation: 0.9, PeakQueueBytes: 1}, &Row{Utilisation: 0.9, PeakQueueBytes: 1}, false},
		{"web: the lower worst-bucket p99, utilisation not read", webRow(0, 0.1, 9, 1.1, 1.2, 1.5), webRow(0, 0.9, 1, 1.1, 1.2, 1.6), true},
		{"web: the worst bucket is any size class", webRow(0, 0.5, 1, 1.7, 1.2, 1.5), webRow(0, 0.5, 1, 1.1, 1.2, 1.6), false},
		{"web: drops before slowdown", webRow(1, 0.5, 1, 1.0, 1.0, 1.0), webRow(0, 0.5, 1, 3, 3, 3), false},
		{"web: a p99 tie goes to the lower peak", webRow(0, 0.1, 1, 1.5), webRow(0, 0.9, 2, 1.5), true},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if got := tunedBetter(tt.a, tt.b); got != tt.want {
				t.Errorf("tunedBetter = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPickTuned: the Long-haul CNP grid keeps the run tunedBetter prefers,
// the first in grid order among equals; restricted to the grid of
// DCQCN's size it picks within that grid only.
func TestPickTuned(t *testing.T) {
	var cands []wanCand
	for _, a := range GridAlphas {
		for _, share := range GridVGrowthShares {
			cands = append(cands, wanCand{alpha: a, share: share, row: &Row{Utilisation: 0.5, PeakQueueBytes: 10}})
		}
	}
	at := func(alpha, share float64) *Row {
		for _, c := range cands {
			if c.alpha == alpha && c.share == share {
				return c.row
			}
		}
		t.Fatalf("no setting alpha %v share %v", alpha, share)
		return nil
	}
	at(0.25, 0).Utilisation = 0.9 // outside DCQCN's size: only the full grid sees it
	at(2, 1).Utilisation = 0.8
	at(4, 0.1).Utilisation = 0.8 // equal to (2, 1), later in grid order
	if c := cands[pickTuned(cands, nil)]; c.alpha != 0.25 || c.share != 0 {
		t.Errorf("full grid chose alpha %v share %v, want 0.25, 0", c.alpha, c.share)
	}
	if c := cands[pickTuned(cands, inDCQCNSizeGrid)]; c.alpha != 2 || c.share != 1 {
		t.Errorf("DCQCN-size grid chose alpha %v share %v, want 2, 1", c.alpha, c.share)
	}
	n := 0
	for _, c := range cands {
		if inDCQCNSizeGrid(c) {
			n++
		}
	}
	if n != 8 {
		t.Errorf("the grid of DCQCN's size has %d settings, want 8 (dcqcn:wan-tuned's)", n)
	}
}

// TestWanTunedMechanisms: WanTunedSuffix applies to the static Long-haul
// CNP rows; on any other the error names the mechanism, and Run refuses it
// before its first run.
func TestWanTunedMechanisms(t *testing.T) {
	for _, tt := range []struct {
		desc, mech string
		wantErr    string // "" for none
	}{
		{"dcqcn's own", "dcqcn" + WanTunedSuffix, ""},
		{"the options", "long-haul-cnp" + OptionsSuffix + WanTunedSuffix, ""},
		{"the file's params", "long-haul-cnp" + WanTunedSuffix, ""},
		{"fast cnp", "fast-cnp" + WanTunedSuffix, `"fast-cnp:wan-tuned": :wan-tuned chooses Long-haul CNP's alpha and V_growth, and fast-cnp is not`},
		{"dcqcn's paper set", "dcqcn:paper" + WanTunedSuffix, "dcqcn:paper is not a static Long-haul CNP row"},
		{"the closed-loop tuner", "long-haul-cnp" + TunerSuffix + WanTunedSuffix, "long-haul-cnp+tuner is not a static Long-haul CNP row"},
		{"no such base", "hpcc" + WanTunedSuffix, `no mechanism "hpcc" to tune`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			v, err := LookupVariant(tt.mech)
			if tt.wantErr == "" {
				if err != nil || v.Name != tt.mech {
					t.Fatalf("LookupVariant(%q) = %q, %v", tt.mech, v.Name, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("LookupVariant(%q) error %v, want it to say %q", tt.mech, err, tt.wantErr)
			}
			sc := loadScenario(t, "rtt-step.yaml")
			dir := t.TempDir()
			_, err = Run(context.Background(), []*scenario.Scenario{sc}, dir, Options{Mechanisms: []string{"dcqcn", tt.mech}})
			if err == nil || !strings.Contains(err.Error(), tt.mech) {
				t.Fatalf("Run with %q: error %v, want one naming it", tt.mech, err)
			}
		})
	}
}

// TestOptionsWanTunedRow: the row runs the grid's chosen setting (its
// alpha and V_growth among the grid's, the options on) and states its
// choice and the DCQCN-size grid's.
func TestOptionsWanTunedRow(t *testing.T) {
	sc := loadScenario(t, "rtt-step.yaml")
	sc.Duration = 20 * time.Millisecond
	v, err := LookupVariant("long-haul-cnp" + OptionsSuffix + WanTunedSuffix)
	if err != nil {
		t.Fatal(err)
	}
	c, note, err := v.Apply(context.Background(), sc, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := c.Mechanism.LongHaulCNP()
	if !p.OneCutPerEpisode || !p.PerFlowRTT || !p.RepeatResume {
		t.Errorf("the options are not on: %+v", p)
	}
	want := strings.NewReplacer("=", " ", ",", ", ").Replace(gridName(p.Alpha, p.VGrowth))
	if !strings.HasPrefix(note, want+" (drops ") || !strings.Contains(note, "of 15 settings); a grid of DCQCN's size (8 settings)") {
		t.Errorf("note %q does not state the choice %q and the DCQCN-size grid's", note, want)
	}
}
