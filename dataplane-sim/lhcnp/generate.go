package lhcnp

import (
	"math"
	"net/netip"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// The severity scale (docs/longhaul.md). Congestion Level is 0-255 (§6.1);
// the node anchors it to its thresholds so that the level means the same
// on every port whatever its K_max:
//
//	QD = 0      -> 0
//	QD = K_min  -> 42.5   (one sixth of the scale)
//	QD = K_max  -> 170    (two thirds: the second-level threshold)
//	above K_max -> 170 + 255 * (QD - K_max) / K_max, capped at 255
//
// linear in between. With the §7 numbers (K_max 125 MB, K_min 62.5 MB) a
// queue of 130 MB gives 180 and one of 30 MB gives 20, the levels of §7
// steps 4 and 8. EMR and QGR triggers scale the same way around their own
// thresholds: level = 170 * metric / threshold, capped at 255.
const (
	levelAtKMin = 42.5
	levelAtKMax = 170.0
)

// levelQD maps a queue depth to a congestion level.
func levelQD(qd, kmin, kmax int64) uint8 {
	var l float64
	switch {
	case qd <= 0 || kmax <= 0:
		return 0
	case qd <= kmin:
		l = levelAtKMin * float64(qd) / float64(kmin)
	case qd <= kmax:
		l = levelAtKMin + (levelAtKMax-levelAtKMin)*float64(qd-kmin)/float64(kmax-kmin)
	default:
		l = levelOverKMax(float64(qd-kmax), float64(kmax))
	}
	return clampLevel(l)
}

// levelOverKMax is the level, before rounding and capping, of a queue
// over bytes (of any unit) above a K_max of kmax.
func levelOverKMax(over, kmax float64) float64 {
	return levelAtKMax + 255*over/kmax
}

// LevelAtKMaxFactor is the congestion level the node gives a queue of f
// times K_max, f >= 1: 170 at K_max, 255 from 4/3 K_max on. With it a
// PauseLevel says "Pause from f times K_max".
func LevelAtKMaxFactor(f float64) uint8 {
	return clampLevel(levelOverKMax(f-1, 1))
}

// levelRatio maps a metric against its trigger threshold.
func levelRatio(v, threshold float64) uint8 {
	if threshold <= 0 || v <= 0 {
		return 0
	}
	return clampLevel(levelAtKMax * v / threshold)
}

func clampLevel(l float64) uint8 {
	l = math.Round(l)
	switch {
	case l <= 0:
		return 0
	case l >= 255:
		return 255
	}
	return uint8(l)
}

// metric returns the metric type and value of t at the queue (§10.4 units:
// QD in kilobytes of 1000 bytes, QGR in kilobytes per millisecond, EMR in
// percent, RTT in microseconds), capped at 24 bits.
func metric(ps *portState, q *queueState, t wire.MetricType, now engine.Time) (wire.MetricType, uint32) {
	var v int64
	switch t {
	case wire.MetricQueueDepth:
		v = q.qd / 1000
	case wire.MetricQueueGrowth:
		v = max(0, q.qgrAt(now)) / 1_000_000
	case wire.MetricECNMarkingRate:
		v = int64(math.Round(q.emrAt(now)))
	case wire.MetricRTT:
		v = int64(ps.rtt / engine.Microsecond)
	default:
		return t, 0
	}
	return t, uint32(min(max(v, 0), wire.MaxMetricValue))
}

// severity returns the congestion level and the metric of a trigger.
func (n *Node) severity(ps *portState, q *queueState, t Trigger) (uint8, wire.MetricType, uint32) {
	// The EMR and QGR of the moment (as evaluate reads them): a Resume or
	// an externally fired notification may come after an idle spell.
	now := n.sim.Now()
	var level uint8
	mt := wire.MetricQueueDepth
	switch t {
	case TriggerQD, TriggerResume:
		level = levelQD(q.qd, q.kmin, q.kmax)
	case TriggerQGR:
		level = levelRatio(float64(q.qgrAt(now)), float64(q.cfg.VGrowthBytesPerSec))
		mt = wire.MetricQueueGrowth
	case TriggerEMR:
		level = levelRatio(q.emrAt(now), q.cfg.VECNPercent)
		mt = wire.MetricECNMarkingRate
	}
	if !n.cfg.MetricDisclosure {
		// §9 Information Disclosure: both MUST be zero.
		return level, 0, 0
	}
	if n.cfg.MetricType != wire.MetricUnspecified || n.cfg.NoMetric {
		mt = n.cfg.MetricType
	}
	mt, mv := metric(ps, q, mt, now)
	return level, mt, mv
}

// policy chooses the action of a non-escalated notification (§5.5.1):
// Pause when the queue's own level (levelQD) is at or above PauseLevel,
// the default action below. Callers pass the queue-depth level, not the
// level of an EMR or QGR trigger: Pause needs severe congestion by the
// queue itself (or an escalation, §5.7).
func policy(a *ActionPolicy, qdLevel int) (wire.Action, uint16) {
	act := a.DefaultAction
	if qdLevel >= a.PauseLevel {
		act = wire.ActionPause
	}
	return act, parameter(a, act)
}

// escalationAction returns the stricter action of an escalation (§5.7):
// the configured one; a Rate Reduce escalation doubles the percentage.
func escalationAction(a *ActionPolicy, act wire.Action) (wire.Action, uint16) {
	if act == wire.ActionRateReduce {
		return act, min(100, 2*a.RateReducePercent)
	}
	return act, parameter(a, act)
}

func parameter(a *ActionPolicy, act wire.Action) uint16 {
	switch act {
	case wire.ActionRateReduce:
		return a.RateReducePercent
	case wire.ActionPause:
		return uint16(a.PauseDuration / engine.Microsecond)
	case wire.ActionResume:
		return a.ResumePercent
	}
	return 0
}

// roceUDPSrcPort is the UDP source port of a RoCEv2-format notification,
// derived from the QP as RoCEv2 stacks derive their entropy port.
func roceUDPSrcPort(qp uint32) uint16 { return 0xC000 | uint16(qp&0x3FFF) }

// chooseFormat picks the format for a source (§4: IPv4 sources need the
// RoCEv2 format; §10.5: RoCEv2 only to configured receivers).
func (n *Node) chooseFormat(src netip.Addr) Format {
	if n.cfg.FormatRoCEv2 {
		for _, p := range n.cfg.RoCEv2Receivers {
			if p.Contains(src) {
				return FormatRoCEv2
			}
		}
	}
	if n.cfg.FormatICMPv6 && src.Is6() && !src.Is4In6() {
		return FormatICMPv6
	}
	return FormatNone
}

// sourceAddr returns the IP source of notifications to dst.
func (n *Node) sourceAddr(dst netip.Addr) netip.Addr {
	if a := n.cfg.SourceAddress; a.IsValid() && a.Is4() == dst.Is4() {
		return a
	}
	if a := n.sw.Addr(); a.IsValid() && a.Is4() == dst.Is4() {
		return a
	}
	return netip.Addr{}
}

// send encodes m for flow e and unicasts it to the flow's source (§5.5
// steps 2-5). It reports whether the packet left.
func (n *Node) send(ps *portState, q *queueState, e *flowEntry, m *wire.LongHaul, t Trigger, escalated bool, now engine.Time) bool {
	dst := e.key.Src
	if e.srcNode < 0 {
		if id, ok := n.nodeOf(dst); ok {
			e.srcNode = id
		}
	}
	src := n.sourceAddr(dst)
	if e.srcNode < 0 || !src.IsValid() {
		n.counters.NoAddress++
		return false
	}
	f := FormatExternal
	if nf := n.opts.notifier; nf != nil {
		if !nf.Notify(&Notification{Flow: e.key, SrcNode: e.srcNode, SrcAddr: src, Port: ps.name, Queue: q.prio,
			QueueBytes: q.qd, Trigger: t, Escalated: escalated, Action: m.Action, Parameter: m.Parameter,
			CongLevel: m.CongLevel}) {
			return false
		}
	} else if f = n.sendLongHaul(e, src, dst, m, now); f == FormatNone {
		return false
	}
	n.account(ps, q, e, m, f, t, escalated, now)
	return true
}

// sendLongHaul encodes and sends the Long-haul CNP m to the source of e
// and returns its format, FormatNone when nothing left.
func (n *Node) sendLongHaul(e *flowEntry, src, dst netip.Addr, m *wire.LongHaul, now engine.Time) Format {
	f := n.chooseFormat(dst)
	if f == FormatNone {
		n.counters.NoFormat++
		return FormatNone
	}
	a := wire.Addressing{SrcIP: src, DstIP: dst, TOS: n.cfg.CNPDSCP << 2}
	m.Objects = n.objects(now)
	frame, hdr, ok := n.encode(f, &a, m)
	if !ok && len(m.Objects) > 0 {
		n.counters.ObjectsOmitted++
		m.Objects = nil
		frame, hdr, ok = n.encode(f, &a, m)
	}
	if !ok {
		n.counters.EncodeErrors++
		return FormatNone
	}
	p := n.sw.NewPacket()
	if err := n.sw.SetFrame(p, frame); err != nil {
		n.sw.FreePacket(p) // encode keeps frames within netsim.FrameCap
		n.counters.EncodeErrors++
		return FormatNone
	}
	p.SizeBytes = netsim.LinkBytes(len(frame))
	p.Src, p.Dst = n.sw.ID(), e.srcNode
	p.Flow = netsim.NoFlow
	p.Prio = n.cfg.CNPPrio
	p.ECN = netsim.ECNNotECT
	p.Kind = netsim.KindOther
	if f == FormatRoCEv2 {
		p.Kind = netsim.KindRoCE
	}
	p.HdrLen = uint8(copy(p.Hdr[:], hdr))
	if !n.sw.Send(p) {
		n.counters.NoRoute++
		return FormatNone
	}
	return f
}

// account counts a notification that left and updates the flow's and the
// queue's notification state (§5.5 step 5, the Resume bookkeeping).
func (n *Node) account(ps *portState, q *queueState, e *flowEntry, m *wire.LongHaul, f Format, t Trigger, escalated bool, now engine.Time) {
	ps.counters.NotificationsSent++
	// The per-action counters are the Long-haul CNPs' (cnp-*-sent); a
	// Notifier's notification (Fast CNP, FCN) counts in SentExternal
	// alone, whatever action the node chose for it.
	if f != FormatExternal {
		switch m.Action {
		case wire.ActionNotify:
			q.counters.SentNotify++
		case wire.ActionPause:
			q.counters.SentPause++
		case wire.ActionRateReduce:
			q.counters.SentRateReduce++
		case wire.ActionResume:
			q.counters.SentResume++
		}
	}
	switch f {
	case FormatICMPv6:
		q.counters.SentICMPv6++
	case FormatRoCEv2:
		q.counters.SentRoCEv2++
	case FormatExternal:
		q.counters.SentExternal++
	}
	e.lastCNP, e.hasCNP = now, true
	e.notifications++
	e.lastAction, e.lastLevel = m.Action, m.CongLevel
	switch m.Action {
	case wire.ActionPause, wire.ActionRateReduce:
		rate := e.rateAt(now, q.cfg.MeasurementInterval)
		cutRate := rate
		if q.fillResume() && !e.rateValid && !q.cfg.Action.ResumeOnDrain {
			// Cut within the flow's first measurement interval (a node
			// next to the sources, on a burst): its rate is what
			// arrived since its first packet. Taken as 0, the flow
			// was judged back at its rate before the cut at once and
			// never resumed (fillResume), however deep the cuts that
			// followed (a web-search mix: 25 -> 8.6 Gb/s for 10 ms at
			// an uncongested WAN port).
			cutRate = e.partialRate(now, ps.rateBitsPerSec)
		}
		if !e.needResume {
			e.preCutRate = cutRate
			// Cut before a whole measurement interval of the flow
			// (a node next to the sources, on a burst): its rate
			// before the cut is not known (fillResume; only with
			// ResumeOnDrain).
			e.preCutUnknown = q.cfg.Action.ResumeOnDrain && !e.rateValid
		}
		e.lastReduction = cutRate
		if m.Action == wire.ActionRateReduce {
			e.lastReduction = cutRate * int64(m.Parameter) / 100
		}
		e.modelCut(cutRate, m.Action, m.Parameter)
		if q.cfg.PerFlowRTT && (e.srcRTT == 0 || e.rttFromRate) && e.lastReduction > 0 &&
			(!e.probing || now-e.probeAt > max(4*q.minInterval, 2*e.srcRTT)) {
			// No CM exchange seen: the round trip is how soon the
			// flow's rate answers this cut (answer). A cut sent while
			// one is awaited does not restart the clock (the first
			// one's answer is still on its way) unless the awaited one
			// is so old it is taken for lost.
			e.probing, e.probeAt, e.probeRate, e.probeCut = true, now, rate, 100*e.lastReduction/rate
		}
		e.needResume, e.resumed = true, false
		e.cutAt = now
		e.cutEpisode = q.episode + 1
		e.reducedEpisode = q.episode + 1
		if q.below {
			// The hold counts from the action: a notification sent with
			// QD below K_min (a QGR or EMR trigger) is not followed by a
			// Resume until QD stayed there for the whole hold after it.
			q.belowSince = max(q.belowSince, now)
			n.scheduleResume(ps, q)
		}
	case wire.ActionResume:
		e.modelResume(m.Parameter)
		if q.cfg.Action.RepeatResume && m.Parameter != 0 {
			// Keep the flow: the next hold decides from its rate. After
			// an unconditional Resume the source is back at its original
			// rate: nothing is left to release.
			e.resumed, e.resumeRate = true, e.rateAt(now, q.cfg.MeasurementInterval)
		} else {
			e.resumed = false
			e.needResume = false
		}
	}
	q.last = LastCNP{Time: now, Valid: true, Format: f, Action: m.Action, Parameter: m.Parameter,
		CongLevel: m.CongLevel, MetricType: m.MetricType, MetricValue: m.MetricValue,
		Trigger: t, Escalated: escalated, Flow: e.key}
	n.emit(Event{Kind: EventCNPSent, Time: now, Port: ps.name, Queue: q.prio, Flow: e.key, Format: f,
		Action: m.Action, Parameter: m.Parameter, CongLevel: m.CongLevel, MetricType: m.MetricType,
		MetricValue: m.MetricValue, Trigger: t, Escalated: escalated})
}

// modelCut applies a Rate Reduce of pct percent (or a Pause) to the node's
// model of the flow's rate at its source (srcRate, srcCut): the reaction
// point cuts its current rate, so a cut takes its percentage of what the
// earlier cuts of the episode left, and a Pause takes all of it. The first
// cut of an episode (no Resume awaited), or one after a Pause, starts from
// cutRate, the flow's arrival rate then. Called before needResume is set
// for this cut.
func (e *flowEntry) modelCut(cutRate int64, a wire.Action, pct uint16) {
	if !e.needResume || e.srcRate <= 0 {
		e.srcRate = cutRate
	}
	e.srcCut = e.srcRate
	if a == wire.ActionRateReduce {
		e.srcCut = e.srcRate * int64(pct) / 100
	}
	e.srcRate -= e.srcCut
}

// modelResume applies a Resume of pct percent to the model: pct of what
// the last cut took at the source comes back (the reaction point's Resume
// raises the rate by a percentage of its last cut), and pct 0 (§5.5.1's
// unconditional Resume) restores the rate before the node's first cut.
// The reaction point raises a rate at most to its rate before its first
// cut (its normal rate); the node's view of that is preCutRate, so a
// Resume takes the model at most there (the source's line rate is not
// known to the node). Without the ceiling, Resumes that came after a
// flow was back at its rate each added to the model: websearch-50's
// web/426 stood at 64 Gb/s on a 25 Gb/s sender (docs/longhaul.md, "The
// source-rate model's ceiling"). A Resume does not lower a model that a
// later cut restarted above it.
func (e *flowEntry) modelResume(pct uint16) {
	if pct == 0 {
		e.srcRate = e.preCutRate
	} else {
		e.srcRate = max(e.srcRate, min(e.srcRate+e.srcCut*int64(pct)/100, e.preCutRate))
	}
}

// objects returns the extension objects the configuration asks for, in
// the node's own buffers (no allocation).
func (n *Node) objects(now engine.Time) []wire.ExtObject {
	k := 0
	if n.cfg.DeviceID != "" {
		n.objs[k] = wire.ExtObject{CType: wire.CTypeDeviceID, Data: n.devID}
		k++
	}
	if n.cfg.TimestampObject {
		v := wire.NTPTime(time.Unix(0, int64(now)))
		for i := range 8 {
			n.tsBuf[i] = byte(v >> (56 - 8*i))
		}
		n.objs[k] = wire.ExtObject{CType: wire.CTypeTimestamp, Data: n.tsBuf[:]}
		k++
	}
	return n.objs[:k]
}

// encode builds the whole frame with wire.Encoder in the node's buffer
// (netsim.FrameCap bytes) and returns it and its transport part (for
// RoCEv2 the BTH through the ICRC, for ICMPv6 the ICMPv6 message), whose
// first netsim.HdrCap bytes go in the packet's Hdr. ok is false when the
// encoder fails, for a frame that does not fit in particular.
func (n *Node) encode(f Format, a *wire.Addressing, m *wire.LongHaul) (frame, hdr []byte, ok bool) {
	enc := wire.Encoder{CodePoints: n.cfg.CodePoints}
	ipLen := 40
	if a.SrcIP.Is4() {
		ipLen = 20
	}
	var err error
	var start, length, size int
	if f == FormatRoCEv2 {
		a.SrcPort = roceUDPSrcPort(m.SourceQP)
		c := wire.CNP{DestQP: m.SourceQP, PKey: n.cfg.PartitionKey}
		size, err = enc.LongHaulRoCE(n.buf[:], a, &c, m)
		start, length = wire.EthernetLen+ipLen+wire.UDPLen, wire.BTHLen+m.Len()+wire.ICRCLen
	} else {
		size, err = enc.LongHaulICMPv6(n.buf[:], a, m)
		start, length = wire.EthernetLen+ipLen, 4+m.Len()
	}
	if err != nil {
		return nil, nil, false
	}
	return n.buf[:size], n.buf[start : start+length], true
}

// emit delivers an event to the callback, if any.
func (n *Node) emit(ev Event) {
	if n.opts.onEvent != nil {
		ev.Node = n.sw.Name()
		n.opts.onEvent(ev)
	}
}
