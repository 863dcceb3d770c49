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
	observers  []LinkObserver
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
// rate, the next one uses the new (a scenario's "link slowdown"). On a
// host's egress link the host's sender QPs follow the new line rate
// (QP.LineRateBps). Observers are told after the change. r must be
// positive; other values are ignored.
func (l *Link) SetRateBps(r int64) {
	if r <= 0 || r == l.rateBps {
		return
	}
	l.rateBps = r
	if h := l.from.host; h != nil {
		for _, q := range h.sendQPs {
			q.setLineRate(r)
		}
	}
	l.notify()
}

// SetDelay changes the propagation delay for packets sent from now on (a
// scenario's "RTT change"). Packets never overtake each other: a shorter delay
// holds new packets behind the ones already in flight. Observers are told
// after the change. A negative d is ignored.
func (l *Link) SetDelay(d engine.Time) {
	if d < 0 || d == l.delay {
		return
	}
	l.delay = d
	l.notify()
}

// AddObserver registers o for changes of l's rate and delay. Observers are
// called in registration order; adding one twice calls it twice.
func (l *Link) AddObserver(o LinkObserver) { l.observers = append(l.observers, o) }

// RemoveObserver removes the first registration of o.
func (l *Link) RemoveObserver(o LinkObserver) {
	for i, x := range l.observers {
		if x == o {
			l.observers = append(l.observers[:i], l.observers[i+1:]...)
			return
		}
	}
}

func (l *Link) notify() {
	for _, o := range l.observers {
		o.OnLinkChange(l)
	}
}

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
