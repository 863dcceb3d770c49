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
		return TunerAction{ID: id, Time: at, Outcome: outcome, DryRun: dry, Before: b, After: a}
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
				{Time: 10, Setting: "alpha", Before: 0.5, After: 0.25, By: "tuner", TunerID: id(7)},
				{Time: 20, Setting: "alpha", Before: 0.25, After: 0.75, By: "operator"},
			},
		},
		{
			desc: "a dry run changes nothing: the change is an operator's",
			t:    []float64{0, 10},
			v:    []*float64{f(0.5), f(0.25)},
			acts: []TunerAction{act(1, 9, "dry-run", true, 0.5, 0.25)},
			want: []ConfigChange{{Time: 10, Setting: "alpha", Before: 0.5, After: 0.25, By: "operator"}},
		},
		{
			desc: "a rolled-back change and the switch's rollback",
			t:    []float64{0, 10, 30},
			v:    []*float64{f(0.5), f(0.25), f(0.5)},
			acts: []TunerAction{act(3, 9, "rolled-back", false, 0.5, 0.25)},
			want: []ConfigChange{
				{Time: 10, Setting: "alpha", Before: 0.5, After: 0.25, By: "tuner", TunerID: id(3)},
				{Time: 30, Setting: "alpha", Before: 0.25, After: 0.5, By: "rollback", TunerID: id(3)},
			},
		},
		{
			desc: "a decision long after the change is not its cause",
			t:    []float64{0, 10},
			v:    []*float64{f(0.5), f(0.25)},
			acts: []TunerAction{act(4, 60, "confirmed", false, 0.5, 0.25)},
			want: []ConfigChange{{Time: 10, Setting: "alpha", Before: 0.5, After: 0.25, By: "operator"}},
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
				{Time: 10, Setting: "alpha", Before: 0.5, After: 0.25, By: "tuner", TunerID: id(7)},
				{Time: 20, Setting: "alpha", Before: 0.25, After: 0.75, By: "operator", TunerID: id(8), HoldUntil: f(924)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, attribute("alpha", tt.t, tt.v, tt.acts)); diff != "" {
				t.Errorf("attribute (-want +got):\n%s", diff)
			}
		})
	}
}
