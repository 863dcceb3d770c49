package sim

import (
	"cmp"
	"slices"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// startQueue hands out items in the order of their start times (ties in
// the order they were given), each once, when a sample reaches it: the
// samplers walk the flows that have started, not the thousands a
// generated workload has yet to start.
type startQueue[T any] struct {
	items  []T
	starts []engine.Time
	next   int
}

func newStartQueue[T any](items []T, start func(T) engine.Time) startQueue[T] {
	items = slices.Clone(items)
	slices.SortStableFunc(items, func(a, b T) int { return cmp.Compare(start(a), start(b)) })
	starts := make([]engine.Time, len(items))
	for i, it := range items {
		starts[i] = start(it)
	}
	return startQueue[T]{items: items, starts: starts}
}

// due returns the items not handed out yet whose start is at most now.
func (q *startQueue[T]) due(now engine.Time) []T {
	i := q.next
	for q.next < len(q.starts) && q.starts[q.next] <= now {
		q.next++
	}
	return q.items[i:q.next]
}
