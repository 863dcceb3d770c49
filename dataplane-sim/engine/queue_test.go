package engine

import (
	"container/heap"
	"math/rand/v2"
	"testing"
)

// refHeap is the plainest priority queue of (time, seq): container/heap.
type refEntry struct {
	at  Time
	seq uint64
	arg uint64
}

type refHeap []refEntry

func (h refHeap) Len() int { return len(h) }
func (h refHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || (h[i].at == h[j].at && h[i].seq < h[j].seq)
}
func (h refHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *refHeap) Push(x any)   { *h = append(*h, x.(refEntry)) }
func (h *refHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// The queue against container/heap under interleaved pushes and pops, as a
// model drives it: every pop gives the same event, for heaps from empty to
// thousands of events, many ties, times near now, anywhere in the near
// window, about farAfter ahead (either side) and far ahead.
func TestQueueInterleavedOrder(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		var q queue
		var ref refHeap
		var seq uint64
		var now Time
		target := 1 + r.IntN(3000) // heap size the run hovers around
		for op := 0; op < 20000; op++ {
			if q.len() != ref.Len() {
				t.Fatalf("seed %d op %d: len %d, want %d", seed, op, q.len(), ref.Len())
			}
			if q.len() == 0 || (q.len() < target && r.IntN(2) == 0) || r.IntN(4) == 0 {
				var at Time
				switch r.IntN(6) {
				case 0:
					at = now // ties at now
				case 1:
					at = now + Time(r.IntN(4)) // ties near now
				case 2:
					at = now + Time(r.IntN(1000))
				case 3:
					at = now + farAfter - 2 + Time(r.IntN(5)) // either side of the far heap's bound
				case 4:
					at = now + Time(r.Int64N(int64(farAfter))) // anywhere in the near window
				default:
					at = now + Time(r.Int64N(1<<40))
				}
				seq++
				q.push(at, nil, 0, seq)
				heap.Push(&ref, refEntry{at: at, seq: seq, arg: seq})
				continue
			}
			at, p := q.pop()
			want := heap.Pop(&ref).(refEntry)
			if at != want.at || p.arg != want.arg {
				t.Fatalf("seed %d op %d: popped (%v, %d), want (%v, %d)", seed, op, at, p.arg, want.at, want.arg)
			}
			now = at
		}
	}
}
