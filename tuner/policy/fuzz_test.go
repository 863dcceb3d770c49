package policy

import (
	"math"
	"strings"
	"testing"
	"time"
)

// FuzzDecide: whatever the telemetry says, Decide does not panic, and a
// change stays inside the configured bounds (so inside the YANG ranges)
// and moves by at most max-step.
func FuzzDecide(f *testing.F) {
	f.Add(int64(1_000_000), int64(500_000_000), 0.5, int64(10), int64(0), 1.0, int64(1_250_000_000), int64(100_000_000_000), int64(10_000_000))
	f.Add(int64(-5), int64(0), math.NaN(), int64(-1), int64(7), 0.001, int64(1), int64(1), int64(1))
	// An under-used link (60 %) with the queue far under K_min and the node
	// cutting: rule qgr-off's window on the pass with qgr_off_rtt on.
	f.Add(int64(1_000_000), int64(7_500_000_000), 0.0, int64(20), int64(0), 1.0, int64(1_250_000_000), int64(100_000_000_000), int64(10_000_000))
	f.Fuzz(func(t *testing.T, depth, tx int64, emr float64, notifies, drops int64, alpha float64, vgrowth, rate, rttNs int64) {
		cfg := DefaultConfig()
		w := Window{Start: t0, End: t0.Add(4 * time.Second), KBaseBytes: 65536, RTTEst: time.Duration(rttNs),
			PortRateBitsPerSec: rate, Config: Settings{KMaxMode: KMaxBDP, Alpha: alpha, VGrowthBytesPerSec: vgrowth}}
		for i := range 5 {
			w.Samples = append(w.Samples, Sample{Time: t0.Add(time.Duration(i) * time.Second),
				QueueDepthBytes: depth * int64(i), ECNMarkingPercent: emr, TxBytes: tx, Packets: tx / 1000,
				Drops: drops, Notifications: Notifications{Notify: notifies}})
		}
		d, _ := Decide(cfg, w, Memory{})
		checkChange(t, cfg, w, d)
		// Every rule on, no starting K_max (rulesConfig): the same checks.
		cfg = rulesConfig()
		d, _ = Decide(cfg, w, Memory{})
		checkChange(t, cfg, w, d)
		// standing_floor_share at its lowest (1): the same checks, and a
		// delay tightening never sets K_max under the window's last sample.
		cfg.StandingFloorShare = 1
		d, _ = Decide(cfg, w, Memory{})
		checkChange(t, cfg, w, d)
		if last := w.Samples[len(w.Samples)-1].QueueDepthBytes; d.Change && d.Rule == RuleDelay && d.After.Alpha < alpha &&
			d.After.Alpha*float64(w.bdpBytes(1)) < float64(last)*(1-1e-9) {
			t.Errorf("standing_floor_share 1: delay set alpha %v (K_max %.0f B) under the queue's %d B", d.After.Alpha, d.After.Alpha*w.bdpBytes(1), last)
		}
		// overrun_headroom_share on ("A loop that overfills the buffer"),
		// with a buffer of 4 × the window's last sample: the same checks.
		cfg = rulesConfig()
		cfg.OverrunHeadroomShare = 0.75
		w.BufferBytes = 4 * w.Samples[len(w.Samples)-1].QueueDepthBytes
		d, _ = Decide(cfg, w, Memory{Changes: 1, LastChange: t0.Add(-time.Minute)})
		checkChange(t, cfg, w, d)
		// qgr_off_rtt on, with evidence running for a minute: the same
		// checks, V_growth to R_port by qgr-off alone and only for an
		// under-used link with a queue under K_min.
		cfg = rulesConfig()
		cfg.QGROffRTT = 2
		if k := alpha * w.bdpBytes(1); k > 0 && k < 1e18 {
			w.EffectiveKMaxBytes = int64(k) // as the switch reports it: K_min is half of it
		}
		d, _ = Decide(cfg, w, Memory{Changes: 1, QGRCostSince: t0.Add(-time.Minute)})
		checkChange(t, cfg, w, d)
		if m := Measure(w); d.Rule == RuleQGROff && (m.Utilisation >= cfg.UtilisationUnder || !underKMin(w, kmaxBytes(w)/2)) {
			t.Errorf("qgr-off on a link %.3g used with a peak queue of %d B (K_max %d B)", m.Utilisation, m.PeakQueueBytes, kmaxBytes(w))
		}
	})
}

// FuzzDecideLifted: the same with a queue growing or draining at any pace
// after an overrun lifted K_max from any setting: no panic, changes inside
// the bounds and max_step, and a settle never below the lifted-from K_max
// (as far as the bounds allow).
func FuzzDecideLifted(f *testing.F) {
	f.Add(int64(2_000_000), int64(-100_000), 4.0, 1.0, int64(1_250_000_000))
	f.Add(int64(0), int64(5_000_000), 0.5, 2.0, int64(0))
	// A setting of before rounding up (3 digits) above the current alpha:
	// settle's floor patched in after the step raised alpha to 1.
	f.Add(int64(3_750_000), int64(0), 0.9995, 0.9991, int64(1_250_000_000))
	f.Fuzz(func(t *testing.T, depth, slope int64, alpha, lifted float64, vgrowth int64) {
		cfg := rulesConfig()
		w := Window{Start: t0, End: t0.Add(4 * time.Millisecond), KBaseBytes: 65536, RTTEst: 10 * time.Millisecond,
			PortRateBitsPerSec: 10_000_000_000, Config: Settings{KMaxMode: KMaxBDP, Alpha: alpha, VGrowthBytesPerSec: vgrowth}}
		w.EffectiveKMaxBytes = int64(alpha * 12_500_000)
		w.Samples = paced(depth, slope)
		mem := Memory{LastChange: t0.Add(-time.Minute), Lifted: Settings{KMaxMode: KMaxBDP, Alpha: lifted, VGrowthBytesPerSec: vgrowth}}
		d, got := Decide(cfg, w, mem)
		checkChange(t, cfg, w, d)
		if d.Change && d.Rule == RuleSettle && d.After.Alpha < math.Min(lifted, cfg.AlphaMax)-1e-9 {
			t.Errorf("settle to alpha %v, below the lifted-from %v (alpha_max %v)", d.After.Alpha, lifted, cfg.AlphaMax)
		}
		// settle_whole: a settle lands on the lifted-from alpha, as far
		// as the bounds and the model's 3 digits allow.
		whole := cfg
		whole.SettleWhole = true
		d, _ = Decide(whole, w, mem)
		checkChange(t, whole, w, d)
		if d.Change && d.Rule == RuleSettle && lifted >= cfg.AlphaMin && lifted <= cfg.AlphaMax &&
			math.Abs(d.After.Alpha-lifted) > 1e-3 {
			t.Errorf("settle_whole: settle to alpha %v, the lifted-from %v", d.After.Alpha, lifted)
		}
		checkSettleBound(t, d, got)
	})
}

// FuzzDecideExplicit: the same in explicit K_max mode, with any kmax and
// any kmax an overrun lifted it from: no panic, a kmax inside
// [alpha_min, alpha_max] × the port's BDP, a settle never below the lifted-from
// kmax (as far as the bounds allow).
func FuzzDecideExplicit(f *testing.F) {
	f.Add(int64(2_000_000), int64(-100_000), int64(50_000_000), int64(12_500_000), int64(1_250_000_000))
	f.Add(int64(0), int64(5_000_000), int64(1), int64(1<<40), int64(0))
	f.Fuzz(func(t *testing.T, depth, slope, kmax, lifted, vgrowth int64) {
		cfg := rulesConfig()
		w := Window{Start: t0, End: t0.Add(4 * time.Millisecond), KBaseBytes: 65536, RTTEst: 10 * time.Millisecond,
			PortRateBitsPerSec: 10_000_000_000, Config: Settings{KMaxMode: KMaxExplicit, KMaxBytes: kmax, VGrowthBytesPerSec: vgrowth}}
		w.EffectiveKMaxBytes = kmax
		w.Samples = paced(depth, slope)
		mem := Memory{LastChange: t0.Add(-time.Minute), Lifted: Settings{KMaxMode: KMaxExplicit, KMaxBytes: lifted, VGrowthBytesPerSec: vgrowth}}
		d, got := Decide(cfg, w, mem)
		checkChange(t, cfg, w, d)
		if _, hi := cfg.kmaxBounds(w); d.Change && d.Rule == RuleSettle && d.After.KMaxBytes < min(lifted, hi) {
			t.Errorf("settle to kmax %d, below the lifted-from %d (the bound %d)", d.After.KMaxBytes, lifted, hi)
		}
		checkSettleBound(t, d, got)
	})
}

// paced is five samples a millisecond apart of a queue moving by slope
// bytes per sample on a full 10 Gbit/s link.
func paced(depth, slope int64) []Sample {
	var out []Sample
	for i := range 5 {
		out = append(out, Sample{Time: t0.Add(time.Duration(i) * time.Millisecond),
			QueueDepthBytes: max(0, depth+slope*int64(i)), TxBytes: 1_250_000, Packets: 300})
	}
	return out
}

// checkSettleBound fails t when a settle that cannot move K_max keeps the
// lift (it would hold every growth and delay tightening for ever).
func checkSettleBound(t *testing.T, d Decision, mem Memory) {
	t.Helper()
	if d.Rule == RuleBound && strings.Contains(d.Reason, "the overload is over") && mem.Lifted != (Settings{}) {
		t.Errorf("settle ended in bound (%s) with the lift kept: %+v", d.Reason, mem.Lifted)
	}
}

// checkChange fails t when a change leaves the bounds or moves by more
// than max_step.
func checkChange(t *testing.T, cfg Config, w Window, d Decision) {
	t.Helper()
	if !d.Change {
		return
	}
	a := d.After
	if a.Alpha != w.Config.Alpha && (a.Alpha < cfg.AlphaMin || a.Alpha > cfg.AlphaMax) {
		t.Errorf("alpha %v outside [%v, %v]", a.Alpha, cfg.AlphaMin, cfg.AlphaMax)
	}
	if a.Alpha != w.Config.Alpha && AlphaHasExtraDigits(a.Alpha) {
		t.Errorf("alpha %v has more than %d fraction digits", a.Alpha, YANGAlphaFractionDigit)
	}
	if lo, hi := cfg.kmaxBounds(w); a.KMaxBytes != w.Config.KMaxBytes && (a.KMaxBytes < lo || a.KMaxBytes > hi) {
		t.Errorf("kmax %v outside [%v, %v]", a.KMaxBytes, lo, hi)
	}
	// V_growth 0 (the QGR trigger off) is never set: rule qgr-off sets the
	// port's rate (as good as off, in the YANG range), only with
	// qgr_off_rtt on, and moves nothing else.
	if a.VGrowthBytesPerSec == 0 && w.Config.VGrowthBytesPerSec != 0 {
		t.Errorf("v-growth %d -> 0 by rule %s", w.Config.VGrowthBytesPerSec, d.Rule)
	}
	off := d.Rule == RuleQGROff
	if off && (cfg.QGROffRTT <= 0 || a.VGrowthBytesPerSec != qgrOffBytesPerSec(w.PortRateBitsPerSec) || a.VGrowthBytesPerSec == w.Config.VGrowthBytesPerSec ||
		a.Alpha != w.Config.Alpha || a.KMaxBytes != w.Config.KMaxBytes || a.OverloadCut != w.Config.OverloadCut) {
		t.Errorf("rule qgr-off (qgr_off_rtt %v) changed %+v to %+v: V_growth to R_port alone", cfg.QGROffRTT, w.Config, a)
	}
	if lo, hi := cfg.vGrowthBounds(w.PortRateBitsPerSec); !off && a.VGrowthBytesPerSec != w.Config.VGrowthBytesPerSec && (a.VGrowthBytesPerSec < lo || a.VGrowthBytesPerSec > hi) {
		t.Errorf("v-growth %v outside [%v, %v]", a.VGrowthBytesPerSec, lo, hi)
	}
	// A change never moves K_max against its direction (a bound that
	// clamps an operator's value back would).
	if d.Direction == Loosen && (a.Alpha < w.Config.Alpha || a.KMaxBytes < w.Config.KMaxBytes) ||
		d.Direction == Tighten && (a.Alpha > w.Config.Alpha || a.KMaxBytes > w.Config.KMaxBytes) {
		t.Errorf("a %s moved K_max the other way: alpha %v -> %v, kmax %d -> %d (%s)",
			d.Direction, w.Config.Alpha, a.Alpha, w.Config.KMaxBytes, a.KMaxBytes, d.Reason)
	}
	if d.Rule == RuleStart {
		// The starting point is a place, not a step: K_max goes to
		// alpha_start BDPs (or stays) whatever the switch had.
		if a.KMaxMode == KMaxBDP && a.Alpha != w.Config.Alpha && a.Alpha != cfg.alphaStart(w.Config) {
			t.Errorf("start moved alpha %v -> %v, not to the starting alpha %v (overload_cut %v)", w.Config.Alpha, a.Alpha, cfg.alphaStart(w.Config), w.Config.OverloadCut)
		}
		return
	}
	if d.Rule == RuleSettle && cfg.SettleWhole {
		// A whole settle is a place too: K_max back to the setting the
		// overrun started from (FuzzDecideLifted checks where).
		return
	}
	if r := a.Alpha / w.Config.Alpha; r > cfg.MaxStep*1.001 || r < 1/cfg.MaxStep/1.001 {
		// rounding to 3 digits may move a tiny alpha further; only
		// values the bounds allow reach here
		if w.Config.Alpha >= cfg.AlphaMin && w.Config.Alpha <= cfg.AlphaMax {
			t.Errorf("alpha %v -> %v: more than max-step %v", w.Config.Alpha, a.Alpha, cfg.MaxStep)
		}
	}
}

// FuzzDecidePinned: rule pinned with any queue, buffer, loss, loss streak,
// calm time, overload_cut state and off-try back-off: no panic, the usual
// bounds, and the leaf moves only by rule pinned, on only where the node
// takes it and after loss was answered, off only where the tuner switched
// it on and after pinned_off_rtt × 2^CutOffRollbacks RTT_est of calm; the
// back-off lasts as long as the tuner's claim, and a new episode starts
// without it.
func FuzzDecidePinned(f *testing.F) {
	f.Add(int64(12_000_000), int64(0), int64(12_500_000), int64(30), 1, false, true, false, int64(0), uint8(0))
	f.Add(int64(100_000), int64(0), int64(50_000_000), int64(0), 0, true, true, true, int64(1_000_000_000), uint8(0))
	f.Add(int64(100_000), int64(0), int64(50_000_000), int64(0), 0, true, true, true, int64(1_000_000_000), uint8(2))
	f.Add(int64(100_000), int64(0), int64(50_000_000), int64(0), 0, true, true, true, int64(1_000_000_000), uint8(3))
	f.Fuzz(func(t *testing.T, depth, slope, buffer, drops int64, streak int, on, supported, cutOn bool, calmNs int64, rollbacks uint8) {
		cfg := DefaultConfig()
		w := Window{Start: t0, End: t0.Add(4 * time.Millisecond), KBaseBytes: 65536, RTTEst: 10 * time.Millisecond,
			PortRateBitsPerSec: 10_000_000_000, Config: Settings{KMaxMode: KMaxBDP, Alpha: 1, VGrowthBytesPerSec: 125_000_000, OverloadCut: on},
			BufferBytes: buffer, OverloadCutSupported: supported, EffectiveKMaxBytes: 12_500_000}
		w.Samples = paced(depth, slope)
		for i := range w.Samples {
			w.Samples[i].Drops = drops
		}
		mem := Memory{LastChange: t0.Add(-time.Minute), Changes: 1, LossStreak: streak, CutOn: cutOn}
		if cutOn { // a back-off is counted only while the tuner's claim lasts (Reverted)
			mem.CutOffRollbacks = int(rollbacks % (maxCutOffDoublings + 1))
		}
		if calmNs != 0 {
			mem.CalmSince = t0.Add(-time.Duration(calmNs))
		}
		d, got := Decide(cfg, w, mem)
		checkChange(t, cfg, w, d)
		switch moved := d.Change && d.After.OverloadCut != on; {
		case moved && d.Rule != RulePinned:
			t.Errorf("overload_cut %v -> %v by rule %s", on, d.After.OverloadCut, d.Rule)
		case moved && d.After.OverloadCut && (!supported || streak == 0 || d.Direction != Tighten):
			t.Errorf("overload_cut on (supported %v, streak %d, %s): %s", supported, streak, d.Direction, d.Reason)
		case moved && !d.After.OverloadCut && !cutOn:
			t.Errorf("overload_cut switched off though the tuner did not switch it on: %s", d.Reason)
		case moved && !d.After.OverloadCut && !mem.CalmSince.IsZero() &&
			w.End.Sub(mem.CalmSince).Seconds()/w.RTTEst.Seconds() < cfg.PinnedOffRTT*float64(int(1)<<mem.CutOffRollbacks):
			t.Errorf("overload_cut off after %v of calm, under pinned_off_rtt × 2^%d RTT_est: %s", w.End.Sub(mem.CalmSince), mem.CutOffRollbacks, d.Reason)
		case d.Rule == RulePinned && !moved:
			t.Errorf("rule pinned without moving overload_cut: %s", d.Reason)
		}
		if got.CutOn && !(d.Change && d.After.OverloadCut) && !(cutOn && on) {
			t.Errorf("memory says the tuner switched overload_cut on, it did not: %+v", got)
		}
		// The back-off is the episode's: kept while it lasts, gone with it
		// (or with a new one), never counted by Decide itself.
		want := mem.CutOffRollbacks
		if !got.CutOn || (d.Change && d.After.OverloadCut != on && d.After.OverloadCut) {
			want = 0
		}
		if got.CutOffRollbacks != want {
			t.Errorf("back-off %d -> %d, want %d (claim %v -> %v, %s): %s", mem.CutOffRollbacks, got.CutOffRollbacks, want, cutOn, got.CutOn, d.Rule, d.Reason)
		}
	})
}
