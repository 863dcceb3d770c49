package dataplane

import (
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/openconfig/ygot/ygot"
)

// StateTree translates a node snapshot and its Long-haul CNP configuration
// as configured (translated, defaults included) into the state containers
// of the YANG tree: state/x repeats cfg's value of every config/x, the
// effective-* leaves, monitors and counters come from the snapshot, what
// runs. The two differ while another mechanism is the node's mode (its
// detection configuration runs). wallNS converts simulated
// time to nanoseconds since the Unix epoch (the timeticks64 leaves).
// Interfaces are named with ports; ports without a name are left out.
func StateTree(st *lhcnp.State, cfg *lhcnp.Config, ports *Ports, wallNS func(engine.Time) uint64) *oc.Root {
	return stateTree(st, cfg, ports, wallNS, nil, oc.LhcnpTypes_NotificationFormat_UNSET)
}

// stateTree is StateTree that also writes, with external (when not nil),
// each queue's notifications the node handed to the mechanism that sends
// them (lhcnp.WithNotifier: Fast CNP, an FCN transit) into the queue's
// counter external chooses, in the same walk over the queues.
func stateTree(st *lhcnp.State, cfg *lhcnp.Config, ports *Ports, wallNS func(engine.Time) uint64,
	external queueCounter, externalFormat oc.E_LhcnpTypes_NotificationFormat) *oc.Root {
	root := &oc.Root{}
	l := root.GetOrCreateLhcnp()

	g := l.GetOrCreateGlobal().GetOrCreateState()
	g.Enabled = ygot.Bool(cfg.Enabled)
	g.LongHaulCnpIcmpv6 = ygot.Bool(cfg.FormatICMPv6)
	g.LongHaulCnpRocev2 = ygot.Bool(cfg.FormatRoCEv2)
	g.FastCnpEnabled = ygot.Bool(false)
	g.FcnRole = oc.LhcnpTypes_FcnRole_DISABLED
	g.RateAdviceEnabled = ygot.Bool(false)
	g.MetricDisclosure = ygot.Bool(cfg.MetricDisclosure)
	g.MetricType = metricFromWire(cfg.MetricType)
	if cfg.DeviceID != "" {
		g.DeviceIdentifier = ygot.String(cfg.DeviceID)
	}
	g.TimestampObject = ygot.Bool(cfg.TimestampObject)
	if cfg.SourceAddress.IsValid() {
		g.SourceAddress = ygot.String(cfg.SourceAddress.String())
	}
	g.CnpDscp = ygot.Uint8(cfg.CNPDSCP)
	g.Rocev2PartitionKey = ygot.Uint16(cfg.PartitionKey)

	cp := l.GetOrCreateGlobal().GetOrCreateCodePoints().GetOrCreateState()
	cp.Icmpv6Type = ygot.Uint8(cfg.CodePoints.LongHaulICMPv6Type)
	cp.ExtensionClassNum = ygot.Uint8(cfg.CodePoints.LongHaulClassNum)
	cp.FastCnpOptionType = ygot.Uint8(cfg.CodePoints.FastCNPOptType)
	cp.FastCnpIoamOptionType = ygot.Uint8(cfg.CodePoints.FastCNPIOAMOptType)
	cp.FcnUdpPort = ygot.Uint16(cfg.CodePoints.FCNPort)
	cp.RateAdviceOpcode = ygot.Uint8(uint8(cfg.CodePoints.RateAdviceOpcode))
	for _, p := range cfg.RoCEv2Receivers {
		r := l.GetOrCreateGlobal().GetOrCreateRocev2Receivers().GetOrCreateReceiver(p.String())
		r.GetOrCreateState().Prefix = ygot.String(p.String())
	}

	var sent, suppressed uint64
	for i := range st.Ports {
		ps := &st.Ports[i]
		// The node's totals count every port, one without an interface
		// name in the model too (as a mechanism's own notifications,
		// addNotificationsSent, count in them).
		sent += uint64(ps.Counters.NotificationsSent)
		for qi := range ps.Queues {
			c := &ps.Queues[qi].Counters
			suppressed += uint64(c.SuppressedFlowInterval + c.SuppressedPortLimit + c.SuppressedDeferral)
		}
		name, ok := ports.Interface(ps.Name)
		if !ok {
			continue
		}
		ic := interfaceFor(cfg, ps.Name)
		it := l.GetOrCreateInterfaces().GetOrCreateInterface(name)
		is := it.GetOrCreateState()
		is.Name = ygot.String(name)
		is.Enabled = ygot.Bool(ic.Enabled)
		if ic.PortRateBitsPerSec > 0 {
			is.PortRate = ygot.Uint64(uint64(ic.PortRateBitsPerSec))
		}
		is.RttSource = rttSourceFromNode(ic.RTTSource)
		is.RttEst = ygot.Uint32(micros(ic.RTTEst))
		is.CnpRateLimit = ygot.Uint32(uint32(ic.CNPRatePerSec))
		is.CnpBurst = ygot.Uint32(uint32(ic.CNPBurst))
		is.EffectivePortRate = ygot.Uint64(uint64(ps.PortRateBitsPerSec))
		is.EffectiveRttEst = ygot.Uint32(micros(ps.RTTEst))
		if ps.RTTUpdates > 0 {
			is.RttEstUpdateTime = ygot.Uint64(wallNS(ps.RTTUpdatedAt))
		}
		if ps.BufferBytes > 0 {
			is.BufferSize = ygot.Uint64(uint64(ps.BufferBytes))
		}
		ctr := is.GetOrCreateCounters()
		ctr.NotificationsSent = ygot.Uint64(uint64(ps.Counters.NotificationsSent))
		ctr.SuppressedPortLimit = ygot.Uint64(uint64(ps.Counters.SuppressedPortLimit))
		ctr.RttEstUpdates = ygot.Uint64(uint64(ps.RTTUpdates))
		ctr.LinkDownDrops = ygot.Uint64(uint64(ps.LinkDownDrops))
		for qi := range ps.Queues {
			qs := &ps.Queues[qi]
			q := it.GetOrCreateQueues().GetOrCreateQueue(qs.ID)
			queueState(q, qs, queueFor(&ic, qs.ID), wallNS, externalFormat)
			if external != nil {
				external(q.GetState().GetCounters(), ygot.Uint64(uint64(qs.Counters.SentExternal)))
			}
		}
	}
	gc := g.GetOrCreateCounters()
	gc.NotificationsSent = ygot.Uint64(sent)
	gc.NotificationsSuppressed = ygot.Uint64(suppressed)

	ft := l.GetOrCreateFlowTable().GetOrCreateState()
	ft.MaxEntries = ygot.Uint32(uint32(cfg.FlowTable.MaxEntries))
	ft.IdleTimeout = ygot.Uint32(uint32(cfg.FlowTable.IdleTimeout / engine.Second))
	ft.LearnFromDataPackets = ygot.Bool(cfg.FlowTable.LearnFromData)
	ft.LearnFromCmMessages = ygot.Bool(cfg.FlowTable.LearnFromCM)
	switch cfg.FlowTable.Replacement {
	case lhcnp.ReplaceOldest:
		ft.ReplacementPolicy = oc.LhcnpTypes_FlowReplacementPolicy_REPLACE_OLDEST
	case lhcnp.NoReplace:
		ft.ReplacementPolicy = oc.LhcnpTypes_FlowReplacementPolicy_NO_REPLACE
	default:
		ft.ReplacementPolicy = oc.LhcnpTypes_FlowReplacementPolicy_REPLACE_LEAST_ACTIVE
	}
	ft.Entries = ygot.Uint32(uint32(st.FlowTable.Entries))
	fc := ft.GetOrCreateCounters()
	fc.Learned = ygot.Uint64(uint64(st.FlowTable.Counters.Learned))
	fc.AgedOut = ygot.Uint64(uint64(st.FlowTable.Counters.Aged))
	fc.Replaced = ygot.Uint64(uint64(st.FlowTable.Counters.Evicted))
	fc.RemovedByCm = ygot.Uint64(uint64(st.FlowTable.Counters.RemovedByCM))
	fc.LearnFailures = ygot.Uint64(uint64(st.FlowTable.Counters.LearnFailures))
	for i := range st.FlowTable.Flows {
		f := &st.FlowTable.Flows[i]
		fl := l.GetOrCreateFlowTable().GetOrCreateFlows().GetOrCreateFlow(f.Key.Src.String(), f.Key.Dst.String(), f.Key.SrcQP, f.Key.DstQP)
		fs := fl.GetOrCreateState()
		fs.SourceAddress = ygot.String(f.Key.Src.String())
		fs.DestinationAddress = ygot.String(f.Key.Dst.String())
		fs.SourceQp = ygot.Uint32(f.Key.SrcQP)
		fs.DestinationQp = ygot.Uint32(f.Key.DstQP)
		if f.Learned == lhcnp.LearnedFromCM {
			fs.LearnedFrom = oc.LhcnpTypes_FlowLearningSource_CM_MESSAGE
		} else {
			fs.LearnedFrom = oc.LhcnpTypes_FlowLearningSource_DATA_PACKET
		}
		if f.EgressPort != "" {
			if n, ok := ports.Interface(f.EgressPort); ok {
				fs.EgressInterface = ygot.String(n)
			}
			fs.EgressQueue = ygot.Uint8(f.EgressQueue)
		}
		fs.FirstSeen = ygot.Uint64(wallNS(f.FirstSeen))
		fs.LastSeen = ygot.Uint64(wallNS(f.LastSeen))
		fs.ArrivalRate = ygot.Uint64(uint64(f.ArrivalRateBitsPerSec))
		if f.LastCNPTime > 0 {
			fs.LastCnpTime = ygot.Uint64(wallNS(f.LastCNPTime))
		}
		if f.SourceRTT > 0 {
			fs.SourceRtt = ygot.Uint64(uint64(f.SourceRTT.Nanos()))
			fs.SourceRttLearnedFrom = oc.LhcnpTypes_SourceRttOrigin_CM_EXCHANGE
			if f.SourceRTTFromRate {
				fs.SourceRttLearnedFrom = oc.LhcnpTypes_SourceRttOrigin_RATE_RESPONSE
			}
		}
		fs.Deferring = ygot.Bool(f.Deferring)
		c := fs.GetOrCreateCounters()
		c.Packets = ygot.Uint64(uint64(f.Packets))
		c.Bytes = ygot.Uint64(uint64(f.Bytes))
		c.NotificationsSent = ygot.Uint64(uint64(f.Notifications))
	}

	cs := l.GetOrCreateCollaborativeSuppression().GetOrCreateState()
	cs.Enabled = ygot.Bool(cfg.Collaborative.Enabled)
	if cfg.Collaborative.ObservationWindow > 0 {
		cs.ObservationWindow = ygot.Uint32(micros(cfg.Collaborative.ObservationWindow))
	}
	cs.ArrivalRateDropThreshold = ygot.Uint8(uint8(cfg.Collaborative.ArrivalRateDropPercent))
	cs.EscalationAction = actionFromWire(cfg.Collaborative.EscalationAction)
	cs.UpstreamFirst = ygot.Bool(cfg.Collaborative.UpstreamFirst)
	cs.UpstreamFirstMarked = ygot.Bool(cfg.Collaborative.UpstreamFirstMarked)
	for _, p := range cfg.Collaborative.Peers {
		cs.Peers = append(cs.Peers, p.String())
	}
	cs.EffectiveObservationWindow = ygot.Uint32(micros(st.Collaborative.ObservationWindow))
	cs.DeferringFlows = ygot.Uint32(uint32(st.Collaborative.DeferringFlows))
	cc := cs.GetOrCreateCounters()
	cc.Deferrals = ygot.Uint64(uint64(st.Collaborative.Deferrals))
	cc.Escalations = ygot.Uint64(uint64(st.Collaborative.Escalations))
	return root
}

// addNotificationsSent adds n notifications that a mechanism sent itself,
// not through the node (Rate Advice messages, an FCN ingress PE's CNPs
// translated from FCN messages), to the node's notifications-sent, which
// stateTree wrote from the node's count: "all formats and actions". For
// congestion on one of the switch's ports (port not ""), they count in its
// interface's notifications-sent too; a translated CNP is for congestion
// on a WAN node, on no port of this switch.
func addNotificationsSent(root *oc.Root, ports *Ports, port string, n int64) {
	if n == 0 {
		return
	}
	add := func(c **uint64) { *c = ygot.Uint64(uint64(n) + deref(*c)) }
	l := root.GetOrCreateLhcnp()
	add(&l.GetOrCreateGlobal().GetOrCreateState().GetOrCreateCounters().NotificationsSent)
	if port == "" {
		return
	}
	if name, ok := ports.Interface(port); ok {
		if it := l.GetInterfaces().GetInterface(name); it != nil {
			add(&it.GetOrCreateState().GetOrCreateCounters().NotificationsSent)
		}
	}
}

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

func queueState(q *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue, qs *lhcnp.QueueState, qc lhcnp.QueueConfig, wallNS func(engine.Time) uint64,
	externalFormat oc.E_LhcnpTypes_NotificationFormat) {
	s := q.GetOrCreateState()
	s.Id = ygot.Uint8(qs.ID)
	s.Enabled = ygot.Bool(qc.Enabled)
	s.KBase = ygot.Uint64(uint64(qc.KBaseBytes))
	s.Alpha = ygot.Float64(qc.Alpha)
	if qc.KMaxMode == lhcnp.KMaxExplicit {
		s.KmaxMode = oc.LhcnpTypes_KmaxMode_EXPLICIT
		s.Kmax = ygot.Uint64(uint64(qc.KMaxBytes))
	} else {
		s.KmaxMode = oc.LhcnpTypes_KmaxMode_BDP_ADAPTIVE
	}
	if qc.KMinMode == lhcnp.KMinExplicit {
		s.KminMode = oc.LhcnpTypes_KminMode_EXPLICIT
		s.Kmin = ygot.Uint64(uint64(qc.KMinBytes))
	} else {
		s.KminMode = oc.LhcnpTypes_KminMode_DERIVED
	}
	s.EcnMaxProbability = ygot.Float64(qc.PMax)
	s.VEcn = ygot.Float64(qc.VECNPercent)
	s.VGrowth = ygot.Uint64(uint64(qc.VGrowthBytesPerSec))
	s.MeasurementInterval = ygot.Uint32(micros(qc.MeasurementInterval))
	s.TriggerPersistence = ygot.Uint32(micros(qc.TriggerPersistence))
	s.OneCutPerEpisode = ygot.Bool(qc.OneCutPerEpisode)
	s.PerFlowRtt = ygot.Bool(qc.PerFlowRTT)
	s.OverloadCut = ygot.Bool(qc.OverloadCut)
	s.OverloadCutGrowth = ygot.Bool(qc.OverloadCutGrowth)
	if qc.MinCNPInterval > 0 {
		s.MinCnpInterval = ygot.Uint32(micros(qc.MinCNPInterval))
	}
	s.EffectiveKmax = ygot.Uint64(uint64(qs.KMaxBytes))
	s.EffectiveKmin = ygot.Uint64(uint64(qs.KMinBytes))
	s.EffectiveMinCnpInterval = ygot.Uint32(micros(qs.MinCNPInterval))
	s.QueueDepth = ygot.Uint64(uint64(qs.QueueBytes))
	s.PeakQueueDepth = ygot.Uint64(uint64(qs.PeakQueueBytes))
	s.EcnMarkingRate = ygot.Float64(round2(qs.ECNMarkingPercent))
	s.QueueGrowthRate = ygot.Int64(qs.QueueGrowthBytesPerSec)
	s.CongestionLevel = ygot.Uint8(qs.CongLevel)
	s.EcnMarkingActive = ygot.Bool(qs.ECNMarkingActive)
	s.QdAboveKmax = ygot.Bool(qs.QDAboveKMax)
	s.EmrAboveVEcn = ygot.Bool(qs.EMRAboveVECN)
	s.QgrAboveVGrowth = ygot.Bool(qs.QGRAboveVGrowth)
	if lc := &qs.LastCNP; lc.Valid {
		l := s.GetOrCreateLastCnp()
		l.Timestamp = ygot.Uint64(wallNS(lc.Time))
		switch lc.Format {
		case lhcnp.FormatICMPv6:
			l.Format = oc.LhcnpTypes_NotificationFormat_LONG_HAUL_ICMPV6
		case lhcnp.FormatRoCEv2:
			l.Format = oc.LhcnpTypes_NotificationFormat_LONG_HAUL_ROCEV2
		case lhcnp.FormatExternal:
			// Sent by the mechanism running (Fast CNP, an FCN transit,
			// the switch CNP): its format, and none of the Long-haul
			// CNP's fields, which its packet does not carry.
			l.Format = externalFormat
		}
		if lc.Format != lhcnp.FormatExternal {
			l.Action = actionFromWire(lc.Action)
			l.Parameter = ygot.Uint16(lc.Parameter)
			l.CongestionLevel = ygot.Uint8(lc.CongLevel)
			l.MetricType = metricFromWire(lc.MetricType)
			l.MetricValue = ygot.Uint32(lc.MetricValue)
		}
		l.SourceAddress = ygot.String(lc.Flow.Src.String())
		l.DestinationAddress = ygot.String(lc.Flow.Dst.String())
		l.SourceQp = ygot.Uint32(lc.Flow.SrcQP)
		l.DestinationQp = ygot.Uint32(lc.Flow.DstQP)
	}
	c := s.GetOrCreateCounters()
	qcnt := &qs.Counters
	// Transmitted from the queue, as the leaves say (the node's own
	// Packets and Bytes count data packets enqueued: above the port's
	// rate while the queue grows, so queue_utilisation read over 100 %).
	c.Packets = ygot.Uint64(uint64(qs.TxPackets))
	c.Bytes = ygot.Uint64(uint64(qs.TxBytes))
	c.EcnMarkedPackets = ygot.Uint64(uint64(qcnt.ECNMarked))
	c.CnpNotifySent = ygot.Uint64(uint64(qcnt.SentNotify))
	c.CnpPauseSent = ygot.Uint64(uint64(qcnt.SentPause))
	c.CnpRateReduceSent = ygot.Uint64(uint64(qcnt.SentRateReduce))
	c.CnpResumeSent = ygot.Uint64(uint64(qcnt.SentResume))
	c.CnpIcmpv6Sent = ygot.Uint64(uint64(qcnt.SentICMPv6))
	c.CnpRocev2Sent = ygot.Uint64(uint64(qcnt.SentRoCEv2))
	c.SuppressedFlowInterval = ygot.Uint64(uint64(qcnt.SuppressedFlowInterval))
	c.SuppressedPortLimit = ygot.Uint64(uint64(qcnt.SuppressedPortLimit))
	c.SuppressedDeferral = ygot.Uint64(uint64(qcnt.SuppressedDeferral))
	c.Escalations = ygot.Uint64(uint64(qcnt.Escalations))
	c.QdTriggers = ygot.Uint64(uint64(qcnt.QDTriggers))
	c.EmrTriggers = ygot.Uint64(uint64(qcnt.EMRTriggers))
	c.QgrTriggers = ygot.Uint64(uint64(qcnt.QGRTriggers))
	c.DroppedPackets = ygot.Uint64(uint64(qcnt.Drops))
	c.PfcPauseFrames = ygot.Uint64(uint64(qs.PFCPauseFrames))

	a := q.GetOrCreateActionPolicy().GetOrCreateState()
	a.DefaultAction = actionFromWire(qc.Action.DefaultAction)
	a.RateReducePercent = ygot.Uint8(uint8(qc.Action.RateReducePercent))
	a.PauseDuration = ygot.Uint16(uint16(micros(qc.Action.PauseDuration)))
	if qc.Action.PauseLevel < lhcnp.PauseLevelNever {
		a.PauseCongestionLevel = ygot.Uint8(uint8(qc.Action.PauseLevel))
	}
	a.ResumeEnabled = ygot.Bool(qc.Action.ResumeEnabled)
	a.RepeatResume = ygot.Bool(qc.Action.RepeatResume)
	a.ResumeOnDrain = ygot.Bool(qc.Action.ResumeOnDrain)
	a.ResumePercent = ygot.Uint8(uint8(qc.Action.ResumePercent))
	if qc.Action.ResumeHold > 0 {
		a.ResumeHoldDuration = ygot.Uint32(micros(qc.Action.ResumeHold))
	}
	a.EffectiveResumeHoldDuration = ygot.Uint32(micros(qs.ResumeHold))
}

func interfaceFor(c *lhcnp.Config, port string) lhcnp.InterfaceConfig {
	if ic, ok := c.Interfaces[port]; ok {
		return ic
	}
	return c.Interface
}

func queueFor(ic *lhcnp.InterfaceConfig, id uint8) lhcnp.QueueConfig {
	if qc, ok := ic.Queues[id]; ok {
		return qc
	}
	return ic.Queue
}

func rttSourceFromNode(s lhcnp.RTTSource) oc.E_LhcnpTypes_RttSource {
	return rttSources.fromNode(s, oc.LhcnpTypes_RttSource_STATIC)
}

// micros converts simulated time to whole microseconds, saturating at the
// uint32 of the YANG leaves.
func micros(t engine.Time) uint32 {
	us := int64(t / engine.Microsecond)
	switch {
	case us < 0:
		return 0
	case us > int64(^uint32(0)):
		return ^uint32(0)
	}
	return uint32(us)
}

// round2 keeps two fraction digits, the precision of decimal-percentage.
func round2(v float64) float64 {
	if v < 0 {
		return 0
	}
	return float64(int64(v*100+0.5)) / 100
}
