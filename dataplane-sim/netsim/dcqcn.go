package netsim

import (
	"fmt"
	"math/bits"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// DCQCNConfig is the reaction point (sender) of DCQCN, with NVIDIA ConnectX
// parameter names. Defaults (DefaultDCQCN) are NVIDIA's documented firmware
// defaults, from "DCQCN CC Parameters" (NVIDIA DOCA SDK documentation,
// networking-docs.nvidia.com/doca/.../dcqcn-cc-parameters, and the older
// Mellanox community page DOC-2790 "DCQCN Parameters"); PaperDCQCN is the
// parameter set of the DCQCN paper (Zhu et al., SIGCOMM 2015). docs/engine.md
// has the table with sources. Rates are bits per second; G and InitialAlpha
// are fixed point with 10 fraction bits (1024 = 1.0), as in the firmware.
type DCQCNConfig struct {
	Enabled bool

	// Alpha update, the rule both sources share: with g = (1024-G)/1024,
	// alpha becomes (1-g)*alpha + g for a CNP and (1-g)*alpha for a period
	// of AlphaUpdatePeriod without one (DOC-2790: "alpha = G/1024*alpha +
	// (1024-G)" with a CNP in the period, "G/1024*alpha" without; the
	// paper: "alpha = (1-g)alpha + g" on a CNP, "(1-g)alpha" after K without
	// feedback). Alpha itself is kept with 30 fraction bits: 10-bit
	// truncation would take at least 1/1024 off per period below 0.2 and
	// zero alpha within microseconds of a CNP, which neither source does.
	G                 uint32      // dce_tcp_g, default 1019 (g = 5/1024); the paper's g = 1/256 is G = 1020
	AlphaUpdatePeriod engine.Time // dce_tcp_rtt, default 1 µs; the paper's K = 55 µs
	InitialAlpha      uint32      // initial_alpha_value, default 1023; the paper's 1.0 is 1024
	// AlphaPerCNP selects the paper's timing: every CNP updates alpha at
	// once (after the cut it causes) and restarts the K timer, and alpha
	// decays once per K without a CNP. Without it, the firmware's: alpha is
	// updated at the end of every AlphaUpdatePeriod, counted from the first
	// CNP, with the CNP term if at least one CNP arrived in the period.
	AlphaPerCNP bool

	// Rate decrease, at most once per RateReduceMonitorPeriod while CNPs
	// arrive: Rc -= Rc*alpha/2^GD, bounded below by Rc*MinDecFacPercent/100
	// and MinRateBitsPerSec; the target rate Rt takes the old Rc first (see Clamp*).
	RateOnFirstCNPBitsPerSec int64       // rate_to_set_on_first_cnp, 0 = no special first rate
	MinDecFacPercent         int64       // rpg_min_dec_fac, default 50
	MinRateBitsPerSec        int64       // rpg_min_rate, default 1 Mb/s
	GD                       uint        // rpg_gd, default 11 (Rc*alpha/2048 = Rc*α/2)
	RateReduceMonitorPeriod  engine.Time // rate_reduce_monitor_period, default 4 µs
	ClampTargetRate          bool        // clamp_tgt_rate, default false
	ClampTargetAfterTimeInc  bool        // clamp_tgt_rate_after_time_inc, default true

	// Rate increase: a timer every TimeReset and a byte counter every
	// ByteResetBytes each advance their stage counter (the number of that
	// counter's events since the last cut) and trigger an increase judged
	// by the stages the event found, its own before the advance: fast recovery
	// (Rc = (Rc+Rt)/2) while both stages are below Threshold (F events of
	// fast recovery after a cut, the DCQCN paper's F iterations and the
	// reference RDMA ns-3's RateIncEventMlx), hyper increase
	// (Rt += i*HAIRateBitsPerSec, i = the lower stage - Threshold) once both
	// exceed it, additive increase (Rt += AIRateBitsPerSec) in between.
	TimeReset         engine.Time // rpg_time_reset, default 300 µs
	ByteResetBytes    int64       // rpg_byte_reset, default 32767 x 64 B = 2 MiB (0 disables)
	Threshold         int         // rpg_threshold, default 1
	MaxRateBitsPerSec int64       // rpg_max_rate, 0 = line rate
	AIRateBitsPerSec  int64       // rpg_ai_rate, default 5 Mb/s
	HAIRateBitsPerSec int64       // rpg_hai_rate, default 50 Mb/s
}

// DefaultDCQCN returns NVIDIA's default DCQCN reaction-point parameters.
func DefaultDCQCN() DCQCNConfig {
	return DCQCNConfig{
		Enabled:                 true,
		G:                       1019,
		AlphaUpdatePeriod:       1 * engine.Microsecond,
		InitialAlpha:            1023,
		MinDecFacPercent:        50,
		MinRateBitsPerSec:       1_000_000,
		GD:                      11,
		RateReduceMonitorPeriod: 4 * engine.Microsecond,
		ClampTargetAfterTimeInc: true,
		TimeReset:               300 * engine.Microsecond,
		// rpg_byte_reset is in units of 64 bytes: the default 32767 is
		// about 2 MiB (Spirent's DCQCN profile shows the same 2 MB default).
		ByteResetBytes:    32767 * 64,
		Threshold:         1,
		AIRateBitsPerSec:  5_000_000,
		HAIRateBitsPerSec: 50_000_000,
	}
}

// PaperDCQCN returns the reaction point of the DCQCN paper (Zhu et al.,
// "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015, §3.1
// and its parameter table): on every CNP Rt = Rc, Rc = Rc(1 - α/2), then
// α = (1-g)α + g with g = 1/256; α = (1-g)α after K = 55 µs without a CNP;
// α starts at 1; rate increase by a 55 µs timer and a 10 MB byte counter,
// F = 5, R_AI = 40 Mb/s, R_HAI = 200 Mb/s. Pair it with PaperNP (N = 50 µs).
// The paper has no monitor period (every CNP cuts) and no min_dec_fac
// (α ≤ 1 already bounds a cut at one half).
func PaperDCQCN() DCQCNConfig {
	c := DefaultDCQCN()
	c.G = 1020 // 1 - 1020/1024 = 1/256
	c.AlphaUpdatePeriod = 55 * engine.Microsecond
	c.InitialAlpha = 1024
	c.AlphaPerCNP = true
	c.MinDecFacPercent = 0
	c.RateReduceMonitorPeriod = 0
	c.ClampTargetRate = true
	c.TimeReset = 55 * engine.Microsecond
	c.ByteResetBytes = 10_000_000
	c.Threshold = 5
	c.AIRateBitsPerSec = 40_000_000
	c.HAIRateBitsPerSec = 200_000_000
	return c
}

// PaperNP returns the paper's notification point: at most one CNP per QP
// per N = 50 µs.
func PaperNP() NPConfig { return NPConfig{CNPInterval: 50 * engine.Microsecond, CNPPrio: 6} }

// Validate checks for values that cannot work.
func (c *DCQCNConfig) Validate() error {
	if !c.Enabled {
		return nil
	}
	switch {
	case c.G > 1024:
		return fmt.Errorf("dcqcn: g %d above 1024", c.G)
	case c.AlphaUpdatePeriod <= 0:
		return fmt.Errorf("dcqcn: alpha update period %v must be positive", c.AlphaUpdatePeriod)
	case c.InitialAlpha > 1024:
		return fmt.Errorf("dcqcn: initial alpha %d above 1024 (1.0)", c.InitialAlpha)
	case c.MinDecFacPercent < 0 || c.MinDecFacPercent > 100:
		return fmt.Errorf("dcqcn: min_dec_fac %d%% outside 0..100", c.MinDecFacPercent)
	case c.MinRateBitsPerSec <= 0:
		return fmt.Errorf("dcqcn: min rate %d must be positive", c.MinRateBitsPerSec)
	case c.GD > 30:
		return fmt.Errorf("dcqcn: rpg_gd %d too large", c.GD)
	case c.RateReduceMonitorPeriod < 0:
		return fmt.Errorf("dcqcn: rate reduce monitor period %v is negative", c.RateReduceMonitorPeriod)
	case c.TimeReset <= 0:
		return fmt.Errorf("dcqcn: time reset %v must be positive", c.TimeReset)
	case c.ByteResetBytes < 0 || c.Threshold < 0 || c.AIRateBitsPerSec < 0 || c.HAIRateBitsPerSec < 0 || c.MaxRateBitsPerSec < 0:
		return fmt.Errorf("dcqcn: negative parameter")
	}
	return nil
}

// dcqcn is the reaction-point state of one QP. (Its flags sit together
// at the end: a QP is 448 bytes, seven cache lines: TestHotTypesOwnTheirLines.)
type dcqcn struct {
	rc, rt int64  // current and target rate, bps
	alpha  uint64 // fixed point, alphaFracBits fraction bits

	// Alpha is updated lazily: periods are counted from alphaT0 (the first
	// CNP; with AlphaPerCNP the last one) and applied when someone needs
	// alpha (a CNP, a decrease, a snapshot). This is exactly the
	// per-period timer without an event per period.
	alphaT0     engine.Time
	alphaPeriod int64 // periods already applied

	lastDecrease engine.Time
	timeStage    int
	byteStage    int
	byteCounter  int64

	// The rate-increase timer. incGen numbers its deadlines (a cut or a
	// start makes a new one; a tick re-arms with the same number) and
	// incDue is the current one's place in the order of events
	// (engine.Sim.Reserve), while incRunning. One event of the timer is
	// pending for it, numbered incQGen (0: none) and due at incQAt: a
	// restart whose deadline is not before incQAt only reserves its place,
	// and that event, when it fires with an older number, schedules the
	// deadline's at the place reserved (incFired). A QP cut every few
	// microseconds so keeps one pending event instead of one per cut, whose
	// superseded events fired and did nothing (2.6 % of the §7 example's
	// events); the events that do fire run in the order they had when
	// every cut scheduled its own.
	incGen  uint64
	incDue  engine.Key
	incQGen uint64
	incQAt  engine.Time

	cnpRx    int64
	rateCuts int64

	trace func(DCQCNEvent) // TraceDCQCN's, nil: none
	tm    *qpTimers        // the handler of the timers above, made at the first

	active          bool // a CNP has arrived: the rate limiter is engaged
	cnpInPeriod     bool
	decreasePending bool
	cnpSinceDec     bool
	incRunning      bool
}

// DCQCNEventKind says what changed a QP's DCQCN rates.
type DCQCNEventKind uint8

// The kinds of DCQCNEvent.
const (
	DCQCNCut      DCQCNEventKind = iota // a rate decrease
	DCQCNTimerInc                       // the rate-increase timer expired
	DCQCNByteInc                        // the byte counter expired
)

// DCQCNIncrease is the phase of an increase event.
type DCQCNIncrease uint8

// The phases of an increase (DCQCNConfig's rate increase).
const (
	DCQCNFastRecovery DCQCNIncrease = iota
	DCQCNAdditive
	DCQCNHyper
)

// DCQCNEvent is one change of a QP's DCQCN rates, for TraceDCQCN: the rates
// before and after, alpha as the event used it (a cut: the alpha it cut
// with, before the CNP enters it), for an increase the stage counters it
// found and judged its phase by (its own before its advance; a cut reports
// 0, 0) and its phase.
type DCQCNEvent struct {
	At                 engine.Time
	Kind               DCQCNEventKind
	Phase              DCQCNIncrease
	RCBefore, RTBefore int64
	RCAfter, RTAfter   int64
	Alpha              float64
	TimeStage          int
	ByteStage          int
}

// TraceDCQCN calls f at every rate decrease and every increase event of
// this QP's reaction point (nil: stop). It is an instrument for tests and
// validation; the QP's behaviour does not depend on it.
func (q *QP) TraceDCQCN(f func(DCQCNEvent)) { q.dc.trace = f }

// Alpha arithmetic: 30 fraction bits, so that a product of two values of
// at most 1.0 fits in 60 bits.
const (
	alphaFracBits = 30
	alphaOne      = uint64(1) << alphaFracBits
)

// fixMul multiplies two alpha fixed-point values, rounding to nearest.
func fixMul(a, b uint64) uint64 { return (a*b + alphaOne/2) >> alphaFracBits }

// fixPow raises x (at most 1.0) to the n-th power by squaring: n periods of
// decay cost log2(n) multiplications, not n.
func fixPow(x uint64, n int64) uint64 {
	r := alphaOne
	for n > 0 && r > 0 {
		if n&1 == 1 {
			r = fixMul(r, x)
		}
		x = fixMul(x, x)
		n >>= 1
	}
	return r
}

// from1024 converts a 10-bit firmware fraction (1024 = 1.0).
func from1024(v uint32) uint64 { return uint64(v) << (alphaFracBits - 10) }

// QP timer kinds.
const (
	evQPStart uint32 = iota
	evQPIncTimer
	evQPDecrease
	evQPCMRetry // arg: the REQ's communication ID
)

// maxRate is the bound on Rc and Rt: the line rate, DCQCN's rpg_max_rate,
// the flow's maximum and the ceiling, whichever is lowest.
func (q *QP) maxRate() int64 {
	r := q.lineRateBitsPerSec
	if c := q.cc().MaxRateBitsPerSec; c > 0 && c < r {
		r = c
	}
	if q.maxRateBitsPerSec > 0 && q.maxRateBitsPerSec < r {
		r = q.maxRateBitsPerSec
	}
	if q.ceilingBitsPerSec > 0 && q.ceilingBitsPerSec < r {
		r = q.ceilingBitsPerSec
	}
	return r
}

// ownMaxRate is maxRate without rpg_max_rate (the host's configuration):
// the QP's own bounds, fixed once it is retired.
func (q *QP) ownMaxRate() int64 {
	r := q.lineRateBitsPerSec
	if q.maxRateBitsPerSec > 0 && q.maxRateBitsPerSec < r {
		r = q.maxRateBitsPerSec
	}
	if q.ceilingBitsPerSec > 0 && q.ceilingBitsPerSec < r {
		r = q.ceilingBitsPerSec
	}
	return r
}

func (q *QP) cc() *DCQCNConfig { return &q.host.cfg.DCQCN }

// alphaCatchUp applies the alpha updates of all periods that ended by now:
// the CNP term for the first if a CNP arrived in it (firmware timing), the
// decay (G/1024)^n for the others.
func (q *QP) alphaCatchUp(now engine.Time) {
	s := &q.dc
	c := q.cc()
	k := int64((now - s.alphaT0) / max(c.AlphaUpdatePeriod, 1))
	if s.alphaPeriod >= k {
		return
	}
	r := from1024(c.G)
	if s.cnpInPeriod {
		s.alpha = fixMul(s.alpha, r) + (alphaOne - r)
		s.cnpInPeriod = false
		s.alphaPeriod++
	}
	if n := k - s.alphaPeriod; n > 0 && s.alpha > 0 {
		s.alpha = fixMul(s.alpha, fixPow(r, n))
	}
	s.alphaPeriod = k
}

// alphaOnCNP enters one CNP into alpha: at once with AlphaPerCNP (the
// paper), else at the end of the current period (the firmware).
func (q *QP) alphaOnCNP(now engine.Time) {
	s := &q.dc
	c := q.cc()
	if !c.AlphaPerCNP {
		s.cnpInPeriod = true
		return
	}
	q.alphaCatchUp(now)
	r := from1024(c.G)
	s.alpha = fixMul(s.alpha, r) + (alphaOne - r)
	s.alphaT0, s.alphaPeriod = now, 0 // the K timer restarts
}

// ApplyCNP runs DCQCN's reaction to one congestion notification, as if a
// standard CNP had arrived (what the host does by default; a Long-haul CNP
// reaction point calls it for the Notify action or for legacy behaviour).
func (q *QP) ApplyCNP() {
	now := q.host.part.sim.Now()
	s := &q.dc
	s.cnpRx++
	c := q.cc()
	if !c.Enabled {
		return
	}
	if !s.active {
		s.active = true
		s.alpha = from1024(c.InitialAlpha)
		s.alphaT0 = now
		s.alphaPeriod = 0
		s.cnpInPeriod = false
		s.lastDecrease = now - c.RateReduceMonitorPeriod
		if c.RateOnFirstCNPBitsPerSec > 0 {
			r := min(c.RateOnFirstCNPBitsPerSec, q.maxRate())
			s.rc, s.rt = r, r
		}
	}
	q.alphaCatchUp(now)
	s.cnpSinceDec = true
	if now-s.lastDecrease >= c.RateReduceMonitorPeriod {
		// Both sources cut with the alpha the CNP finds, then let the CNP
		// into alpha (the paper's Rc = Rc(1 - α/2) before α = (1-g)α + g;
		// the firmware's update at the end of the CNP's period).
		q.decrease(now)
		q.alphaOnCNP(now)
		return
	}
	q.alphaOnCNP(now)
	if !s.decreasePending {
		s.decreasePending = true
		q.host.part.sim.At(s.lastDecrease+c.RateReduceMonitorPeriod, q.timers(), evQPDecrease, 0)
	}
}

func (q *QP) decrease(now engine.Time) {
	s := &q.dc
	c := q.cc()
	s.cnpSinceDec = false
	q.alphaCatchUp(now)
	rc0, rt0 := s.rc, s.rt
	clamp := c.ClampTargetRate ||
		(c.ClampTargetAfterTimeInc && s.timeStage > 0) ||
		(!c.ClampTargetAfterTimeInc && (s.timeStage > 0 || s.byteStage > 0))
	if clamp || s.rateCuts == 0 {
		s.rt = s.rc
	}
	cut := alphaCut(s.rc, s.alpha, c.GD)
	nr := s.rc - cut
	if floor := s.rc * c.MinDecFacPercent / 100; nr < floor {
		nr = floor
	}
	if nr < c.MinRateBitsPerSec {
		nr = c.MinRateBitsPerSec
	}
	s.rc = nr
	s.rateCuts++
	s.lastDecrease = now
	s.timeStage, s.byteStage, s.byteCounter = 0, 0, 0
	if s.trace != nil {
		s.trace(DCQCNEvent{At: now, Kind: DCQCNCut, RCBefore: rc0, RTBefore: rt0, RCAfter: s.rc, RTAfter: s.rt,
			Alpha: float64(s.alpha) / float64(alphaOne)})
	}
	s.armInc(q.host.part.sim, q.timers(), c.TimeReset)
	q.rateChanged()
}

// alphaCut is Rc*alpha/2^GD with alpha in 10-bit units (1024 = 1.0), as
// the firmware's rpg_gd defines it, computed in 128 bits from the 30-bit
// alpha.
func alphaCut(rcBitsPerSec int64, alpha uint64, gd uint) int64 {
	hi, lo := bits.Mul64(uint64(rcBitsPerSec), alpha)
	sh := gd + alphaFracBits - 10
	if sh >= 64 {
		return int64(hi >> (sh - 64))
	}
	return int64(hi<<(64-sh) | lo>>sh)
}

// increase runs one rate-increase event (timer or byte counter).
func (q *QP) increase(kind DCQCNEventKind) {
	s := &q.dc
	maxR := q.maxRate()
	if s.rc >= maxR && s.rt >= maxR {
		return
	}
	rc0, rt0 := s.rc, s.rt
	phase, ts, bs := s.raise(q.cc(), maxR, kind)
	if s.trace != nil {
		s.trace(DCQCNEvent{At: q.host.part.sim.Now(), Kind: kind, Phase: phase, RCBefore: rc0, RTBefore: rt0,
			RCAfter: s.rc, RTAfter: s.rt, Alpha: float64(s.alpha) / float64(alphaOne), TimeStage: ts, ByteStage: bs})
	}
	q.rateChanged()
}

// raise is an increase event's arithmetic on the rates, below maxR: the
// phase it judged and the stage counters it judged it by.
func (s *dcqcn) raise(c *DCQCNConfig, maxR int64, kind DCQCNEventKind) (phase DCQCNIncrease, ts, bs int) {
	// The stages as this event found them: its own counter has already
	// advanced (onBytesSent, Handle) so that an event of the other counter
	// that this increase sets off (rateChanged sends) finds it advanced,
	// and is judged by its value before.
	ts, bs = s.timeStage, s.byteStage
	if kind == DCQCNTimerInc {
		ts--
	} else {
		bs--
	}
	f := c.Threshold
	lo, hi := ts, bs
	if lo > hi {
		lo, hi = hi, lo
	}
	phase = DCQCNFastRecovery
	switch {
	case hi < f: // fast recovery
	case lo > f: // hyper increase
		s.rt += int64(lo-f) * c.HAIRateBitsPerSec
		phase = DCQCNHyper
	default: // additive increase
		s.rt += c.AIRateBitsPerSec
		phase = DCQCNAdditive
	}
	if s.rt > maxR {
		s.rt = maxR
	}
	// (Rc + Rt)/2 rounded up, so that Rc reaches Rt: rounded down it
	// would stop one bit per second below, and the increase timer of a QP
	// back at full rate would tick until the run ends.
	s.rc = (s.rc + s.rt + 1) / 2
	if s.rc > maxR {
		s.rc = maxR
	}
	return phase, ts, bs
}

// armInc starts a new deadline of the increase timer, d from now: it
// takes the place in the order of events that scheduling it now gives,
// and is scheduled now unless the timer's pending event is due no later
// (that event moves on to it: incFired).
func (s *dcqcn) armInc(sim *engine.Sim, h engine.Handler, d engine.Time) {
	s.incGen++
	s.incRunning = true
	k := sim.Reserve(sim.Now() + d)
	s.incDue = k
	if s.incQGen != 0 && s.incQAt <= k.At {
		return
	}
	s.incQGen, s.incQAt = s.incGen, k.At
	sim.AtKey(k, h, evQPIncTimer, s.incGen)
}

// incFired takes the increase timer's event numbered gen as it fires and
// reports whether the timer ticks now. The pending event of an older
// deadline moves on to the current one's place and does nothing else;
// others (superseded by a deadline that came earlier: TimeReset
// shortened) do nothing at all.
func (s *dcqcn) incFired(sim *engine.Sim, h engine.Handler, gen uint64) bool {
	if gen != s.incQGen {
		return false
	}
	s.incQGen = 0
	if gen == s.incGen {
		return true
	}
	s.incQGen, s.incQAt = s.incGen, s.incDue.At
	sim.AtKey(s.incDue, h, evQPIncTimer, s.incGen)
	return false
}

// incAgain re-arms the increase timer after a tick, d on, with the same
// number.
func (s *dcqcn) incAgain(sim *engine.Sim, h engine.Handler, d engine.Time) {
	s.incQGen, s.incQAt = s.incGen, sim.Now()+d
	sim.After(d, h, evQPIncTimer, s.incGen)
}

// onBytesSent feeds DCQCN's byte counter.
func (q *QP) onBytesSent(n int64) {
	s := &q.dc
	if !s.active {
		return
	}
	c := q.cc()
	if c.ByteResetBytes <= 0 {
		return
	}
	s.byteCounter += n
	if s.byteCounter >= c.ByteResetBytes {
		s.byteCounter -= c.ByteResetBytes
		s.byteStage++
		q.increase(DCQCNByteInc)
	}
}

// Handle runs the QP's start and CM timers (its DCQCN timers are
// qpTimers').
func (q *QP) Handle(kind uint32, arg uint64) {
	switch kind {
	case evQPStart:
		q.start()
	case evQPCMRetry:
		q.retryREQ(uint32(arg))
	}
}

// qpTimers is the handler of a QP's DCQCN timers (rate increase and
// decrease): the engine's pending events hold it, not the QP, so that
// retiring the QP (detachTimers) lets the QP go at once while a timer of
// it is still pending.
type qpTimers struct {
	q   *QP          // nil once detached
	det *detachedInc // detached with its increase timer running (RetireFinishedLater), else nil
}

// detachedInc is a retired QP's increase timer, ticking on as the QP's
// would have (RetireFinishedLater keeps the run's events): the QP gets
// nothing but its ticks (no CNP, no byte sent), so each tick below the
// maximum raises the rates it holds and schedules the next, and the first
// to find both at the maximum stops, as the QP's timer does. Rt climbs
// there by the additive steps and Rc, (Rc + Rt)/2 rounded up, reaches Rt;
// only increases that add nothing (rate_ai, and rate_hai in the hyper
// phase, 0) tick until the run ends, as the QP's would.
type detachedInc struct {
	s   dcqcn        // the rates, stages and timer (a copy: the QP is gone)
	own int64        // the QP's own bound on its rate (line rate, flow maximum, ceiling)
	c   *DCQCNConfig // its host's, read at every tick as the QP would
	sim *engine.Sim
}

// timers returns q's timer handler, made at its first use.
func (q *QP) timers() *qpTimers {
	if q.dc.tm == nil {
		q.dc.tm = &qpTimers{q: q}
	}
	return q.dc.tm
}

// Handle implements engine.Handler: the QP's DCQCN timers, until it is
// detached; then the increase timer ticks on as it would have (detachedInc).
func (t *qpTimers) Handle(kind uint32, arg uint64) {
	if q := t.q; q != nil {
		s := &q.dc
		switch kind {
		case evQPDecrease:
			s.decreasePending = false
			if s.cnpSinceDec {
				q.decrease(q.host.part.sim.Now())
			}
		case evQPIncTimer:
			sim := q.host.part.sim
			if !s.incFired(sim, t, arg) {
				return
			}
			maxR := q.maxRate()
			if s.rc >= maxR && s.rt >= maxR {
				s.incRunning = false // back at full rate: stop ticking until the next cut
				return
			}
			s.timeStage++
			q.increase(DCQCNTimerInc)
			s.incAgain(sim, t, q.cc().TimeReset)
		}
		return
	}
	d := t.det
	if d == nil || kind != evQPIncTimer || !d.s.incFired(d.sim, t, arg) {
		return
	}
	maxR := d.own
	if m := d.c.MaxRateBitsPerSec; m > 0 && m < maxR {
		maxR = m
	}
	if d.s.rc >= maxR && d.s.rt >= maxR {
		t.det = nil // at full rate: the timer stops
		return
	}
	d.s.timeStage++
	d.s.raise(d.c, maxR, DCQCNTimerInc)
	d.s.incAgain(d.sim, t, d.c.TimeReset)
}

// detachTimers lets a retired q's pending timers go on without q. With
// keepTicks (RetireFinishedLater: the run keeps its events) the increase
// timer goes on ticking until it would have stopped (detachedInc); a
// decrease still due (a CNP in its last monitor period) or a traced QP
// keeps the QP attached. Without, the pending events find nothing to do.
func (q *QP) detachTimers(keepTicks bool) {
	t, s := q.dc.tm, &q.dc
	if t == nil {
		return
	}
	if keepTicks {
		if (s.decreasePending && s.cnpSinceDec) || s.trace != nil {
			return
		}
		if s.incRunning {
			t.det = &detachedInc{s: *s, own: q.ownMaxRate(), c: q.cc(), sim: q.host.part.sim}
			t.det.s.tm = nil
		}
	}
	t.q = nil
}
