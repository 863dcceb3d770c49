package netsim

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/lhcnp/lhcnp/dataplane-sim/ecmp"
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// Network is a topology of switches and hosts on one engine.Sim. Build it
// (AddSwitch, AddHost, Connect, ComputeRoutes, AddFlow), then drive the Sim.
// Everything in a Network belongs to the goroutine that drives its Sim; other
// goroutines go through engine.Sim.Do.
type Network struct {
	sim      *engine.Sim
	nodes    []Node
	byName   map[string]Node
	switches []*Switch
	hosts    []*Host
	ports    []*Port
	links    []*Link
	flows    []*Flow
	retire   *retirement // nil: finished flows are kept (RetireFinished)
	// ECMP: when on, ComputeRoutes keeps every equal-cost next hop and
	// switches pick one per packet by package ecmp's hash; addrs are the
	// nodes' addresses as the hash reads them (by NodeID).
	ecmpOn   bool
	ecmpSeed uint64
	// routeGen counts changes of routes, ECMP seed and addresses: it
	// invalidates the switches' ECMP caches. Groups exist only after
	// ComputeRoutes, which makes it at least 1, so an empty entry (gen 0)
	// never matches.
	routeGen uint32
	addrs    []ecmp.Addr

	// parts are the partitions the nodes run in (one, parts[0], unless the
	// network was made with NewPartitioned); group drives them then.
	parts []*partition
	group *engine.Group
}

// partition is what the nodes of one partition share and nothing outside
// it touches while it runs: its engine, its packet pool, the hosts'
// scratch for CM processing.
type partition struct {
	id      int
	sim     *engine.Sim
	pool    packetPool
	cmDec   wire.Decoder
	cmFrame wire.Frame
	// due holds the retirements waiting for RetireDue (RetireFinishedLater)
	// of flows whose sender is in the partition: [0] due after the
	// retirement delay, [1] the fallbacks due after ten; each in time order.
	due [2][]retireDue
}

// New returns an empty network on sim.
func New(sim *engine.Sim) *Network {
	return &Network{sim: sim, byName: map[string]Node{}, parts: []*partition{{sim: sim}}}
}

// NewPartitioned returns an empty network whose nodes run in the
// partitions of g (SetPartition; a node starts in partition 0). A link
// between two partitions is cut: its packets cross as messages of g, and
// its delay must be at least g's lookahead (Lookahead computes it).
// Global work (samplers, events on several partitions) goes through
// g.AtGlobal. Flows retire there with RetireFinishedLater and RetireDue
// (RetireFinished's timers would touch both ends of a flow from one
// partition).
func NewPartitioned(g *engine.Group) *Network {
	n := &Network{sim: g.Sim(0), byName: map[string]Node{}, group: g}
	for i := 0; i < g.Len(); i++ {
		n.parts = append(n.parts, &partition{id: i, sim: g.Sim(i)})
	}
	return n
}

// Group returns the engine group of a partitioned network, or nil.
func (n *Network) Group() *engine.Group { return n.group }

// Sim returns the engine the network runs on (of a partitioned network:
// partition 0's).
func (n *Network) Sim() *engine.Sim { return n.sim }

// Now returns the simulated time (of a partitioned network: the group's).
func (n *Network) Now() engine.Time {
	if n.group != nil {
		return n.group.Now()
	}
	return n.sim.Now()
}

func (n *Network) events() uint64 {
	if n.group != nil {
		return n.group.Events()
	}
	return n.sim.Events()
}

func (n *Network) pool() *packetPool { return &n.parts[0].pool }

// NewPacket returns a zeroed packet from the pool (of a partitioned
// network: partition 0's; a node's model uses Switch.NewPacket).
func (n *Network) NewPacket() *Packet { return n.pool().get() }

// FreePacket returns p to the pool; p must not be used afterwards.
func (n *Network) FreePacket(p *Packet) { n.pool().put(p) }

// LivePackets returns the packets taken from the pool and not yet freed
// (in queues, on links, or leaked).
func (n *Network) LivePackets() int64 {
	var live int64
	for _, pt := range n.parts {
		live += pt.pool.live()
	}
	// The originals of packets that crossed a cut link, on their way
	// home (Link.back), are not in use: their copies are.
	for _, l := range n.links {
		live -= int64(len(l.back[0]) + len(l.back[1]))
	}
	return live
}

// SetPartition puts node x in partition i of a partitioned network.
// Call it before x is connected.
func (n *Network) SetPartition(x Node, i int) error {
	if i < 0 || i >= len(n.parts) {
		return fmt.Errorf("node %s: partition %d of %d", x.Name(), i, len(n.parts))
	}
	if len(x.Ports()) > 0 {
		return fmt.Errorf("node %s: partition set after it was connected", x.Name())
	}
	switch v := x.(type) {
	case *Switch:
		v.part = n.parts[i]
	case *Host:
		v.part = n.parts[i]
	}
	return nil
}

// Partition returns the partition node x runs in.
func (n *Network) Partition(x Node) int {
	switch v := x.(type) {
	case *Switch:
		return v.part.id
	case *Host:
		return v.part.id
	}
	return 0
}

// Lookahead returns the smallest delay of a cut link (engine.Never when
// no link is cut): the lookahead of the network's group.
func (n *Network) Lookahead() engine.Time {
	la := engine.Never
	for _, l := range n.links {
		if l.cut {
			la = min(la, l.delay)
		}
	}
	return la
}

// ErrDuplicateName is returned when a node name is taken.
var ErrDuplicateName = errors.New("duplicate node name")

func (n *Network) addNode(name string, node Node) error {
	if _, ok := n.byName[name]; ok {
		return fmt.Errorf("node %q: %w", name, ErrDuplicateName)
	}
	n.byName[name] = node
	n.nodes = append(n.nodes, node)
	return nil
}

// AddSwitch adds a switch. addr may be the zero netip.Addr.
func (n *Network) AddSwitch(name string, addr netip.Addr, cfg SwitchConfig) (*Switch, error) {
	if err := cfg.Port.Validate(); err != nil {
		return nil, fmt.Errorf("switch %s: %w", name, err)
	}
	if cfg.SharedBufferBytes < 0 || cfg.SharedBufferBytes > 0 && !(cfg.SharedAlpha > 0) {
		return nil, fmt.Errorf("switch %s: shared buffer %d bytes, alpha %g: need a buffer >= 0 and alpha > 0", name, cfg.SharedBufferBytes, cfg.SharedAlpha)
	}
	s := &Switch{net: n, part: n.parts[0], id: NodeID(len(n.nodes)), name: name, addr: addr, cfg: cfg}
	if err := n.addNode(name, s); err != nil {
		return nil, err
	}
	n.switches = append(n.switches, s)
	return s, nil
}

// AddHost adds an RNIC.
func (n *Network) AddHost(name string, addr netip.Addr, cfg HostConfig) (*Host, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("host %s: %w", name, err)
	}
	h := &Host{net: n, part: n.parts[0], id: NodeID(len(n.nodes)), name: name, addr: addr, overheadBytes: RoCEOverheadBytes(addr), cfg: cfg,
		qps: map[uint32]*QP{}, recv: map[uint32]*RecvQP{},
		recvByPeer: map[peerQP]*RecvQP{}, cmSend: map[uint32]*QP{}, cmRecv: map[uint32]*RecvQP{}}
	if err := n.addNode(name, h); err != nil {
		return nil, err
	}
	n.hosts = append(n.hosts, h)
	return h, nil
}

// Connect joins a and b with a cable: a new port on each and a Link in each
// direction. A host has one port; connecting it twice is an error.
func (n *Network) Connect(a, b Node, lc LinkConfig) (pa, pb *Port, err error) {
	if lc.RateBitsPerSec <= 0 || lc.Delay < 0 {
		return nil, nil, fmt.Errorf("link %s-%s: rate %d bps and delay %v: need rate > 0, delay >= 0",
			a.Name(), b.Name(), lc.RateBitsPerSec, lc.Delay)
	}
	for _, x := range []Node{a, b} {
		if h, ok := x.(*Host); ok && h.port != nil {
			return nil, nil, fmt.Errorf("host %s already connected", h.name)
		}
	}
	pa, pb = n.newPort(a), n.newPort(b)
	ab := &Link{net: n, from: pa, to: pb, rateBitsPerSec: lc.RateBitsPerSec, delay: lc.Delay}
	ba := &Link{net: n, from: pb, to: pa, rateBitsPerSec: lc.RateBitsPerSec, delay: lc.Delay}
	ab.hid, ba.hid = pb.part.sim.Register(ab, 0), pa.part.sim.Register(ba, 0)
	ab.toSim, ba.toSim = pb.part.sim, pa.part.sim
	ab.toSw, ba.toSw = pb.sw, pa.sw
	pa.out, pa.in = ab, ba
	pb.out, pb.in = ba, ab
	pa.noteSlowQ()
	pb.noteSlowQ()
	if pa.part != pb.part {
		ab.cut, ba.cut = true, true
		ab.setOther()
		ba.setOther()
	}
	n.links = append(n.links, ab, ba)
	return pa, pb, nil
}

func (n *Network) newPort(x Node) *Port {
	pt := &Port{net: n, node: x}
	switch v := x.(type) {
	case *Switch:
		pt.part = v.part
		pt.sw = v
		if v.cfg.SharedBufferBytes > 0 {
			pt.shared = v
		}
		pt.index = len(v.ports)
		pt.setCfg(v.cfg.Port)
		v.ports = append(v.ports, pt)
		v.notePFC()
	case *Host:
		pt.part = v.part
		pt.host = v
		pt.setCfg(v.cfg.Port)
		v.port = pt
		v.ports = []*Port{pt}
	}
	pt.sim = pt.part.sim
	pt.hidDone, pt.hidWake = pt.sim.Register((*portTx)(pt), evTxDone), pt.sim.Register(pt, evWake)
	n.ports = append(n.ports, pt)
	return pt
}

// SetECMP turns equal-cost multipath on (or off) for the next
// ComputeRoutes: a switch with several next hops of the fewest hops
// towards a destination picks one for each packet by package ecmp's
// hash of the packet's five-tuple, seeded with seed and salted with the
// switch's address, so that every packet of a flow takes one path (a
// link never reorders, so neither does the flow).
func (n *Network) SetECMP(on bool, seed uint64) {
	n.ecmpOn, n.ecmpSeed = on, seed
	n.routeGen++
}

// ComputeRoutes fills every switch's table with a shortest path (in hops) to
// every node, breaking ties by the lowest port index, so that the same
// topology always gets the same routes; with ECMP on (SetECMP) it also
// keeps every equal-cost port. Routes set with Switch.SetRoute
// before are overwritten; set them after to override. A switch that
// cannot reach a node keeps the route it had to it.
//
// It searches from every switch, not from every node: a host has one
// link and does not forward, so a switch's shortest paths to a host
// are those to the switch the host hangs from (and, there, its port to
// the host), and a host not linked to a switch is reached by none.
func (n *Network) ComputeRoutes() {
	n.routeGen++
	n.addrs = make([]ecmp.Addr, len(n.nodes))
	for i, x := range n.nodes {
		n.addrs[i] = ecmp.AddrOf(x.Addr())
	}
	dist := make([]int, len(n.nodes))
	queue := make([]Node, 0, len(n.nodes))
	var group []int32
	var key []byte
	var hosts []NodeID
	for _, dst := range n.switches {
		for i := range dist {
			dist[i] = -1
		}
		dist[dst.id] = 0
		queue = append(queue[:0], dst)
		for head := 0; head < len(queue); head++ {
			x := queue[head]
			if _, isHost := x.(*Host); isHost {
				continue // hosts do not forward
			}
			for _, pt := range x.Ports() {
				y := pt.Peer().node
				if dist[y.ID()] < 0 {
					dist[y.ID()] = dist[x.ID()] + 1
					queue = append(queue, y)
				}
			}
		}
		for _, s := range n.switches {
			if dist[s.id] < 0 {
				continue
			}
			s.growRoutes(len(n.nodes))
			if s == dst {
				continue
			}
			group = group[:0]
			for i, pt := range s.ports {
				if d := dist[pt.Peer().node.ID()]; d >= 0 && d == dist[s.id]-1 {
					group = append(group, int32(i))
					if !n.ecmpOn {
						break
					}
				}
			}
			s.hop[dst.id] = 0
			if len(group) > 0 {
				s.hop[dst.id] = s.internHop(group, &key)
			}
		}
		// dst's hosts: the routes to dst, and at dst the host's port.
		hosts = hosts[:0]
		for i, pt := range dst.ports {
			if h, ok := pt.Peer().node.(*Host); ok && h.port.Peer() == pt {
				hosts = append(hosts, h.id)
				dst.hop[h.id] = dst.internHop([]int32{int32(i)}, &key)
			}
		}
		for _, s := range n.switches {
			if dist[s.id] >= 0 && s != dst {
				for _, h := range hosts {
					s.hop[h] = s.hop[dst.id]
				}
			}
		}
	}
}

// AddFlow creates the sender and receiver QPs of a flow and schedules its
// start (the CM exchange, unless FlowConfig.NoCM). Both hosts must be
// connected. QP numbers 0 and 1 cannot be chosen (0 allocates one; QP1 is
// the GSI QP that receives CM MADs).
func (n *Network) AddFlow(fc FlowConfig) (*Flow, error) {
	if fc.Src == nil || fc.Dst == nil || fc.Src == fc.Dst {
		return nil, errors.New("flow: need two distinct hosts")
	}
	if fc.Src.port == nil || fc.Dst.port == nil {
		return nil, fmt.Errorf("flow %s: hosts must be connected first", fc.Name)
	}
	if fc.Bytes < 0 || fc.MessageBytes < 0 || fc.Prio >= NumPrio || fc.MaxRateBitsPerSec < 0 {
		return nil, fmt.Errorf("flow %s: bytes %d, message %d, prio %d, max rate %d out of range",
			fc.Name, fc.Bytes, fc.MessageBytes, fc.Prio, fc.MaxRateBitsPerSec)
	}
	src, dst := fc.Src, fc.Dst
	sq, dq := fc.SrcQPN, fc.DstQPN
	if sq == 0 {
		sq = src.allocQPN()
	} else if sq == wire.GSIQP || src.qps[sq] != nil || src.recv[sq] != nil || sq > 0xFFFFFF {
		return nil, fmt.Errorf("flow %s: qp %d on %s taken or out of range", fc.Name, sq, src.name)
	}
	if dq == 0 {
		dq = dst.allocQPN()
	} else if dq == wire.GSIQP || dst.qps[dq] != nil || dst.recv[dq] != nil || dq > 0xFFFFFF {
		return nil, fmt.Errorf("flow %s: qp %d on %s taken or out of range", fc.Name, dq, dst.name)
	}
	msg := fc.MessageBytes
	if msg == 0 {
		msg = fc.Bytes
		if msg == 0 {
			msg = 1 << 20
		}
	}
	f := &Flow{ID: FlowID(len(n.flows)), Name: fc.Name}
	if f.Name == "" {
		f.Name = fmt.Sprintf("flow%d", f.ID)
	}
	line := src.port.out.rateBitsPerSec
	q := &QP{host: src, flow: f, QPN: sq, PeerQPN: dq, dst: dst.id, prio: fc.Prio,
		lineRateBitsPerSec: line, maxRateBitsPerSec: fc.MaxRateBitsPerSec, totalBytes: fc.Bytes, msgBytes: msg, start_: fc.Start,
		resv7: src.resv7, schedIdx: len(src.sched), sendIdx: len(src.sendQPs)}
	// The flow's and DCQCN's maximum bound the rate from the start.
	r0 := max(q.maxRate(), src.cfg.DCQCN.MinRateBitsPerSec)
	q.dc.rc, q.dc.rt = r0, r0
	r := &RecvQP{host: dst, flow: f, QPN: dq, PeerQPN: sq, peer: src.id, prio: fc.Prio, firstRx: -1}
	useCM := !fc.NoCM && src.addr.IsValid() && dst.addr.IsValid() && src.addr.Is4() == dst.addr.Is4()
	q.cm = cmEnd{on: useCM, connectedAt: -1}
	r.cm = cmEnd{on: useCM, connectedAt: -1}
	f.Sender, f.Receiver = q, r
	src.qps[sq] = q
	src.sendQPs = append(src.sendQPs, q)
	src.sched = append(src.sched, q)
	src.schedAt.push(engine.Never)
	src.schedPrio = append(src.schedPrio, fc.Prio)
	dst.recv[dq] = r
	dst.recvByPeer[peerQP{src.id, sq}] = r
	n.flows = append(n.flows, f)
	if !fc.Dormant {
		src.part.sim.At(fc.Start, q, evQPStart, 0)
	}
	return f, nil
}

// Node returns the node with id, or nil.
func (n *Network) Node(id NodeID) Node {
	if id < 0 || int(id) >= len(n.nodes) {
		return nil
	}
	return n.nodes[id]
}

// NodeByName returns the named node, or nil.
func (n *Network) NodeByName(name string) Node { return n.byName[name] }

// Nodes returns all nodes in creation order (index = NodeID).
func (n *Network) Nodes() []Node { return n.nodes }

// Switches returns the switches in creation order.
func (n *Network) Switches() []*Switch { return n.switches }

// Hosts returns the hosts in creation order.
func (n *Network) Hosts() []*Host { return n.hosts }

// Ports returns every port in creation order.
func (n *Network) Ports() []*Port { return n.ports }

// Links returns every link (two per Connect, a→b then b→a).
func (n *Network) Links() []*Link { return n.links }

// Flows returns the flows in creation order (index = FlowID).
func (n *Network) Flows() []*Flow { return n.flows }
