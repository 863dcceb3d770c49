package compare

import (
	"cmp"
	"math"
	"slices"
)

// RatioMove is how far a seed's ratio must move for the seed to count as
// better or worse in a paired comparison (EvalPaired): the sessions'
// development rounds' 0.02 (docs/tuner.md).
const RatioMove = 0.02

// EvalPaired is two policies' tuned runs on the same seeds, each seed's
// ratio taken against the same stored static reference: the development
// comparison of docs/tuner.md ("Developing the policy: `make tuner-dev`").
type EvalPaired struct {
	// Remeasured says the reference is the best static setting
	// re-measured at a disjoint simulation seed (every base row has it);
	// else the in-sample best.
	Remeasured bool
	// Seeds, and each seed's ratio (tuner J, the mean over the simulation
	// seeds, over the reference J) under the new policy and the old.
	Seeds    []int64
	New, Old []float64
	// The mean ratio and the worst tenth (the mean of the worst tenth of
	// the ratios, at least one, as the tables' bars) of each.
	MeanNew, WorstNew, MeanOld, WorstOld float64
	// Diff is the mean of the paired differences New − Old, DiffSE its
	// standard error across seeds.
	Diff, DiffSE float64
	// Better and Worse count the seeds whose ratio moved down or up by
	// more than RatioMove.
	Better, Worse int
	// Moved are the indices of the seeds by how far their ratio moved,
	// the farthest first (ties by seed).
	Moved []int
}

// PairEval compares the tuned J of newer and older (one per base row, in
// base's order) against base's static columns.
func PairEval(base []EvalRow, newer, older []float64) EvalPaired {
	p := EvalPaired{Remeasured: len(base) > 0}
	if len(base) == 0 {
		return p
	}
	for _, b := range base {
		if !(b.Remeasured > 0) {
			p.Remeasured = false
		}
	}
	diffs := make([]float64, len(base))
	for i, b := range base {
		ref := b.Best
		if p.Remeasured {
			ref = b.Remeasured
		}
		p.Seeds = append(p.Seeds, b.Draw.Seed)
		p.New = append(p.New, newer[i]/ref)
		p.Old = append(p.Old, older[i]/ref)
		diffs[i] = p.New[i] - p.Old[i]
		switch {
		case diffs[i] < -RatioMove:
			p.Better++
		case diffs[i] > RatioMove:
			p.Worse++
		}
		p.Moved = append(p.Moved, i)
	}
	p.MeanNew, p.WorstNew = meanAndWorstTenth(p.New)
	p.MeanOld, p.WorstOld = meanAndWorstTenth(p.Old)
	p.Diff, p.DiffSE = mean(diffs), meanStdErr(diffs)
	slices.SortStableFunc(p.Moved, func(a, b int) int {
		return cmp.Or(cmp.Compare(math.Abs(diffs[b]), math.Abs(diffs[a])), cmp.Compare(p.Seeds[a], p.Seeds[b]))
	})
	return p
}
