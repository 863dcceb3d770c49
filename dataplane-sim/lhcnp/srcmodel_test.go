package lhcnp

import (
	"math/rand/v2"
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
		// websearch-50's web/426 (issue #27, session 17): a 25 Gb/s flow
		// cut once, then resumed again and again after its last packet
		// (each Resume gives back its percentage of the last cut). The
		// reaction point raises the rate at most to its rate before the
		// first cut; the model did not, and stood at 64 Gb/s.
		{"Resumes stop at the rate before the first cut", 25 * g, []step{
			{action: wire.ActionRateReduce, pct: 30, cutRate: 25 * g, rate: 17_500_000_000, cut: 7_500_000_000},
			{resume: true, pct: 60, rate: 22 * g, cut: 7_500_000_000},
			{resume: true, pct: 60, rate: 25 * g, cut: 7_500_000_000},
			{resume: true, pct: 100, rate: 25 * g, cut: 7_500_000_000},
			{resume: true, pct: 100, rate: 25 * g, cut: 7_500_000_000},
			{resume: true, pct: 0, rate: 25 * g, cut: 7_500_000_000},
		}},
		// A cut after a Pause starts from the arrival rate then, which
		// may be above the rate before the first cut (a flow ramping up):
		// a Resume does not lower the model below where it stands.
		{"a Resume does not lower a model restarted above the ceiling", 8 * g, []step{
			{action: wire.ActionPause, cutRate: 8 * g, rate: 0, cut: 8 * g},
			{action: wire.ActionRateReduce, pct: 25, cutRate: 12 * g, needResume: true, rate: 9 * g, cut: 3 * g},
			{resume: true, pct: 100, rate: 9 * g, cut: 3 * g},
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

// TestSourceRateModelCeiling: over seeded random sequences of cuts,
// Pauses and Resumes whose arrival rate at each cut is at most the flow's
// rate before the node's first cut, the model stays within [0, that
// rate]: the reaction point never raises a rate above its rate before
// its first cut, and neither may the node's model of it (issue #27:
// twelve Resumes took web/426's model to 64 Gb/s on a 25 Gb/s sender).
func TestSourceRateModelCeiling(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 17))
	for seq := range 200 {
		pre := int64(1+r.IntN(400)) * 1_000_000_000
		e := &flowEntry{preCutRate: pre}
		for i := range 40 {
			switch k := r.IntN(10); {
			case k < 4:
				e.modelResume(uint16(1 + r.IntN(100)))
			case k == 4:
				e.modelResume(0)
			default:
				a, pct := wire.ActionRateReduce, uint16(1+r.IntN(100))
				if k == 9 {
					a, pct = wire.ActionPause, 1
				}
				e.needResume = i > 0
				e.modelCut(r.Int64N(pre+1), a, pct)
			}
			if e.srcRate < 0 || e.srcRate > pre {
				t.Fatalf("sequence %d step %d: srcRate %d outside [0, %d]", seq, i, e.srcRate, pre)
			}
		}
	}
}
