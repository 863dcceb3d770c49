package lhcnp

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// RTTSource says where a port's RTT_est comes from (§5.3.1).
type RTTSource uint8

// RTT_est sources.
const (
	// RTTStatic: the configured InterfaceConfig.RTTEst.
	RTTStatic RTTSource = iota
	// RTTProbed: measured by the node. In the simulator the probe is the
	// port's link: twice its propagation delay plus the serialisation of a
	// 64-byte probe each way, re-read whenever the link changes.
	RTTProbed
	// RTTReported: the configured value until a receiver report arrives
	// through Node.ReportRTT.
	RTTReported
)

func (s RTTSource) String() string {
	switch s {
	case RTTStatic:
		return "static"
	case RTTProbed:
		return "probed"
	case RTTReported:
		return "reported"
	}
	return fmt.Sprintf("rtt-source(%d)", uint8(s))
}

// KMaxMode says how K_max is obtained.
type KMaxMode uint8

// K_max modes.
const (
	// KMaxBDP: K_max = max(K_base, alpha * R_port * RTT_est / 8) (§5.3.2).
	KMaxBDP KMaxMode = iota
	// KMaxExplicit: K_max = QueueConfig.KMaxBytes.
	KMaxExplicit
)

// KMinMode says how K_min is obtained.
type KMinMode uint8

// K_min modes.
const (
	// KMinDerived: K_min = K_max / 2 (§5.3.2, RECOMMENDED).
	KMinDerived KMinMode = iota
	// KMinExplicit: K_min = QueueConfig.KMinBytes, clamped below K_max.
	KMinExplicit
)

// Replacement is what a new flow does when the flow table is full.
type Replacement uint8

// Replacement policies (white paper §2.2.3).
const (
	// ReplaceLeastActive evicts the entry seen least recently (LRU).
	ReplaceLeastActive Replacement = iota
	// ReplaceOldest evicts the entry learned first.
	ReplaceOldest
	// NoReplace keeps the table and does not learn the new flow.
	NoReplace
)

// Config is everything the YANG model of a congestion-aware node exposes
// about Long-haul CNP. Durations are simulated time; rates are bits or bytes
// per second as their names say. A zero duration documented as "0 = RTT_est"
// is derived per port from the effective RTT_est.
type Config struct {
	// Enabled is the master switch: when false the node neither programs
	// ECN marking (the ports keep the configuration they had when the node
	// attached) nor sends notifications; it still learns and monitors.
	Enabled bool
	// FormatICMPv6 and FormatRoCEv2 enable the two formats (§6). ICMPv6
	// applies to IPv6 sources only (§4); RoCEv2 is sent only to sources in
	// RoCEv2Receivers (§10.5). When both apply, RoCEv2 is used.
	FormatICMPv6 bool
	FormatRoCEv2 bool
	// RoCEv2Receivers are the source prefixes configured to accept the
	// RoCEv2 format (§6.2.1, §10.5: MUST NOT send it to others).
	RoCEv2Receivers []netip.Prefix
	// CodePoints are the TBD values (ICMPv6 type, extension Class-Num).
	CodePoints wire.CodePoints
	// MetricDisclosure fills Metric Type and Congestion Metric Value; when
	// false both are zero (§9, Information Disclosure).
	MetricDisclosure bool
	// MetricType selects the metric reported: wire.MetricUnspecified (the
	// default) reports the metric of the trigger that fired (QD, QGR or
	// EMR), unless NoMetric; any other type always reports that metric.
	MetricType wire.MetricType
	// NoMetric sends Metric Type 0 ("no metric, or opaque context",
	// §10.4) with a zero value, MetricDisclosure on or off: the YANG
	// model's UNSPECIFIED. It is a field of its own because MetricType's
	// zero value, wire.MetricUnspecified, already means the trigger's
	// metric, the default every scenario runs; it needs that MetricType.
	NoMetric bool
	// DeviceID, when not empty, adds a Device Identifier extension object.
	DeviceID string
	// TimestampObject adds a Timestamp extension object holding the
	// simulated time as an NTP timestamp from the Unix epoch.
	TimestampObject bool
	// SourceAddress is the IP source of the notifications; invalid means
	// the switch's address. It must have the source's address family.
	SourceAddress netip.Addr
	// CNPDSCP is the DSCP of notifications; CNPPrio their 802.1p priority
	// (the egress queue they take in the simulator).
	CNPDSCP uint8
	CNPPrio uint8
	// PartitionKey is the BTH P_Key of the RoCEv2 format (§6.2.3).
	PartitionKey uint16

	// Interface is the configuration of every egress port not listed in
	// Interfaces; Interfaces overrides it by port name (netsim Port.Name,
	// "switch:index").
	Interface  InterfaceConfig
	Interfaces map[string]InterfaceConfig

	FlowTable     FlowTableConfig
	Collaborative CollaborativeConfig
}

// InterfaceConfig configures one egress port.
type InterfaceConfig struct {
	Enabled bool
	// PortRateBitsPerSec is R_port; 0 means the port's operational rate.
	PortRateBitsPerSec int64
	RTTSource          RTTSource
	// RTTEst is the configured RTT_est (the initial value for probed and
	// reported sources).
	RTTEst engine.Time
	// CNPRatePerSec and CNPBurst are the per-port token bucket of all
	// notifications sent for flows leaving by this port (§9 Amplification:
	// MUST impose a global rate limit per port).
	CNPRatePerSec int64
	CNPBurst      int64
	// Queue configures every priority queue not listed in Queues.
	Queue  QueueConfig
	Queues map[uint8]QueueConfig
}

// QueueConfig configures one egress priority queue.
type QueueConfig struct {
	Enabled bool
	// K_max = max(KBaseBytes, Alpha * R_port * RTT_est / 8) in KMaxBDP
	// mode, KMaxBytes in KMaxExplicit mode.
	KBaseBytes int64
	Alpha      float64
	KMaxMode   KMaxMode
	KMaxBytes  int64
	// K_min = K_max / 2 in KMinDerived mode, KMinBytes (below K_max) in
	// KMinExplicit mode.
	KMinMode  KMinMode
	KMinBytes int64
	// PMax is the ECN marking probability reached at K_max.
	PMax float64
	// VECNPercent: trigger (b), the ECN marking rate over EMRWindow above
	// this share of the queue's data packets. 0 disables the trigger.
	VECNPercent float64
	// VGrowthBytesPerSec: trigger (c), the queue growth rate over
	// MeasurementInterval above this. 0 disables the trigger.
	VGrowthBytesPerSec int64
	// MeasurementInterval is the QGR interval and the flows' arrival-rate
	// interval; EMRWindow the ECN marking rate window.
	MeasurementInterval engine.Time
	EMRWindow           engine.Time
	// TriggerPersistence is how long a second-level condition must hold
	// before the node generates. The default, 0, is the draft's: §5.4
	// "MUST trigger Long-haul CNP generation when any of the following
	// conditions is satisfied", on the packet that makes it true. A
	// positive value is a deviation (docs/conformance.md, Deviations): it
	// filters transient build-up (§1) at the cost of reacting later, and
	// a scenario that wants it says so (trigger_persistence).
	TriggerPersistence engine.Time
	// MinCNPInterval is the minimum time between two notifications to one
	// flow (§5.5, §9); 0 = RTT_est.
	MinCNPInterval engine.Time
	// OneCutPerEpisode leaves unmarked the data packets of a flow this
	// queue sent Rate Reduce or Pause to, until the queue next drains
	// below K_min (the end of the congestion episode). Off by default, the
	// draft's behaviour: §5.4 marks every traversing packet above K_min,
	// so the receiver's CNPs for those marks cut the sender a path round
	// trip after this node's own cut, two cuts for one episode. On, it is
	// Fast CNP's rule (draft-xiao-rtgwg-rocev2-fast-cnp §4: a node does
	// not mark a flow whose sender it notifies), applied per episode; a
	// deviation listed in docs/conformance.md.
	OneCutPerEpisode bool
	// OneCutInFlight (with OneCutPerEpisode) narrows the sparing to the
	// flow's cut on its way: its marks are spared for the flow's per-flow
	// interval after this node's last Rate Reduce or Pause to it (with
	// PerFlowRTT its loop to its source and two measurement intervals:
	// until the cut has reached this node's queue and been measured), and
	// applied again after that while the queue stays above K_min. The
	// double cut the option removes is the receivers' CNPs for marks within
	// a path round trip of the node's cut; spared for the whole episode,
	// a flow the node's cut did not slow enough had no brake left but the
	// node's next cut, and queues the receivers' CNPs held reached the
	// buffer (the tuner's family, train seeds: 651 thousand drops against
	// the draft node's 72 thousand; docs/longhaul.md, "Marks spared while
	// the cut is on its way (session 20)"). Off: the whole episode.
	OneCutInFlight bool
	// PerFlowRTT takes a flow's per-flow interval from its own round trip
	// to its source, learnt from its CM exchange (FlowState.SourceRTT),
	// instead of MinCNPInterval or the port's RTT_est, plus one
	// measurement interval, so that a cut can show in QGR. Flows without
	// a learnt round trip keep MinCNPInterval (or RTT_est). Off by
	// default (§5.5's one RTT_est); §5.8 lets a node adapt its intervals.
	PerFlowRTT bool
	// OverloadCut answers a severe queue (QD above K_max, or a tail drop
	// within the per-flow interval) with the flows arriving fastest now,
	// by their arrival rate over the measurement interval (drops
	// counted), instead of the flows with the most bytes in the queue,
	// and with a Rate Reduce of at least the overload's share: the cut
	// that brings the queue's arrivals to R_port less what drains the
	// queue within one RTT_est, at least half R_port (selectByRate),
	// instead of RateReducePercent alone. Off by default, the draft's
	// reading: §5.5 step 1 SHOULD select by contribution to the queue
	// occupancy, and the percentage is the configured one at any depth.
	// On, §5.5 step 3's "parameter values based on the current
	// congestion severity" is read as a cut sized to the overload: at a
	// queue standing at its buffer, the bytes in the queue name the flows
	// that were fast a sojourn ago (four RTT_est at a 4-BDP buffer),
	// already cut, while the flows whose recovery timers ran out go
	// unnoticed, and 30 % per RTT_est did not outpace their recovery
	// (docs/longhaul.md, "A queue standing at the buffer"); a deviation
	// listed in docs/conformance.md.
	OverloadCut bool
	// OverloadCutGrowth (with OverloadCut) sizes a notification of the
	// growth trigger (QGR above V_growth) the same way, whatever the
	// queue's depth: a queue growing is one whose arrivals exceed R_port,
	// and their measured rates say by how much. Without it a growth
	// trigger below K_max cuts by RateReducePercent, and the per-flow
	// interval then holds the overload's cut back for RTT_est when the
	// queue crosses K_max: at 6.8:1 (the tuner family's train seed 27)
	// the flows, cut 30 % on the growth, ran on at 35 Gbit/s into a
	// 22 Gbit/s port and the queue reached the buffer, where V_growth off
	// (the first cut at K_max, sized to the overload) dropped nothing. A
	// deviation listed in docs/conformance.md; off by default.
	OverloadCutGrowth bool
	// EqualCut (with PerFlowRTT; alone it does nothing) shares a
	// loop-sized Rate Reduce (loopCut) with the flows this queue already
	// cut in the same episode whose cut has not reached it yet (their
	// loop and two measurement intervals since): loopCut sizes a cut from
	// the arrival rates, which do not show those cuts, and the per-flow
	// interval keeps the node from cutting those flows again, so the flow
	// measured last carried the whole need of the loop (a web-search
	// mix's 27 MB flow cut 79 % while its competitor, cut first at the
	// configured 30 % before the other's rate was known, kept 17.5 of a
	// 25 Gb/s port). On, the flow is cut, and each of those flows whose
	// modelled rate at its source is above the level the cut leaves is
	// cut again, to one common level that takes from them together what
	// the flow's cut alone would have taken (equalCut). Off by default:
	// §5.5 cuts each selected flow by the configured or loop-sized
	// percentage; a deviation listed in docs/conformance.md.
	EqualCut bool
	Action   ActionPolicy
}

// ActionPolicy chooses the action and parameter of a notification
// (§5.5.1); docs/longhaul.md gives the severity mapping.
type ActionPolicy struct {
	// DefaultAction is the action below PauseLevel: Notify, RateReduce or
	// Pause.
	DefaultAction wire.Action
	// RateReducePercent is the Rate Reduce parameter.
	RateReducePercent uint16
	// PauseDuration is the Pause parameter (whole microseconds, at most
	// 65535 µs); PauseLevel the congestion level from which Pause replaces
	// the default action (PauseLevelNever: never).
	PauseDuration engine.Time
	PauseLevel    int
	// ResumeEnabled sends Resume to the flows this node slowed once the
	// queue stayed below K_min for ResumeHold (0 = RTT_est), with
	// ResumePercent as parameter (0 = unconditional).
	ResumeEnabled bool
	ResumePercent uint16
	ResumeHold    engine.Time
	// RepeatResume keeps resuming a flow while the queue stays below
	// K_min: after each Resume, one hold (and the flow's per-flow
	// interval) later, another, as long as the flow's arrival rate rose
	// since the last (the source still had a held ceiling to release and
	// the bottleneck took it), until an unconditional one. A
	// repeated Resume while the queue's flows arrive at less than half the
	// port's rate is unconditional (Parameter 0, back to the original
	// rate): a percentage of the last cut cannot bring back a flow cut
	// several times. Off by
	// default: §5.5.1 sends one Resume when the queue stayed below K_min
	// and leaves the rest to the source's recovery timer (§5.6), so a
	// ceiling cut several times comes back slowly; a deviation listed in
	// docs/conformance.md.
	RepeatResume bool
	// ResumeOnDrain (with PerFlowRTT and RepeatResume; alone it does
	// nothing) adds two Resume rules: while QD is above K_min and not
	// growing, the flows the node slowed are resumed once the queue would
	// drain at the port's spare rate within the shortest of their round
	// trips to their sources (drainResume), and a flow cut before its
	// first whole measurement interval, whose rate before the cut was
	// never measured, gets an unconditional Resume once the port has spare
	// rate. Off by default and not part of the options row: it helps the
	// large flows of docs/results.md's web-search mixes but costs drops and
	// p99 on the held-out generated set (docs/longhaul.md, "Large flows in
	// the web-search mixes"); a deviation listed in docs/conformance.md.
	ResumeOnDrain bool
	// MaxFlowsPerTrigger and MinSharePercent choose the flows (§5.5 step
	// 1): at most this many, largest share of the queue first, each with at
	// least this share of the queued bytes (the largest is always chosen).
	MaxFlowsPerTrigger int
	MinSharePercent    int
}

// FlowTableConfig configures the flow table (§5.2, white paper §2.2).
type FlowTableConfig struct {
	MaxEntries int
	// IdleTimeout ages out entries without a matching packet (0 = never).
	IdleTimeout   engine.Time
	LearnFromData bool
	LearnFromCM   bool
	Replacement   Replacement
}

// CollaborativeConfig configures multi-device collaborative suppression
// (§5.7).
type CollaborativeConfig struct {
	Enabled bool
	// ObservationWindow (0 = RTT_est): a flow whose arrival rate fell by
	// ArrivalRateDropPercent of its peak within the window is deferred to
	// the upstream node.
	ObservationWindow      engine.Time
	ArrivalRateDropPercent int
	// EscalationAction is sent, with a congestion level of at least
	// EscalationLevel, when the queue kept growing for a whole window while
	// deferring.
	EscalationAction wire.Action
	EscalationLevel  int
	// UpstreamFirst is §5.7's upstream priority: "the node closest to the
	// congestion point (in the upstream direction toward the source)
	// SHOULD respond first". When a flow's route from its source to this
	// node crosses another congestion-aware node (an address in Peers),
	// this node waits one observation window before its first response
	// to the flow in a congestion episode. If the flow's arrival rate
	// falls meanwhile, the upstream node acted and the wait becomes the
	// deferral above (escalating if the queue keeps growing); if not, the
	// node responds itself. Nodes with no peer upstream of a flow respond
	// at once, so when two nodes congest at once the one nearest the
	// source sends and the other defers.
	UpstreamFirst bool
	// UpstreamFirstMarked (with UpstreamFirst) waits for an upstream peer
	// only for a flow whose data packets arrived CE-marked within the
	// observation window: a congestion-aware node whose queue is above
	// K_min marks them (§5.4's first level), so a flow that arrives
	// unmarked has no congested node upstream, and this node is "the node
	// closest to the congestion point" that §5.7 lets respond first: it
	// responds at once. Off: the wait for any peer on the flow's route,
	// congested or not (a node next to a receiver waited a whole window
	// for an idle node at the senders' side before each flow's first
	// response of an episode, while the queue grew at the flow's rate).
	// A deviation (docs/conformance.md); off by default.
	UpstreamFirstMarked bool
	// Peers are the congestion-aware nodes of the domain (the addresses
	// the sources trust, §9). The node finds the route from a flow's
	// source to itself in its routing view (netsim's routes, the
	// simulator's link-state topology) and looks for a peer on it. Empty:
	// no node is known upstream and every node responds at once.
	Peers []netip.Prefix
}

// DefaultConfig returns the draft's recommended values where it gives one
// and the YANG model's defaults elsewhere (docs/longhaul.md lists them with
// their references). It is disabled and sends no format until told to, as
// the YANG master switch is.
func DefaultConfig() Config {
	return Config{
		Enabled:          false,
		FormatICMPv6:     false,
		FormatRoCEv2:     false,
		CodePoints:       wire.DefaultCodePoints(),
		MetricDisclosure: true,
		MetricType:       wire.MetricUnspecified,
		CNPDSCP:          48,
		CNPPrio:          6,
		PartitionKey:     0xFFFF,
		Interface:        DefaultInterfaceConfig(),
		FlowTable: FlowTableConfig{
			MaxEntries:    65536,
			IdleTimeout:   60 * engine.Second,
			LearnFromData: true,
			LearnFromCM:   true,
			Replacement:   ReplaceLeastActive,
		},
		Collaborative: CollaborativeConfig{
			Enabled:                true,
			ArrivalRateDropPercent: 20,
			EscalationAction:       wire.ActionPause,
			EscalationLevel:        224,
			UpstreamFirst:          true,
		},
	}
}

// DefaultInterfaceConfig returns the defaults of one port.
func DefaultInterfaceConfig() InterfaceConfig {
	return InterfaceConfig{
		Enabled:       true,
		RTTSource:     RTTStatic,
		RTTEst:        DefaultRTTEst,
		CNPRatePerSec: 10000,
		CNPBurst:      100,
		Queue:         DefaultQueueConfig(),
	}
}

// DefaultQueueConfig returns the defaults of one queue.
func DefaultQueueConfig() QueueConfig {
	return QueueConfig{
		Enabled:             true,
		KBaseBytes:          DefaultKBaseBytes,
		Alpha:               1.0,
		KMaxMode:            KMaxBDP,
		KMinMode:            KMinDerived,
		PMax:                0.2,
		VECNPercent:         20,
		VGrowthBytesPerSec:  1_250_000_000,
		MeasurementInterval: 100 * engine.Microsecond,
		EMRWindow:           100 * engine.Microsecond,
		Action: ActionPolicy{
			DefaultAction:      wire.ActionRateReduce,
			RateReducePercent:  30,
			PauseDuration:      engine.Millisecond,
			PauseLevel:         224,
			ResumeEnabled:      true,
			ResumePercent:      50,
			MaxFlowsPerTrigger: 4,
			MinSharePercent:    10,
		},
	}
}

// ErrConfig is wrapped by every error of Validate.
var ErrConfig = errors.New("invalid long-haul cnp configuration")

func cfgErr(field, format string, args ...any) error {
	return fmt.Errorf("%s: %s: %w", field, fmt.Sprintf(format, args...), ErrConfig)
}

// Validate checks the configuration; the error names the offending field
// by its path in Config ("interfaces[n1:1].queues[3].k-min-bytes" style
// names follow the Go field names in lower case).
func (c *Config) Validate() error { return c.validate(false) }

// validate checks c; external is true for a node with a Notifier, which
// needs no Long-haul CNP format.
func (c *Config) validate(external bool) error {
	if c.CNPPrio >= netsim.NumPrio {
		return cfgErr("cnp-prio", "%d not below %d", c.CNPPrio, netsim.NumPrio)
	}
	if c.CNPDSCP > 63 {
		return cfgErr("cnp-dscp", "%d above 63", c.CNPDSCP)
	}
	if c.MetricType > wire.MetricRTT && c.MetricType < wire.MetricExperimental1 {
		return cfgErr("metric-type", "%d is unassigned", c.MetricType)
	}
	if c.NoMetric && c.MetricType != wire.MetricUnspecified {
		return cfgErr("no-metric", "with metric-type %v: no metric is Metric Type 0", c.MetricType)
	}
	if len(c.DeviceID) > 255 {
		return cfgErr("device-id", "%d bytes, at most 255", len(c.DeviceID))
	}
	for i, p := range c.RoCEv2Receivers {
		if !p.IsValid() {
			return cfgErr(fmt.Sprintf("rocev2-receivers[%d]", i), "invalid prefix")
		}
	}
	if c.Enabled && !external && !c.FormatICMPv6 && !c.FormatRoCEv2 {
		return cfgErr("formats", "enabled with neither icmpv6 nor rocev2 (§6: MUST support at least one)")
	}
	if err := c.Interface.validate("interface"); err != nil {
		return err
	}
	names := make([]string, 0, len(c.Interfaces))
	for name := range c.Interfaces {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		ic := c.Interfaces[name]
		if err := ic.validate("interfaces[" + name + "]"); err != nil {
			return err
		}
	}
	ft := &c.FlowTable
	if ft.MaxEntries < 1 {
		return cfgErr("flow-table.max-entries", "%d, need at least 1", ft.MaxEntries)
	}
	if ft.IdleTimeout < 0 {
		return cfgErr("flow-table.idle-timeout", "negative")
	}
	if ft.Replacement > NoReplace {
		return cfgErr("flow-table.replacement", "unknown policy %d", ft.Replacement)
	}
	cs := &c.Collaborative
	if cs.ObservationWindow < 0 {
		return cfgErr("collaborative.observation-window", "negative")
	}
	if cs.ArrivalRateDropPercent < 1 || cs.ArrivalRateDropPercent > 100 {
		return cfgErr("collaborative.arrival-rate-drop-percent", "%d outside 1..100", cs.ArrivalRateDropPercent)
	}
	if err := CheckCongestionAction(cs.EscalationAction); err != nil {
		return cfgErr("collaborative.escalation-action", "%v", err)
	}
	if cs.EscalationLevel < 0 || cs.EscalationLevel > 255 {
		return cfgErr("collaborative.escalation-level", "%d outside 0..255", cs.EscalationLevel)
	}
	for i, p := range cs.Peers {
		if !p.IsValid() {
			return cfgErr(fmt.Sprintf("collaborative.peers[%d]", i), "invalid prefix")
		}
	}
	return nil
}

func (ic *InterfaceConfig) validate(path string) error {
	if ic.PortRateBitsPerSec < 0 {
		return cfgErr(path+".port-rate-bps", "negative")
	}
	if ic.RTTSource > RTTReported {
		return cfgErr(path+".rtt-source", "unknown source %d", ic.RTTSource)
	}
	if ic.RTTEst <= 0 {
		return cfgErr(path+".rtt-est", "%v, must be positive", ic.RTTEst)
	}
	if ic.CNPRatePerSec <= 0 {
		return cfgErr(path+".cnp-rate-per-sec", "%d, must be positive (§9: a per-port limit is required)", ic.CNPRatePerSec)
	}
	if ic.CNPBurst < 1 {
		return cfgErr(path+".cnp-burst", "%d, need at least 1", ic.CNPBurst)
	}
	if err := ic.Queue.validate(path + ".queue"); err != nil {
		return err
	}
	for prio := range uint8(netsim.NumPrio) {
		qc, ok := ic.Queues[prio]
		if !ok {
			continue
		}
		if err := qc.validate(fmt.Sprintf("%s.queues[%d]", path, prio)); err != nil {
			return err
		}
	}
	for prio := range ic.Queues {
		if prio >= netsim.NumPrio {
			return cfgErr(fmt.Sprintf("%s.queues[%d]", path, prio), "no such queue")
		}
	}
	return nil
}

func (q *QueueConfig) validate(path string) error {
	switch {
	case q.KBaseBytes < 1:
		return cfgErr(path+".k-base-bytes", "%d, need at least 1", q.KBaseBytes)
	case q.Alpha <= 0:
		return cfgErr(path+".alpha", "%g, must be positive", q.Alpha)
	case q.KMaxMode > KMaxExplicit:
		return cfgErr(path+".k-max-mode", "unknown mode %d", q.KMaxMode)
	case q.KMaxMode == KMaxExplicit && q.KMaxBytes < MinExplicitKMaxBytes:
		return cfgErr(path+".k-max-bytes", "%d, explicit K_max needs at least %d", q.KMaxBytes, MinExplicitKMaxBytes)
	case q.KMinMode > KMinExplicit:
		return cfgErr(path+".k-min-mode", "unknown mode %d", q.KMinMode)
	case q.KMinMode == KMinExplicit && q.KMinBytes < 0:
		return cfgErr(path+".k-min-bytes", "negative")
	}
	if q.KMinMode == KMinExplicit {
		if err := CheckKMin(q.KMinBytes, q.KMaxMode, q.KMaxBytes, q.KBaseBytes); err != nil {
			return cfgErr(path+".k-min-bytes", "%v", err)
		}
	}
	switch {
	case q.PMax < 0 || q.PMax > 1:
		return cfgErr(path+".p-max", "%g outside [0,1]", q.PMax)
	case q.VECNPercent < 0 || q.VECNPercent > 100:
		return cfgErr(path+".v-ecn-percent", "%g outside 0..100", q.VECNPercent)
	case q.VGrowthBytesPerSec < 0:
		return cfgErr(path+".v-growth-bytes-per-sec", "negative")
	case q.MeasurementInterval <= 0:
		return cfgErr(path+".measurement-interval", "%v, must be positive", q.MeasurementInterval)
	case q.EMRWindow <= 0:
		return cfgErr(path+".emr-window", "%v, must be positive", q.EMRWindow)
	case q.MinCNPInterval < 0:
		return cfgErr(path+".min-cnp-interval", "negative")
	case q.TriggerPersistence < 0:
		return cfgErr(path+".trigger-persistence", "negative")
	}
	a := &q.Action
	if err := CheckCongestionAction(a.DefaultAction); err != nil {
		return cfgErr(path+".action.default-action", "%v", err)
	}
	switch {
	case a.RateReducePercent < 1 || a.RateReducePercent > 100:
		return cfgErr(path+".action.rate-reduce-percent", "%d outside 1..100", a.RateReducePercent)
	case a.PauseDuration < engine.Microsecond || a.PauseDuration > 65535*engine.Microsecond:
		return cfgErr(path+".action.pause-duration", "%v outside 1µs..65535µs (16-bit parameter)", a.PauseDuration)
	case a.PauseLevel < 0 || a.PauseLevel > PauseLevelNever:
		return cfgErr(path+".action.pause-level", "%d outside 0..%d", a.PauseLevel, PauseLevelNever)
	case a.ResumePercent > 100:
		return cfgErr(path+".action.resume-percent", "%d above 100", a.ResumePercent)
	case a.ResumeHold < 0:
		return cfgErr(path+".action.resume-hold", "negative")
	case a.MaxFlowsPerTrigger < 1:
		return cfgErr(path+".action.max-flows-per-trigger", "%d, need at least 1", a.MaxFlowsPerTrigger)
	case a.MinSharePercent < 0 || a.MinSharePercent > 100:
		return cfgErr(path+".action.min-share-percent", "%d outside 0..100", a.MinSharePercent)
	}
	return nil
}

// interfaceFor returns the configuration of the named port.
func (c *Config) interfaceFor(name string) *InterfaceConfig {
	if ic, ok := c.Interfaces[name]; ok {
		return &ic
	}
	return &c.Interface
}

// queueFor returns the configuration of priority prio.
func (ic *InterfaceConfig) queueFor(prio int) QueueConfig {
	if qc, ok := ic.Queues[uint8(prio)]; ok {
		return qc
	}
	return ic.Queue
}

// clone returns a deep copy (maps and slices are not shared with the
// caller, so a later change to the caller's value cannot reach the node).
func (c Config) clone() Config {
	c.RoCEv2Receivers = slices.Clone(c.RoCEv2Receivers)
	c.Collaborative.Peers = slices.Clone(c.Collaborative.Peers)
	if c.Interfaces != nil {
		m := make(map[string]InterfaceConfig, len(c.Interfaces))
		for k, v := range c.Interfaces {
			v.Queues = cloneQueues(v.Queues)
			m[k] = v
		}
		c.Interfaces = m
	}
	c.Interface.Queues = cloneQueues(c.Interface.Queues)
	return c
}

func cloneQueues(q map[uint8]QueueConfig) map[uint8]QueueConfig {
	if q == nil {
		return nil
	}
	m := make(map[uint8]QueueConfig, len(q))
	for k, v := range q {
		m[k] = v
	}
	return m
}
