package netsim

import "github.com/lhcnp/lhcnp/dataplane-sim/engine"

// LinkConfig describes one cable: both directions get the same rate and
// propagation delay.
type LinkConfig struct {
	RateBitsPerSec int64       // line rate, bits per second
	Delay          engine.Time // one-way propagation delay
}

// Link is one direction of a cable: the pipe between the transmitting port
// (From) and the receiving one (To). It holds the packets in flight in a ring,
// ordered by arrival, and keeps exactly one pending event, for the head
// (htsim's design): the cost of a long fat pipe is its ring, not its events.
type Link struct {
	// The fields of every frame (a frame into the ring, an arrival) come
	// first, in two cache lines.
	net            *Network
	from, to       *Port
	rateBitsPerSec int64
	delay          engine.Time

	inflight   ring[flight]
	lastArrive engine.Time
	// down: the cable is cut (SetUp); gen invalidates the head event
	// scheduled before the link last went down.
	gen uint64
	// hid is the link's events in the receiving partition's Sim
	// (Register): its head's arrival is an event there.
	hid engine.HandlerID
	// other: down, wire or cut, so that send tests one flag for the
	// common case, a packet into the ring (setOther keeps it).
	other bool
	down  bool
	// cut: from and to are in different partitions; what the
	// transmitter sends goes over as a message (engine.Group.Send).
	cut bool
	// toSim is to's partition's Sim, where arrivals are events.
	toSim *engine.Sim
	// toSw is to's switch, nil when to is a host's port.
	toSw *Switch

	observers []LinkObserver
	// wire, when set, carries what the transmitter sends to another
	// process instead of the in-engine ring (SetWire).
	wire Wire
	// back, on a cut link, holds the packets that crossed it, on their way
	// home to the sending partition's pool: the receiving partition took a
	// copy from its own pool (Deliver) and appends the original to
	// back[w&1] in window w; the sending partition takes back[(w+1)&1],
	// what was appended in the window before, when it sends (reclaim). So
	// in no window do both partitions touch one list, and a partition's
	// pool holds only packets it allocated: a packet never shares a cache
	// line with one the other partition uses.
	back [2][]*Packet

	// The padding makes a Link four whole cache lines (256 bytes): the
	// two directions of a cable are allocated together, and those of a
	// cut cable are written by two partitions side by side (each by its
	// receiving end, at every packet), so they must not share a line
	// (TestHotTypesOwnTheirLines).
	_ [48]byte
}

type flight struct {
	p  *Packet
	at engine.Time
}

// From returns the transmitting port.
func (l *Link) From() *Port { return l.from }

// To returns the receiving port.
func (l *Link) To() *Port { return l.to }

// RateBitsPerSec returns the line rate.
func (l *Link) RateBitsPerSec() int64 { return l.rateBitsPerSec }

// Delay returns the one-way propagation delay.
func (l *Link) Delay() engine.Time { return l.delay }

// InFlight returns the number of packets on the wire.
func (l *Link) InFlight() int { return l.inflight.len() }

// SetRateBitsPerSec changes the line rate; the packet being serialised keeps the old
// rate, the next one uses the new (a scenario's "link slowdown"). On a
// host's egress link the host's sender QPs follow the new line rate
// (QP.LineRateBitsPerSec). Observers are told after the change. r must be
// positive; other values are ignored.
func (l *Link) SetRateBitsPerSec(r int64) {
	if r <= 0 || r == l.rateBitsPerSec {
		return
	}
	l.rateBitsPerSec = r
	if h := l.from.host; h != nil {
		for _, q := range h.SendQPs() {
			q.setLineRate(r)
		}
	}
	l.notify()
}

// SetDelay changes the propagation delay for packets sent from now on (a
// scenario's "RTT change"). Packets never overtake each other: a shorter delay
// holds new packets behind the ones already in flight, so those sent within
// the difference arrive in one instant with the last packet sent on the old
// delay (a reroute's excess without its reordering); a longer one leaves a
// gap of the difference. Observers are told after the change. A negative d
// is ignored. On a cut link (Cut) d must stay at least the group's
// lookahead: a packet sent within it would land in the receiving
// partition's past, and the engine panics.
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

// SetWire makes w carry what l's transmitter sends from now on (nil: the
// in-engine ring again). The link's far end then runs in another process;
// the packets that come back from there enter through the reverse link's
// Arrive. Call it while building, or from the engine goroutine.
func (l *Link) SetWire(w Wire) {
	l.wire = w
	l.setOther()
}

// setOther sets other from down, wire and cut.
func (l *Link) setOther() { l.other = l.down || l.wire != nil || l.cut }

// Wire returns the link's wire, or nil.
func (l *Link) Wire() Wire { return l.wire }

// Up reports whether the link is up (links start up).
func (l *Link) Up() bool { return !l.down }

// SetUp brings the link up or down: a cable pulled, or the process at its
// far end gone silent. Going down loses the packets in flight, flushes the
// transmitting port's egress queues and clears the PFC pauses its peer had
// sent; while down, packets routed to the port and packets its transmitter
// sends are lost too. Every such loss is counted in the transmitting port's
// DownDropPackets and DownDropBytes and shown to its observer as a dequeue
// (if it was queued) and a drop. Call it from the engine goroutine.
func (l *Link) SetUp(up bool) {
	if up != l.down {
		return
	}
	l.down = !up
	l.setOther()
	l.from.noteSlowQ()
	if up {
		return
	}
	l.gen++
	for l.inflight.len() > 0 {
		f := l.inflight.pop()
		l.from.countDown(f.p)
		l.to.part.pool.put(f.p)
	}
	l.lastArrive = 0
	l.from.flushDown()
}

// sendOther puts p on a link that is down, has a wire or is cut (other);
// its last bit leaves the transmitter at txEnd. On the others the
// transmitter (Port.tryTransmit) puts it in the ring itself: l.arrive(p,
// txEnd+l.delay), one test and one call per frame.
func (l *Link) sendOther(p *Packet, txEnd engine.Time) {
	if l.down {
		l.from.countDown(p)
		l.from.part.pool.put(p)
		return
	}
	if l.wire != nil {
		l.wire.Send(l, p, txEnd)
		return
	}
	if l.cut {
		// The far end runs in another partition: hand the packet over
		// for its arrival time, which the lookahead puts beyond the
		// current window.
		l.reclaim()
		l.net.group.Send(l.from.part.id, l.to.part.id, txEnd+l.delay, l, p)
		return
	}
	l.arrive(p, txEnd+l.delay)
}

// Deliver implements engine.Receiver: a packet sent on a cut link arrives
// in the receiving partition, behind the packets already in flight. What
// arrives is a copy from the receiving partition's pool; the original goes
// back to the sender's (back, reclaim).
func (l *Link) Deliver(at engine.Time, v any) {
	p := v.(*Packet)
	pool := &l.to.part.pool
	q := pool.get()
	*q = *p
	q.fb, q.frameLen = 0, 0
	if p.fb != 0 {
		// Cannot fail: the frame fitted the sender's buffer.
		_ = pool.setFrame(q, p.Frame())
	}
	k := l.net.group.Windows() & 1
	l.back[k] = append(l.back[k], p)
	l.arrive(q, at)
}

// reclaim puts the packets that crossed l in the window before this one
// back into the sending partition's pool. It runs in the sending
// partition, in a window or at a barrier.
func (l *Link) reclaim() {
	b := &l.back[(l.net.group.Windows()+1)&1]
	if len(*b) == 0 {
		return
	}
	for _, p := range *b {
		l.from.part.pool.put(p)
	}
	clear(*b)
	*b = (*b)[:0]
}

// Cut reports whether l joins two partitions.
func (l *Link) Cut() bool { return l.cut }

// arrive queues p for delivery at at, after the packets already in flight.
func (l *Link) arrive(p *Packet, at engine.Time) {
	if at < l.lastArrive {
		at = l.lastArrive
	}
	l.lastArrive = at
	if r := &l.inflight; !r.tryPush(flight{p, at}) {
		r.push(flight{p, at})
	}
	if l.inflight.len() == 1 {
		l.toSim.AtID(at, l.hid, l.gen)
	}
}

// Arrive takes a packet that another process's transmitter put on this
// link (the far end of a wire): its last bit left there at simulated time
// txEnd, so it arrives at txEnd plus the link's delay, behind the packets
// already in flight. When that time has passed, the packet arrives now and
// Arrive returns by how much it is late (0 when on time). While the link
// is down the packet is lost and counted. The link owns p from the call
// on. Call it from the engine goroutine (engine.Sim.Do).
func (l *Link) Arrive(p *Packet, txEnd engine.Time) (late engine.Time) {
	if l.down {
		l.from.countDown(p)
		l.to.part.pool.put(p)
		return 0
	}
	at := txEnd + l.delay
	if now := l.toSim.Now(); at < now {
		late, at = now-at, now
	}
	l.arrive(p, at)
	return late
}

// Handle delivers the head packet and schedules the next one.
func (l *Link) Handle(_ uint32, gen uint64) {
	if gen != l.gen || l.inflight.len() == 0 {
		return // scheduled before the link went down
	}
	f := l.inflight.take()
	if l.inflight.len() > 0 {
		l.toSim.AtID(l.inflight.front().at, l.hid, l.gen)
	}
	to, p := l.to, f.p
	to.rxPackets++
	to.rxBytes += int64(p.SizeBytes)
	if s := l.toSw; s != nil && p.Kind == KindRoCE && p.fb == 0 && !s.special {
		// Switch.Receive's short path, written out (its call).
		if out := s.Route(p.Dst); out != nil {
			p.inPort = int32(to.index) + 1
			out.enqueue(p)
			return
		}
	}
	to.node.Receive(p, to)
}
