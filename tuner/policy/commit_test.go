package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestCommitJudge: the judgement of a commit on its judge window, as the
// tuner service and the simulator's closed loop both take it.
func TestCommitJudge(t *testing.T) {
	cfg := DefaultConfig()
	from, to := bdp(1, vg), bdp(0.5, vg)
	decided := window(queue{util: 0.99, delayRTT: 0.5}, from)
	c := Commit{Direction: Tighten, From: from, To: to, Before: Measure(decided), DecidedAt: decided.End,
		FromEffectiveKMaxBytes: decided.EffectiveKMaxBytes}
	short := window(queue{util: 0.99, delayRTT: 0.1}, to)
	short.Samples = short.Samples[:cfg.MinSamples-1]
	type got struct {
		Wait, Keep bool
	}
	for _, tt := range []struct {
		desc   string
		w      Window
		want   got
		reason string // a part of the reason
	}{
		{desc: "too few samples: wait", w: short, want: got{Wait: true}, reason: "samples"},
		{desc: "the queue shorter at the same utilisation: kept", w: window(queue{util: 0.99, delayRTT: 0.1}, to),
			want: got{Keep: true}, reason: "not worse"},
		{desc: "a tightening that cost utilisation: rolled back", w: window(queue{util: 0.7, delayRTT: 0.1}, to),
			want: got{}, reason: "worse by more than"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			j := c.Judge(cfg, tt.w)
			if diff := cmp.Diff(tt.want, got{j.Wait, j.Keep}); diff != "" {
				t.Errorf("Judge (-want +got):\n%s\nreason: %s", diff, j.Reason)
			}
			if !strings.Contains(j.Reason, tt.reason) {
				t.Errorf("Judge: reason %q, want it to say %q", j.Reason, tt.reason)
			}
			if !j.Wait {
				want := Judge(cfg, c.Direction, c.Before, Measure(tt.w), Lag(tt.w, c.DecidedAt))
				if diff := cmp.Diff(want, j.Verdict); diff != "" {
					t.Errorf("Judge's verdict is not Judge's (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestCommitStart: the queue's first change, to the policy's starting
// point (rule start), is kept on the first complete judge window, even one
// whose objective is worse than the window it was decided on: those are a
// queue's first windows, its start-up's.
func TestCommitStart(t *testing.T) {
	cfg := rulesConfig() // a start that moves V_growth alone, a loosening
	from := bdp(1, vg/4)
	decided := window(queue{util: 0.99, delayRTT: 0.05}, from)
	d, _ := Decide(cfg, decided, Memory{})
	if d.Rule != RuleStart || !d.Change {
		t.Fatalf("decision %s (%s), want a start", d.Rule, d.Reason)
	}
	c := CommitOf(d, decided)
	if !c.Start {
		t.Fatal("CommitOf(start).Start is false")
	}
	worse := window(queue{util: 0.99, delayRTT: 1.5}, d.After)
	if j := c.Judge(cfg, worse); j.Wait || !j.Keep || !strings.Contains(j.Reason, "starting point") {
		t.Errorf("start judged on a worse window: wait %v keep %v (%s), want kept", j.Wait, j.Keep, j.Reason)
	}
	short := worse
	short.Samples = short.Samples[:cfg.MinSamples-1]
	if j := c.Judge(cfg, short); !j.Wait {
		t.Errorf("start judged on too few samples: %+v, want wait", j)
	}
	// Any other loosening is judged: the same windows roll it back.
	c.Start = false
	if j := c.Judge(cfg, worse); j.Keep {
		t.Errorf("a loosening judged on a worse window: kept (%s)", j.Reason)
	}
}

// TestCommitSettle: rule settle's change, back to the setting an overrun
// started from, is kept on its first complete judge window with
// settle_unjudged, even on a worse one (the overload's
// windows and the ones after it are different phases); judged as any
// tightening without it.
func TestCommitSettle(t *testing.T) {
	cfg := rulesConfig()
	cfg.SettleWhole, cfg.SettleUnjudged = true, true
	decided := window(queue{util: 0.95, delayRTT: 0.3}, bdp(4, vg))
	d, _ := Decide(cfg, decided, Memory{LastChange: t0.Add(-time.Minute), Direction: Loosen, Step: 2, Changes: 2, Lifted: bdp(1, vg)})
	if d.Rule != RuleSettle || !d.Change || d.After != bdp(1, vg) {
		t.Fatalf("decision %s to %+v (%s), want a settle to alpha 1", d.Rule, d.After, d.Reason)
	}
	c := CommitOf(d, decided)
	if !c.Settle || c.Start {
		t.Fatalf("CommitOf(settle): Settle %v Start %v", c.Settle, c.Start)
	}
	worse := window(queue{util: 0.6, delayRTT: 0.05}, d.After)
	if j := c.Judge(cfg, worse); j.Wait || !j.Keep || !strings.Contains(j.Reason, "rule settle), kept") {
		t.Errorf("settle judged on a worse window: wait %v keep %v (%s), want kept", j.Wait, j.Keep, j.Reason)
	}
	cfg.SettleUnjudged = false
	if j := c.Judge(cfg, worse); j.Keep {
		t.Errorf("settle_unjudged off: a settle judged on a worse window kept (%s)", j.Reason)
	}
}

// TestCommitApplied: a judge window is one after the change took effect
// only when the switch's telemetry shows it.
func TestCommitApplied(t *testing.T) {
	const kbase, effBefore = 64_000, 1_000_000
	explicit := func(kmax int64) Settings {
		return Settings{KMaxMode: KMaxExplicit, KMaxBytes: kmax, VGrowthBytesPerSec: vg}
	}
	cut := func(s Settings, on bool) Settings { s.OverloadCut = on; return s }
	for _, tt := range []struct {
		desc     string
		from, to Settings
		runs     Settings // the window's settings
		eff      int64    // and its effective K_max
		want     bool
	}{
		{desc: "alpha in effect, K_max moved", from: bdp(1, vg), to: bdp(0.5, vg), runs: bdp(0.5, vg), eff: effBefore / 2, want: true},
		{desc: "alpha set, K_max not moved yet", from: bdp(1, vg), to: bdp(0.5, vg), runs: bdp(0.5, vg), eff: effBefore},
		{desc: "alpha set, K_max at its K_base floor", from: bdp(1, vg), to: bdp(0.5, vg), runs: bdp(0.5, vg), eff: kbase, want: true},
		{desc: "the old alpha", from: bdp(1, vg), to: bdp(0.5, vg), runs: bdp(1, vg), eff: effBefore / 2},
		{desc: "v-growth only: K_max need not move", from: bdp(1, vg), to: bdp(1, vg/2), runs: bdp(1, vg/2), eff: effBefore, want: true},
		{desc: "the old v-growth", from: bdp(1, vg), to: bdp(1, vg/2), runs: bdp(1, vg), eff: effBefore},
		{desc: "the old mode", from: bdp(1, vg), to: explicit(500_000), runs: bdp(1, vg), eff: 500_000},
		{desc: "explicit K_max in effect", from: explicit(1_000_000), to: explicit(500_000), runs: explicit(500_000), eff: 500_000, want: true},
		{desc: "explicit K_max set, not in effect yet", from: explicit(1_000_000), to: explicit(500_000), runs: explicit(500_000), eff: 1_000_000},
		{desc: "overload_cut on in effect", from: bdp(1, vg), to: cut(bdp(1, vg), true), runs: cut(bdp(1, vg), true), eff: effBefore, want: true},
		{desc: "overload_cut still off", from: bdp(1, vg), to: cut(bdp(1, vg), true), runs: bdp(1, vg), eff: effBefore},
		{desc: "overload_cut off in effect", from: cut(bdp(1, vg), true), to: bdp(1, vg), runs: bdp(1, vg), eff: effBefore, want: true},
		{desc: "overload_cut still on", from: cut(bdp(1, vg), true), to: bdp(1, vg), runs: cut(bdp(1, vg), true), eff: effBefore},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			c := Commit{From: tt.from, To: tt.to, FromEffectiveKMaxBytes: effBefore}
			w := Window{Config: tt.runs, KBaseBytes: kbase, EffectiveKMaxBytes: tt.eff}
			if diff := cmp.Diff(tt.want, c.Applied(w)); diff != "" {
				t.Errorf("Applied (-want +got):\n%s", diff)
			}
		})
	}
}

// TestJudged: loss in a judge window above loss_high is kept for the next
// decision (Memory.LossSeen); none, or a window that could not be judged,
// leaves the memory as it was.
func TestJudged(t *testing.T) {
	cfg := DefaultConfig()
	mem := Memory{Changes: 2}
	if got := cfg.Judged(mem, Judgement{Metrics: Metrics{Loss: 0.01}}); got.LossSeen != 0.01 {
		t.Errorf("loss 0.01 judged: LossSeen %v, want 0.01", got.LossSeen)
	}
	if got := cfg.Judged(mem, Judgement{Metrics: Metrics{Loss: cfg.LossHigh / 2}}); got != mem {
		t.Errorf("loss under loss_high judged: %+v, want %+v", got, mem)
	}
	if got := cfg.Judged(mem, Judgement{Wait: true, Metrics: Metrics{Loss: 0.01}}); got != mem {
		t.Errorf("a window not judged: %+v, want %+v", got, mem)
	}
}
