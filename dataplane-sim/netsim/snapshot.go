package netsim

import "github.com/lhcnp/lhcnp/dataplane-sim/engine"

// Snapshot is a copy of the network's observable state at one instant. It
// shares nothing with the live model, so it may be handed to other goroutines
// (publish it with engine.Published from an engine.Sim.Every callback, or take
// it inside engine.Sim.Do).
type Snapshot struct {
	Now    engine.Time
	Events uint64
	Ports  []PortState
	Flows  []FlowState // the flows not retired (Network.RetireFinished)
	Hosts  []HostState
}

// PortState is one port in a Snapshot.
type PortState struct {
	Node           string
	NodeID         NodeID
	Index          int
	Peer           string // peer node name
	RateBitsPerSec int64
	Delay          engine.Time
	QueueBytes     [NumPrio]int64
	TotalBytes     int64
	Paused         [NumPrio]bool // egress held by the peer's PFC
	PauseSent      [NumPrio]bool // this port's ingress has paused the peer
	ECN            [NumPrio]ECNConfig
	PortStats
}

// FlowState is one flow in a Snapshot.
type FlowState struct {
	ID                   FlowID
	Name                 string
	Src, Dst             string
	SrcQPN, DstQPN       uint32
	RateBitsPerSec       int64   // DCQCN current rate Rc
	TargetRateBitsPerSec int64   // DCQCN target rate Rt
	Alpha                float64 // 0..1
	SentBytes            int64
	AckedBytes           int64
	RxBytes              int64
	RxPackets            int64
	MarkedRx             int64
	LostPackets          int64
	CNPTx                int64 // by the notification point
	CNPRx                int64 // processed by DCQCN
	RateCuts             int64
	Done                 bool
	FinishedAt           engine.Time
	Active               bool  // connected and not done (QP.Active)
	AdminStopped         bool  // QP.AdminStop
	MaxRateBitsPerSec    int64 // the bound on RateBitsPerSec now (QP.MaxRateBitsPerSec)
	CeilingBitsPerSec    int64 // QP.SetCeiling, 0: none
}

// HostState is one RNIC in a Snapshot.
type HostState struct {
	Node string
	HostStats
	Retired RetiredStats // the summed counters of the host's retired flows
}

// Snapshot copies the current state. Call it from the engine goroutine.
func (n *Network) Snapshot() *Snapshot {
	s := &Snapshot{Now: n.Now(), Events: n.events(),
		Ports: make([]PortState, len(n.ports)), Flows: make([]FlowState, 0, len(n.flows)),
		Hosts: make([]HostState, len(n.hosts))}
	for i, pt := range n.ports {
		s.Ports[i] = PortState{
			Node: pt.node.Name(), NodeID: pt.node.ID(), Index: pt.index, Peer: pt.Peer().node.Name(),
			RateBitsPerSec: pt.out.rateBitsPerSec, Delay: pt.out.delay,
			QueueBytes: pt.qBytes, TotalBytes: pt.totalBytes,
			Paused: pt.paused, PauseSent: pt.pauseSent, ECN: pt.cfg.ECN, PortStats: pt.Stats(),
		}
	}
	for _, f := range n.flows {
		q, r := f.Sender, f.Receiver
		if q == nil {
			continue // retired
		}
		s.Flows = append(s.Flows, FlowState{
			ID: f.ID, Name: f.Name, Src: q.host.name, Dst: r.host.name, SrcQPN: q.QPN, DstQPN: r.QPN,
			RateBitsPerSec: q.dc.rc, TargetRateBitsPerSec: q.dc.rt, Alpha: q.Alpha(),
			SentBytes: q.sentBytes, AckedBytes: q.ackedBytes, RxBytes: r.rxBytes, RxPackets: r.rxPackets,
			MarkedRx: r.markedRx, LostPackets: r.lostPackets, CNPTx: r.cnpTx, CNPRx: q.dc.cnpRx,
			RateCuts: q.dc.rateCuts, Done: q.finished, FinishedAt: q.finishedAt,
			Active: q.Active(), AdminStopped: q.stopped, MaxRateBitsPerSec: q.maxRate(), CeilingBitsPerSec: q.ceilingBitsPerSec,
		})
	}
	for i, h := range n.hosts {
		s.Hosts[i] = HostState{Node: h.name, HostStats: h.stats, Retired: h.retired}
	}
	return s
}
