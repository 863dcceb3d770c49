package netsim

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// cmSeen is one CM MAD as a switch egress saw it.
type cmSeen struct {
	At       engine.Time
	Attr     wire.CMAttrID
	Src, Dst netip.Addr
	QPN      uint32 // FlowQPNs: the sender's or the receiver's QP
}

// cmWatcher decodes the frame of every QP1 packet a switch enqueues and
// remembers when the first data packet went through.
type cmWatcher struct {
	t         *testing.T
	sim       *engine.Sim
	dec       wire.Decoder
	f         wire.Frame
	seen      []cmSeen
	firstData engine.Time
	reqTimers []uint8 // each REQ's local ACK timeout
}

func (w *cmWatcher) OnEnqueue(_ *Port, p *Packet, _ int64) {
	if p.Kind != KindRoCE {
		return
	}
	if p.DestQP() != wire.GSIQP {
		if p.Opcode().IsData() && w.firstData < 0 {
			w.firstData = w.sim.Now()
		}
		return
	}
	if p.Frame() == nil {
		w.t.Errorf("QP1 packet without a frame")
		return
	}
	if err := w.dec.Decode(p.Frame(), &w.f); err != nil || w.f.Kind != wire.KindCM {
		w.t.Errorf("cm frame: kind %v, %v", w.f.Kind, err)
		return
	}
	if int(p.SizeBytes) != len(p.Frame())+4 {
		w.t.Errorf("size %d for a %d-byte frame", p.SizeBytes, len(p.Frame()))
	}
	if p.Opcode() != wire.OpUDSendOnly || p.HdrLen != wire.BTHLen+wire.DETHLen {
		w.t.Errorf("hdr: opcode %v, %d bytes", p.Opcode(), p.HdrLen)
	}
	src, dst := w.f.IPAddrs()
	s, r, _ := w.f.CM.FlowQPNs()
	w.seen = append(w.seen, cmSeen{At: w.sim.Now(), Attr: w.f.CM.AttrID, Src: src, Dst: dst, QPN: s | r})
	if w.f.CM.AttrID == wire.CMAttrREQ {
		w.reqTimers = append(w.reqTimers, w.f.CM.PrimaryLocalACKTimeout)
	}
}
func (w *cmWatcher) OnDequeue(*Port, *Packet, int64) {}
func (w *cmWatcher) OnMark(*Port, *Packet, int64)    {}
func (w *cmWatcher) OnDrop(*Port, *Packet, int64)    {}

// A finite flow connects with REQ, REP, RTU, sends, and disconnects with
// DREQ, DREP; the switch sees every MAD as a decodable frame; data starts
// at the sender when the REP arrives, so the switch sees the RTU first.
func TestCMExchange(t *testing.T) {
	const delay = 10 * engine.Microsecond
	in := newIncast(t, incastCfg{senders: 1, rateBitsPerSec: 10e9, accessDelay: delay, bnDelay: delay,
		port: PortConfig{}, host: DefaultHostConfig()})
	// A second, finite flow with fixed QPNs from the same sender.
	f, err := in.net.AddFlow(FlowConfig{Src: in.senders[0], Dst: in.recv, SrcQPN: 100, DstQPN: 200,
		Bytes: 1 << 20, Start: 50 * engine.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	w := &cmWatcher{t: t, sim: in.sim, firstData: -1}
	in.sw.SetObserver(w)
	q := f.Sender
	if q.Active() || q.ConnectedAt() != -1 {
		t.Errorf("before its start: active %v, connected at %v", q.Active(), q.ConnectedAt())
	}
	in.sim.Run(55 * engine.Microsecond)
	if q.Active() || q.SentBytes() != 0 {
		t.Errorf("during the exchange: active %v, sent %d", q.Active(), q.SentBytes())
	}
	in.sim.Run(5 * engine.Millisecond)
	done, _ := q.Done()
	if !done || q.Active() {
		t.Fatalf("flow done %v, active %v", done, q.Active())
	}
	var (
		a, b   = in.senders[0].Addr(), in.recv.Addr()
		qa, qb = in.flows[0].Sender.QPN, in.flows[0].Receiver.QPN
	)
	type msg struct {
		Attr     wire.CMAttrID
		Src, Dst netip.Addr
		QPN      uint32
	}
	var got []msg
	for _, s := range w.seen {
		got = append(got, msg{s.Attr, s.Src, s.Dst, s.QPN})
	}
	want := []msg{
		{wire.CMAttrREQ, a, b, qa}, {wire.CMAttrREP, b, a, qb}, {wire.CMAttrRTU, a, b, 0},
		{wire.CMAttrREQ, a, b, 100}, {wire.CMAttrREP, b, a, 200}, {wire.CMAttrRTU, a, b, 0},
		{wire.CMAttrDREQ, a, b, 200}, {wire.CMAttrDREP, b, a, 0},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(x, y netip.Addr) bool { return x == y })); diff != "" {
		t.Errorf("MADs at the switch (-want, +got):\n%s", diff)
	}
	// Each REQ announces the sender's QP timeout: rdma_cm's 17 by default.
	if want := []uint8{DefaultAckTimeoutExp, DefaultAckTimeoutExp}; !slices.Equal(w.reqTimers, want) {
		t.Errorf("REQs' local ACK timeout %v, want %v", w.reqTimers, want)
	}
	// The endless flow's data follows its RTU at the switch, and its sender
	// connected one round trip (plus serialisation) after its start at 0.
	if len(w.seen) < 3 || w.firstData <= w.seen[2].At {
		t.Errorf("first data at the switch %v, RTU at %v", w.firstData, w.seen)
	}
	c := in.flows[0].Sender.ConnectedAt()
	if rtt := 4 * delay; c < rtt || c > rtt+2*engine.Microsecond {
		t.Errorf("connected at %v, want one round trip %v plus serialisation", c, rtt)
	}
	// The sender sends REQ, RTU twice and one DREQ; the receiver REP twice
	// and one DREP.
	if st := in.senders[0].Stats(); st.CMTx != 5 || st.CMRx != 3 || st.UnknownDropped != 0 {
		t.Errorf("sender: %+v, want 5 MADs out, 3 in", st)
	}
	if st := in.recv.Stats(); st.CMTx != 3 || st.CMRx != 5 || st.UnknownDropped != 0 {
		t.Errorf("receiver: %+v, want 3 MADs out, 5 in", st)
	}
	if q.cm.state != cmClosed || f.Receiver.cm.state != cmClosed {
		t.Errorf("cm states %d / %d, want closed", q.cm.state, f.Receiver.cm.state)
	}
	if r := f.Receiver; r.RxBytes() != 1<<20 || r.LostPackets() != 0 {
		t.Errorf("received %d bytes, lost %d", r.RxBytes(), r.LostPackets())
	}

	t.Run("no cm", func(t *testing.T) {
		in := newIncast(t, incastCfg{senders: 1, rateBitsPerSec: 10e9, accessDelay: delay, bnDelay: delay,
			port: PortConfig{}, host: DefaultHostConfig()})
		f, err := in.net.AddFlow(FlowConfig{Src: in.senders[0], Dst: in.recv, Bytes: 8192, Start: engine.Microsecond, NoCM: true})
		if err != nil {
			t.Fatal(err)
		}
		in.sim.Run(engine.Microsecond)
		if !f.Sender.Active() || f.Sender.ConnectedAt() != engine.Microsecond || f.Sender.SentBytes() == 0 {
			t.Errorf("without cm: active %v at %v, sent %d", f.Sender.Active(), f.Sender.ConnectedAt(), f.Sender.SentBytes())
		}
	})
	t.Run("qp1 refused", func(t *testing.T) {
		if _, err := in.net.AddFlow(FlowConfig{Src: in.senders[0], Dst: in.recv, DstQPN: 1}); err == nil {
			t.Error("a flow to QP1 was accepted")
		}
	})
}

func TestQPActiveNil(t *testing.T) {
	var q *QP
	if q.Active() {
		t.Error("nil QP active")
	}
}

// Frames ride in pooled buffers that FreePacket recycles; data packets do
// not get one and the data path allocates nothing.
func TestPacketFrame(t *testing.T) {
	n := New(engine.New())
	p := n.NewPacket()
	if p.Frame() != nil {
		t.Fatal("new packet has a frame")
	}
	frame := make([]byte, 300)
	for i := range frame {
		frame[i] = byte(i)
	}
	if err := n.SetFrame(p, frame); err != nil {
		t.Fatal(err)
	}
	frame[0] = 0xFF // SetFrame copied
	if got := p.Frame(); len(got) != 300 || got[0] != 0 || got[299] != byte(299%256) || cap(got) != FrameCap {
		t.Errorf("frame len %d cap %d first %d", len(got), cap(got), got[0])
	}
	if err := n.SetFrame(p, make([]byte, FrameCap+1)); !errors.Is(err, ErrFrameTooLong) {
		t.Errorf("oversized frame: %v", err)
	}
	buf := &p.Frame()[:1][0]
	n.FreePacket(p)
	q := n.NewPacket()
	if q.Frame() != nil {
		t.Error("a recycled packet kept its frame")
	}
	if err := n.SetFrame(q, frame[:200]); err != nil {
		t.Fatal(err)
	}
	if &q.Frame()[0] != buf {
		t.Error("frame buffer not reused")
	}
	n.FreePacket(q)
	// A frame that fits SmallFrameCap takes a small buffer, reused too.
	q = n.NewPacket()
	if err := n.SetFrame(q, frame[:SmallFrameCap]); err != nil {
		t.Fatal(err)
	}
	small := &q.Frame()[0]
	if got := q.Frame(); cap(got) != SmallFrameCap || got[SmallFrameCap-1] != SmallFrameCap-1 {
		t.Errorf("small frame cap %d", cap(got))
	}
	n.FreePacket(q)
	q = n.NewPacket()
	if err := n.SetFrame(q, frame[:10]); err != nil {
		t.Fatal(err)
	}
	if &q.Frame()[0] != small {
		t.Error("small frame buffer not reused")
	}
	if err := n.SetFrame(q, frame[:300]); err != nil || len(q.Frame()) != 300 || q.Frame()[299] != byte(299%256) {
		t.Errorf("a longer frame in a packet with a small buffer: %v, %d bytes", err, len(q.Frame()))
	}
	n.FreePacket(q)
	if n.LivePackets() != 0 {
		t.Errorf("%d live packets", n.LivePackets())
	}
	allocs := testing.AllocsPerRun(1000, func() {
		d := n.NewPacket()
		d.SetBTH(&wire.BTH{Opcode: wire.OpRCWriteMiddle, PKey: 0xFFFF, DestQP: 7})
		n.FreePacket(d)
		c := n.NewPacket()
		_ = n.SetFrame(c, frame[:100])
		n.FreePacket(c)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per data and control packet, want 0", allocs)
	}
}

// A ceiling holds a cut against DCQCN's increases until it is cleared.
func TestQPCeiling(t *testing.T) {
	hc := DefaultHostConfig()
	hc.DCQCN.AIRateBitsPerSec = 200e6 // climb 3 -> 10 Gb/s within a few ms
	in := newIncast(t, incastCfg{senders: 1, rateBitsPerSec: 10e9, accessDelay: engine.Microsecond,
		bnDelay: engine.Microsecond, port: PortConfig{}, host: hc})
	q := in.flows[0].Sender
	in.sim.Run(100 * engine.Microsecond)
	in.sim.Do(func() {
		q.SetRate(3e9, 3e9)
		q.SetCeiling(4e9)
	})
	var maxSeen int64
	in.sim.Every(in.sim.Now(), 10*engine.Microsecond, func(engine.Time) {
		maxSeen = max(maxSeen, q.RateBitsPerSec(), q.TargetRateBitsPerSec())
	})
	in.sim.Run(in.sim.Now() + 20*engine.Millisecond)
	if q.RateBitsPerSec() != 4e9 || maxSeen != 4e9 {
		t.Errorf("rate %d, highest seen %d: want DCQCN up to the 4 Gb/s ceiling and no further", q.RateBitsPerSec(), maxSeen)
	}
	in.sim.Do(func() { q.SetRate(9e9, 9e9) })
	if q.RateBitsPerSec() != 4e9 || q.CeilingBitsPerSec() != 4e9 || q.MaxRateBitsPerSec() != 4e9 {
		t.Errorf("SetRate above the ceiling: rate %d", q.RateBitsPerSec())
	}
	in.sim.Do(func() { q.SetCeiling(2e9) })
	if q.RateBitsPerSec() != 2e9 || q.TargetRateBitsPerSec() != 2e9 {
		t.Errorf("lower ceiling: rc %d rt %d, want 2 Gb/s", q.RateBitsPerSec(), q.TargetRateBitsPerSec())
	}
	in.sim.Do(q.ClearCeiling)
	in.sim.Run(in.sim.Now() + 20*engine.Millisecond)
	if q.RateBitsPerSec() < 10e9-1000 || q.CeilingBitsPerSec() != 0 {
		t.Errorf("after ClearCeiling: rate %d, want back at line rate", q.RateBitsPerSec())
	}
}

// A flow's MaxRateBitsPerSec bounds it from the start and through DCQCN's
// increases.
func TestFlowMaxRate(t *testing.T) {
	hc := DefaultHostConfig()
	hc.DCQCN.AIRateBitsPerSec = 200e6
	in := newIncast(t, incastCfg{senders: 1, rateBitsPerSec: 10e9, accessDelay: engine.Microsecond,
		bnDelay: engine.Microsecond, port: PortConfig{}, host: hc})
	f, err := in.net.AddFlow(FlowConfig{Src: in.senders[0], Dst: in.recv, MaxRateBitsPerSec: 2e9, NoCM: true})
	if err != nil {
		t.Fatal(err)
	}
	q := f.Sender
	if q.RateBitsPerSec() != 2e9 {
		t.Fatalf("initial rate %d, want 2 Gb/s", q.RateBitsPerSec())
	}
	in.sim.Run(engine.Millisecond)
	in.sim.Do(func() {
		q.ApplyCNP()
		q.SetRate(1e9, 10e9)
	})
	if q.TargetRateBitsPerSec() != 2e9 {
		t.Errorf("target %d, want clamped to 2 Gb/s", q.TargetRateBitsPerSec())
	}
	var maxSeen int64
	in.sim.Every(in.sim.Now(), 10*engine.Microsecond, func(engine.Time) { maxSeen = max(maxSeen, q.RateBitsPerSec()) })
	rx0, t0 := f.Receiver.RxBytes(), in.sim.Now()
	in.sim.Run(t0 + 20*engine.Millisecond)
	if maxSeen != 2e9 || q.RateBitsPerSec() != 2e9 {
		t.Errorf("rate %d, highest %d: want back to and never above 2 Gb/s", q.RateBitsPerSec(), maxSeen)
	}
	got := float64(f.Receiver.RxBytes()-rx0) * 8 / (in.sim.Now() - t0).Seconds()
	if got > 2e9 {
		t.Errorf("goodput %.3f Gb/s above the flow's 2 Gb/s", got/1e9)
	}
	if _, err := in.net.AddFlow(FlowConfig{Src: in.senders[0], Dst: in.recv, MaxRateBitsPerSec: -1}); err == nil {
		t.Error("negative max rate accepted")
	}
}

// An administrative stop holds a QP whatever PauseUntil says (a Long-haul
// CNP Resume cannot restart it) until AdminStart.
func TestQPAdminStop(t *testing.T) {
	in := newIncast(t, incastCfg{senders: 1, rateBitsPerSec: 10e9, accessDelay: engine.Microsecond,
		bnDelay: engine.Microsecond, port: PortConfig{}, host: DefaultHostConfig()})
	q := in.flows[0].Sender
	in.sim.Run(100 * engine.Microsecond)
	in.sim.Do(func() {
		q.AdminStop()
		q.PauseUntil(in.sim.Now() + 10*engine.Microsecond)
	})
	sent := q.SentBytes()
	in.sim.Run(in.sim.Now() + 20*engine.Microsecond)
	in.sim.Do(func() { q.PauseUntil(in.sim.Now()) }) // a Resume
	in.sim.Run(in.sim.Now() + 100*engine.Microsecond)
	if q.SentBytes() != sent || !q.AdminStopped() || !q.Active() {
		t.Errorf("stopped QP sent %d bytes (stopped %v, active %v)", q.SentBytes()-sent, q.AdminStopped(), q.Active())
	}
	in.sim.Do(q.AdminStart)
	in.sim.Run(in.sim.Now() + 100*engine.Microsecond)
	if q.SentBytes() == sent {
		t.Error("QP did not restart after AdminStart")
	}
}

type linkLog struct{ got []string }

func (o *linkLog) OnLinkChange(l *Link) {
	o.got = append(o.got, l.From().Name())
}

// Link observers hear every real change of rate or delay, once.
func TestLinkObserver(t *testing.T) {
	in := newIncast(t, incastCfg{senders: 1, rateBitsPerSec: 10e9, accessDelay: engine.Microsecond,
		bnDelay: engine.Microsecond, port: PortConfig{}, host: DefaultHostConfig()})
	l := in.bottleneck.Out()
	a, b := &linkLog{}, &linkLog{}
	l.AddObserver(a)
	l.AddObserver(b)
	l.SetRateBitsPerSec(5e9)
	l.SetRateBitsPerSec(5e9) // no change
	l.SetDelay(3 * engine.Microsecond)
	l.SetDelay(-1) // invalid: ignored
	l.RemoveObserver(a)
	l.SetRateBitsPerSec(0) // invalid: ignored
	l.SetRateBitsPerSec(7e9)
	if diff := cmp.Diff([]string{"sw:0", "sw:0"}, a.got); diff != "" {
		t.Errorf("first observer (-want, +got):\n%s", diff)
	}
	if len(b.got) != 3 || l.RateBitsPerSec() != 7e9 || l.Delay() != 3*engine.Microsecond {
		t.Errorf("second observer %v, rate %d, delay %v", b.got, l.RateBitsPerSec(), l.Delay())
	}
	if in.sw.Network() != in.net || in.recv.Network() != in.net {
		t.Error("Network accessors")
	}
}

// A host's QPs follow its link rate: a free QP moves to the new line rate,
// a limited one is clamped and DCQCN climbs from there.
func TestLineRateFollowsLink(t *testing.T) {
	in := newIncast(t, incastCfg{senders: 2, rateBitsPerSec: 10e9, accessDelay: engine.Microsecond,
		bnDelay: engine.Microsecond, port: PortConfig{}, host: DefaultHostConfig()})
	free, cut := in.flows[0].Sender, in.flows[1].Sender
	in.sim.Run(100 * engine.Microsecond)
	in.sim.Do(func() {
		cut.ApplyCNP() // engages DCQCN: 5 Gb/s
		in.senders[0].Port().Out().SetRateBitsPerSec(25e9)
		in.senders[1].Port().Out().SetRateBitsPerSec(25e9)
	})
	if free.LineRateBitsPerSec() != 25e9 || free.RateBitsPerSec() != 25e9 {
		t.Errorf("free QP: line %d rate %d, want 25 Gb/s", free.LineRateBitsPerSec(), free.RateBitsPerSec())
	}
	if cut.LineRateBitsPerSec() != 25e9 || cut.RateBitsPerSec() >= 10e9 {
		t.Errorf("limited QP: line %d rate %d, want its cut rate", cut.LineRateBitsPerSec(), cut.RateBitsPerSec())
	}
	in.sim.Run(in.sim.Now() + 30*engine.Millisecond)
	if cut.RateBitsPerSec() <= 10e9 {
		t.Errorf("limited QP at %d after 30 ms, want DCQCN above the old line rate", cut.RateBitsPerSec())
	}
	in.sim.Do(func() { in.senders[0].Port().Out().SetRateBitsPerSec(1e9) })
	if free.RateBitsPerSec() != 1e9 || free.TargetRateBitsPerSec() != 1e9 {
		t.Errorf("slower link: rate %d target %d, want 1 Gb/s", free.RateBitsPerSec(), free.TargetRateBitsPerSec())
	}
}

// PFC paused time is exact: the sum of PAUSE-to-RESUME intervals, with the
// pause under way counted up to now, per port and per priority.
func TestPFCPausedTime(t *testing.T) {
	in := newIncast(t, incastCfg{senders: 1, rateBitsPerSec: 10e9, accessDelay: engine.Microsecond,
		bnDelay: engine.Microsecond, port: PortConfig{}, host: DefaultHostConfig()})
	pt := in.senders[0].Port()
	pfc := func(prio uint8, pause bool) func() {
		return func() {
			p := in.net.NewPacket()
			p.Kind, p.PFCPrio, p.PFCPause = KindPFC, prio, pause
			pt.handlePFC(p)
		}
	}
	us := engine.Microsecond
	in.sim.AtFunc(10*us, pfc(3, true))
	in.sim.AtFunc(12*us, pfc(3, true)) // repeated: no new interval
	in.sim.AtFunc(15*us, pfc(5, true))
	in.sim.AtFunc(20*us, pfc(3, false))
	in.sim.AtFunc(30*us, pfc(5, false))
	in.sim.AtFunc(40*us, pfc(5, true))
	in.sim.Run(45 * us)
	st := pt.Stats()
	// Any: 10..30 and 40..45 = 25 µs. Prio 3: 10..20. Prio 5: 15..30 and 40..45.
	if st.PFCPausedNs != int64(25*us) || st.PFCPausedPrioNs[3] != int64(10*us) || st.PFCPausedPrioNs[5] != int64(20*us) {
		t.Errorf("paused %d ns, by prio %v", st.PFCPausedNs, st.PFCPausedPrioNs)
	}
	if s := in.net.Snapshot(); s.Ports[pt.net.ports[len(pt.net.ports)-1].index].PFCPausedNs < 0 {
		t.Error("snapshot")
	}
	in.sim.AtFunc(50*us, pfc(5, false))
	in.sim.Run(60 * us)
	if st := pt.Stats(); st.PFCPausedNs != int64(30*us) || st.PFCPausedPrioNs[5] != int64(25*us) {
		t.Errorf("after the resume: paused %d ns, by prio %v", st.PFCPausedNs, st.PFCPausedPrioNs)
	}
}

// In an incast with PFC the exact paused time agrees with fine sampling.
func TestPFCPausedTimeIncast(t *testing.T) {
	hc := DefaultHostConfig()
	hc.DCQCN.Enabled = false
	hc.NP.Disabled = true
	in := newIncast(t, incastCfg{senders: 4, rateBitsPerSec: 25e9, accessDelay: engine.Microsecond, bnDelay: engine.Microsecond,
		port: PortConfig{BufferBytes: 1 << 20, PFC: PFCConfig{Enabled: true, XOFFBytes: 120_000, XONBytes: 100_000}}, host: hc})
	pt := in.senders[0].Port()
	var sampled int64
	const step = 10 * engine.Nanosecond
	in.sim.Every(0, step, func(engine.Time) {
		if pt.Paused(3) {
			sampled += int64(step)
		}
	})
	in.sim.Run(engine.Millisecond)
	got := pt.Stats().PFCPausedNs
	if got == 0 || float64(absI(got-sampled)) > 0.01*float64(got) {
		t.Errorf("paused %d ns, sampled every 10 ns %d ns", got, sampled)
	}
}

func absI(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// The pool's chunked stack gives every packet back and allocates nothing
// when use oscillates around a chunk boundary.
func TestPacketPoolChunks(t *testing.T) {
	n := New(engine.New())
	const k = 3*poolChunk + 7
	ps := make([]*Packet, 0, k)
	for range k {
		ps = append(ps, n.NewPacket())
	}
	seen := map[*Packet]bool{}
	for _, p := range ps {
		seen[p] = true
		n.FreePacket(p)
	}
	ps = ps[:0]
	for range k {
		p := n.NewPacket()
		if !seen[p] {
			t.Fatal("a new packet while freed ones wait")
		}
		delete(seen, p)
		ps = append(ps, p)
	}
	if n.pool().alloc != k || n.LivePackets() != k {
		t.Errorf("allocated %d, live %d, want %d", n.pool().alloc, n.LivePackets(), k)
	}
	// Two full chunks on the stack; x is freed onto a third and taken back.
	for _, p := range ps[:2*poolChunk] {
		n.FreePacket(p)
	}
	if len(n.pool().cur) != cap(n.pool().cur) {
		t.Fatalf("top chunk %d of %d: the test wants it full", len(n.pool().cur), cap(n.pool().cur))
	}
	x := ps[2*poolChunk]
	allocs := testing.AllocsPerRun(100, func() {
		n.FreePacket(x)
		x = n.NewPacket()
	})
	if allocs != 0 {
		t.Errorf("%v allocations at a chunk boundary", allocs)
	}
}

// TestSwitchFramePacket: a switch's FramePacket is a pooled packet with a
// copy of the frame, and an oversized frame an error that leaves the pool
// with the packet back (the next packet is the same one).
func TestSwitchFramePacket(t *testing.T) {
	n := New(engine.New())
	sw, err := n.AddSwitch("sw", netip.MustParseAddr("10.0.0.254"), SwitchConfig{})
	if err != nil {
		t.Fatal(err)
	}
	frame := []byte{1, 2, 3, 4}
	p, err := sw.FramePacket(frame)
	if err != nil {
		t.Fatal(err)
	}
	frame[0] = 9
	if got := p.Frame(); len(got) != 4 || got[0] != 1 || got[3] != 4 {
		t.Errorf("frame %v, want a copy of [1 2 3 4]", got)
	}
	sw.FreePacket(p)
	if q, err := sw.FramePacket(make([]byte, FrameCap+1)); !errors.Is(err, ErrFrameTooLong) || q != nil {
		t.Errorf("oversized frame: %v, %v", q, err)
	}
	if q := sw.NewPacket(); q != p {
		t.Error("the oversized frame's packet did not go back to the pool")
	}
}
