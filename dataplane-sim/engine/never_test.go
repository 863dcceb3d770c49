package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// neverLog records the events that ran, as "time arg".
type neverLog struct {
	s   *Sim
	ran []string
}

func (l *neverLog) Handle(_ uint32, arg uint64) {
	l.ran = append(l.ran, fmt.Sprintf("%d %d", l.s.Now(), arg))
}

// An event at Never never runs: not by Run(Never), not by Step, wherever
// it sits in the queue (alone, behind near events, among thousands in the
// buckets, in near itself once the clock is within the ring's span of
// Never); the events before it run in their order; Pending counts it (it
// is held, as a superseded event is) and NextAt is Never, as for an empty
// queue. After(d) past Never schedules at Never instead of wrapping round
// to a time in the past (which ran at once).
func TestEventAtNeverNeverRuns(t *testing.T) {
	tests := []struct {
		desc        string
		schedule    func(s *Sim, l *neverLog)
		wantRan     []string
		wantPending int
	}{{
		desc:        "alone",
		schedule:    func(s *Sim, l *neverLog) { s.At(Never, l, 0, 1) },
		wantPending: 1,
	}, {
		desc: "among near events",
		schedule: func(s *Sim, l *neverLog) {
			s.At(5, l, 0, 1)
			s.At(Never, l, 0, 2)
			s.At(7, l, 0, 3)
			s.At(Never, l, 0, 4)
		},
		wantRan:     []string{"5 1", "7 3"},
		wantPending: 2,
	}, {
		desc: "registered, and at a reserved key",
		schedule: func(s *Sim, l *neverLog) {
			id := s.Register(l, 0)
			k := s.Reserve(Never)
			s.AtID(Never, id, 1)
			s.AtID(3, id, 2)
			s.AtKey(k, l, 0, 3)
		},
		wantRan:     []string{"3 2"},
		wantPending: 2,
	}, {
		desc: "After past Never",
		schedule: func(s *Sim, l *neverLog) {
			s.At(10, HandlerFunc(func(uint32, uint64) {
				s.After(Never, l, 0, 1)
				s.After(Never-5, l, 0, 2)
				s.After(Never-10, l, 0, 3) // Never exactly
				s.After(Never-11, l, 0, 4) // Never-1: runs
			}), 0, 0)
		},
		wantRan:     []string{fmt.Sprintf("%d 4", Never-1)},
		wantPending: 3,
	}, {
		// Within the ring's span of Never, an event at Never goes near:
		// the pop of the key before it found far's top time (Never, far
		// empty) not after it and read far[0].
		desc: "near, the clock close to Never",
		schedule: func(s *Sim, l *neverLog) {
			s.At(Never-100, HandlerFunc(func(uint32, uint64) {
				s.At(Never-2, l, 0, 1)
				s.At(Never, l, 0, 2)
				s.At(Never-1, l, 0, 3)
				s.At(Never, l, 0, 4)
				s.At(Never-1, l, 0, 5)
			}), 0, 0)
		},
		wantRan:     []string{fmt.Sprintf("%d 1", Never-2), fmt.Sprintf("%d 3", Never-1), fmt.Sprintf("%d 5", Never-1)},
		wantPending: 2,
	}, {
		desc: "among thousands, in the buckets",
		schedule: func(s *Sim, l *neverLog) {
			for i := range 3000 {
				s.At(Time(i*7%4093), l, 0, 0)
				if i%10 == 0 {
					s.At(Never, l, 0, 1)
				}
			}
		},
		wantPending: 300,
	}}
	for _, tt := range tests {
		for _, until := range []Time{Never - 1, Never} {
			t.Run(fmt.Sprintf("%s/until %v", tt.desc, until), func(t *testing.T) {
				s := New()
				l := &neverLog{s: s}
				tt.schedule(s, l)
				s.Run(until)
				got := l.ran
				if tt.desc == "among thousands, in the buckets" {
					// Only whether one at Never ran.
					if n := len(got); n != 3000 {
						t.Fatalf("%d events ran, want 3000", n)
					}
					for _, e := range got {
						if e[len(e)-1] != '0' {
							t.Fatalf("event %q ran", e)
						}
					}
					got = nil
				}
				if diff := cmp.Diff(tt.wantRan, got); diff != "" {
					t.Errorf("events run (-want, +got):\n%s", diff)
				}
				if got := s.Pending(); got != tt.wantPending {
					t.Errorf("Pending() = %d, want %d", got, tt.wantPending)
				}
				if got := s.NextAt(); got != Never {
					t.Errorf("NextAt() = %v, want never", got)
				}
				if s.Step() {
					t.Errorf("Step() ran an event at %v", s.Now())
				}
				if got := s.Now(); got != until {
					t.Errorf("Now() = %v, want %v", got, until)
				}
			})
		}
	}
}

// A run paced to the wall clock with only an event at Never pending waits
// for its context, whose cancel ends it; the event does not run.
func TestEventAtNeverRealtimeCancel(t *testing.T) {
	s := New()
	l := &neverLog{s: s}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.At(Never, l, 0, 1)
	s.At(Microsecond, HandlerFunc(func(uint32, uint64) { cancel() }), 0, 0)
	if err := s.RunRealtime(ctx, 1e6, Never); !errors.Is(err, context.Canceled) {
		t.Errorf("RunRealtime = %v, want context.Canceled", err)
	}
	if len(l.ran) != 0 || s.Pending() != 1 {
		t.Errorf("ran %q, %d pending; want none run, 1 pending", l.ran, s.Pending())
	}

	// A Group of two partitions alike, cancelled from a global event.
	g := NewGroup(2, 1)
	if err := g.SetLookahead(10); err != nil {
		t.Fatal(err)
	}
	l0 := &neverLog{s: g.Sim(0)}
	gctx, gcancel := context.WithCancel(context.Background())
	defer gcancel()
	g.Sim(0).At(Never, l0, 0, 1)
	g.AtGlobal(Microsecond, gcancel)
	if err := g.RunRealtime(gctx, 1e6, Never, 2); !errors.Is(err, context.Canceled) {
		t.Errorf("Group.RunRealtime = %v, want context.Canceled", err)
	}
	if len(l0.ran) != 0 || g.Sim(0).Pending() != 1 {
		t.Errorf("group: ran %q, %d pending; want none run, 1 pending", l0.ran, g.Sim(0).Pending())
	}
}

// In a Group of several partitions, events, messages and global events at
// Never never run, and Run(Never) ends (its window's end, until+1 and
// t+lookahead, overflowed); the events before Never run, the latest one
// within a lookahead of Never.
func TestGroupEventAtNever(t *testing.T) {
	for _, threads := range []int{1, 2} {
		for _, until := range []Time{Never - 1, Never} {
			t.Run(fmt.Sprintf("threads %d until %v", threads, until), func(t *testing.T) {
				g := NewGroup(2, 1)
				if err := g.SetLookahead(10); err != nil {
					t.Fatal(err)
				}
				l0, l1 := &neverLog{s: g.Sim(0)}, &neverLog{s: g.Sim(1)}
				g.Sim(0).At(5, l0, 0, 1)
				g.Sim(0).At(Never, l0, 0, 2)
				g.Sim(1).At(Never-3, HandlerFunc(func(uint32, uint64) {
					g.Send(1, 0, Never, deliverAt{l0}, uint64(3))
					g.Sim(1).At(Never-1, l1, 0, 4)
				}), 0, 0)
				g.Sim(1).At(Never, l1, 0, 5)
				globals := 0
				g.AtGlobal(Never, func() { globals++ })
				g.Run(until, threads)
				if diff := cmp.Diff([]string{"5 1"}, l0.ran); diff != "" {
					t.Errorf("partition 0 ran (-want, +got):\n%s", diff)
				}
				if diff := cmp.Diff([]string{fmt.Sprintf("%d 4", Never-1)}, l1.ran); diff != "" {
					t.Errorf("partition 1 ran (-want, +got):\n%s", diff)
				}
				if globals != 0 {
					t.Errorf("the global event at Never ran")
				}
				// The message at Never, delivered at the end of the run,
				// waits in partition 0 with its own event at Never.
				if p0, p1 := g.Sim(0).Pending(), g.Sim(1).Pending(); p0 != 2 || p1 != 1 {
					t.Errorf("pending %d and %d, want 2 and 1", p0, p1)
				}
				if g.Now() != until {
					t.Errorf("Now() = %v, want %v", g.Now(), until)
				}
			})
		}
	}
}

// deliverAt schedules a message's value as an event of l at its time.
type deliverAt struct{ l *neverLog }

func (d deliverAt) Deliver(at Time, v any) { d.l.s.At(at, d.l, 0, v.(uint64)) }

// A periodic tick near Never saturates: EveryPartition and EveryGlobal at
// Never-25 with a period of 10 tick at Never-25, Never-15 and Never-5, and
// the next instant, past Never, is Never: it never runs. Computed as
// start + n·period, it wrapped round to a time in the past and ticked
// there (with a 2 partition group, EveryPartition's partitions then ticked
// at negative times; EveryGlobal's global event was clamped to now and ran
// again and again at Never-5).
func TestEveryNearNever(t *testing.T) {
	const start, period = Never - 25, 10
	want := []Time{Never - 25, Never - 15, Never - 5}
	for _, parts := range []int{1, 2} {
		for _, threads := range []int{1, 2} {
			for _, until := range []Time{Never - 1, Never} {
				t.Run(fmt.Sprintf("partitions %d threads %d until %v", parts, threads, until), func(t *testing.T) {
					g := NewGroup(parts, 1)
					if err := g.SetLookahead(10); err != nil {
						t.Fatal(err)
					}
					// A tick past the instants expected panics at once:
					// the wrapped-round ticks would otherwise go on for
					// 2^63 / period instants.
					ticks := make([][]Time, parts)
					g.EveryPartition(start, period, func(part int, now Time) {
						if len(ticks[part]) == len(want) {
							panic(fmt.Sprintf("partition %d: a tick at %d after %v", part, now, ticks[part]))
						}
						ticks[part] = append(ticks[part], now)
					})
					var globals []Time
					g.EveryGlobal(start, period, func(now Time) {
						if len(globals) == len(want) {
							panic(fmt.Sprintf("EveryGlobal: a tick at %d after %v", now, globals))
						}
						globals = append(globals, now)
					})
					g.Run(until, threads)
					for part := range parts {
						if diff := cmp.Diff(want, ticks[part]); diff != "" {
							t.Errorf("EveryPartition, partition %d (-want, +got):\n%s", part, diff)
						}
					}
					if diff := cmp.Diff(want, globals); diff != "" {
						t.Errorf("EveryGlobal (-want, +got):\n%s", diff)
					}
					if g.Now() != until {
						t.Errorf("Now() = %v, want %v", g.Now(), until)
					}
				})
			}
		}
	}
}
