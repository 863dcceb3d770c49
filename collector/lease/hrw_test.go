package lease

import (
	"fmt"
	"testing"
)

func placement(members []string, targets int) map[string]string {
	out := map[string]string{}
	for i := range targets {
		t := fmt.Sprintf("switch-%04d", i)
		out[t] = Owner(members, t)
	}
	return out
}

// TestRendezvousMovesOneNth checks the property scale-out relies on: when a
// collector joins or leaves, only the targets it gains or loses move
// (about 1/N of them), and the load stays even.
func TestRendezvousMovesOneNth(t *testing.T) {
	const targets = 4000
	for _, n := range []int{2, 4, 8} {
		t.Run(fmt.Sprintf("%d collectors", n), func(t *testing.T) {
			var members []string
			for i := range n {
				members = append(members, fmt.Sprintf("collector-%d", i))
			}
			before := placement(members, targets)
			load := map[string]int{}
			for _, o := range before {
				load[o]++
			}
			for m, c := range load {
				if share := float64(c) / targets; share < 0.7/float64(n) || share > 1.3/float64(n) {
					t.Errorf("%s owns %.3f of the targets, want about %.3f", m, share, 1/float64(n))
				}
			}
			// One joins: only targets moving to it move, about 1/(n+1).
			joined := append(append([]string(nil), members...), "collector-new")
			after := placement(joined, targets)
			moved := 0
			for tg, o := range after {
				if o != before[tg] {
					moved++
					if o != "collector-new" {
						t.Errorf("%s moved from %s to %s, not to the new collector", tg, before[tg], o)
					}
				}
			}
			want := float64(targets) / float64(n+1)
			if f := float64(moved); f < 0.8*want || f > 1.2*want {
				t.Errorf("join: %d of %d targets moved, want about %.0f (1/%d)", moved, targets, want, n+1)
			}
			// One leaves: only its own targets move.
			left := members[1:]
			after = placement(left, targets)
			for tg, o := range after {
				if before[tg] != members[0] && o != before[tg] {
					t.Errorf("%s moved from %s to %s though %s stayed", tg, before[tg], o, before[tg])
				}
			}
		})
	}
	if Owner(nil, "x") != "" {
		t.Error("Owner without members is not empty")
	}
}
