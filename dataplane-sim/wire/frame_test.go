package wire

import (
	"bytes"
	"encoding/hex"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Addressing fixtures. Every field is set so that Frame.Addressing of the
// decoded frame must equal the fixture exactly.
func frAddr4() Addressing {
	return Addressing{
		DstMAC: MAC{0x02, 0, 0, 0, 0, 1}, SrcMAC: MAC{0x02, 0, 0, 0, 0, 4},
		SrcIP: netip.MustParseAddr("10.0.0.4"), DstIP: netip.MustParseAddr("10.0.0.1"),
		TOS: 0x02, TTL: 64, IPv4ID: 0x1234, DF: true, SrcPort: 0xC123, DstPort: RoCEv2Port,
	}
}

func frAddr6() Addressing {
	return Addressing{
		DstMAC: MAC{0x02, 0, 0, 0, 0, 1}, SrcMAC: MAC{0x02, 0, 0, 0, 0, 4},
		SrcIP: netip.MustParseAddr("2001:db8::4"), DstIP: netip.MustParseAddr("2001:db8::1"),
		TOS: 0x88, TTL: 63, FlowLabel: 0xABCDE, SrcPort: 0xC456, DstPort: RoCEv2Port, UDPChecksum: true,
	}
}

// frWith returns a with changes applied.
func frWith(a Addressing, change func(*Addressing)) Addressing {
	change(&a)
	return a
}

// frExample is the Long-haul CNP of the draft's §7 step 4.
func frExample() LongHaul {
	return LongHaul{CongLevel: 180, Action: ActionRateReduce, Parameter: 30, SourceQP: 100,
		MetricType: MetricQueueDepth, MetricValue: 130000}
}

// frObjects returns one object of each C-Type (lengths 12, 9 unpadded, 7).
func frObjects() []ExtObject {
	return []ExtObject{
		{ClassNum: 247, CType: CTypeTimestamp, Data: []byte{0xE9, 0x5B, 0x3C, 0x00, 0x80, 0, 0, 0}},
		{ClassNum: 247, CType: CTypeDeviceID, Data: []byte("N1-é")},
		{ClassNum: 247, CType: CTypePathID, Data: []byte{1, 2, 3}},
	}
}

// frREQ returns a CM REQ as a switch learns flows from it.
func frREQ() CMMessage {
	return CMMessage{
		Method: MethodSend, TransactionID: 0x1122334455667788, AttrID: CMAttrREQ,
		LocalCommID: 0xAABBCCDD, LocalQKey: 0, LocalQPN: 100, StartingPSN: 0x123456,
		ServiceID: 0x0106000000001234, PKey: 0xFFFF, PathMTU: 5, TransportServiceType: 0,
		PrimaryLocalGID:  [16]byte{10: 0xFF, 11: 0xFF, 12: 10, 15: 1},
		PrimaryRemoteGID: [16]byte{10: 0xFF, 11: 0xFF, 12: 10, 15: 4},
		PrivateData:      make([]byte, 92),
	}
}

// frCase is one frame built by an encoder, with what its decode must show.
type frCase struct {
	desc string
	a    Addressing
	enc  func(e *Encoder, b []byte, a *Addressing) (int, error)
	kind Kind
	// check compares the decoded message with what was encoded.
	check func(t *testing.T, f *Frame)
}

var frCmpOpts = []cmp.Option{
	cmpopts.EquateEmpty(),
	cmpopts.EquateComparable(netip.Addr{}),
	cmpopts.IgnoreFields(LongHaul{}, "ExtPresent", "ExtChecksum", "ExtChecksumStatus"),
}

func frDiff(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got, frCmpOpts...); d != "" {
		t.Errorf("%s mismatch (-want, +got):\n%s", what, d)
	}
}

// frCases returns a frame of every format, over IPv4 and IPv6 where the
// format allows both, with and without VLAN tag and tunnel.
func frCases() []frCase {
	var cases []frCase
	lhPlain := frExample()
	lhObjs := frExample()
	lhObjs.Objects = frObjects()
	lhResume := LongHaul{CongLevel: 20, Action: ActionResume, Parameter: 50, SourceQP: 100,
		MetricType: MetricQueueDepth, MetricValue: 30000}
	lhPause := LongHaul{CongLevel: 255, Action: ActionPause, Parameter: 5000, SourceQP: 0xFFFFFFFF,
		MetricType: MetricRTT, MetricValue: MaxMetricValue, ICMPCode: 254}
	for _, m := range []struct {
		name string
		m    LongHaul
	}{{"example", lhPlain}, {"objects", lhObjs}, {"resume", lhResume}, {"pause", lhPause}} {
		m := m
		checkLH := func(t *testing.T, f *Frame) {
			want := m.m
			if f.Kind == KindLongHaulRoCE {
				want.ICMPCode = 0
			}
			frDiff(t, "long-haul", want, f.LongHaul)
			frWant(t, "ext present", f.LongHaul.ExtPresent, len(m.m.Objects) > 0)
			if len(m.m.Objects) > 0 {
				frWant(t, "ext checksum status", f.LongHaul.ExtChecksumStatus, StatusGood)
			}
		}
		cases = append(cases, frCase{
			desc: "long-haul icmpv6 " + m.name, a: frWith(frAddr6(), func(a *Addressing) { a.DstPort = 0; a.SrcPort = 0; a.UDPChecksum = false }),
			enc: func(e *Encoder, b []byte, a *Addressing) (int, error) {
				return e.LongHaulICMPv6(b, a, &m.m)
			},
			kind: KindLongHaulICMPv6, check: checkLH,
		})
		for _, a := range []Addressing{frAddr4(), frAddr6()} {
			cases = append(cases, frCase{
				desc: "long-haul rocev2 " + m.name + " " + a.SrcIP.String(), a: a,
				enc: func(e *Encoder, b []byte, a *Addressing) (int, error) {
					return e.LongHaulRoCE(b, a, &CNP{DestQP: 100}, &m.m)
				},
				kind: KindLongHaulRoCE,
				check: func(t *testing.T, f *Frame) {
					checkLH(t, f)
					frWant(t, "byte4", f.BTH.Byte4, uint8(0x60))
					frWant(t, "destqp", f.BTH.DestQP, uint32(100))
				},
			})
		}
	}
	cases = append(cases, frCase{
		desc: "long-haul icmpv6 vlan", a: frWith(frAddr6(), func(a *Addressing) {
			a.VLAN = VLAN{Present: true, PCP: 3, DEI: true, ID: 100}
			a.DstPort, a.SrcPort, a.UDPChecksum = 0, 0, false
		}),
		enc: func(e *Encoder, b []byte, a *Addressing) (int, error) {
			m := frExample()
			return e.LongHaulICMPv6(b, a, &m)
		},
		kind:  KindLongHaulICMPv6,
		check: func(t *testing.T, f *Frame) { frDiff(t, "long-haul", frExample(), f.LongHaul) },
	})

	for _, a := range []Addressing{frAddr4(), frAddr6(), frWith(frAddr4(), func(a *Addressing) { a.UDPChecksum = true })} {
		cases = append(cases, frCase{
			desc: "cnp " + a.SrcIP.String(), a: a,
			enc: func(e *Encoder, b []byte, a *Addressing) (int, error) {
				return e.CNP(b, a, &CNP{DestQP: 0x118, PKey: 0x8001})
			},
			kind: KindCNP,
			check: func(t *testing.T, f *Frame) {
				frDiff(t, "bth", BTH{Opcode: OpCNP, PKey: 0x8001, Byte4: BTHBECN, DestQP: 0x118}, f.BTH)
				frDiff(t, "reserved", make([]byte, 16), f.Payload)
			},
		})
		cases = append(cases, frCase{
			desc: "rate advice " + a.SrcIP.String(), a: a,
			enc: func(e *Encoder, b []byte, a *Addressing) (int, error) {
				return e.RateAdvice(b, a, &RateAdvice{RateMbps: 25000, DestQP: 0x77, SrcQP: 0x99})
			},
			kind: KindRateAdvice,
			check: func(t *testing.T, f *Frame) {
				frDiff(t, "rate advice", RateAdvice{RateMbps: 25000, Version: 1, DestQP: 0x77, SrcQP: 0x99}, f.RateAdvice)
				frWant(t, "opcode", f.BTH.Opcode, OpRateAdviceDefault)
			},
		})
		cases = append(cases, frCase{
			desc: "cm req " + a.SrcIP.String(), a: a,
			enc: func(e *Encoder, b []byte, a *Addressing) (int, error) {
				m := frREQ()
				return e.CM(b, a, 0x42, &m)
			},
			kind: KindCM,
			check: func(t *testing.T, f *Frame) {
				frDiff(t, "cm", frREQ(), f.CM)
				frWant(t, "deth", f.Transport.DETH, DETH{QKey: GSIQKey, SrcQP: GSIQP})
			},
		})
		cases = append(cases, frCase{
			desc: "fcn " + a.SrcIP.String(), a: frWith(a, func(a *Addressing) { a.DstPort = 1021 }),
			enc: func(e *Encoder, b []byte, a *Addressing) (int, error) {
				return e.FCN(b, a, &FCNMessage{FlowLabel: 0xABCDE, Level: 5})
			},
			kind:  KindFCN,
			check: func(t *testing.T, f *Frame) { frDiff(t, "fcn", FCNMessage{FlowLabel: 0xABCDE, Level: 5}, f.FCN) },
		})
		// The data path: one opcode per extended-header combination.
		for _, d := range []struct {
			op      Opcode
			th      TransportHeaders
			payload []byte
		}{
			{OpRCSendOnly, TransportHeaders{}, []byte("hello")},
			{OpRCSendMiddle, TransportHeaders{}, bytes.Repeat([]byte{0xA5}, 1024)},
			{OpRCSendOnlyImm, TransportHeaders{Set: HasImmDt | HasPayload, ImmDt: 0xDEADBEEF}, []byte("imm")},
			{OpRCSendOnlyInv, TransportHeaders{Set: HasIETH | HasPayload, IETH: 0x55}, []byte("inv!")},
			{OpRCWriteOnly, TransportHeaders{Set: HasRETH | HasPayload, RETH: RETH{VA: 0x7F0000001000, RKey: 0x1234, DMALen: 6}}, []byte("write!")},
			{OpRCWriteOnlyImm, TransportHeaders{Set: HasRETH | HasImmDt | HasPayload, RETH: RETH{VA: 8, RKey: 9, DMALen: 1}, ImmDt: 7}, []byte{1}},
			{OpRCReadRequest, TransportHeaders{Set: HasRETH, RETH: RETH{VA: 0x1000, RKey: 0x77, DMALen: 65536}}, nil},
			{OpRCReadResponseOnly, TransportHeaders{Set: HasAETH | HasPayload, AETH: AETH{Syndrome: 0x1F, MSN: 3}}, []byte("data")},
			{OpRCAck, TransportHeaders{Set: HasAETH, AETH: AETH{Syndrome: 0x1F, MSN: 0xFFFFFF}}, nil},
			{OpRCAtomicAck, TransportHeaders{Set: HasAETH | HasAtomicAckETH, AETH: AETH{MSN: 4}, AtomicAckETH: 0x0102030405060708}, nil},
			{OpRCCompareSwap, TransportHeaders{Set: HasAtomicETH, AtomicETH: AtomicETH{VA: 0x10, RKey: 2, SwapAdd: 3, CompareData: 4}}, nil},
			{OpRCFlush, TransportHeaders{Set: HasFETH | HasRETH, FETH: 0x11, RETH: RETH{VA: 1, RKey: 2, DMALen: 3}}, nil},
			{OpUCWriteFirst, TransportHeaders{Set: HasRETH | HasPayload, RETH: RETH{VA: 1, RKey: 2, DMALen: 4096}}, make([]byte, 256)},
			{OpUDSendOnly, TransportHeaders{Set: HasDETH | HasPayload, DETH: DETH{QKey: 0x11111111, SrcQP: 0x42}}, []byte("ud")},
			{OpUDSendOnlyImm, TransportHeaders{Set: HasDETH | HasImmDt | HasPayload, DETH: DETH{QKey: 1, SrcQP: 2}, ImmDt: 3}, []byte("udimm")},
		} {
			d := d
			d.th.Set, _ = OpcodeHeaders(d.op)
			bth := BTH{Opcode: d.op, SE: true, PKey: 0xFFFF, DestQP: 0xd3, AckReq: true, PSN: 0xABCDEF,
				PadCount: uint8(-len(d.payload) & 3)}
			cases = append(cases, frCase{
				desc: "rocev2 " + d.op.name() + " " + a.SrcIP.String(), a: a,
				enc: func(e *Encoder, b []byte, a *Addressing) (int, error) {
					return e.RoCE(b, a, &bth, &d.th, d.payload)
				},
				kind: KindRoCEData,
				check: func(t *testing.T, f *Frame) {
					frDiff(t, "bth", bth, f.BTH)
					frDiff(t, "transport", d.th, f.Transport)
					frDiff(t, "payload", d.payload, f.Payload)
					frWant(t, "pad", len(f.Pad), int(bth.PadCount))
				},
			})
		}
	}
	for _, o := range []FastCNPOption{
		{OrigDst: netip.MustParseAddr("2001:db8::1").As16()},
		{OrigDst: netip.MustParseAddr("2001:db8::1").As16(), IOAM: true, IOAMOptType: 0, IOAMData: bytes.Repeat([]byte{0xA1, 0xB2, 0xC3, 0xD4}, 5)},
	} {
		o := o
		cases = append(cases, frCase{
			desc: "fast cnp ioam=" + map[bool]string{false: "no", true: "yes"}[o.IOAM], a: frAddr6(),
			enc: func(e *Encoder, b []byte, a *Addressing) (int, error) {
				return e.FastCNP(b, a, &CNP{DestQP: 0xd3}, &o)
			},
			kind: KindFastCNP,
			check: func(t *testing.T, f *Frame) {
				frDiff(t, "fast cnp", o, f.FastCNP)
				frWant(t, "has fast cnp", f.HasFastCNP, true)
				frWant(t, "destqp", f.BTH.DestQP, uint32(0xd3))
				frWant(t, "ipv6 next header", f.IPv6.NextHeader, uint8(ProtoDestOpts))
			},
		})
	}
	// FCN's ingress PE: RoCEv2 data in an IPv6 tunnel whose flow label names the flow.
	for _, a := range []Addressing{frAddr4(), frAddr6()} {
		a.Tunnel = Tunnel{Present: true, Src: netip.MustParseAddr("2001:db8:ff::1"), Dst: netip.MustParseAddr("2001:db8:ff::2"),
			TrafficClass: 0x02, FlowLabel: 0x54321, HopLimit: 200}
		cases = append(cases, frCase{
			desc: "tunnel rocev2 " + a.SrcIP.String(), a: a,
			enc: func(e *Encoder, b []byte, a *Addressing) (int, error) {
				return e.RoCE(b, a, &BTH{Opcode: OpRCSendOnly, PKey: 0xFFFF, DestQP: 200, PSN: 7}, nil, []byte("tunneled"))
			},
			kind: KindRoCEData,
			check: func(t *testing.T, f *Frame) {
				l, ok := f.OuterFlowLabel()
				frWant(t, "outer flow label ok", ok, true)
				frWant(t, "outer flow label", l, uint32(0x54321))
				frWant(t, "tunneled", f.Tunneled, true)
				frDiff(t, "payload", []byte("tunneled"), f.Payload)
			},
		})
	}
	return cases
}

// name returns a short name of an opcode for test names.
func (o Opcode) name() string { return hex.EncodeToString([]byte{uint8(o)}) }

// frEncode builds the frame of c.
func frEncode(t testing.TB, c frCase) []byte {
	t.Helper()
	var e Encoder
	b := make([]byte, 4096)
	n, err := c.enc(&e, b, &c.a)
	if err != nil {
		t.Fatalf("%s: encode: %v", c.desc, err)
	}
	return b[:n]
}

func TestRoundTrip(t *testing.T) {
	for _, c := range frCases() {
		t.Run(c.desc, func(t *testing.T) {
			b := frEncode(t, c)
			var d Decoder
			var f Frame
			if err := d.Decode(b, &f); err != nil {
				t.Fatalf("Decode: %v\n%x", err, b)
			}
			frWant(t, "kind", f.Kind, c.kind)
			c.check(t, &f)
			frDiff(t, "addressing", c.a, f.Addressing())
			if f.IPVersion == 4 {
				frWant(t, "ipv4 checksum", f.IPv4.ChecksumStatus, StatusGood)
			}
			wantUDP := StatusGood
			if f.IPVersion == 4 && !c.a.UDPChecksum {
				wantUDP = StatusNone
			}
			switch f.Kind {
			case KindLongHaulICMPv6:
				frWant(t, "icmpv6 checksum", f.ICMPv6.ChecksumStatus, StatusGood)
				frWant(t, "icmpv6 type", f.ICMPv6.Type, uint8(200))
				frWant(t, "icrc status", f.ICRCStatus, StatusNone)
			case KindFCN:
				frWant(t, "udp checksum", f.UDP.ChecksumStatus, wantUDP)
				frWant(t, "icrc status", f.ICRCStatus, StatusNone)
			default:
				frWant(t, "udp checksum", f.UDP.ChecksumStatus, wantUDP)
				frWant(t, "icrc status", f.ICRCStatus, StatusGood)
				if f.Tunneled {
					break
				}
				// The IP packet minus the ICRC feeds ICRC() to the same value.
				ip := b[EthernetLen : len(b)-len(f.Trailer)]
				if c.a.VLAN.Present {
					ip = ip[VLANTagLen:]
				}
				if got, err := ICRC(ip); err != nil || got != f.ICRC {
					t.Errorf("ICRC() = %#x, %v; frame has %#x", got, err, f.ICRC)
				}
			}
			if len(b) < MinFrameLen {
				t.Errorf("frame of %d bytes is below the Ethernet minimum", len(b))
			}
			// Encoding again from the decoded addressing gives the same bytes.
			a := f.Addressing()
			c2 := c
			c2.a = a
			if b2 := frEncode(t, c2); !bytes.Equal(b, b2) {
				t.Errorf("re-encode differs:\n got %x\nwant %x", b2, b)
			}
		})
	}
}

// TestSection7Example checks the draft's §7 Long-haul CNP, byte for byte in
// its fixed part, in both formats.
func TestSection7Example(t *testing.T) {
	m := frExample()
	// CongLevel 180, flags 10|000000, parameter 30, source QP 100,
	// metric type 1, value 130000 = 0x01fbd0.
	body, _ := hex.DecodeString("b480001e0000006401" + "01fbd0")
	var e Encoder
	b := make([]byte, 256)
	a6 := frAddr6()
	a6.SrcIP, a6.DstIP = netip.MustParseAddr("2001:db8::4"), netip.MustParseAddr("2001:db8::1")

	n, err := e.LongHaulICMPv6(b, &a6, &m)
	if err != nil {
		t.Fatal(err)
	}
	icmp := b[EthernetLen+IPv6Len : n]
	if !bytes.Equal(icmp[4:], body) || icmp[0] != 200 || icmp[1] != 0 {
		t.Errorf("icmpv6 message = %x, want c800xxxx%x", icmp, body)
	}

	a4 := frAddr4() // N1 10.0.0.4 to the source 10.0.0.1
	n, err = e.LongHaulRoCE(b, &a4, &CNP{DestQP: 100}, &m)
	if err != nil {
		t.Fatal(err)
	}
	roce := b[EthernetLen+IPv4MinLen+UDPLen : n]
	bth, _ := hex.DecodeString("8100ffff" + "60000064" + "00000000")
	if !bytes.Equal(roce[:BTHLen], bth) {
		t.Errorf("bth = %x, want %x", roce[:BTHLen], bth)
	}
	if !bytes.Equal(roce[BTHLen:BTHLen+LongHaulBodyLen], body) {
		t.Errorf("extension fields = %x, want %x", roce[BTHLen:BTHLen+LongHaulBodyLen], body)
	}
	if len(roce) != BTHLen+LongHaulBodyLen+ICRCLen {
		t.Errorf("rocev2 part is %d bytes, want BTH+12+ICRC = 28", len(roce))
	}
	var d Decoder
	var f Frame
	if err := d.Decode(b[:n], &f); err != nil {
		t.Fatal(err)
	}
	frWant(t, "kind", f.Kind, KindLongHaulRoCE)
	frDiff(t, "long-haul", m, f.LongHaul)
	frWant(t, "action", f.LongHaul.Action.String(), "rate-reduce")
	frWant(t, "metric", f.LongHaul.MetricType.String()+" "+f.LongHaul.MetricType.Unit(), "queue-depth KB")
}

// TestLegacy reads Long-haul CNPs as an RNIC that knows only the standard
// CNP does (§8).
func TestLegacy(t *testing.T) {
	var e Encoder
	b := make([]byte, 256)
	a := frAddr4()
	m := frExample()
	m.Objects = frObjects()
	n, err := e.LongHaulRoCE(b, &a, &CNP{DestQP: 100}, &m)
	if err != nil {
		t.Fatal(err)
	}
	lh := b[:n]
	legacy := Decoder{Legacy: true}
	var f Frame
	if err := legacy.Decode(lh, &f); err != nil {
		t.Fatalf("legacy Decode: %v", err)
	}
	frWant(t, "kind", f.Kind, KindCNP)
	frWant(t, "destqp", f.BTH.DestQP, uint32(100))
	frWant(t, "becn", f.BTH.BECN(), true)
	frWant(t, "icrc", f.ICRCStatus, StatusGood) // §6.2.5: the legacy ICRC covers the extension
	frWant(t, "ignored bytes", len(f.Payload), m.Len())
	frWant(t, "long-haul untouched", f.LongHaul.SourceQP, uint32(0))

	strict := Decoder{Legacy: true, LegacyStrictLength: true}
	if err := strict.Decode(lh, &f); !errorsIs(err, ErrLength) {
		t.Errorf("strict legacy Decode of a long-haul cnp: err = %v, want ErrLength", err)
	}
	n, _ = e.CNP(b, &a, &CNP{DestQP: 100})
	if err := strict.Decode(b[:n], &f); err != nil || f.Kind != KindCNP {
		t.Errorf("strict legacy Decode of a standard cnp: kind %v, err %v", f.Kind, err)
	}

	a6 := frAddr6()
	n, _ = e.LongHaulICMPv6(b, &a6, &m)
	if err := legacy.Decode(b[:n], &f); err != nil || f.Kind != KindOther {
		t.Errorf("legacy Decode of icmpv6 long-haul: kind %v, err %v; want other (unknown informational type)", f.Kind, err)
	}
}

// TestOpcodeTable spot-checks the extended headers per opcode.
func TestOpcodeTable(t *testing.T) {
	for _, c := range []struct {
		op   Opcode
		set  ETH
		hlen int
		ok   bool
	}{
		{OpRCSendFirst, HasPayload, 0, true},
		{OpRCWriteFirst, HasRETH | HasPayload, 16, true},
		{OpRCWriteOnlyImm, HasRETH | HasImmDt | HasPayload, 20, true},
		{OpRCReadRequest, HasRETH, 16, true},
		{OpRCReadResponseFirst, HasAETH | HasPayload, 4, true},
		{OpRCReadResponseMiddle, HasPayload, 0, true},
		{OpRCAck, HasAETH, 4, true},
		{OpRCAtomicAck, HasAETH | HasAtomicAckETH, 12, true},
		{OpRCFetchAdd, HasAtomicETH, 28, true},
		{OpRCSendLastInv, HasIETH | HasPayload, 4, true},
		{OpUCSendLastImm, HasImmDt | HasPayload, 4, true},
		{OpUCWriteOnly, HasRETH | HasPayload, 16, true},
		{OpUDSendOnly, HasDETH | HasPayload, 8, true},
		{OpUDSendOnlyImm, HasDETH | HasImmDt | HasPayload, 12, true},
		{OpCNP, 0, 0, false},
		{0x15, 0, 0, false},
		{0x40, 0, 0, false}, // RD
		{0xA0, 0, 0, false}, // XRC
		{0xC0, 0, 0, false},
	} {
		set, ok := OpcodeHeaders(c.op)
		if set != c.set || ok != c.ok || set.Len() != c.hlen {
			t.Errorf("OpcodeHeaders(%#02x) = %b (%d bytes), %v; want %b (%d), %v", uint8(c.op), set, set.Len(), ok, c.set, c.hlen, c.ok)
		}
	}
}

// TestNTP checks the timestamp object conversion.
func TestNTP(t *testing.T) {
	o := TimestampObject(frTime)
	v, ok := o.Timestamp()
	if !ok {
		t.Fatal("Timestamp() not ok")
	}
	got := TimeFromNTP(v)
	if d := got.Sub(frTime); d < -1 || d > 1 {
		t.Errorf("TimeFromNTP(NTPTime(t)) = %v, want %v", got, frTime)
	}
}
