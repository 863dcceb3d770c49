package policy

import (
	"math"
	"testing"
	"time"
)

// TestSearch: the online search's experiments in sequence: a baseline of
// min_samples windows first, K_max up, judged against the baseline; a
// rollback tries the next neighbour and leaves the rules' refusals alone,
// a keep tries the same move again; a whole round rolled back at MaxStep
// goes again at √2, then the search rests until RTT_est moves or another
// rule changes the queue.
func TestSearch(t *testing.T) {
	sh := shape{util: 0.95, firstRTT: 0.3, lastRTT: 0.3, alpha: 1, vgShare: 0.1, search: true,
		mem: Memory{LastChange: t0.Add(-10), Changes: 1}}
	const rate, rtt = 100e9, 10 * time.Millisecond
	cfg, w, mem := sh.scaled(rate, rtt)
	var d Decision
	for i := range cfg.MinSamples {
		d, mem = Decide(cfg, w, mem)
		if want := i == cfg.MinSamples-1; d.Change != want {
			t.Fatalf("window %d: change %v (%s %s), want %v: min_samples windows of baseline first", i, d.Change, d.Rule, d.Reason, want)
		}
	}
	if d.Rule != RuleSearch || d.Direction != Loosen || d.After.Alpha != 2 || d.After.VGrowthBytesPerSec != w.Config.VGrowthBytesPerSec {
		t.Fatalf("first experiment: %s %s alpha %v V_growth %d, want search loosen alpha 2 (%s)", d.Rule, d.Direction, d.After.Alpha, d.After.VGrowthBytesPerSec, d.Reason)
	}
	if math.Abs(d.Baseline-d.Objective) > 1e-12 || d.JudgeRTT != cfg.SearchJudgeRTT || !mem.Search.Trying || mem.Search.N != 0 {
		t.Errorf("baseline %v (window %v), judge %v RTT_est, memory %+v", d.Baseline, d.Objective, d.JudgeRTT, mem.Search)
	}
	// The judgement: kept only when better than the baseline by search_gain.
	c := CommitOf(d, w)
	for _, tt := range []struct {
		util float64
		keep bool
	}{{0.95, false}, {0.99, true}, {0.5, false}} {
		jw := w
		jw.Config = d.After
		_, sw, _ := shape{util: tt.util, firstRTT: 0.3, lastRTT: 0.3, alpha: 2, vgShare: 0.1}.scaled(rate, rtt)
		jw.Samples = sw.Samples
		if j := c.Judge(cfg, jw); j.Keep != tt.keep || j.Wait {
			t.Errorf("judged at utilisation %v: keep %v, want %v (%s)", tt.util, j.Keep, tt.keep, j.Reason)
		}
	}
	// Rolled back: the next neighbour, K_max down; the rules' memory as it was.
	mem.Rejected, mem.RejectedUntil = Tighten, t0.Add(-time.Hour)
	back := cfg.Reverted(mem, w.End, true)
	if back.Search.Move != 1 || back.Search.Fails != 1 || back.Search.Trying || back.Rejected != Tighten || back.Direction != mem.Direction {
		t.Errorf("after a rollback: %+v", back)
	}
	w2 := w
	w2.Start, w2.End = w.Start.Add(5*rtt), w.End.Add(5*rtt)
	for i := range w2.Samples {
		w2.Samples[i].Time = w.Samples[i].Time.Add(5 * rtt)
	}
	m := back
	for range cfg.MinSamples {
		d, m = Decide(cfg, w2, m)
	}
	if d.Rule != RuleSearch || d.Direction != Tighten || d.After.Alpha != 0.5 {
		t.Errorf("after a rollback: %s %s alpha %v, want search tighten alpha 0.5 (%s)", d.Rule, d.Direction, d.After.Alpha, d.Reason)
	}
	// Kept (no Reverted): the same move again.
	m = mem
	for range cfg.MinSamples {
		d, m = Decide(cfg, w2, m)
	}
	if d.Rule != RuleSearch || d.Direction != Loosen || m.Search.Fails != 0 {
		t.Errorf("after a keep: %s %s, fails %d, want the same move (%s)", d.Rule, d.Direction, m.Search.Fails, d.Reason)
	}
	// A whole round rolled back at MaxStep: again at √2; then rest.
	m = Memory{LastChange: w.End.Add(-10 * rtt), Changes: 1, Search: Search{N: 2, SumJ: 0.2, Fails: 4, Move: 4, RTTEst: rtt}}
	d, m = Decide(cfg, w2, m)
	if d.Rule != RuleSearch || math.Abs(d.Step-math.Sqrt2) > 1e-9 || d.After.Alpha != 1.414 {
		t.Errorf("a second round: %s step %v alpha %v, want alpha 1.414 (%s)", d.Rule, d.Step, d.After.Alpha, d.Reason)
	}
	m = Memory{LastChange: w.End.Add(-10 * rtt), Changes: 1, Search: Search{N: 2, SumJ: 0.2, Fails: 4, Step: math.Sqrt2, RTTEst: rtt}}
	d, m = Decide(cfg, w2, m)
	if d.Rule != RuleSteady || !m.Search.Done {
		t.Errorf("a round at √2 rolled back: %s, done %v, want steady and resting", d.Rule, m.Search.Done)
	}
	// RTT_est moved (the path changed): the search starts again.
	m.Search.RTTEst = rtt / 2
	d, m = Decide(cfg, w2, m)
	if m.Search.Done || m.Search.N != 1 || m.Search.RTTEst != rtt {
		t.Errorf("RTT_est doubled: %+v, want the search restarted", m.Search)
	}
	// Another rule's change (the traffic moved): the search starts again.
	if s := (Search{Done: true, Fails: 3, Move: 2, N: 9, Step: math.Sqrt2, RTTEst: rtt}).afterChange(RuleDelay); s != (Search{RTTEst: rtt}) {
		t.Errorf("after a delay change: %+v", s)
	}
	// Off by default.
	if DefaultConfig().SearchAfterRTT != 0 {
		t.Error("the search is on by default")
	}
}
