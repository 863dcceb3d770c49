package dataplane

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/service"
)

// Ports maps the YANG interface names of a switch to the netsim port names
// the node uses ("n1:0"), both ways.
type Ports struct {
	byYANG map[string]string
	byPort map[string]string
	order  []string // YANG names in port order
}

// NewPorts builds the map from YANG name → port name pairs, in port order.
func NewPorts(pairs [][2]string) (*Ports, error) {
	p := &Ports{byYANG: map[string]string{}, byPort: map[string]string{}}
	for _, pr := range pairs {
		y, port := pr[0], pr[1]
		if y == "" || port == "" {
			return nil, fmt.Errorf("dataplane: empty interface or port name in %q", pr)
		}
		if _, dup := p.byYANG[y]; dup {
			return nil, fmt.Errorf("dataplane: interface %q named twice", y)
		}
		if _, dup := p.byPort[port]; dup {
			return nil, fmt.Errorf("dataplane: port %q named twice", port)
		}
		p.byYANG[y], p.byPort[port] = port, y
		p.order = append(p.order, y)
	}
	return p, nil
}

// Port returns the port of an interface name.
func (p *Ports) Port(yangName string) (string, bool) {
	s, ok := p.byYANG[yangName]
	return s, ok
}

// Interface returns the interface name of a port.
func (p *Ports) Interface(port string) (string, bool) {
	s, ok := p.byPort[port]
	return s, ok
}

// Names returns the interface names in port order.
func (p *Ports) Names() []string { return slices.Clone(p.order) }

func invalid(path, format string, args ...any) error {
	return fmt.Errorf("%s: %s: %w", path, fmt.Sprintf(format, args...), service.ErrInvalidConfig)
}

// usec converts a YANG microseconds leaf to simulated time.
func usec(v uint32) engine.Time { return engine.Time(v) * engine.Microsecond }

// ToConfig translates the intended YANG configuration into the node's
// configuration: lhcnp.DefaultConfig (which holds the YANG defaults)
// overlaid with every leaf that is set. Its Enabled is the master switch
// as configured; the Binding then runs the node's Long-haul CNP only with
// a format on (translateAll). The other mechanisms' leaves are their
// kinds' (FastCNPConfig, FCNConfig, RateAdviceConfig, SwitchCNPConfig);
// Fast CNP on with a Long-haul CNP format is refused here (the two cannot
// run on one node). Errors name the YANG path and wrap
// service.ErrInvalidConfig.
func ToConfig(l *oc.Lhcnp_Lhcnp, ports *Ports) (lhcnp.Config, error) {
	c := lhcnp.DefaultConfig()
	// The one YANG default lhcnp.DefaultConfig does not share: metric-type
	// defaults to QUEUE_DEPTH in the model (the node's zero value reports
	// the metric of the trigger that fired).
	c.MetricType = wire.MetricQueueDepth
	if l == nil {
		return c, nil
	}
	if g := l.GetGlobal().GetConfig(); g != nil {
		setBool(&c.Enabled, g.Enabled)
		setBool(&c.FormatICMPv6, g.LongHaulCnpIcmpv6)
		setBool(&c.FormatRoCEv2, g.LongHaulCnpRocev2)
		setBool(&c.MetricDisclosure, g.MetricDisclosure)
		if g.MetricType != oc.LhcnpTypes_MetricType_UNSET {
			c.MetricType = metricToWire(g.MetricType)
			// UNSPECIFIED is Metric Type 0, "no metric, or opaque
			// context": the node's MetricUnspecified alone would send
			// the trigger's metric.
			c.NoMetric = g.MetricType == oc.LhcnpTypes_MetricType_UNSPECIFIED
		}
		if g.DeviceIdentifier != nil {
			c.DeviceID = *g.DeviceIdentifier
		}
		setBool(&c.TimestampObject, g.TimestampObject)
		if g.SourceAddress != nil {
			a, err := netip.ParseAddr(*g.SourceAddress)
			if err != nil {
				return c, invalid("/lhcnp/global/config/source-address", "%v", err)
			}
			c.SourceAddress = a
		}
		if g.CnpDscp != nil {
			c.CNPDSCP = *g.CnpDscp
		}
		if g.Rocev2PartitionKey != nil {
			c.PartitionKey = *g.Rocev2PartitionKey
		}
		if g.GetFastCnpEnabled() && (g.GetLongHaulCnpIcmpv6() || g.GetLongHaulCnpRocev2()) {
			return c, invalid("/lhcnp/global/config/fast-cnp-enabled", "%s", fastWithLongHaul)
		}

	}
	if cp := l.GetGlobal().GetCodePoints().GetConfig(); cp != nil {
		set8(&c.CodePoints.LongHaulICMPv6Type, cp.Icmpv6Type)
		set8(&c.CodePoints.LongHaulClassNum, cp.ExtensionClassNum)
		set8(&c.CodePoints.FastCNPOptType, cp.FastCnpOptionType)
		set8(&c.CodePoints.FastCNPIOAMOptType, cp.FastCnpIoamOptionType)
		if cp.FcnUdpPort != nil {
			c.CodePoints.FCNPort = *cp.FcnUdpPort
		}
		if cp.RateAdviceOpcode != nil {
			c.CodePoints.RateAdviceOpcode = wire.Opcode(*cp.RateAdviceOpcode)
		}
	}
	if rs := l.GetGlobal().GetRocev2Receivers(); rs != nil {
		keys := sortedKeys(rs.Receiver)
		for _, k := range keys {
			p, err := netip.ParsePrefix(k)
			if err != nil {
				return c, invalid("/lhcnp/global/rocev2-receivers/receiver[prefix="+k+"]", "%v", err)
			}
			c.RoCEv2Receivers = append(c.RoCEv2Receivers, p.Masked())
		}
	}
	if ifs := l.GetInterfaces(); ifs != nil {
		for _, name := range sortedKeys(ifs.Interface) {
			at := "/lhcnp/interfaces/interface[name=" + name + "]"
			port, ok := ports.Port(name)
			if !ok {
				return c, invalid(at, "no such interface on this switch (interfaces: %s)", strings.Join(ports.Names(), ", "))
			}
			ic, err := interfaceConfig(ifs.Interface[name], at)
			if err != nil {
				return c, err
			}
			if c.Interfaces == nil {
				c.Interfaces = map[string]lhcnp.InterfaceConfig{}
			}
			c.Interfaces[port] = ic
		}
	}
	if ft := l.GetFlowTable().GetConfig(); ft != nil {
		if ft.MaxEntries != nil {
			c.FlowTable.MaxEntries = int(*ft.MaxEntries)
		}
		if ft.IdleTimeout != nil {
			c.FlowTable.IdleTimeout = engine.Time(*ft.IdleTimeout) * engine.Second
		}
		setBool(&c.FlowTable.LearnFromData, ft.LearnFromDataPackets)
		setBool(&c.FlowTable.LearnFromCM, ft.LearnFromCmMessages)
		switch ft.ReplacementPolicy {
		case oc.LhcnpTypes_FlowReplacementPolicy_REPLACE_LEAST_ACTIVE:
			c.FlowTable.Replacement = lhcnp.ReplaceLeastActive
		case oc.LhcnpTypes_FlowReplacementPolicy_REPLACE_OLDEST:
			c.FlowTable.Replacement = lhcnp.ReplaceOldest
		case oc.LhcnpTypes_FlowReplacementPolicy_NO_REPLACE:
			c.FlowTable.Replacement = lhcnp.NoReplace
		}
	}
	if cs := l.GetCollaborativeSuppression().GetConfig(); cs != nil {
		setBool(&c.Collaborative.Enabled, cs.Enabled)
		if cs.ObservationWindow != nil {
			c.Collaborative.ObservationWindow = usec(*cs.ObservationWindow)
		}
		if cs.ArrivalRateDropThreshold != nil {
			c.Collaborative.ArrivalRateDropPercent = int(*cs.ArrivalRateDropThreshold)
		}
		if cs.EscalationAction != oc.LhcnpTypes_CnpAction_UNSET {
			c.Collaborative.EscalationAction = actionToWire(cs.EscalationAction)
		}
		setBool(&c.Collaborative.UpstreamFirst, cs.UpstreamFirst)
		setBool(&c.Collaborative.UpstreamFirstMarked, cs.UpstreamFirstMarked)
		if cs.Peers != nil {
			peers, err := prefixes("/lhcnp/collaborative-suppression/config/peers", cs.Peers)
			if err != nil {
				return c, err
			}
			c.Collaborative.Peers = peers
		}
	}
	return c, nil
}

func interfaceConfig(i *oc.Lhcnp_Lhcnp_Interfaces_Interface, at string) (lhcnp.InterfaceConfig, error) {
	ic := lhcnp.DefaultInterfaceConfig()
	if cf := i.GetConfig(); cf != nil {
		setBool(&ic.Enabled, cf.Enabled)
		if cf.PortRate != nil {
			ic.PortRateBitsPerSec = schema.ClampInt64(*cf.PortRate)
		}
		if cf.RttSource == oc.LhcnpTypes_RttSource_REPORTED {
			// The node takes reports (lhcnp.Node.ReportRTT), but nothing
			// brings it one: the draft names receiver reporting as a
			// source (§5.3.1) and defines no report. Taken, it would run
			// as STATIC and say REPORTED.
			return ic, invalid(at+"/config/rtt-source", "REPORTED: no receiver report reaches this switch (§5.3.1 names "+
				"receiver reporting but no draft defines the report); use STATIC with rtt-est, or PROBED")
		}
		if cf.RttSource != oc.LhcnpTypes_RttSource_UNSET {
			ic.RTTSource = rttSources.toNode(cf.RttSource, ic.RTTSource)
		}
		if cf.RttEst != nil {
			ic.RTTEst = usec(*cf.RttEst)
		}
		if cf.CnpRateLimit != nil {
			ic.CNPRatePerSec = int64(*cf.CnpRateLimit)
		}
		if cf.CnpBurst != nil {
			ic.CNPBurst = int64(*cf.CnpBurst)
		}
	}
	if qs := i.GetQueues(); qs != nil {
		for _, id := range sortedKeys(qs.Queue) {
			qat := fmt.Sprintf("%s/queues/queue[id=%d]", at, id)
			if int(id) >= netsim.NumPrio {
				return ic, invalid(qat, "no such queue: the ports have queues 0 to %d", netsim.NumPrio-1)
			}
			if ic.Queues == nil {
				ic.Queues = map[uint8]lhcnp.QueueConfig{}
			}
			ic.Queues[id] = queueConfig(qs.Queue[id])
		}
	}
	return ic, nil
}

func queueConfig(q *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue) lhcnp.QueueConfig {
	qc := lhcnp.DefaultQueueConfig()
	if cf := q.GetConfig(); cf != nil {
		setBool(&qc.Enabled, cf.Enabled)
		if cf.KBase != nil {
			qc.KBaseBytes = schema.ClampInt64(*cf.KBase)
		}
		if cf.Alpha != nil {
			qc.Alpha = *cf.Alpha
		}
		if cf.KmaxMode == oc.LhcnpTypes_KmaxMode_EXPLICIT {
			qc.KMaxMode = lhcnp.KMaxExplicit
		}
		if cf.Kmax != nil {
			qc.KMaxBytes = schema.ClampInt64(*cf.Kmax)
		}
		if cf.KminMode == oc.LhcnpTypes_KminMode_EXPLICIT {
			qc.KMinMode = lhcnp.KMinExplicit
		}
		if cf.Kmin != nil {
			qc.KMinBytes = schema.ClampInt64(*cf.Kmin)
		}
		if cf.EcnMaxProbability != nil {
			qc.PMax = *cf.EcnMaxProbability
		}
		if cf.VEcn != nil {
			qc.VECNPercent = *cf.VEcn
		}
		if cf.VGrowth != nil {
			qc.VGrowthBytesPerSec = schema.ClampInt64(*cf.VGrowth)
		}
		if cf.MeasurementInterval != nil {
			qc.MeasurementInterval = usec(*cf.MeasurementInterval)
			qc.EMRWindow = qc.MeasurementInterval // "QGR/EMR measurement interval"
		}
		if cf.TriggerPersistence != nil {
			qc.TriggerPersistence = usec(*cf.TriggerPersistence)
		}
		if cf.MinCnpInterval != nil {
			qc.MinCNPInterval = usec(*cf.MinCnpInterval)
		}
		setBool(&qc.OneCutPerEpisode, cf.OneCutPerEpisode)
		setBool(&qc.PerFlowRTT, cf.PerFlowRtt)
		setBool(&qc.OverloadCut, cf.OverloadCut)
		setBool(&qc.OverloadCutGrowth, cf.OverloadCutGrowth)
	}
	if ap := q.GetActionPolicy().GetConfig(); ap != nil {
		a := &qc.Action
		if ap.DefaultAction != oc.LhcnpTypes_CnpAction_UNSET {
			a.DefaultAction = actionToWire(ap.DefaultAction)
		}
		if ap.RateReducePercent != nil {
			a.RateReducePercent = uint16(*ap.RateReducePercent)
		}
		if ap.PauseDuration != nil {
			a.PauseDuration = usec(uint32(*ap.PauseDuration))
		}
		if ap.PauseCongestionLevel != nil {
			a.PauseLevel = int(*ap.PauseCongestionLevel)
		}
		setBool(&a.ResumeEnabled, ap.ResumeEnabled)
		setBool(&a.RepeatResume, ap.RepeatResume)
		setBool(&a.ResumeOnDrain, ap.ResumeOnDrain)
		if ap.ResumePercent != nil {
			a.ResumePercent = uint16(*ap.ResumePercent)
		}
		if ap.ResumeHoldDuration != nil {
			a.ResumeHold = usec(*ap.ResumeHoldDuration)
		}
	}
	return qc
}

func setBool(dst *bool, v *bool) {
	if v != nil {
		*dst = *v
	}
}

func set8(dst *uint8, v *uint8) {
	if v != nil {
		*dst = *v
	}
}

func sortedKeys[K string | uint8, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// The enumerations, mapped by name: a ygot enum's Go value is not the wire
// value. Each mapping is stated once, in a table read in both directions.

// enumMap pairs the values of a YANG enumeration with the dataplane's.
type enumMap[Y, D comparable] []struct {
	y Y
	d D
}

// toNode returns the dataplane value of y, or def when y has none (UNSET).
func (m enumMap[Y, D]) toNode(y Y, def D) D {
	for _, p := range m {
		if p.y == y {
			return p.d
		}
	}
	return def
}

// fromNode returns the YANG value of d, or def when d has none.
func (m enumMap[Y, D]) fromNode(d D, def Y) Y {
	for _, p := range m {
		if p.d == d {
			return p.y
		}
	}
	return def
}

var (
	metrics = enumMap[oc.E_LhcnpTypes_MetricType, wire.MetricType]{
		{oc.LhcnpTypes_MetricType_UNSPECIFIED, wire.MetricUnspecified},
		{oc.LhcnpTypes_MetricType_QUEUE_DEPTH, wire.MetricQueueDepth},
		{oc.LhcnpTypes_MetricType_QUEUE_GROWTH_RATE, wire.MetricQueueGrowth},
		{oc.LhcnpTypes_MetricType_ECN_MARKING_RATE, wire.MetricECNMarkingRate},
		{oc.LhcnpTypes_MetricType_RTT, wire.MetricRTT},
	}
	rttSources = enumMap[oc.E_LhcnpTypes_RttSource, lhcnp.RTTSource]{
		{oc.LhcnpTypes_RttSource_STATIC, lhcnp.RTTStatic},
		{oc.LhcnpTypes_RttSource_PROBED, lhcnp.RTTProbed},
		{oc.LhcnpTypes_RttSource_REPORTED, lhcnp.RTTReported},
	}
)

// actionToWire: an unset action is the draft's usual Rate Reduce. The
// actions' table is gnmi/schema's, whose rules check them too.
func actionToWire(a oc.E_LhcnpTypes_CnpAction) wire.Action {
	if n, ok := schema.NodeAction(a); ok {
		return n
	}
	return wire.ActionRateReduce
}

func actionFromWire(a wire.Action) oc.E_LhcnpTypes_CnpAction {
	return schema.ModelAction(a)
}

func metricToWire(m oc.E_LhcnpTypes_MetricType) wire.MetricType {
	return metrics.toNode(m, wire.MetricUnspecified)
}

func metricFromWire(m wire.MetricType) oc.E_LhcnpTypes_MetricType {
	return metrics.fromNode(m, oc.LhcnpTypes_MetricType_UNSPECIFIED)
}
