package netsim

import "github.com/lhcnp/lhcnp/dataplane-sim/engine"

// LinkConfig describes one cable: both directions get the same rate and
// propagation delay.
type LinkConfig struct {
	RateBps int64       // line rate, bits per second
	Delay   engine.Time // one-way propagation delay
}

// Link is one direction of a cable: the pipe between the transmitting port
// (From) and the receiving one (To). It holds the packets in flight in a ring,
// ordered by arrival, and keeps exactly one pending event, for the head
// (htsim's design): the cost of a long fat pipe is its ring, not its events.
type Link struct {
	net      *Network
	from, to *Port
	rateBps  int64
	delay    engine.Time

	inflight   ring[flight]
	lastArrive engine.Time
}

type flight struct {
	p  *Packet
	at engine.Time
}

// From returns the transmitting port.
func (l *Link) From() *Port { return l.from }

// To returns the receiving port.
func (l *Link) To() *Port { return l.to }

// RateBps returns the line rate.
func (l *Link) RateBps() int64 { return l.rateBps }

// Delay returns the one-way propagation delay.
func (l *Link) Delay() engine.Time { return l.delay }

// InFlight returns the number of packets on the wire.
func (l *Link) InFlight() int { return l.inflight.len() }

// SetRateBps changes the line rate; the packet being serialised keeps the old
// rate, the next one uses the new (a scenario's "link slowdown").
func (l *Link) SetRateBps(r int64) { l.rateBps = r }

// SetDelay changes the propagation delay for packets sent from now on (a
// scenario's "RTT change"). Packets never overtake each other: a shorter delay
// holds new packets behind the ones already in flight.
func (l *Link) SetDelay(d engine.Time) { l.delay = d }

// send puts p on the wire; its last bit leaves the transmitter at txEnd.
func (l *Link) send(p *Packet, txEnd engine.Time) {
	at := txEnd + l.delay
	if at < l.lastArrive {
		at = l.lastArrive
	}
	l.lastArrive = at
	l.inflight.push(flight{p, at})
	if l.inflight.len() == 1 {
		l.net.sim.At(at, l, 0, 0)
	}
}

// Handle delivers the head packet and schedules the next one.
func (l *Link) Handle(uint32, uint64) {
	f := l.inflight.pop()
	if l.inflight.len() > 0 {
		l.net.sim.At(l.inflight.front().at, l, 0, 0)
	}
	to := l.to
	to.stats.RxPackets++
	to.stats.RxBytes += int64(f.p.SizeBytes)
	to.node.Receive(f.p, to)
}
