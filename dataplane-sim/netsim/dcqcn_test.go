package netsim

import (
	"math"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// loneQP is one sender at 100 Gb/s with nothing marking: every CNP comes
// from the test, at the instant it names.
func loneQP(t *testing.T, rp DCQCNConfig) (*incast, *QP) {
	t.Helper()
	h := DefaultHostConfig()
	h.DCQCN = rp
	in := newIncast(t, incastCfg{senders: 1, rateBitsPerSec: 100e9, accessDelay: engine.Microsecond,
		bnDelay: engine.Microsecond, port: PortConfig{BufferBytes: 64 << 20}, host: h})
	in.sim.Run(100 * engine.Microsecond) // connected, sending at line rate
	return in, in.flows[0].Sender
}

// cnpAt delivers a CNP at the instant at and returns the rate just before
// and just after it.
func cnpAt(in *incast, q *QP, at engine.Time) (beforeBitsPerSec, afterBitsPerSec int64) {
	in.sim.AtFunc(at, func() {
		beforeBitsPerSec = q.RateBitsPerSec()
		q.ApplyCNP()
		afterBitsPerSec = q.RateBitsPerSec()
	})
	in.sim.Run(at)
	return beforeBitsPerSec, afterBitsPerSec
}

// An isolated CNP after a silence cuts Rc by alpha/2, alpha as the cited
// update rule leaves it after the silence. The want column is computed here
// from the formulas, in floating point, not from the model:
//   - NVIDIA (DOC-2790): per dce_tcp_rtt period alpha = G/1024*alpha +
//     (1024-G)/1024 if a CNP arrived in it, G/1024*alpha otherwise; the
//     first CNP finds initial_alpha_value; a cut is Rc*alpha/2^rpg_gd with
//     alpha in 1/1024 (rpg_gd 11: alpha/2).
//   - The paper (§3.1): on a CNP Rc = Rc(1 - alpha/2), then alpha = (1-g)alpha
//   - g; alpha = (1-g)alpha for every K without a CNP; alpha starts at 1.
func TestDCQCNIsolatedCNPCut(t *testing.T) {
	const t1 = 200 * engine.Microsecond
	nv, paper := DefaultDCQCN(), PaperDCQCN()
	// NVIDIA: the first CNP's period [t1, t1+1µs) carries the CNP term;
	// every later period up to the second CNP only decays.
	nvidiaAlpha := func(silence engine.Time) float64 {
		r := float64(nv.G) / 1024
		a1 := float64(nv.InitialAlpha)/1024*r + (1 - r)
		periods := int64(silence / nv.AlphaUpdatePeriod) // ended before the second CNP
		return a1 * math.Pow(r, float64(periods-1))
	}
	// The paper: after the first cut alpha = (1-g)*1 + g = 1, then one
	// decay per whole K of silence.
	paperAlpha := func(silence engine.Time) float64 {
		g := 1.0 / 256
		return math.Pow(1-g, float64(silence/(55*engine.Microsecond)))
	}
	tests := []struct {
		desc      string
		rp        DCQCNConfig
		silence   engine.Time
		wantFirst float64 // cut fraction of the first CNP
		wantAlpha float64 // alpha the second CNP cuts with
	}{
		{desc: "nvidia defaults, 50 µs (the paper's CNP spacing)", rp: nv, silence: 50*engine.Microsecond + 500,
			wantFirst: 1023.0 / 2048, wantAlpha: nvidiaAlpha(50*engine.Microsecond + 500)},
		{desc: "nvidia defaults, 300 µs (one rpg_time_reset)", rp: nv, silence: 300*engine.Microsecond + 500,
			wantFirst: 1023.0 / 2048, wantAlpha: nvidiaAlpha(300*engine.Microsecond + 500)},
		{desc: "nvidia defaults, 2 ms: alpha has all but vanished", rp: nv, silence: 2*engine.Millisecond + 500,
			wantFirst: 1023.0 / 2048, wantAlpha: nvidiaAlpha(2*engine.Millisecond + 500)},
		{desc: "paper, 1 ms: 18 periods of K", rp: paper, silence: engine.Millisecond,
			wantFirst: 0.5, wantAlpha: paperAlpha(engine.Millisecond)},
		{desc: "paper, 10 ms", rp: paper, silence: 10 * engine.Millisecond,
			wantFirst: 0.5, wantAlpha: paperAlpha(10 * engine.Millisecond)},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			in, q := loneQP(t, tt.rp)
			b1, a1 := cnpAt(in, q, t1)
			if got := 1 - float64(a1)/float64(b1); math.Abs(got-tt.wantFirst) > 1e-6 {
				t.Errorf("first CNP cut %.7f of Rc, want %.7f", got, tt.wantFirst)
			}
			b2, a2 := cnpAt(in, q, t1+tt.silence)
			got, want := float64(b2-a2), float64(b2)*tt.wantAlpha/2
			if math.Abs(got-want) > 1e-6*float64(b2)+2 {
				t.Errorf("isolated CNP after %v: cut %.0f b/s of %d (%.3g), want %.0f (alpha %.6g / 2)",
					tt.silence, got, b2, got/float64(b2), want, tt.wantAlpha)
			}
			t.Logf("after %v of silence: Rc %.3f -> %.3f Gb/s, alpha %.6g", tt.silence, float64(b2)/1e9, float64(a2)/1e9, tt.wantAlpha)
		})
	}
}

// A train of CNPs drives alpha as the cited rule says, checked against the
// closed form of the recurrence.
func TestDCQCNAlphaConvergesUnderCNPTrain(t *testing.T) {
	const t1 = 200 * engine.Microsecond
	nv := DefaultDCQCN()
	nv.InitialAlpha = 0
	paper := PaperDCQCN()
	paper.InitialAlpha = 512
	r := float64(nv.G) / 1024
	// NVIDIA, a CNP every s periods (4 µs: min_time_between_cnps); periods
	// count from the first CNP, so each CNP opens a 1 µs period: alpha when
	// CNP j+1 is due is (alpha_j*r + 1-r)*r^(s-1), so alpha_j =
	// a*(1 - r^(s*j)) with a = (1-r)r^(s-1)/(1-r^s).
	nvTrain := func(spacing int) func(j int) float64 {
		s := float64(spacing)
		fixed := (1 - r) * math.Pow(r, s-1) / (1 - math.Pow(r, s))
		return func(j int) float64 { return fixed * (1 - math.Pow(r, s*float64(j))) }
	}
	nvAlpha, nvAlpha50 := nvTrain(4), nvTrain(50)
	// The paper, a CNP every 50 µs (N < K: no decay): after n CNPs
	// alpha_n = 1 - (1-alpha_0)(1-g)^n.
	paperAlpha := func(n int) float64 { return 1 - 0.5*math.Pow(1-1.0/256, float64(n)) }
	tests := []struct {
		desc    string
		rp      DCQCNConfig
		spacing engine.Time
		read    engine.Time // when alpha is read relative to a CNP
		want    map[int]float64
	}{
		{desc: "nvidia, one CNP per 4 µs, read when the next is due", rp: nv, spacing: 4 * engine.Microsecond,
			read: 4 * engine.Microsecond, want: map[int]float64{1: nvAlpha(1), 10: nvAlpha(10), 250: nvAlpha(250), 1000: nvAlpha(1000)}},
		// Fast CNP's default gap: 10-bit truncation used to zero alpha
		// between these CNPs (the freeze); the fixed point is about 0.022.
		{desc: "nvidia, one CNP per 50 µs, read when the next is due", rp: nv, spacing: 50 * engine.Microsecond,
			read: 50 * engine.Microsecond, want: map[int]float64{1: nvAlpha50(1), 5: nvAlpha50(5), 40: nvAlpha50(40)}},
		{desc: "paper, one CNP per 50 µs, read just after it", rp: paper, spacing: 50 * engine.Microsecond,
			read: 0, want: map[int]float64{1: paperAlpha(1), 10: paperAlpha(10), 100: paperAlpha(100), 400: paperAlpha(400)}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			in, q := loneQP(t, tt.rp)
			last := 0
			for n := range tt.want {
				last = max(last, n)
			}
			got := map[int]float64{}
			for n := 1; n <= last; n++ {
				at := t1 + engine.Time(n-1)*tt.spacing
				cnpAt(in, q, at)
				if _, ok := tt.want[n]; ok {
					in.sim.AtFunc(at+tt.read, func() { got[n] = q.Alpha() })
					in.sim.Run(at + tt.read)
				}
			}
			for n, want := range tt.want {
				if math.Abs(got[n]-want) > 1e-6 {
					t.Errorf("alpha after %d CNPs %.7f, want %.7f", n, got[n], want)
				}
			}
			t.Logf("alpha %v (want %v)", got, tt.want)
		})
	}
}

// Alpha decays exactly without CNPs: far below 1/1024 it keeps the
// geometric decay instead of dropping to zero (10-bit truncation would take
// at least 1/1024 per period below 0.2).
func TestDCQCNAlphaDecayPrecision(t *testing.T) {
	in, q := loneQP(t, DefaultDCQCN())
	cnpAt(in, q, 200*engine.Microsecond)
	r := 1019.0 / 1024
	a1 := 1023.0/1024*r + (1 - r)
	for _, d := range []engine.Time{100 * engine.Microsecond, 700 * engine.Microsecond, 1500 * engine.Microsecond} {
		var got float64
		at := 200*engine.Microsecond + d
		in.sim.AtFunc(at, func() { got = q.Alpha() })
		in.sim.Run(at)
		want := a1 * math.Pow(r, float64(d/engine.Microsecond-1))
		if math.Abs(got-want) > 1e-8+1e-6*want {
			t.Errorf("alpha %v after the CNP: %.10g, want %.10g", d, got, want)
		}
	}
}

func TestDCQCNValidate(t *testing.T) {
	tests := []struct {
		desc    string
		mod     func(*DCQCNConfig)
		wantErr bool
	}{
		{desc: "nvidia defaults", mod: func(*DCQCNConfig) {}},
		{desc: "paper", mod: func(c *DCQCNConfig) { *c = PaperDCQCN() }},
		{desc: "initial alpha 1.0", mod: func(c *DCQCNConfig) { c.InitialAlpha = 1024 }},
		{desc: "initial alpha above 1.0", mod: func(c *DCQCNConfig) { c.InitialAlpha = 1025 }, wantErr: true},
		{desc: "g above 1024", mod: func(c *DCQCNConfig) { c.G = 1025 }, wantErr: true},
		{desc: "negative monitor period", mod: func(c *DCQCNConfig) { c.RateReduceMonitorPeriod = -1 }, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			c := DefaultDCQCN()
			tt.mod(&c)
			if err := c.Validate(); (err != nil) != tt.wantErr {
				t.Errorf("Validate() = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

// TraceDCQCN reports every cut and increase with the rates before and
// after; the increase phases after a cut follow the stage rule as
// DCQCNConfig states it: an event tests the stage it finds against F
// (rpg_threshold) and then advances it, so F events of fast recovery follow
// a cut, as in the DCQCN paper (F iterations), its fluid model
// (e = d(1-p)^(F T R_C): the first additive step after F whole periods) and
// the reference RDMA ns-3 (RateIncEventTimerMlx). With the paper's F = 5
// the 1st-5th timer events are fast recovery and the 6th is the first
// additive step; with the firmware's F = 1, one fast-recovery step.
func TestDCQCNTraceStages(t *testing.T) {
	for _, tt := range []struct {
		desc      string
		threshold int
		fast      int // fast-recovery events after the cut
	}{
		{desc: "paper F=5", threshold: 5, fast: 5},
		{desc: "firmware rpg_threshold=1", threshold: 1, fast: 1},
		{desc: "F=0", threshold: 0, fast: 0},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			c := PaperDCQCN()
			c.Threshold = tt.threshold
			in, q := loneQP(t, c)
			var evs []DCQCNEvent
			q.TraceDCQCN(func(e DCQCNEvent) { evs = append(evs, e) })
			const t1 = 200 * engine.Microsecond
			const n = 7 // timer events
			cnpAt(in, q, t1)
			in.sim.Run(t1 + n*55*engine.Microsecond + engine.Microsecond)
			q.TraceDCQCN(nil)
			if len(evs) != n+1 {
				t.Fatalf("%d events, want a cut and %d timer increases: %+v", len(evs), n, evs)
			}
			if e := evs[0]; e.Kind != DCQCNCut || e.At != t1 || e.Alpha != 1 || e.RCAfter != e.RCBefore/2 || e.RTAfter != e.RCBefore {
				t.Errorf("first event %+v: want a cut at %v with alpha 1, Rc halved, Rt = the old Rc", e, t1)
			}
			fast := 0
			for i, e := range evs[1:] {
				stage := i // the timer stage the (i+1)-th event finds
				want := DCQCNFastRecovery
				if stage >= tt.threshold {
					want = DCQCNAdditive // the byte stage stays 0: never hyper
				}
				if e.Phase == DCQCNFastRecovery {
					fast++
				}
				at := t1 + engine.Time(i+1)*55*engine.Microsecond
				if e.Kind != DCQCNTimerInc || e.TimeStage != stage || e.ByteStage != 0 || e.Phase != want || e.At != at {
					t.Errorf("event %d: %+v; want timer stage %d, phase %d, at %v", i+1, e, stage, want, at)
				}
				rt := e.RTBefore
				if want == DCQCNAdditive {
					rt = min(rt+40_000_000, 100_000_000_000) // R_AI, capped at the line rate
				}
				if e.RTAfter != rt || e.RCAfter != (e.RCBefore+rt+1)/2 {
					t.Errorf("event %d: Rc %d -> %d, Rt %d -> %d; want Rt %d, Rc (Rc+Rt)/2 rounded up", i+1, e.RCBefore, e.RCAfter, e.RTBefore, e.RTAfter, rt)
				}
			}
			if fast != tt.fast {
				t.Errorf("%d fast-recovery events after the cut, want %d", fast, tt.fast)
			}
		})
	}
}

// With the byte counter on, an increase event is judged by both stages as
// it finds them (its own counter advances after it): fast recovery while
// both are below F, hyper increase (Rt += (lower stage - F) * R_HAI) once
// both are above F, additive in between (the QCN rule the DCQCN paper
// builds on). The k-th event of a counter after the cut finds its stage at
// k-1 and the other counter's stage at the number of its events so far,
// also when one sets off the other at the same instant (a timer increase
// whose rate change sends the bytes that complete a byte-counter period).
func TestDCQCNByteCounterStages(t *testing.T) {
	c := PaperDCQCN()
	c.Threshold = 2
	c.RateOnFirstCNPBitsPerSec = 10_000_000_000 // Rt stays far below the line rate
	c.ByteResetBytes = 20_000                   // 32 µs at the 5 Gb/s after the cut
	in, q := loneQP(t, c)
	var evs []DCQCNEvent
	q.TraceDCQCN(func(e DCQCNEvent) { evs = append(evs, e) })
	const t1 = 200 * engine.Microsecond
	cnpAt(in, q, t1)
	in.sim.Run(t1 + 400*engine.Microsecond)
	q.TraceDCQCN(nil)
	if len(evs) < 2 || evs[0].Kind != DCQCNCut {
		t.Fatalf("events %+v: want a cut and increases", evs)
	}
	timers, bytes := 0, 0
	seen := map[DCQCNIncrease]int{}
	for i, e := range evs[1:] {
		if e.Kind == DCQCNCut {
			t.Fatalf("event %d: a second cut %+v", i+1, e)
		}
		if e.TimeStage != timers || e.ByteStage != bytes {
			t.Errorf("event %d (%v): stages %d/%d, want %d/%d (the events so far)", i+1, e.Kind, e.TimeStage, e.ByteStage, timers, bytes)
		}
		lo, hi := min(e.TimeStage, e.ByteStage), max(e.TimeStage, e.ByteStage)
		want, rt := DCQCNAdditive, e.RTBefore+c.AIRateBitsPerSec
		switch {
		case hi < c.Threshold:
			want, rt = DCQCNFastRecovery, e.RTBefore
		case lo > c.Threshold:
			want, rt = DCQCNHyper, e.RTBefore+int64(lo-c.Threshold)*c.HAIRateBitsPerSec
		}
		if e.Phase != want || e.RTAfter != rt || e.RCAfter != (e.RCBefore+rt+1)/2 {
			t.Errorf("event %d: %+v; want phase %d, Rt %d, Rc (Rc+Rt)/2", i+1, e, want, rt)
		}
		seen[e.Phase]++
		if e.Kind == DCQCNTimerInc {
			timers++
		} else {
			bytes++
		}
	}
	if seen[DCQCNFastRecovery] == 0 || seen[DCQCNAdditive] == 0 || seen[DCQCNHyper] == 0 || timers == 0 || bytes == 0 {
		t.Errorf("phases %v, %d timer and %d byte-counter events: want every phase and both counters", seen, timers, bytes)
	}
	t.Logf("%d timer and %d byte-counter events, phases %v", timers, bytes, seen)
}
