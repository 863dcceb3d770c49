package lhcnp

import (
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// EventKind says what an Event reports.
type EventKind uint8

// Event kinds.
const (
	EventCNPSent     EventKind = iota // a Long-haul CNP left the node
	EventFlowLearned                  // a flow-table entry was created
	EventFlowAged                     // an entry was removed by the idle timeout
	EventFlowEvicted                  // an entry was replaced (table full) or shrunk away
	EventFlowRemoved                  // an entry was removed by a CM disconnect (DREQ)
	EventDeferral                     // the node started deferring a flow to an upstream node
	EventEscalation                   // the node sent an escalated notification
)

func (k EventKind) String() string {
	switch k {
	case EventCNPSent:
		return "cnp-sent"
	case EventFlowLearned:
		return "flow-learned"
	case EventFlowAged:
		return "flow-aged"
	case EventFlowEvicted:
		return "flow-evicted"
	case EventFlowRemoved:
		return "flow-removed"
	case EventDeferral:
		return "deferral"
	case EventEscalation:
		return "escalation"
	}
	return "event"
}

// Event is one entry of the node's event stream (the collector's events
// table). Fields that do not apply to the kind are zero.
type Event struct {
	Kind EventKind
	Time engine.Time
	Node string // switch name
	// Port and Queue are the egress of the congested queue (CNP, deferral,
	// escalation).
	Port    string
	Queue   uint8
	Flow    FlowKey
	Learned LearnSource
	// The notification (EventCNPSent, EventEscalation).
	Format      Format
	Action      wire.Action
	Parameter   uint16
	CongLevel   uint8
	MetricType  wire.MetricType
	MetricValue uint32
	Trigger     Trigger
	Escalated   bool
	// Upstream marks a deferral that is §5.7's upstream priority (a
	// congestion-aware node lies between the flow's source and this one)
	// rather than an observed fall of the flow's arrival rate.
	Upstream bool
}

// State is a snapshot of the node: everything the gNMI target publishes.
type State struct {
	Time    engine.Time
	Node    string
	Enabled bool
	Ports   []PortState
	// FlowTable holds the counters and, in key order of activity (most
	// recent first), the entries.
	FlowTable     FlowTableState
	Collaborative CollaborativeState
	Counters      NodeCounters
}

// PortState is one egress port.
type PortState struct {
	Name               string
	Enabled            bool
	PortRateBitsPerSec int64 // R_port in use
	RTTSource          RTTSource
	RTTEst             engine.Time // RTT_est in use
	RTTUpdates         int64
	RTTUpdatedAt       engine.Time
	Counters           PortCounters
	// From the port model. BufferBytes is the port's egress buffer,
	// shared by its queues (0: not limited).
	PFCPausesSent int64
	Drops         int64
	// LinkDownDrops are the packets the port lost because its link was
	// down (netsim.PortStats.DownDropPackets); a queue's Drops count its
	// buffer overflows.
	LinkDownDrops int64
	BufferBytes   int64
	Queues        [netsim.NumPrio]QueueState
}

// QueueState is one egress queue.
type QueueState struct {
	ID                   uint8
	Enabled              bool
	KMaxBytes, KMinBytes int64 // effective thresholds
	MinCNPInterval       engine.Time
	ResumeHold           engine.Time
	QueueBytes           int64 // QD now
	// PeakQueueBytes is the highest QD over the last second of the node's
	// time (between 1 and 1.1 s: peak.go), at least QD now: the YANG
	// model's peak-queue-depth.
	PeakQueueBytes         int64
	ECNMarkingPercent      float64 // EMR, last window
	QueueGrowthBytesPerSec int64   // QGR, bytes per second, last interval
	CongLevel              uint8
	ECNMarkingActive       bool // the node marks the queue and QD is above K_min
	// QDAboveKMax, EMRAboveVECN and QGRAboveVGrowth are §5.4's
	// conditions as they hold at the snapshot (QD, EMR and QGR now).
	QDAboveKMax     bool
	EMRAboveVECN    bool
	QGRAboveVGrowth bool
	Flows           int // flows egressing by this queue
	LastCNP         LastCNP
	Counters        QueueCounters
	// PFCPauseFrames are the PFC PAUSE frames the port sent upstream for
	// this queue's priority, and TxPackets and TxBytes the frames sent
	// from this queue (from the port model; Counters counts data packets
	// enqueued).
	PFCPauseFrames     int64
	TxPackets, TxBytes int64
}

// FlowTableState is the flow table.
type FlowTableState struct {
	Entries  int
	Counters FlowTableCounters
	Flows    []FlowState
}

// FlowState is one flow-table entry.
type FlowState struct {
	Key                   FlowKey
	Learned               LearnSource
	EgressPort            string // "" until a data packet was seen
	EgressQueue           uint8
	FirstSeen, LastSeen   engine.Time
	Packets, Bytes        int64
	QueuedBytes           int64
	ArrivalRateBitsPerSec int64
	LastCNPTime           engine.Time // 0: never
	Notifications         int64
	Deferring             bool
	AwaitingResume        bool
	// SourceRTT is the node's round trip to the flow's source, learnt
	// from its CM exchange or, with PerFlowRTT and no exchange seen, from
	// how soon the flow's rate answered the node's cut
	// (SourceRTTFromRate); 0: not learnt. PerFlowRTT uses it.
	SourceRTT         engine.Time
	SourceRTTFromRate bool
}

// CollaborativeState is the state of collaborative suppression.
type CollaborativeState struct {
	Enabled bool
	// ObservationWindow is the configured window, or the largest RTT_est
	// of the ports when it derives from RTT_est.
	ObservationWindow engine.Time
	DeferringFlows    int
	Deferrals         int64
	Escalations       int64
}

// State returns a snapshot. It is pure: reading it changes nothing the
// node decides with (no aging sweep, no rolled rate window), so a node
// polled every microsecond decides exactly as one never polled. Entries
// idle for longer than the idle timeout, which the next aging sweep will
// remove, are left out. Flows are included with withFlows (a table of
// 65536 entries is a few megabytes; the per-queue counters are cheap).
func (n *Node) State(withFlows bool) State {
	now := n.sim.Now()
	s := State{Time: now, Node: n.sw.Name(), Enabled: n.cfg.Enabled, Counters: n.counters}
	s.Ports = make([]PortState, len(n.ports))
	var win engine.Time
	for i, ps := range n.ports {
		st := n.sw.Ports()[ps.idx].Stats()
		p := PortState{Name: ps.name, Enabled: ps.ic.Enabled, PortRateBitsPerSec: ps.rateBitsPerSec, RTTSource: ps.ic.RTTSource,
			RTTEst: ps.rtt, RTTUpdates: ps.rttUpdates, RTTUpdatedAt: ps.rttUpdateAt, Counters: ps.counters,
			PFCPausesSent: st.PFCPauseTx, Drops: st.DropPackets, LinkDownDrops: st.DownDropPackets,
			BufferBytes: ps.pt.Config().BufferBytes}
		win = max(win, n.obsWindow(ps))
		for prio := range netsim.NumPrio {
			q := &ps.queues[prio]
			qd, emr, qgr := ps.pt.QueueBytes(prio), q.emrAt(now), q.qgrAt(now)
			// §5.4's conditions as they hold now, from the snapshot's QD,
			// EMR and QGR: the node's own flags are updated at an enqueue
			// only, and after the last packet they kept the busy queue's
			// values (a queue idle for minutes read QD above K_max).
			qdAbove, emrAbove, qgrAbove := q.conditions(qd, emr, qgr)
			p.Queues[prio] = QueueState{
				ID: uint8(prio), Enabled: q.cfg.Enabled, KMaxBytes: q.kmax, KMinBytes: q.kmin,
				MinCNPInterval: q.minInterval, ResumeHold: q.resumeHold,
				QueueBytes: qd, PeakQueueBytes: max(q.peak.at(now), qd),
				ECNMarkingPercent: emr, QueueGrowthBytesPerSec: qgr, CongLevel: levelQD(qd, q.kmin, q.kmax),
				ECNMarkingActive: n.marks(ps, q) && qd > q.kmin, QDAboveKMax: qdAbove, EMRAboveVECN: emrAbove,
				QGRAboveVGrowth: qgrAbove, Flows: len(q.flows), LastCNP: q.last, Counters: q.counters,
				PFCPauseFrames: st.PFCPauseTxPrio[prio], TxPackets: st.TxPrioPackets[prio], TxBytes: st.TxPrioBytes[prio],
			}
			s.Collaborative.Deferrals += q.counters.Deferrals
			s.Collaborative.Escalations += q.counters.Escalations
		}
		s.Ports[i] = p
	}
	s.Collaborative.Enabled = n.cfg.Collaborative.Enabled
	s.Collaborative.ObservationWindow = win
	s.FlowTable.Counters = n.ft.counters
	// The activity list is ordered by last packet: the first idle entry
	// ends the live ones.
	for e := n.ft.lru.head; e != nil && !n.idle(e, now); e = e.nextActive() {
		s.FlowTable.Entries++
		if n.deferringNow(e, now) {
			s.Collaborative.DeferringFlows++
		}
	}
	if withFlows {
		s.FlowTable.Flows = make([]FlowState, 0, s.FlowTable.Entries)
		for e := n.ft.lru.head; e != nil && !n.idle(e, now); e = e.nextActive() {
			s.FlowTable.Flows = append(s.FlowTable.Flows, n.flowState(e, now))
		}
	}
	return s
}

// idle reports whether e has outlived the idle timeout (the next aging
// sweep removes it).
func (n *Node) idle(e *flowEntry, now engine.Time) bool {
	t := n.cfg.FlowTable.IdleTimeout
	return t > 0 && now-e.lastSeen >= t
}

func (n *Node) flowState(e *flowEntry, now engine.Time) FlowState {
	f := FlowState{Key: e.key, Learned: e.from, FirstSeen: e.firstSeen, LastSeen: e.lastSeen,
		Packets: e.packets, Bytes: e.bytes, QueuedBytes: e.queued, Notifications: e.notifications,
		Deferring: n.deferringNow(e, now), AwaitingResume: e.needResume, SourceRTT: e.srcRTT,
		SourceRTTFromRate: e.rttFromRate}
	if e.hasCNP {
		f.LastCNPTime = e.lastCNP
	}
	if e.port >= 0 {
		ps := n.ports[e.port]
		f.EgressPort, f.EgressQueue = ps.name, e.prio
		f.ArrivalRateBitsPerSec = e.rateAt(now, ps.queues[e.prio].cfg.MeasurementInterval)
	}
	return f
}

// Flow returns the state of one entry; like State it changes nothing.
func (n *Node) Flow(k FlowKey) (FlowState, bool) {
	e := n.ft.m[k]
	if e == nil || n.idle(e, n.sim.Now()) {
		return FlowState{}, false
	}
	return n.flowState(e, n.sim.Now()), true
}
