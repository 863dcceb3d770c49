package udpwire

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// halves is a1, a2 -> s1 == WAN == s2 -> b, built on sim; local "s1" or
// "s2" makes the other half's flows dormant, "" runs everything. PFC and
// ECN are on so that every packet kind crosses the WAN: data, ACKs, CNPs,
// CM MADs and PFC frames.
type halves struct {
	net    *netsim.Network
	s1, s2 *netsim.Switch
	wan    [2]*netsim.Port
	b      *netsim.Host
}

func buildHalves(t testing.TB, sim *engine.Sim, local string) *halves {
	t.Helper()
	return buildHalvesOf(t, sim, local, false)
}

// buildHalvesOf builds the halves with IPv6 addresses (v6) or IPv4 ones.
func buildHalvesOf(t testing.TB, sim *engine.Sim, local string, v6 bool) *halves {
	t.Helper()
	addr := func(net, i byte) netip.Addr {
		if v6 {
			return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 9, 0, net, 15: i})
		}
		return netip.AddrFrom4([4]byte{10, 9, net, i})
	}
	n := netsim.New(sim)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	port := netsim.PortConfig{
		BufferBytes: 4_000_000,
		ECN:         netsim.SameECN(netsim.ECNConfig{Enabled: true, KMinBytes: 10_000, KMaxBytes: 60_000, PMax: 0.5}),
		PFC:         netsim.PFCConfig{Enabled: true, XOFFBytes: 40_000, XONBytes: 20_000},
	}
	h := &halves{net: n}
	var err error
	h.s1, err = n.AddSwitch("s1", addr(0, 1), netsim.SwitchConfig{Port: port})
	must(err)
	h.s2, err = n.AddSwitch("s2", addr(0, 2), netsim.SwitchConfig{Port: port})
	must(err)
	hc := netsim.DefaultHostConfig()
	hc.MTUBytes = 1024
	var hosts []*netsim.Host
	for i, name := range []string{"a1", "a2", "b"} {
		x, err := n.AddHost(name, addr(1, byte(i+1)), hc)
		must(err)
		hosts = append(hosts, x)
	}
	h.b = hosts[2]
	fast := netsim.LinkConfig{RateBitsPerSec: 10e9, Delay: engine.Microsecond}
	for _, x := range hosts[:2] {
		_, _, err = n.Connect(x, h.s1, fast)
		must(err)
	}
	h.wan[0], h.wan[1], err = n.Connect(h.s1, h.s2, netsim.LinkConfig{RateBitsPerSec: 10e9, Delay: 100 * engine.Microsecond})
	must(err)
	// b's link is slower: s2 -> b congests, s2 pauses s1 with PFC.
	_, _, err = n.Connect(h.s2, h.b, netsim.LinkConfig{RateBitsPerSec: 5e9, Delay: engine.Microsecond})
	must(err)
	n.ComputeRoutes()
	for i, x := range hosts[:2] {
		_, err := n.AddFlow(netsim.FlowConfig{Src: x, Dst: h.b, Start: engine.Time(i) * 20 * engine.Microsecond,
			Bytes: 3_000_000, Prio: 3, Dormant: local == "s2"})
		must(err)
	}
	return h
}

// byteWire carries packets between two networks on one engine through
// their encoded datagrams: encode, Decode, check, packet, Arrive.
type byteWire struct {
	t        testing.TB
	from, to *codec
	toLink   *netsim.Link
	vni      uint32
	seq      uint32
	kinds    map[string]int
	missized map[string]int // kinds whose frame length differed from SizeBytes (reported once)
	buf      []byte
}

func (w *byteWire) Send(l *netsim.Link, p *netsim.Packet, txEnd engine.Time) {
	w.kinds[kindName(p)]++
	w.seq++
	m := Meta{SentAt: txEnd, Seq: w.seq}
	frame, err := w.from.appendFrame(nil, p, &m)
	if err != nil {
		w.t.Fatalf("encode %s: %v", kindName(p), err)
	}
	if got := int32(len(frame)) + netsim.FCSBytes; got != p.SizeBytes && w.missized[kindName(p)] == 0 {
		w.missized[kindName(p)]++
		w.t.Errorf("%s packet sized %d bytes, its frame is %d with the FCS", kindName(p), p.SizeBytes, got)
	}
	w.buf = AppendData(w.buf[:0], w.vni, &m, frame)
	fromID, toID := l.From().Node().ID(), l.To().Node().ID()
	want := *p
	w.from.net.FreePacket(p)

	var d Datagram
	if err := Decode(w.buf, &d); err != nil {
		w.t.Fatalf("decode %s: %v", kindName(&want), err)
	}
	var f wire.Frame
	var r rxFrame
	if err := w.to.check(&d, &f, &r); err != nil {
		w.t.Fatalf("check %s: %v\n% x", kindName(&want), err, d.Frame)
	}
	q := w.to.packet(&r, fromID, toID)
	if got, want := summary(q), summary(&want); got != want {
		w.t.Fatalf("round trip (-want +got):\n%s", cmp.Diff(want, got))
	}
	w.toLink.Arrive(q, txEnd)
}

type pktSummary struct {
	Size, Payload int32
	Src, Dst      netsim.NodeID
	Flow          netsim.FlowID
	SrcQP         uint32
	Prio, ECN     uint8
	Kind          netsim.Kind
	PFCPrio       uint8
	PFCPause      bool
	Opcode        wire.Opcode
	DestQP, PSN   uint32
	AckReq, BECN  bool
	HdrTail       string // header bytes after the BTH
	Frame         string
}

func summary(p *netsim.Packet) pktSummary {
	s := pktSummary{Size: p.SizeBytes, Payload: p.PayloadBytes, Src: p.Src, Dst: p.Dst, Flow: p.Flow, SrcQP: p.SrcQP,
		Prio: p.Prio, ECN: p.ECN, Kind: p.Kind, Frame: string(p.Frame())}
	if p.Kind == netsim.KindPFC {
		s.PFCPrio, s.PFCPause, s.ECN = p.PFCPrio, p.PFCPause, 0
		return s
	}
	s.Opcode, s.DestQP, s.PSN, s.AckReq, s.BECN = p.Opcode(), p.DestQP(), p.PSN(), p.AckReq(), p.BECN()
	if p.HdrLen > wire.BTHLen {
		s.HdrTail = string(p.Hdr[wire.BTHLen:p.HdrLen])
	}
	return s
}

func kindName(p *netsim.Packet) string {
	switch {
	case p.Kind == netsim.KindPFC:
		return "pfc"
	case p.Kind != netsim.KindRoCE:
		return "other"
	case p.DestQP() == wire.GSIQP:
		return "cm"
	case p.Opcode() == wire.OpCNP:
		return "cnp"
	case p.Opcode() == wire.OpRCAck:
		return "ack"
	}
	return "data"
}

func portStats(sws ...*netsim.Switch) map[string]netsim.PortStats {
	m := map[string]netsim.PortStats{}
	for _, s := range sws {
		for _, pt := range s.Ports() {
			m[pt.Name()] = pt.Stats()
		}
	}
	return m
}

// TestFramesCarryTheModel: the network cut at the WAN link, each half on
// its own Network, the packets crossing as encoded datagrams (every kind:
// data, ACK, CNP, CM, PFC), behaves exactly as the whole network, over
// IPv4 and IPv6; every frame is as long as the packet's SizeBytes says
// (byteWire checks it).
func TestFramesCarryTheModel(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		t.Run(map[bool]string{false: "ipv4", true: "ipv6"}[v6], func(t *testing.T) { framesCarryTheModel(t, v6) })
	}
}

func framesCarryTheModel(t *testing.T, v6 bool) {
	const until = 8 * engine.Millisecond
	wholeSim := engine.New(engine.WithSeed(3))
	whole := buildHalvesOf(t, wholeSim, "", v6)
	wholeSim.Run(until)

	sim := engine.New(engine.WithSeed(3))
	h1, h2 := buildHalvesOf(t, sim, "s1", v6), buildHalvesOf(t, sim, "s2", v6)
	c1, c2 := newCodec(h1.net), newCodec(h2.net)
	w12 := &byteWire{t: t, from: c1, to: c2, toLink: h2.wan[0].Out(), vni: 7, kinds: map[string]int{}, missized: map[string]int{}}
	w21 := &byteWire{t: t, from: c2, to: c1, toLink: h1.wan[1].Out(), vni: 7, kinds: map[string]int{}, missized: map[string]int{}}
	h1.wan[0].Out().SetWire(w12)
	h2.wan[1].Out().SetWire(w21)
	sim.Run(until)

	want := portStats(whole.s1, whole.s2)
	got := portStats(h1.s1)
	for k, v := range portStats(h2.s2) {
		got[k] = v
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("port counters differ from the whole network (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(whole.b.Stats(), h2.b.Stats()); diff != "" {
		t.Errorf("receiver counters differ (-want +got):\n%s", diff)
	}
	for _, k := range []string{"data", "cm"} {
		if w12.kinds[k] == 0 {
			t.Errorf("no %s frame crossed s1 -> s2 (%v)", k, w12.kinds)
		}
	}
	for _, k := range []string{"ack", "cnp", "cm", "pfc"} {
		if w21.kinds[k] == 0 {
			t.Errorf("no %s frame crossed s2 -> s1 (%v)", k, w21.kinds)
		}
	}
}

// TestDecodeRefuses: damaged datagrams are errors, never panics or packets.
func TestDecodeRefuses(t *testing.T) {
	sim := engine.New()
	h := buildHalves(t, sim, "")
	c := newCodec(h.net)
	p := h.net.NewPacket()
	p.Kind, p.SizeBytes, p.PayloadBytes, p.Src, p.Dst, p.Flow, p.ECN = netsim.KindRoCE, 1024+78, 1024, 2, 4, 0, netsim.ECNECT0
	p.SetBTH(&wire.BTH{Opcode: wire.OpRCWriteFirst, PKey: 0xFFFF, DestQP: 200, PSN: 5})
	m := Meta{SentAt: 1000, Seq: 1}
	frame, err := c.appendFrame(nil, p, &m)
	if err != nil {
		t.Fatal(err)
	}
	good := AppendData(nil, 1, &m, frame)
	tests := []struct {
		desc string
		mod  func(b []byte) []byte
	}{
		{"short", func(b []byte) []byte { return b[:5] }},
		{"version 1", func(b []byte) []byte { b[0] |= 0x40; return b }},
		{"not ethernet", func(b []byte) []byte { b[2] = 0x08; return b }},
		{"options overrun", func(b []byte) []byte { b[0] = 0x3F; return b[:40] }},
		{"no meta option", func(b []byte) []byte { b[genevelen+2] = 9; return b }},
		{"critical unknown option", func(b []byte) []byte { b[genevelen+2] = 0x85; return b }},
		{"icrc damaged", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }},
		{"payload damaged", func(b []byte) []byte { b[DataOverhead+70] ^= 1; return b }},
		{"unknown source address", func(b []byte) []byte {
			copy(b[DataOverhead+26:], []byte{192, 0, 2, 1})
			return b
		}},
		{"prio out of range", func(b []byte) []byte { b[genevelen+optHdrLen+29] = 9; return b }},
		{"flow out of range", func(b []byte) []byte { b[genevelen+optHdrLen+23] = 99; return b }},
		{"frame truncated", func(b []byte) []byte { return b[:DataOverhead+30] }},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			b := tt.mod(append([]byte(nil), good...))
			var d Datagram
			err := Decode(b, &d)
			if err == nil {
				var f wire.Frame
				var r rxFrame
				err = c.check(&d, &f, &r)
			}
			if err == nil {
				t.Fatal("accepted")
			}
		})
	}
	var d Datagram
	var f wire.Frame
	var r rxFrame
	if err := Decode(good, &d); err != nil {
		t.Fatalf("the undamaged datagram: %v", err)
	}
	if err := c.check(&d, &f, &r); err != nil {
		t.Fatalf("the undamaged datagram: %v", err)
	}
}

// FuzzDecode: no datagram makes Decode or the frame check panic.
func FuzzDecode(f *testing.F) {
	sim := engine.New()
	h := buildHalves(f, sim, "")
	c := newCodec(h.net)
	hello := AppendHello(nil, 3, &Hello{Epoch: 1, Speed: 0.1, Now: 5, Instance: 9})
	f.Add(hello)
	p := h.net.NewPacket()
	p.Kind, p.SizeBytes, p.Src, p.Dst = netsim.KindRoCE, netsim.CNPBytes(h.net.Node(4).Addr()), 4, 2
	p.SetBTH(&wire.BTH{Opcode: wire.OpCNP, PKey: 0xFFFF, Byte4: wire.BTHBECN, DestQP: 100})
	m := Meta{SentAt: 10, Seq: 2}
	frame, err := c.appendFrame(nil, p, &m)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(AppendData(nil, 3, &m, frame))
	// A data packet FCN's ingress PE tunnelled.
	if frame, err = c.appendFrame(nil, tunnelled(f, h, netsim.ECNCE), &m); err != nil {
		f.Fatal(err)
	}
	f.Add(AppendData(nil, 3, &m, frame))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Datagram
		if err := Decode(b, &d); err != nil || d.Control {
			return
		}
		var fr wire.Frame
		var r rxFrame
		_ = c.check(&d, &fr, &r)
	})
}

// roundTrip sends p through c's encoder and back: the packet received and
// the frame that carried it.
func roundTrip(t *testing.T, c *codec, p *netsim.Packet) (*netsim.Packet, []byte) {
	t.Helper()
	m := Meta{SentAt: 5, Seq: 1}
	frame, err := c.appendFrame(nil, p, &m)
	if err != nil {
		t.Fatal(err)
	}
	var d Datagram
	if err := Decode(AppendData(nil, 1, &m, frame), &d); err != nil {
		t.Fatal(err)
	}
	var f wire.Frame
	var r rxFrame
	if err := c.check(&d, &f, &r); err != nil {
		t.Fatal(err)
	}
	return c.packet(&r, 0, 0), frame
}

// TestNAKCrossesTheWire: a go-back-N NAK (an ACK whose AETH the model
// wrote: syndrome 0x60, PSN sequence error) arrives as a NAK, not as an
// ACK for the PSN it asks for again (the encoder wrote a zero AETH, which
// the receiving process read as that ACK).
func TestNAKCrossesTheWire(t *testing.T) {
	sim := engine.New()
	h := buildHalves(t, sim, "")
	c := newCodec(h.net)
	p := h.net.NewPacket()
	bth := wire.BTH{Opcode: wire.OpRCAck, PKey: 0xFFFF, DestQP: 101, PSN: 4242}
	p.SetBTH(&bth)
	binary.BigEndian.PutUint32(p.Hdr[wire.BTHLen:], 0x60<<24|7)
	p.HdrLen = wire.BTHLen + wire.AETHLen
	p.Kind, p.Src, p.Dst, p.Flow, p.Prio = netsim.KindRoCE, h.b.ID(), h.net.NodeByName("a1").ID(), 0, 3
	p.SizeBytes = netsim.AckBytes(h.b.Addr())
	q, frame := roundTrip(t, c, p)
	if diff := cmp.Diff(summary(p), summary(q)); diff != "" {
		t.Errorf("round trip (-sent +received):\n%s", diff)
	}
	if int(q.SizeBytes) != len(frame)+netsim.FCSBytes {
		t.Errorf("frame of %d bytes for a %d-byte NAK", len(frame), q.SizeBytes)
	}
}

// TestModelFramesRoundTrip: packets that carry their frame (a Long-haul
// CNP in RoCEv2 format as a node sends it, a CM REQ) cross as that exact
// frame, and the receiver rebuilds the header bytes the models read.
func TestModelFramesRoundTrip(t *testing.T) {
	sim := engine.New()
	h := buildHalves(t, sim, "")
	c := newCodec(h.net)
	src, dst := h.s2, h.net.NodeByName("a1")
	a := wire.Addressing{SrcIP: src.Addr(), DstIP: dst.Addr(), SrcPort: 0xC123}
	var enc wire.Encoder
	buf := make([]byte, netsim.FrameCap)
	lh := wire.LongHaul{CongLevel: 200, Action: wire.ActionRateReduce, Parameter: 30, SourceQP: 101,
		MetricType: wire.MetricQueueDepth, MetricValue: 512}
	n, err := enc.LongHaulRoCE(buf, &a, &wire.CNP{DestQP: 101}, &lh)
	if err != nil {
		t.Fatal(err)
	}
	lhFrame := append([]byte(nil), buf[:n]...)
	req := wire.CMMessage{Method: wire.MethodSend, TransactionID: 9, AttrID: wire.CMAttrREQ, LocalCommID: 3, LocalQPN: 101}
	n, err = enc.CM(buf, &wire.Addressing{SrcIP: dst.Addr(), DstIP: h.b.Addr(), SrcPort: 0xC001}, 0, &req)
	if err != nil {
		t.Fatal(err)
	}
	cmFrame := append([]byte(nil), buf[:n]...)
	const udpOff = wire.EthernetLen + wire.IPv4MinLen + wire.UDPLen
	tests := []struct {
		desc     string
		frame    []byte
		src, dst netsim.NodeID
		hdrLen   int
	}{
		{"long-haul cnp, rocev2", lhFrame, src.ID(), dst.ID(), netsim.HdrCap},
		{"cm req", cmFrame, dst.ID(), h.b.ID(), wire.BTHLen + wire.DETHLen},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			p := h.net.NewPacket()
			if err := h.net.SetFrame(p, tt.frame); err != nil {
				t.Fatal(err)
			}
			p.Kind, p.SizeBytes, p.Src, p.Dst, p.Flow, p.Prio = netsim.KindRoCE, int32(len(tt.frame)+4), tt.src, tt.dst, netsim.NoFlow, 6
			p.HdrLen = uint8(copy(p.Hdr[:tt.hdrLen], tt.frame[udpOff:]))
			q, _ := roundTrip(t, c, p)
			if diff := cmp.Diff(summary(p), summary(q)); diff != "" {
				t.Errorf("round trip (-sent +received):\n%s", diff)
			}
			if string(q.Frame()) != string(tt.frame) {
				t.Error("the frame changed on the way")
			}
		})
	}
}
