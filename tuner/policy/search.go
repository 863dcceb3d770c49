package policy

import (
	"fmt"
	"math"
	"time"

	"github.com/lhcnp/lhcnp/internal/plural"
)

// RuleSearch is an experiment of the online search: from a steady queue,
// one neighbouring setting tried for one judgement and kept only when the
// objective over its judge window beats the queue's own since the last
// change (Search).
const RuleSearch Rule = "search"

// Search is the online search's memory of one queue (rule search,
// docs/tuner.md "The search"). The zero value is a search not started.
type Search struct {
	// SumJ and N are the objectives of the windows decided on since the
	// last change (the baseline an experiment must beat).
	SumJ float64
	N    int
	// Move is the next neighbour to try (searchMoves), Fails the
	// experiments rolled back since the last one kept, Step the factor of
	// a move (0: MaxStep).
	Move, Fails int
	Step        float64
	// Trying: the last change was an experiment not yet rolled back (the
	// next decision after it finds it kept).
	Trying bool
	// Done: every neighbour at the smallest step was worse; the search
	// rests until a rule other than search changes the queue or RTT_est
	// moves (a new load or path).
	Done bool
	// RTTEst is the RTT_est the search started at.
	RTTEst time.Duration
}

// searchMoves are the neighbours an experiment tries, in turn: K_max up
// and down (alpha, or the explicit kmax), V_growth up and down.
var searchMoves = [...]struct {
	kmax bool
	dir  Direction
}{{true, Loosen}, {true, Tighten}, {false, Loosen}, {false, Tighten}}

// searchMinStep is the smallest factor of a move: a full round of
// neighbours rolled back at MaxStep is tried again at √2, and then the
// search rests.
var searchMinStep = math.Sqrt2

// observe adds a decided window's objective to the baseline, finds a
// pending experiment kept (no Reverted came), and restarts a resting
// search whose RTT_est moved.
func (s *Search) observe(cfg Config, w Window, j float64) {
	if cfg.SearchAfterRTT <= 0 {
		return
	}
	if s.Trying {
		s.Trying, s.Fails = false, 0 // kept: the same move again next
	}
	if s.RTTEst > 0 && w.RTTEst > 0 && (float64(w.RTTEst) > cfg.MinStep*float64(s.RTTEst) || float64(s.RTTEst) > cfg.MinStep*float64(w.RTTEst)) {
		*s = Search{}
	}
	if s.RTTEst == 0 {
		s.RTTEst = w.RTTEst
	}
	if !math.IsNaN(j) && !math.IsInf(j, 0) {
		s.SumJ += j
		s.N++
	}
}

// afterChange is the search's memory after a change of rule r: an
// experiment waits for its judgement; any other rule's change means the
// traffic moved, and the search starts again.
func (s Search) afterChange(r Rule) Search {
	s.SumJ, s.N = 0, 0
	if r == RuleSearch {
		s.Trying = true
		return s
	}
	return Search{RTTEst: s.RTTEst}
}

// search is the experiment for a steady queue: the next neighbour of
// searchMoves that the bounds let move, by the search's step. ok is false
// when the search is off, resting, too early (SearchAfterRTT RTT_est since
// the last change, and MinSamples windows of baseline), or no neighbour
// can move.
func search(cfg Config, w Window, mem *Memory) (after Settings, dir Direction, step float64, why string, ok bool) {
	s := &mem.Search
	if cfg.SearchAfterRTT <= 0 || s.Done || mem.Lifted.KMaxMode != "" || w.RTTEst <= 0 || s.N < cfg.MinSamples {
		return w.Config, Hold, 0, "", false
	}
	if !mem.LastChange.IsZero() && w.simSeconds(w.End.Sub(mem.LastChange)) < cfg.SearchAfterRTT*w.RTTEst.Seconds() {
		return w.Config, Hold, 0, "", false
	}
	if s.Step == 0 {
		s.Step = cfg.MaxStep
	}
	for range 2 * len(searchMoves) {
		if s.Fails >= len(searchMoves) {
			// A whole round rolled back: a smaller step, or rest.
			if s.Step <= searchMinStep*1.0001 {
				s.Done = true
				return w.Config, Hold, 0, "", false
			}
			s.Step, s.Fails = math.Max(searchMinStep, math.Sqrt(s.Step)), 0
		}
		mv := searchMoves[s.Move%len(searchMoves)]
		rule := RuleOverhead // V_growth only
		if mv.kmax {
			rule = RuleSearch
		}
		a := searchApply(cfg, w, mv.dir, rule, s.Step)
		if a != w.Config {
			knob := "V_growth"
			if mv.kmax {
				knob = "K_max"
			}
			return a, mv.dir, s.Step, fmt.Sprintf("steady for %.3g RTT_est: try %s %s by %.3g for one judgement (baseline objective %.4g over %s; kept only if better by %.3g)",
				w.simSeconds(w.End.Sub(mem.LastChange))/w.RTTEst.Seconds(), knob, mv.dir, s.Step, s.SumJ/float64(s.N), plural.Count(s.N, "window"), cfg.SearchGain), true
		}
		s.Move++ // at its bound: the next neighbour
		s.Fails++
	}
	s.Done = true
	return w.Config, Hold, 0, "", false
}

// searchApply is one move of K_max (rule RuleSearch) or V_growth (rule
// RuleOverhead) by step in dir, within the bounds; no floors of the
// rules: an experiment is judged, and rolled back when worse.
func searchApply(cfg Config, w Window, dir Direction, rule Rule, step float64) Settings {
	if rule == RuleSearch && !cfg.TuneKMax {
		return w.Config
	}
	if rule == RuleOverhead && (!cfg.TuneVGrowth || qgrOff(w.Config.VGrowthBytesPerSec, w.PortRateBitsPerSec)) {
		return w.Config // a trigger that is off stays the growth rule's
	}
	after, _ := apply(cfg, w, dir, rule, step, Settings{}, false)
	if rule == RuleSearch {
		after.VGrowthBytesPerSec = w.Config.VGrowthBytesPerSec
	}
	return after
}
