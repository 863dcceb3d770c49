package dashboard

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAttribute(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	act := func(id int64, at float64, outcome string, dry bool, before, after float64) TunerAction {
		b, _ := json.Marshal(map[string]any{"kmax_mode": "BDP_ADAPTIVE", "alpha": before})
		a, _ := json.Marshal(map[string]any{"kmax_mode": "BDP_ADAPTIVE", "alpha": after})
		rule := "kmax"
		if outcome == "operator" {
			rule = "operator"
		}
		return TunerAction{ID: id, Time: at, Outcome: outcome, DryRun: dry, Before: b, After: a, Rule: rule}
	}
	id := func(v int64) *int64 { return &v }
	tests := []struct {
		desc string
		t    []float64
		v    []*float64
		acts []TunerAction
		want []ConfigChange
	}{
		{desc: "no change", t: []float64{0, 10}, v: []*float64{f(0.5), f(0.5)}, want: []ConfigChange{}},
		{
			desc: "the tuner's change, then an operator's",
			t:    []float64{0, 10, 20},
			v:    []*float64{f(0.5), f(0.25), f(0.75)},
			acts: []TunerAction{act(7, 9, "confirmed", false, 0.5, 0.25)},
			want: []ConfigChange{
				{Time: 10, Setting: "alpha", Before: f(0.5), After: f(0.25), By: "tuner", Rule: "kmax", TunerID: id(7)},
				{Time: 20, Setting: "alpha", Before: f(0.25), After: f(0.75), By: "operator"},
			},
		},
		{
			desc: "a dry run changes nothing: the change is an operator's",
			t:    []float64{0, 10},
			v:    []*float64{f(0.5), f(0.25)},
			acts: []TunerAction{act(1, 9, "dry-run", true, 0.5, 0.25)},
			want: []ConfigChange{{Time: 10, Setting: "alpha", Before: f(0.5), After: f(0.25), By: "operator"}},
		},
		{
			desc: "a rolled-back change and the switch's rollback",
			t:    []float64{0, 10, 30},
			v:    []*float64{f(0.5), f(0.25), f(0.5)},
			acts: []TunerAction{act(3, 9, "rolled-back", false, 0.5, 0.25)},
			want: []ConfigChange{
				{Time: 10, Setting: "alpha", Before: f(0.5), After: f(0.25), By: "tuner", Rule: "kmax", TunerID: id(3)},
				{Time: 30, Setting: "alpha", Before: f(0.25), After: f(0.5), By: "rollback", Rule: "kmax", TunerID: id(3)},
			},
		},
		{
			desc: "a decision long after the change is not its cause",
			t:    []float64{0, 10},
			v:    []*float64{f(0.5), f(0.25)},
			acts: []TunerAction{act(4, 60, "confirmed", false, 0.5, 0.25)},
			want: []ConfigChange{{Time: 10, Setting: "alpha", Before: f(0.5), After: f(0.25), By: "operator"}},
		},
		{
			desc: "an operator's change the tuner saw: its operator row and hold",
			t:    []float64{0, 10, 20},
			v:    []*float64{f(0.5), f(0.25), f(0.75)},
			acts: func() []TunerAction {
				op := act(8, 24, "operator", false, 0.25, 0.75)
				op.HoldUntil = f(924)
				return []TunerAction{act(7, 9, "confirmed", false, 0.5, 0.25), op}
			}(),
			want: []ConfigChange{
				{Time: 10, Setting: "alpha", Before: f(0.5), After: f(0.25), By: "tuner", Rule: "kmax", TunerID: id(7)},
				{Time: 20, Setting: "alpha", Before: f(0.25), After: f(0.75), By: "operator", Rule: "operator", TunerID: id(8), HoldUntil: f(924)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, attribute(tunedLeaves[0], tt.t, tt.v, tt.acts)); diff != "" {
				t.Errorf("attribute (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAttributeLeaves: every tuned leaf's changes, each explained only by a
// decision that changed that leaf; overload_cut is off where the tuner's
// JSON leaves it out.
func TestAttributeLeaves(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	id := func(v int64) *int64 { return &v }
	leaf := func(setting string) tunedLeaf {
		for _, l := range tunedLeaves {
			if l.setting == setting {
				return l
			}
		}
		t.Fatalf("no tuned leaf %q", setting)
		return tunedLeaf{}
	}
	act := func(id int64, at float64, rule, outcome, before, after string) TunerAction {
		return TunerAction{ID: id, Time: at, Rule: rule, Outcome: outcome, Before: json.RawMessage(before), After: json.RawMessage(after)}
	}
	const (
		vg1    = `{"kmax_mode": "BDP_ADAPTIVE", "alpha": 1, "v_growth_bytes_per_second": 1000000}`
		vg2    = `{"kmax_mode": "BDP_ADAPTIVE", "alpha": 1, "v_growth_bytes_per_second": 500000}`
		vg2cut = `{"kmax_mode": "BDP_ADAPTIVE", "alpha": 1, "v_growth_bytes_per_second": 500000, "overload_cut": true}`
		vg3    = `{"kmax_mode": "BDP_ADAPTIVE", "alpha": 1, "v_growth_bytes_per_second": 2000000}`
	)
	tests := []struct {
		desc    string
		setting string
		t       []float64
		v       []*float64
		acts    []TunerAction
		want    []ConfigChange
	}{
		{
			desc:    "V_growth: the tuner's (rule growth), then an operator's the tuner saw",
			setting: "v_growth", t: []float64{0, 10, 20}, v: []*float64{f(1e6), f(5e5), f(2e6)},
			acts: []TunerAction{act(1, 9, "growth", "confirmed", vg1, vg2), act(2, 22, "operator", "operator", vg2, vg3)},
			want: []ConfigChange{
				{Time: 10, Setting: "v_growth", Before: f(1e6), After: f(5e5), By: "tuner", Rule: "growth", TunerID: id(1)},
				{Time: 20, Setting: "v_growth", Before: f(5e5), After: f(2e6), By: "operator", Rule: "operator", TunerID: id(2)},
			},
		},
		{
			desc:    "V_growth: a decision that moved alpha only does not explain it",
			setting: "v_growth", t: []float64{0, 10}, v: []*float64{f(1e6), f(5e5)},
			acts: []TunerAction{act(1, 9, "delay", "confirmed", `{"kmax_mode": "BDP_ADAPTIVE", "alpha": 1, "v_growth_bytes_per_second": 500000}`,
				`{"kmax_mode": "BDP_ADAPTIVE", "alpha": 0.5, "v_growth_bytes_per_second": 500000}`)},
			want: []ConfigChange{{Time: 10, Setting: "v_growth", Before: f(1e6), After: f(5e5), By: "operator"}},
		},
		{
			desc:    "overload_cut: rule pinned's on, its off-try rolled back by the switch, then an operator's off",
			setting: "overload_cut", t: []float64{0, 10, 20, 25, 40}, v: []*float64{f(0), f(1), f(0), f(1), f(0)},
			acts: []TunerAction{
				act(1, 9, "pinned", "confirmed", vg1, vg2cut),
				act(2, 19, "pinned", "rolled-back", vg2cut, vg2),
				// A decision of another rule just before the operator's
				// off: its JSON has overload_cut off (left out), but it did
				// not move it.
				act(3, 39, "settle", "confirmed", vg2, `{"kmax_mode": "BDP_ADAPTIVE", "alpha": 0.5, "v_growth_bytes_per_second": 500000}`),
			},
			want: []ConfigChange{
				{Time: 10, Setting: "overload_cut", Before: f(0), After: f(1), By: "tuner", Rule: "pinned", TunerID: id(1)},
				{Time: 20, Setting: "overload_cut", Before: f(1), After: f(0), By: "tuner", Rule: "pinned", TunerID: id(2)},
				{Time: 25, Setting: "overload_cut", Before: f(0), After: f(1), By: "rollback", Rule: "pinned", TunerID: id(2)},
				{Time: 40, Setting: "overload_cut", Before: f(1), After: f(0), By: "operator"},
			},
		},
		{
			desc:    "kmax: the explicit K_max a decision set",
			setting: "kmax", t: []float64{0, 10}, v: []*float64{f(2e6), f(1e6)},
			acts: []TunerAction{act(1, 9, "delay", "pushed", `{"kmax_mode": "EXPLICIT", "kmax_bytes": 2000000, "v_growth_bytes_per_second": 1}`,
				`{"kmax_mode": "EXPLICIT", "kmax_bytes": 1000000, "v_growth_bytes_per_second": 1}`)},
			want: []ConfigChange{{Time: 10, Setting: "kmax", Before: f(2e6), After: f(1e6), By: "tuner", Rule: "delay", TunerID: id(1)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, attribute(leaf(tt.setting), tt.t, tt.v, tt.acts)); diff != "" {
				t.Errorf("attribute (-want +got):\n%s", diff)
			}
		})
	}
	// Holds and releases are rows of their own; operator rows of a change
	// and decisions are not.
	hold := TunerAction{ID: 5, Time: 30, Rule: "operator-hold", Outcome: "operator", HoldUntil: f(930)}
	release := TunerAction{ID: 6, Time: 50, Rule: "operator-release", Outcome: "operator", HoldUntil: f(50)}
	got := holds([]TunerAction{act(1, 9, "pinned", "confirmed", vg1, vg2cut), act(2, 22, "operator", "operator", vg2, vg3), hold, release})
	want := []ConfigChange{
		{Time: 30, By: "hold", Rule: "operator-hold", TunerID: id(5), HoldUntil: f(930)},
		{Time: 50, By: "release", Rule: "operator-release", TunerID: id(6)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("holds (-want +got):\n%s", diff)
	}
}
