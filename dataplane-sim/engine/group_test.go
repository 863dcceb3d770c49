package engine

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"testing"
	"time"
)

// toy is a random model cut into partitions: every node, at each of its
// events, draws from its partition's random source, records the event, and
// either sets itself a local timer or sends a message to a node of another
// partition over a "link" of at least the lookahead.
type toy struct {
	g       *Group
	nodes   [][]*toyNode
	traces  [][]string // per partition
	globals []string
	link    []Time // per partition: the delay of its cut links (>= lookahead)
}

type toyNode struct {
	m    *toy
	part int
	id   int
	n    uint64
}

func (x *toyNode) Handle(kind uint32, arg uint64) {
	s := x.m.g.Sim(x.part)
	r := s.Rand()
	d := r.Uint64()
	x.n++
	x.m.traces[x.part] = append(x.m.traces[x.part], fmt.Sprintf("%d %d.%d k%d a%d d%x", s.Now(), x.part, x.id, kind, arg, d&0xffff))
	if x.n > 200 {
		return
	}
	if len(x.m.nodes) > 1 && d%3 == 0 {
		to := int(d>>8) % (len(x.m.nodes) - 1)
		if to >= x.part {
			to++
		}
		dst := x.m.nodes[to][int(d>>16)%len(x.m.nodes[to])]
		at := s.Now() + x.m.link[x.part] + Time(d>>24%5)
		x.m.g.Send(x.part, to, at, dst, uint64(x.part)<<32|uint64(x.id))
		return
	}
	// Local timers, ties included: several nodes often fire at one time.
	s.After(Time(d>>32%4)*50, x, 0, d>>40)
}

func (x *toyNode) Deliver(at Time, v any) {
	x.m.g.Sim(x.part).At(at, x, 1, v.(uint64))
}

// newToy builds a toy of parts partitions of k nodes each.
func newToy(parts, k int, seed uint64, lookahead Time, link []Time) *toy {
	m := &toy{g: NewGroup(parts, seed), traces: make([][]string, parts), link: link}
	if err := m.g.SetLookahead(lookahead); err != nil {
		panic(err)
	}
	for p := 0; p < parts; p++ {
		var ns []*toyNode
		for i := 0; i < k; i++ {
			n := &toyNode{m: m, part: p, id: i}
			ns = append(ns, n)
			m.g.Sim(p).At(Time(i%3)*100, n, 2, 0)
		}
		m.nodes = append(m.nodes, ns)
	}
	m.g.EveryGlobal(0, 777, func(now Time) {
		var sum uint64
		for _, ns := range m.nodes {
			for _, n := range ns {
				sum += n.n
			}
		}
		m.globals = append(m.globals, fmt.Sprintf("%d %d", now, sum))
	})
	return m
}

func (m *toy) digest() string {
	h := fnv.New64a()
	for _, tr := range m.traces {
		for _, l := range tr {
			fmt.Fprintln(h, l)
		}
		fmt.Fprintln(h, "--")
	}
	for _, l := range m.globals {
		fmt.Fprintln(h, l)
	}
	return fmt.Sprintf("%x events=%d", h.Sum64(), m.g.Events())
}

func TestGroupSameForEveryThreadCount(t *testing.T) {
	var want string
	for _, threads := range []int{1, 2, 4} {
		m := newToy(4, 5, 7, 1000, []Time{1000, 1500, 1000, 3000})
		m.g.Run(100_000, threads)
		got := m.digest()
		if m.g.Events() < 1000 {
			t.Fatalf("only %d events", m.g.Events())
		}
		if threads == 1 {
			want = got
			continue
		}
		if got != want {
			t.Errorf("threads=%d: %s, threads=1: %s", threads, got, want)
		}
	}
}

// TestGroupRunInSteps: running to t1 then t2 gives what one run to t2 gives.
func TestGroupRunInSteps(t *testing.T) {
	a := newToy(3, 4, 9, 500, []Time{500, 700, 900})
	a.g.Run(50_000, 2)
	b := newToy(3, 4, 9, 500, []Time{500, 700, 900})
	b.g.Run(12_345, 1)
	b.g.Run(50_000, 3)
	if a.digest() != b.digest() {
		t.Errorf("one run %s, two runs %s", a.digest(), b.digest())
	}
	if b.g.Now() != 50_000 || b.g.Sim(2).Now() != 50_000 {
		t.Errorf("Now = %v, partition 2 at %v; want 50µs", b.g.Now(), b.g.Sim(2).Now())
	}
}

// TestGroupOnBarrier: a barrier callback sees every step, in time order,
// with the events before it run, changes neither the windows nor the
// events, and can stop the run.
func TestGroupOnBarrier(t *testing.T) {
	plain := newToy(3, 4, 11, 500, []Time{500, 700, 900})
	plain.g.Run(50_000, 2)
	m := newToy(3, 4, 11, 500, []Time{500, 700, 900})
	var calls uint64
	last := Time(-1)
	m.g.OnBarrier(func(reached Time) {
		calls++
		if reached < last {
			t.Errorf("reached %v after %v", reached, last)
		}
		last = reached
		for i := 0; i < m.g.Len(); i++ {
			if next := m.g.Sim(i).NextAt(); next < reached {
				t.Errorf("partition %d has an event at %v before the barrier at %v", i, next, reached)
			}
		}
	})
	m.g.Run(50_000, 2)
	if m.digest() != plain.digest() || m.g.Windows() != plain.g.Windows() {
		t.Errorf("with OnBarrier %s, %d windows; without %s, %d windows", m.digest(), m.g.Windows(), plain.digest(), plain.g.Windows())
	}
	if calls < m.g.Windows() {
		t.Errorf("%d calls for %d windows", calls, m.g.Windows())
	}
	s := newToy(3, 4, 11, 500, []Time{500, 700, 900})
	s.g.OnBarrier(func(reached Time) {
		if reached >= 10_000 {
			s.g.Stop()
		}
	})
	s.g.Run(50_000, 2)
	if s.g.Now() >= 50_000 || s.g.Events() >= plain.g.Events() {
		t.Errorf("stopped run at %v with %d events, whole run %d", s.g.Now(), s.g.Events(), plain.g.Events())
	}
}

// TestGroupProperty: random small cut models give the same events at 1, 2
// and 4 threads, and every partition's events come in time order.
func TestGroupProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for c := 0; c < 40; c++ {
		parts := 2 + r.IntN(5)
		k := 1 + r.IntN(6)
		la := Time(1 + r.IntN(2000))
		link := make([]Time, parts)
		for i := range link {
			link[i] = la + Time(r.IntN(3))*la
		}
		seed := r.Uint64()
		until := Time(10_000 + r.IntN(200_000))
		var want string
		for _, threads := range []int{1, 2, 4} {
			m := newToy(parts, k, seed, la, link)
			m.g.Run(until, threads)
			for p, tr := range m.traces {
				var last Time = -1
				for _, l := range tr {
					var at Time
					fmt.Sscan(l, &at)
					if at < last || at > until {
						t.Fatalf("case %d partition %d: event at %v after %v (until %v)", c, p, at, last, until)
					}
					last = at
				}
			}
			got := m.digest()
			if threads == 1 {
				want = got
			} else if got != want {
				t.Fatalf("case %d (parts %d, k %d, lookahead %v): threads=%d %s, threads=1 %s", c, parts, k, la, threads, got, want)
			}
		}
	}
}

// TestGroupOfOneIsASim: a group of one partition runs what a lone Sim with
// the same seed runs, in the same order, with the same draws.
func TestGroupOfOneIsASim(t *testing.T) {
	trace := func(s *Sim, at func(Time, func())) *[]string {
		out := new([]string)
		var h HandlerFunc
		h = func(kind uint32, arg uint64) {
			*out = append(*out, fmt.Sprintf("%d %d %d", s.Now(), arg, s.Rand().IntN(1000)))
			if len(*out) < 500 {
				s.After(Time(s.Rand().IntN(3)), h, 0, arg+1)
			}
		}
		for i := 0; i < 4; i++ {
			s.At(Time(i), h, 0, uint64(i)*1000)
		}
		at(5, func() { *out = append(*out, "global") })
		return out
	}
	s := New(WithSeed(42))
	a := trace(s, s.AtFunc)
	s.Run(10_000)
	g := NewGroup(1, 42)
	gs := g.Sim(0)
	b := trace(gs, g.AtGlobal)
	g.Run(10_000, 4)
	if len(*a) < 500 || fmt.Sprint(*a) != fmt.Sprint(*b) {
		t.Errorf("group of one differs from a Sim")
	}
}

func TestGroupLookahead(t *testing.T) {
	g := NewGroup(2, 1)
	if err := g.SetLookahead(0); !errors.Is(err, ErrNoLookahead) {
		t.Errorf("SetLookahead(0) = %v, want ErrNoLookahead", err)
	}
	if err := NewGroup(1, 1).SetLookahead(0); err != nil {
		t.Errorf("one partition needs no lookahead: %v", err)
	}
	if err := g.SetLookahead(10); err != nil {
		t.Fatal(err)
	}
	// A message inside the window is a model error.
	g.Sim(0).At(0, HandlerFunc(func(uint32, uint64) {
		defer func() {
			if recover() == nil {
				t.Error("Send within the lookahead did not panic")
			}
		}()
		g.Send(0, 1, 5, nil, nil)
	}), 0, 0)
	g.Run(100, 1)
}

// TestGroupGlobalSeesStoppedPartitions: a global event at t sees every
// partition's events before t done and none at t.
func TestGroupGlobalSeesStoppedPartitions(t *testing.T) {
	g := NewGroup(2, 1)
	if err := g.SetLookahead(1000); err != nil {
		t.Fatal(err)
	}
	var log []string
	for p := 0; p < 2; p++ {
		for _, at := range []Time{99, 100, 101} {
			g.Sim(p).AtFunc(at, func() { log = append(log, fmt.Sprintf("p%d@%d", p, at)) })
		}
	}
	g.AtGlobal(100, func() { log = append(log, fmt.Sprintf("global@%d now %d %d", g.Now(), g.Sim(0).Now(), g.Sim(1).Now())) })
	g.Run(1000, 1)
	want := "[p0@99 p1@99 global@100 now 100 100 p0@100 p0@101 p1@100 p1@101]"
	if got := fmt.Sprint(log); got != want {
		t.Errorf("order %s, want %s", got, want)
	}
}

// TestGroupProfile: a profile of a run on one thread, measured with a
// clock that counts the events processed (so the figures are exact), gives
// each partition its events, one thread a speedup of 1, more threads at
// most their number and at least 1; profiling leaves the run as it was, on
// one thread and on two (there with a clock of zeros: the counting clock
// reads every partition's count, which threads would race on).
func TestGroupProfile(t *testing.T) {
	plain := newToy(4, 5, 7, 1000, []Time{1000, 1500, 1000, 3000})
	plain.g.Run(100_000, 1)
	m := newToy(4, 5, 7, 1000, []Time{1000, 1500, 1000, 3000})
	prof := m.g.Profile(func() time.Duration { return time.Duration(m.g.Events()) })
	m.g.Run(100_000, 1)
	if m.digest() != plain.digest() {
		t.Fatalf("profiled run %s, plain %s", m.digest(), plain.digest())
	}
	if prof.Windows != m.g.Windows() {
		t.Errorf("%d windows profiled, %d run", prof.Windows, m.g.Windows())
	}
	for p, busy := range prof.Busy {
		if want := m.g.Sim(p).Events(); uint64(busy) != want {
			t.Errorf("partition %d busy %d, processed %d events", p, busy, want)
		}
	}
	if prof.Serial != 0 || prof.Work() != time.Duration(m.g.Events()) {
		t.Errorf("serial %d, work %d; want 0 and %d", prof.Serial, prof.Work(), m.g.Events())
	}
	if s := prof.Speedup(1); s != 1 {
		t.Errorf("Speedup(1) = %v", s)
	}
	for n := 2; n <= 4; n++ {
		if s := prof.Speedup(n); s < 1 || s > float64(n) || s < prof.Speedup(n-1) {
			t.Errorf("Speedup(%d) = %v (Speedup(%d) = %v)", n, s, n-1, prof.Speedup(n-1))
		}
	}
	t.Logf("%d windows, busy %v, bound on 2 threads %.3f, on 4 %.3f", prof.Windows, prof.Busy, prof.Speedup(2), prof.Speedup(4))

	two := newToy(4, 5, 7, 1000, []Time{1000, 1500, 1000, 3000})
	two.g.Profile(func() time.Duration { return 0 })
	two.g.Run(100_000, 2)
	if two.digest() != plain.digest() {
		t.Errorf("profiled run on two threads %s, plain %s", two.digest(), plain.digest())
	}
}

// TestGroupEveryPartition: a partition's instants run on its goroutine
// with its events before the instant run and none at it yet, after the
// global events of the instant; they are not events, end no window, and
// every thread count gives the same events and instants.
func TestGroupEveryPartition(t *testing.T) {
	const period, until = 259, 50_000 // 3 · 259 = 777: the toy's globals fall on every third
	type tick struct {
		now    Time
		traced int // the partition's events run before it
	}
	var want string
	for _, threads := range []int{1, 2, 4} {
		m := newToy(3, 4, 13, 500, []Time{500, 700, 900})
		ticks := make([][]tick, m.g.Len())
		m.g.EveryPartition(0, period, func(part int, now Time) {
			if got := m.g.Sim(part).Now(); got != now {
				t.Errorf("partition %d: instant %v with Now %v", part, now, got)
			}
			if now%777 == 0 && len(m.globals) != int(now/777)+1 {
				t.Errorf("partition %d: instant %v before the global event at it", part, now)
			}
			ticks[part] = append(ticks[part], tick{now, len(m.traces[part])})
		})
		m.g.Run(until, threads)
		var total int
		for part, tr := range m.traces {
			total += len(tr)
			if len(ticks[part]) != until/period+1 {
				t.Fatalf("partition %d: %d instants, want %d", part, len(ticks[part]), until/period+1)
			}
			for i, tk := range ticks[part] {
				if tk.now != Time(i*period) {
					t.Fatalf("partition %d: instant %d at %v", part, i, tk.now)
				}
				if tk.traced > 0 && traceTime(t, tr[tk.traced-1]) >= tk.now {
					t.Errorf("partition %d: an event at %s ran before the instant %v", part, tr[tk.traced-1], tk.now)
				}
				if tk.traced < len(tr) && traceTime(t, tr[tk.traced]) < tk.now {
					t.Errorf("partition %d: an event at %s ran after the instant %v", part, tr[tk.traced], tk.now)
				}
			}
		}
		if uint64(total) != m.g.Events() {
			t.Errorf("%d events traced, Events %d: the instants are counted", total, m.g.Events())
		}
		plain := newToy(3, 4, 13, 500, []Time{500, 700, 900})
		plain.g.Run(until, 1)
		if w, pw := m.g.Windows(), plain.g.Windows(); w != pw {
			t.Errorf("%d windows, %d without the instants: they end windows", w, pw)
		}
		got := fmt.Sprintf("%s %v", m.digest(), ticks)
		if threads == 1 {
			want = got
		} else if got != want {
			t.Errorf("threads=%d differs from threads=1", threads)
		}
	}
}

func traceTime(t *testing.T, l string) Time {
	var at Time
	if _, err := fmt.Sscanf(l, "%d", &at); err != nil {
		t.Fatalf("trace %q: %v", l, err)
	}
	return at
}
