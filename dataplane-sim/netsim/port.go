package netsim

import (
	"fmt"
	"math/bits"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// ECNConfig is RED-style ECN marking of one egress queue, as DCQCN switches
// do it: no marking at or below KMinBytes, marking with probability rising
// linearly from 0 to PMax between KMinBytes and KMaxBytes, every ECN-capable
// packet above KMaxBytes. Only ECT packets are marked (CE is set in the IP
// ECN field); non-ECT packets pass unmarked.
type ECNConfig struct {
	Enabled   bool
	KMinBytes int64
	KMaxBytes int64
	PMax      float64 // marking probability at KMaxBytes, 0..1
}

// PFCConfig is priority flow control on a port's ingress side: when the bytes
// that arrived on this port in priority p and still sit in the switch's
// queues reach XOFFBytes, the port sends a PAUSE for p to its peer; when they
// fall to XONBytes it sends a RESUME. A paused peer finishes the frame it is
// sending and then holds priority p. XOFF must leave headroom below the
// buffer for what is in flight: 2 x delay x rate + 2 MTU per paused ingress.
// Pauses last until the RESUME (quanta are not modelled).
type PFCConfig struct {
	Enabled   bool
	PrioMask  uint8 // bit p set: PFC on priority p (0 = all priorities)
	XOFFBytes int64
	XONBytes  int64
}

// PortConfig is the configuration of one port (egress queues and ingress PFC).
type PortConfig struct {
	// BufferBytes is the egress buffer shared by the port's eight priority
	// queues; a packet that does not fit is tail-dropped. 0 means unlimited.
	BufferBytes int64
	ECN         [NumPrio]ECNConfig
	// MarkOnEnqueue marks by the queue a packet joins; the default (false)
	// marks at dequeue by the queue it leaves behind, which sends the signal
	// a queueing delay earlier.
	MarkOnEnqueue bool
	PFC           PFCConfig
}

// SameECN returns an ECN array with c on every priority.
func SameECN(c ECNConfig) [NumPrio]ECNConfig {
	var a [NumPrio]ECNConfig
	for i := range a {
		a[i] = c
	}
	return a
}

// Validate checks the configuration for values that cannot work.
func (c *PortConfig) Validate() error {
	if c.BufferBytes < 0 {
		return fmt.Errorf("buffer %d bytes: must not be negative", c.BufferBytes)
	}
	for i, e := range c.ECN {
		if !e.Enabled {
			continue
		}
		if e.KMinBytes < 0 || e.KMaxBytes < e.KMinBytes {
			return fmt.Errorf("ecn priority %d: need 0 <= kmin (%d) <= kmax (%d)", i, e.KMinBytes, e.KMaxBytes)
		}
		if e.PMax < 0 || e.PMax > 1 {
			return fmt.Errorf("ecn priority %d: pmax %g outside [0,1]", i, e.PMax)
		}
	}
	if c.PFC.Enabled && (c.PFC.XONBytes > c.PFC.XOFFBytes || c.PFC.XOFFBytes <= 0) {
		return fmt.Errorf("pfc: need 0 <= xon (%d) <= xoff (%d), xoff > 0", c.PFC.XONBytes, c.PFC.XOFFBytes)
	}
	return nil
}

// PortStats are a port's counters since the start of the simulation.
type PortStats struct {
	TxPackets, TxBytes      int64          // frames sent on the egress link (incl. PFC)
	RxPackets, RxBytes      int64          // frames received from the ingress link
	DropPackets, DropBytes  int64          // tail drops at this egress
	ECNMarks                int64          // packets this egress marked CE
	PFCPauseTx, PFCResumeTx int64          // PFC frames this port sent upstream
	PFCPauseTxPrio          [NumPrio]int64 // PFCPauseTx by priority
	// TxPrioPackets and TxPrioBytes are the frames sent from each
	// priority's queue (TxPackets and TxBytes less the control frames).
	TxPrioPackets, TxPrioBytes [NumPrio]int64
	PFCPauseRx                 int64 // PAUSE frames received (egress held)
	PeakQueueBytes             int64 // highest total egress occupancy seen
	// PFCPausedNs is the simulated time during which the peer held at
	// least one egress priority of this port (PAUSE to RESUME), and
	// PFCPausedPrioNs the same per priority; both include the pause under
	// way when Stats is called, up to now.
	PFCPausedNs     int64
	PFCPausedPrioNs [NumPrio]int64
	// DownDropPackets and DownDropBytes are frames lost because the egress
	// link was down (Link.SetUp): flushed from the queues, routed to the
	// port or sent by it while down, or in flight when it went down.
	DownDropPackets, DownDropBytes int64
}

// Port is one port of a node: an egress side (eight strict-priority queues
// with byte accounting against a buffer, ECN marking, tail drop, a
// transmitter that serialises one frame at a time onto Out) and an ingress
// side (the receiving end of In, with PFC accounting).
//
// A port keeps at most one pending event for its transmitter (frame done)
// plus, on hosts, a wake-up for the next paced send. A host's port arms
// its frame-done only when it will have something to send at the frame's
// end; otherwise the frame's end and the pacer's wake-up are one event.
type Port struct {
	// The fields of every frame (enqueue, dequeue, tryTransmit, the
	// port's events) come first, in the order of their use, so that a
	// frame touches a few cache lines of the port rather than one in
	// every hundred bytes of it: the packets streaming through a run (a
	// WAN link's ring holds thousands) keep evicting them.
	part *partition
	sim  *engine.Sim // part.sim, one load nearer
	out  *Link
	host *Host // owner if a host
	// shared is the owner when it has a shared buffer (SwitchConfig.
	// SharedBufferBytes), nil otherwise: one test on the hot path.
	shared *Switch
	sw     *Switch // owner if a switch
	// hidDone and hidWake are the port's frame-done and wake-up events
	// in its partition's Sim (Register).
	hidDone, hidWake engine.HandlerID
	// swPFC: the owner is a switch one of whose ports has PFC enabled
	// (Switch.notePFC). Else no packet queued here has an ingress port
	// to account, and enqueue and dequeue skip looking it up.
	swPFC bool
	// The transmitter sends a frame until freeAt. frameDone: its
	// frame-done event is pending, at freeAt. A switch port arms it with
	// every frame. A host port arms it only when a frame is queued, or a
	// QP may send, by freeAt; otherwise, as the frame starts, it arms the
	// pacer's wake-up for the earliest QP, and what becomes due while the
	// frame is on the wire (a control frame queued, a rate raised, a pause
	// lifted, a flow started) arms the frame-done or an earlier wake-up
	// then (armNext): the frame-done with nothing to send, and its
	// wake-up event, are gone.
	frameDone   bool
	wakePending bool
	// ready has bit prio set while queues[prio] holds a packet and prio is
	// not paused: dequeue finds the highest such priority in one step.
	ready  uint8
	paused [NumPrio]bool // egress priority held by the peer's PAUSE
	// markOnEnq is cfg.MarkOnEnqueue (setCfg), read at every enqueue and
	// dequeue from this line rather than from cfg's.
	markOnEnq bool
	// slowQ: enqueue and dequeue have more to do than the common case
	// (noteSlowQ keeps it): the egress link is down, the switch has a
	// shared buffer or a port with PFC, the port marks on enqueue, or an
	// observer watches it.
	slowQ bool

	freeAt     engine.Time
	totalBytes int64
	wakeAt     engine.Time
	wakeGen    uint64
	pausedN    int // priorities held (paused time below)
	observer   PortObserver

	// The counters of every frame, here beside the fields above rather
	// than in stats, hundreds of bytes further (Stats adds them in):
	// frames sent and received, the queues' peak, and the data frames
	// sent by priority, packets and bytes side by side.
	txPackets, txBytes int64
	rxPackets, rxBytes int64
	peakBytes          int64
	txPrio             [NumPrio]struct{ packets, bytes int64 }

	ctrl   ring[*Packet] // PFC frames: sent before any queue, never paused
	ser    engine.Serializer
	qBytes [NumPrio]int64
	cfg    PortConfig
	queues [NumPrio]ring[*Packet]
	stats  PortStats

	net   *Network
	node  Node
	index int
	in    *Link

	// Paused time: since when each held priority, and any, is held.
	pausedSince engine.Time
	prioSince   [NumPrio]engine.Time

	ingressBytes [NumPrio]int64
	pauseSent    [NumPrio]bool

	filter MarkFilter // observer as a MarkFilter, if it is one
}

// Port event kinds.
const (
	evTxDone uint32 = iota
	evWake
)

// Node returns the node the port belongs to.
func (pt *Port) Node() Node { return pt.node }

// Index returns the port's number on its node (0, 1, ... in Connect order).
func (pt *Port) Index() int { return pt.index }

// Name returns "node:index".
func (pt *Port) Name() string { return fmt.Sprintf("%s:%d", pt.node.Name(), pt.index) }

// Out returns the egress link; In the ingress link.
func (pt *Port) Out() *Link { return pt.out }

// In returns the ingress link.
func (pt *Port) In() *Link { return pt.in }

// Peer returns the port at the other end of the cable.
func (pt *Port) Peer() *Port { return pt.out.to }

// RateBitsPerSec returns the egress line rate.
func (pt *Port) RateBitsPerSec() int64 { return pt.out.rateBitsPerSec }

// Config returns the port's configuration.
func (pt *Port) Config() PortConfig { return pt.cfg }

// SetConfig replaces the port's configuration. Queued packets stay; the new
// thresholds apply from the next packet. Inside a running simulation, call
// it from the engine goroutine (a handler, or engine.Sim.Do).
func (pt *Port) SetConfig(c PortConfig) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("port %s: %w", pt.Name(), err)
	}
	pt.setCfg(c)
	if pt.sw != nil {
		pt.sw.notePFC()
	}
	return nil
}

// setCfg sets the configuration and markOnEnq.
func (pt *Port) setCfg(c PortConfig) {
	pt.cfg = c
	pt.markOnEnq = c.MarkOnEnqueue
	pt.noteSlowQ()
}

// noteSlowQ sets slowQ from what it stands for.
func (pt *Port) noteSlowQ() {
	pt.slowQ = pt.out != nil && pt.out.down || pt.shared != nil || pt.swPFC || pt.markOnEnq || pt.observer != nil
}

// SetECN changes the ECN marking of one priority queue (the knob that a
// BDP-adaptive K_max turns).
func (pt *Port) SetECN(prio int, c ECNConfig) error {
	nc := pt.cfg
	nc.ECN[prio] = c
	return pt.SetConfig(nc)
}

// SetObserver installs o (nil removes it).
func (pt *Port) SetObserver(o PortObserver) {
	pt.observer = o
	pt.filter, _ = o.(MarkFilter)
	pt.noteSlowQ()
}

// QueueBytes returns the bytes queued in priority prio.
func (pt *Port) QueueBytes(prio int) int64 { return pt.qBytes[prio] }

// TotalQueueBytes returns the bytes queued in all priorities.
func (pt *Port) TotalQueueBytes() int64 { return pt.totalBytes }

// QueuePackets returns the packets queued in priority prio.
func (pt *Port) QueuePackets(prio int) int { return pt.queues[prio].len() }

// Paused reports whether the peer has paused egress priority prio.
func (pt *Port) Paused(prio int) bool { return pt.paused[prio] }

// Stats returns the port's counters, paused time up to now included.
func (pt *Port) Stats() PortStats {
	st := pt.stats
	st.TxPackets, st.TxBytes = pt.txPackets, pt.txBytes
	st.RxPackets, st.RxBytes = pt.rxPackets, pt.rxBytes
	st.PeakQueueBytes = pt.peakBytes
	for prio, c := range pt.txPrio {
		st.TxPrioPackets[prio], st.TxPrioBytes[prio] = c.packets, c.bytes
	}
	if pt.pausedN > 0 {
		now := pt.sim.Now()
		st.PFCPausedNs += int64(now - pt.pausedSince)
		for prio, held := range pt.paused {
			if held {
				st.PFCPausedPrioNs[prio] += int64(now - pt.prioSince[prio])
			}
		}
	}
	return st
}

// Handle runs the port's events (a frame-done is portTx's).
func (pt *Port) Handle(kind uint32, arg uint64) {
	switch kind {
	case evTxDone:
		pt.tryTransmit()
	case evWake:
		if arg != pt.wakeGen {
			return
		}
		pt.wakePending = false
		if pt.frameDone {
			return // the frame-done comes and looks
		}
		if pt.sim.Now() < pt.freeAt {
			// Armed before a frame that ends later went out.
			pt.armNext()
			return
		}
		pt.tryTransmit()
	}
}

// kick makes the transmitter look for work: an idle one now, a host's
// sending one at the end of its frame if something is due by then.
func (pt *Port) kick() {
	if pt.frameDone {
		return
	}
	if pt.sim.Now() < pt.freeAt {
		pt.armNext()
		return
	}
	pt.tryTransmit()
}

// queued: a frame was queued on a port without a pending frame-done. An
// idle transmitter sends it now; a sending one arms its frame-done.
func (pt *Port) queued() {
	if pt.sim.Now() < pt.freeAt {
		pt.armDone()
		return
	}
	pt.tryTransmit()
}

// armDone arms the frame-done event, at freeAt.
func (pt *Port) armDone() {
	pt.frameDone = true
	pt.sim.AtID(pt.freeAt, pt.hidDone, 0)
}

// armNext arms the port's next event while its frame is on the wire and
// no frame-done is pending: the frame-done when a frame is queued, else
// on a host as armHost.
func (pt *Port) armNext() {
	if pt.ctrl.n > 0 || pt.ready != 0 {
		pt.armDone()
	} else if pt.host != nil {
		pt.armHost()
	}
}

// armHost arms a host port's next event while its frame is on the wire
// and nothing is queued: the frame-done when a QP may send by freeAt, else
// the pacer's wake-up for the earliest QP (none when no QP may send).
func (pt *Port) armHost() {
	next := pt.host.nextDue(pt)
	if next <= pt.freeAt {
		pt.armDone()
	} else if next != engine.Never {
		pt.scheduleWake(next)
	}
}

// scheduleWake arranges a tryTransmit at t unless one is already due sooner.
func (pt *Port) scheduleWake(t engine.Time) {
	if pt.wakePending && pt.wakeAt <= t {
		return
	}
	pt.wakeGen++
	pt.wakeAt = t
	pt.wakePending = true
	pt.sim.AtID(t, pt.hidWake, pt.wakeGen)
}

// enqueue adds p to its priority queue (switch forwarding, host control
// packets), or drops it when the buffer is full.
func (pt *Port) enqueue(p *Packet) {
	if pt.slowQ {
		pt.enqueueSlow(p)
		return
	}
	// enqueueSlow without what slowQ stands for (a link down, a shared
	// buffer, PFC, marking on enqueue, an observer): 12 instructions less
	// per packet and hop.
	prio := int(p.Prio)
	size := int64(p.SizeBytes)
	if pt.cfg.BufferBytes > 0 && pt.totalBytes+size > pt.cfg.BufferBytes {
		pt.stats.DropPackets++
		pt.stats.DropBytes += size
		if pool := &pt.part.pool; !pool.tryPut(p) {
			pool.put(p)
		}
		return
	}
	if q := &pt.queues[prio]; !q.tryPush(p) {
		q.push(p)
	}
	if !pt.paused[prio] {
		pt.ready |= 1 << prio
	}
	pt.qBytes[prio] += size
	pt.totalBytes += size
	if pt.totalBytes > pt.peakBytes {
		pt.peakBytes = pt.totalBytes
	}
	if !pt.frameDone {
		// queued, written out (its call and armDone's).
		if pt.sim.Now() < pt.freeAt {
			pt.frameDone = true
			pt.sim.AtID(pt.freeAt, pt.hidDone, 0)
		} else {
			pt.tryTransmit()
		}
	}
}

// enqueueSlow is enqueue in every case.
func (pt *Port) enqueueSlow(p *Packet) {
	prio := int(p.Prio)
	size := int64(p.SizeBytes)
	if pt.out.down {
		pt.countDown(p)
		if pt.observer != nil {
			pt.observer.OnDrop(pt, p, pt.qBytes[prio])
		}
		pt.part.pool.put(p)
		return
	}
	if pt.cfg.BufferBytes > 0 && pt.totalBytes+size > pt.cfg.BufferBytes || pt.shared != nil && pt.shared.sharedFull(pt, size) {
		pt.stats.DropPackets++
		pt.stats.DropBytes += size
		if pt.observer != nil {
			pt.observer.OnDrop(pt, p, pt.qBytes[prio])
		}
		if pool := &pt.part.pool; !pool.tryPut(p) {
			pool.put(p)
		}
		return
	}
	if pt.markOnEnq {
		pt.maybeMark(p, prio, pt.qBytes[prio])
	}
	if q := &pt.queues[prio]; !q.tryPush(p) {
		q.push(p)
	}
	if !pt.paused[prio] {
		pt.ready |= 1 << prio
	}
	pt.qBytes[prio] += size
	pt.totalBytes += size
	if pt.shared != nil {
		pt.shared.sharedUsed += size
	}
	if pt.totalBytes > pt.peakBytes {
		pt.peakBytes = pt.totalBytes
	}
	if i := p.inPort; i != 0 && pt.swPFC {
		if in := pt.sw.ports[i-1]; in.cfg.PFC.Enabled {
			in.ingressAdd(prio, size)
		}
	}
	if pt.observer != nil {
		pt.observer.OnEnqueue(pt, p, pt.qBytes[prio])
	}
	if !pt.frameDone {
		pt.queued()
	}
}

// dequeue takes the head of the highest non-empty, non-paused priority;
// there must be one (ready not 0: tryTransmit looks first, without a
// call, as a host's port has nothing queued at almost every frame).
// tryTransmit has the common case (not slowQ) written out.
func (pt *Port) dequeue() *Packet {
	prio := bits.Len8(pt.ready) - 1
	q := &pt.queues[prio]
	p := q.take()
	if q.n == 0 {
		pt.ready &^= 1 << prio
	}
	size := int64(p.SizeBytes)
	pt.qBytes[prio] -= size
	pt.totalBytes -= size
	if pt.shared != nil {
		pt.shared.sharedUsed -= size
	}
	if !pt.markOnEnq {
		pt.maybeMark(p, prio, pt.qBytes[prio])
	}
	if i := p.inPort; i != 0 {
		p.inPort = 0
		if pt.swPFC {
			if in := pt.sw.ports[i-1]; in.cfg.PFC.Enabled {
				in.ingressSub(prio, size)
			}
		}
	}
	if pt.observer != nil {
		pt.observer.OnDequeue(pt, p, pt.qBytes[prio])
	}
	return p
}

// countDown counts p as lost to the egress link being down.
func (pt *Port) countDown(p *Packet) {
	pt.stats.DownDropPackets++
	pt.stats.DownDropBytes += int64(p.SizeBytes)
}

// flushDown empties the egress queues of a port whose link went down:
// every queued packet is dequeued (its observer sees it leave and be
// dropped) and counted; PFC frames not yet sent are discarded, and the
// pauses the peer had sent are cleared, since no RESUME can arrive.
func (pt *Port) flushDown() {
	for pt.ctrl.n > 0 {
		pt.part.pool.put(pt.ctrl.pop())
	}
	for prio := range pt.paused {
		pt.setPaused(prio, false)
	}
	for prio := range pt.queues {
		for pt.queues[prio].n > 0 {
			p := pt.queues[prio].pop()
			size := int64(p.SizeBytes)
			pt.qBytes[prio] -= size
			pt.totalBytes -= size
			if pt.shared != nil {
				pt.shared.sharedUsed -= size
			}
			if i := p.inPort; i != 0 {
				p.inPort = 0
				if in := pt.sw.ports[i-1]; in.cfg.PFC.Enabled {
					in.ingressSub(prio, size)
				}
			}
			pt.countDown(p)
			if pt.observer != nil {
				pt.observer.OnDequeue(pt, p, pt.qBytes[prio])
				pt.observer.OnDrop(pt, p, pt.qBytes[prio])
			}
			pt.part.pool.put(p)
		}
	}
	pt.ready = 0
}

// maybeMark applies the RED-style ECN decision for a queue depth of q
// bytes. Its test inlines: most packets leave a queue at or below K_min,
// and the call cost more than the test.
func (pt *Port) maybeMark(p *Packet, prio int, q int64) {
	if c := &pt.cfg.ECN[prio]; c.Enabled && q > c.KMinBytes {
		pt.mark(p, c, q)
	}
}

// mark is maybeMark past its test: the queue's depth q is above K_min,
// where an ECN-capable packet not yet marked may be marked.
func (pt *Port) mark(p *Packet, c *ECNConfig, q int64) {
	if p.ECN == ECNNotECT || p.ECN == ECNCE {
		return
	}
	if pt.filter != nil && !pt.filter.AllowMark(pt, p) {
		return
	}
	if q < c.KMaxBytes {
		prob := c.PMax * float64(q-c.KMinBytes) / float64(c.KMaxBytes-c.KMinBytes)
		if pt.sim.Rand().Float64() >= prob {
			return
		}
	}
	p.ECN = ECNCE
	if p.fb != 0 {
		// A packet that carries its frame is marked in its bytes too: the
		// outermost IP header, a tunnel's outer one.
		_ = wire.SetOuterECN(p.Frame(), ECNCE)
	}
	pt.stats.ECNMarks++
	if pt.observer != nil {
		pt.observer.OnMark(pt, p, q)
	}
}

func (c *PFCConfig) covers(prio int) bool {
	return c.PrioMask == 0 || c.PrioMask&(1<<prio) != 0
}

func (pt *Port) ingressAdd(prio int, size int64) {
	pt.ingressBytes[prio] += size
	c := &pt.cfg.PFC
	if !pt.pauseSent[prio] && pt.ingressBytes[prio] >= c.XOFFBytes && c.covers(prio) {
		pt.pauseSent[prio] = true
		pt.stats.PFCPauseTx++
		pt.stats.PFCPauseTxPrio[prio]++
		pt.sendPFC(prio, true)
	}
}

func (pt *Port) ingressSub(prio int, size int64) {
	pt.ingressBytes[prio] -= size
	if pt.pauseSent[prio] && pt.ingressBytes[prio] <= pt.cfg.PFC.XONBytes {
		pt.pauseSent[prio] = false
		pt.stats.PFCResumeTx++
		pt.sendPFC(prio, false)
	}
}

// sendPFC queues a PFC frame to the peer, ahead of all data.
func (pt *Port) sendPFC(prio int, pause bool) {
	p := pt.part.pool.get()
	p.Kind = KindPFC
	p.SizeBytes = PFCFrameBytes
	p.Src = pt.node.ID()
	p.Dst = pt.Peer().node.ID()
	p.Flow = NoFlow
	p.PFCPrio = uint8(prio)
	p.PFCPause = pause
	pt.ctrl.push(p)
	if !pt.frameDone {
		pt.queued()
	}
}

// handlePFC applies a PFC frame received on this port to its egress.
func (pt *Port) handlePFC(p *Packet) {
	prio := int(p.PFCPrio)
	if p.PFCPause {
		pt.stats.PFCPauseRx++
	}
	pt.setPaused(prio, p.PFCPause)
	pt.part.pool.put(p)
	if !pt.paused[prio] {
		pt.kick()
	}
}

// setPaused holds or releases egress priority prio, accounting the paused
// time.
func (pt *Port) setPaused(prio int, pause bool) {
	if pause != pt.paused[prio] {
		now := pt.sim.Now()
		if pause {
			pt.prioSince[prio] = now
			if pt.pausedN == 0 {
				pt.pausedSince = now
			}
			pt.pausedN++
		} else {
			pt.stats.PFCPausedPrioNs[prio] += int64(now - pt.prioSince[prio])
			pt.pausedN--
			if pt.pausedN == 0 {
				pt.stats.PFCPausedNs += int64(now - pt.pausedSince)
			}
		}
	}
	pt.paused[prio] = pause
	if pause || pt.queues[prio].n == 0 {
		pt.ready &^= 1 << prio
	} else {
		pt.ready |= 1 << prio
	}
}

// tryTransmit starts the next frame; the transmitter is idle (now is at
// or past freeAt, no frame-done pending, or this is the frame-done).
func (pt *Port) tryTransmit() { (*portTx)(pt).Handle(evTxDone, 0) }

// portTx is a Port as the handler of its frame-done events, registered
// for them (Network.newPort): its Handle is tryTransmit's body, so that
// a frame-done, a third of the §7 example's events, is one call from the
// engine rather than Port.Handle's and tryTransmit's.
type portTx Port

// Handle is tryTransmit.
func (x *portTx) Handle(uint32, uint64) {
	pt := (*Port)(x)
	pt.frameDone = false // the frame-done running, or none pending
	var p *Packet
	ctrl := pt.ctrl.n > 0
	if ctrl {
		p = pt.ctrl.take()
	} else if r := pt.ready; r != 0 && !pt.slowQ {
		// dequeue's common case, written out (its call).
		prio := bits.Len8(r) - 1
		q := &pt.queues[prio]
		p = q.take()
		if q.n == 0 {
			pt.ready = r &^ (1 << prio)
		}
		size := int64(p.SizeBytes)
		pt.qBytes[prio] -= size
		pt.totalBytes -= size
		pt.maybeMark(p, prio, pt.qBytes[prio])
		p.inPort = 0
	} else if r != 0 {
		p = pt.dequeue()
	} else if h := pt.host; h == nil {
		return
	} else if now := pt.sim.Now(); pt.pausedN == 0 && h.schedAt.min() <= now {
		// nextPacket's common case, written out (its call): no
		// priority held, a QP may send now, the first from rr on.
		j := h.schedAt.first(h.rr, now)
		if j < 0 {
			j = h.schedAt.first(0, now)
		}
		h.rr = j + 1
		if h.rr == len(h.sched) {
			h.rr = 0
		}
		p = h.sched[j].makePacket(now)
	} else if p = h.nextPacket(pt); p == nil {
		return
	}
	now := pt.sim.Now()
	l := pt.out
	tx, ok := pt.ser.Cached(int64(p.SizeBytes), l.rateBitsPerSec)
	if !ok {
		tx = pt.ser.Divide(int64(p.SizeBytes), l.rateBitsPerSec)
	}
	pt.txPackets++
	pt.txBytes += int64(p.SizeBytes)
	if !ctrl && int(p.Prio) < NumPrio {
		c := &pt.txPrio[p.Prio]
		c.packets++
		c.bytes += int64(p.SizeBytes)
	}
	p.SentAt = now
	pt.freeAt = now + tx
	if !l.other {
		// Link.arrive, send's common case, here without its call.
		at := max(now+tx+l.delay, l.lastArrive)
		l.lastArrive = at
		if r := &l.inflight; !r.tryPush(flight{p, at}) {
			r.push(flight{p, at})
		}
		if l.inflight.n == 1 {
			l.toSim.AtID(at, l.hid, l.gen)
		}
	} else {
		l.sendOther(p, now+tx)
	}
	if pt.ctrl.n > 0 || pt.ready != 0 {
		pt.frameDone = true
		pt.sim.AtID(now+tx, pt.hidDone, 0)
	} else if h := pt.host; h != nil {
		// armHost, written out (its call and armDone's).
		if next := h.nextDue(pt); next <= pt.freeAt {
			pt.frameDone = true
			pt.sim.AtID(pt.freeAt, pt.hidDone, 0)
		} else if next != engine.Never && (!pt.wakePending || pt.wakeAt > next) {
			// scheduleWake, written out.
			pt.wakeGen++
			pt.wakeAt = next
			pt.wakePending = true
			pt.sim.AtID(next, pt.hidWake, pt.wakeGen)
		}
	}
}
