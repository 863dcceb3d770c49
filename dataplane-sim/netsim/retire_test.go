package netsim

import (
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// windows is a host pair behind a marking switch and a traffic of windows:
// every window, flowsPerWindow short flows from a to b (and one from b to
// a, so both hosts send and receive) start, staggered. A long-lived flow
// from a runs throughout. Everything is simulated time.
type windows struct {
	sim   *engine.Sim
	net   *Network
	a, b  *Host
	flows []*Flow
}

const (
	retireWindow     = 2 * engine.Millisecond
	retireFlowsPerWn = 20
	retireFlowBytes  = 64 << 10
)

func newWindows(tb testing.TB, nWindows int, retire bool) *windows {
	tb.Helper()
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
	sim := engine.New(engine.WithSeed(7))
	n := New(sim)
	w := &windows{sim: sim, net: n}
	sw, err := n.AddSwitch("sw", netip.MustParseAddr("10.0.0.254"), SwitchConfig{Port: dcqcnPort(20_000, 80_000, 4<<20)})
	must(err)
	w.a, err = n.AddHost("a", netip.MustParseAddr("10.0.0.1"), DefaultHostConfig())
	must(err)
	w.b, err = n.AddHost("b", netip.MustParseAddr("10.0.0.2"), DefaultHostConfig())
	must(err)
	_, _, err = n.Connect(w.a, sw, LinkConfig{RateBitsPerSec: 100e9, Delay: 2 * engine.Microsecond})
	must(err)
	// A slower link towards b: a queue, ECN marks and CNPs.
	_, _, err = n.Connect(sw, w.b, LinkConfig{RateBitsPerSec: 25e9, Delay: 10 * engine.Microsecond})
	must(err)
	n.ComputeRoutes()
	if retire {
		must(n.RetireFinished(100 * engine.Microsecond))
	}
	add := func(fc FlowConfig) {
		f, err := n.AddFlow(fc)
		must(err)
		w.flows = append(w.flows, f)
	}
	add(FlowConfig{Name: "long", Src: w.a, Dst: w.b, MaxRateBitsPerSec: 5e9})
	// Each window's flows are added half a window before it starts, as
	// the lab adds them to its running engine.
	addWindow := func(k int) {
		t0 := engine.Time(k) * retireWindow
		for i := 0; i < retireFlowsPerWn; i++ {
			add(FlowConfig{Name: fmt.Sprintf("w%d/%d", k, i), Src: w.a, Dst: w.b, Bytes: retireFlowBytes,
				Start: t0 + engine.Time(i)*20*engine.Microsecond})
		}
		add(FlowConfig{Name: fmt.Sprintf("w%d/back", k), Src: w.b, Dst: w.a, Bytes: retireFlowBytes, Start: t0})
	}
	addWindow(0)
	for k := 1; k < nWindows; k++ {
		sim.AtFunc(engine.Time(k)*retireWindow-retireWindow/2, func() { addWindow(k) })
	}
	return w
}

// totals are the counters a collector reads from the hosts: the live QPs'
// and the retired flows' together.
type totals struct {
	SentBytes, AckedBytes, SenderCNPs, RateCuts int64
	RxBytes, RxPackets, Marked, NPCNPs, Lost    int64
	Host                                        HostStats
}

func (w *windows) totals() map[string]totals {
	out := map[string]totals{}
	for _, h := range []*Host{w.a, w.b} {
		r := h.Retired()
		t := totals{SentBytes: r.SentBytes, AckedBytes: r.AckedBytes, SenderCNPs: r.CNPsRx, RateCuts: r.RateCuts,
			RxBytes: r.RxBytes, RxPackets: r.RxPackets, Marked: r.MarkedPackets, NPCNPs: r.CNPsTx, Lost: r.LostPackets,
			Host: h.Stats()}
		for _, q := range h.SendQPs() {
			t.SentBytes += q.SentBytes()
			t.AckedBytes += q.AckedBytes()
			t.SenderCNPs += q.CNPs()
			t.RateCuts += q.RateCuts()
		}
		for _, f := range w.flows {
			if rq := f.Receiver; rq != nil && rq.host == h {
				t.RxBytes += rq.RxBytes()
				t.RxPackets += rq.RxPackets()
				t.Marked += rq.MarkedPackets()
				t.NPCNPs += rq.CNPs()
				t.Lost += rq.LostPackets()
			}
		}
		out[h.Name()] = t
	}
	return out
}

// notBelow reports the first counter of now that is below before.
func notBelow(before, now totals) string {
	b := []int64{before.SentBytes, before.AckedBytes, before.SenderCNPs, before.RateCuts, before.RxBytes,
		before.RxPackets, before.Marked, before.NPCNPs, before.Lost, before.Host.CNPTx, before.Host.CNPRx,
		before.Host.AckTx, before.Host.AckRx, before.Host.CMTx, before.Host.CMRx, before.Host.UnknownDropped}
	n := []int64{now.SentBytes, now.AckedBytes, now.SenderCNPs, now.RateCuts, now.RxBytes,
		now.RxPackets, now.Marked, now.NPCNPs, now.Lost, now.Host.CNPTx, now.Host.CNPRx,
		now.Host.AckTx, now.Host.AckRx, now.Host.CMTx, now.Host.CMRx, now.Host.UnknownDropped}
	for i := range b {
		if n[i] < b[i] {
			return fmt.Sprintf("counter %d went from %d to %d", i, b[i], n[i])
		}
	}
	return ""
}

// TestRetireFinishedBounded: 60 windows of 21 short flows (1,261 flows)
// with retirement: the hosts' QP tables and the sender's scheduling list
// (what it scans for every packet) stay below a few windows' worth while
// the flows ever run grow; every counter a reader sums (live QPs plus
// Retired) only grows; and the run is the same run as without retirement:
// every flow finishes at the same time, the totals at the end are equal,
// and no packet arrives for a retired QP.
func TestRetireFinishedBounded(t *testing.T) {
	const nWindows = 60
	end := engine.Time(nWindows+2) * retireWindow
	run := func(retire bool) (*windows, int, int) {
		w := newWindows(t, nWindows, retire)
		maxSend, maxRecv := 0, 0
		prev := w.totals()
		w.sim.Every(0, 50*engine.Microsecond, func(engine.Time) {
			for _, h := range []*Host{w.a, w.b} {
				s, r := h.LiveQPs()
				maxSend, maxRecv = max(maxSend, s), max(maxRecv, r)
			}
			now := w.totals()
			for name := range now {
				if msg := notBelow(prev[name], now[name]); msg != "" {
					t.Fatalf("retire %v, %s at %v: %s", retire, name, w.sim.Now(), msg)
				}
			}
			prev = now
		})
		w.sim.Run(end)
		return w, maxSend, maxRecv
	}
	on, maxSend, maxRecv := run(true)
	off, offSend, _ := run(false)

	t.Logf("live QPs on a host at most: %d sender, %d receiver with retirement; %d sender without (of %d flows)",
		maxSend, maxRecv, offSend, len(on.flows))
	if tb := on.totals()["b"]; tb.Marked == 0 || tb.NPCNPs == 0 || on.totals()["a"].SenderCNPs == 0 {
		t.Errorf("no ECN marks or CNPs: the traffic does not exercise the counters (%+v)", tb)
	}
	if got := on.net.RetiredFlows(); got != int64(len(on.flows)-1) {
		t.Errorf("retired %d flows, want every finite one: %d", got, len(on.flows)-1)
	}
	// Three windows' worth: a window's flows end within the next window,
	// and the next window's are added half a window early.
	if bound := 3 * (retireFlowsPerWn + 1); maxSend > bound || maxRecv > bound {
		t.Errorf("with retirement, at most %d sender and %d receiver QPs on a host, want at most %d", maxSend, maxRecv, bound)
	}
	if offSend != len(off.flows)-nWindows { // a's: the long flow and every window's forward flows
		t.Errorf("without retirement, at most %d sender QPs on a host, want %d (every flow kept)", offSend, len(off.flows)-nWindows)
	}
	if s, _ := on.a.LiveQPs(); s != 1 {
		t.Errorf("after the last window %d sender QPs on a, want 1 (the long flow)", s)
	}
	for i, f := range on.flows {
		gotDone, gotAt := f.Done()
		wantDone, wantAt := off.flows[i].Done()
		if gotDone != wantDone || gotAt != wantAt {
			t.Errorf("flow %s: done %v at %v with retirement, %v at %v without", f.Name, gotDone, gotAt, wantDone, wantAt)
		}
		if f.Retired() == (f.Name == "long") {
			t.Errorf("flow %s: retired %v", f.Name, f.Retired())
		}
	}
	if diff := cmp.Diff(off.totals(), on.totals()); diff != "" {
		t.Errorf("totals at the end (-without +with retirement):\n%s", diff)
	}
	for _, h := range []*Host{on.a, on.b} {
		if d := h.Stats().UnknownDropped; d != 0 {
			t.Errorf("%s: %d packets for unknown QPs: a retired flow got a packet", h.Name(), d)
		}
	}
	// A snapshot lists the live flows and carries the retired flows' sums.
	snap := on.net.Snapshot()
	if len(snap.Flows) != 1 || snap.Flows[0].Name != "long" {
		t.Errorf("snapshot: %d flows, want the long flow only", len(snap.Flows))
	}
	for i, h := range on.net.Hosts() {
		if diff := cmp.Diff(h.Retired(), snap.Hosts[i].Retired); diff != "" {
			t.Errorf("snapshot of %s: retired counters (-host +snapshot):\n%s", h.Name(), diff)
		}
	}
	if on.net.LivePackets() != off.net.LivePackets() {
		t.Errorf("live packets %d with retirement, %d without", on.net.LivePackets(), off.net.LivePackets())
	}
}

// TestRetireFinishedRejectsNegative: a negative delay is an error naming it.
func TestRetireFinishedRejectsNegative(t *testing.T) {
	n := New(engine.New())
	if err := n.RetireFinished(-1); err == nil {
		t.Fatal("RetireFinished(-1): no error")
	}
}

// BenchmarkRetireManyFlows: 200 windows of 21 short flows on one host pair,
// with and without retirement: events per second of wall clock.
func BenchmarkRetireManyFlows(b *testing.B) {
	for _, retire := range []bool{false, true} {
		b.Run(fmt.Sprintf("retire=%v", retire), func(b *testing.B) {
			var events uint64
			var wall time.Duration
			for i := 0; i < b.N; i++ {
				w := newWindows(b, 200, retire)
				start := time.Now()
				w.sim.Run(202 * retireWindow)
				wall += time.Since(start)
				events += w.sim.Events()
			}
			b.ReportMetric(float64(events)/wall.Seconds(), "events/s")
		})
	}
}

// TestRetireFinishedLater: retirement without timers (RetireDue every
// 100 µs, as the scenario runner's sampler calls it) processes exactly the
// events of a run without retirement (same count: no retirement timers,
// and the retired QPs' rate-increase timers run out as they would have),
// keeps the hosts' totals and the flows' completion times, and bounds the
// live QPs as RetireFinished does (a sample interval later at most).
func TestRetireFinishedLater(t *testing.T) {
	const nWindows = 30
	end := engine.Time(nWindows+2) * retireWindow
	off := newWindows(t, nWindows, false)
	off.sim.Run(end)
	on := newWindows(t, nWindows, false)
	if err := on.net.RetireFinishedLater(100 * engine.Microsecond); err != nil {
		t.Fatal(err)
	}
	maxSend := 0
	on.sim.Every(0, 100*engine.Microsecond, func(now engine.Time) {
		on.net.RetireDue(now)
		s, _ := on.a.LiveQPs()
		maxSend = max(maxSend, s)
	})
	on.sim.Run(end)
	// The sampler's own events are the only extra ones.
	if got, want := on.sim.Events(), off.sim.Events()+uint64(end/(100*engine.Microsecond))+1; got != want {
		t.Errorf("%d events with retirement, want %d (without: %d, plus the sampler's)", got, want, off.sim.Events())
	}
	if got := on.net.RetiredFlows(); got != int64(len(on.flows)-1) {
		t.Errorf("retired %d flows, want every finite one: %d", got, len(on.flows)-1)
	}
	if bound := 3 * (retireFlowsPerWn + 1); maxSend > bound {
		t.Errorf("at most %d sender QPs on a, want at most %d", maxSend, bound)
	}
	for i, f := range on.flows {
		gotDone, gotAt := f.Done()
		wantDone, wantAt := off.flows[i].Done()
		if gotDone != wantDone || gotAt != wantAt {
			t.Errorf("flow %s: done %v at %v with retirement, %v at %v without", f.Name, gotDone, gotAt, wantDone, wantAt)
		}
	}
	if diff := cmp.Diff(off.totals(), on.totals()); diff != "" {
		t.Errorf("totals at the end (-without +with retirement):\n%s", diff)
	}
	if err := on.net.RetireFinishedLater(-1); err == nil {
		t.Error("a negative delay: no error")
	}
}

// retireWatch records, for every flow retired while its sender's DCQCN
// increase timer still runs, a weak pointer to that sender.
type retireWatch struct{ running []weak.Pointer[QP] }

func (w *retireWatch) OnRetire(f *Flow) {
	if f.Sender.dc.incRunning {
		w.running = append(w.running, weak.Make(f.Sender))
	}
}

// TestRetiredQPFreedAtOnce: a sender QP retired while its rate-increase
// timer runs is garbage as soon as it is retired, under both kinds of
// retirement: the engine's pending tick holds the QP's timer handler, not
// the QP. Retired later (RetireFinishedLater), the run still processes the
// events of a run without retirement (the ticks go on, detached).
func TestRetiredQPFreedAtOnce(t *testing.T) {
	const nWindows = 6
	end := engine.Time(nWindows+2) * retireWindow
	for _, later := range []bool{false, true} {
		t.Run(fmt.Sprintf("later=%v", later), func(t *testing.T) {
			w := newWindows(t, nWindows, false)
			watch := &retireWatch{}
			w.net.AddRetireObserver(watch)
			if later {
				if err := w.net.RetireFinishedLater(100 * engine.Microsecond); err != nil {
					t.Fatal(err)
				}
			} else if err := w.net.RetireFinished(100 * engine.Microsecond); err != nil {
				t.Fatal(err)
			}
			checked, alive := 0, 0
			// After every retirement pass, while the retired QPs' ticks are
			// still pending: collect and look.
			check := func(engine.Time) {
				if later {
					w.net.RetireDue(w.sim.Now())
				}
				if len(watch.running) == 0 {
					return
				}
				runtime.GC()
				for _, p := range watch.running {
					checked++
					if p.Value() != nil {
						alive++
					}
				}
				watch.running = watch.running[:0]
			}
			w.sim.Every(0, 100*engine.Microsecond, check)
			w.sim.Run(end)
			if checked == 0 {
				t.Fatal("no flow retired while its increase timer ran: the test sees nothing")
			}
			if alive > 0 {
				t.Errorf("%d of %d QPs retired with a running increase timer still reachable after a collection", alive, checked)
			}
			if later {
				off := newWindows(t, nWindows, false)
				off.sim.Every(0, 100*engine.Microsecond, func(engine.Time) {})
				off.sim.Run(end)
				if got, want := w.sim.Events(), off.sim.Events(); got != want {
					t.Errorf("%d events with retirement later, %d without", got, want)
				}
			}
		})
	}
}

// TestDetachedIncTicks: the increase timer of a retired QP (detachedInc)
// stops at the first tick that finds Rc and Rt at the maximum, which every
// QP reaches (Rc = (Rc + Rt)/2 rounded up reaches Rt; rounded down, it
// stayed one below and the timer of every QP ever cut ticked until the run
// ended) unless its increases add nothing (R_AI, R_HAI 0): then it ticks
// until the run ends, as the QP's own timer would.
func TestDetachedIncTicks(t *testing.T) {
	const maxR = 100e9
	const untilEnd = -1
	for _, tt := range []struct {
		desc    string
		rc, rt  int64
		stage   int
		want    int  // ticks after the pending one, or untilEnd
		ai, hai bool // R_AI and R_HAI 0
	}{
		{"at the maximum", maxR, maxR, 0, 0, false, false},
		{"one below", maxR - 1, maxR, 0, 1, false, false},
		{"cut: Rc halves its distance to Rt every tick", maxR / 2, maxR, 0, 36, false, false},
		{"rc at the maximum, rt one below, fast recovery", maxR, maxR - 1, 0, 2, false, false},
		{"rc at the maximum, rt one below, hyper increase", maxR, maxR - 1, 100, 1, false, false},
		{"R_AI 0: Rc reaches Rt below the maximum", maxR / 2, maxR * 3 / 4, 0, untilEnd, true, false},
		{"R_AI 0, hyper increase: R_HAI takes it there", maxR / 2, maxR / 2, 100, 43, true, false},
		{"R_AI and R_HAI 0, hyper increase", maxR / 2, maxR / 2, 100, untilEnd, true, true},
		{"R_AI 0, at the maximum", maxR, maxR, 0, 0, true, true},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			c := DefaultHostConfig().DCQCN
			if tt.ai {
				c.AIRateBitsPerSec = 0
			}
			if tt.hai {
				c.HAIRateBitsPerSec = 0
			}
			const ticks = 1000 // the run's length, in TimeReset
			sim := engine.New(engine.WithSeed(1))
			tm := &qpTimers{det: &detachedInc{own: maxR, c: &c, sim: sim,
				s: dcqcn{active: true, rc: tt.rc, rt: tt.rt, timeStage: tt.stage, byteStage: tt.stage,
					incGen: 7, incRunning: true, incQGen: 7, incQAt: c.TimeReset}}}
			sim.After(c.TimeReset, tm, evQPIncTimer, 7)
			sim.After(c.TimeReset/2, tm, evQPIncTimer, 6) // a stale generation: nothing
			sim.Run(ticks*c.TimeReset + c.TimeReset/2)
			want := uint64(tt.want) + 1 + 1
			if tt.want == untilEnd {
				want = ticks + 1
			}
			if got := sim.Events(); got != want {
				t.Errorf("rc %d, rt %d: %d events, want %d (the stale one, the pending tick and %d more)", tt.rc, tt.rt, got, want, want-2)
			}
			if (tm.det == nil) != (tt.want != untilEnd) {
				t.Errorf("detached state %v at the end; want it dropped once the timer stops", tm.det)
			}
		})
	}
}
