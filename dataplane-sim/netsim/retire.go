package netsim

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// Flow retirement: a network that runs traffic without end (the lab) drops
// the queue pairs of flows that are over, so that the memory of the network
// and the hosts' tables stay bounded by the flows running, not by the flows
// ever run (a host's round robin drops a QP once it has sent its last byte,
// retired or not). It is off by
// default, and with it off nothing below runs: results stay byte for byte
// those of a network without it.

// RetiredStats are the final counters of a host's retired flows, summed:
// what the queue pairs counted before they were dropped. A reader that sums
// the live QPs' counters adds these and never sees a total go backwards.
type RetiredStats struct {
	// Sender side (the host's retired sender QPs).
	SendFlows  int64
	SentBytes  int64
	AckedBytes int64
	CNPsRx     int64 // CNPs DCQCN processed (QP.CNPs)
	RateCuts   int64
	// Receiver side (the host's retired receiver QPs).
	RecvFlows     int64
	RxBytes       int64
	RxPackets     int64
	MarkedPackets int64
	CNPsTx        int64 // CNPs the notification point sent (RecvQP.CNPs)
	LostPackets   int64
}

// RetireObserver is told about a flow just before its queue pairs are
// dropped (Network.AddRetireObserver), while f.Sender and f.Receiver are
// still set: anything that keeps a per-QP reference (a reaction point's
// state) lets go of it here. It runs inside the simulation, on the engine
// goroutine.
type RetireObserver interface {
	OnRetire(f *Flow)
}

// retirement is the network's retirement policy; nil: off.
type retirement struct {
	after     engine.Time
	observers []RetireObserver
	retired   int64
	// later: no timers; flows wait in their sender's partition's due
	// lists for RetireDue (RetireFinishedLater).
	later bool
}

// retireDue is a flow waiting for RetireDue from at on.
type retireDue struct {
	at   engine.Time
	flow FlowID
}

// evRetire is the retirement timer of a flow (arg: its FlowID).
const evRetire uint32 = 1

// retireFallbackFactor: a flow whose CM disconnect does not complete (its
// DREQ or DREP lost: the hosts do not resend them) is retired this many
// retirement delays after its last ACK.
const retireFallbackFactor = 10

// RetireFinished makes the network retire each finite flow after it is
// over: after of simulated time after its last byte is acknowledged
// (QP.Done) or, for a flow that connected with the CM, after its sender
// got the DREP that ends the disconnect (then nothing of the flow is left
// in the network: its receiver saw every byte and the DREQ). A CM flow
// whose DREQ or DREP is lost is retired 10·after after its last ACK.
// The delay covers what may still be on its way (a CNP sent with the last
// ACK): make it a round trip of the longest path; a packet for a retired
// QP that arrives later is counted in HostStats.UnknownDropped, as for any
// unknown QP. Retiring a
// flow removes its sender QP from its host's scheduling list and both QPs
// from their hosts' tables, tells the RetireObservers, adds the QPs' final
// counters to the hosts' RetiredStats and clears Flow.Sender and
// Flow.Receiver, so the QPs' memory is released; the Flow (its ID and name)
// stays in Flows, so flow numbers in packets and on wires stay valid.
// Endless flows, dormant flows (their sender runs in another process) and
// flows that do not finish are never retired. Call before the engine runs
// (flows that finish before the call are not retired); after < 0 is an
// error.
func (n *Network) RetireFinished(after engine.Time) error {
	if len(n.parts) > 1 {
		return errors.New("netsim: retirement of flows on a network cut into partitions: not supported")
	}
	if after < 0 {
		return fmt.Errorf("retire finished flows: delay %v is negative", after)
	}
	if n.retire == nil {
		n.retire = &retirement{}
	}
	n.retire.after = after
	return nil
}

// RetireFinishedLater is RetireFinished without timers: a flow due for
// retirement (at the same times) waits for the first RetireDue call at or
// after that time, which must come from where no partition runs (a global
// event of the group, or between runs). So retirement adds no event (a
// run processes the events a run without it does, and counts them), and a
// network cut into partitions retires too: RetireDue touches both ends of
// a flow while every partition is stopped. A flow retires later than with
// RetireFinished by up to the interval between the calls.
func (n *Network) RetireFinishedLater(after engine.Time) error {
	if after < 0 {
		return fmt.Errorf("retire finished flows: delay %v is negative", after)
	}
	if n.retire == nil {
		n.retire = &retirement{}
	}
	n.retire.after, n.retire.later = after, true
	return nil
}

// RetireDue retires the flows due by now under RetireFinishedLater, in
// the order of their due times (ties: flow ID), and returns how many it
// retired. Call it with no partition running.
func (n *Network) RetireDue(now engine.Time) int {
	if n.retire == nil || !n.retire.later {
		return 0
	}
	var batch []retireDue
	for _, pt := range n.parts {
		for k, list := range pt.due {
			i := 0
			for i < len(list) && list[i].at <= now {
				i++
			}
			batch = append(batch, list[:i]...)
			pt.due[k] = list[i:] // append reallocates with the live ones
		}
	}
	slices.SortFunc(batch, func(a, b retireDue) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		return cmp.Compare(a.flow, b.flow)
	})
	before := n.retire.retired
	for _, d := range batch {
		n.retireFlow(n.flows[d.flow])
	}
	return int(n.retire.retired - before)
}

// AddRetireObserver adds o to the observers told of every retired flow.
func (n *Network) AddRetireObserver(o RetireObserver) {
	if n.retire == nil {
		n.retire = &retirement{after: -1}
	}
	n.retire.observers = append(n.retire.observers, o)
}

// RetiredFlows returns the number of flows retired so far.
func (n *Network) RetiredFlows() int64 {
	if n.retire == nil {
		return 0
	}
	return n.retire.retired
}

// Retired reports whether the flow has been retired (its QPs dropped).
func (f *Flow) Retired() bool { return f.Sender == nil }

// AdminStop holds the flow's sender (QP.AdminStop); a retired flow has
// nothing left to stop.
func (f *Flow) AdminStop() {
	if !f.Retired() {
		f.Sender.AdminStop()
	}
}

// AdminStart releases the flow's sender (QP.AdminStart); a retired flow
// has nothing left to start.
func (f *Flow) AdminStart() {
	if !f.Retired() {
		f.Sender.AdminStart()
	}
}

// Done reports whether all bytes of the flow are acknowledged, and when
// (QP.Done), whether or not the flow has been retired since: the flow
// completion time survives retirement.
func (f *Flow) Done() (bool, engine.Time) {
	if f.Sender == nil {
		return true, f.finishedAt
	}
	return f.Sender.Done()
}

// LiveQPs returns the numbers of the host's sender and receiver QPs (the
// sender QPs are those its pacer scans for every packet it sends).
func (h *Host) LiveQPs() (send, recv int) { return len(h.sendQPs) - h.sendGaps, len(h.recv) }

// Retired returns the summed final counters of the host's retired flows.
func (h *Host) Retired() RetiredStats { return h.retired }

// flowFinished runs when q's last byte is acknowledged: it schedules the
// flow's retirement when the network retires flows (for a CM flow, the
// fallback should its disconnect not complete).
func (n *Network) flowFinished(q *QP) {
	if n.retire == nil || n.retire.after < 0 {
		return
	}
	d, k := n.retire.after, 0
	if q.cm.on {
		d, k = d*retireFallbackFactor, 1
	}
	if n.retire.later {
		pt := q.host.part
		pt.due[k] = append(pt.due[k], retireDue{pt.sim.Now() + d, q.flow.ID})
		return
	}
	q.host.part.sim.After(d, n, evRetire, uint64(q.flow.ID))
}

// flowClosed runs when q's CM disconnect completes (the DREP arrived).
func (n *Network) flowClosed(q *QP) {
	if n.retire == nil || n.retire.after < 0 || !q.finished {
		return
	}
	if n.retire.later {
		pt := q.host.part
		pt.due[0] = append(pt.due[0], retireDue{pt.sim.Now() + n.retire.after, q.flow.ID})
		return
	}
	q.host.part.sim.After(n.retire.after, n, evRetire, uint64(q.flow.ID))
}

// Handle implements engine.Handler: the retirement timers.
func (n *Network) Handle(kind uint32, arg uint64) {
	if kind != evRetire || arg >= uint64(len(n.flows)) {
		return
	}
	n.retireFlow(n.flows[arg])
}

func (n *Network) retireFlow(f *Flow) {
	q, r := f.Sender, f.Receiver
	if q == nil {
		return
	}
	for _, o := range n.retire.observers {
		o.OnRetire(f)
	}
	src, dst := q.host, r.host

	// Sender: out of the host's list and of the round robin (keeping its
	// place; a flow that sent its last byte has left it already).
	src.dropSendQP(q)
	src.unschedule(q)
	if src.qps[q.QPN] == q {
		delete(src.qps, q.QPN)
	}
	if q.cm.on && src.cmSend[q.cm.local] == q {
		delete(src.cmSend, q.cm.local)
	}
	// Its DCQCN timers let go of it (the others only run before the flow
	// ends), so it is freed now, not when a pending timer fires. Retired
	// later (RetireFinishedLater), the rate-increase timer ticks on as it
	// would have without retirement, so the run keeps its events and
	// their count.
	q.sending = false
	q.detachTimers(n.retire.later)
	q.stopRTO() // finished: out already; the heap never holds a retired QP
	s := &src.retired
	s.SendFlows++
	s.SentBytes += q.sentBytes
	s.AckedBytes += q.ackedBytes
	s.CNPsRx += q.dc.cnpRx
	s.RateCuts += q.dc.rateCuts

	// Receiver.
	if dst.recv[r.QPN] == r {
		delete(dst.recv, r.QPN)
	}
	if slot := &dst.recvHot[r.QPN&(recvHotSlots-1)]; *slot == r {
		*slot = nil
	}
	if k := (peerQP{src.id, q.QPN}); dst.recvByPeer[k] == r {
		delete(dst.recvByPeer, k)
	}
	if r.cm.on && dst.cmRecv[r.cm.local] == r {
		delete(dst.cmRecv, r.cm.local)
	}
	d := &dst.retired
	d.RecvFlows++
	d.RxBytes += r.rxBytes
	d.RxPackets += r.rxPackets
	d.MarkedPackets += r.markedRx
	d.CNPsTx += r.cnpTx
	d.LostPackets += r.lostPackets

	f.finishedAt = q.finishedAt
	f.Sender, f.Receiver = nil, nil
	n.retire.retired++
}
