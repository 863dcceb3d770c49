package scenario

import (
	"net/netip"
	"time"
)

// Scenario is a loaded, validated scenario. Lists keep the order of the
// file, except Flows (sorted by start time, then name) and Events (sorted by
// time, file order among equal times), which is the order a runner needs.
type Scenario struct {
	// File is the path the scenario was read from ("" when parsed from
	// bytes without a name).
	File        string
	Name        string
	Description string

	Seed           int64
	Duration       time.Duration
	SampleInterval time.Duration

	Hosts    []Host
	Switches []Switch
	Links    []Link
	// Fabrics are the generated data centres (topology.fabrics); their
	// nodes and links are in Hosts, Switches and Links too.
	Fabrics []Fabric
	// ECMP says how switches choose among equal-cost next hops.
	ECMP ECMP
	// Routes holds one path for every (src, dst) pair that a flow uses, in
	// the order of first use; explicit routes from the file win over the
	// computed shortest paths. With ECMP it is the path of the lowest
	// ports (netsim.Switch.Route); a flow's own is Flow.Path.
	Routes []Route

	Mechanism Mechanism
	DCQCN     DCQCN
	NIC       NIC

	Flows  []Flow
	Events []Event
	// Tuner, when set, runs the tuner in closed loop (tuner.go).
	Tuner *Tuner
}

// Host is an end host with one RNIC.
type Host struct {
	Name string
	IP   netip.Addr
	// Partition names the part of the network the parallel engine runs
	// the host in (its own partition key, or its switch's); "" when the
	// file cuts nothing. See Scenario.Partitions.
	Partition string
	// Fabric is the generated fabric the host belongs to ("": written by
	// hand).
	Fabric string
}

// ECMP is per-flow load balancing over equal-cost next hops: a switch
// with several next hops of the fewest hops towards a destination picks
// one by a seeded hash of the packet's five-tuple (package ecmp), so all
// packets of a flow take one path and flows of one pair spread.
type ECMP struct {
	Enabled bool
	Seed    int64
}

// Switch is a switch; its egress ports are the ends of its links.
type Switch struct {
	Name string
	IP   netip.Addr
	// Partition names the part of the network the parallel engine runs
	// the switch in; "" for the first one named (or when none is).
	Partition string
	// Queue is the effective queue configuration of every egress port of
	// the switch: the file's top-level queue defaults overlaid with the
	// switch's own queue block.
	Queue Queue
	// CongestionAware is true for the nodes named in mechanism.nodes: they
	// run the mechanism under test (Long-haul CNP, Fast CNP, FCN, Rate
	// Advice) on their egress ports.
	CongestionAware bool
	// Fabric and Tier: the generated fabric and tier (core, agg, edge,
	// spine, leaf; "" for a border router) of a generated switch.
	Fabric, Tier string
	// SharedBuffer, when positive, is a buffer shared by the switch's
	// ports with dynamic thresholds (SharedAlpha times the unused shared
	// buffer per port queue).
	SharedBuffer Size
	SharedAlpha  float64
}

// Link is a full-duplex point-to-point link; rate, delay and buffer apply
// to both directions.
type Link struct {
	// Name is the file's name for the link, or "A-B" when it has none;
	// events address links by it.
	Name  string
	A, B  string
	Rate  Rate
	Delay time.Duration // one way, propagation only
	// Buffer is the egress buffer of the port at each end that belongs to
	// a switch; 0 means unlimited. Host NICs are not buffer-limited.
	Buffer Size
	// WAN marks the links of topology.wan.
	WAN bool
}

// Route is the path of a flow from its source host to its destination host,
// both included.
type Route struct {
	Src, Dst string
	Path     []string
	Explicit bool // written in the file rather than computed
}

// Queue is the configuration of a switch egress queue.
type Queue struct {
	ECN ECN
	PFC PFC
}

// ECN is RED-style ECN marking: no marks below KMin, probability rising
// linearly to PMax at KMax, every packet marked above KMax.
type ECN struct {
	Enabled bool
	KMin    Size
	KMax    Size
	PMax    float64
}

// PFC is priority flow control on the ingress side of a switch port: a
// PAUSE is sent upstream when the bytes held for that ingress exceed XOff
// and a RESUME when they fall below XOn.
type PFC struct {
	Enabled bool
	XOff    Size
	XOn     Size
}

// MechanismKind names the congestion-notification mechanism under test.
type MechanismKind string

// The mechanisms of this package (registry.go); a kind of another
// package registers its own name.
const (
	MechanismNone        MechanismKind = "none"
	MechanismDCQCN       MechanismKind = "dcqcn"
	MechanismLongHaulCNP MechanismKind = "long-haul-cnp"
	MechanismFastCNP     MechanismKind = "fast-cnp"
	MechanismFCN         MechanismKind = "fcn"
	MechanismRateAdvice  MechanismKind = "rate-advice"
	// MechanismSwitchCNP is the Data Center Fast CNP white paper's
	// practice: standard CNPs from the switch, delay-based detection.
	MechanismSwitchCNP MechanismKind = "switch-cnp"
)

// Mechanism is the mechanism under test. DCQCN at the end hosts is always
// present except with kind none; the other kinds add congestion-aware
// intermediate nodes (Nodes) on top of it.
type Mechanism struct {
	Kind MechanismKind
	// Nodes are the congestion-aware switches; empty for dcqcn and none.
	Nodes []string
	// Params are the kind's params as its reader returned them (defaults
	// filled in): a LongHaulCNP for long-haul-cnp, a FastCNP for fast-cnp,
	// ..., a value of its own package's type for a kind registered
	// elsewhere; nil for a kind without params (dcqcn, none). A value, not
	// a pointer, so that a copy of a Mechanism is a copy of its params.
	Params any
	// With are further mechanisms on the same network (mechanism.with),
	// each with its own nodes; two blocks share a node only when their
	// kinds can coexist there (CanCoexist). Only the top block has With.
	With []Mechanism
}

// ParamsOf returns m's params as the kind's type P, or the zero P when m
// is of another kind.
func ParamsOf[P any](m Mechanism) P {
	p, _ := m.Params.(P)
	return p
}

// LongHaulCNP returns the params of a long-haul-cnp block (zero for
// another kind).
func (m Mechanism) LongHaulCNP() LongHaulCNP { return ParamsOf[LongHaulCNP](m) }

// FastCNP returns the params of a fast-cnp block (zero for another kind).
func (m Mechanism) FastCNP() FastCNP { return ParamsOf[FastCNP](m) }

// RateAdvice returns the params of a rate-advice block (zero for another
// kind).
func (m Mechanism) RateAdvice() RateAdvice { return ParamsOf[RateAdvice](m) }

// SwitchCNP returns the params of a switch-cnp block (zero for another
// kind).
func (m Mechanism) SwitchCNP() SwitchCNP { return ParamsOf[SwitchCNP](m) }

// FCN returns the params of an fcn block (zero for another kind).
func (m Mechanism) FCN() FCN { return ParamsOf[FCN](m) }

// FCN are the parameters of FCN over WAN tunnels.
type FCN struct {
	// Ingress are the ingress PEs among the block's nodes (default: the
	// first); the others are transit nodes.
	Ingress []string
	// KMax: a node reports above this queue depth; CNPInterval the
	// per-flow gap; Aging the PE's mapping timeout; MaxMappings its size.
	KMax        Size
	CNPInterval time.Duration
	Aging       time.Duration
	MaxMappings int
}

// SwitchCNP are the parameters of the white paper's practice.
type SwitchCNP struct {
	// DSCP of the CNPs.
	DSCP int
	// DelayThreshold: packets forwarded slower are recorded; their delay
	// converted to a depth confirms congestion at BufferShare percent of
	// the available buffer.
	DelayThreshold time.Duration
	BufferShare    int
	// CNPInterval is the per-flow gap; FlowAging the flow table's idle
	// timeout; MaxEntries its capacity (LRU replacement).
	CNPInterval time.Duration
	FlowAging   time.Duration
	MaxEntries  int
}

// RateAdvice are the parameters of SCONE Rate Advice on the nodes and
// the RNICs.
type RateAdvice struct {
	// QueueBased advises the fair share of the egress port to flows no
	// policy matches.
	QueueBased bool
	// PolicyRate, when positive, is one policy for every flow (§4.1).
	PolicyRate Rate
	// Interval is the minimum gap between two messages to one flow (and
	// the window of a flow's activity); DrainInterval the time in which
	// the fair share drains a standing queue; ChangePercent the change of
	// the advice that makes a new message.
	Interval      time.Duration
	DrainInterval time.Duration
	ChangePercent int
	// Capable is "all" (every RNIC announces the capability and applies
	// advice) or "none".
	Capable string
}

// FastCNP are the parameters of draft-xiao-rtgwg-rocev2-fast-cnp on the
// congestion-aware nodes and the RNICs.
type FastCNP struct {
	// KMax: a node sends Fast CNP to the largest flows of a queue deeper
	// than this; KMin (0: KMax / 2) to KMax is the ECN marking range for
	// senders not known to be capable, up to PMax.
	KMax, KMin Size
	PMax       float64
	// CNPInterval is the minimum gap between two Fast CNPs to one flow;
	// PortCNPRate and PortCNPBurst the per-port token bucket (per second).
	CNPInterval  time.Duration
	PortCNPRate  int
	PortCNPBurst int
	// MaxFlows is the number of flows notified per congestion event.
	MaxFlows int
	// IOAM sends the IOAM variant of the option.
	IOAM bool
	// CapableSenders is "all" (every host is known to process Fast CNP:
	// its packets are never marked) or "none"; MarkUnknown marks the
	// packets of senders not known to be capable.
	CapableSenders string
	MarkUnknown    bool
	// RNIC: the hosts process Fast CNP (trusting the nodes' addresses);
	// false: they discard it.
	RNIC bool
	// DSCP of the Fast CNPs.
	DSCP int
	// FlowAging is the flow table's idle timeout.
	FlowAging time.Duration
}

// LongHaulCNP are the parameters of draft-tian-ccwg-long-haul-cnp §5. A
// zero duration marked "derived" is replaced by the runner with the value
// the draft recommends for the port's RTT_est.
type LongHaulCNP struct {
	// K_max = max(KBase, Alpha * R_port * RTT_est / 8) (§5.3.2).
	KBase Size
	Alpha float64
	// KMinFraction gives K_min = KMinFraction * K_max (draft default 0.5).
	KMinFraction float64
	// RTTEst is the configured RTT estimate for every congestion-aware
	// port; 0 means twice the one-way delay of the port's link.
	RTTEst time.Duration
	// VECN is the ECN marking-rate threshold (a fraction of data packets).
	VECN float64
	// VGrowth is the queue growth-rate threshold, in bits per second of
	// queue growth; 0 disables the trigger.
	VGrowth Rate
	// GrowthInterval is the measurement interval of QGR and EMR.
	GrowthInterval time.Duration
	// TriggerPersistence is how long a second-level condition must hold
	// before the node generates; 0 (the default, the draft's §5.4) at
	// once. A positive value is a deviation a scenario states.
	TriggerPersistence time.Duration
	// CNPInterval is the minimum time between Long-haul CNPs for one flow;
	// 0 means RTT_est (derived, §5.5).
	CNPInterval time.Duration
	// PortCNPInterval is the minimum time between Long-haul CNPs on one
	// egress port (a token bucket of one); 0 keeps the node's own limit
	// (lhcnp.DefaultInterfaceConfig: 10000 per second, burst 100), since
	// §9 requires a per-port limit.
	PortCNPInterval time.Duration
	// ReducePercent is the Parameter of a Rate Reduce action.
	ReducePercent int
	// PauseDuration is the Parameter of a Pause action (sent when the queue
	// exceeds PauseFactor * K_max); 0 disables Pause.
	PauseDuration time.Duration
	PauseFactor   float64
	// ResumePercent is the Parameter of a Resume action; ResumeAfter is how
	// long the queue must stay below K_min first (0: RTT_est, derived).
	ResumePercent int
	ResumeAfter   time.Duration
	// RecoveryInterval is the source's per-QP recovery timer (0: 2 *
	// RTT_est, derived) and RecoveryStep its additive increase, in bits
	// per second added to the QP's rate at every recovery tick (RTT_est
	// / 10) until its normal rate is back. RecoveryStepPercent, when
	// above 0, replaces RecoveryStep with that share of the QP's normal
	// rate (the node's own reaction point's unit and default, 5 %): a
	// step of the same shape at every line rate.
	RecoveryInterval    time.Duration
	RecoveryStep        Rate
	RecoveryStepPercent int
	// FlowAging removes flow-table entries idle for this long.
	FlowAging time.Duration
	// Collaborative enables downstream deferral (§5.7) over an observation
	// window (0: RTT_est, derived).
	Collaborative     bool
	ObservationWindow time.Duration
	// UpstreamFirst is §5.7's upstream priority: a node waits for a
	// congestion-aware node between a flow's source and itself before
	// its first response (default true).
	UpstreamFirst bool
	// UpstreamFirstMarked: with UpstreamFirst, the wait only for a flow
	// whose packets arrive CE-marked, a congested node's sign upstream
	// (lhcnp.CollaborativeConfig.UpstreamFirstMarked; default false).
	UpstreamFirstMarked bool
	// OneCutPerEpisode: a node does not mark the packets of a flow it
	// cut in the current congestion episode (lhcnp.QueueConfig
	// .OneCutPerEpisode; default false, the draft's marking).
	OneCutPerEpisode bool
	// PerFlowRTT: a node's per-flow interval is each flow's round trip to
	// its source, learnt from its CM exchange (lhcnp.QueueConfig
	// .PerFlowRTT; default false, the draft's one RTT_est or CNPInterval).
	PerFlowRTT bool
	// RepeatResume: a node keeps resuming the flows it slowed while its
	// queue stays below K_min and their rate follows
	// (lhcnp.ActionPolicy.RepeatResume; default false, §5.5.1's one
	// Resume).
	RepeatResume bool
	// ResumeOnDrain: with PerFlowRTT and RepeatResume, a node also
	// resumes the flows it slowed once its queue would drain within their
	// round trip, and resumes unconditionally a flow cut before its rate
	// was measured (lhcnp.ActionPolicy.ResumeOnDrain; default false; an
	// experiment, not part of the options row: docs/longhaul.md).
	ResumeOnDrain bool
	// OverloadCut: at a severe queue (above K_max, or dropping) a node
	// notifies the flows arriving fastest and cuts them by at least the
	// overload's share (lhcnp.QueueConfig.OverloadCut; default false, the
	// draft's selection by queue occupancy and the fixed reduce_percent).
	OverloadCut bool
	// OverloadCutGrowth: with OverloadCut, a growth trigger's notification
	// is sized to the overload too, at any depth
	// (lhcnp.QueueConfig.OverloadCutGrowth; default false).
	OverloadCutGrowth bool
	// EqualCut: with PerFlowRTT, a loop-sized cut is shared with the
	// flows the node cut in the same episode whose cut has not landed,
	// at one level (lhcnp.QueueConfig.EqualCut; default false).
	EqualCut bool
	// OneCutInFlight: with OneCutPerEpisode, a flow's marks are spared
	// only while the node's cut of it is on its way (its per-flow
	// interval since), not the whole episode
	// (lhcnp.QueueConfig.OneCutInFlight; default false).
	OneCutInFlight bool
	// Format is the wire format of the notification: "rocev2" or "icmpv6".
	Format string
}

// DCQCN holds the file's overrides of the DCQCN reaction point (sender)
// and notification point (receiver) at every RNIC. A nil field keeps the
// network model's default (NVIDIA's firmware defaults, see netsim's
// DefaultDCQCN and docs/engine.md); the names follow NVIDIA's parameters.
type DCQCN struct {
	// Profile is the base the other fields override: DCQCNProfileNVIDIA
	// (the default, "") or DCQCNProfilePaper (netsim.PaperDCQCN and
	// PaperNP: the SIGCOMM 2015 parameters and alpha timing).
	Profile                 string
	AlphaPerCNP             *bool          // the paper's alpha timing (see netsim.DCQCNConfig)
	Enabled                 *bool          // DCQCN rate control on/off
	G                       *int           // dce_tcp_g, alpha gain in 1/1024
	AlphaUpdatePeriod       *time.Duration // dce_tcp_rtt
	InitialAlpha            *int           // initial_alpha_value, 0..1024 (1.0)
	RateOnFirstCNP          *Rate          // rate_to_set_on_first_cnp
	MinDecFacPercent        *int           // rpg_min_dec_fac
	MinRate                 *Rate          // rpg_min_rate
	GD                      *int           // rpg_gd
	RateReduceMonitorPeriod *time.Duration // rate_reduce_monitor_period
	ClampTargetRate         *bool          // clamp_tgt_rate
	ClampTargetAfterTimeInc *bool          // clamp_tgt_rate_after_time_inc
	TimeReset               *time.Duration // rpg_time_reset
	ByteReset               *Size          // rpg_byte_reset (0 disables)
	Threshold               *int           // rpg_threshold
	MaxRate                 *Rate          // rpg_max_rate (0: line rate)
	RateAI                  *Rate          // rpg_ai_rate
	RateHAI                 *Rate          // rpg_hai_rate
	// Notification point.
	CNPInterval *time.Duration // min_time_between_cnps per QP
	CNPPrio     *int           // cnp_802p_prio
}

// DCQCN profiles: the base parameter set of the dcqcn block.
const (
	DCQCNProfileNVIDIA = "nvidia"
	DCQCNProfilePaper  = "paper"
)

// NIC holds the file's overrides of the RNIC; nil keeps the model default.
type NIC struct {
	MTU             *Size // RDMA payload per packet (IB path MTU), 256B..64KiB
	AckEveryPackets *int  // the sender asks for an ACK every N packets
	// LossRecovery is LossRecoveryNone or LossRecoveryGoBackN; "" keeps
	// the model's default (go-back-n).
	LossRecovery string
	// LocalAckTimeout is go-back-N's QP timeout exponent t (4.096us * 2^t),
	// 1..31; nil keeps the model's default (17, 537ms: rdma_cm's on RoCE).
	LocalAckTimeout *int
}

// Loss recovery of the RNICs (nic.loss_recovery).
const (
	LossRecoveryNone    = "none"      // nothing resent: a receiver acknowledges past a gap
	LossRecoveryGoBackN = "go-back-n" // RC's go back N: NAK, resend, local ACK timeout
)

// Flow is one RDMA flow (one QP pair) between two hosts.
type Flow struct {
	Name     string
	Src, Dst string
	SrcQP    uint32
	DstQP    uint32
	Start    time.Duration
	// Stop is when the sender stops; 0 means it never does.
	Stop time.Duration
	// Size is the flow size; 0 means long-lived.
	Size Size
	// Rate caps the sender, at most the line rate of its NIC; 0 means
	// that line rate.
	Rate Rate
	// Group is the incast or generated-traffic block that created the
	// flow, "" for a flow written out in traffic.flows.
	Group string
	// Path is the flow's data path from Src to Dst, both included: its
	// pair's route, or with ECMP the equal-cost path its five-tuple
	// hashes onto (package ecmp), as the network model forwards it.
	Path []string
}

// LongLived reports whether the flow has no size.
func (f *Flow) LongLived() bool { return f.Size == 0 }

// EventKind names what a timed event changes.
type EventKind string

// The kinds of timed events.
const (
	EventLinkRate  EventKind = "link-rate"  // Target: link; Rate
	EventLinkDelay EventKind = "link-delay" // Target: link; Delay (one way)
	EventRTT       EventKind = "rtt"        // Target: link; Delay (round trip: one way becomes Delay/2)
	EventFlowStart EventKind = "flow-start" // Target: flow
	EventFlowStop  EventKind = "flow-stop"  // Target: flow
)

var eventKinds = []EventKind{EventLinkRate, EventLinkDelay, EventRTT, EventFlowStart, EventFlowStop}

// Event is a change at a point in simulated time.
type Event struct {
	At     time.Duration
	Kind   EventKind
	Target string
	Rate   Rate          // link-rate
	Delay  time.Duration // link-delay (one way), rtt (round trip)
}

// Link returns the link with the given name.
func (s *Scenario) Link(name string) (*Link, bool) {
	for i := range s.Links {
		if s.Links[i].Name == name {
			return &s.Links[i], true
		}
	}
	return nil, false
}

// Flow returns the flow with the given name.
func (s *Scenario) Flow(name string) (*Flow, bool) {
	for i := range s.Flows {
		if s.Flows[i].Name == name {
			return &s.Flows[i], true
		}
	}
	return nil, false
}

// Route returns the path from src to dst, if a flow uses that pair.
func (s *Scenario) Route(src, dst string) ([]string, bool) {
	for _, r := range s.Routes {
		if r.Src == src && r.Dst == dst {
			return r.Path, true
		}
	}
	return nil, false
}

// IsHost reports whether name is a host.
func (s *Scenario) IsHost(name string) bool {
	for _, h := range s.Hosts {
		if h.Name == name {
			return true
		}
	}
	return false
}
