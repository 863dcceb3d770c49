package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tunnelAddressing is a sender's RoCEv2 packet as FCN's ingress PE
// tunnels it: inner from the DC-A host to the DC-B host, outer from the
// PE to the egress PE with the assigned label and the inner ECN copied.
func tunnelAddressing(v6 bool, ecn uint8) Addressing {
	a := Addressing{SrcIP: netip.MustParseAddr("2001:db8:a::1"), DstIP: netip.MustParseAddr("2001:db8:b::1"),
		TOS: 0x68 | ecn, SrcPort: 0xC065, DstMAC: MAC{2, 0, 0, 0, 0, 9}, SrcMAC: MAC{2, 0, 0, 0, 0, 1},
		Tunnel: Tunnel{Present: true, Src: netip.MustParseAddr("2001:db8:f::1"), Dst: netip.MustParseAddr("2001:db8:f::3"),
			TrafficClass: 0x68 | ecn, FlowLabel: 0xABCDE}}
	if !v6 {
		a.SrcIP, a.DstIP = netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.1.1")
	}
	return a
}

// tunnelled encodes a whole tunnelled RDMA WRITE ONLY with payload zero
// bytes.
func tunnelled(t *testing.T, a *Addressing, payload int) []byte {
	t.Helper()
	b := make([]byte, 2048)
	bth := BTH{Opcode: OpRCWriteOnly, PKey: 0xFFFF, DestQP: 201, PSN: 7}
	n, err := (&Encoder{}).RoCE(b, a, &bth, nil, make([]byte, payload))
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

// TestEncapHead: the head the simulator's PE writes is byte for byte the
// start of the whole tunnelled frame, and DecodeEncap reads back what
// the PE put there: next header 41 (IPv6 inner) or 4 (IPv4 inner), the
// label, the copied ECN, both address pairs, the lengths of the whole
// packet.
func TestEncapHead(t *testing.T) {
	for _, tt := range []struct {
		desc string
		v6   bool
		nh   uint8
	}{{"ipv6 in ipv6", true, ProtoIPv6}, {"ipv4 in ipv6", false, ProtoIPv4}} {
		t.Run(tt.desc, func(t *testing.T) {
			a := tunnelAddressing(tt.v6, 2)
			full := tunnelled(t, &a, 1001)
			head := make([]byte, 200)
			n, err := (&Encoder{}).EncapHead(head, &a, RoCEUDPLen(OpRCWriteOnly, 1001))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(full[:n], head[:n]); diff != "" {
				t.Fatalf("head (-whole frame, +EncapHead):\n%s", diff)
			}
			var h Encap
			if err := DecodeEncap(head[:n], &h); err != nil {
				t.Fatal(err)
			}
			innerLen := len(full) - EthernetLen - IPv6Len
			want := Encap{Outer: IPv6{TrafficClass: 0x6A, FlowLabel: 0xABCDE, PayloadLen: uint16(innerLen), NextHeader: tt.nh,
				HopLimit: DefaultTTL, Src: a.Tunnel.Src, Dst: a.Tunnel.Dst, Proto: tt.nh, HeaderLen: IPv6Len},
				InnerVersion: 4, InnerTOS: 0x6A, InnerProto: ProtoUDP, InnerSrc: a.SrcIP, InnerDst: a.DstIP,
				InnerOff: EthernetLen + IPv6Len, HeadLen: n}
			if tt.v6 {
				want.InnerVersion = 6
			}
			if diff := cmp.Diff(want, h, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("DecodeEncap (-want +got):\n%s", diff)
			}
			// The whole frame decodes as a tunnel with every check good.
			var f Frame
			if err := (&Decoder{}).Decode(full, &f); err != nil || !f.Tunneled || f.Kind != KindRoCEData {
				t.Fatalf("decode of the whole frame: %v, tunneled %v, kind %v", err, f.Tunneled, f.Kind)
			}
			if l, _ := f.OuterFlowLabel(); l != 0xABCDE {
				t.Errorf("outer flow label %#x", l)
			}
		})
	}
}

// TestDecapECN is RFC 6040 §4.2 Figure 4, every cell.
func TestDecapECN(t *testing.T) {
	const notECT, ect1, ect0, ce = 0, 1, 2, 3
	type cell struct {
		ECN           uint8
		Drop, Unusual bool
	}
	// want[inner][outer], outer in the order Not-ECT, ECT(0), ECT(1), CE.
	outers := []uint8{notECT, ect0, ect1, ce}
	want := map[uint8][4]cell{
		notECT: {{notECT, false, false}, {notECT, false, true}, {notECT, false, true}, {notECT, true, true}},
		ect0:   {{ect0, false, false}, {ect0, false, false}, {ect1, false, false}, {ce, false, false}},
		ect1:   {{ect1, false, false}, {ect1, false, true}, {ect1, false, false}, {ce, false, false}},
		ce:     {{ce, false, false}, {ce, false, false}, {ce, false, true}, {ce, false, false}},
	}
	for inner, row := range want {
		for i, outer := range outers {
			e, d, u := DecapECN(inner|0xB4, outer|0x6C) // DSCP bits are ignored
			if got := (cell{e, d, u}); got != row[i] {
				t.Errorf("DecapECN(inner %02b, outer %02b) = %+v, want %+v", inner, outer, got, row[i])
			}
		}
	}
}

// TestDecapsulate: the egress PE's decapsulation leaves the frame the
// sender sent, with the ECN RFC 6040 gives: a CE mark on the outer header
// reaches the inner one; every checksum and the ICRC still verify.
func TestDecapsulate(t *testing.T) {
	for _, tt := range []struct {
		desc       string
		v6         bool
		outer, ecn uint8
	}{
		{"ipv6, unmarked", true, 2, 2},
		{"ipv6, marked on the way", true, 3, 3},
		{"ipv4, marked on the way", false, 3, 3},
		{"ipv4, unmarked", false, 2, 2},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			a := tunnelAddressing(tt.v6, 2)
			b := tunnelled(t, &a, 300)
			if err := SetOuterECN(b, tt.outer); err != nil {
				t.Fatal(err)
			}
			inner, drop, err := Decapsulate(b)
			if err != nil || drop {
				t.Fatalf("Decapsulate: %v, drop %v", err, drop)
			}
			plain := a
			plain.Tunnel = Tunnel{}
			plain.TOS = 0x68 | tt.ecn
			want := tunnelled(t, &plain, 300)
			if diff := cmp.Diff(want, inner); diff != "" {
				t.Errorf("inner frame (-sender's with the ecn, +decapsulated):\n%s", diff)
			}
			var f Frame
			if err := (&Decoder{}).Decode(inner, &f); err != nil || f.Tunneled || f.ICRCStatus != StatusGood {
				t.Errorf("decode: %v, tunneled %v, icrc %v", err, f.Tunneled, f.ICRCStatus)
			}
		})
	}
	t.Run("CE on a not-ECT packet is dropped", func(t *testing.T) {
		a := tunnelAddressing(true, 0)
		b := tunnelled(t, &a, 8)
		if err := SetOuterECN(b, 3); err != nil {
			t.Fatal(err)
		}
		before := bytes.Clone(b)
		if _, drop, err := Decapsulate(b); err != nil || !drop || !bytes.Equal(before, b) {
			t.Errorf("Decapsulate: drop %v, err %v, frame changed %v", drop, err, !bytes.Equal(before, b))
		}
	})
}

// TestSetOuterECN marks the outermost header only; an IPv4 header's
// checksum still verifies.
func TestSetOuterECN(t *testing.T) {
	a := tunnelAddressing(true, 2)
	b := tunnelled(t, &a, 64)
	if err := SetOuterECN(b, 3); err != nil {
		t.Fatal(err)
	}
	var h Encap
	if err := DecodeEncap(b, &h); err != nil {
		t.Fatal(err)
	}
	if h.Outer.TrafficClass != 0x6B || h.InnerTOS != 0x6A {
		t.Errorf("outer tc %#x inner %#x, want 0x6b (CE) and 0x6a (unchanged)", h.Outer.TrafficClass, h.InnerTOS)
	}
	plain := a
	plain.Tunnel = Tunnel{}
	plain.SrcIP, plain.DstIP = netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.1.1")
	for _, ecn := range []uint8{3, 0, 1, 2} {
		p := tunnelled(t, &plain, 64)
		if err := SetOuterECN(p, ecn); err != nil {
			t.Fatal(err)
		}
		var f Frame
		if err := (&Decoder{}).Decode(p, &f); err != nil || f.IPv4.ChecksumStatus != StatusGood || f.IPv4.TOS != 0x68|ecn {
			t.Errorf("ipv4 marked %02b: %v, checksum %v, tos %#x", ecn, err, f.IPv4.ChecksumStatus, f.IPv4.TOS)
		}
	}
	if err := SetOuterECN(make([]byte, 10), 3); !errors.Is(err, ErrTruncated) {
		t.Errorf("short frame: %v, want ErrTruncated", err)
	}
}

// TestDecodeEncapErrors: bad heads are refused with the sentinel that
// says why, never a panic.
func TestDecodeEncapErrors(t *testing.T) {
	a := tunnelAddressing(true, 2)
	good := tunnelled(t, &a, 16)
	a4 := tunnelAddressing(false, 2)
	good4 := tunnelled(t, &a4, 16)
	mod := func(b []byte, f func([]byte)) []byte {
		c := bytes.Clone(b)
		f(c)
		return c
	}
	plain := a
	plain.Tunnel = Tunnel{}
	for _, tt := range []struct {
		desc string
		in   []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"ethernet only", good[:EthernetLen], ErrTruncated},
		{"not tunnelled", tunnelled(t, &plain, 16), ErrUnsupported},
		{"ipv4 ethertype", mod(good, func(b []byte) { binary.BigEndian.PutUint16(b[12:], EtherTypeIPv4) }), ErrUnsupported},
		{"outer version 4", mod(good, func(b []byte) { b[14] = 0x46 }), ErrUnsupported},
		{"inner cut short", good[:EthernetLen+IPv6Len+39], ErrTruncated},
		{"inner version wrong", mod(good, func(b []byte) { b[54] = 0x45 }), ErrInvalid},
		{"inner ipv4 cut short", good4[:EthernetLen+IPv6Len+19], ErrTruncated},
		{"inner ipv4 ihl 4", mod(good4, func(b []byte) { b[54] = 0x44 }), ErrLength},
		{"inner ipv4 bad checksum", mod(good4, func(b []byte) { b[54+8]++ }), ErrChecksum},
		{"inner ipv4 version wrong", mod(good4, func(b []byte) { b[54] = 0x65 }), ErrInvalid},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var h Encap
			if err := DecodeEncap(tt.in, &h); !errors.Is(err, tt.want) {
				t.Errorf("DecodeEncap: %v, want %v", err, tt.want)
			}
			if _, _, err := Decapsulate(bytes.Clone(tt.in)); !errors.Is(err, tt.want) {
				t.Errorf("Decapsulate: %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := (&Encoder{}).EncapHead(make([]byte, 200), &plain, 100); !errors.Is(err, ErrInvalid) {
		t.Errorf("EncapHead without a tunnel: %v, want ErrInvalid", err)
	}
	if _, err := (&Encoder{}).EncapHead(make([]byte, 60), &a, 100); !errors.Is(err, ErrShortBuffer) {
		t.Errorf("EncapHead into 60 bytes: %v, want ErrShortBuffer", err)
	}
}

// FuzzDecodeEncap: the tunnel head decoder and Decapsulate never panic;
// a head they accept re-encodes to the same bytes, and decapsulation
// keeps the inner header and applies RFC 6040.
func FuzzDecodeEncap(f *testing.F) {
	for _, v6 := range []bool{true, false} {
		for _, ecn := range []uint8{0, 2, 3} {
			a := tunnelAddressing(v6, ecn)
			b := make([]byte, 2048)
			bth := BTH{Opcode: OpRCWriteOnly, PKey: 0xFFFF, DestQP: 201}
			n, _ := (&Encoder{}).RoCE(b, &a, &bth, nil, make([]byte, 40))
			f.Add(b[:n])
			f.Add(b[:EthernetLen+2*IPv6Len])
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Encap
		err := DecodeEncap(b, &h)
		c := bytes.Clone(b)
		inner, drop, derr := Decapsulate(c)
		if (err == nil) != (derr == nil) {
			t.Fatalf("DecodeEncap: %v, Decapsulate: %v", err, derr)
		}
		if d, ok := OuterDst(b); err == nil && (!ok || netip.AddrFrom16(d) != h.Outer.Dst) {
			t.Fatalf("OuterDst %v, %v; DecodeEncap read %v", netip.AddrFrom16(d), ok, h.Outer.Dst)
		}
		if err != nil {
			return
		}
		if h.HeadLen > len(b) || h.InnerOff != h.HeadLen-IPv6Len && h.InnerVersion == 6 {
			t.Fatalf("head %d of %d bytes, inner at %d", h.HeadLen, len(b), h.InnerOff)
		}
		// A head without VLAN, options or odd fields re-encodes exactly.
		if h.InnerOff == EthernetLen+IPv6Len && h.HeadLen-h.InnerOff == map[uint8]int{4: IPv4MinLen, 6: IPv6Len}[h.InnerVersion] &&
			h.InnerProto == ProtoUDP && int(h.Outer.PayloadLen) >= h.HeadLen-h.InnerOff+UDPLen {
			a := Addressing{DstMAC: MAC(b[0:6]), SrcMAC: MAC(b[6:12]), SrcIP: h.InnerSrc, DstIP: h.InnerDst, TOS: h.InnerTOS,
				FlowLabel: h.InnerFlowLabel, TTL: b[h.InnerOff+7], Tunnel: Tunnel{Present: true, Src: h.Outer.Src, Dst: h.Outer.Dst,
					TrafficClass: h.Outer.TrafficClass, FlowLabel: h.Outer.FlowLabel, HopLimit: h.Outer.HopLimit}}
			if h.InnerVersion == 4 {
				a.TTL, a.IPv4ID, a.DF = b[h.InnerOff+8], binary.BigEndian.Uint16(b[h.InnerOff+4:]), b[h.InnerOff+6]&0x40 != 0
			}
			l4 := int(h.Outer.PayloadLen) - (h.HeadLen - h.InnerOff)
			out := make([]byte, h.HeadLen)
			n, err := (&Encoder{}).EncapHead(out, &a, l4)
			same := err == nil && n == h.HeadLen && bytes.Equal(out, b[:n])
			canonical := a.TTL != 0 && h.Outer.HopLimit != 0 && (h.InnerVersion == 6 ||
				b[h.InnerOff+6]&^0x40 == 0 && b[h.InnerOff+7] == 0 && int(binary.BigEndian.Uint16(b[h.InnerOff+2:])) == int(h.Outer.PayloadLen))
			if canonical && h.InnerVersion == 6 {
				canonical = int(binary.BigEndian.Uint16(b[h.InnerOff+4:]))+IPv6Len == int(h.Outer.PayloadLen)
			}
			if canonical && !same {
				t.Fatalf("re-encode: %v\nin  %x\nout %x", err, b[:h.HeadLen], out[:n])
			}
		}
		want, wdrop, _ := DecapECN(h.InnerTOS, h.Outer.TrafficClass)
		if drop != wdrop {
			t.Fatalf("drop %v, DecapECN says %v", drop, wdrop)
		}
		if drop {
			if !bytes.Equal(b, c) {
				t.Fatal("a dropped packet's frame changed")
			}
			return
		}
		if len(inner) != len(b)-TunnelOverheadBytes {
			t.Fatalf("inner frame of %d bytes from %d", len(inner), len(b))
		}
		ip := inner[h.InnerOff-IPv6Len:]
		got := ip[1] & 3
		if h.InnerVersion == 6 {
			got = ip[1] >> 4 & 3
		} else if Checksum(ip[:h.HeadLen-h.InnerOff]) != 0 {
			t.Fatal("the inner ipv4 checksum does not verify after decapsulation")
		}
		if got != want {
			t.Fatalf("inner ecn %02b, want %02b", got, want)
		}
	})
}

// BenchmarkTunnel: the per-packet work of the tunnel in the simulator:
// the PE writes a head, a WAN node reads one, the egress PE takes the
// outer header off.
func BenchmarkTunnel(b *testing.B) {
	a := tunnelAddressing(true, 2)
	head := make([]byte, 128)
	l4 := RoCEUDPLen(OpRCWriteOnly, 4096)
	n, err := (&Encoder{}).EncapHead(head, &a, l4)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("EncapHead", func(b *testing.B) {
		b.ReportAllocs()
		e := &Encoder{}
		for b.Loop() {
			if _, err := e.EncapHead(head, &a, l4); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("DecodeEncap", func(b *testing.B) {
		b.ReportAllocs()
		var h Encap
		for b.Loop() {
			if err := DecodeEncap(head[:n], &h); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Decapsulate", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, n)
		for b.Loop() {
			copy(buf, head[:n])
			if _, _, err := Decapsulate(buf); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestOuterDst agrees with DecodeEncap on the heads it accepts and
// refuses what is no tunnel.
func TestOuterDst(t *testing.T) {
	a := tunnelAddressing(false, 2)
	b := tunnelled(t, &a, 8)
	if d, ok := OuterDst(b); !ok || netip.AddrFrom16(d) != a.Tunnel.Dst {
		t.Errorf("OuterDst = %v, %v; want %v", netip.AddrFrom16(d), ok, a.Tunnel.Dst)
	}
	plain := a
	plain.Tunnel = Tunnel{}
	for _, bad := range [][]byte{nil, b[:EthernetLen+IPv6Len-1], tunnelled(t, &plain, 8)} {
		if _, ok := OuterDst(bad); ok {
			t.Errorf("OuterDst accepted %x", bad)
		}
	}
}
