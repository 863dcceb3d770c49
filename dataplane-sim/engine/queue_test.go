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
// thousands of events, many ties, times near now, anywhere in the first
// 16 µs, about the ring's end (either side) and far ahead, in phases of
// other densities so that the bucket width adapts both ways (the test
// fails unless it saw the narrowest and the widest).
func TestQueueInterleavedOrder(t *testing.T) {
	shifts := map[uint]bool{}
	for seed := uint64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		var q queue
		q.init()
		var ref refHeap
		var seq uint64
		var now Time
		var target int   // heap size the run hovers around
		var spread int64 // how far ahead most events are due
		for op := 0; op < 20000; op++ {
			if op%2500 == 0 {
				target, spread = 1+r.IntN(3000), 1<<r.IntN(15)
			}
			if q.len() != ref.Len() {
				t.Fatalf("seed %d op %d: len %d, want %d", seed, op, q.len(), ref.Len())
			}
			if q.len() == 0 || (q.len() < target && r.IntN(2) == 0) || r.IntN(4) == 0 {
				var at Time
				switch r.IntN(8) {
				case 0:
					at = now // ties at now
				case 1:
					at = now + Time(r.IntN(4)) // ties near now
				case 2, 6, 7:
					at = now + Time(r.Int64N(spread))
				case 3:
					at = q.cur + q.span - 2 + Time(r.IntN(5)) // either side of the ring's end
					at = max(at, now)
				case 4:
					at = now + Time(r.Int64N(int64(16*Microsecond))) // anywhere in the first 16 µs
				case 5:
					at = now + Time(r.Int64N(1<<40))
				}
				seq++
				q.push(at, nil, 0, seq)
				heap.Push(&ref, refEntry{at: at, seq: seq, arg: seq})
				continue
			}
			shifts[q.shift] = true
			at, p := q.pop()
			want := heap.Pop(&ref).(refEntry)
			if at != want.at || p.arg != want.arg {
				t.Fatalf("seed %d op %d: popped (%v, %d), want (%v, %d)", seed, op, at, p.arg, want.at, want.arg)
			}
			now = at
		}
	}
	if !shifts[minShift] || !shifts[maxShift] {
		t.Errorf("bucket widths seen (shift): %v, want %d and %d among them", shifts, minShift, maxShift)
	}
}

// Keys reserved and pushed later (Sim.Reserve, AtKey) among new ones:
// every pop against container/heap, which gets each reserved key with the
// seq it was reserved with, when it is pushed. A reserved key is pushed
// only while it is after the last key popped (AtKey's contract); the
// others are dropped. Runs at every bucket width, as the test above.
func TestQueueReservedKeys(t *testing.T) {
	shifts := map[uint]bool{}
	for seed := uint64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 11))
		var q queue
		q.init()
		var ref refHeap
		var seq uint64
		var last refEntry // the last key popped
		var reserved []refEntry
		var target int
		var spread int64
		for op := 0; op < 20000; op++ {
			if op%2500 == 0 {
				target, spread = 1+r.IntN(3000), 1<<r.IntN(15)
			}
			if q.len() != ref.Len() {
				t.Fatalf("seed %d op %d: len %d, want %d", seed, op, q.len(), ref.Len())
			}
			now := last.at
			at := now + Time(r.Int64N(spread))
			switch r.IntN(6) {
			case 0:
				at = now
			case 1:
				at = now + Time(r.Int64N(1<<40))
			}
			switch {
			case r.IntN(5) == 0:
				// Reserve.
				seq++
				if s := q.reserve(); s != seq {
					t.Fatalf("seed %d op %d: reserved seq %d, want %d", seed, op, s, seq)
				}
				reserved = append(reserved, refEntry{at: at, seq: seq, arg: seq})
			case len(reserved) > 0 && r.IntN(4) == 0:
				// Push a reserved key, if it is still ahead.
				i := r.IntN(len(reserved))
				k := reserved[i]
				reserved = append(reserved[:i], reserved[i+1:]...)
				if k.at < last.at || k.at == last.at && k.seq < last.seq {
					continue
				}
				q.pushKey(k.at, k.seq, nil, 0, k.arg)
				heap.Push(&ref, k)
			case q.len() == 0 || (q.len() < target && r.IntN(2) == 0) || r.IntN(4) == 0:
				seq++
				q.push(at, nil, 0, seq)
				heap.Push(&ref, refEntry{at: at, seq: seq, arg: seq})
			default:
				shifts[q.shift] = true
				at, p := q.pop()
				want := heap.Pop(&ref).(refEntry)
				if at != want.at || p.arg != want.arg {
					t.Fatalf("seed %d op %d: popped (%v, %d), want (%v, %d)", seed, op, at, p.arg, want.at, want.arg)
				}
				last = want
			}
		}
	}
	if !shifts[minShift] || !shifts[maxShift] {
		t.Errorf("bucket widths seen (shift): %v, want %d and %d among them", shifts, minShift, maxShift)
	}
}

// Run against container/heap: handlers, registered (AtID) and not (At),
// schedule new events at random delays (ties at now, a few ns, anywhere
// in the near span, far beyond it) as events run, and the order in which
// Run runs them is the heap's, in which a twin of the handlers pushes the
// same events (the same random draws, in the same order, as long as the
// orders agree). This drives runLocked's pops written out, the key that
// waits alone in top among them, which the tests above, through pop, do
// not.
func TestRunOrderAgainstHeap(t *testing.T) {
	const events = 30000
	for seed := uint64(1); seed <= 20; seed++ {
		delay := func(r *rand.Rand) Time {
			switch r.IntN(6) {
			case 0:
				return 0
			case 1:
				return Time(r.IntN(8))
			case 2, 3:
				return Time(r.IntN(2000))
			case 4:
				return Time(r.Int64N(int64(16 * Microsecond)))
			}
			return Time(r.Int64N(int64(2 * Millisecond)))
		}
		// The engine.
		s := New()
		r := rand.New(rand.NewPCG(seed, 5))
		var got []refEntry
		next := uint64(0)
		var h *runTwin
		h = &runTwin{f: func(arg uint64) {
			got = append(got, refEntry{at: s.Now(), arg: arg})
			for n := r.IntN(3); n > 0 && next < events; n-- {
				next++
				if r.IntN(2) == 0 {
					s.AtID(s.Now()+delay(r), h.id, next)
				} else {
					s.At(s.Now()+delay(r), h, 1, next)
				}
			}
		}}
		h.id = s.Register(h, 0)
		for i := 0; i < 16; i++ {
			next++
			s.AtID(delay(r), h.id, next)
		}
		s.Run(Never - 1)
		// The twin, on container/heap.
		r = rand.New(rand.NewPCG(seed, 5))
		var ref refHeap
		var want []refEntry
		var seq uint64
		push := func(at Time, arg uint64) {
			seq++
			heap.Push(&ref, refEntry{at: at, seq: seq, arg: arg})
		}
		next = 0
		for i := 0; i < 16; i++ {
			next++
			push(delay(r), next)
		}
		for ref.Len() > 0 {
			e := heap.Pop(&ref).(refEntry)
			want = append(want, refEntry{at: e.at, arg: e.arg})
			for n := r.IntN(3); n > 0 && next < events; n-- {
				next++
				r.IntN(2)
				push(e.at+delay(r), next)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("seed %d: %d events run, want %d", seed, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("seed %d: event %d ran (%v, %d), want (%v, %d)", seed, i, got[i].at, got[i].arg, want[i].at, want[i].arg)
			}
		}
	}
}

// runTwin is a Handler for TestRunOrderAgainstHeap.
type runTwin struct {
	f  func(arg uint64)
	id HandlerID
}

func (h *runTwin) Handle(_ uint32, arg uint64) { h.f(arg) }
