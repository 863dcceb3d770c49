package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type recorder struct {
	s   *Sim
	got []string
}

func (r *recorder) Handle(kind uint32, arg uint64) {
	r.got = append(r.got, r.s.Now().String()+":"+string(rune('a'+kind))+string(rune('0'+arg)))
}

func TestOrder(t *testing.T) {
	for _, tt := range []struct {
		desc  string
		sched func(s *Sim, r *recorder)
		until Time
		want  []string
	}{
		{
			desc: "time order",
			sched: func(s *Sim, r *recorder) {
				s.At(30, r, 2, 0)
				s.At(10, r, 0, 0)
				s.At(20, r, 1, 0)
			},
			until: 100,
			want:  []string{"10ns:a0", "20ns:b0", "30ns:c0"},
		},
		{
			desc: "FIFO among equal times",
			sched: func(s *Sim, r *recorder) {
				for i := 0; i < 5; i++ {
					s.At(7, r, 0, uint64(i))
				}
			},
			until: 7,
			want:  []string{"7ns:a0", "7ns:a1", "7ns:a2", "7ns:a3", "7ns:a4"},
		},
		{
			desc: "until is inclusive, later events wait",
			sched: func(s *Sim, r *recorder) {
				s.At(5, r, 0, 0)
				s.At(6, r, 1, 0)
			},
			until: 5,
			want:  []string{"5ns:a0"},
		},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			s := New()
			r := &recorder{s: s}
			tt.sched(s, r)
			s.Run(tt.until)
			if diff := cmp.Diff(tt.want, r.got); diff != "" {
				t.Errorf("events (-want, +got):\n%s", diff)
			}
			if s.Now() != tt.until {
				t.Errorf("Now() = %v after Run(%v)", s.Now(), tt.until)
			}
		})
	}
}

// The heap against a sort: many random events come out in (time, seq) order.
func TestHeapRandom(t *testing.T) {
	s := New(WithSeed(3))
	var last Time
	var lastArg uint64
	n := 0
	h := HandlerFunc(func(_ uint32, arg uint64) {
		if s.Now() < last || (s.Now() == last && arg < lastArg) {
			t.Fatalf("event %d at %v after %v (arg %d after %d)", n, s.Now(), last, arg, lastArg)
		}
		last, lastArg = s.Now(), arg
		n++
	})
	for i := 0; i < 20000; i++ {
		s.At(Time(s.Rand().IntN(1000)), h, 0, uint64(i))
	}
	s.Run(Never - 1)
	if n != 20000 {
		t.Fatalf("ran %d events, want 20000", n)
	}
}

func TestEvery(t *testing.T) {
	s := New()
	var at []Time
	s.Every(5, 10, func(now Time) { at = append(at, now) })
	s.Run(40)
	if diff := cmp.Diff([]Time{5, 15, 25, 35}, at); diff != "" {
		t.Errorf("ticks (-want, +got):\n%s", diff)
	}
}

func TestTxTime(t *testing.T) {
	var ser Serializer
	var total Time
	for i := 0; i < 1000; i++ {
		total += ser.TxTime(1086, 100e9)
	}
	// 1000 x 1086 B at 100 Gb/s = 86880 ns exactly.
	if total != 86880 {
		t.Errorf("1000 frames took %v, want 86.88µs", total)
	}
	if got := TxTime(1, 3e9); got != 3 {
		t.Errorf("TxTime(1 B, 3 Gb/s) = %v, want 3ns (rounded up)", got)
	}
}

// Serializer's kept division (Cached) gives what dividing every time with
// the carried remainder gives, through runs of one size, changes of size
// and changes of rate (up and down, so that the carried remainder can
// exceed the new rate), and a rate of 0.
func TestSerializerCachedAsDivision(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	sizes := []int64{0, 64, 66, 82, 1086, 1106, 4158, 9000}
	rates := []int64{1, 7, 1e9, 3e9, 10e9, 25e9, 40e9, 100e9, 400e9, 0}
	var ser Serializer
	var rem int64 // the reference's carried remainder
	size, rate := sizes[1], rates[2]
	hits := 0
	for i := 0; i < 200000; i++ {
		if rng.IntN(8) == 0 {
			size = sizes[rng.IntN(len(sizes))]
		}
		if rng.IntN(64) == 0 {
			rate = rates[rng.IntN(len(rates))]
		}
		want := Never
		if rate > 0 {
			num := size*8*int64(Second) + rem
			want, rem = Time(num/rate), num%rate
		}
		if _, ok := (&Serializer{size: ser.size, rate1: ser.rate1}).Cached(size, rate); ok {
			hits++
		}
		if got := ser.TxTime(size, rate); got != want {
			t.Fatalf("step %d: %d B at %d b/s: %v, want %v", i, size, rate, got, want)
		}
	}
	if hits < 100000 {
		t.Errorf("%d of 200000 steps took the kept division; want most", hits)
	}
}

// Do from other goroutines while Run drives the Sim: clean under -race.
func TestDoDuringRun(t *testing.T) {
	s := New()
	counter := 0 // model state, touched by handlers and by Do
	var tick HandlerFunc
	tick = func(uint32, uint64) {
		counter++
		s.After(Microsecond, tick, 0, 0)
	}
	s.At(0, tick, 0, 0)
	var wg sync.WaitGroup
	reads := make([]int, 0, 100)
	var mu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 100; i++ {
			s.Do(func() {
				mu.Lock()
				reads = append(reads, counter)
				mu.Unlock()
			})
		}
	}()
	s.Run(200 * Millisecond)
	wg.Wait()
	if counter != 200001 {
		t.Errorf("counter %d, want 200001", counter)
	}
	for i := 1; i < len(reads); i++ {
		if reads[i] < reads[i-1] {
			t.Errorf("reads went backwards: %v", reads)
			break
		}
	}
}

type snap struct {
	now   Time
	count int
}

// RunRealtime paces, takes configuration through Do and publishes
// snapshots that another goroutine reads; run with -race.
func TestRealtime(t *testing.T) {
	s := New()
	step := 1 // configuration changed through Do
	count := 0
	var pub Published[snap]
	var h HandlerFunc
	h = func(uint32, uint64) {
		count += step
		s.After(10*Microsecond, h, 0, 0)
	}
	s.At(0, h, 0, 0)
	s.Every(0, 100*Microsecond, func(now Time) { pub.Store(&snap{now, count}) })

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const until = 20 * Millisecond
	done := make(chan error, 1)
	wallStart := time.Now()
	go func() { done <- s.RunRealtime(ctx, 1.0, until) }()

	// Poll (with a deadline, no sleeps) until the sim is past 5 ms, then
	// change the step from another goroutine.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if v := pub.Load(); v != nil && v.now >= 5*Millisecond {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("realtime sim made no progress")
		}
		time.Sleep(100 * time.Microsecond) // polling interval, not a wait for an outcome
	}
	var atChange Time
	var countAtChange int
	s.Do(func() {
		atChange = s.Now()
		countAtChange = count
		step = 1000
	})
	if err := <-done; err != nil {
		t.Fatalf("RunRealtime: %v", err)
	}
	wall := time.Since(wallStart)
	if wall < 20*time.Millisecond {
		t.Errorf("20 ms of simulated time at speed 1 took %v of wall time", wall)
	}
	if s.Now() != until {
		t.Errorf("Now() = %v, want %v", s.Now(), until)
	}
	// Events before the change counted 1, after it 1000.
	wantAfter := int((until-atChange)/(10*Microsecond)) * 1000
	if got := count - countAtChange; got < wantAfter-2000 || got > wantAfter+2000 {
		t.Errorf("count grew by %d after the change at %v, want about %d", got, atChange, wantAfter)
	}
	if v := pub.Load(); v == nil || pub.Version() < 150 {
		t.Errorf("published %d snapshots, want about 200", pub.Version())
	}
}

func TestRealtimeStopAndCancel(t *testing.T) {
	s := New()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.RunRealtime(ctx, 1, Never) }()
	s.Do(func() {}) // works while the loop sleeps on an empty queue
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("after cancel: %v, want context.Canceled", err)
	}
	go func() { done <- s.RunRealtime(context.Background(), 1, Never) }()
	s.Do(func() {})
	s.Stop()
	if err := <-done; !errors.Is(err, ErrStopped) {
		t.Errorf("after Stop: %v, want ErrStopped", err)
	}
}
