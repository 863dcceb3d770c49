package netsim

import (
	"fmt"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// DCQCNConfig is the reaction point (sender) of DCQCN, with NVIDIA ConnectX
// parameter names. Defaults (DefaultDCQCN) are NVIDIA's documented firmware
// defaults, from "DCQCN CC Parameters" (NVIDIA DOCA SDK documentation,
// networking-docs.nvidia.com/doca/.../dcqcn-cc-parameters, and the older
// Mellanox community page DOC-2790 "DCQCN Parameters"); docs/engine.md has the
// table with sources. Rates are bits per second; alpha is fixed point with 10
// fraction bits (1024 = 1.0), as in the firmware.
type DCQCNConfig struct {
	Enabled bool

	// Alpha update. Every AlphaUpdatePeriod (dce_tcp_rtt), alpha becomes
	// alpha*G/1024 + (1024-G) if a CNP arrived in the period, alpha*G/1024
	// otherwise (dce_tcp_g).
	G                 uint32      // dce_tcp_g, default 1019
	AlphaUpdatePeriod engine.Time // dce_tcp_rtt, default 1 µs
	InitialAlpha      uint32      // initial_alpha_value, default 1023

	// Rate decrease, at most once per RateReduceMonitorPeriod while CNPs
	// arrive: Rc -= Rc*alpha/2^GD, bounded below by Rc*MinDecFacPercent/100
	// and MinRateBps; the target rate Rt takes the old Rc first (see Clamp*).
	RateOnFirstCNPBps       int64       // rate_to_set_on_first_cnp, 0 = no special first rate
	MinDecFacPercent        int64       // rpg_min_dec_fac, default 50
	MinRateBps              int64       // rpg_min_rate, default 1 Mb/s
	GD                      uint        // rpg_gd, default 11 (Rc*alpha/2048 = Rc*α/2)
	RateReduceMonitorPeriod engine.Time // rate_reduce_monitor_period, default 4 µs
	ClampTargetRate         bool        // clamp_tgt_rate, default false
	ClampTargetAfterTimeInc bool        // clamp_tgt_rate_after_time_inc, default true

	// Rate increase: a timer every TimeReset and a byte counter every
	// ByteResetBytes each advance their stage counter and trigger an
	// increase: fast recovery (Rc = (Rc+Rt)/2) while both stages are below
	// Threshold, hyper increase (Rt += i*HAIRateBps) once both exceed it,
	// additive increase (Rt += AIRateBps) in between.
	TimeReset      engine.Time // rpg_time_reset, default 300 µs
	ByteResetBytes int64       // rpg_byte_reset, default 32767 x 64 B = 2 MiB (0 disables)
	Threshold      int         // rpg_threshold, default 1
	MaxRateBps     int64       // rpg_max_rate, 0 = line rate
	AIRateBps      int64       // rpg_ai_rate, default 5 Mb/s
	HAIRateBps     int64       // rpg_hai_rate, default 50 Mb/s
}

// DefaultDCQCN returns NVIDIA's default DCQCN reaction-point parameters.
func DefaultDCQCN() DCQCNConfig {
	return DCQCNConfig{
		Enabled:                 true,
		G:                       1019,
		AlphaUpdatePeriod:       1 * engine.Microsecond,
		InitialAlpha:            1023,
		MinDecFacPercent:        50,
		MinRateBps:              1_000_000,
		GD:                      11,
		RateReduceMonitorPeriod: 4 * engine.Microsecond,
		ClampTargetAfterTimeInc: true,
		TimeReset:               300 * engine.Microsecond,
		// rpg_byte_reset is in units of 64 bytes: the default 32767 is
		// about 2 MiB (Spirent's DCQCN profile shows the same 2 MB default).
		ByteResetBytes: 32767 * 64,
		Threshold:      1,
		AIRateBps:      5_000_000,
		HAIRateBps:     50_000_000,
	}
}

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
	case c.InitialAlpha > 1023:
		return fmt.Errorf("dcqcn: initial alpha %d above 1023", c.InitialAlpha)
	case c.MinDecFacPercent < 0 || c.MinDecFacPercent > 100:
		return fmt.Errorf("dcqcn: min_dec_fac %d%% outside 0..100", c.MinDecFacPercent)
	case c.MinRateBps <= 0:
		return fmt.Errorf("dcqcn: min rate %d must be positive", c.MinRateBps)
	case c.GD > 30:
		return fmt.Errorf("dcqcn: rpg_gd %d too large", c.GD)
	case c.TimeReset <= 0:
		return fmt.Errorf("dcqcn: time reset %v must be positive", c.TimeReset)
	case c.ByteResetBytes < 0 || c.Threshold < 0 || c.AIRateBps < 0 || c.HAIRateBps < 0 || c.MaxRateBps < 0:
		return fmt.Errorf("dcqcn: negative parameter")
	}
	return nil
}

// dcqcn is the reaction-point state of one QP.
type dcqcn struct {
	active bool  // a CNP has arrived: the rate limiter is engaged
	rc, rt int64 // current and target rate, bps
	alpha  uint32

	// Alpha is updated lazily: periods are aligned to alphaT0 and applied
	// when someone needs alpha (a CNP, a decrease, a snapshot). This is
	// exactly the per-period timer of the firmware without an event per µs.
	alphaT0     engine.Time
	alphaPeriod int64 // periods already applied
	cnpInPeriod bool

	lastDecrease    engine.Time
	decreasePending bool
	cnpSinceDec     bool
	timeStage       int
	byteStage       int
	byteCounter     int64
	incGen          uint64
	incRunning      bool

	cnpRx    int64
	rateCuts int64
}

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
	r := q.lineRateBps
	if c := q.cc().MaxRateBps; c > 0 && c < r {
		r = c
	}
	if q.maxRateBps > 0 && q.maxRateBps < r {
		r = q.maxRateBps
	}
	if q.ceilingBps > 0 && q.ceilingBps < r {
		r = q.ceilingBps
	}
	return r
}

func (q *QP) cc() *DCQCNConfig { return &q.host.cfg.DCQCN }

// alphaCatchUp applies the alpha updates of all periods that ended by now.
func (q *QP) alphaCatchUp(now engine.Time) {
	s := &q.dc
	c := q.cc()
	k := int64((now - s.alphaT0) / c.AlphaUpdatePeriod)
	for s.alphaPeriod < k {
		if s.cnpInPeriod {
			s.alpha = (c.G*s.alpha)>>10 + (1024 - c.G)
			if s.alpha > 1023 {
				s.alpha = 1023
			}
			s.cnpInPeriod = false
		} else {
			if s.alpha == 0 {
				s.alphaPeriod = k
				break
			}
			s.alpha = (c.G * s.alpha) >> 10
		}
		s.alphaPeriod++
	}
}

// ApplyCNP runs DCQCN's reaction to one congestion notification, as if a
// standard CNP had arrived (what the host does by default; a Long-haul CNP
// reaction point calls it for the Notify action or for legacy behaviour).
func (q *QP) ApplyCNP() {
	now := q.host.net.sim.Now()
	s := &q.dc
	s.cnpRx++
	c := q.cc()
	if !c.Enabled {
		return
	}
	if !s.active {
		s.active = true
		s.alpha = c.InitialAlpha
		s.alphaT0 = now
		s.alphaPeriod = 0
		s.cnpInPeriod = false
		s.lastDecrease = now - c.RateReduceMonitorPeriod
		if c.RateOnFirstCNPBps > 0 {
			r := min(c.RateOnFirstCNPBps, q.maxRate())
			s.rc, s.rt = r, r
		}
	}
	q.alphaCatchUp(now)
	s.cnpInPeriod = true
	s.cnpSinceDec = true
	if now-s.lastDecrease >= c.RateReduceMonitorPeriod {
		q.decrease(now)
	} else if !s.decreasePending {
		s.decreasePending = true
		q.host.net.sim.At(s.lastDecrease+c.RateReduceMonitorPeriod, q, evQPDecrease, 0)
	}
}

func (q *QP) decrease(now engine.Time) {
	s := &q.dc
	c := q.cc()
	s.cnpSinceDec = false
	q.alphaCatchUp(now)
	clamp := c.ClampTargetRate ||
		(c.ClampTargetAfterTimeInc && s.timeStage > 0) ||
		(!c.ClampTargetAfterTimeInc && (s.timeStage > 0 || s.byteStage > 0))
	if clamp || s.rateCuts == 0 {
		s.rt = s.rc
	}
	cut := (s.rc * int64(s.alpha)) >> c.GD
	nr := s.rc - cut
	if floor := s.rc * c.MinDecFacPercent / 100; nr < floor {
		nr = floor
	}
	if nr < c.MinRateBps {
		nr = c.MinRateBps
	}
	s.rc = nr
	s.rateCuts++
	s.lastDecrease = now
	s.timeStage, s.byteStage, s.byteCounter = 0, 0, 0
	s.incGen++
	s.incRunning = true
	q.host.net.sim.At(now+c.TimeReset, q, evQPIncTimer, s.incGen)
	q.rateChanged()
}

// increase runs one rate-increase event (timer or byte counter).
func (q *QP) increase() {
	s := &q.dc
	c := q.cc()
	maxR := q.maxRate()
	if s.rc >= maxR && s.rt >= maxR {
		return
	}
	f := c.Threshold
	lo, hi := s.timeStage, s.byteStage
	if lo > hi {
		lo, hi = hi, lo
	}
	switch {
	case hi < f: // fast recovery
	case lo > f: // hyper increase
		s.rt += int64(lo-f) * c.HAIRateBps
	default: // additive increase
		s.rt += c.AIRateBps
	}
	if s.rt > maxR {
		s.rt = maxR
	}
	s.rc = (s.rc + s.rt) / 2
	if s.rc > maxR {
		s.rc = maxR
	}
	q.rateChanged()
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
		q.increase()
	}
}

// Handle runs the QP's timers.
func (q *QP) Handle(kind uint32, arg uint64) {
	s := &q.dc
	switch kind {
	case evQPStart:
		q.start()
	case evQPCMRetry:
		q.retryREQ(uint32(arg))
	case evQPDecrease:
		s.decreasePending = false
		if s.cnpSinceDec {
			q.decrease(q.host.net.sim.Now())
		}
	case evQPIncTimer:
		if arg != s.incGen {
			return
		}
		maxR := q.maxRate()
		if s.rc >= maxR && s.rt >= maxR {
			s.incRunning = false // back at full rate: stop ticking until the next cut
			return
		}
		s.timeStage++
		q.increase()
		q.host.net.sim.After(q.cc().TimeReset, q, evQPIncTimer, s.incGen)
	}
}
