// Package benchtest runs the rounds of fan-out benchmarks that compare gNMI
// servers side by side (gnmi/subscribe against the reference, the
// collector's northbound against a switch): each round is published on a
// side and timed until every subscriber of that side has received it, so
// nothing is coalesced and every update is counted; the sides' rounds are
// interleaved, their order alternating every round, so that load from
// other processes falls on all of them alike.
//
// Test support only: it depends on the standard library's testing alone.
package benchtest

import (
	"sync"
	"testing"
	"time"
)

// Subscriber is one subscription of a side.
type Subscriber interface {
	// Until reads until the subscriber has received round.
	Until(round uint64) error
	// Updates is the number of leaf updates received so far.
	Updates() int
}

// Side is one server under test.
type Side struct {
	// Publish makes the server send round.
	Publish func(round uint64)
	Subs    []Subscriber
	// Elapsed sums the rounds' times, publish start to the last
	// subscriber's receipt; PubTime the time of Publish alone.
	Elapsed, PubTime time.Duration
}

// Round publishes round r and waits until every subscriber has it.
func (s *Side) Round(b testing.TB, r uint64) {
	t0 := time.Now()
	s.Publish(r)
	s.PubTime += time.Since(t0)
	var wg sync.WaitGroup
	errs := make(chan error, len(s.Subs))
	for _, sub := range s.Subs {
		wg.Go(func() { errs <- sub.Until(r) })
	}
	wg.Wait()
	s.Elapsed += time.Since(t0)
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// Interleave runs rounds 1 to b.N on every side, in order on odd rounds and
// in reverse on even ones, with the timer reset before and stopped after.
func Interleave(b *testing.B, sides ...*Side) {
	b.ReportAllocs()
	b.ResetTimer()
	for r := uint64(1); r <= uint64(b.N); r++ {
		for i := range sides {
			if r%2 == 0 {
				i = len(sides) - 1 - i
			}
			sides[i].Round(b, r)
		}
	}
	b.StopTimer()
}

// Updates is the leaf updates all subscribers of the side received.
func (s *Side) Updates() int {
	var n int
	for _, sub := range s.Subs {
		n += sub.Updates()
	}
	return n
}

// Rate is the side's updates per second of its rounds.
func (s *Side) Rate() float64 { return float64(s.Updates()) / s.Elapsed.Seconds() }
