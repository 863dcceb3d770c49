package netsim

import "github.com/lhcnp/lhcnp/dataplane-sim/engine"

// Go-back-N's local ACK timeouts. A QP with packets outstanding has one
// entry in its host's heap, due when its timeout was armed; an ACK that
// makes progress only moves the QP's rtoDue on, and the entry, when it
// comes up, moves on to it or expires. A QP that finishes takes its entry
// out at once. The host has one pending event, for the earliest entry.
// An event per QP, left to fire after its flow ended, held 113 bytes per
// pending timeout (the event and the QP's timer handler): with a million
// 2 KB flows, one every 100 ns, and the 67 ms timeout, 670 000 were
// pending at a time and the peak heap went from 94 to 170 MB
// (BenchmarkMillionFlows); entries left in a heap until due, 24 bytes
// each, still took it to 151 MB.

// rtoEntry is a QP's timeout in its host's heap, ordered by due, then seq
// (the order the deadlines were set: a deterministic tie-break).
type rtoEntry struct {
	q   *QP
	due engine.Time
	seq uint64
}

// rtoHeap is a host's timeout heap and its pending event. Each QP in it
// knows its place (QP.rtoSlot, the index + 1).
type rtoHeap struct {
	h   []rtoEntry
	seq uint64
	// at is when the pending event fires (0: none), gen its number: an
	// event that an earlier one superseded does nothing.
	at  engine.Time
	gen uint64
}

func (r *rtoHeap) less(i, j int) bool {
	a, b := &r.h[i], &r.h[j]
	return a.due < b.due || a.due == b.due && a.seq < b.seq
}

func (r *rtoHeap) swap(i, j int) {
	r.h[i], r.h[j] = r.h[j], r.h[i]
	r.h[i].q.rtoSlot, r.h[j].q.rtoSlot = int32(i+1), int32(j+1)
}

func (r *rtoHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !r.less(i, p) {
			return
		}
		r.swap(i, p)
		i = p
	}
}

func (r *rtoHeap) down(i int) {
	n := len(r.h)
	for {
		l, m := 2*i+1, i
		if l < n && r.less(l, m) {
			m = l
		}
		if l+1 < n && r.less(l+1, m) {
			m = l + 1
		}
		if m == i {
			return
		}
		r.swap(i, m)
		i = m
	}
}

// set puts q's entry, due at due, in the heap, or moves it there.
func (r *rtoHeap) set(q *QP, due engine.Time) {
	r.seq++
	if q.rtoSlot == 0 {
		r.h = append(r.h, rtoEntry{q: q, due: due, seq: r.seq})
		q.rtoSlot = int32(len(r.h))
		r.up(len(r.h) - 1)
		return
	}
	i := int(q.rtoSlot - 1)
	r.h[i].due, r.h[i].seq = due, r.seq
	r.down(i)
	r.up(i)
}

// remove takes q's entry out, if it has one.
func (r *rtoHeap) remove(q *QP) {
	if q.rtoSlot == 0 {
		return
	}
	i, n := int(q.rtoSlot-1), len(r.h)-1
	if i != n {
		r.swap(i, n)
	}
	r.h[n] = rtoEntry{}
	r.h = r.h[:n]
	q.rtoSlot = 0
	if i < n {
		r.down(i)
		r.up(i)
	}
}

// rtoTimer is the host as the handler of its timeout event.
type rtoTimer Host

// schedule makes sure an event comes by the earliest entry's time.
func (h *Host) scheduleRTO() {
	r := &h.rto
	if len(r.h) == 0 {
		return
	}
	if due := r.h[0].due; r.at == 0 || due < r.at {
		r.gen++
		r.at = due
		h.part.sim.At(due, (*rtoTimer)(h), 0, r.gen)
	}
}

// Handle runs the entries that are due: each moves on to its QP's
// deadline, or expires, and the next event is scheduled.
func (t *rtoTimer) Handle(_ uint32, gen uint64) {
	h := (*Host)(t)
	r := &h.rto
	if gen != r.gen {
		return
	}
	r.at = 0
	now := h.part.sim.Now()
	for len(r.h) > 0 && r.h[0].due <= now {
		q := r.h[0].q
		switch {
		case q.rtoDue == 0:
			r.remove(q) // nothing outstanding now
		case now < q.rtoDue:
			r.set(q, q.rtoDue) // progress since: wait on
		default:
			r.remove(q)
			q.timeouts++
			q.goBack(q.ackedPkt) // re-arms it when it sends again
		}
	}
	h.scheduleRTO()
}

// armRTO sets the local ACK timeout to expire AckTimeout from now. The
// QP's entry, if it has one (due no later: the timeout is the host's, and
// the deadline only moves on), comes up first and moves on to it.
func (q *QP) armRTO(now engine.Time) {
	q.rtoDue = now + q.host.cfg.AckTimeout
	if q.rtoSlot == 0 {
		h := q.host
		h.rto.set(q, q.rtoDue)
		h.scheduleRTO()
	}
}

// stopRTO disarms the timeout and takes the QP's entry out (its flow
// finished, or it retires).
func (q *QP) stopRTO() {
	q.rtoDue = 0
	q.host.rto.remove(q)
}
