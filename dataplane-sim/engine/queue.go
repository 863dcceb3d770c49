package engine

import (
	"math/bits"
	"slices"
)

// The event queue orders events by (time, seq), seq being the insertion
// counter, so events at the same time run FIFO. Keys are 16 bytes, (time,
// seq<<24|slot), over a slab of payloads (handler, kind, arg) indexed by
// slot: the payload is written once and read once, and only keys move.
//
// Keys live in two 4-ary min-heaps (half the depth of a binary heap, four
// children in one cache line; pop is Floyd's bottom-up sift with branch-free
// comparisons): near holds the events due within farAfter of the last event
// run, far the later ones. Models keep a few events close ahead (a link's
// next arrival, a port's end of frame) and many far ahead, most of them
// superseded timers (a QP restarts its 300 µs rate timer on every cut, and
// the old ones stay queued until they fire and do nothing): apart, the near
// events are sifted through a heap of tens, not hundreds, and a new far
// timer, the latest of all, stops at the bottom of its heap at once. The
// earliest key of both is kept in top.
//
// The order in which events run is the order of their keys, which are
// unique; which heap holds a key changes only the cost
// (TestQueueInterleavedOrder checks it against container/heap).
//
// Limits: 2^24 (16.7 M) events pending at once, 2^40 (10^12) events
// scheduled over the life of a Sim; both panic when exceeded.

const (
	slotBits = 24
	slotMask = 1<<slotBits - 1
	maxSeq   = 1<<(64-slotBits) - 1
	// farAfter is how far ahead of the last event run an event goes to the
	// far heap.
	farAfter = 16 * Microsecond
)

type key struct {
	at Time
	ss uint64 // seq<<slotBits | slot
}

type payload struct {
	h    Handler
	arg  uint64
	kind uint32
}

type queue struct {
	// near is a sorted run near[nh:] while it holds few keys, else
	// (nearHeap) a heap like far, with nh 0.
	near, far []key
	nh        int
	nearHeap  bool
	n         int  // events pending (both)
	top       key  // the earliest pending key, when n > 0
	topFar    bool // top is far's top (else near's)
	last      Time // the time of the last key popped
	slab      []payload
	free      []uint32
	seq       uint64
}

func (q *queue) len() int { return q.n }

func (q *queue) push(at Time, h Handler, kind uint32, arg uint64) {
	var slot uint32
	if n := len(q.free); n > 0 {
		slot = q.free[n-1]
		q.free = q.free[:n-1]
	} else {
		slot = uint32(len(q.slab))
		if slot > slotMask {
			panic("engine: more than 2^24 events pending")
		}
		q.slab = append(q.slab, payload{})
	}
	q.slab[slot] = payload{h: h, arg: arg, kind: kind}
	q.seq++
	if q.seq > maxSeq {
		panic("engine: more than 2^40 events scheduled")
	}
	e := key{at: at, ss: q.seq<<slotBits | uint64(slot)}

	far := at-q.last > farAfter
	if far {
		heapPush(&q.far, e)
	} else {
		q.pushNear(e)
	}
	if q.n == 0 || less(e, q.top) {
		q.top, q.topFar = e, far
	}
	q.n++
}

func heapPush(hp *[]key, e key) {
	*hp = append(*hp, e)
	h2 := *hp
	i := len(h2) - 1
	for i > 0 {
		p := (i - 1) >> 2
		pk := h2[p]
		if pk.at < e.at || (pk.at == e.at && pk.ss < e.ss) {
			break
		}
		h2[i] = pk
		i = p
	}
	h2[i] = e
}

// peekAt returns the time of the earliest event; the queue must not be empty.
func (q *queue) peekAt() Time { return q.top.at }

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
	top := q.top
	q.last = top.at
	if q.topFar {
		heapPop(&q.far)
	} else {
		q.popNear()
	}
	q.n--
	if q.n > 0 {
		// The new earliest key: one of the two tops.
		switch {
		case len(q.far) == 0:
			q.top, q.topFar = q.near[q.nh], false
		case len(q.near) == q.nh || less(q.far[0], q.near[q.nh]):
			q.top, q.topFar = q.far[0], true
		default:
			q.top, q.topFar = q.near[q.nh], false
		}
	}
	slot := uint32(top.ss & slotMask)
	p := q.slab[slot]
	q.slab[slot] = payload{} // drop the handler reference for the GC
	q.free = append(q.free, slot)
	return top.at, p
}

// The near keys are few (tens: a link's next arrival, a port's end of
// frame, a pacer's wake-up) and a new one most often belongs near the
// latest: while there are at most nearSortedMax, they are kept as a sorted
// run near[nh:], so that a pop is an index step and a push an insertion
// from the back (cheaper than a heap's sift down and up). Beyond that
// they are a heap (a sorted run is one already); back under
// nearSortedMin, sorted again.
const (
	nearSortedMax = 48
	nearSortedMin = 16
)

func (q *queue) pushNear(e key) {
	if q.nearHeap {
		heapPush(&q.near, e)
		return
	}
	h := q.near
	if q.nh > 0 && len(h) > q.nh && lessBit(e, h[(q.nh+len(h))>>1]) != 0 {
		// In the earlier half: in from the front, into the slot
		// before the run.
		i := q.nh - 1
		for i+1 < len(h) && lessBit(h[i+1], e) != 0 {
			h[i] = h[i+1]
			i++
		}
		h[i] = e
		q.nh--
		return
	}
	if q.nh > 0 && len(h) == cap(h) {
		// Move the run to the front instead of growing.
		m := copy(h, h[q.nh:])
		h = h[:m]
		q.nh = 0
	}
	h = append(h, e)
	q.near = h
	i := len(h) - 1
	for i > q.nh && lessBit(e, h[i-1]) != 0 {
		h[i] = h[i-1]
		i--
	}
	h[i] = e
	if len(h)-q.nh > nearSortedMax {
		// A heap from here: the sorted run moved to the front is one.
		m := copy(h, h[q.nh:])
		q.near = h[:m]
		q.nh = 0
		q.nearHeap = true
	}
}

func (q *queue) popNear() {
	if !q.nearHeap {
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
		q.nearHeap = false
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
