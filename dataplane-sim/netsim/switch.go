package netsim

import (
	"fmt"
	"net/netip"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// SwitchConfig configures a switch.
type SwitchConfig struct {
	// Port is the configuration every port gets when Connect creates it;
	// change single ports afterwards with Port.SetConfig.
	Port PortConfig
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

// Switch forwards by a static table, destination node to egress port (no
// ECMP). Its ports do the queueing, marking, dropping and PFC.
type Switch struct {
	net    *Network
	part   *partition
	id     NodeID
	name   string
	addr   netip.Addr
	cfg    SwitchConfig
	ports  []*Port
	routes []int32 // by destination NodeID; -1: none
	stats  SwitchStats
	local  LocalHandler // packets addressed to the switch itself
	// fwd holds the Forwarder of each stage (nil: none); active the
	// installed ones in stage order, what the forwarding path runs.
	fwd    [NumForwardStages]Forwarder
	active []Forwarder
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
	s.routes[dst] = int32(port)
	return nil
}

// Route returns the egress port for dst, or nil.
func (s *Switch) Route(dst NodeID) *Port {
	if int(dst) >= len(s.routes) || s.routes[dst] < 0 {
		return nil
	}
	return s.ports[s.routes[dst]]
}

func (s *Switch) growRoutes(n int) {
	for len(s.routes) < n {
		s.routes = append(s.routes, -1)
	}
}

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

// Receive forwards p, arrived on in.
func (s *Switch) Receive(p *Packet, in *Port) {
	if p.Kind == KindPFC {
		in.handlePFC(p)
		return
	}
	if p.fb != nil && p.Kind == KindRoCE && s.terminate(p) {
		return
	}
	if p.Dst == s.id && s.local != nil {
		s.local.HandleLocal(s, p)
		s.part.pool.put(p)
		return
	}
	out := s.Route(p.Dst)
	if out == nil {
		s.stats.NoRouteDrops++
		s.part.pool.put(p)
		return
	}
	if len(s.active) > 0 && !s.forward(p, in, out) {
		return
	}
	p.inPort = in
	out.enqueue(p)
}

// Send routes a packet the switch itself originates (a Long-haul CNP, for
// example) and queues it on the egress port. It reports false, and frees p,
// when there is no route or a Forwarder refuses it. p.Src should be
// s.ID().
func (s *Switch) Send(p *Packet) bool {
	out := s.Route(p.Dst)
	if out == nil {
		s.stats.NoRouteDrops++
		s.part.pool.put(p)
		return false
	}
	if len(s.active) > 0 && !s.forward(p, nil, out) {
		return false
	}
	p.inPort = nil
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
