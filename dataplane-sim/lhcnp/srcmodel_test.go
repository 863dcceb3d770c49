package lhcnp

import (
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// TestSourceRateModel: the node's model of a flow's rate at its source
// (srcRate, srcCut; shareResume judges a flow on it while a later cut is
// on its way) follows the reaction point's arithmetic: each cut of an
// episode takes its percentage of what the earlier ones left, a Pause
// takes all of it, a Resume gives back its percentage of the last cut,
// an unconditional Resume (0) restores the rate before the first cut, and
// a new episode (or a cut after a Pause) starts again from the arrival
// rate at the cut.
func TestSourceRateModel(t *testing.T) {
	type step struct {
		resume     bool
		action     wire.Action
		pct        uint16
		cutRate    int64 // the arrival rate at a cut
		needResume bool  // a cut of this episode awaits its Resume
		rate, cut  int64 // srcRate, srcCut after the step
	}
	const g = 1_000_000_000
	for _, tt := range []struct {
		desc       string
		preCutRate int64
		steps      []step
	}{
		{"a cut, a later cut, Resumes", 20 * g, []step{
			{action: wire.ActionRateReduce, pct: 30, cutRate: 20 * g, rate: 14 * g, cut: 6 * g},
			// The second cut's arrival rate (still 20) does not show the
			// first cut yet: the model cuts the 14 the source was left at.
			{action: wire.ActionRateReduce, pct: 50, cutRate: 20 * g, needResume: true, rate: 7 * g, cut: 7 * g},
			{resume: true, pct: 50, rate: 10_500_000_000, cut: 7 * g},
			{resume: true, pct: 100, rate: 17_500_000_000, cut: 7 * g},
			{resume: true, pct: 0, rate: 20 * g, cut: 7 * g},
		}},
		{"a new episode starts from the arrival rate", 20 * g, []step{
			{action: wire.ActionRateReduce, pct: 50, cutRate: 20 * g, rate: 10 * g, cut: 10 * g},
			{action: wire.ActionRateReduce, pct: 10, cutRate: 12 * g, rate: 10_800_000_000, cut: 1_200_000_000},
		}},
		{"a Pause takes all, the next cut starts again", 8 * g, []step{
			{action: wire.ActionPause, cutRate: 8 * g, rate: 0, cut: 8 * g},
			{action: wire.ActionRateReduce, pct: 25, cutRate: 4 * g, needResume: true, rate: 3 * g, cut: 1 * g},
			{resume: true, pct: 0, rate: 8 * g, cut: 1 * g},
		}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			e := &flowEntry{preCutRate: tt.preCutRate}
			for i, s := range tt.steps {
				if s.resume {
					e.modelResume(s.pct)
				} else {
					e.needResume = s.needResume
					e.modelCut(s.cutRate, s.action, s.pct)
				}
				if e.srcRate != s.rate || e.srcCut != s.cut {
					t.Errorf("step %d: srcRate %d, srcCut %d, want %d, %d", i, e.srcRate, e.srcCut, s.rate, s.cut)
				}
			}
		})
	}
}
