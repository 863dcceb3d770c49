package netsim

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// dumbbell is a1, a2 -> s1 -> (WAN) -> s2 -> b on one network: two flows
// congest s1's WAN port.
type dumbbell struct {
	net    *Network
	s1, s2 *Switch
	wan    [2]*Port // s1's and s2's WAN ports
	flows  []*Flow
}

// newDumbbell builds the topology on sim. local says which half the
// network runs: "" both, "s1" (a1, a2, s1) or "s2" (s2, b); the other
// half's flows are dormant.
func newDumbbell(t *testing.T, sim *engine.Sim, local string) *dumbbell {
	t.Helper()
	n := New(sim)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	port := dcqcnPort(20_000, 80_000, 2_000_000)
	d := &dumbbell{net: n}
	var err error
	d.s1, err = n.AddSwitch("s1", netip.MustParseAddr("10.0.9.1"), SwitchConfig{Port: port})
	must(err)
	d.s2, err = n.AddSwitch("s2", netip.MustParseAddr("10.0.9.2"), SwitchConfig{Port: port})
	must(err)
	hc := DefaultHostConfig()
	hc.MTUBytes = 1024
	var hs []*Host
	for i, name := range []string{"a1", "a2", "b"} {
		h, err := n.AddHost(name, netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}), hc)
		must(err)
		hs = append(hs, h)
	}
	lc := LinkConfig{RateBitsPerSec: 10e9, Delay: engine.Microsecond}
	for _, h := range hs[:2] {
		_, _, err = n.Connect(h, d.s1, lc)
		must(err)
	}
	d.wan[0], d.wan[1], err = n.Connect(d.s1, d.s2, LinkConfig{RateBitsPerSec: 10e9, Delay: 200 * engine.Microsecond})
	must(err)
	_, _, err = n.Connect(d.s2, hs[2], lc)
	must(err)
	n.ComputeRoutes()
	for i, h := range hs[:2] {
		f, err := n.AddFlow(FlowConfig{Src: h, Dst: hs[2], Start: engine.Time(i) * 50 * engine.Microsecond,
			Prio: 3, Dormant: local == "s2"})
		must(err)
		d.flows = append(d.flows, f)
	}
	return d
}

// copyWire hands every packet to the same link of another network on the
// same engine: an in-process stand-in for a process boundary that keeps
// the simulation deterministic.
type copyWire struct{ to *Link }

func (w copyWire) Send(l *Link, p *Packet, txEnd engine.Time) {
	q := w.to.net.NewPacket()
	fb, frame := q.fb, p.Frame()
	*q = *p
	q.fb, q.frameLen, q.inPort = fb, 0, 0
	if err := w.to.net.SetFrame(q, frame); err != nil {
		panic(err)
	}
	l.net.FreePacket(p)
	if late := w.to.Arrive(q, txEnd); late != 0 {
		panic("a packet on a same-engine wire is late")
	}
}

type portCounts struct {
	Name                 string
	Tx, Rx, Marks, Drops int64
	PeakQueue, DownDrops int64
}

func counts(nodes ...*Switch) []portCounts {
	var out []portCounts
	for _, s := range nodes {
		for _, pt := range s.Ports() {
			st := pt.Stats()
			out = append(out, portCounts{Name: pt.Name(), Tx: st.TxBytes, Rx: st.RxBytes, Marks: st.ECNMarks,
				Drops: st.DropPackets, PeakQueue: st.PeakQueueBytes, DownDrops: st.DownDropPackets})
		}
	}
	return out
}

// TestWireSplitMatchesWhole: the network cut in two at the WAN link, each
// half a Network of its own joined by wires, behaves exactly as the whole
// network: every switch port counts the same bytes, marks and drops.
func TestWireSplitMatchesWhole(t *testing.T) {
	const until = 20 * engine.Millisecond
	wholeSim := engine.New(engine.WithSeed(5))
	whole := newDumbbell(t, wholeSim, "")
	wholeSim.Run(until)

	sim := engine.New(engine.WithSeed(5))
	h1, h2 := newDumbbell(t, sim, "s1"), newDumbbell(t, sim, "s2")
	h1.wan[0].Out().SetWire(copyWire{to: h2.wan[0].Out()}) // s1 -> s2 in half 2
	h2.wan[1].Out().SetWire(copyWire{to: h1.wan[1].Out()}) // s2 -> s1 in half 1
	sim.Run(until)

	want := counts(whole.s1, whole.s2)
	got := append(counts(h1.s1), counts(h2.s2)...)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("split network differs from the whole (-want +got):\n%s", diff)
	}
	if want[2].Name != "s1:2" || want[2].Marks == 0 || want[2].DownDrops != 0 {
		t.Error("no ECN marks on s1:2: the test does not exercise the congested WAN port")
	}
	for _, f := range h2.flows {
		if got, want := f.Receiver.RxBytes(), whole.flows[f.ID].Receiver.RxBytes(); got != want {
			t.Errorf("flow %s: %d bytes received split, %d whole", f.Name, got, want)
		}
	}
}

// TestLinkDownUp: taking the WAN link down loses what s1 had queued and
// what is in flight, counted; traffic resumes when it comes back up.
func TestLinkDownUp(t *testing.T) {
	sim := engine.New(engine.WithSeed(1))
	d := newDumbbell(t, sim, "")
	wan := d.wan[0]
	sim.Run(5 * engine.Millisecond)
	queued := wan.TotalQueueBytes()
	inflight := wan.Out().InFlight()
	if queued == 0 || inflight == 0 {
		t.Fatalf("before the cut: %d bytes queued, %d packets in flight; want both > 0", queued, inflight)
	}
	rx0 := d.wan[1].Stats().RxBytes
	wan.Out().SetUp(false)
	d.wan[1].Out().SetUp(false)
	st := wan.Stats()
	if wan.TotalQueueBytes() != 0 || wan.Out().InFlight() != 0 {
		t.Errorf("after the cut: %d bytes queued, %d in flight; want 0", wan.TotalQueueBytes(), wan.Out().InFlight())
	}
	if st.DownDropPackets < int64(inflight) || st.DownDropBytes < queued {
		t.Errorf("down drops %d packets, %d bytes; want at least the %d in flight and %d bytes queued",
			st.DownDropPackets, st.DownDropBytes, inflight, queued)
	}
	sim.Run(10 * engine.Millisecond)
	if got := d.wan[1].Stats().RxBytes; got != rx0 {
		t.Errorf("s2 received %d bytes over a down link", got-rx0)
	}
	if wan.Stats().DownDropPackets <= st.DownDropPackets {
		t.Error("packets routed to the down port were not counted as lost")
	}
	wan.Out().SetUp(true)
	d.wan[1].Out().SetUp(true)
	sim.Run(15 * engine.Millisecond)
	if got := d.wan[1].Stats().RxBytes; got <= rx0 {
		t.Error("no traffic after the link came back up")
	}
	if !wan.Out().Up() {
		t.Error("Up() = false after SetUp(true)")
	}
}

// TestArriveLate: a frame whose arrival time has passed arrives now and
// reports its lateness; one in time is delivered at send time plus delay.
func TestArriveLate(t *testing.T) {
	sim := engine.New()
	d := newDumbbell(t, sim, "s2") // nothing starts
	in := d.wan[0].Out()           // s1 -> s2, delay 200 µs
	sim.Run(engine.Millisecond)
	p := d.net.NewPacket()
	p.Kind, p.SizeBytes, p.Dst = KindOther, 100, d.s2.ID()
	if late := in.Arrive(p, 700*engine.Microsecond); late != 100*engine.Microsecond {
		t.Errorf("late = %v, want 100µs", late)
	}
	p = d.net.NewPacket()
	p.Kind, p.SizeBytes, p.Dst = KindOther, 100, d.s2.ID()
	if late := in.Arrive(p, engine.Millisecond); late != 0 {
		t.Errorf("late = %v, want 0", late)
	}
	rx := d.wan[1].Stats().RxPackets
	sim.Run(engine.Millisecond + 199*engine.Microsecond)
	if got := d.wan[1].Stats().RxPackets - rx; got != 1 {
		t.Errorf("%d packets arrived before send time + delay, want 1 (the late one)", got)
	}
	sim.Run(engine.Millisecond + 200*engine.Microsecond)
	if got := d.wan[1].Stats().RxPackets - rx; got != 2 {
		t.Errorf("%d packets arrived by send time + delay, want 2", got)
	}
}

// TestCMRetriesREQ: REQs lost while the WAN link is down are sent again
// after the CM response timeout; the flows connect then instead of never.
func TestCMRetriesREQ(t *testing.T) {
	sim := engine.New(engine.WithSeed(1))
	d := newDumbbell(t, sim, "")
	d.wan[0].Out().SetUp(false)
	d.wan[1].Out().SetUp(false)
	sim.AtFunc(engine.Second, func() {
		d.wan[0].Out().SetUp(true)
		d.wan[1].Out().SetUp(true)
	})
	sim.Run(cmResponseTime - engine.Millisecond)
	for _, f := range d.flows {
		if at := f.Sender.ConnectedAt(); at >= 0 {
			t.Fatalf("flow %s connected at %v, before its REQ could be retried", f.Name, at)
		}
	}
	sim.Run(cmResponseTime + 100*engine.Millisecond)
	for _, f := range d.flows {
		at := f.Sender.ConnectedAt()
		if at < cmResponseTime || at > cmResponseTime+100*engine.Millisecond {
			t.Errorf("flow %s connected at %v, want just after the retry at %v", f.Name, at, cmResponseTime)
		}
		if f.Receiver.RxBytes() == 0 {
			t.Errorf("flow %s delivered nothing after connecting", f.Name)
		}
	}
}

// setBTH, the per-packet writer of data packets, ACKs and CNPs, writes the
// bytes that wire.BTH.Encode (SetBTH) writes for the same fields.
func TestSetBTHAsEncode(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	ops := []wire.Opcode{wire.OpRCWriteFirst, wire.OpRCWriteMiddle, wire.OpRCWriteLast, wire.OpRCWriteOnly, wire.OpRCAck, wire.OpCNP}
	for i := 0; i < 10000; i++ {
		h := wire.BTH{Opcode: ops[rng.IntN(len(ops))], PKey: 0xFFFF, PadCount: uint8(rng.IntN(4)),
			Byte4: uint8(rng.IntN(256)), DestQP: rng.Uint32() & 0xFFFFFF, PSN: rng.Uint32() & 0xFFFFFF,
			AckReq: rng.IntN(2) == 0, Resv7: uint8(rng.IntN(128))}
		var want, got Packet
		want.SetBTH(&h)
		w := h.PSN | uint32(h.Resv7)<<24
		if h.AckReq {
			w |= 1 << 31
		}
		got.setBTH(h.Opcode, h.PadCount, h.Byte4, h.DestQP, w)
		if got.Hdr != want.Hdr || got.HdrLen != want.HdrLen {
			t.Fatalf("%+v: setBTH wrote % x (%d), SetBTH % x (%d)", h, got.Hdr[:12], got.HdrLen, want.Hdr[:12], want.HdrLen)
		}
	}
}
