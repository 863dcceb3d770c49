package netsim

import (
	"fmt"
	"net/netip"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// Wire carries one direction of a cable to another process (Link.SetWire):
// the process at the far end runs the receiving node. Send is called on
// the engine goroutine when the last bit of p leaves the transmitter, at
// simulated time txEnd; the wire owns p from then on and must free it
// (Network.FreePacket) before it returns. It must not block the engine:
// a wire that cannot keep up loses the packet and counts it. The far
// end's process hands the packet to its copy of l with Link.Arrive.
type Wire interface {
	Send(l *Link, p *Packet, txEnd engine.Time)
}

// Node is anything a link can deliver packets to: a Switch or a Host. A
// node that runs in another process stays in the Network as a copy that
// never receives anything: the links towards it carry a Wire. The network calls
// Receive when the last bit of p arrives on in, one of the node's ports; the
// node owns p from then on (pass it on or Network.FreePacket it).
type Node interface {
	ID() NodeID
	Name() string
	Addr() netip.Addr
	Ports() []*Port
	Receive(p *Packet, in *Port)
}

// PortObserver watches a switch egress port. It is the hook of the
// congestion-aware node of draft-tian-ccwg-long-haul-cnp §5: flow-table
// learning (OnEnqueue sees every data packet with its BTH and SrcQP, and
// every CM MAD to QP1 with its whole frame in Packet.Frame), the
// QD/EMR/QGR monitors (queue bytes, marks, drops with their times) and the
// triggers. Calls happen inside the simulation, in event order; the observer
// may read the port (QueueBytes, Config), change it (SetECN, ...), schedule
// its own timers on the engine and send packets with Switch.Send, but must not
// keep p after the call returns.
//
// qBytes is the depth of p's priority queue right after the event.
type PortObserver interface {
	OnEnqueue(pt *Port, p *Packet, qBytes int64)
	OnDequeue(pt *Port, p *Packet, qBytes int64)
	OnMark(pt *Port, p *Packet, qBytes int64)
	OnDrop(pt *Port, p *Packet, qBytes int64)
}

// ControlHandler is the hook of a reaction point beyond DCQCN: a Long-haul CNP
// reaction point plugs in here. The host calls it for every CNP (before
// DCQCN sees it) and for every packet the RNIC has no default processing for
// (KindOther, unknown opcodes). Returning true consumes the packet (the host
// frees it after the call; do not keep it); false lets the default run
// (a CNP then goes to DCQCN, anything else is counted and dropped).
//
// The handler acts on queue pairs through Host.QP and the QP methods
// (Active, SetRate, SetCeiling, PauseUntil, ApplyCNP, ...). A packet that
// carries its frame (Packet.Frame) can be decoded whole with wire.Decoder.
type ControlHandler interface {
	HandleControl(h *Host, p *Packet) bool
}

// LinkObserver is told when a link's rate or delay changes (Link.AddObserver):
// a BDP-adaptive K_max is recomputed at once instead of at the next packet.
// It runs inside the simulation, right after the change, on the engine
// goroutine, and may read and reconfigure the model.
type LinkObserver interface {
	OnLinkChange(l *Link)
}

// MarkFilter is an optional interface of a PortObserver: a port whose
// observer implements it asks before every CE mark its ECN configuration
// calls for, and leaves the packet unmarked (no mark counted, no OnMark)
// when AllowMark returns false. Fast CNP uses it: a switch that sends Fast
// CNP to a sender known to process it MUST NOT also mark that sender's
// packets (draft-xiao-rtgwg-rocev2-fast-cnp §4). It runs inside the
// simulation and must not keep p.
type MarkFilter interface {
	AllowMark(pt *Port, p *Packet) bool
}

// LocalHandler receives the packets addressed to a switch itself
// (Switch.SetLocalHandler): the FCN messages a congested WAN node sends to
// the ingress PE. Without one such packets are dropped as unroutable. It
// runs inside the simulation; the switch frees p after the call.
type LocalHandler interface {
	HandleLocal(s *Switch, p *Packet)
}

// Forwarder sees every packet a switch forwards or originates, after the
// route lookup and before the egress port queues it (Switch.SetForwarder):
// in is the port it arrived on, nil for a packet the switch originates
// (Switch.Send); out is the egress port. It may rewrite p, size included,
// as a tunnel's ingress encapsulates (Network.SetFrame and SizeBytes), and
// returns false to drop it: the switch counts it in SwitchStats.FilterDrops
// and frees it, and no later stage sees it. It runs inside the simulation
// for every packet of the switch, so it must be cheap, and must not keep p.
type Forwarder interface {
	Forward(s *Switch, p *Packet, in, out *Port) bool
}

// ForwardStage is a Forwarder's place on a switch. A switch has one
// Forwarder per stage and runs them in stage order, so the order of two
// functions on one switch is fixed by what they do, not by which was
// installed first.
type ForwardStage uint8

// Forward stages, in the order they run.
const (
	// StageFilter sees the packet as it arrived, before any rewrite, and
	// drops what must not pass: Fast CNP's border filtering
	// (draft-xiao-rtgwg-rocev2-fast-cnp §5: a deployment MUST drop Fast
	// CNP entering or leaving the domain). It comes first so that it
	// judges the packet the sender sent, not an encapsulation of it, and
	// so that nothing it drops was rewritten (and counted as such).
	StageFilter ForwardStage = iota
	// StageRewrite changes what passed the filter: FCN's ingress PE
	// encapsulates the packets it sends into the WAN tunnel.
	StageRewrite
	// NumForwardStages is the number of stages.
	NumForwardStages
)

// String names the stage.
func (st ForwardStage) String() string {
	switch st {
	case StageFilter:
		return "filter"
	case StageRewrite:
		return "rewrite"
	}
	return fmt.Sprintf("stage(%d)", uint8(st))
}
