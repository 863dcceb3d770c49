package netsim

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// TestMinTreeAgainstScan checks first and min against a linear scan of a
// slice under random pushes, sets and removes.
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
				m.remove(i)
				ref = slices.Delete(ref, i, i+1)
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
