package lhcnp

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// TestFlowEntryCountsEveryPacket: §5.2 "Flow table entries MUST be updated
// upon each matching packet observation". A 40 KB flow is ten data
// packets (4096-byte MTU); its entry at n1 counts exactly the packets and
// bytes n1 sent on towards the destination, and its last-seen time is the
// last packet's.
func TestFlowEntryCountsEveryPacket(t *testing.T) {
	cfg := testConfig(1<<30, engine.Millisecond)
	l := newLine(t, lineOpts{cfg1: &cfg, noRP: true, noCM: true, flowBytes: 40_000})
	var lastEnq engine.Time
	l.sim.Every(0, 100*engine.Nanosecond, func(now engine.Time) {
		if l.n1Out.Stats().TxPackets > 0 && l.n1Out.QueueBytes(0) > 0 {
			lastEnq = now
		}
	})
	l.sim.Run(engine.Millisecond)
	st := l.n1Out.Stats()
	f, ok := l.node1.Flow(FlowKey{Src: addrSrc4, Dst: addrDst4, SrcQP: 100, DstQP: 200})
	if !ok {
		t.Fatal("no entry")
	}
	if st.TxPackets != 10 || f.Packets != st.TxPackets || f.Bytes != st.TxBytes {
		t.Errorf("entry %d packets %d bytes; n1 forwarded %d packets %d bytes (want 10 packets)", f.Packets, f.Bytes, st.TxPackets, st.TxBytes)
	}
	if f.LastSeen <= f.FirstSeen || f.LastSeen > lastEnq+engine.Microsecond {
		t.Errorf("first seen %v, last seen %v; the last packet was queued by %v", f.FirstSeen, f.LastSeen, lastEnq)
	}
}

// TestSelectFlows checks §5.5 step 1, "SHOULD select the flow(s) with the
// highest contribution to the queue occupancy": with several flows on the
// queue the largest come first, at most MaxFlowsPerTrigger of them, each
// with at least MinSharePercent of the queue, the largest always; flows
// with nothing queued are not chosen.
func TestSelectFlows(t *testing.T) {
	// Queued bytes of QPs 1..7 in a 1000-byte queue, in list order.
	queued := []int64{150, 0, 400, 50, 200, 100, 100}
	for _, tt := range []struct {
		desc     string
		maxFlows int
		minShare int
		want     []uint32 // QPs, in notification order
	}{
		{desc: "defaults: four largest, each >= 10%", maxFlows: 4, minShare: 10, want: []uint32{3, 5, 1, 6}},
		{desc: "at most two", maxFlows: 2, minShare: 10, want: []uint32{3, 5}},
		{desc: "share floor 20%", maxFlows: 4, minShare: 20, want: []uint32{3, 5}},
		{desc: "the largest always", maxFlows: 4, minShare: 50, want: []uint32{3}},
		{desc: "no floor", maxFlows: 10, minShare: 0, want: []uint32{3, 5, 1, 6, 7, 4}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			q := &queueState{cfg: DefaultQueueConfig(), qd: 1000}
			q.cfg.Action.MaxFlowsPerTrigger, q.cfg.Action.MinSharePercent = tt.maxFlows, tt.minShare
			for i, b := range queued {
				q.flows = append(q.flows, &flowEntry{key: FlowKey{SrcQP: uint32(i + 1)}, queued: b})
			}
			var n Node
			n.selectFlows(q)
			var got []uint32
			for _, e := range n.sel {
				got = append(got, e.key.SrcQP)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("selected (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPerPortAlpha checks §5.3.2 "Implementations MAY allow [alpha] to be
// configured per-port or per-link": an alpha override on n1's port
// towards n2 halves that port's K_max (and its programmed marking), a
// per-queue override on it changes that queue alone, and the other port
// keeps alpha 1.0.
func TestPerPortAlpha(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Enabled, cfg.FormatRoCEv2 = true, true
	cfg.Interface.RTTEst = 10 * engine.Millisecond
	ic := cfg.Interface
	ic.Queue.Alpha = 0.5
	q3 := ic.Queue
	q3.Alpha = 0.25
	ic.Queues = map[uint8]QueueConfig{3: q3}
	l := newLine(t, lineOpts{srcRate: 10e9, noRP: true})
	cfg.Interfaces = map[string]InterfaceConfig{l.n1Out.Name(): ic}
	node, err := Attach(l.net, l.n1, cfg)
	if err != nil {
		t.Fatal(err)
	}
	const full = 12_500_000 // 10 Gb/s x 10 ms / 8
	st := node.State(false)
	var back *netsim.Port
	for _, pt := range l.n1.Ports() {
		if pt != l.n1Out {
			back = pt
		}
	}
	type kmax struct {
		Port  string
		Queue int
		KMax  int64
		Prog  int64
	}
	var got, want []kmax
	for _, pt := range []*netsim.Port{back, l.n1Out} {
		for _, prio := range []int{0, 3} {
			got = append(got, kmax{pt.Name(), prio, st.Ports[pt.Index()].Queues[prio].KMaxBytes, pt.Config().ECN[prio].KMaxBytes})
			w := int64(full)
			switch {
			case pt == l.n1Out && prio == 3:
				w = full / 4
			case pt == l.n1Out:
				w = full / 2
			}
			want = append(want, kmax{pt.Name(), prio, w, w})
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("K_max by port and queue (-want +got):\n%s", diff)
	}
}

// markRecorder is the switch's observer in TestECNMarkingCurve: it passes
// everything to the node and records, for every data packet leaving the
// watched port, the queue depth the port marked it at and whether it did.
type markRecorder struct {
	*Node
	port    *netsim.Port
	samples []markSample
}

type markSample struct {
	depth  int64
	marked bool
}

func (r *markRecorder) OnDequeue(pt *netsim.Port, p *netsim.Packet, qBytes int64) {
	r.Node.OnDequeue(pt, p, qBytes)
	if pt == r.port && p.Kind == netsim.KindRoCE && p.Opcode().IsData() && p.DestQP() != wire.GSIQP {
		r.samples = append(r.samples, markSample{qBytes, p.ECN == netsim.ECNCE})
	}
}

// TestECNMarkingCurve checks the first-level response of §5.4 ("When the
// queue depth QD exceeds K_min, the node MUST apply ECN marking") with the
// curve the node programs: no mark at or below K_min, probability P_max ·
// (QD − K_min) / (K_max − K_min) between, every packet above K_max. A
// 100 Gb/s source into 25 Gb/s fills n1's queue through K_min = 2 MB and
// K_max = 12 MB (P_max 0.5); the marked share in each 2.5 MB band matches
// the formula averaged over the band's packets.
func TestECNMarkingCurve(t *testing.T) {
	const kmin, kmax, pmax = 2_000_000, 12_000_000, 0.5
	cfg := testConfig(kmax, engine.Millisecond)
	q := &cfg.Interface.Queue
	q.KMinMode, q.KMinBytes, q.PMax = KMinExplicit, kmin, pmax
	// No reaction point: the node's notifications past K_max change
	// nothing at the source, so the queue keeps filling.
	l := newLine(t, lineOpts{srcRate: 100e9, midRate: 25e9, cfg1: &cfg, noRP: true})
	if ecn := l.n1Out.Config().ECN[0]; ecn != (netsim.ECNConfig{Enabled: true, KMinBytes: kmin, KMaxBytes: kmax, PMax: pmax}) {
		t.Fatalf("port marking %+v, want the node's K_min, K_max and P_max", ecn)
	}
	rec := &markRecorder{Node: l.node1, port: l.n1Out}
	l.n1.SetObserver(rec)
	l.sim.Run(3 * engine.Millisecond)
	prob := func(d int64) float64 {
		switch {
		case d <= kmin:
			return 0
		case d < kmax:
			return pmax * float64(d-kmin) / float64(kmax-kmin)
		}
		return 1
	}
	type band struct {
		lo, hi      int64
		n, marked   int
		expectedSum float64
	}
	bands := []*band{{lo: 0, hi: kmin}}
	for lo := int64(kmin); lo < kmax; lo += 2_500_000 {
		bands = append(bands, &band{lo: lo, hi: lo + 2_500_000})
	}
	bands = append(bands, &band{lo: kmax, hi: math.MaxInt64})
	for _, s := range rec.samples {
		for _, b := range bands {
			if (s.depth > b.lo || s.depth == 0 && b.lo == 0) && s.depth <= b.hi {
				b.n++
				b.expectedSum += prob(s.depth)
				if s.marked {
					b.marked++
				}
			}
		}
	}
	for _, b := range bands {
		if b.n < 100 {
			t.Fatalf("band (%d, %d]: %d packets, too few to measure", b.lo, b.hi, b.n)
		}
		got, want := float64(b.marked)/float64(b.n), b.expectedSum/float64(b.n)
		// Four standard deviations of a binomial share (deterministic
		// run: the seed fixes the draw).
		tol := 4*math.Sqrt(want*(1-want)/float64(b.n)) + 1e-9
		if math.Abs(got-want) > tol {
			t.Errorf("band (%d, %d] bytes: %d of %d marked (%.3f), formula %.3f ± %.3f", b.lo, b.hi, b.marked, b.n, got, want, tol)
		} else {
			t.Logf("band (%d, %d] bytes: %.3f marked, formula %.3f", b.lo, b.hi, got, want)
		}
	}
}

// TestSelectFlowsEndToEnd: four flows from one 100 Gb/s source at 0.5, 8,
// 4 and 2 Gb/s (QPs 100 to 103, the node learns them in that order) share
// a 5 Gb/s queue (about 3, 55, 28 and 14% of it). The first trigger
// notifies the three with at least 10% of the queue, largest first, and
// not the 0.5 Gb/s one; with MaxFlowsPerTrigger 2 only the two largest
// (§5.5 step 1).
func TestSelectFlowsEndToEnd(t *testing.T) {
	for _, tt := range []struct {
		desc     string
		maxFlows int
		want     []uint32
	}{
		{"defaults", 4, []uint32{101, 102, 103}},
		{"at most two", 2, []uint32{101, 102}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := testConfig(400_000, engine.Millisecond)
			cfg.Interface.Queue.Action.MaxFlowsPerTrigger = tt.maxFlows
			l := newLine(t, lineOpts{srcRate: 100e9, midRate: 5e9, cfg1: &cfg, noRP: true, noCM: true, flowRateBitsPerSec: 0.5e9})
			for i, rate := range []int64{8e9, 4e9, 2e9} {
				if _, err := l.net.AddFlow(netsim.FlowConfig{Src: l.src, Dst: l.dst, SrcQPN: uint32(101 + i), DstQPN: uint32(201 + i),
					MaxRateBitsPerSec: rate, NoCM: true}); err != nil {
					t.Fatal(err)
				}
			}
			l.sim.Run(engine.Millisecond)
			sent := eventsOf(l.events1, EventCNPSent)
			if len(sent) == 0 {
				t.Fatal("nothing sent")
			}
			var got []uint32
			for _, e := range sent {
				if e.Time == sent[0].Time {
					got = append(got, e.Flow.SrcQP)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("flows notified at the first trigger, in order (-want +got):\n%s", diff)
			}
			// The contribution ranked is what each flow has in the queue
			// now: enqueued less dequeued bytes, summing to QD.
			var queued int64
			for _, f := range l.node1.State(true).FlowTable.Flows {
				if f.EgressPort == l.n1Out.Name() && f.EgressQueue == 0 {
					queued += f.QueuedBytes
				}
			}
			if qd := l.n1Out.QueueBytes(0); queued != qd {
				t.Errorf("flows' queued bytes sum to %d, QD %d", queued, qd)
			}
		})
	}
}
