package lhcnp

import (
	"net/netip"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// TestCollaborativeSuppression runs two nodes in series (§5.7): the source
// sends 10 Gb/s, N1's egress is 9 Gb/s and N2's 4 Gb/s. N1, nearest the
// source, fills first and cuts the flow by 30%; N2 sees the flow's arrival
// rate fall from 9 to 7 Gb/s and defers; its own queue keeps growing (7 >
// 4 Gb/s), so after a whole observation window it escalates with Pause and
// a higher congestion level. Without N1, N2 sends its own Rate Reduce.
func TestCollaborativeSuppression(t *testing.T) {
	const rtt2 = 4 * engine.Millisecond
	mk := func(withN1 bool) *line {
		var c1 *Config
		if withN1 {
			c := testConfig(100_000, 500*engine.Microsecond)
			c.Interface.Queue.Action.ResumeEnabled = false
			c1 = &c
		}
		c2 := testConfig(2_000_000, rtt2)
		c2.Interface.Queue.Action.ResumeEnabled = false
		// The source recovers after 2 x 10 ms, outside the test.
		rc := DefaultReactionConfig()
		rc.RTTEst = 10 * engine.Millisecond
		rc.TrustedSources = trusted(false)
		return newLine(t, lineOpts{srcRate: 10e9, midRate: 9e9, dstRate: 4e9, cfg1: c1, cfg2: &c2, rc: rc})
	}

	// mkN2 is mk(true) with N2's collaborative configuration edited.
	mkN2 := func(t *testing.T, edit func(c *CollaborativeConfig)) *line {
		l := mk(true)
		c := l.node2.Config()
		edit(&c.Collaborative)
		if err := l.node2.ApplyConfig(c); err != nil {
			t.Fatal(err)
		}
		return l
	}

	t.Run("n1 acts, n2 defers then escalates", func(t *testing.T) {
		l := mk(true)
		l.sim.Run(12 * engine.Millisecond)
		sent1 := eventsOf(l.events1, EventCNPSent)
		if len(sent1) == 0 || sent1[0].Action != wire.ActionRateReduce {
			t.Fatalf("n1 sent %+v, want a rate reduce first", sent1)
		}
		if d := eventsOf(l.events1, EventDeferral); len(d) != 0 {
			t.Errorf("n1 deferred %d times: its own notification must not count as upstream control", len(d))
		}
		defs := eventsOf(l.events2, EventDeferral)
		if len(defs) == 0 {
			t.Fatalf("n2 never deferred; events %+v", l.events2)
		}
		if defs[0].Time < sent1[0].Time {
			t.Errorf("n2 deferred at %v, before n1 acted at %v", defs[0].Time, sent1[0].Time)
		}
		sent2 := eventsOf(l.events2, EventCNPSent)
		if len(sent2) == 0 {
			t.Fatal("n2 never escalated")
		}
		esc := sent2[0]
		if !esc.Escalated || esc.Action != wire.ActionPause || esc.CongLevel < 224 {
			t.Errorf("n2's first notification %+v, want an escalated pause at level >= 224", esc)
		}
		if esc.Time-defs[0].Time < rtt2 {
			t.Errorf("escalated %v after deferring, before the %v window", esc.Time-defs[0].Time, rtt2)
		}
		c := l.node2.State(false).Ports[l.n2Out.Index()].Queues[0].Counters
		if c.SuppressedDeferral == 0 || c.Deferrals == 0 || c.Escalations == 0 {
			t.Errorf("n2 counters %+v", c)
		}
		if s := l.node2.State(false).Collaborative; s.Deferrals == 0 || s.Escalations == 0 || s.ObservationWindow != rtt2 {
			t.Errorf("collaborative state %+v", s)
		}
	})

	// §5.7 "a higher Congestion Level": at N2's port a little faster
	// (6.6 Gb/s, K_max 700 KB) the queue has kept growing, but not past
	// the top level, when N2 escalates: the escalation's level is above
	// the level of the queue it sees then (the node's own severity).
	t.Run("escalation above the queue's level", func(t *testing.T) {
		c1 := testConfig(100_000, 500*engine.Microsecond)
		c1.Interface.Queue.Action.ResumeEnabled = false
		c2 := testConfig(700_000, rtt2)
		c2.Interface.Queue.Action.ResumeEnabled = false
		rc := DefaultReactionConfig()
		rc.RTTEst = 10 * engine.Millisecond
		rc.TrustedSources = trusted(false)
		l := newLine(t, lineOpts{srcRate: 10e9, midRate: 9e9, dstRate: 6.6e9, cfg1: &c1, rc: rc})
		var n2 *Node
		var esc Event
		var own uint8
		n2, err := Attach(l.net, l.n2, c2, WithEvents(func(e Event) {
			if e.Kind == EventCNPSent && e.Escalated && !esc.Escalated {
				esc, own = e, n2.portOf(l.n2Out).queues[0].level
			}
		}))
		if err != nil {
			t.Fatal(err)
		}
		l.sim.Run(14 * engine.Millisecond)
		if !esc.Escalated {
			t.Fatal("n2 never escalated")
		}
		if own == 255 || esc.CongLevel <= own || esc.CongLevel < 224 {
			t.Errorf("escalated at level %d with the queue at level %d: want above it (and below 255) and at least 224", esc.CongLevel, own)
		}
	})

	t.Run("n2 alone acts itself", func(t *testing.T) {
		l := mk(false)
		l.sim.Run(12 * engine.Millisecond)
		sent2 := eventsOf(l.events2, EventCNPSent)
		if len(sent2) == 0 || sent2[0].Action != wire.ActionRateReduce || sent2[0].Escalated {
			t.Fatalf("n2 sent %+v, want a plain rate reduce", sent2)
		}
		if d := eventsOf(l.events2, EventDeferral); len(d) != 0 {
			t.Errorf("n2 deferred without upstream control: %+v", d)
		}
	})

	// A configured observation window (a deviation from §5.7's RTT_est)
	// replaces N2's RTT_est: 6 ms, so N2 escalates no sooner than 6 ms
	// after deferring.
	t.Run("configured observation window", func(t *testing.T) {
		const win = 6 * engine.Millisecond
		l := mkN2(t, func(c *CollaborativeConfig) { c.ObservationWindow = win })
		l.sim.Run(16 * engine.Millisecond)
		defs, sent2 := eventsOf(l.events2, EventDeferral), eventsOf(l.events2, EventCNPSent)
		if len(defs) == 0 || len(sent2) == 0 || !sent2[0].Escalated {
			t.Fatalf("n2 deferrals %+v, notifications %+v: want a deferral then an escalation", defs, sent2)
		}
		if d := sent2[0].Time - defs[0].Time; d < win {
			t.Errorf("escalated %v after deferring, before the configured %v window", d, win)
		}
		if w := l.node2.State(false).Collaborative.ObservationWindow; w != win {
			t.Errorf("state's observation window %v, want %v", w, win)
		}
	})

	t.Run("suppression disabled", func(t *testing.T) {
		l := mkN2(t, func(c *CollaborativeConfig) { c.Enabled = false })
		l.sim.Run(12 * engine.Millisecond)
		if d := eventsOf(l.events2, EventDeferral); len(d) != 0 {
			t.Errorf("deferred with suppression off")
		}
		if sent2 := eventsOf(l.events2, EventCNPSent); len(sent2) == 0 || sent2[0].Escalated {
			t.Errorf("n2 sent %+v, want plain notifications", sent2)
		}
	})
}

// TestUpstreamPriority checks §5.7 "the node closest to the congestion
// point (in the upstream direction toward the source) SHOULD respond
// first" when two nodes congest at once:
//
//	src --\                    /-- x2
//	       n1 ===(100 µs)=== n2 ----- dst
//	x1 ---/
//
// src and x1 send 10 Gb/s each to dst through n1 and n2 (10 Gb/s links):
// n1's queue grows by 1.25 MB/ms. x2 joins at n2 as their traffic arrives
// there, so n2's queue grows as fast and crosses its K_max together with
// n1's. n1, with no congestion-aware node upstream of its flows, notifies
// src and x1 at once; n2 knows n1 (Collaborative.Peers) is on the route
// from src and x1 and waits for n1's response, notifying only x2, whose
// route crosses no other node. Without UpstreamFirst both nodes notify
// src and x1.
// upstreamResult is what upstreamRun saw: each node's notifications, n2's
// deferrals, and when each node's queue crossed its K_max (-1: never).
type upstreamResult struct {
	sent1, sent2 []Event
	defs2        []Event
	cross1       engine.Time
	cross2       engine.Time
}

// upstreamK1 and upstreamK2 are upstreamRun's K_max at n1 and n2: n2's
// queue starts 100 µs later.
const upstreamK1, upstreamK2 = 200_000, 75_000

// upstreamOpts are upstreamRun's choices: upstream priority
// (CollaborativeConfig.UpstreamFirst and UpstreamFirstMarked), whether x1
// joins at n1, n1's explicit K_min and K_max with P_max 1 (0: K_max
// upstreamK1, K_min half of it, the default P_max), and x2's start.
type upstreamOpts struct {
	upstreamFirst, marked, withX1 bool
	n1KMin, n1KMax                int64
	// x2Start is when x2 starts (0: 300 µs).
	x2Start engine.Time
}

// upstreamRun runs src → n1 → n2 → dst (QP 100) for a millisecond with x1
// joining at n1 (QP 300; with withX1, which congests n1's port to n2) and
// x2 at n2 from 300 µs or x2Start (QP 400, which congests n2's port to dst), both
// nodes congestion-aware peers.
func upstreamRun(t *testing.T, o upstreamOpts) upstreamResult {
	t.Helper()
	const k1, k2 = upstreamK1, upstreamK2
	sim := engine.New(engine.WithSeed(1))
	net := netsim.New(sim)
	hc := netsim.DefaultHostConfig()
	hc.DCQCN.Enabled, hc.NP.Disabled = false, true
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	host := func(name, ip string) *netsim.Host {
		h, err := net.AddHost(name, netip.MustParseAddr(ip), hc)
		must(err)
		return h
	}
	src, x1, x2, dst := host("src", "10.0.0.1"), host("x1", "10.0.0.2"), host("x2", "10.0.0.3"), host("dst", "10.0.0.4")
	n1, err := net.AddSwitch("n1", addrN14, netsim.SwitchConfig{})
	must(err)
	n2, err := net.AddSwitch("n2", addrN24, netsim.SwitchConfig{})
	must(err)
	lc := netsim.LinkConfig{RateBitsPerSec: 10e9, Delay: engine.Microsecond}
	for _, c := range [][2]netsim.Node{{src, n1}, {x1, n1}, {x2, n2}, {n2, dst}} {
		_, _, err := net.Connect(c[0], c[1], lc)
		must(err)
	}
	out1, _, err := net.Connect(n1, n2, netsim.LinkConfig{RateBitsPerSec: 10e9, Delay: 100 * engine.Microsecond})
	must(err)
	net.ComputeRoutes()
	out2 := n2.Route(dst.ID())
	for _, f := range []netsim.FlowConfig{
		{Name: "main", Src: src, Dst: dst, SrcQPN: 100, DstQPN: 200},
		{Name: "x1", Src: x1, Dst: dst, SrcQPN: 300, DstQPN: 301},
		{Name: "x2", Src: x2, Dst: dst, SrcQPN: 400, DstQPN: 401, Start: 300 * engine.Microsecond},
	} {
		if f.Name == "x1" && !o.withX1 {
			continue
		}
		if f.Name == "x2" && o.x2Start > 0 {
			f.Start = o.x2Start
		}
		_, err := net.AddFlow(f)
		must(err)
	}
	var r upstreamResult
	cfg := func(kmax int64) Config {
		c := testConfig(kmax, engine.Millisecond)
		c.Interface.Queue.Action.ResumeEnabled = false
		c.Collaborative.UpstreamFirst = o.upstreamFirst
		c.Collaborative.UpstreamFirstMarked = o.marked
		c.Collaborative.Peers = trusted(false)
		return c
	}
	c1 := cfg(k1)
	if o.n1KMin > 0 {
		q := &c1.Interface.Queue
		q.KMaxBytes, q.KMinMode, q.KMinBytes, q.PMax = o.n1KMax, KMinExplicit, o.n1KMin, 1
	}
	var ev1, ev2 []Event
	_, err = Attach(net, n1, c1, WithEvents(func(e Event) { ev1 = append(ev1, e) }))
	must(err)
	_, err = Attach(net, n2, cfg(k2), WithEvents(func(e Event) { ev2 = append(ev2, e) }))
	must(err)
	rc := DefaultReactionConfig()
	rc.RTTEst = 10 * engine.Millisecond
	rc.TrustedSources = trusted(false)
	rp, err := NewReactionPoint(net, rc)
	must(err)
	for _, h := range []*netsim.Host{src, x1, x2} {
		rp.Attach(h)
	}
	r.cross1, r.cross2 = -1, -1
	sim.Every(0, engine.Microsecond, func(now engine.Time) {
		if r.cross1 < 0 && out1.QueueBytes(0) > k1 {
			r.cross1 = now
		}
		if r.cross2 < 0 && out2.QueueBytes(0) > k2 {
			r.cross2 = now
		}
	})
	sim.Run(engine.Millisecond)
	r.sent1, r.sent2, r.defs2 = eventsOf(ev1, EventCNPSent), eventsOf(ev2, EventCNPSent), eventsOf(ev2, EventDeferral)
	return r
}

// eventsTo are the events of evs about the flow from source QP qp.
func eventsTo(evs []Event, qp uint32) []Event {
	var out []Event
	for _, e := range evs {
		if e.Flow.SrcQP == qp {
			out = append(out, e)
		}
	}
	return out
}

func TestUpstreamPriority(t *testing.T) {
	r := upstreamRun(t, upstreamOpts{upstreamFirst: true, withX1: true})
	if r.cross1 < 0 || r.cross2 < 0 || r.cross2-r.cross1 > 20*engine.Microsecond || r.cross1-r.cross2 > 20*engine.Microsecond {
		t.Fatalf("queues crossed K_max at %v (n1) and %v (n2): want at once", r.cross1, r.cross2)
	}
	for _, qp := range []uint32{100, 300} {
		if s := eventsTo(r.sent1, qp); len(s) == 0 || s[0].Time > r.cross1+5*engine.Microsecond {
			t.Errorf("n1 to QP %d: %+v, want a notification at its crossing (%v)", qp, s, r.cross1)
		}
		if s := eventsTo(r.sent2, qp); len(s) != 0 {
			t.Errorf("n2 notified QP %d (%+v): n1 is upstream and responds first", qp, s[0])
		}
		if d := eventsTo(r.defs2, qp); len(d) == 0 || !d[0].Upstream {
			t.Errorf("n2 deferrals for QP %d: %+v, want an upstream-priority deferral", qp, d)
		}
	}
	if s := eventsTo(r.sent2, 400); len(s) == 0 || s[0].Time > r.cross2+5*engine.Microsecond {
		t.Errorf("n2 to x2 (QP 400): %+v, want a notification at its crossing (%v): no node upstream of x2", s, r.cross2)
	}

	// Without the priority both nodes respond to src at once.
	r = upstreamRun(t, upstreamOpts{withX1: true})
	if s := eventsTo(r.sent2, 100); len(s) == 0 || s[0].Time > r.cross2+5*engine.Microsecond {
		t.Errorf("without upstream priority n2 to QP 100: %+v, want a notification at its crossing (%v)", s, r.cross2)
	}
}

// TestUpstreamFirstMarked: with UpstreamFirstMarked a node waits for its
// upstream peer only for a flow that arrives CE-marked. With n1 idle (no
// x1), src's packets reach n2 unmarked: n2 is the node closest to the
// congestion point and notifies src at its crossing, where upstream
// priority alone defers src to n1 for a whole window. With n1 marking, its
// marks reach n2 before n2's queue crosses K_max, and n2 waits for n1 as
// upstream priority alone does.
func TestUpstreamFirstMarked(t *testing.T) {
	// n1 idle, upstream priority alone: src waits for n1 the whole run
	// (the window is RTT_est, 1 ms).
	r := upstreamRun(t, upstreamOpts{upstreamFirst: true})
	if r.cross1 >= 0 || r.cross2 < 0 {
		t.Fatalf("queues crossed K_max at %v (n1) and %v (n2): want n2 alone", r.cross1, r.cross2)
	}
	if s := eventsTo(r.sent2, 100); len(s) != 0 {
		t.Errorf("upstream priority alone: n2 notified src (%+v) within the wait for n1", s[0])
	}
	if d := eventsTo(r.defs2, 100); len(d) == 0 || !d[0].Upstream {
		t.Errorf("upstream priority alone: n2's deferrals of src %+v, want the upstream-priority wait", d)
	}
	// n1 idle, the wait only for marked flows: n2 notifies src at once.
	r = upstreamRun(t, upstreamOpts{upstreamFirst: true, marked: true})
	if s := eventsTo(r.sent2, 100); len(s) == 0 || s[0].Time > r.cross2+5*engine.Microsecond {
		t.Errorf("n1 idle, UpstreamFirstMarked: n2 to src %+v, want a notification at its crossing (%v)", s, r.cross2)
	}
	if d := eventsTo(r.defs2, 100); len(d) != 0 {
		t.Errorf("n1 idle, UpstreamFirstMarked: n2 deferred src %+v: nothing upstream marks it", d)
	}
	// n1 congested by x1 and marking (K_min 10 KB) long before it would
	// notify (K_max 2 MB, which its queue does not reach within the run):
	// src's packets reach n2 CE-marked (from about 400 µs: n1's queue and
	// the 100 µs link), x2 congests n2 from 600 µs, and n2 waits for n1 as
	// upstream priority alone does.
	for _, marked := range []bool{false, true} {
		r = upstreamRun(t, upstreamOpts{upstreamFirst: true, marked: marked, withX1: true, n1KMin: 10_000, n1KMax: 2_000_000, x2Start: 600 * engine.Microsecond})
		if r.cross2 < 0 {
			t.Fatalf("n1 marking, UpstreamFirstMarked %v: n2's queue never crossed K_max", marked)
		}
		if len(r.sent1) != 0 {
			t.Fatalf("n1 notified (%+v): the case wants it marking only", r.sent1[0])
		}
		if s := eventsTo(r.sent2, 100); len(s) != 0 {
			t.Errorf("n1 marking, UpstreamFirstMarked %v: n2 notified src (%+v) within the wait for n1", marked, s[0])
		}
		if d := eventsTo(r.defs2, 100); len(d) == 0 || !d[0].Upstream {
			t.Errorf("n1 marking, UpstreamFirstMarked %v: n2's deferrals of src %+v, want the upstream-priority wait", marked, d)
		}
	}
}
