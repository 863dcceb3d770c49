package engine

import "math/bits"

// The event queue orders events by (time, seq), seq being the insertion
// counter, so events at the same time run FIFO. Keys are 16 bytes, (time,
// seq<<24|slot).
//
// Events due within farAfter of the last event run (a link's next arrival,
// a port's end of frame, a pacer's wake-up: the packets' own events) are
// near. They sit in a calendar: a ring of buckets of 1<<bucketShift ns,
// each a list of nodes (key and payload) sorted by key, and a bitmap of
// the buckets that hold any. A push appends to its bucket (or, rarely,
// goes in before the events there that are later); a pop takes the head
// of the first occupied bucket from the last event's, found by a bit scan.
// Pending near events lie between the last event run and farAfter later
// (each was pushed no more than farAfter after an earlier last event, and
// none is earlier than the last one popped), which is fewer than half the
// ring's buckets: no bucket holds events of two laps, and the first
// occupied bucket from the last event's holds the earliest. Nodes come
// from a free list, last freed first, so the few that are in use stay in
// the cache.
//
// Later events are far: their keys sit in a 4-ary min-heap (pop is
// Floyd's bottom-up sift with branch-free comparisons) over a slab of
// payloads indexed by slot, so that sifting moves only keys. Models keep
// many events far ahead, most of them superseded timers (a QP restarts its
// 300 µs rate timer on every cut, and the old ones stay queued until they
// fire and do nothing); a new far timer, the latest of all, stops at the
// bottom of the heap at once. The earliest key of both is kept in top.
//
// The order in which events run is the order of their keys, which are
// unique; where a key is kept changes only the cost
// (TestQueueInterleavedOrder checks it against container/heap).
//
// Limits: 2^24 (16.7 M) far events and 2^31 near ones pending at once,
// 2^40 (10^12) events scheduled over the life of a Sim; all panic when
// exceeded.

const (
	slotBits = 24
	slotMask = 1<<slotBits - 1
	maxSeq   = 1<<(64-slotBits) - 1
	// farAfter is how far ahead of the last event run an event goes to the
	// far heap.
	farAfter = 16 * Microsecond

	// The near calendar: numBuckets buckets of 1<<bucketShift ns, more
	// than twice farAfter in all (see above).
	bucketShift = 6
	numBuckets  = 512
	bucketMask  = numBuckets - 1
	occWords    = numBuckets / 64
)

type key struct {
	at Time
	ss uint64 // seq<<slotBits | slot (slot 0 for a near event)
}

type payload struct {
	h    Handler
	arg  uint64
	kind uint32
}

// node is a near event: its key and payload, and the next node of its
// bucket (or of the free list), 0 for none. Node 0 is never an event: its
// key, (0, 0), is the least, and it is the tail of an empty bucket, so that
// a push appends to every bucket the same way.
type node struct {
	key
	payload
	next int32
}

// bucket is one slot of the near calendar: a list of nodes sorted by key,
// head 0 and tail 0 when empty.
type bucket struct{ head, tail int32 }

type queue struct {
	buckets [numBuckets]bucket
	occ     [occWords]uint64 // bit i: buckets[i] holds an event
	nodes   []node           // the near events' nodes
	freeN   int32            // the first free node, 0 for none
	nearN   int              // near events pending

	far    []key
	n      int  // events pending (both)
	top    key  // the earliest pending key, when n > 0
	topFar bool // top is far's top (else the calendar's)
	last   Time // the time of the last key popped
	slab   []payload
	free   []uint32
	seq    uint64
}

func (q *queue) len() int { return q.n }

func bucketOf(t Time) int { return int(uint64(t)>>bucketShift) & bucketMask }

func (q *queue) push(at Time, h Handler, kind uint32, arg uint64) {
	q.seq++
	if q.seq > maxSeq {
		panic("engine: more than 2^40 events scheduled")
	}
	// Unsigned: a time before the last event's (no Sim pushes one) goes
	// to the heap, which takes any.
	if uint64(at-q.last) <= uint64(farAfter) {
		e := key{at: at, ss: q.seq << slotBits}
		q.pushNear(e, h, kind, arg)
		if q.n == 0 || less(e, q.top) {
			q.top, q.topFar = e, false
		}
		q.n++
		return
	}
	var slot uint32
	if n := len(q.free); n > 0 {
		slot = q.free[n-1]
		q.free = q.free[:n-1]
	} else {
		slot = uint32(len(q.slab))
		if slot > slotMask {
			panic("engine: more than 2^24 far events pending")
		}
		q.slab = append(q.slab, payload{})
	}
	q.slab[slot] = payload{h: h, arg: arg, kind: kind}
	e := key{at: at, ss: q.seq<<slotBits | uint64(slot)}
	heapPush(&q.far, e)
	if q.n == 0 || less(e, q.top) {
		q.top, q.topFar = e, true
	}
	q.n++
}

// pushNear adds the near event e to its bucket of the calendar.
func (q *queue) pushNear(e key, h Handler, kind uint32, arg uint64) {
	x := q.freeN
	if x != 0 {
		q.freeN = q.nodes[x].next
	} else {
		x = q.newNode()
	}
	nodes := q.nodes
	nd := &nodes[x]
	nd.key = e
	nd.h, nd.arg, nd.kind = h, arg, kind
	nd.next = 0
	i := bucketOf(e.at)
	b := &q.buckets[i]
	q.occ[i>>6] |= 1 << (i & 63)
	q.nearN++
	if t := b.tail; lessBit(e, nodes[t].key) == 0 {
		// The latest in its bucket (most pushes), or the first: then
		// the tail is node 0, whose next is never read. Without a
		// branch on which: that is a coin toss.
		nodes[t].next = x
		b.tail = x
		h := b.head
		if h == 0 {
			h = x
		}
		b.head = h
		return
	}
	if lessBit(e, nodes[b.head].key) != 0 {
		nodes[x].next = b.head
		b.head = x
		return
	}
	// After the last node not later than e (a bucket holds a few).
	prev := b.head
	for {
		n := nodes[prev].next
		if lessBit(e, nodes[n].key) != 0 {
			nodes[x].next = n
			nodes[prev].next = x
			return
		}
		prev = n
	}
}

// newNode adds a node to the pool and returns its number.
func (q *queue) newNode() int32 {
	if len(q.nodes) == 0 {
		q.nodes = make([]node, 1, 64) // node 0
	}
	x := len(q.nodes)
	if x > 1<<31-1 {
		panic("engine: more than 2^31 near events pending")
	}
	q.nodes = append(q.nodes, node{})
	return int32(x)
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
	var p payload
	if q.topFar {
		heapPop(&q.far)
		slot := uint32(top.ss & slotMask)
		p = q.slab[slot]
		q.slab[slot] = payload{} // drop the handler reference for the GC
		q.free = append(q.free, slot)
	} else {
		i := bucketOf(top.at)
		b := &q.buckets[i]
		x := b.head
		nd := &q.nodes[x]
		p = nd.payload
		nd.h = nil // drop the handler reference for the GC
		nx := nd.next
		b.head = nx
		nd.next = q.freeN
		q.freeN = x
		q.nearN--
		// Without a branch on whether the bucket is now empty: a coin
		// toss.
		t, m := b.tail, uint64(0)
		if nx == 0 {
			t, m = 0, 1<<(i&63)
		}
		b.tail = t
		q.occ[i>>6] &^= m
	}
	q.n--
	if q.n > 0 {
		// The new earliest key: the calendar's or the heap's.
		if q.nearN == 0 {
			q.top, q.topFar = q.far[0], true
		} else {
			nt := q.nodes[q.buckets[q.firstBucket(bucketOf(top.at))].head].key
			if len(q.far) > 0 && less(q.far[0], nt) {
				q.top, q.topFar = q.far[0], true
			} else {
				q.top, q.topFar = nt, false
			}
		}
	}
	return top.at, p
}

// firstBucket returns the first occupied bucket from i on, cyclically;
// one must be occupied.
func (q *queue) firstBucket(i int) int {
	w := i >> 6
	m := q.occ[w] & (^uint64(0) << (i & 63))
	for m == 0 {
		// Past the end of word w (back to it last, whole: its buckets
		// before i are the ring's latest).
		w = (w + 1) & (occWords - 1)
		m = q.occ[w]
	}
	return w<<6 | bits.TrailingZeros64(m)
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
