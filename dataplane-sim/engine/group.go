package engine

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// A Group runs a model cut into partitions side by side: conservative
// parallel simulation with synchronous windows. Each partition is an
// ordinary Sim (its own queue, its own PCG seeded by PartitionSeed); what
// crosses from one partition to another is a message (Send) that arrives
// at least the lookahead after it was sent. The windows, the messages and
// the order in which each partition receives them are functions of the
// model only, so a run gives the same events in the same order in every
// partition for every thread count, one included (docs/engine.md,
// "Parallel engine").
//
// A Group of one partition is that partition's Sim and nothing more: Run
// is Sim.Run, and global events are its ordinary events.
type Group struct {
	parts     []*part
	lookahead Time
	now       Time
	// globals holds the global events (AtGlobal): run at a barrier, with
	// every partition stopped at their time.
	globals queue
	// cur is the outbox parity partitions write in the current step;
	// messages of the other parity are delivered at the start of the next.
	cur int
	// sendMin is the earliest arrival time a message sent now may have.
	sendMin Time
	windows uint64
	stopped atomic.Bool

	// mu is held by the driver for each step (a window, global events)
	// and by Do; doWaiting makes the driver let go between steps.
	mu        sync.Mutex
	doWaiting atomic.Int32
	wake      chan struct{}
	// rt is the pacing of the running RunRealtime (nil: none).
	rt *pacing
	// clock is Sim's (SetEpoch, Epoch, Speed, Lag) for a group of several
	// partitions.
	clock realtimeClock

	// prof, when set (Profile), measures the steps and the serial work.
	prof *Profile
	// reachedAt is the time before which every event has run (the end of
	// the last window, the time of the last global events); onBarrier,
	// when set, is called with it after each step of Run.
	reachedAt Time
	onBarrier func(reached Time)
	// tick is the EveryPartition function (nil: none).
	tick func(part int, now Time)
}

// part is one partition: its Sim and its outboxes.
type part struct {
	id  int
	sim *Sim
	// out[parity][dst] holds the messages to partition dst sent in the
	// step of that parity, in sending order; minOut their earliest time.
	out    [2][][]message
	minOut [2]Time
	seq    uint64
	inbox  []message
	// tickAt is the partition's next EveryPartition instant (Never:
	// none), tickPeriod their period.
	tickAt     Time
	tickPeriod Time
}

type message struct {
	at  Time
	seq uint64
	src int
	to  Receiver
	v   any
}

// Receiver takes a message from another partition. Deliver runs on the
// receiving partition's goroutine, before the window in which at falls,
// with the partition's Now at or before at: it typically queues v for at
// (a link puts the packet in its ring and schedules its arrival).
type Receiver interface {
	Deliver(at Time, v any)
}

// PartitionSeed is the seed of partition id of a run seeded with seed:
// partition 0 keeps the run's seed (so a model that is not cut draws
// exactly what it drew on a lone Sim), the others a splitmix64 mix of the
// seed and the id. No two partitions share a random source.
func PartitionSeed(seed uint64, id int) uint64 {
	if id == 0 {
		return seed
	}
	z := seed ^ uint64(id)*0x9E3779B97F4A7C15
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// NewGroup returns a group of n partitions at time 0, each a Sim seeded
// with PartitionSeed(seed, i). A group of more than one partition needs a
// lookahead (SetLookahead) before it runs.
func NewGroup(n int, seed uint64) *Group {
	if n < 1 {
		panic("engine: a group needs at least one partition")
	}
	g := &Group{sendMin: Never, wake: make(chan struct{}, 1)}
	for i := 0; i < n; i++ {
		p := &part{id: i, sim: New(WithSeed(PartitionSeed(seed, i))), minOut: [2]Time{Never, Never}, tickAt: Never}
		p.out[0] = make([][]message, n)
		p.out[1] = make([][]message, n)
		g.parts = append(g.parts, p)
	}
	g.globals.init()
	g.globals.near = make([]key, 0, 16)
	return g
}

// ErrNoLookahead is returned by SetLookahead for a non-positive lookahead
// in a group of several partitions.
var ErrNoLookahead = errors.New("engine: partitions need a positive lookahead")

// SetLookahead sets the lookahead: the least delay of anything that
// crosses partitions (the smallest delay of a cut link). It must be
// positive when there are several partitions.
func (g *Group) SetLookahead(l Time) error {
	if len(g.parts) > 1 && l <= 0 {
		return fmt.Errorf("%w (got %v)", ErrNoLookahead, l)
	}
	g.lookahead = l
	return nil
}

// Lookahead returns the lookahead.
func (g *Group) Lookahead() Time { return g.lookahead }

// Len returns the number of partitions.
func (g *Group) Len() int { return len(g.parts) }

// Sim returns partition i's Sim. Model objects of the partition schedule
// on it and draw from its Rand.
func (g *Group) Sim(i int) *Sim { return g.parts[i].sim }

// Now returns the group's time: the time of the last barrier (of the end
// of Run), or of the global event running.
func (g *Group) Now() Time {
	if len(g.parts) == 1 {
		return g.parts[0].sim.now
	}
	return g.now
}

// Events returns the events processed by all partitions.
func (g *Group) Events() uint64 {
	var n uint64
	for _, p := range g.parts {
		n += p.sim.events
	}
	return n
}

// Windows returns the number of windows (barriers) run so far.
func (g *Group) Windows() uint64 { return g.windows }

// Stop makes Run or RunRealtime return at the next barrier. Safe from any
// goroutine, a handler or a global event.
func (g *Group) Stop() {
	if len(g.parts) == 1 {
		g.parts[0].sim.Stop()
		return
	}
	g.stopped.Store(true)
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// Send hands v to r in partition to, for time at: the message sent from
// partition from. Call it from partition from's goroutine (a handler of
// its Sim) or from a global event. at must be at least the end of the
// current window (a sender at time t in a window: at >= t + lookahead
// suffices); an earlier at is a model error and panics.
func (g *Group) Send(from, to int, at Time, r Receiver, v any) {
	if at < g.sendMin {
		panic(fmt.Sprintf("engine: message from partition %d to %d at %v inside the window ending %v: less than the lookahead %v",
			from, to, at, g.sendMin, g.lookahead))
	}
	p := g.parts[from]
	p.seq++
	c := g.cur
	p.out[c][to] = append(p.out[c][to], message{at: at, seq: p.seq, src: from, to: r, v: v})
	if at < p.minOut[c] {
		p.minOut[c] = at
	}
}

// AtGlobal runs f at time t with every partition stopped there: all their
// events before t have run, none at t yet. f may touch any partition's
// model (a sampler, a scenario event acting on several partitions). Global
// events at one time run in the order they were scheduled. Call it
// before the run, from a global event or from Do, never from a partition's
// handler (the partitions run side by side). With one partition it is that
// partition's AtFunc.
func (g *Group) AtGlobal(t Time, f func()) {
	if len(g.parts) == 1 {
		g.parts[0].sim.AtFunc(t, f)
		return
	}
	if t < g.now {
		t = g.now
	}
	g.globals.push(t, HandlerFunc(func(uint32, uint64) { f() }), 0, 0)
}

// EveryGlobal calls f(now) at start, start+period, ... as global events
// (with one partition: that partition's Every).
func (g *Group) EveryGlobal(start, period Time, f func(now Time)) {
	if len(g.parts) == 1 {
		g.parts[0].sim.Every(start, period, f)
		return
	}
	if period <= 0 {
		panic("engine: EveryGlobal with non-positive period")
	}
	var tick func()
	next := start
	tick = func() {
		f(g.now)
		// Saturated at Never (a global event there never runs): wrapped
		// round, next was in the past, clamped to now, and ran again.
		next += min(period, Never-next)
		g.AtGlobal(next, tick)
	}
	g.AtGlobal(start, tick)
}

// EveryPartition calls f(part, now) in every partition part at start,
// start+period, ...: on the partition's goroutine, with every event of
// the partition before now run and none at now yet (f runs ahead of the
// partition's events at now, as a global event at now would), so that f
// sees the partition at now exactly as a global event at now sees it. It
// ends no window: the partitions run their instants side by side, and f
// may read and write only its own partition's state (a sampler writing
// into a buffer of the partition, read at the barriers: OnBarrier). f is
// not an event (Events does not count it) and must not schedule events
// or send messages. At an instant where global events fall too, they run
// first. A group has at most one; call it before Run. With one
// partition it is that partition's Every.
func (g *Group) EveryPartition(start, period Time, f func(part int, now Time)) {
	if period <= 0 {
		panic("engine: EveryPartition with non-positive period")
	}
	if len(g.parts) == 1 {
		g.parts[0].sim.Every(start, period, func(now Time) { f(0, now) })
		return
	}
	if g.tick != nil {
		panic("engine: EveryPartition called twice")
	}
	g.tick = f
	for _, p := range g.parts {
		p.tickAt, p.tickPeriod = max(start, p.sim.now), period
	}
}

// OnBarrier makes Run call f after each step (a window, or the global
// events of one time), from the goroutine that called Run, with every
// partition stopped: reached is the time before which every event has
// run. f may read the model (Events, the partitions' state) and call
// Stop; it must not schedule events. It lets a caller report progress or
// check a context, or merge what the partitions sampled (EveryPartition)
// without cutting the run into shorter windows: the windows stay as long
// as the lookahead and the global events allow. A profiled run counts f's
// CPU as serial work. A group of one partition has no barriers and never
// calls f.
func (g *Group) OnBarrier(f func(reached Time)) { g.onBarrier = f }

// Run processes every partition's events up to and including until, in
// windows of at most the lookahead, spread over threads goroutines
// (threads < 1: one). The result does not depend on threads. Afterwards
// every partition's Now is until (unless Stop ended the run).
func (g *Group) Run(until Time, threads int) {
	if len(g.parts) == 1 {
		g.parts[0].sim.Run(until)
		return
	}
	w := g.begin(threads)
	defer g.end(w)
	defer g.prof.lock()()
	for !g.stopped.Load() {
		g.waitDo()
		g.mu.Lock()
		more := g.stepLocked(until, w)
		g.mu.Unlock()
		if !more {
			break
		}
		if g.onBarrier != nil {
			g.callBarrier()
		}
	}
	if g.stopped.Load() {
		return
	}
	g.mu.Lock()
	g.finishLocked(until)
	g.mu.Unlock()
}

// callBarrier calls the OnBarrier function, its CPU time the profile's
// serial work (it runs with every partition stopped).
func (g *Group) callBarrier() {
	if g.prof == nil {
		g.onBarrier(g.reachedAt)
		return
	}
	t0 := g.prof.clock()
	g.onBarrier(g.reachedAt)
	g.prof.Serial += g.prof.clock() - t0
}

// begin starts a run of several partitions on threads goroutines: the
// workers beside the caller's (nil for one thread).
func (g *Group) begin(threads int) *workers {
	if g.lookahead <= 0 {
		panic(ErrNoLookahead)
	}
	if threads = max(1, min(threads, len(g.parts))); threads > 1 {
		return startWorkers(g, threads)
	}
	return nil
}

// end ends a run begun with begin.
func (g *Group) end(w *workers) {
	if w != nil {
		w.stop()
	}
	g.stopped.Store(false)
}

// next returns the time of the earliest pending event or message and of
// the earliest global event.
func (g *Group) next() (t, gt Time) {
	prev := g.cur ^ 1
	t = Never
	for _, p := range g.parts {
		t = min(t, p.sim.NextAt(), p.minOut[prev], p.tickAt)
	}
	gt = Never
	if g.globals.len() > 0 {
		gt = g.globals.peekAt()
	}
	return t, gt
}

// stepLocked runs the global events or the window due next, if any is at
// or before until, and reports whether it ran one. g.mu is held.
func (g *Group) stepLocked(until Time, w *workers) bool {
	var t0 time.Duration
	if g.prof != nil {
		t0 = g.prof.clock()
	}
	// Events, messages and global events at Never never run; until+1
	// and t+lookahead below stay at most Never.
	until = lastRun(until)
	t, gt := g.next()
	if gt <= t && gt <= until {
		g.runGlobals(gt)
		g.reachedAt = gt
		if g.prof != nil {
			g.prof.Serial += g.prof.clock() - t0
		}
		return true
	}
	if t > until {
		return false
	}
	end := min(t+min(g.lookahead, Never-t), gt, until+1)
	g.windows++
	g.now = t
	g.sendMin = end
	if w != nil {
		w.window(end)
	} else {
		for _, p := range g.parts {
			g.step(p, end)
		}
	}
	g.sendMin = Never
	g.flip()
	g.reachedAt = end
	if pr := g.prof; pr != nil {
		// The driver's time minus the steps it ran itself.
		d := pr.clock() - t0
		for i := 0; i < len(g.parts); i += max(1, w.threads()) {
			d -= pr.window[i]
		}
		pr.Serial += d
		pr.endWindow()
	}
	return true
}

// finishLocked delivers the messages still pending (they arrive after
// until: the next run, or a snapshot, sees them in flight) and sets every
// partition's Now to until. g.mu is held.
func (g *Group) finishLocked(until Time) {
	g.deliverAll()
	g.advanceLocked(until)
}

// advanceLocked moves the group and every partition to t, which no
// pending event precedes. g.mu is held.
func (g *Group) advanceLocked(t Time) {
	g.now = max(g.now, t)
	for _, p := range g.parts {
		if p.sim.now < t {
			p.sim.now = t
		}
	}
}

// waitDo gives goroutines blocked in Do a chance to take the lock.
func (g *Group) waitDo() {
	for g.doWaiting.Load() != 0 {
		runtime.Gosched()
	}
}

// flip ends a step: the outboxes just written become the ones to deliver.
func (g *Group) flip() {
	g.cur ^= 1
	for _, p := range g.parts {
		p.minOut[g.cur] = Never
	}
}

// runGlobals runs the global events due at t, every partition stopped at t.
func (g *Group) runGlobals(t Time) {
	g.deliverAll()
	g.now = t
	g.sendMin = t
	for _, p := range g.parts {
		if p.sim.now < t {
			p.sim.now = t
		}
	}
	for g.globals.len() > 0 && g.globals.peekAt() == t && !g.stopped.Load() {
		_, e := g.globals.pop()
		e.h.Handle(e.kind, e.arg)
	}
	g.sendMin = Never
	g.flip()
}

// deliverAll delivers every pending message, partition by partition.
func (g *Group) deliverAll() {
	for _, p := range g.parts {
		g.deliver(p)
	}
	for _, p := range g.parts {
		p.minOut[g.cur^1] = Never
	}
}

// deliver hands partition p the messages sent to it in the last step,
// ordered by (time, source partition, source sequence).
func (g *Group) deliver(p *part) {
	prev := g.cur ^ 1
	in := p.inbox[:0]
	for _, q := range g.parts {
		in = append(in, q.out[prev][p.id]...)
		clear(q.out[prev][p.id])
		q.out[prev][p.id] = q.out[prev][p.id][:0]
	}
	if len(in) > 1 {
		slices.SortFunc(in, func(a, b message) int {
			switch {
			case a.at != b.at:
				return cmpTime(a.at, b.at)
			case a.src != b.src:
				return a.src - b.src
			case a.seq < b.seq:
				return -1
			case a.seq > b.seq:
				return 1
			}
			return 0
		})
	}
	for i := range in {
		in[i].to.Deliver(in[i].at, in[i].v)
	}
	clear(in)
	p.inbox = in[:0]
}

func cmpTime(a, b Time) int {
	if a < b {
		return -1
	}
	return 1
}

// step runs one window of partition p: its messages, then its events
// before end.
func (g *Group) step(p *part, end Time) {
	var t0 time.Duration
	if g.prof != nil {
		t0 = g.prof.clock()
	}
	g.deliver(p)
	s := p.sim
	q := &s.q
	for {
		// Events before the next instant of EveryPartition, then the
		// instant (ahead of the events at it), until end.
		lim := min(end, p.tickAt)
		for q.n > 0 && q.topAt < lim {
			// popFast, written out (see Sim.runLocked).
			var k key
			if nh := q.nh + 1; q.mode == 0 && nh < len(q.near) && q.farAt > q.near[nh].at {
				k = q.near[nh-1]
				q.last, q.nh, q.topAt = k.at, nh, q.near[nh].at
				q.n--
			} else if nh := q.nh; q.mode == modeTopReg && nh < len(q.near) && q.farAt > q.near[nh].at {
				// The key that waited alone in top, near's first next.
				k = q.top
				q.last, q.topAt, q.mode = k.at, q.near[nh].at, 0
				q.n--
			} else {
				k = q.popRun()
			}
			s.now = k.at
			s.events++
			if slot := uint32(k.ss & slotMask); slot&regBit != 0 {
				// A registered handler: no done (see Sim.runLocked).
				t := q.reg[slot&^regBit]
				t.h.Handle(t.kind, k.arg)
				continue
			}
			t := q.target(k)
			t.h.Handle(t.kind, k.arg)
			q.done()
		}
		if p.tickAt >= end {
			break
		}
		s.now = p.tickAt
		g.tick(p.id, p.tickAt)
		// Saturated at Never, the instant no run reaches (end is at most
		// Never): wrapped round, the next instant was in the past.
		p.tickAt += min(p.tickPeriod, Never-p.tickAt)
	}
	if g.prof != nil {
		d := g.prof.clock() - t0
		g.prof.window[p.id] += d
		g.prof.Busy[p.id] += d
	}
}

// workers run the windows of their partitions: worker k runs partitions
// k, k+threads, ...; worker 0 is the goroutine that called Run.
type workers struct {
	g     *Group
	n     int
	start []chan Time
	done  chan struct{}
}

func startWorkers(g *Group, n int) *workers {
	w := &workers{g: g, n: n, start: make([]chan Time, n), done: make(chan struct{}, n)}
	for k := 1; k < n; k++ {
		w.start[k] = make(chan Time, 1)
		go w.loop(k)
	}
	return w
}

func (w *workers) loop(k int) {
	defer w.g.prof.lock()()
	for end := range w.start[k] {
		for i := k; i < len(w.g.parts); i += w.n {
			w.g.step(w.g.parts[i], end)
		}
		w.done <- struct{}{}
	}
}

// window runs one window on every worker and returns when all are done:
// the barrier.
func (w *workers) window(end Time) {
	for k := 1; k < w.n; k++ {
		w.start[k] <- end
	}
	for i := 0; i < len(w.g.parts); i += w.n {
		w.g.step(w.g.parts[i], end)
	}
	for k := 1; k < w.n; k++ {
		<-w.done
	}
}

// threads returns the number of threads (1 for no workers).
func (w *workers) threads() int {
	if w == nil {
		return 1
	}
	return w.n
}

func (w *workers) stop() {
	for k := 1; k < w.n; k++ {
		close(w.start[k])
	}
}
