package engine

// event is one pending event, stored by value in the queue. The handler is an
// interface (two words) so that any model object can be a target without a
// closure allocation; kind and arg let one object multiplex several timers.
type event struct {
	at   Time
	seq  uint64 // insertion order: FIFO among events at the same time
	h    Handler
	arg  uint64
	kind uint32
}

func (a *event) less(b *event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

// queue is a 4-ary min-heap of events ordered by (at, seq). A 4-ary heap has
// half the depth of a binary one and its four children share a cache line or
// two, which matters more than the extra comparisons. The number of pending
// events stays small in our models (one per link, port and timer), so a
// calendar queue would not pay for its bookkeeping.
type queue struct {
	ev []event
}

func (q *queue) len() int { return len(q.ev) }

func (q *queue) push(e event) {
	q.ev = append(q.ev, e)
	// sift up
	h := q.ev
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !e.less(&h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = e
}

// peek returns the earliest event; the queue must not be empty.
func (q *queue) peek() *event { return &q.ev[0] }

func (q *queue) pop() event {
	h := q.ev
	top := h[0]
	n := len(h) - 1
	last := h[n]
	h[n] = event{} // drop the handler reference for the GC
	h = h[:n]
	q.ev = h
	if n == 0 {
		return top
	}
	// sift down
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		end := c + 4
		if end > n {
			end = n
		}
		for j := c + 1; j < end; j++ {
			if h[j].less(&h[m]) {
				m = j
			}
		}
		if !h[m].less(&last) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = last
	return top
}
