package subscribe

import (
	"sync"

	"github.com/lhcnp/lhcnp/gnmi/store"
)

// entry is one pending item of a stream: a leaf value, a leaf delete, or a
// sync marker (leaf == nil).
type entry struct {
	leaf *store.Node
	val  *store.Value // nil: delete
	ts   int64
	seq  uint64 // Value.Ver for updates, the Apply's Seq for deletes
	dups uint32 // values replaced while pending
	kind store.Kind
}

// queue is a stream's coalescing queue keyed by leaf: a leaf has at most one
// pending entry, which later values replace in place (keeping its position),
// so a stalled subscriber holds at most one entry per leaf and publishers
// never wait for it. It is safe for concurrent use.
type queue struct {
	mu        sync.Mutex
	items     []entry
	byKey     map[string]int // leaf key → index in items
	signal    chan struct{}  // capacity 1: something was queued
	coalesced uint64
}

func newQueue() *queue {
	return &queue{byKey: map[string]int{}, signal: make(chan struct{}, 1)}
}

// insertLocked adds or replaces the entry of e.leaf; an older value (smaller
// seq) never replaces a newer one.
func (q *queue) insertLocked(e entry) {
	if e.leaf == nil {
		q.items = append(q.items, e)
		return
	}
	key := e.leaf.Key()
	if i, ok := q.byKey[key]; ok {
		old := &q.items[i]
		if e.seq < old.seq || (e.seq == old.seq && e.ts < old.ts) {
			return
		}
		if e.seq != old.seq || (old.val == nil) != (e.val == nil) {
			e.dups = old.dups + 1
			q.coalesced++
		} else {
			e.dups = old.dups
		}
		*old = e
		return
	}
	q.byKey[key] = len(q.items)
	q.items = append(q.items, e)
}

func (q *queue) insert(e entry) {
	q.mu.Lock()
	q.insertLocked(e)
	q.mu.Unlock()
	q.wake()
}

func (q *queue) wake() {
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// drain takes every pending entry, handing the queue spare (emptied) as its
// new storage, and returns the coalesced count so far.
func (q *queue) drain(spare []entry) ([]entry, uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = spare[:0]
	clear(q.byKey)
	return items, q.coalesced
}

// Len returns the number of pending entries.
func (q *queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}
