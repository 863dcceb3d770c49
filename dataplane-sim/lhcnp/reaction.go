package lhcnp

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// ReactionConfig configures the source side (§5.6).
type ReactionConfig struct {
	// Legacy makes the RNIC one that knows only the standard CNP (§8): the
	// RoCEv2 format is processed as a standard CNP (DCQCN), the ICMPv6
	// format is an unknown informational type and silently discarded.
	// LegacyStrictLength, with Legacy, rejects CNPs longer than the
	// standard (the strict RNICs of §8).
	Legacy             bool
	LegacyStrictLength bool
	// TrustedSources are the known congestion-aware nodes (§5.6 step 1,
	// §9 Packet Forgery); a notification from elsewhere changes nothing.
	TrustedSources []netip.Prefix
	CodePoints     wire.CodePoints
	// RTTEst is the source's RTT estimate; RecoveryInterval (0 = 2 x
	// RTTEst) is the per-QP timer after which, without a new notification,
	// the rate rises every RecoveryStepInterval (0 = RTTEst / 10) until it
	// is back: by RecoveryStepBitsPerSec when set (an absolute step, the unit of
	// a scenario's recovery_step), else by RecoveryStepPercent of the
	// QP's normal rate.
	RTTEst                 engine.Time
	RecoveryInterval       engine.Time
	RecoveryStepInterval   engine.Time
	RecoveryStepPercent    int
	RecoveryStepBitsPerSec int64
	// MaxResumeIncreasePercent caps what one Resume with a percentage may
	// restore, as a share of the normal rate (§9 Resume Action Abuse).
	MaxResumeIncreasePercent int
	// CapUnconditionalResume applies that cap to Resume with Parameter 0
	// too. Off by default: §5.5.1 defines Parameter 0 as "unconditional
	// resume to the original rate", which a cap would make conditional.
	// On is a deviation that trades the draft's reading for §9's
	// protection against a forged Resume from a trusted address
	// (docs/conformance.md, Deviations).
	CapUnconditionalResume bool
	// MaxPause caps one Pause.
	MaxPause engine.Time
	// HoldRate keeps a rate set by Rate Reduce from being raised by DCQCN's
	// own increase timers until Resume or the recovery timer restores it:
	// the reaction point sets the reduced rate as the QP's ceiling
	// (netsim QP.SetCeiling) and raises or clears it as the rate recovers.
	HoldRate bool
	// HoldCheckInterval is ignored. The hold used to be re-applied every
	// HoldCheckInterval; netsim's ceiling holds it at every increase.
	HoldCheckInterval engine.Time
	// CutFromEpisodeRate (a deviation, the sender's side of the node's
	// one_cut_per_episode, docs/conformance.md) takes a Rate Reduce's
	// percentage, and the original rate an unconditional Resume restores,
	// from the QP's rate before the standard CNPs of the same congestion
	// episode cut it (CNPs less than a recovery interval apart, since the
	// last Long-haul CNP), not from the rate they left: the node sized its
	// cut from the arrival rates it measured, which those CNPs' cuts had
	// not reached yet, so the node's cut replaces theirs instead of
	// compounding with them (a generated far-end's flows, cut to 1 % by
	// the receivers' CNPs and then by 85 %, were held there and resumed to
	// that 1 %). Off by default: §5.6 applies the percentage to the
	// current rate.
	CutFromEpisodeRate bool
}

// DefaultReactionConfig returns the draft's recommendations: recovery after
// 2 x RTT_est, a cap per Resume, rate hold.
func DefaultReactionConfig() ReactionConfig {
	return ReactionConfig{
		CodePoints:               wire.DefaultCodePoints(),
		RTTEst:                   DefaultRTTEst,
		RecoveryStepPercent:      5,
		MaxResumeIncreasePercent: 50,
		MaxPause:                 65535 * engine.Microsecond,
		HoldRate:                 true,
		HoldCheckInterval:        100 * engine.Microsecond,
	}
}

// Validate checks the configuration.
func (c *ReactionConfig) Validate() error {
	switch {
	case c.RTTEst <= 0:
		return cfgErr("reaction.rtt-est", "%v, must be positive", c.RTTEst)
	case c.RecoveryInterval < 0:
		return cfgErr("reaction.recovery-interval", "negative")
	case c.RecoveryStepInterval < 0:
		return cfgErr("reaction.recovery-step-interval", "negative")
	case c.RecoveryStepBitsPerSec < 0:
		return cfgErr("reaction.recovery-step-bps", "negative")
	case c.RecoveryStepBitsPerSec == 0 && (c.RecoveryStepPercent < 1 || c.RecoveryStepPercent > 100):
		return cfgErr("reaction.recovery-step-percent", "%d outside 1..100", c.RecoveryStepPercent)
	case c.MaxResumeIncreasePercent < 1 || c.MaxResumeIncreasePercent > 100:
		return cfgErr("reaction.max-resume-increase-percent", "%d outside 1..100", c.MaxResumeIncreasePercent)
	case c.MaxPause <= 0:
		return cfgErr("reaction.max-pause", "%v, must be positive", c.MaxPause)
	}
	for i, p := range c.TrustedSources {
		if !p.IsValid() {
			return cfgErr(fmt.Sprintf("reaction.trusted-sources[%d]", i), "invalid prefix")
		}
	}
	return nil
}

// ReactionCounters count what the reaction point did.
type ReactionCounters struct {
	// Received: Long-haul CNPs seen (either format; legacy: every
	// extended CNP and unknown ICMPv6 message).
	Received int64
	// Accepted and applied, by action.
	AcceptedNotify, AcceptedPause, AcceptedRateReduce, AcceptedResume int64
	// Dropped: untrusted sender (§9 forgery), QP not active, malformed or
	// failing a check (ICRC, checksum), inconsistent field values (§9),
	// unsupported ICMPv6 code.
	Untrusted, InactiveQP, Malformed, Inconsistent, Unsupported int64
	// Legacy mode: processed as a standard CNP, ICMPv6 silently
	// discarded, rejected by strict length validation.
	LegacyAsCNP, LegacyICMPv6Dropped, LegacyRejected int64
	// ResumeCapped: a Resume limited by MaxResumeIncreasePercent.
	ResumeCapped int64
	// Recoveries: recovery timers that started additive increase;
	// RecoverySteps: increases applied.
	Recoveries, RecoverySteps int64
}

// QPReaction is the reaction state of one QP.
type QPReaction struct {
	// NormalBitsPerSec is the rate before the first cut of the current episode,
	// PreCutBitsPerSec the rate before the last cut, LastReductionBitsPerSec what the
	// last cut took away; Reduced says an episode is open.
	NormalBitsPerSec, PreCutBitsPerSec, LastReductionBitsPerSec int64
	Reduced                                                     bool
	LastCNP                                                     engine.Time
	Recovering                                                  bool
	// CeilingBitsPerSec is the rate the hold keeps DCQCN below, the QP's netsim
	// ceiling (0 = none).
	CeilingBitsPerSec int64
}

type qpState struct {
	q      *netsim.QP
	r      QPReaction
	recGen uint64
}

// ReactionPoint is the Long-haul CNP reaction point of one or more RNICs:
// a netsim.ControlHandler. Install it with Attach. Its timers go on the
// Sim of the QP's host (Host.Sim), so on a network cut into partitions a
// reaction point per host runs in that host's partition; one shared by
// hosts of several partitions would share its tables across them.
type ReactionPoint struct {
	net      *netsim.Network
	cfg      ReactionConfig
	dec      wire.Decoder
	frame    wire.Frame
	qps      map[*netsim.QP]int
	states   []*qpState
	free     []int // slots of states whose QP was retired (OnRetire)
	counters ReactionCounters
	// cnpEpisodes are the QPs' standard-CNP episodes (CutFromEpisodeRate).
	cnpEpisodes map[*netsim.QP]cnpEpisode
}

// cnpEpisode is a run of standard CNPs to one QP, each less than a
// recovery interval after the previous one: the QP's rate before the first
// and the time of the last.
type cnpEpisode struct {
	rateBitsPerSec int64
	last           engine.Time
}

// NewReactionPoint returns a reaction point for hosts of net.
func NewReactionPoint(net *netsim.Network, cfg ReactionConfig) (*ReactionPoint, error) {
	if net == nil {
		return nil, errors.New("lhcnp: reaction point needs a network")
	}
	rp := &ReactionPoint{net: net, qps: map[*netsim.QP]int{}, cnpEpisodes: map[*netsim.QP]cnpEpisode{}}
	if err := rp.ApplyConfig(cfg); err != nil {
		return nil, err
	}
	net.AddRetireObserver(rp)
	return rp, nil
}

// ApplyConfig validates and installs cfg.
func (rp *ReactionPoint) ApplyConfig(cfg ReactionConfig) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("lhcnp: %w", err)
	}
	cfg.TrustedSources = append([]netip.Prefix(nil), cfg.TrustedSources...)
	rp.cfg = cfg
	rp.dec = wire.Decoder{CodePoints: cfg.CodePoints, Legacy: cfg.Legacy, LegacyStrictLength: cfg.LegacyStrictLength,
		AllowZeroUDPChecksumIPv6: true}
	return nil
}

// Config returns the configuration in force.
func (rp *ReactionPoint) Config() ReactionConfig {
	c := rp.cfg
	c.TrustedSources = append([]netip.Prefix(nil), c.TrustedSources...)
	return c
}

// Attach installs rp as h's control handler.
func (rp *ReactionPoint) Attach(h *netsim.Host) { h.SetControlHandler(rp) }

// Counters returns the counters.
func (rp *ReactionPoint) Counters() ReactionCounters { return rp.counters }

// TrackedQPs returns the number of QPs the reaction point keeps a state
// for (those that got a Long-haul CNP and are not retired).
func (rp *ReactionPoint) TrackedQPs() int { return len(rp.qps) }

// QP returns the reaction state of q.
func (rp *ReactionPoint) QP(q *netsim.QP) (QPReaction, bool) {
	i, ok := rp.qps[q]
	if !ok {
		return QPReaction{}, false
	}
	return rp.states[i].r, true
}

func (rp *ReactionPoint) recoveryInterval() engine.Time {
	if rp.cfg.RecoveryInterval > 0 {
		return rp.cfg.RecoveryInterval
	}
	return 2 * rp.cfg.RTTEst
}

func (rp *ReactionPoint) stepInterval() engine.Time {
	if rp.cfg.RecoveryStepInterval > 0 {
		return rp.cfg.RecoveryStepInterval
	}
	return max(rp.cfg.RTTEst/10, engine.Microsecond)
}

// HandleControl implements netsim.ControlHandler.
func (rp *ReactionPoint) HandleControl(h *netsim.Host, p *netsim.Packet) bool {
	if p.Kind == netsim.KindRoCE && (p.HdrLen < wire.BTHLen || p.Hdr[4]&wire.BTHE == 0) {
		if rp.cfg.CutFromEpisodeRate && p.HdrLen >= wire.BTHLen {
			rp.noteCNP(h.QP(p.DestQP()))
		}
		return false // a standard CNP: DCQCN
	}
	if p.Kind != netsim.KindRoCE && p.Kind != netsim.KindOther {
		return false
	}
	frame := p.Frame()
	if frame == nil {
		// Nothing to decode. An extended CNP without its frame comes from
		// a sender that did not attach one: a legacy RNIC treats it as a
		// CNP, a Long-haul one cannot read it.
		if p.Kind != netsim.KindRoCE {
			return false
		}
		rp.counters.Received++
		if rp.cfg.Legacy {
			rp.counters.LegacyAsCNP++
			return false
		}
		rp.counters.Malformed++
		return true
	}
	err := rp.dec.Decode(frame, &rp.frame)
	f := &rp.frame
	if rp.cfg.Legacy {
		switch {
		case f.Kind == wire.KindCNP && err != nil:
			rp.counters.Received++
			rp.counters.LegacyRejected++
			return true
		case f.Kind == wire.KindCNP:
			// §8: processed as a standard CNP by the default (DCQCN) path.
			rp.counters.Received++
			rp.counters.LegacyAsCNP++
			return false
		case f.Kind == wire.KindOther && f.IPVersion == 6 && f.ICMPv6.Type == rp.dec.CodePoints.OrDefaults().LongHaulICMPv6Type:
			// §8 and RFC 4443: an unknown informational type is silently
			// discarded.
			rp.counters.Received++
			rp.counters.LegacyICMPv6Dropped++
			return true
		}
		return false
	}
	if f.Kind != wire.KindLongHaulICMPv6 && f.Kind != wire.KindLongHaulRoCE {
		if err != nil && p.Kind == netsim.KindRoCE {
			rp.counters.Received++
			rp.counters.Malformed++
			return true
		}
		return false
	}
	rp.counters.Received++
	if err != nil {
		rp.counters.Malformed++
		return true
	}
	fsrc, _ := f.IPAddrs()
	if !rp.trusted(fsrc) {
		rp.counters.Untrusted++
		return true
	}
	m := &f.LongHaul
	if f.Kind == wire.KindLongHaulICMPv6 && m.ICMPCode != wire.LongHaulCodeFlow {
		rp.counters.Unsupported++
		return true
	}
	if f.Kind == wire.KindLongHaulRoCE && f.BTH.DestQP != m.SourceQP {
		rp.counters.Inconsistent++
		return true
	}
	q := h.QP(m.SourceQP)
	if !q.Active() { // no such QP, not connected yet, or done (§5.6 step 2)
		rp.counters.InactiveQP++
		return true
	}
	if !consistent(m) {
		rp.counters.Inconsistent++
		return true
	}
	rp.apply(q, m)
	return true
}

// consistent checks the combination of values (§9 Reserved Bit
// Manipulation: SHOULD validate before applying). The reserved action
// bits are ignored, as §6.1 requires of receivers.
func consistent(m *wire.LongHaul) bool {
	switch m.Action {
	case wire.ActionNotify:
		if m.Parameter != 0 {
			return false
		}
	case wire.ActionRateReduce:
		if m.Parameter == 0 || m.Parameter > 100 || m.CongLevel == 0 {
			return false
		}
	case wire.ActionPause:
		if m.Parameter == 0 || m.CongLevel == 0 {
			return false
		}
	case wire.ActionResume:
		if m.Parameter > 100 {
			return false
		}
	}
	if m.MetricType == wire.MetricECNMarkingRate && m.MetricValue > 100 {
		return false
	}
	return true
}

func (rp *ReactionPoint) trusted(a netip.Addr) bool {
	for _, p := range rp.cfg.TrustedSources {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func (rp *ReactionPoint) state(q *netsim.QP) *qpState {
	if i, ok := rp.qps[q]; ok {
		return rp.states[i]
	}
	if k := len(rp.free); k > 0 {
		// A retired QP's slot: its generation moves on, so the timers it
		// left behind find nothing to do.
		i := rp.free[k-1]
		rp.free = rp.free[:k-1]
		s := rp.states[i]
		*s = qpState{q: q, recGen: s.recGen + 1}
		rp.qps[q] = i
		return s
	}
	s := &qpState{q: q}
	rp.qps[q] = len(rp.states)
	rp.states = append(rp.states, s)
	return s
}

// noteCNP records a standard CNP to q before DCQCN applies it
// (CutFromEpisodeRate): the first of an episode keeps q's rate.
func (rp *ReactionPoint) noteCNP(q *netsim.QP) {
	if !q.Active() {
		return
	}
	now := q.Host().Sim().Now()
	ep, ok := rp.cnpEpisodes[q]
	if !ok || now-ep.last > rp.recoveryInterval() {
		ep.rateBitsPerSec = q.RateBitsPerSec()
	}
	ep.last = now
	rp.cnpEpisodes[q] = ep
}

// episodeRate is the rate a Rate Reduce or an unconditional Resume counts
// from: q's current rate, or with CutFromEpisodeRate its rate before the
// standard CNPs of the episode under way when that is higher.
func (rp *ReactionPoint) episodeRate(q *netsim.QP, now engine.Time) int64 {
	cur := q.RateBitsPerSec()
	if !rp.cfg.CutFromEpisodeRate {
		return cur
	}
	if ep, ok := rp.cnpEpisodes[q]; ok && now-ep.last <= rp.recoveryInterval() {
		return max(cur, ep.rateBitsPerSec)
	}
	return cur
}

// OnRetire implements netsim.RetireObserver: the reaction state of a
// retired flow's QP is dropped and its slot reused, so the reaction point
// keeps no reference to the QP and its state stays bounded by the flows
// running.
func (rp *ReactionPoint) OnRetire(f *netsim.Flow) {
	delete(rp.cnpEpisodes, f.Sender)
	i, ok := rp.qps[f.Sender]
	if !ok {
		return
	}
	delete(rp.qps, f.Sender)
	s := rp.states[i]
	*s = qpState{recGen: s.recGen + 1}
	rp.free = append(rp.free, i)
}

// apply runs the action on the QP (§5.6 step 3).
func (rp *ReactionPoint) apply(q *netsim.QP, m *wire.LongHaul) {
	now := q.Host().Sim().Now()
	s := rp.state(q)
	r := &s.r
	idx := uint64(rp.qps[q])
	switch m.Action {
	case wire.ActionNotify:
		rp.counters.AcceptedNotify++
		q.ApplyCNP() // §5.5.1: the default congestion response
		rp.armRecovery(s, idx, now)
	case wire.ActionPause:
		rp.counters.AcceptedPause++
		d := min(engine.Time(m.Parameter)*engine.Microsecond, rp.cfg.MaxPause)
		q.PauseUntil(now + d)
		rp.armRecovery(s, idx, now)
	case wire.ActionRateReduce:
		rp.counters.AcceptedRateReduce++
		cur := rp.episodeRate(q, now)
		// The standard CNPs after this cut open an episode of their own.
		delete(rp.cnpEpisodes, q)
		if !r.Reduced {
			r.NormalBitsPerSec = cur
			r.Reduced = true
		}
		next := cur * int64(100-m.Parameter) / 100
		if c := r.CeilingBitsPerSec; c > 0 && next > c {
			// CutFromEpisodeRate: above the hold of the last cut, which
			// the standard CNPs since then undercut.
			rp.setCeiling(s, next)
		}
		q.SetRate(next, next)
		next = q.RateBitsPerSec() // clamped to the minimum rate
		r.PreCutBitsPerSec, r.LastReductionBitsPerSec = cur, cur-next
		r.Recovering = false
		rp.setCeiling(s, next)
		rp.armRecovery(s, idx, now)
	case wire.ActionResume:
		rp.counters.AcceptedResume++
		r.LastCNP = now
		s.recGen++ // a Resume ends the wait: the timer restarts from here
		if q.PausedUntil() > now {
			q.PauseUntil(now)
		}
		if !r.Reduced {
			return
		}
		cur := q.RateBitsPerSec()
		inc := r.LastReductionBitsPerSec * int64(m.Parameter) / 100
		capped := true
		if m.Parameter == 0 {
			inc = r.NormalBitsPerSec - cur // §5.5.1: unconditional resume to the original rate
			capped = rp.cfg.CapUnconditionalResume
		}
		if limit := r.NormalBitsPerSec * int64(rp.cfg.MaxResumeIncreasePercent) / 100; capped && inc > limit {
			inc = limit
			rp.counters.ResumeCapped++
		}
		rp.raise(s, min(r.NormalBitsPerSec, cur+inc))
		if r.Reduced {
			// The recovery timer restarts from the Resume: the resumed
			// rate is held (its ceiling) for another recovery interval
			// unless a new Resume comes. Starting additive recovery at
			// once was tried: on the comparison scenarios it makes the
			// QGR trigger cut again and costs 3-5 points of utilisation.
			rp.armRecovery(s, idx, now)
		}
	}
}

// raise sets a higher rate, closing the episode at the normal rate. The
// ceiling moves first: SetRate is clamped to it.
func (rp *ReactionPoint) raise(s *qpState, rate int64) {
	q, r := s.q, &s.r
	if rate >= r.NormalBitsPerSec {
		r.Reduced, r.Recovering = false, false
		rp.setCeiling(s, 0)
	} else {
		rp.setCeiling(s, rate)
	}
	q.SetRate(rate, max(rate, q.TargetRateBitsPerSec()))
}

// Reaction point timer kinds.
const (
	evRecover uint32 = iota
	evStep
)

// armRecovery (re)starts the per-QP recovery timer (§5.6).
func (rp *ReactionPoint) armRecovery(s *qpState, idx uint64, now engine.Time) {
	s.r.LastCNP = now
	s.r.Recovering = false
	s.recGen++
	s.q.Host().Sim().At(now+rp.recoveryInterval(), rp, evRecover, idx<<32|s.recGen&0xFFFFFFFF)
}

// setCeiling holds the QP at c (0 lifts the hold) when HoldRate is set;
// without it (HoldRate turned off by ApplyConfig) a hold in place is lifted.
func (rp *ReactionPoint) setCeiling(s *qpState, c int64) {
	if !rp.cfg.HoldRate {
		c = 0
	}
	if c == s.r.CeilingBitsPerSec {
		return
	}
	s.r.CeilingBitsPerSec = c
	if c > 0 {
		s.q.SetCeiling(c)
	} else {
		s.q.ClearCeiling()
	}
}

// Handle implements engine.Handler: recovery and additive steps.
func (rp *ReactionPoint) Handle(kind uint32, arg uint64) {
	idx, gen := int(arg>>32), arg&0xFFFFFFFF
	if idx >= len(rp.states) {
		return
	}
	s := rp.states[idx]
	r := &s.r
	switch kind {
	case evRecover, evStep:
		if s.q == nil || gen != s.recGen&0xFFFFFFFF || !r.Reduced {
			return
		}
		if kind == evRecover {
			r.Recovering = true
			rp.counters.Recoveries++
		}
		step := rp.cfg.RecoveryStepBitsPerSec
		if step == 0 {
			step = max(r.NormalBitsPerSec*int64(rp.cfg.RecoveryStepPercent)/100, 1)
		}
		rp.counters.RecoverySteps++
		rp.raise(s, min(r.NormalBitsPerSec, s.q.RateBitsPerSec()+step))
		if r.Reduced {
			s.q.Host().Sim().After(rp.stepInterval(), rp, evStep, arg)
		}
	}
}
