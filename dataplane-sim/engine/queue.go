package engine

import (
	"math/bits"
	"slices"
)

// The event queue orders events by (time, seq), seq being the insertion
// counter, so events at the same time run FIFO. An event is a key of 24
// bytes without pointers, (time, seq<<24|slot, arg): slot names its
// handler and kind, a pair registered with the Sim (Sim.Register: a
// model's ports and links, which schedule most events) or one held in a
// slab for this one event (Sim.At), whose slot is freed when the event
// has run. Keys hold no pointer, so moving one needs no write barrier and
// the collector does not scan the queue.
//
// Keys live in three places, by how far ahead they are due:
//
//   - near: those of the open bucket (and any earlier), a sorted run while
//     they are few, else a 4-ary heap;
//   - the ring: the buckets of 2^shift ns after the open one, 16.4 µs, each an
//     unsorted list; a push appends to its bucket, and when near empties
//     the next busy bucket (a bit scan) opens: its keys, sorted, become
//     near;
//   - far: the keys due beyond the ring, in a 4-ary heap: mostly DCQCN's
//     300 µs rate timers, one pending per QP (a cut restarts the timer by
//     reserving its place, Sim.Reserve, and the pending event moves on to
//     it); a new one, the latest of all, stops at the bottom of the heap at
//     once.
//
// A heap of all the near events costs a sift through log4(n) levels per
// event: at the thousands of pending events of a fabric (every port's end
// of frame, every link's next arrival) that was a third of the one-thread
// run. Here a key is appended once and sorted among the few of its bucket.
// The bucket width adapts to the density of events: when the buckets
// opened hold many keys on average it halves, when they hold few it
// doubles (the ring is rebuilt then, near being empty), so that a bucket
// holds a few keys whether a run has tens of pending events (a bottleneck)
// or thousands (a fabric).
//
// Each pop pops near's or far's top; the earliest key of both is kept in
// top. The order in which events run is the order of their keys, which are
// unique; where a key sits changes only the cost (TestQueueInterleavedOrder
// checks every pop against container/heap).
//
// Limits: 2^24 (16.7 M) events pending at once, 2^40 (10^12) events
// scheduled over the life of a Sim; both panic when exceeded. A key at
// Never is held like any other, but topAt and farAt are Never on an empty
// queue and an empty far too: the drivers never pop one (they stop at
// Never-1), and the one pop that reads far's top on farAt alone, along
// the sorted run, tests far's length after it.

const (
	slotBits = 24
	slotMask = 1<<slotBits - 1

	// The ring spans 2^spanShift ns (16.4 µs) in buckets of 2^shift ns,
	// shift between minShift and maxShift (8 ns to 16.4 µs: 2048 buckets
	// to one). At maxShift the one bucket is the open one and near holds
	// every key due within the span, as a sorted run: a few tens of
	// pending events are best there, in a few hot cache lines (keys spread
	// over buckets, each touched once a lap, missed the first-level cache
	// 60-75 % more on the bottleneck benchmark and cost it 4-5 % of its
	// CPU time for 6 % fewer instructions). The buckets are for when near
	// outgrows the sorted run (thousands of pending events in a fabric).
	spanShift  = 14
	minShift   = 3
	maxShift   = spanShift
	maxRingLen = 1 << (spanShift - minShift)
	// Every adaptEvery opened buckets, the width halves if they held more
	// than adaptMany keys on average, and doubles if they held fewer than
	// adaptFew.
	adaptEvery = 256
	adaptMany  = 16
	adaptFew   = 4
)

type key struct {
	at  Time
	ss  uint64 // seq<<slotBits | slot
	arg uint64
}

// target is what a slot names: a handler and the kind of event it is
// called with.
type target struct {
	h    Handler
	kind uint32
}

// The flags of queue.mode.
const (
	modeTopFar = 1 << iota
	modeTopReg
	modeNearHeap
)

// regBit in a slot marks a registered target (reg[slot&^regBit]); a slot
// without it is one of the slab's, for one event.
const regBit = 1 << (slotBits - 1)

// payload is what an event hands its handler.
type payload struct {
	h    Handler
	arg  uint64
	kind uint32
}

type queue struct {
	// near holds the keys due before cur+2^shift: a sorted run near[nh:]
	// while it holds few keys, else (modeNearHeap) a heap like far, with
	// nh 0.
	near, far []key
	nh        int
	// cur is the start of the open bucket. ring[b] holds, unsorted, the
	// keys due in [cur+width, cur+span) whose time falls in bucket b
	// (time>>shift & ringMask); ringBusy has bit b set when ring[b] is
	// not empty, ringN counts them all. Near is never empty while the
	// ring is not: the next busy bucket opens when near empties.
	cur      Time
	shift    uint
	width    Time // 1 << shift
	span     Time // 1 << spanShift (0 before init)
	ringMask uint64
	ring     [][]key
	ringBusy [maxRingLen / 64]uint64
	ringN    int
	// opens counts the buckets opened, opened the keys that entered near
	// (with them or pushed into it), since the width was last judged.
	opens, opened int
	moved         []key // adapt's scratch
	n             int   // events pending (all)
	// topAt is the time of the earliest pending key, Never when there is
	// none (a push near then takes the first branch). That
	// key is top when modeTopReg or modeTopFar, else near's first, near[nh]
	// (top is then stale): a pop along the sorted run copies no key
	// into top.
	topAt Time
	top   key
	// mode holds three flags: modeTopFar, the earliest key is far's top
	// (else near's); modeTopReg (below); modeNearHeap, near is a heap
	// (else a sorted run). In one byte, so that a pop tests one for the
	// common case, none set.
	mode uint8
	// farAt is the time of far's top, Never when far is empty (setFarAt
	// after every change of far): a pop along the sorted run compares
	// the next key with far's top only when it is not later, without
	// reading far (far's keys are DCQCN's rate timers, 300 µs ahead).
	farAt Time
	// modeTopReg: top is in neither near nor far, only in top. A key pushed
	// as the earliest of all (half of the pushes in the §7 example: a
	// link's next arrival, a port's end of frame, that will run next)
	// waits there in the one-bucket layout, so that its push does not
	// insert it at the front of the sorted run and its pop takes it from
	// there: the next earliest becomes top (retop). Another key pushed
	// as the earliest puts it into near first.
	last Time // the time of the last key popped
	// slab holds the handlers of events scheduled with a Handler not
	// registered (At), one slot per pending event; free lists its free
	// slots. reg holds the registered handlers (Register), for good.
	slab []target
	free []uint32
	reg  []target
	// sseq is the seq of the last key numbered, shifted into place
	// (seq<<slotBits): after 2^40 keys it wraps to 0.
	sseq uint64
	// runSlot is the slab's slot of the event popRun gave out (an
	// unregistered handler's), while runFree says that no push has taken
	// it yet: the first such push of the event's handler writes its
	// handler there (the event's was read before the handler ran), instead
	// of taking a slot off free and putting the event's back; done frees
	// it if no push took it.
	runSlot uint32
	runFree bool
}

// init makes the ring and sets the bucket width a queue starts with.
// Without it every key goes to the far heap (width 0): the order is the
// same, the cost a heap's.
func (q *queue) init() {
	q.farAt, q.topAt = Never, Never
	q.ring = make([][]key, maxRingLen)
	q.span = 1 << spanShift
	q.setShift(maxShift)
}

func (q *queue) setShift(shift uint) {
	q.shift, q.width = shift, 1<<shift
	q.ringMask = 1<<(spanShift-shift) - 1
}

func (q *queue) len() int { return q.n }

// push schedules h.Handle(kind, arg) at at, (h, kind) in a slot of the
// slab.
func (q *queue) push(at Time, h Handler, kind uint32, arg uint64) {
	q.pushSlot(at, q.slotFor(h, kind), arg)
}

// register adds (h, kind) to the registered targets and returns its slot.
func (q *queue) register(h Handler, kind uint32) uint32 {
	if len(q.reg) >= regBit {
		panic("engine: more than 2^23 handlers registered")
	}
	q.reg = append(q.reg, target{h, kind})
	return uint32(len(q.reg)-1) | regBit
}

// pushSlot schedules the target of slot (registered, or the slab's) at
// at with arg.
func (q *queue) pushSlot(at Time, slot uint32, arg uint64) {
	q.sseq += 1 << slotBits
	if q.sseq == 0 {
		panic("engine: more than 2^40 events scheduled")
	}
	e := key{at: at, ss: q.sseq | uint64(slot), arg: arg}
	q.n++
	if q.ringMask == 0 {
		// One bucket (the widest): near is the span from the last
		// event run, a sorted run.
		if at-q.last < q.span {
			if at < q.topAt { // Never when the queue was empty
				if q.mode&modeTopReg != 0 {
					q.mode &^= modeTopReg
					q.insertNear(q.top)
					if q.ringMask != 0 {
						// insertNear narrowed the buckets.
						q.pushBuckets(e)
						return
					}
				}
				q.top, q.topAt = e, at
				q.mode = q.mode&^modeTopFar | modeTopReg
				return
			}
			// pushNear's common case, here without its call: an
			// insertion from the back (the key's place is 1.1 keys
			// from the back on average in the §7 example; pushNear's
			// insertion from the front for a key in the earlier half
			// cost more in its test than it saved).
			h := q.near
			n, nh := len(h), q.nh
			if q.mode&modeNearHeap != 0 || n >= cap(h) { // >=: no bounds check below
				q.pushNearSlow(e)
				return
			}
			q.near = q.near[:n+1] // the length alone
			h = h[:n+1]
			// nh as a uint32 (it is below 2^24, the limit of pending
			// keys): the compiler then knows it is not negative, so
			// that i-1 and i are within h, and drops the loop's two
			// bounds checks.
			i := n
			for ; i > int(uint32(nh)); i-- {
				if h[i-1].at <= at {
					break
				}
				h[i] = h[i-1]
			}
			h[i] = e
			if n+1-nh > nearSortedMax {
				q.nearToHeap()
			}
		} else {
			q.pushFar(e)
		}
		return
	}
	q.pushBuckets(e)
}

// slotFor returns a slot of the slab holding (h, kind).
func (q *queue) slotFor(h Handler, kind uint32) uint32 {
	var slot uint32
	if q.runFree {
		slot = q.runSlot
		q.runFree = false
	} else if n := len(q.free); n > 0 {
		slot = q.free[n-1]
		q.free = q.free[:n-1]
	} else {
		slot = uint32(len(q.slab))
		if slot >= regBit {
			panic("engine: more than 2^23 events of unregistered handlers pending")
		}
		q.slab = append(q.slab, target{})
	}
	q.slab[slot] = target{h, kind}
	return slot
}

// reserve numbers a key as push would now, without pushing it: pushKey
// pushes it later, where it orders as if it had been pushed now.
func (q *queue) reserve() uint64 {
	q.sseq += 1 << slotBits
	if q.sseq == 0 {
		panic("engine: more than 2^40 events scheduled")
	}
	return q.sseq >> slotBits
}

// pushKey pushes an event at (at, seq), seq from reserve and not pushed
// before: an older key than push makes, so it is compared in full (time,
// then seq) wherever it goes. It is not at or before the last key popped.
func (q *queue) pushKey(at Time, seq uint64, h Handler, kind uint32, arg uint64) {
	q.pushKeySlot(at, seq, q.slotFor(h, kind), arg)
}

// pushKeySlot is pushKey for the target of slot.
func (q *queue) pushKeySlot(at Time, seq uint64, slot uint32, arg uint64) {
	e := key{at: at, ss: seq<<slotBits | uint64(slot), arg: arg}
	if q.mode&modeTopReg != 0 {
		q.mode &^= modeTopReg
		q.insertNear(q.top)
	}
	q.n++
	near := false
	if q.ringMask == 0 {
		near = at-q.last < q.span
	} else {
		if len(q.near) == q.nh {
			q.anchor(at)
		}
		switch d := at - q.cur; {
		case d < q.width:
			q.opened++
			near = true
		case d < q.span:
			q.pushRing(e) // later than every near key
			return
		}
	}
	if !near {
		heapPush(&q.far, e)
		q.setFarAt()
		q.retop()
		return
	}
	q.insertNear(e)
	q.retop()
}

// insertNear puts e, any key that belongs near (an old one too: it is
// compared in full), into near, sorted run or heap. It does not set top.
func (q *queue) insertNear(e key) {
	if q.mode&modeNearHeap != 0 {
		heapPush(&q.near, e)
		return
	}
	if q.nh > 0 && (q.nh == len(q.near) || lessBit(e, q.near[q.nh]) != 0) {
		// Before the run, into the slot before it (the register's key,
		// the earliest of all, goes there).
		q.nh--
		q.near[q.nh] = e
		return
	}
	if len(q.near) == cap(q.near) && q.nh > 0 {
		m := copy(q.near, q.near[q.nh:])
		q.near, q.nh = q.near[:m], 0
	}
	q.near = append(q.near, e)
	h := q.near
	i := len(h) - 1
	for i > q.nh && lessBit(e, h[i-1]) != 0 {
		h[i] = h[i-1]
		i--
	}
	h[i] = e
	if len(h)-q.nh > nearSortedMax {
		q.nearToHeap()
	}
}

// pushFar pushes e, a new key, into the far heap.
func (q *queue) pushFar(e key) {
	q.far = append(q.far, e)
	heapUpNew(q.far, len(q.far)-1)
	q.setFarAt()
	if q.n == 1 || e.at < q.topAt {
		q.top, q.topAt = e, e.at
		q.mode |= modeTopFar
	}
}

// pushBuckets pushes e (counted in n) into near, the ring or far when
// the ring has buckets.
func (q *queue) pushBuckets(e key) {
	if len(q.near) == q.nh {
		// Near, and so the ring, is empty: the open bucket becomes this
		// key's if the ring would hold it, else the last event's.
		q.anchor(e.at)
	}
	switch d := e.at - q.cur; {
	case d < q.width:
		q.opened++
		q.pushNear(e)
		if q.n == 1 || e.at < q.topAt {
			// e is near's first now.
			q.topAt = e.at
			q.mode &^= modeTopFar
		}
	case d < q.span:
		// Later than every near key, so never the top.
		q.pushRing(e)
	default:
		q.pushFar(e)
	}
}

// anchor opens, near and the ring being empty, the bucket of at if at is
// within the ring's span of the last event run, else the last event's.
func (q *queue) anchor(at Time) {
	if at-q.last < q.span {
		q.cur = at &^ (q.width - 1)
	} else {
		q.cur = q.last &^ (q.width - 1)
	}
}

func (q *queue) pushRing(e key) {
	b := uint64(e.at>>q.shift) & q.ringMask
	q.ring[b] = append(q.ring[b], e)
	q.ringBusy[b>>6] |= 1 << (b & 63)
	q.ringN++
}

func heapPush(hp *[]key, e key) {
	*hp = append(*hp, e)
	heapUp(*hp, len(*hp)-1)
}

// heapUp moves h[i] up to its place in the heap h[:i+1].
func heapUp(h []key, i int) {
	e := h[i]
	for i > 0 {
		p := (i - 1) >> 2
		pk := h[p]
		if pk.at < e.at || (pk.at == e.at && pk.ss < e.ss) {
			break
		}
		h[i] = pk
		i = p
	}
	h[i] = e
}

// heapUpNew is heapUp for a new key h[i]: its seq is the largest of all
// (push numbers every key it makes), so it goes after every key of its
// time and only times need comparing.
func heapUpNew(h []key, i int) {
	e := h[i]
	for i > 0 {
		p := (i - 1) >> 2
		pk := h[p]
		if pk.at <= e.at {
			break
		}
		h[i] = pk
		i = p
	}
	h[i] = e
}

// peekAt returns the time of the earliest event; the queue must not be empty.
func (q *queue) peekAt() Time { return q.topAt }

// topKey returns the earliest pending key; the queue must not be empty.
func (q *queue) topKey() key {
	if q.mode&(modeTopReg|modeTopFar) != 0 {
		return q.top
	}
	return q.near[q.nh]
}

// less orders keys by (at, ss) without a branch: the borrow out of the
// 128-bit subtraction (at, ss) − (bt, bss). Times are never negative (At
// and AtGlobal clamp to Now ≥ 0), so they compare as unsigned numbers.
func less(a, b key) bool { return lessBit(a, b) != 0 }

// lessBit is less as 1 or 0.
func lessBit(a, b key) uint64 {
	_, br := bits.Sub64(a.ss, b.ss, 0)
	_, br = bits.Sub64(uint64(a.at), uint64(b.at), br)
	return br
}

// pop removes the earliest event and returns its time and payload; the
// queue must not be empty.
func (q *queue) pop() (Time, payload) {
	k, ok := q.popFast()
	if !ok {
		k = q.popRun()
	}
	t := q.target(k)
	q.done()
	return k.at, payload{h: t.h, arg: k.arg, kind: t.kind}
}

// target returns the target of k, an event popRun gave out; an
// unregistered one's slot is runSlot until done.
func (q *queue) target(k key) target {
	slot := uint32(k.ss & slotMask)
	if slot&regBit != 0 {
		return q.reg[slot&^regBit]
	}
	q.runSlot, q.runFree = slot, true
	return q.slab[slot]
}

// done ends the event popRun gave out: its slot goes back to the free
// list unless a push took it.
func (q *queue) done() {
	if q.runFree {
		q.release()
	}
}

func (q *queue) release() {
	q.runFree = false
	q.slab[q.runSlot] = target{} // drop the handler reference for the GC
	q.free = append(q.free, q.runSlot)
}

// popRun is pop for a driver that runs the event at once (runLocked,
// Group.step, Step): it returns the event's key, whose handler handler
// gives; an unregistered handler's slot stays out of the free list while
// it runs, for its first push (runSlot), and done, after the handler,
// frees it if no push took it. The queue must not be empty and no event
// popRun gave out may be pending (done called).
func (q *queue) popRun() key {
	top := q.topKey()
	q.last = top.at
	if q.mode&modeTopReg != 0 {
		q.mode &^= modeTopReg
		q.n--
		if nh := q.nh; nh < len(q.near) && q.mode&modeNearHeap == 0 && q.farAt > q.near[nh].at {
			// retop's common case: near's first is next.
			q.topAt = q.near[nh].at
		} else if q.n > 0 {
			q.retop()
		} else {
			q.topAt = Never
		}
	} else if nh := q.nh + 1; q.mode&(modeTopFar|modeNearHeap) == 0 && nh < len(q.near) {
		// Most pops: the sorted run goes on, its next key or far's
		// top is the new top.
		q.nh = nh
		q.n--
		next := q.near[nh]
		// far may be empty when next is at Never (farAt is Never then
		// too); the test of its length comes only after farAt's.
		if q.farAt <= next.at && len(q.far) > 0 && lessBit(q.far[0], next) != 0 {
			q.top, q.topAt = q.far[0], q.farAt
			q.mode |= modeTopFar
		} else {
			q.topAt = next.at
		}
	} else {
		if q.mode&modeTopFar != 0 {
			heapPop(&q.far)
			q.setFarAt()
		} else {
			q.popNear()
			if q.nh == len(q.near) && q.ringN > 0 {
				q.openNext()
			}
		}
		q.n--
		if q.n > 0 {
			q.retop()
		} else {
			q.topAt = Never
		}
	}
	return top
}

// popFast is popRun's most common case: top is near's and the sorted run
// goes on, its next key earlier than far's top. It reports false, doing
// nothing, otherwise. Sim.runLocked and Group.step have it written out.
func (q *queue) popFast() (key, bool) {
	nh := q.nh + 1
	if q.mode != 0 || nh >= len(q.near) {
		return key{}, false
	}
	next := q.near[nh].at
	if q.farAt <= next {
		return key{}, false
	}
	k := q.near[nh-1]
	q.last = k.at
	q.nh = nh
	q.n--
	q.topAt = next
	return k, true
}

// openNext opens the first busy bucket after the open one: near is empty,
// and that bucket's keys become near's, sorted (or a heap when many).
func (q *queue) openNext() {
	if q.opens == adaptEvery {
		q.adapt()
		if len(q.near) > q.nh || q.ringN == 0 {
			return // relayout filled near, or every key went far
		}
	}
	c := uint64(q.cur>>q.shift) & q.ringMask
	// The first busy bucket from c+1 on, round the ring.
	i := (c + 1) & q.ringMask
	w := i >> 6
	m := q.ringBusy[w&(maxRingLen/64-1)] >> (i & 63)
	for m == 0 {
		w = (w + 1) & (q.ringMask >> 6)
		m = q.ringBusy[w&(maxRingLen/64-1)]
		i = w << 6
	}
	b := i + uint64(bits.TrailingZeros64(m))
	q.cur += Time((b-c)&q.ringMask) << q.shift
	r := q.ring[b]
	q.ring[b] = r[:0]
	q.ringBusy[b>>6] &^= 1 << (b & 63)
	q.ringN -= len(r)
	q.opens++
	q.opened += len(r)
	q.nh = 0
	if len(r) == 1 {
		q.near = append(q.near[:0], r[0])
		q.mode &^= modeNearHeap
		return
	}
	q.near = append(q.near[:0], r...)
	q.settleNear()
}

// settleNear orders near[0:], just filled in any order: sorted, or a heap
// when there are more than nearSortedMax keys.
func (q *queue) settleNear() {
	h := q.near
	if len(h) > nearSortedMax {
		for i := range h {
			heapUp(h, i)
		}
		q.mode |= modeNearHeap
		return
	}
	switch len(h) {
	case 2:
		h[0], h[1] = order2(h[0], h[1])
	case 3:
		h[0], h[1] = order2(h[0], h[1])
		h[1], h[2] = order2(h[1], h[2])
		h[0], h[1] = order2(h[0], h[1])
	case 4:
		h[0], h[1] = order2(h[0], h[1])
		h[2], h[3] = order2(h[2], h[3])
		h[0], h[2] = order2(h[0], h[2])
		h[1], h[3] = order2(h[1], h[3])
		h[1], h[2] = order2(h[1], h[2])
	}
	q.mode &^= modeNearHeap
	if len(h) <= 4 {
		return
	}
	// Insertion sort: the keys were mostly pushed in time order.
	for i := 1; i < len(h); i++ {
		e := h[i]
		j := i
		for j > 0 && lessBit(e, h[j-1]) != 0 {
			h[j] = h[j-1]
			j--
		}
		h[j] = e
	}
}

// order2 returns a and b in order, without a branch: whether they are in
// order is a coin toss (sorting networks of these sort a bucket of up to
// four keys).
func order2(a, b key) (key, key) {
	m := -lessBit(b, a)
	dat := (uint64(a.at) ^ uint64(b.at)) & m
	dss := (a.ss ^ b.ss) & m
	darg := (a.arg ^ b.arg) & m
	return key{at: Time(uint64(a.at) ^ dat), ss: a.ss ^ dss, arg: a.arg ^ darg},
		key{at: Time(uint64(b.at) ^ dat), ss: b.ss ^ dss, arg: b.arg ^ darg}
}

// adapt judges the bucket width by the keys that entered near since the
// last judgement, adaptEvery buckets opened, and changes it by half or
// double if they were too many or too few.
func (q *queue) adapt() {
	switch {
	case q.opened > adaptMany*adaptEvery && q.shift > minShift:
		q.relayout(q.shift - 1)
	case q.opened < adaptFew*adaptEvery && q.shift < maxShift:
		q.relayout(q.shift + 1)
	default:
		q.opens, q.opened = 0, 0
	}
}

// relayout sets the bucket width to 2^shift and lays near and the ring out
// again: each key goes where a push would put it now, with the last
// event's bucket open (every pending key is due at or after it).
func (q *queue) relayout(shift uint) {
	keys := append(q.moved[:0], q.near[q.nh:]...)
	if q.mode&modeTopReg != 0 {
		q.mode &^= modeTopReg
		keys = append(keys, q.top)
	}
	for b := range q.ring[:q.ringMask+1] {
		keys = append(keys, q.ring[b]...)
		q.ring[b] = q.ring[b][:0]
	}
	q.moved = keys
	clear(q.ringBusy[:])
	q.ringN = 0
	q.opens, q.opened = 0, 0
	q.setShift(shift)
	q.near, q.nh = q.near[:0], 0
	q.cur = q.last &^ (q.width - 1)
	if len(keys) > nearSortedMax && shift > minShift && shift == maxShift {
		// Leaving the sorted run for the buckets: start at a width
		// that puts about adaptFew keys in a bucket, as the keys now
		// pending are spread (they are due within the span).
		for shift > minShift && len(keys)>>(spanShift-shift) > adaptFew {
			shift--
		}
		q.setShift(shift)
		q.cur = q.last &^ (q.width - 1)
	}
	for _, e := range keys {
		switch d := e.at - q.cur; {
		case d < q.width:
			q.near = append(q.near, e)
		case d < q.span:
			q.pushRing(e)
		default:
			heapPush(&q.far, e)
		}
	}
	q.setFarAt()
	if len(q.near) > nearSortedMax && shift > minShift {
		// The keys crowd the open bucket: narrower still.
		q.relayout(shift - 1)
		return
	}
	q.settleNear()
	if len(q.near) == 0 && q.ringN > 0 {
		q.openNext()
	}
	if q.n > 0 {
		q.retop() // the earliest key may have moved to far
	}
}

// setFarAt sets farAt from far.
func (q *queue) setFarAt() {
	q.farAt = Never
	if len(q.far) > 0 {
		q.farAt = q.far[0].at
	}
}

// retop sets top to the earlier of near's and far's first keys; the queue
// must not be empty.
func (q *queue) retop() {
	if q.nh < len(q.near) && (len(q.far) == 0 || !less(q.far[0], q.near[q.nh])) {
		q.topAt = q.near[q.nh].at
		q.mode &^= modeTopFar
	} else {
		q.top, q.topAt = q.far[0], q.far[0].at
		q.mode |= modeTopFar
	}
}

// The near keys are few (tens: a link's next arrival, a port's end of
// frame, a pacer's wake-up) and a new one most often belongs near the
// latest: while there are at most nearSortedMax, they are kept as a sorted
// run near[nh:], so that a pop is an index step and a push an insertion
// from the back (cheaper than a heap's sift down and up). Beyond that
// they are a heap (a sorted run is one already); back under
// nearSortedMin, sorted again.
//
// A near heap past nearHeapMax keys narrows the buckets at once.
const (
	nearSortedMax = 48
	nearSortedMin = 16
	nearHeapMax   = 4 * nearSortedMax
)

// pushNear pushes e, a new key, into near. Its seq is the largest of all
// (push numbers every key it makes), so it goes after every key of its
// time and only times need comparing: a key of near is later than e when
// its time is. The sorted run with room to grow is the path of almost
// every push, kept free of calls; pushNearSlow has the rest.
func (q *queue) pushNear(e key) {
	h := q.near
	n, nh := len(h), q.nh
	if q.mode&modeNearHeap != 0 || n >= cap(h) {
		q.pushNearSlow(e)
		return
	}
	at := e.at
	if nh > 0 && n > nh && at < h[(nh+n)>>1].at {
		// In the earlier half: in from the front, into the slot
		// before the run.
		i := nh - 1
		for i+1 < n && h[i+1].at <= at {
			h[i] = h[i+1]
			i++
		}
		h[i] = e
		q.nh = nh - 1
		return
	}
	q.near = q.near[:n+1] // the length alone: no pointer written
	h = h[:n+1]
	i := n
	for ; i > int(uint32(nh)); i-- { // as pushSlot's: no bounds checks
		if h[i-1].at <= at {
			break
		}
		h[i] = h[i-1]
	}
	h[i] = e
	if n+1-nh > nearSortedMax {
		q.nearToHeap()
	}
}

// pushNearSlow is pushNear for a near heap or a full slice: the sorted
// run moves to the front of its slice (or the slice grows), then
// pushNear takes the key.
func (q *queue) pushNearSlow(e key) {
	if q.mode&modeNearHeap != 0 {
		q.near = append(q.near, e)
		heapUpNew(q.near, len(q.near)-1)
		if len(q.near) > nearHeapMax && q.shift > minShift {
			// The open bucket crowds faster than adapt judges
			// (every adaptEvery buckets opened: rarely, when they
			// are wide): narrower (relayout sets top, the new key
			// included).
			q.relayout(q.shift - 1)
		}
		return
	}
	if q.nh > 0 {
		m := copy(q.near, q.near[q.nh:])
		q.near, q.nh = q.near[:m], 0
	} else {
		q.near = slices.Grow(q.near, 1)
	}
	q.pushNear(e)
}

// nearToHeap makes near, a sorted run grown past nearSortedMax keys, a
// heap (a sorted run moved to the front is one) and narrows the buckets.
func (q *queue) nearToHeap() {
	h := q.near
	m := copy(h, h[q.nh:])
	q.near = h[:m]
	q.nh = 0
	q.mode |= modeNearHeap
	if q.shift > minShift {
		// Too many keys for a sorted run: narrower buckets
		// (relayout sets top, the new key included).
		q.relayout(q.shift - 1)
	}
}

func (q *queue) popNear() {
	if q.mode&modeNearHeap == 0 {
		q.nh++
		if q.nh == len(q.near) {
			q.near = q.near[:0]
			q.nh = 0
		}
		return
	}
	heapPop(&q.near)
	if len(q.near) < nearSortedMin {
		slices.SortFunc(q.near, func(a, b key) int {
			if less(a, b) {
				return -1
			}
			return 1
		})
		q.mode &^= modeNearHeap
	}
}

// heapPop removes the top of the heap *hp.
//
// The hole left at the root goes down to a leaf along the smaller child
// (three branch-free comparisons per level for four children) and the last
// key goes up from there (Floyd's bottom-up heap): the last key almost
// always belongs near the leaves, so this saves the comparison with it at
// every level on the way down.
func heapPop(hp *[]key) {
	h := *hp
	n := len(h) - 1
	last := h[n]
	h = h[:n]
	*hp = h
	if n == 0 {
		return
	}
	i := 0
	for {
		c := i<<2 + 1
		if c+3 < n {
			// Four children: a tournament of two pairs, with the
			// comparisons' borrows as indexes (no branch to mispredict).
			k := (*[4]key)(h[c : c+4])
			j0 := lessBit(k[1], k[0])
			j1 := 2 + lessBit(k[3], k[2])
			w := lessBit(k[j1&3], k[j0&3])
			j := j0 ^ (j0^j1)&-w
			h[i] = k[j&3]
			i = c + int(j)
			continue
		}
		if c >= n {
			break
		}
		m := c
		for j := c + 1; j < n; j++ {
			if less(h[j], h[m]) {
				m = j
			}
		}
		h[i] = h[m]
		i = m
		break
	}
	for i > 0 {
		p := (i - 1) >> 2
		if !less(last, h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = last
}
