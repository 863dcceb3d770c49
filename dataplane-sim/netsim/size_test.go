package netsim

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// sizeRecorder is a Forwarder that keeps, per packet kind, every
// (SizeBytes, encoded length) pair the switch forwards: the encoded length
// is what wire.Encoder writes for the same packet, plus the FCS.
type sizeRecorder struct {
	t    *testing.T
	net  *Network
	enc  wire.Encoder
	buf  []byte
	seen map[string]map[[2]int32]int
}

func (r *sizeRecorder) Forward(_ *Switch, p *Packet, _, _ *Port) bool {
	if p.Kind != KindRoCE {
		return true
	}
	src, dst := r.net.Node(p.Src), r.net.Node(p.Dst)
	a := wire.Addressing{SrcIP: src.Addr(), DstIP: dst.Addr(), TOS: p.ECN, SrcPort: 0xC000}
	bth, err := p.BTH()
	if err != nil {
		r.t.Errorf("packet of flow %d: %v", p.Flow, err)
		return true
	}
	var kind string
	var n int
	switch op := p.Opcode(); {
	case p.DestQP() == wire.GSIQP:
		// A MAD: the frame wire.Encoder.CM wrote; decode it to name it.
		var f wire.Frame
		if err := (&wire.Decoder{}).Decode(p.Frame(), &f); err != nil || f.Kind != wire.KindCM {
			r.t.Errorf("cm frame of flow %d does not decode: %v", p.Flow, err)
			return true
		}
		kind, n = "cm "+f.CM.AttrID.String(), len(p.Frame())
	case op == wire.OpCNP:
		kind = "cnp"
		n, err = r.enc.CNP(r.buf, &a, &wire.CNP{DestQP: p.DestQP()})
	case op == wire.OpRCAck:
		kind = "ack"
		n, err = r.enc.RoCE(r.buf, &a, &bth, nil, nil)
	case op.IsData():
		kind = fmt.Sprintf("data %v", op)
		n, err = r.enc.RoCE(r.buf, &a, &bth, nil, make([]byte, p.PayloadBytes))
		if p.PayloadBytes%4 != 0 {
			kind += " padded"
		}
	default:
		r.t.Errorf("unexpected opcode %v", op)
		return true
	}
	if err != nil {
		r.t.Errorf("%s: encode: %v", kind, err)
		return true
	}
	if r.seen[kind] == nil {
		r.seen[kind] = map[[2]int32]int{}
	}
	r.seen[kind][[2]int32{p.SizeBytes, int32(n + FCSBytes)}]++
	return true
}

// TestPacketSizesMatchEncoder: every RoCEv2 packet the hosts send (data of
// each opcode, with and without pad bytes, ACKs, CNPs, each CM MAD) has
// the SizeBytes that wire.Encoder's frame for it has (with the FCS), over
// IPv4 and over IPv6: the encoder is the truth, and an IPv6 header is 20
// bytes longer than an IPv4 one.
func TestPacketSizesMatchEncoder(t *testing.T) {
	kinds := []string{"ack", "cnp", "cm REQ", "cm REP", "cm RTU", "cm DREQ", "cm DREP",
		"data " + wire.OpRCWriteFirst.String(), "data " + wire.OpRCWriteMiddle.String(),
		"data " + wire.OpRCWriteLast.String(), "data " + wire.OpRCWriteLast.String() + " padded",
		"data " + wire.OpRCWriteOnly.String(), "data " + wire.OpRCWriteOnly.String() + " padded"}
	for _, fam := range []struct {
		desc     string
		addr     func(i byte) netip.Addr
		overhead int32
	}{
		{"ipv4", func(i byte) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 0, i}) }, 62},
		{"ipv6", func(i byte) netip.Addr { return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: i}) }, 82},
	} {
		t.Run(fam.desc, func(t *testing.T) {
			rec := runSizes(t, fam.addr)
			if got := RoCEOverheadBytes(fam.addr(1)); got != fam.overhead {
				t.Errorf("RoCEOverheadBytes = %d, want %d", got, fam.overhead)
			}
			for _, k := range kinds {
				t.Run(k, func(t *testing.T) {
					pairs := rec.seen[k]
					if len(pairs) == 0 {
						t.Fatalf("no %s packet forwarded: the test does not exercise it", k)
					}
					for pr, count := range pairs {
						if diff := cmp.Diff(pr[1], pr[0]); diff != "" {
							t.Errorf("%d packets sized %d, the encoder's frame is %d bytes (-encoder +netsim):\n%s",
								count, pr[0], pr[1], diff)
						}
					}
				})
			}
		})
	}
}

// runSizes runs two senders into one receiver through one switch whose
// port to the receiver marks early (CNPs), with flows of uneven sizes
// (pad bytes, every WRITE opcode), and records every forwarded packet.
func runSizes(t *testing.T, addr func(byte) netip.Addr) *sizeRecorder {
	t.Helper()
	sim := engine.New(engine.WithSeed(3))
	n := New(sim)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	sw, err := n.AddSwitch("sw", addr(254), SwitchConfig{Port: dcqcnPort(2_000, 10_000, 1_000_000)})
	must(err)
	hc := DefaultHostConfig()
	hc.MTUBytes = 1024
	recv, err := n.AddHost("recv", addr(100), hc)
	must(err)
	_, _, err = n.Connect(sw, recv, LinkConfig{RateBitsPerSec: 10e9, Delay: engine.Microsecond})
	must(err)
	var senders []*Host
	for i := range 2 {
		h, err := n.AddHost(fmt.Sprintf("s%d", i), addr(byte(i+1)), hc)
		must(err)
		_, _, err = n.Connect(h, sw, LinkConfig{RateBitsPerSec: 10e9, Delay: engine.Microsecond})
		must(err)
		senders = append(senders, h)
	}
	n.ComputeRoutes()
	// 200_001 bytes: FIRST, MIDDLEs and a LAST of 321 bytes (3 pad bytes);
	// 200_000: a LAST of 320 bytes; 3 bytes: an ONLY with one pad byte;
	// 8 bytes: an ONLY without.
	for i, bytes := range []int64{200_001, 200_000, 3, 8} {
		_, err := n.AddFlow(FlowConfig{Src: senders[i%2], Dst: recv, Bytes: bytes, Prio: 3,
			Start: engine.Time(i) * engine.Microsecond})
		must(err)
	}
	rec := &sizeRecorder{t: t, net: n, buf: make([]byte, FrameCap), seen: map[string]map[[2]int32]int{}}
	sw.SetForwarder(StageFilter, rec)
	sim.Run(20 * engine.Millisecond)
	for _, f := range n.Flows() {
		if done, _ := f.Sender.Done(); !done {
			t.Fatalf("flow %s did not finish", f.Name)
		}
	}
	return rec
}

// TestFlowFrameBytes: FlowFrameBytes of a flow is the sum of the frames
// wire.Encoder writes for its packets (with the FCS), built here packet by
// packet as an RNIC segments RDMA WRITEs (a RETH on each message's FIRST or
// ONLY, the payload padded to 4 bytes), and what the sender's port really
// transmits for it; its first and last frames are the encoder's.
func TestFlowFrameBytes(t *testing.T) {
	v4 := netip.MustParseAddr("10.0.0.1")
	v6 := netip.MustParseAddr("2001:db8::1")
	for _, tt := range []struct {
		desc              string
		addr              netip.Addr
		payload, mtu, msg int64
		wantPkts          int
	}{
		{desc: "one padded packet", addr: v4, payload: 1001, mtu: 1024, wantPkts: 1},
		{desc: "one byte", addr: v4, payload: 1, mtu: 1024, wantPkts: 1},
		{desc: "full packets", addr: v4, payload: 8192, mtu: 4096, wantPkts: 2},
		{desc: "padded last packet", addr: v4, payload: 10_001, mtu: 1024, wantPkts: 10},
		{desc: "ipv6", addr: v6, payload: 10_001, mtu: 1024, wantPkts: 10},
		{desc: "messages", addr: v4, payload: 10_000, mtu: 1024, msg: 3000, wantPkts: 10},
		{desc: "messages of one packet", addr: v6, payload: 4099, mtu: 4096, msg: 1000, wantPkts: 5},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			a := wire.Addressing{SrcIP: tt.addr, DstIP: tt.addr, SrcPort: 0xC000}
			var enc wire.Encoder
			buf := make([]byte, 8192) // room for a 4096-byte payload
			var want FlowFrames
			pkts := 0
			msg := tt.msg
			if msg == 0 {
				msg = tt.payload
			}
			for off := int64(0); off < tt.payload; off += msg {
				m := min(msg, tt.payload-off)
				for moff := int64(0); moff < m; moff += tt.mtu {
					p := min(tt.mtu, m-moff)
					op := wire.OpRCWriteMiddle
					switch isFirst, isLast := moff == 0, moff+p == m; {
					case isFirst && isLast:
						op = wire.OpRCWriteOnly
					case isFirst:
						op = wire.OpRCWriteFirst
					case isLast:
						op = wire.OpRCWriteLast
					}
					n, err := enc.RoCE(buf, &a, &wire.BTH{Opcode: op, PKey: 0xFFFF, DestQP: 7}, nil, make([]byte, p))
					if err != nil {
						t.Fatal(err)
					}
					if pkts == 0 {
						want.FirstBytes = int64(LinkBytes(n))
					}
					want.LastBytes = int64(LinkBytes(n))
					want.TotalBytes += int64(LinkBytes(n))
					pkts++
				}
			}
			if pkts != tt.wantPkts {
				t.Fatalf("test segments into %d packets, want %d", pkts, tt.wantPkts)
			}
			got := FlowFrameBytes(tt.addr, tt.payload, tt.mtu, tt.msg)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("FlowFrameBytes (-encoder +got):\n%s", diff)
			}
			if tx := sentFrameBytes(t, tt.addr, tt.payload, tt.mtu, tt.msg); tx != got.TotalBytes {
				t.Errorf("the sender's port transmitted %d bytes for the flow, FlowFrameBytes says %d", tx, got.TotalBytes)
			}
		})
	}
	if f := FlowFrameBytes(v4, 0, 1024, 0); f != (FlowFrames{}) {
		t.Errorf("FlowFrameBytes of no payload = %+v, want zero", f)
	}
}

// sentFrameBytes runs one flow without the CM exchange from a host at
// addr to a receiver and returns the bytes the sender's port transmitted:
// its data frames alone (the sender sends no ACK or CNP).
func sentFrameBytes(t *testing.T, addr netip.Addr, payload, mtu, msg int64) int64 {
	t.Helper()
	sim := engine.New(engine.WithSeed(1))
	n := New(sim)
	hc := DefaultHostConfig()
	hc.MTUBytes = int32(mtu)
	src, err := n.AddHost("src", addr, hc)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := n.AddHost("dst", addr.Next(), hc)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.Connect(src, dst, LinkConfig{RateBitsPerSec: 100e9, Delay: engine.Microsecond}); err != nil {
		t.Fatal(err)
	}
	n.ComputeRoutes()
	f, err := n.AddFlow(FlowConfig{Src: src, Dst: dst, Bytes: payload, MessageBytes: msg, NoCM: true})
	if err != nil {
		t.Fatal(err)
	}
	sim.Run(engine.Millisecond)
	if done, _ := f.Done(); !done {
		t.Fatalf("flow of %d bytes did not finish", payload)
	}
	return src.Port().Stats().TxBytes
}
