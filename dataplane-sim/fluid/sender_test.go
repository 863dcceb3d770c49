package fluid_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
)

// senderLedger is what the reaction points of a run did over a window,
// from netsim's TraceDCQCN: their cuts and increase events, and the time
// integrals of the target gap R_T - R_C and of R_C.
type senderLedger struct {
	cuts              int
	cutAlpha          float64 // sum of alpha at the cuts
	cutLoss           float64 // sum of R_C before - after, b/s
	cutRC             float64 // sum of R_C before the cuts
	gapAtCut          float64 // sum of R_T - R_C just before each cut
	timerInc, byteInc int
	frInc, aiInc      int
	hyInc             int
	incGain           float64 // sum of R_C after - before over the increases
	gapAtInc          float64 // sum of R_T - R_C just before each increase
	gapTime, rcTime   float64 // integrals of R_T - R_C and R_C over time, b/s · s
	rtDrift           float64 // sum of R_T at the end of the window - at its start
}

// senderTrace follows one QP from the start of the window.
type senderTrace struct {
	*senderLedger
	last    engine.Time
	gap, rc float64
}

func (s *senderTrace) advance(now engine.Time) {
	dt := (now - s.last).Seconds()
	s.gapTime += s.gap * dt
	s.rcTime += s.rc * dt
	s.last = now
}

func (s *senderTrace) on(e netsim.DCQCNEvent) {
	s.advance(e.At)
	l := s.senderLedger
	if e.Kind == netsim.DCQCNCut {
		l.cuts++
		l.cutAlpha += e.Alpha
		l.cutLoss += float64(e.RCBefore - e.RCAfter)
		l.cutRC += float64(e.RCBefore)
		l.gapAtCut += float64(e.RTBefore - e.RCBefore)
	} else {
		if e.Kind == netsim.DCQCNTimerInc {
			l.timerInc++
		} else {
			l.byteInc++
		}
		switch e.Phase {
		case netsim.DCQCNFastRecovery:
			l.frInc++
		case netsim.DCQCNAdditive:
			l.aiInc++
		default:
			l.hyInc++
		}
		l.incGain += float64(e.RCAfter - e.RCBefore)
		l.gapAtInc += float64(e.RTBefore - e.RCBefore)
	}
	s.gap, s.rc = float64(e.RTAfter-e.RCAfter), float64(e.RCAfter)
}

// senderRun is one traced incast: the ledger over all senders of the
// window, its length in sender-seconds, and the frame size.
type senderRun struct {
	senderLedger
	senderSec  float64
	frameBytes float64
}

func (r senderRun) cnpPerPeriod() float64 { return float64(r.cuts) / r.senderSec * 55e-6 }
func (r senderRun) meanGap() float64      { return r.gapTime / r.senderSec }
func (r senderRun) gapCut() float64       { return r.gapAtCut / float64(r.cuts) }

// add adds the ledger of another run (a pool over seeds: every field is a
// sum or an integral).
func (l *senderLedger) add(o senderLedger) {
	l.cuts += o.cuts
	l.cutAlpha += o.cutAlpha
	l.cutLoss += o.cutLoss
	l.cutRC += o.cutRC
	l.gapAtCut += o.gapAtCut
	l.timerInc += o.timerInc
	l.byteInc += o.byteInc
	l.frInc += o.frInc
	l.aiInc += o.aiInc
	l.hyInc += o.hyInc
	l.incGain += o.incGain
	l.gapAtInc += o.gapAtInc
	l.gapTime += o.gapTime
	l.rcTime += o.rcTime
	l.rtDrift += o.rtDrift
}

// runSenders runs incastYAML's n:1 incast with the paper's parameters and
// build seed seed, tracing every sender over 60-100 ms. The paper profile
// has every CNP cut (no monitor period), so cuts are CNPs.
func runSenders(t *testing.T, n int, seed int64) senderRun {
	t.Helper()
	from, to := 60*engine.Millisecond, 100*engine.Millisecond
	nw, _ := newIncastFrom(t, n, to, incastYAML(n, to.String()), seed)
	var r senderRun
	tr := make([]senderTrace, len(nw.Flows))
	for i, fl := range nw.Flows {
		qp := fl.Net.Sender
		s := &tr[i]
		s.senderLedger = &r.senderLedger
		nw.Sim.AtFunc(from, func() {
			s.last = from
			s.gap = float64(qp.TargetRateBitsPerSec() - qp.RateBitsPerSec())
			s.rc = float64(qp.RateBitsPerSec())
			r.rtDrift -= float64(qp.TargetRateBitsPerSec())
			qp.TraceDCQCN(s.on)
		})
	}
	nw.Sim.Run(to)
	for i := range tr {
		tr[i].advance(to)
		r.rtDrift += float64(nw.Flows[i].Net.Sender.TargetRateBitsPerSec())
	}
	r.senderSec = (to - from).Seconds() * float64(n)
	r.frameBytes = float64(1000 + netsim.RoCEOverheadBytes(nw.Net.NodeByName("s0").(*netsim.Host).Addr()))
	return r
}

// TestSenderBalance traces every reaction point of the 2:1 and 8:1
// incasts (netsim.QP.TraceDCQCN: each cut with the rates before and after
// and alpha, each timer and byte-counter increase with its phase), pools
// the ledgers of build seeds 1-incastSeeds, and
// splits the 15-17 % more CNPs per alpha period our senders take than the
// fluid fixed point with the NP's rule (Params.NPRenewal) needs, into what
// the model's rate equations approximate of the algorithm:
//
//   - the gap a cut removes from R_T: the model's dR_T/dt = 0 balance
//     takes it to be the mean gap R_T - R_C that the increases act on; a
//     cut finds the gap the increases since the last cut have closed, so
//     the mean gap is a multiple (measured here) of the gap at a cut
//     (Params.CutGapFactor).
//   - the additive step's own R_AI/2 in R_C, which dR_C/dt leaves out
//     (Params.AdditiveInRC).
//
// The stage count is the model's: F = 5 fast-recovery events after a cut,
// as its e = d(1-p)^(F T R_C) counts them (netsim's TestDCQCNTraceStages);
// the test checks that no more than F follow a cut.
// docs/validation.md has the table; the documented shares are checked.
func TestSenderBalance(t *testing.T) {
	// documented: CNPs per alpha period, ours; the gap factor; the
	// fluid's need with the NP rule, then with the gap factor, then with
	// the additive step too; each pooled over the seeds.
	known := map[int][5]float64{
		2: {0.1138, 1.26, 0.1022, 0.1087, 0.1113},
		8: {0.1687, 1.45, 0.1456, 0.1592, 0.1636},
	}
	// tol is each figure's relative pin: three standard errors of the
	// pool, from the spread of the figure between seeds (2:1, the wider:
	// sd 0.0037 CNPs per period, 0.16 in the gap factor, 0.0038 in the
	// needs with it), and 1 % for the fixed point's need (no run in it).
	tol := [5]float64{0.04, 0.14, 0.01, 0.04, 0.04}
	const f = 5 // the paper profile's rpg_threshold
	for _, n := range []int{2, 8} {
		t.Run(fmt.Sprintf("%d:1", n), func(t *testing.T) {
			var r senderRun
			for seed := range int64(incastSeeds) {
				s := runSenders(t, n, seed+1)
				t.Logf("seed %d: CNPs per 55 µs %.4f; per cut %.2f timer increases, %.2f fast recovery; gap factor %.3f; increases gave R_C %+.1f%% of what the cuts took",
					seed+1, s.cnpPerPeriod(), float64(s.timerInc)/float64(s.cuts), float64(s.frInc)/float64(s.cuts), s.meanGap()/s.gapCut(), 100*(s.incGain/s.cutLoss-1))
				r.senderLedger.add(s.senderLedger)
				r.senderSec += s.senderSec
				r.frameBytes = s.frameBytes
			}
			t.Logf("pooled over seeds 1-%d:", incastSeeds)
			cuts := float64(r.cuts)
			rc, alpha := r.rcTime/r.senderSec, r.cutAlpha/cuts
			t.Logf("CNPs (= cuts) per 55 µs %.4f; alpha at a cut %.4f; R_C %.5g b/s; a cut takes %.4g b/s (R_C alpha/2 at the cut %.4g); loss %.4g b/s per s, gain %.4g",
				r.cnpPerPeriod(), alpha, rc, r.cutLoss/cuts, r.cutRC/cuts*alpha/2, r.cutLoss/r.senderSec, r.incGain/r.senderSec)
			t.Logf("alpha at a cut / the model's 1 - e^(-CNPs per period) %.4f", alpha/-math.Expm1(-r.cnpPerPeriod()))
			t.Logf("per cut %.2f timer and %.2f byte-counter increases: %.2f fast recovery, %.2f additive, %.2f hyper",
				float64(r.timerInc)/cuts, float64(r.byteInc)/cuts, float64(r.frInc)/cuts, float64(r.aiInc)/cuts, float64(r.hyInc)/cuts)
			t.Logf("R_T drift over the window, all senders %.4g b/s", r.rtDrift)
			t.Logf("gap R_T - R_C: time mean %.4g b/s, before an increase %.4g, before a cut %.4g (R_AI x additive steps per cut %.4g): gap factor %.3f",
				r.meanGap(), r.gapAtInc/float64(r.timerInc+r.byteInc), r.gapCut(), 40e6*float64(r.aiInc)/cuts, r.meanGap()/r.gapCut())
			// The ledger itself: R_C holds (gain = loss), a cut takes
			// R_C alpha/2, and R_T's balance is exact: what the cuts
			// take from R_T (the gap they find) is what the additive
			// steps gave it, less R_T's drift over the window.
			if d := r.incGain/r.cutLoss - 1; math.Abs(d) > 0.02 {
				t.Errorf("increases gave R_C %+.1f%% of what the cuts took (steady state: 0 within 2%%)", 100*d)
			}
			if d := r.cutLoss/(r.cutRC*alpha/2) - 1; math.Abs(d) > 0.02 {
				t.Errorf("a cut took %+.1f%% more than R_C alpha/2", 100*d)
			}
			if d := r.gapAtCut/(40e6*float64(r.aiInc)-r.rtDrift) - 1; math.Abs(d) > 1e-6 {
				t.Errorf("the gap the cuts found is %+.1f%% off R_AI x additive steps", 100*d)
			}
			if r.byteInc+r.hyInc > 0 {
				t.Errorf("%d byte-counter and %d hyper increases: the model's account below assumes none", r.byteInc, r.hyInc)
			}
			if r.frInc > f*r.cuts {
				t.Errorf("%d fast-recovery steps after %d cuts: more than F = %d per cut", r.frInc, r.cuts, f)
			}
			kappa := r.meanGap() / r.gapCut()
			need := func(k float64, ai bool) float64 {
				p, _ := paperFixedPoint(t, n, r.frameBytes)
				p.NPRenewal, p.CutGapFactor, p.AdditiveInRC = true, k, ai
				fp, err := p.FixedPoint()
				if err != nil {
					t.Fatal(err)
				}
				x := fp.MarkProb * fp.RateBitsPerSec / (8 * p.PacketBytes) * p.CNPIntervalSec
				t.Logf("fluid with the NP rule, gap factor %.3f, additive step in R_C %v: queue %.0f B, p %.6f, R_T - R_C %.4g b/s, needs %.4f CNPs per 55 µs",
					k, ai, fp.QueueBytes, fp.MarkProb, fp.TargetBitsPerSec-fp.RateBitsPerSec, x/(1+x)*p.AlphaPeriodSec/p.CNPIntervalSec)
				return x / (1 + x) * p.AlphaPeriodSec / p.CNPIntervalSec
			}
			// The timer's rate is the model's d R_C at its fixed point
			// (the timer restarting at marks there, at cuts here).
			{
				p, _ := paperFixedPoint(t, n, r.frameBytes)
				p.NPRenewal = true
				fp, err := p.FixedPoint()
				if err != nil {
					t.Fatal(err)
				}
				rcPkts := fp.RateBitsPerSec / (8 * p.PacketBytes)
				d := fp.MarkProb / math.Expm1(-p.TimerSec*rcPkts*math.Log1p(-fp.MarkProb)) * rcPkts
				ours := float64(r.timerInc) / r.senderSec
				t.Logf("timer increases per second per sender: ours %.0f, the model's d R_C %.0f", ours, d)
				if math.Abs(ours/d-1) > 0.03 {
					t.Errorf("timer increases: ours %.0f/s, the model's d R_C %.0f/s (more than 3%% apart)", ours, d)
				}
			}
			got := [5]float64{r.cnpPerPeriod(), kappa, need(0, false), need(kappa, false), need(kappa, true)}
			excess := got[0] - got[2]
			t.Logf("excess %.4f CNPs per period (%+.1f%%): gap at a cut %.4f (%.0f%%), additive step %.4f (%.0f%%), remaining %.4f (%.0f%%)",
				excess, 100*excess/got[2], got[3]-got[2], 100*(got[3]-got[2])/excess,
				got[4]-got[3], 100*(got[4]-got[3])/excess, got[0]-got[4], 100*(got[0]-got[4])/excess)
			for i, name := range []string{"CNPs per period", "gap factor", "fluid need", "fluid need with the gap factor", "fluid need with the additive step"} {
				if d := got[i]/known[n][i] - 1; math.Abs(d) > tol[i] {
					t.Errorf("%s: %.4f, documented %.4f (%+.1f%%, more than %.0f%%)", name, got[i], known[n][i], 100*d, 100*tol[i])
				}
			}
		})
	}
}
