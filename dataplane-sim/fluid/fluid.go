// Package fluid is the DCQCN fluid model of the DCQCN papers, a second
// reference for our packet models on a single bottleneck: N identical
// DCQCN senders share one link of capacity C behind a RED/ECN queue.
//
// The equations are those of Zhu et al., "Congestion Control for
// Large-Scale RDMA Deployments" (SIGCOMM 2015, §5, equations 1-5), as
// restated in Zhu et al., "ECN or Delay: Lessons Learnt from Analysis of
// DCQCN and TIMELY" (CoNEXT 2016, §3, equation 11 and its fixed point).
// With rates in packets per second, the marking probability p of the queue
// q (equation 1: 0 below K_min, rising linearly to P_max at K_max, 1 above),
// and every sender's state (R_C, R_T, alpha) seen by the queue a control
// loop delay tau* later:
//
//	dq/dt     = N R_C(t) - C
//	dalpha/dt = g/tau' ((1 - (1-p*)^(tau' R_C*)) - alpha)
//	dR_T/dt   = -(R_T - R_C)/tau a* + R_AI R_C* (c* + e*)
//	dR_C/dt   = -R_C alpha/(2 tau) a* + (R_T - R_C)/2 R_C* (b* + d*)
//
// where x* is x(t - tau*), a = 1-(1-p)^(tau R_C) is the probability that a
// CNP interval tau holds a mark, b = p/((1-p)^-B - 1) and d = p/((1-p)^-(T
// R_C) - 1) are the rates of byte-counter and timer increase events per
// packet, and c = b(1-p)^(F B), e = d(1-p)^(F T R_C) those past F stages
// (additive increase). Hyper increase is not in the model (the papers leave
// it out as well). tau is the notification point's CNP interval (the
// paper's N = 50 µs), tau' the alpha timer K (55 µs), T the rate-increase
// timer and B the byte counter.
//
// The package depends on the standard library only.
package fluid

import (
	"errors"
	"fmt"
	"math"
)

// Params are one single-bottleneck network and the DCQCN parameters of its
// senders, in the units of the papers' Table (seconds, bits per second,
// bytes); the model itself works in packets of PacketBytes.
type Params struct {
	Senders             int     // N
	CapacityBitsPerSec  float64 // C, the bottleneck
	LineRateBitsPerSec  float64 // each sender's NIC (R_C, R_T never exceed it); 0: C
	PacketBytes         float64 // bytes per packet on the bottleneck
	KMinBytes           float64 // RED/ECN
	KMaxBytes           float64
	PMax                float64
	G                   float64 // alpha gain g
	CNPIntervalSec      float64 // tau
	AlphaPeriodSec      float64 // tau'
	TimerSec            float64 // T
	ByteCounterBytes    float64 // B
	F                   int     // fast-recovery stages
	RAIBitsPerSec       float64 // R_AI
	FeedbackDelaySec    float64 // tau*, the control loop delay
	InitialAlpha        float64 // alpha at t = 0 (the paper: 1)
	InitialRateFraction float64 // R_C = R_T at t = 0 as a fraction of line rate (0: 1.0)
	// NPRenewal replaces the papers' a = 1-(1-p)^(tau R_C), one CNP per
	// interval tau that holds a mark, with the rate of the notification
	// point's rule itself (a CNP for a marked packet when none went to the
	// flow in the last tau): a renewal of tau plus the wait for the next
	// mark, a = x/(1+x) CNPs per tau with x = tau R_C (-log(1-p)); and
	// alpha's input with the probability that an alpha period holds a CNP,
	// 1 - e^(-tau'/tau a), not a mark (alpha rises per CNP).
	NPRenewal bool
	// CutGapFactor, when positive, multiplies the mean target gap R_T - R_C
	// of the fixed point (the papers' dR_T/dt = 0 balance, R_T - R_C =
	// tau R_AI R_C (c+e)/a) by itself. The balance takes the gap a cut
	// removes from R_T (R_T <- R_C) to be the mean gap, which the R_C
	// equation's increases act on; in the algorithm a cut finds the gap
	// the increases since the last cut have nearly closed, so the mean gap
	// is a multiple of the gap at the cut. A packet run's ratio of the two
	// (TestSenderBalance) puts that back into the fixed point. 0: 1, the
	// papers' model. FixedPoint only.
	CutGapFactor float64
	// AdditiveInRC, FixedPoint only, adds to R_C's increase what an
	// additive step gives it in the algorithm: R_T += R_AI, then R_C =
	// (R_C + R_T)/2 raises R_C by (R_T - R_C + R_AI)/2, where the papers'
	// dR_C/dt keeps (R_T - R_C)/2 for every event, so the fixed point's
	// balance becomes alpha a/tau = (R_T - R_C)(b+d) + R_AI (c+e).
	AdditiveInRC bool
}

// Paper returns the parameters of the DCQCN paper's Table 3 (SIGCOMM 2015)
// for n senders into a link of rate c: K_min 5 KB, K_max 200 KB, P_max 1 %,
// g = 1/256, tau = 50 µs, tau' = 55 µs, T = 55 µs, B = 10 MB, F = 5,
// R_AI = 40 Mb/s, 1 KB packets; tau* is the caller's.
func Paper(n int, cBitsPerSec, tauStarSec float64) Params {
	return Params{
		Senders: n, CapacityBitsPerSec: cBitsPerSec, PacketBytes: 1000,
		KMinBytes: 5e3, KMaxBytes: 200e3, PMax: 0.01,
		G: 1.0 / 256, CNPIntervalSec: 50e-6, AlphaPeriodSec: 55e-6,
		TimerSec: 55e-6, ByteCounterBytes: 10e6, F: 5, RAIBitsPerSec: 40e6,
		FeedbackDelaySec: tauStarSec, InitialAlpha: 1,
	}
}

// Validate reports parameters the model cannot use.
func (p Params) Validate() error {
	switch {
	case p.Senders < 1:
		return fmt.Errorf("fluid: senders %d, need at least 1", p.Senders)
	case p.CapacityBitsPerSec <= 0 || p.PacketBytes <= 0:
		return errors.New("fluid: capacity and packet size must be positive")
	case p.KMinBytes < 0 || p.KMaxBytes <= p.KMinBytes:
		return fmt.Errorf("fluid: need 0 <= kmin (%g) < kmax (%g)", p.KMinBytes, p.KMaxBytes)
	case p.PMax <= 0 || p.PMax > 1:
		return fmt.Errorf("fluid: pmax %g outside (0, 1]", p.PMax)
	case p.G <= 0 || p.G > 1:
		return fmt.Errorf("fluid: g %g outside (0, 1]", p.G)
	case p.CNPIntervalSec <= 0 || p.AlphaPeriodSec <= 0 || p.TimerSec <= 0 || p.ByteCounterBytes <= 0:
		return errors.New("fluid: tau, tau', T and B must be positive")
	case p.F < 1 || p.RAIBitsPerSec <= 0 || p.FeedbackDelaySec < 0:
		return errors.New("fluid: need F >= 1, R_AI > 0, tau* >= 0")
	}
	return nil
}

func (p Params) lineRate() float64 {
	if p.LineRateBitsPerSec > 0 {
		return p.LineRateBitsPerSec
	}
	return p.CapacityBitsPerSec
}

// pkts converts bits per second to packets per second.
func (p Params) pkts(bps float64) float64 { return bps / (8 * p.PacketBytes) }

// mark is equation 1: the marking probability of a queue of q packets.
func (p Params) mark(qPkts float64) float64 {
	kmin, kmax := p.KMinBytes/p.PacketBytes, p.KMaxBytes/p.PacketBytes
	switch {
	case qPkts <= kmin:
		return 0
	case qPkts <= kmax:
		return (qPkts - kmin) / (kmax - kmin) * p.PMax
	}
	return 1
}

// terms are a, b, c, d, e of the package comment for marking probability
// pr and rate rc (packets per second).
func (p Params) terms(pr, rc float64) (a, b, c, d, e float64) {
	bPkts := p.ByteCounterBytes / p.PacketBytes
	tr := p.TimerSec * rc
	f := float64(p.F)
	switch {
	case pr <= 0:
		// The limit p -> 0: every B packets and every T an increase event.
		b = 1 / bPkts
		if tr > 0 {
			d = 1 / tr
		}
		return 0, b, b, d, d
	case pr >= 1:
		return 1, 0, 0, 0, 0
	}
	l := math.Log1p(-pr) // log(1-p), exact for small p
	a = -math.Expm1(p.CNPIntervalSec * rc * l)
	if p.NPRenewal {
		x := -p.CNPIntervalSec * rc * l
		a = x / (1 + x)
	}
	b = pr / math.Expm1(-bPkts*l)
	c = b * math.Exp(f*bPkts*l)
	if tr > 0 {
		d = pr / math.Expm1(-tr*l)
		e = d * math.Exp(f*tr*l)
	}
	return a, b, c, d, e
}

// alphaIn is alpha's input at marking probability pr and rate rc: the
// probability that an alpha period holds a mark, 1-(1-pr)^(tau' rc), or
// with NPRenewal one that holds a CNP.
func (p Params) alphaIn(pr, rc float64) float64 {
	if pr >= 1 {
		return 1
	}
	if p.NPRenewal {
		a, _, _, _, _ := p.terms(pr, rc)
		return -math.Expm1(-p.AlphaPeriodSec / p.CNPIntervalSec * a)
	}
	return -math.Expm1(p.AlphaPeriodSec * rc * math.Log1p(-pr))
}

// FixedPoint is the model's equilibrium: every derivative zero.
type FixedPoint struct {
	QueueBytes       float64
	RateBitsPerSec   float64 // R_C of each sender: C/N
	TargetBitsPerSec float64 // R_T
	Alpha            float64
	MarkProb         float64 // p at the fixed point
}

// FixedPoint solves the model's equilibrium (CoNEXT 2016, §3.2): R_C =
// C/N from dq/dt = 0; alpha = 1-(1-p)^(tau' R_C) from dalpha/dt = 0;
// R_T - R_C = tau R_AI R_C (c+e)/a from dR_T/dt = 0; and p is the one root
// in (0, 1) of dR_C/dt = 0, alpha a/tau = (R_T - R_C)(b+d), found by
// bisection on log p. It returns an error when C/N is at or above a
// sender's line rate (no queue builds: the model has no equilibrium with
// p > 0) or when the root lies above P_max (the queue would sit at K_max).
func (p Params) FixedPoint() (FixedPoint, error) {
	if err := p.Validate(); err != nil {
		return FixedPoint{}, err
	}
	rcBps := p.CapacityBitsPerSec / float64(p.Senders)
	if rcBps >= p.lineRate() {
		return FixedPoint{}, fmt.Errorf("fluid: C/N = %g b/s is not below the line rate: no congestion", rcBps)
	}
	rc := p.pkts(rcBps)
	rai := p.pkts(p.RAIBitsPerSec)
	gap := func(pr float64) (float64, float64) {
		a, b, c, d, e := p.terms(pr, rc)
		alpha := p.alphaIn(pr, rc)
		dr := p.CNPIntervalSec * rai * rc * (c + e) / a
		if p.CutGapFactor > 0 {
			dr *= p.CutGapFactor
		}
		inc := dr * (b + d)
		if p.AdditiveInRC {
			inc += rai * (c + e)
		}
		return alpha*a/p.CNPIntervalSec - inc, dr
	}
	lo, hi := 1e-12, 1-1e-12
	if g, _ := gap(lo); g >= 0 {
		return FixedPoint{}, errors.New("fluid: no root above p = 1e-12")
	}
	if g, _ := gap(hi); g <= 0 {
		return FixedPoint{}, errors.New("fluid: no root below p = 1")
	}
	for range 200 {
		mid := math.Sqrt(lo * hi) // bisection on log p
		if g, _ := gap(mid); g < 0 {
			lo = mid
		} else {
			hi = mid
		}
		if hi/lo-1 < 1e-12 {
			break
		}
	}
	pr := math.Sqrt(lo * hi)
	if pr > p.PMax {
		return FixedPoint{}, fmt.Errorf("fluid: fixed-point marking %g above pmax %g: the queue would sit at K_max", pr, p.PMax)
	}
	_, dr := gap(pr)
	q := p.KMinBytes + pr/p.PMax*(p.KMaxBytes-p.KMinBytes)
	return FixedPoint{
		QueueBytes:       q,
		RateBitsPerSec:   rcBps,
		TargetBitsPerSec: rcBps + dr*8*p.PacketBytes,
		Alpha:            p.alphaIn(pr, rc),
		MarkProb:         pr,
	}, nil
}

// Sample is the model's state at one time.
type Sample struct {
	TimeSec          float64
	QueueBytes       float64
	RateBitsPerSec   float64 // R_C of each sender
	TargetBitsPerSec float64
	Alpha            float64
}

// Trajectory is a solved run of the model.
type Trajectory struct {
	Samples []Sample // every SampleSec
}

// Simulate integrates the delay differential equations from t = 0 (every
// sender at InitialRateFraction of its line rate, alpha = InitialAlpha,
// empty queue, the same history before 0) to durSec with forward Euler at
// stepSec, recording a sample every sampleSec. All senders are identical
// and start together, so one sender's state stands for all of them.
func (p Params) Simulate(durSec, stepSec, sampleSec float64) (Trajectory, error) {
	if err := p.Validate(); err != nil {
		return Trajectory{}, err
	}
	if stepSec <= 0 || durSec <= 0 || sampleSec < stepSec {
		return Trajectory{}, errors.New("fluid: need duration > 0, step > 0, sample interval >= step")
	}
	capPkts, line := p.pkts(p.CapacityBitsPerSec), p.pkts(p.lineRate())
	rai := p.pkts(p.RAIBitsPerSec)
	n := float64(p.Senders)
	r0 := p.InitialRateFraction
	if r0 <= 0 {
		r0 = 1
	}
	rc, rt, alpha, q := r0*line, r0*line, p.InitialAlpha, 0.0
	// The delayed R_C and q, in a ring of the last tau*/step values.
	lag := int(math.Round(p.FeedbackDelaySec / stepSec))
	histRC := make([]float64, lag+1)
	histQ := make([]float64, lag+1)
	for i := range histRC {
		histRC[i] = rc
	}
	steps := int(math.Round(durSec / stepSec))
	every := max(1, int(math.Round(sampleSec/stepSec)))
	tr := Trajectory{Samples: make([]Sample, 0, steps/every+1)}
	for i := 0; i <= steps; i++ {
		if i%every == 0 {
			tr.Samples = append(tr.Samples, Sample{
				TimeSec: float64(i) * stepSec, QueueBytes: q * p.PacketBytes,
				RateBitsPerSec: rc * 8 * p.PacketBytes, TargetBitsPerSec: rt * 8 * p.PacketBytes, Alpha: alpha,
			})
		}
		slot := i % (lag + 1)
		rcLag, qLag := histRC[slot], histQ[slot] // written lag steps ago
		histRC[slot], histQ[slot] = rc, q
		pr := p.mark(qLag)
		a, b, c, d, e := p.terms(pr, rcLag)
		dAlpha := p.G / p.AlphaPeriodSec * (p.alphaIn(pr, rcLag) - alpha)
		dRT := -(rt-rc)/p.CNPIntervalSec*a + rai*rcLag*(c+e)
		dRC := -rc*alpha/(2*p.CNPIntervalSec)*a + (rt-rc)/2*rcLag*(b+d)
		dQ := n*rc - capPkts
		alpha = min(max(alpha+stepSec*dAlpha, 0), 1)
		rt = min(max(rt+stepSec*dRT, 0), line)
		rc = min(max(rc+stepSec*dRC, 0), rt, line)
		q = max(q+stepSec*dQ, 0)
	}
	return tr, nil
}

// Window summarises a trajectory between two times.
type Window struct {
	MeanQueueBytes, MinQueueBytes, MaxQueueBytes float64
	MeanRateBitsPerSec                           float64
	MeanAlpha                                    float64
}

// Window returns the mean, minimum and maximum of the queue, and the mean
// rate and alpha, over samples with fromSec <= t < toSec.
func (tr Trajectory) Window(fromSec, toSec float64) Window {
	w := Window{MinQueueBytes: math.Inf(1), MaxQueueBytes: math.Inf(-1)}
	n := 0
	for _, s := range tr.Samples {
		if s.TimeSec < fromSec || s.TimeSec >= toSec {
			continue
		}
		n++
		w.MeanQueueBytes += s.QueueBytes
		w.MeanRateBitsPerSec += s.RateBitsPerSec
		w.MeanAlpha += s.Alpha
		w.MinQueueBytes = min(w.MinQueueBytes, s.QueueBytes)
		w.MaxQueueBytes = max(w.MaxQueueBytes, s.QueueBytes)
	}
	if n > 0 {
		w.MeanQueueBytes /= float64(n)
		w.MeanRateBitsPerSec /= float64(n)
		w.MeanAlpha /= float64(n)
	}
	return w
}

// Oscillates reports whether the queue still swings in the window: its
// peak-to-peak range exceeds frac of the mean queue (a converging model
// settles to a range far below that; a limit cycle keeps it).
func (w Window) Oscillates(frac float64) bool {
	return w.MaxQueueBytes-w.MinQueueBytes > frac*w.MeanQueueBytes
}
