package netsim

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// TestMinTreeAgainstScan checks first and min against a linear scan of a
// slice under random pushes, sets and removals (leaves moved down in place,
// then truncate, as compactSched does).
func TestMinTreeAgainstScan(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		var m minTree
		var ref []engine.Time
		randTime := func() engine.Time {
			if rng.IntN(4) == 0 {
				return engine.Never
			}
			return engine.Time(rng.IntN(50))
		}
		for op := 0; op < 3000; op++ {
			switch r := rng.IntN(10); {
			case r < 3 || len(ref) == 0:
				v := randTime()
				m.push(v)
				ref = append(ref, v)
			case r < 4:
				i := rng.IntN(len(ref))
				ref = slices.Delete(ref, i, i+1)
				for k := i; k < len(ref); k++ {
					m.moveLeaf(k, k+1)
				}
				m.truncate(len(ref))
			default:
				i := rng.IntN(len(ref))
				v := randTime()
				m.set(i, v)
				ref[i] = v
			}
			want := engine.Never
			for _, v := range ref {
				want = min(want, v)
			}
			if got := m.min(); got != want {
				t.Fatalf("seed %d op %d: min %d, want %d", seed, op, got, want)
			}
			lo, v := rng.IntN(len(ref)+1), engine.Time(rng.IntN(50))
			want1 := -1
			for i := lo; i < len(ref); i++ {
				if ref[i] <= v {
					want1 = i
					break
				}
			}
			if got := m.first(lo, v); got != want1 {
				t.Fatalf("seed %d op %d: first(%d, %d) = %d, want %d (%v)", seed, op, lo, v, got, want1, ref)
			}
		}
	}
}

// TestUnscheduleKeepsRoundRobin: a host's round robin with QPs leaving it
// at random (slots emptied, closed up now and then by compactSched) goes
// on as the list that closed every gap at once did: the same QPs, in the
// same order, from the same one on, each with its time.
func TestUnscheduleKeepsRoundRobin(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		h := &Host{}
		var ref []*QP // the list with every gap closed at once
		refRR := 0
		add := func() {
			q := &QP{host: h, schedIdx: len(h.sched), nextSend: engine.Time(rng.IntN(1000))}
			h.sched = append(h.sched, q)
			h.schedAt.push(q.nextSend)
			h.schedPrio = append(h.schedPrio, uint8(rng.IntN(NumPrio)))
			ref = append(ref, q)
		}
		for range 300 {
			add()
		}
		for op := 0; op < 2000 && len(ref) > 0; op++ {
			switch r := rng.IntN(10); {
			case r < 2:
				add()
			case r < 4:
				// The scan sends from a QP: rr moves past it.
				j := rng.IntN(len(ref))
				h.rr, refRR = ref[j].schedIdx+1, j+1
				if h.rr == len(h.sched) {
					h.rr = 0
				}
				if refRR == len(ref) {
					refRR = 0
				}
			default:
				i := rng.IntN(len(ref))
				h.unschedule(ref[i])
				ref = slices.Delete(ref, i, i+1)
				if i < refRR {
					refRR--
				}
				if refRR >= len(ref) {
					refRR = 0
				}
			}
			// The live QPs in scan order from rr.
			var got []*QP
			for k := range len(h.sched) {
				q := h.sched[(h.rr+k)%len(h.sched)]
				if q == nil {
					continue
				}
				got = append(got, q)
				if h.sched[q.schedIdx] != q || h.schedAt.at(q.schedIdx) != q.nextSend {
					t.Fatalf("seed %d op %d: qp at %d out of place or time", seed, op, q.schedIdx)
				}
			}
			want := append(slices.Clone(ref[refRR:]), ref[:refRR]...)
			if !slices.Equal(got, want) {
				idx := func(l []*QP) (o []int) {
					for _, q := range l {
						o = append(o, slices.Index(ref, q))
					}
					return o
				}
				t.Fatalf("seed %d op %d: round robin differs from the closed-up list (%d QPs, want %d) %v %v rr %d len %d refRR %d", seed, op, len(got), len(want), idx(got), idx(want), h.rr, len(h.sched), refRR)
			}
			if sparse(h.schedGaps, len(h.sched)) {
				t.Fatalf("seed %d op %d: %d gaps of %d not closed", seed, op, h.schedGaps, len(h.sched))
			}
		}
	}
}
