package netsim

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"

	"github.com/lhcnp/lhcnp/dataplane-sim/ecmp"
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// SwitchConfig configures a switch.
type SwitchConfig struct {
	// Port is the configuration every port gets when Connect creates it;
	// change single ports afterwards with Port.SetConfig.
	Port PortConfig
	// SharedBufferBytes, when positive, is a buffer the switch's egress
	// ports share with dynamic thresholds (Choudhury and Hahne, as
	// merchant-silicon switches manage theirs): a port admits a packet
	// while its queue (all priorities) stays at most SharedAlpha times the
	// shared buffer not in use, and the buffer has room for it. It works
	// beside a port's own BufferBytes (both must admit the packet).
	SharedBufferBytes int64
	SharedAlpha       float64
}

// SwitchStats are a switch's counters.
type SwitchStats struct {
	NoRouteDrops int64 // packets for a destination with no route
	FilterDrops  int64 // packets a Forwarder refused
	// Decapsulated: tunnelled packets whose tunnel ended here;
	// DecapECNDrops: those dropped for a CE mark on a Not-ECT inner packet
	// (RFC 6040).
	Decapsulated, DecapECNDrops int64
}

// Switch forwards by a static table, destination node to egress port,
// or, with ECMP on (Network.SetECMP), to one of the equal-cost ports
// chosen per packet by its five-tuple (package ecmp). Its ports do the queueing, marking, dropping and PFC.
type Switch struct {
	net   *Network
	part  *partition
	id    NodeID
	name  string
	addr  netip.Addr
	cfg   SwitchConfig
	ports []*Port
	// hop is, by destination NodeID, an index into hops (0: no route).
	// A switch has few distinct next hops (in a fat-tree every
	// destination in another pod shares one uplink group), so the table
	// of every node costs 4 bytes an entry and holds no pointers: with
	// a port and a group per node, a k = 48 fat-tree's tables (2 880
	// switches, 30 528 nodes) took over 3 GB.
	hop  []int32
	hops []nextHop
	// hopIndex finds a next hop in hops by its key (hopKey).
	hopIndex map[string]int32
	// ecmp: some next hop has equal-cost ports (a group).
	ecmp bool
	// ecmpCache remembers RouteFlow's choice for recent five-tuples (made
	// on first use): the hash is a dozen multiplications per packet and
	// hop, the same for every packet of a flow.
	ecmpCache []ecmpEntry
	stats     SwitchStats
	// sharedUsed is the bytes queued at all the switch's egress ports,
	// counted only when it has a shared buffer (what the buffer holds).
	sharedUsed int64
	local      LocalHandler // packets addressed to the switch itself
	// fwd holds the Forwarder of each stage (nil: none); active the
	// installed ones in stage order, what the forwarding path runs.
	fwd    [NumForwardStages]Forwarder
	active []Forwarder
	// special: a local handler, ECMP groups or a Forwarder is installed
	// (noteSpecial keeps it); else Receive takes its short path.
	special bool
}

// noteSpecial sets special from local, ecmp and active.
func (s *Switch) noteSpecial() {
	s.special = s.local != nil || s.ecmp || len(s.active) > 0
}

// nextHop is where a switch sends packets for a destination: port (nil:
// no route) or, with ECMP, one of group's port indices chosen per packet
// (group is nil for a single port; port is then group's lowest).
type nextHop struct {
	port  *Port
	group []int32
}

// hopKey is the key of the next hop over ports (port indices, the lowest
// first) in hopIndex, appended to buf.
func hopKey(buf []byte, ports []int32) []byte {
	for _, i := range ports {
		buf = binary.AppendUvarint(buf, uint64(i))
	}
	return buf
}

// internHop returns the index in hops of the next hop over ports (port
// indices in increasing order, at least one), adding it when it is new;
// buf is scratch for its key.
func (s *Switch) internHop(ports []int32, buf *[]byte) int32 {
	*buf = hopKey((*buf)[:0], ports)
	if i, ok := s.hopIndex[string(*buf)]; ok {
		return i
	}
	if s.hopIndex == nil {
		s.hopIndex = map[string]int32{}
	}
	h := nextHop{port: s.ports[ports[0]]}
	if len(ports) > 1 {
		h.group = slices.Clone(ports)
		s.ecmp = true
		s.noteSpecial()
	}
	i := int32(len(s.hops))
	s.hops = append(s.hops, h)
	s.hopIndex[string(*buf)] = i
	return i
}

// ID returns the node id.
func (s *Switch) ID() NodeID { return s.id }

// Name returns the node name.
func (s *Switch) Name() string { return s.name }

// Addr returns the switch's address (the source of packets it originates,
// such as Long-haul CNPs).
func (s *Switch) Addr() netip.Addr { return s.addr }

// Ports returns the switch's ports in Connect order.
func (s *Switch) Ports() []*Port { return s.ports }

// Stats returns the switch's counters.
func (s *Switch) Stats() SwitchStats { return s.stats }

// Network returns the network the switch belongs to.
func (s *Switch) Network() *Network { return s.net }

// SetRoute sends packets for dst out of port (an index into Ports).
func (s *Switch) SetRoute(dst NodeID, port int) error {
	if port < 0 || port >= len(s.ports) {
		return fmt.Errorf("switch %s: route to node %d via port %d: no such port", s.name, dst, port)
	}
	s.growRoutes(int(dst) + 1)
	var buf []byte
	s.hop[dst] = s.internHop([]int32{int32(port)}, &buf)
	s.net.routeGen++
	return nil
}

// Route returns the egress port for dst, or nil. With ECMP it is the
// lowest of the equal-cost ports; the port a packet takes is
// RouteFlow's.
func (s *Switch) Route(dst NodeID) *Port {
	i := uint(dst) // one bounds check, not the test and another
	if i >= uint(len(s.hop)) {
		return nil
	}
	return s.hops[s.hop[i]].port
}

// RouteFlow returns the egress port for a packet from src to dst between
// queue pairs srcQP and dstQP (the data packets of a flow from its
// sender, its ACKs with the two swapped), or nil.
func (s *Switch) RouteFlow(src, dst NodeID, srcQP, dstQP uint32) *Port {
	if i := uint(dst); i < uint(len(s.hop)) {
		if g := s.hops[s.hop[i]].group; g != nil {
			if s.ecmpCache == nil {
				s.ecmpCache = make([]ecmpEntry, ecmpCacheSize)
			}
			e := &s.ecmpCache[(uint32(src)*0x9E3779B1^uint32(dst)*0x85EBCA77^srcQP*0xC2B2AE3D^dstQP*0x27D4EB2F)>>(32-ecmpCacheBits)]
			gen := s.net.routeGen
			if e.gen == gen && e.src == src && e.dst == dst && e.srcQP == srcQP && e.dstQP == dstQP {
				return s.ports[e.port]
			}
			a := s.net.addrs
			h := ecmp.Hash(s.net.ecmpSeed, a[s.id], ecmp.RoCE(a[src], a[dst], srcQP, dstQP))
			port := g[ecmp.Pick(h, len(g))]
			*e = ecmpEntry{src: src, dst: dst, srcQP: srcQP, dstQP: dstQP, gen: gen, port: port}
			return s.ports[port]
		}
	}
	return s.Route(dst)
}

// ecmpRoute is the egress port of p when the switch has equal-cost
// groups (s.ecmp): RouteFlow of its five-tuple (the BTH's destination QP
// for RoCEv2 packets, 0 for others) for a destination with a group, def
// (its Route) for the others. The forwarding path tests s.ecmp first, so
// that a switch without ECMP pays one comparison.
func (s *Switch) ecmpRoute(p *Packet, def *Port) *Port {
	if i := uint(p.Dst); i < uint(len(s.hop)) && s.hops[s.hop[i]].group != nil {
		var dqp uint32
		if p.Kind == KindRoCE {
			dqp = p.DestQP()
		}
		return s.RouteFlow(p.Src, p.Dst, p.SrcQP, dqp)
	}
	return def
}

// ecmpEntry is a five-tuple's port in a switch's ECMP cache, valid while
// gen is the network's routeGen.
type ecmpEntry struct {
	src, dst     NodeID
	srcQP, dstQP uint32
	gen          uint32
	port         int32
}

const (
	ecmpCacheBits = 8
	ecmpCacheSize = 1 << ecmpCacheBits
)

// growRoutes makes the table hold destinations below n (new ones without
// a route).
func (s *Switch) growRoutes(n int) {
	if s.hops == nil {
		s.hops = []nextHop{{}} // hop 0: no route
	}
	if n > len(s.hop) {
		s.hop = append(s.hop, make([]int32, n-len(s.hop))...)
	}
}

// sharedFull reports whether the shared buffer refuses size more bytes
// at pt (dynamic threshold: pt's queue after the packet would pass alpha
// times the free buffer).
func (s *Switch) sharedFull(pt *Port, size int64) bool {
	free := s.cfg.SharedBufferBytes - s.sharedUsed
	return size > free || float64(pt.totalBytes+size) > s.cfg.SharedAlpha*float64(free)
}

// SharedBufferUsed returns the bytes its shared buffer holds (queued at
// all its egress ports); 0 for a switch without one.
func (s *Switch) SharedBufferUsed() int64 { return s.sharedUsed }

// SetObserver installs o on every port of the switch.
func (s *Switch) SetObserver(o PortObserver) {
	for _, p := range s.ports {
		p.SetObserver(o)
	}
}

// SetForwarder installs f at stage st (nil removes it), replacing the
// Forwarder the stage had. Forwarders see every packet the switch forwards
// or originates, in stage order, before its egress port does. A stage
// out of range is a bug in the caller: it panics.
func (s *Switch) SetForwarder(st ForwardStage, f Forwarder) {
	if st >= NumForwardStages {
		panic(fmt.Sprintf("netsim: switch %s: forward %v: no such stage", s.name, st))
	}
	s.fwd[st] = f
	s.active = s.active[:0]
	for _, x := range s.fwd {
		if x != nil {
			s.active = append(s.active, x)
		}
	}
	s.noteSpecial()
}

// Forwarder returns the Forwarder installed at stage st, or nil.
func (s *Switch) Forwarder(st ForwardStage) Forwarder {
	if st >= NumForwardStages {
		return nil
	}
	return s.fwd[st]
}

// forward runs the installed Forwarders on p, which leaves by out; false:
// one dropped it (counted and freed).
func (s *Switch) forward(p *Packet, in, out *Port) bool {
	for _, f := range s.active {
		if !f.Forward(s, p, in, out) {
			s.stats.FilterDrops++
			s.part.pool.put(p)
			return false
		}
	}
	return true
}

// notePFC tells the switch's ports whether any of them has PFC enabled
// (Port.swPFC): after a port is added or its configuration set.
func (s *Switch) notePFC() {
	on := false
	for _, q := range s.ports {
		on = on || q.cfg.PFC.Enabled
	}
	for _, q := range s.ports {
		q.swPFC = on
		q.noteSlowQ()
	}
}

// Receive forwards p, arrived on in.
func (s *Switch) Receive(p *Packet, in *Port) {
	if p.Kind == KindRoCE && p.fb == 0 && !s.special {
		// Most packets: no frame to look into, nothing installed that
		// sees them, one route. (receive's tests in one; its call
		// spilled the arguments on every packet.)
		if out := s.Route(p.Dst); out != nil {
			p.inPort = int32(in.index) + 1
			out.enqueue(p)
			return
		}
	}
	s.receive(p, in)
}

// receive is Receive for every packet.
func (s *Switch) receive(p *Packet, in *Port) {
	if p.Kind == KindPFC {
		in.handlePFC(p)
		return
	}
	if p.fb != 0 && p.Kind == KindRoCE && s.terminate(p) {
		return
	}
	if p.Dst == s.id && s.local != nil {
		s.local.HandleLocal(s, p)
		s.part.pool.put(p)
		return
	}
	out := s.Route(p.Dst)
	if s.ecmp {
		out = s.ecmpRoute(p, out)
	}
	if out == nil {
		s.stats.NoRouteDrops++
		s.part.pool.put(p)
		return
	}
	if len(s.active) > 0 && !s.forward(p, in, out) {
		return
	}
	p.inPort = int32(in.index) + 1
	out.enqueue(p)
}

// Send routes a packet the switch itself originates (a Long-haul CNP, for
// example) and queues it on the egress port. It reports false, and frees p,
// when there is no route or a Forwarder refuses it. p.Src should be
// s.ID().
func (s *Switch) Send(p *Packet) bool {
	out := s.Route(p.Dst)
	if s.ecmp {
		out = s.ecmpRoute(p, out)
	}
	if out == nil {
		s.stats.NoRouteDrops++
		s.part.pool.put(p)
		return false
	}
	if len(s.active) > 0 && !s.forward(p, nil, out) {
		return false
	}
	p.inPort = 0
	out.enqueue(p)
	return true
}

// Sim returns the engine of the switch's partition: what a model attached
// to the switch (a mechanism) schedules on and draws from.
func (s *Switch) Sim() *engine.Sim { return s.part.sim }

// NewPacket returns a zeroed packet from the pool of the switch's
// partition (Network.NewPacket on a network that is not cut).
func (s *Switch) NewPacket() *Packet { return s.part.pool.get() }

// FreePacket returns p to the pool of the switch's partition.
func (s *Switch) FreePacket(p *Packet) { s.part.pool.put(p) }

// SetFrame is Network.SetFrame with the frame buffers of the switch's
// partition.
func (s *Switch) SetFrame(p *Packet, frame []byte) error { return s.part.pool.setFrame(p, frame) }

// FramePacket returns a new packet of the switch's partition carrying a
// copy of frame (SetFrame), for a control frame a mechanism sends; on an
// error (a frame over FrameCap) the packet goes back to the pool.
func (s *Switch) FramePacket(frame []byte) (*Packet, error) {
	p := s.NewPacket()
	if err := s.SetFrame(p, frame); err != nil {
		s.FreePacket(p)
		return nil, err
	}
	return p, nil
}
