package udpwire

import (
	"bytes"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// tunnelled makes a1's next data packet to b as FCN's ingress PE sends it
// into the tunnel: the head (Ethernet, outer IPv6 from s1 to s2 with a
// flow label, the inner IPv4 header) as its frame, 40 bytes more.
func tunnelled(t testing.TB, h *halves, outerECN uint8) *netsim.Packet {
	t.Helper()
	p := h.net.NewPacket()
	a1 := h.net.NodeByName("a1")
	p.Kind, p.Src, p.Dst, p.Flow, p.SrcQP, p.Prio, p.ECN = netsim.KindRoCE, a1.ID(), h.b.ID(), 0, 101, 3, netsim.ECNECT0
	p.PayloadBytes = 1024
	p.SetBTH(&wire.BTH{Opcode: wire.OpRCWriteOnly, PKey: 0xFFFF, DestQP: 201, PSN: 77})
	p.SizeBytes = netsim.DataBytes(a1.Addr(), 1024, true) + wire.TunnelOverheadBytes // RETH
	a := wire.Addressing{SrcIP: a1.Addr(), DstIP: h.b.Addr(), TOS: netsim.ECNECT0, Tunnel: wire.Tunnel{Present: true,
		Src: netip.MustParseAddr("2001:db8:f::1"), Dst: netip.MustParseAddr("2001:db8:f::2"), TrafficClass: netsim.ECNECT0, FlowLabel: 0x5EED5}}
	head := make([]byte, 128)
	n, err := (&wire.Encoder{}).EncapHead(head, &a, wire.RoCEUDPLen(wire.OpRCWriteOnly, 1024))
	if err != nil {
		t.Fatal(err)
	}
	if err := wire.SetOuterECN(head[:n], outerECN); err != nil {
		t.Fatal(err)
	}
	if err := h.net.SetFrame(p, head[:n]); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTunnelledRoundTrip: a tunnelled data packet crosses a wire as the
// whole tunnelled frame (outer IPv6, inner IPv4, UDP, BTH, RETH, payload,
// ICRC, every check good) and arrives as the same packet: the head as its
// frame, its size with the 40 bytes, the outer ECN (CE marked on the way)
// as the packet's.
func TestTunnelledRoundTrip(t *testing.T) {
	h := buildHalves(t, engine.New(), "")
	c := newCodec(h.net)
	for _, ecn := range []uint8{netsim.ECNECT0, netsim.ECNCE} {
		p := tunnelled(t, h, ecn)
		p.ECN = ecn
		m := Meta{SentAt: 5, Seq: 1}
		frame, err := c.appendFrame(nil, p, &m)
		if err != nil {
			t.Fatal(err)
		}
		var f wire.Frame
		if err := (&wire.Decoder{}).Decode(frame, &f); err != nil || !f.Tunneled || f.Kind != wire.KindRoCEData ||
			f.Outer.FlowLabel != 0x5EED5 || f.ICRCStatus != wire.StatusGood || len(f.Payload) != 1024 {
			t.Fatalf("the frame on the wire: %v, tunneled %v, kind %v, label %#x, icrc %v, payload %d",
				err, f.Tunneled, f.Kind, f.Outer.FlowLabel, f.ICRCStatus, len(f.Payload))
		}
		if !bytes.Equal(frame[:len(p.Frame())], p.Frame()) || m.ModelFrame {
			t.Fatalf("the wire frame does not start with the packet's head (model frame %v)", m.ModelFrame)
		}
		var d Datagram
		if err := Decode(AppendData(nil, 1, &m, frame), &d); err != nil {
			t.Fatal(err)
		}
		var r rxFrame
		if err := c.check(&d, &f, &r); err != nil {
			t.Fatal(err)
		}
		q := c.packet(&r, 0, 0)
		if diff := cmp.Diff(summary(p), summary(q)); diff != "" {
			t.Errorf("ecn %02b: round trip (-sent +received):\n%s", ecn, diff)
		}
	}
}

// TestTunnelCaptureReadsInTshark: the wire's capture of tunnelled packets
// opens in tshark, which reads the outer IPv6 header (the PEs, next
// header 4, the flow label) and behind it the inner IPv4, UDP 4791 and
// the BTH.
func TestTunnelCaptureReadsInTshark(t *testing.T) {
	tshark := needTshark(t)
	h := buildHalves(t, engine.New(), "")
	c := newCodec(h.net)
	var buf bytes.Buffer
	pw, err := wire.NewPcapWriter(&buf, true)
	if err != nil {
		t.Fatal(err)
	}
	m := Meta{}
	frame, err := c.appendFrame(nil, tunnelled(t, h, netsim.ECNCE), &m)
	if err != nil {
		t.Fatal(err)
	}
	if err := pw.WritePacket(time.Unix(1, 0), frame); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tunnel.pcap")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tshark, "-r", path, "-n", "-o", "ip.check_checksum:TRUE", "-T", "fields", "-E", "separator=|",
		"-e", "ipv6.src", "-e", "ipv6.dst", "-e", "ipv6.nxt", "-e", "ipv6.flow", "-e", "ipv6.tclass.ecn",
		"-e", "ip.src", "-e", "ip.dst", "-e", "ip.checksum.status", "-e", "udp.dstport", "-e", "infiniband.bth.destqp").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	want := "2001:db8:f::1|2001:db8:f::2|4|0x05eed5|3|10.9.1.1|10.9.1.3|1|4791|0x0000c9"
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("tshark read\n%s\nwant\n%s", got, want)
	}
}

// TestTransportOffsetInnerExtensions: the transport of a tunnelled frame
// follows the inner IPv6 header's extension headers as the outer's (a
// destination options header, as a Fast CNP carries), where it was taken
// to start right after the inner header; an IPv4 header shorter than 5
// words, outer or inner, is malformed, not a transport inside it.
func TestTransportOffsetInnerExtensions(t *testing.T) {
	frame := func(inner6 bool, innerIHL byte) []byte {
		b := make([]byte, 0, 160)
		b = append(b, make([]byte, 12)...)
		b = append(b, 0x86, 0xDD) // outer IPv6
		outer := make([]byte, wire.IPv6Len)
		outer[0] = 0x60
		if inner6 {
			outer[6] = wire.ProtoIPv6
		} else {
			outer[6] = wire.ProtoIPv4
		}
		b = append(b, outer...)
		if inner6 {
			in := make([]byte, wire.IPv6Len)
			in[0], in[6] = 0x60, 60 // destination options next
			b = append(b, in...)
			b = append(b, wire.ProtoUDP, 0, 0, 0, 0, 0, 0, 0) // 8 bytes, UDP after
		} else {
			in := make([]byte, wire.IPv4MinLen)
			in[0], in[9] = 0x40|innerIHL, wire.ProtoUDP
			b = append(b, in...)
		}
		return append(b, make([]byte, wire.UDPLen+wire.BTHLen)...)
	}
	off, err := transportOffset(frame(true, 0))
	if want := wire.EthernetLen + 2*wire.IPv6Len + 8 + wire.UDPLen; err != nil || off != want {
		t.Errorf("inner IPv6 with destination options: offset %d, %v; want %d", off, err, want)
	}
	off, err = transportOffset(frame(false, 5))
	if want := wire.EthernetLen + wire.IPv6Len + wire.IPv4MinLen + wire.UDPLen; err != nil || off != want {
		t.Errorf("inner IPv4: offset %d, %v; want %d", off, err, want)
	}
	if _, err := transportOffset(frame(false, 2)); !errors.Is(err, ErrMalformed) {
		t.Errorf("inner IPv4 header of 2 words: %v; want ErrMalformed", err)
	}
}
