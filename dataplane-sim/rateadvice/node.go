package rateadvice

import (
	"fmt"
	"net/netip"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// Basis says where an advised rate came from.
type Basis uint8

// Bases.
const (
	BasisQueue  Basis = iota // the fair share of the egress queue (§4.2)
	BasisPolicy              // a configured policy (§4.1)
)

func (b Basis) String() string {
	if b == BasisPolicy {
		return "policy"
	}
	return "queue"
}

// Counters are the node's counters (YANG /lhcnp/rate-advice/state).
type Counters struct {
	// Sent messages, by basis.
	Sent, PolicyAdvice, QueueAdvice int64
	// NotCapable: data packets of flows that did not announce the
	// capability (no advice for them).
	NotCapable int64
	// NoRoute, EncodeErrors: messages that could not leave.
	NoRoute, EncodeErrors int64
}

// FlowAdvice is one flow's advice (YANG /lhcnp/rate-advice/flows).
type FlowAdvice struct {
	Src, Dst     netip.Addr
	SrcQP, DstQP uint32
	Port         string
	RateMbps     uint32
	Basis        Basis
	Policy       string
	Sent         int64
	LastSent     engine.Time
}

// PortSent counts the messages sent for the flows through one egress port,
// per queue (the flows' priority): YANG .../queues/queue/state/counters/
// rate-advice-sent. The counts only grow; a sum of the per-flow counts
// (FlowAdvice.Sent) would fall when idle flows are forgotten.
type PortSent struct {
	Port   string
	Queues [netsim.NumPrio]int64
}

// State is a snapshot of the node.
type State struct {
	Config   Config
	Counters Counters
	Flows    []FlowAdvice
	// Ports: every port of the switch, in its order.
	Ports []PortSent
}

type flowKey struct {
	src, dst netsim.NodeID
	dstQP    uint32
}

type flowState struct {
	key      flowKey
	adv      FlowAdvice
	srcNode  netsim.NodeID
	port     *portState
	prio     uint8 // the queue of the flow's last packet on port
	lastSeen engine.Time
	active   bool
	hasSent  bool
}

type portState struct {
	pt     *netsim.Port
	active int                   // flows seen within MinAdviceInterval
	sent   [netsim.NumPrio]int64 // messages sent for its flows, by queue
}

// Node is the Rate Advice function of one switch: a netsim.PortObserver.
type Node struct {
	net      *netsim.Network
	sim      *engine.Sim
	sw       *netsim.Switch
	cfg      Config
	policies []Policy
	ports    map[*netsim.Port]*portState
	portList []*portState // in the switch's port order
	flows    map[flowKey]*flowState
	order    []*flowState // creation order, for sweeps and snapshots
	buf      [netsim.FrameCap]byte
	counters Counters
	sweepGen uint64
	// holding: between Hold and Settle, the sweep stays armed for
	// heldInterval, whatever apply is given.
	holding      bool
	heldInterval engine.Time
	onSent       func(FlowAdvice)
}

// OnSent calls f, on the engine goroutine, for every message that left.
func (n *Node) OnSent(f func(FlowAdvice)) { n.onSent = f }

// New returns a node for sw with cfg; install it as the ports' observer
// (sw.SetObserver, or beside another mechanism's observer).
func New(net *netsim.Network, sw *netsim.Switch, cfg Config) (*Node, error) {
	return newNode(net, sw, cfg, false)
}

// newNode is New; held, the node is created held (Hold) and its first
// sweep armed by Settle: a node dropped before (Function.Remove) leaves
// no event pending in the engine.
func newNode(net *netsim.Network, sw *netsim.Switch, cfg Config, held bool) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("rateadvice: switch %s: %w", sw.Name(), err)
	}
	n := &Node{net: net, sim: sw.Sim(), sw: sw, ports: map[*netsim.Port]*portState{}, flows: map[flowKey]*flowState{}, holding: held}
	for _, pt := range sw.Ports() {
		ps := &portState{pt: pt}
		n.ports[pt] = ps
		n.portList = append(n.portList, ps)
	}
	n.apply(cfg)
	return n, nil
}

// apply makes cfg the running configuration. The sweep is armed the
// first time and re-armed only when its period changes: a configuration
// that keeps MinAdviceInterval (the same one applied again, or one that
// changes a policy) keeps the sweeps where they fall, and the simulation
// as it would be without it. While held (Hold) the re-arming waits for
// Settle.
func (n *Node) apply(cfg Config) {
	armed := n.cfg.MinAdviceInterval
	n.cfg = cfg
	n.policies = cfg.sorted()
	if !n.holding {
		n.arm(armed)
	}
}

// arm arms the sweep the first time, or re-arms it when the running
// period is not armed, the one it was armed for.
func (n *Node) arm(armed engine.Time) {
	if n.sweepGen == 0 || n.cfg.MinAdviceInterval != armed {
		n.sweepGen++
		n.sim.AtFunc(n.sim.Now()+n.cfg.MinAdviceInterval, n.sweeper(n.sweepGen))
	}
}

// Hold defers the sweep's re-arming by ApplyConfig until Settle: a
// configuration applied and then the one before again (a Set set back)
// leaves the sweep where it falls. Nothing may run in between.
func (n *Node) Hold() {
	if !n.holding {
		n.holding, n.heldInterval = true, n.cfg.MinAdviceInterval
	}
}

// Settle ends Hold: the sweep is armed if it never was (a node created
// held), else re-armed, once, if the running period is not the one at
// Hold.
func (n *Node) Settle() {
	if n.holding {
		n.holding = false
		n.arm(n.heldInterval)
	}
}

// ApplyConfig validates cfg and, if valid, makes it the running one.
func (n *Node) ApplyConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("rateadvice: switch %s: %w", n.sw.Name(), err)
	}
	n.apply(cfg)
	return nil
}

// Config returns the running configuration.
func (n *Node) Config() Config { return n.cfg }

// Counters returns the counters.
func (n *Node) Counters() Counters { return n.counters }

// Switch returns the switch.
func (n *Node) Switch() *netsim.Switch { return n.sw }

// State returns a snapshot: counters and the flows' advice, in the order
// the node first saw them. It changes nothing.
func (n *Node) State() State {
	s := State{Config: n.cfg, Counters: n.counters}
	for _, f := range n.order {
		s.Flows = append(s.Flows, f.adv)
	}
	for _, ps := range n.portList {
		s.Ports = append(s.Ports, PortSent{Port: ps.pt.Name(), Queues: ps.sent})
	}
	return s
}

// sweeper ends the activity of flows idle for a window and forgets those
// idle past IdleTimeout, every MinAdviceInterval.
func (n *Node) sweeper(gen uint64) func() {
	return func() {
		if gen != n.sweepGen {
			return
		}
		now := n.sim.Now()
		kept := n.order[:0]
		for _, f := range n.order {
			if f.active && now-f.lastSeen >= n.cfg.MinAdviceInterval {
				f.active = false
				f.port.active--
			}
			if now-f.lastSeen >= n.cfg.IdleTimeout {
				if f.active {
					f.active = false
					f.port.active--
				}
				delete(n.flows, f.key)
				continue
			}
			kept = append(kept, f)
		}
		clear(n.order[len(kept):])
		n.order = kept
		n.sim.AtFunc(now+n.cfg.MinAdviceInterval, n.sweeper(gen))
	}
}

// advice returns the rate for a flow: the first matching policy, else the
// fair share of its port when QueueBased; ok false when neither applies.
func (n *Node) advice(f *flowState, qBytes int64) (mbps uint32, b Basis, policy string, ok bool) {
	for i := range n.policies {
		p := &n.policies[i]
		if p.match(f.adv.Src, f.adv.Dst, f.adv.DstQP) {
			return p.RateMbps, BasisPolicy, p.Name, true
		}
	}
	if !n.cfg.QueueBased {
		return 0, BasisQueue, "", false
	}
	rate := f.port.pt.RateBitsPerSec()
	drain := qBytes * 8 * int64(engine.Second) / int64(n.cfg.DrainInterval)
	share := max(rate-drain, rate/2) / int64(max(1, f.port.active))
	return uint32(max(1, share/1_000_000)), BasisQueue, "", true
}

// OnEnqueue implements netsim.PortObserver: a data packet of a capable
// flow refreshes the flow and may bring it an advice.
func (n *Node) OnEnqueue(pt *netsim.Port, p *netsim.Packet, qBytes int64) {
	if !n.cfg.Enabled || p.Kind != netsim.KindRoCE || p.HdrLen < wire.BTHLen {
		return
	}
	op := p.Opcode()
	if op >= 0x20 || p.DestQP() == wire.GSIQP || op == wire.OpRCAck {
		return // RC data opcodes are 0x00-0x1F (ACKs carry no advice)
	}
	ps := n.ports[pt]
	if ps == nil {
		return
	}
	if (p.Hdr[8]&0x7F)&CapabilityBit == 0 {
		n.counters.NotCapable++
		return
	}
	now := n.sim.Now()
	k := flowKey{p.Src, p.Dst, p.DestQP()}
	f := n.flows[k]
	if f == nil {
		src, dst := n.net.Node(p.Src), n.net.Node(p.Dst)
		if src == nil || dst == nil {
			return
		}
		f = &flowState{key: k, srcNode: p.Src, port: ps, adv: FlowAdvice{Src: src.Addr(), Dst: dst.Addr(),
			SrcQP: p.SrcQP, DstQP: p.DestQP(), Port: pt.Name()}}
		n.flows[k] = f
		n.order = append(n.order, f)
	}
	f.lastSeen = now
	f.prio = p.Prio
	if !f.active {
		f.active = true
		ps.active++
	}
	if f.hasSent && now-f.adv.LastSent < n.cfg.MinAdviceInterval {
		return
	}
	rate, basis, policy, ok := n.advice(f, qBytes)
	if !ok {
		return
	}
	if f.hasSent {
		d := int64(rate) - int64(f.adv.RateMbps)
		if d < 0 {
			d = -d
		}
		if d*100 < int64(f.adv.RateMbps)*int64(n.cfg.ChangePercent) {
			return
		}
	}
	if !n.send(f, rate) {
		return
	}
	f.hasSent = true
	f.adv.RateMbps, f.adv.Basis, f.adv.Policy, f.adv.LastSent = rate, basis, policy, now
	f.adv.Sent++
	f.port.sent[f.prio]++
	n.counters.Sent++
	if n.onSent != nil {
		n.onSent(f.adv)
	}
	if basis == BasisPolicy {
		n.counters.PolicyAdvice++
	} else {
		n.counters.QueueAdvice++
	}
}

// send builds the §5 message (BTH with the Rate Advice opcode and the
// sender's QP as destination QP, then Rate, Version, Destination QP ID,
// Source QP ID) and sends it to the flow's source.
func (n *Node) send(f *flowState, mbps uint32) bool {
	dst := f.adv.Src
	src := n.cfg.SourceAddress
	if !src.IsValid() || src.Is4() != dst.Is4() {
		src = n.sw.Addr()
	}
	a := wire.Addressing{SrcIP: src, DstIP: dst, TOS: n.cfg.DSCP << 2, SrcPort: 0xC000 | uint16(f.adv.SrcQP&0x3FFF)}
	m := wire.RateAdvice{RateMbps: mbps, DestQP: f.adv.SrcQP, SrcQP: f.adv.DstQP}
	enc := wire.Encoder{CodePoints: n.cfg.CodePoints}
	size, err := enc.RateAdvice(n.buf[:], &a, &m)
	if err != nil {
		n.counters.EncodeErrors++
		return false
	}
	p, err := n.sw.FramePacket(n.buf[:size])
	if err != nil {
		n.counters.EncodeErrors++
		return false
	}
	ip := 40
	if dst.Is4() {
		ip = 20
	}
	off := wire.EthernetLen + ip + wire.UDPLen
	p.SizeBytes = netsim.LinkBytes(size)
	p.Src, p.Dst = n.sw.ID(), f.srcNode
	p.Flow = netsim.NoFlow
	p.Prio = n.cfg.Prio
	p.ECN = netsim.ECNNotECT
	p.Kind = netsim.KindRoCE
	p.HdrLen = uint8(copy(p.Hdr[:], n.buf[off:size]))
	if !n.sw.Send(p) {
		n.counters.NoRoute++
		return false
	}
	return true
}

// OnDequeue implements netsim.PortObserver.
func (n *Node) OnDequeue(*netsim.Port, *netsim.Packet, int64) {}

// OnMark implements netsim.PortObserver.
func (n *Node) OnMark(*netsim.Port, *netsim.Packet, int64) {}

// OnDrop implements netsim.PortObserver.
func (n *Node) OnDrop(*netsim.Port, *netsim.Packet, int64) {}
