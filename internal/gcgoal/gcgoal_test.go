package gcgoal

import (
	"runtime"
	"runtime/metrics"
	"testing"
)

func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// cycleUntil runs collections until the goal has adjusted with a live heap
// that satisfies ok, and returns the percent it set. The cleanup runs on
// the runtime's cleanup goroutine after the cycle: the loop hands it the
// processor between cycles.
func cycleUntil(t *testing.T, ch <-chan [2]uint64, ok func(live uint64) bool) int {
	t.Helper()
	for i := 0; i < 1000; i++ {
		runtime.GC()
		for {
			select {
			case r := <-ch:
				if ok(r[0]) {
					return int(r[1])
				}
				continue
			default:
			}
			break
		}
		runtime.Gosched()
	}
	t.Fatal("no adjustment after 1000 collections")
	return 0
}

// TestGoal: Percent while the live heap is small, the runtime's 100 once it
// passes SmallHeap, Percent again when it shrinks, the previous goal back
// at stop.
func TestGoal(t *testing.T) {
	t.Setenv("GOGC", "")
	ch := make(chan [2]uint64, 1024)
	const small = 64 << 20
	before := gogc()
	stop := StartWith(Config{Percent: 300, SmallHeap: small, after: func(live uint64, p int) {
		ch <- [2]uint64{live, uint64(p)}
	}})
	if g := gogc(); g != 300 {
		t.Fatalf("GOGC %d after Start, want 300", g)
	}
	if p := cycleUntil(t, ch, func(live uint64) bool { return live < small }); p != 300 {
		t.Fatalf("small live heap: percent %d, want 300", p)
	}
	big := make([][]byte, 96)
	for i := range big {
		big[i] = make([]byte, 1<<20)
	}
	if p := cycleUntil(t, ch, func(live uint64) bool { return live >= small }); p != 100 || gogc() != 100 {
		t.Fatalf("live heap over SmallHeap: percent %d (GOGC %d), want 100", p, gogc())
	}
	runtime.KeepAlive(big)
	big = nil
	if p := cycleUntil(t, ch, func(live uint64) bool { return live < small }); p != 300 {
		t.Fatalf("live heap small again: percent %d, want 300", p)
	}
	stop()
	if g := gogc(); g != before {
		t.Fatalf("GOGC %d after stop, want %d", g, before)
	}
}

// TestEnvironmentWins: with GOGC set, Start changes nothing.
func TestEnvironmentWins(t *testing.T) {
	t.Setenv("GOGC", "150")
	before := gogc()
	stop := Start()
	if g := gogc(); g != before {
		t.Fatalf("GOGC %d after Start with GOGC=150 in the environment, want %d", g, before)
	}
	stop()
}

// TestNested: a second Start shares the first's goal; the goal of before
// comes back at the last stop, and a stop called twice counts once.
func TestNested(t *testing.T) {
	t.Setenv("GOGC", "")
	before := gogc()
	stop1 := StartWith(Config{Percent: 250, SmallHeap: 1 << 30})
	stop2 := StartWith(Config{Percent: 500, SmallHeap: 1 << 30})
	if g := gogc(); g != 250 {
		t.Fatalf("GOGC %d with two Starts, want the first's 250", g)
	}
	stop2()
	stop2()
	if g := gogc(); g != 250 {
		t.Fatalf("GOGC %d after the second stop, want 250 still", g)
	}
	stop1()
	if g := gogc(); g != before {
		t.Fatalf("GOGC %d after the last stop, want %d", g, before)
	}
}
