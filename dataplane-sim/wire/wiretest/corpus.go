// Package wiretest builds a corpus of frames with the wire package's
// encoders: one or more frames of every format, over IPv4 and IPv6, and a few
// deliberately broken ones. The oracle tests (tshark, scapy), the shipped
// capture captures/all-formats.pcap and the decode command's golden output
// are all made from it, so they agree on what each frame holds.
//
// It depends on the wire package only.
package wiretest

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// Frame is one corpus entry.
type Frame struct {
	Name string
	// Bytes is the Ethernet frame without FCS.
	Bytes []byte
	// Broken says the frame was damaged after encoding; Want names the
	// sentinel error decoding must return for it.
	Broken bool
	Want   error
	// Expect holds facts an independent dissector must report, by tshark
	// field name (values as tshark prints them with -T fields).
	Expect map[string]string
}

// Epoch is the capture time of the first frame; frames follow 1 µs apart.
var Epoch = time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)

// The §7 operational example: Source 10.0.0.1 QP 100 → N1 → N2 → Dest
// 10.0.0.4 QP 200; N1 sends the Long-haul CNP. IPv6 frames use the same
// hosts in 2001:db8::/32.
var (
	Source4 = netip.MustParseAddr("10.0.0.1")
	N1v4    = netip.MustParseAddr("10.0.0.2")
	N2v4    = netip.MustParseAddr("10.0.0.3")
	Dest4   = netip.MustParseAddr("10.0.0.4")
	Source6 = netip.MustParseAddr("2001:db8:a::1")
	N1v6    = netip.MustParseAddr("2001:db8:ff::1")
	Dest6   = netip.MustParseAddr("2001:db8:b::4")
	PE6     = netip.MustParseAddr("2001:db8:fe::1")
	P6      = netip.MustParseAddr("2001:db8:fe::2")

	macSource = wire.MAC{0x02, 0, 0, 0, 0, 0x01}
	macN1     = wire.MAC{0x02, 0, 0, 0, 0, 0x02}
	macDest   = wire.MAC{0x02, 0, 0, 0, 0, 0x04}
)

// Section7 is the Long-haul CNP of §7 step 4.
func Section7() wire.LongHaul {
	return wire.LongHaul{
		CongLevel:   180,
		Action:      wire.ActionRateReduce,
		Parameter:   30,
		SourceQP:    100,
		MetricType:  wire.MetricQueueDepth,
		MetricValue: 130000,
	}
}

// Section7Resume is the Resume of §7 step 8.
func Section7Resume() wire.LongHaul {
	return wire.LongHaul{
		CongLevel:   20,
		Action:      wire.ActionResume,
		Parameter:   50,
		SourceQP:    100,
		MetricType:  wire.MetricQueueDepth,
		MetricValue: 30000,
	}
}

func objects() []wire.ExtObject {
	ts := make([]byte, 8)
	binary.BigEndian.PutUint64(ts, wire.NTPTime(Epoch))
	return []wire.ExtObject{
		{CType: wire.CTypeTimestamp, Data: ts},
		wire.DeviceIDObject("N1.dci-east"),
		wire.PathIDObject([]byte{0xde, 0xad, 0xbe}),
	}
}

// cnpAddr is the addressing of a node-originated control packet to the source.
func cnpAddr(v6 bool) wire.Addressing {
	a := wire.Addressing{DstMAC: macSource, SrcMAC: macN1, SrcIP: N1v4, DstIP: Source4, TOS: 0xc0 /* DSCP 48 */, DF: true, SrcPort: 0xc001}
	if v6 {
		a.SrcIP, a.DstIP = N1v6, Source6
	}
	return a
}

// dataAddr is the addressing of a data packet from the source to the destination.
func dataAddr(v6 bool) wire.Addressing {
	a := wire.Addressing{DstMAC: macN1, SrcMAC: macSource, SrcIP: Source4, DstIP: Dest4, TOS: 0x6a /* DSCP 26, ECT(0) */, DF: true, SrcPort: 0xd3a1}
	if v6 {
		a.SrcIP, a.DstIP = Source6, Dest6
		a.FlowLabel = 0x1cafe
	}
	return a
}

func req() wire.CMMessage {
	gidA := netip.AddrFrom16(Source4.As16()).As16()
	gidB := netip.AddrFrom16(Dest4.As16()).As16()
	gidA[10], gidA[11], gidB[10], gidB[11] = 0xff, 0xff, 0xff, 0xff
	return wire.CMMessage{
		Method: wire.MethodSend, TransactionID: 0x1122334455667788, AttrID: wire.CMAttrREQ,
		LocalCommID: 0x0a0b0c0d, ServiceID: 0x0000000001064e21, LocalCAGUID: 0x0002c90300a1b2c3,
		LocalQKey: 0, LocalQPN: 100, StartingPSN: 0x1234, PKey: 0xffff, PathMTU: 5,
		ResponderResources: 16, InitiatorDepth: 16, RNRRetryCount: 7, RetryCount: 7, MaxCMRetries: 15,
		LocalCMResponseTimeout: 20, RemoteCMResponseTimeout: 20,
		PrimaryLocalLID: 0xffff, PrimaryRemoteLID: 0xffff, PrimaryLocalGID: gidA, PrimaryRemoteGID: gidB,
		PrimaryHopLimit: 64, PrimarySL: 3, PrimaryLocalACKTimeout: 14, PrimaryTrafficClass: 106,
	}
}

// Frames returns the corpus. It fails only if an encoder rejects a frame,
// which is a bug.
func Frames() ([]Frame, error) {
	var enc wire.Encoder
	var out []Frame
	add := func(name string, expect map[string]string, build func(b []byte) (int, error)) error {
		b := make([]byte, 2048)
		n, err := build(b)
		if err != nil {
			return fmt.Errorf("corpus %s: %w", name, err)
		}
		out = append(out, Frame{Name: name, Bytes: b[:n], Expect: expect})
		return nil
	}
	lh := Section7()
	lhObjs := Section7()
	lhObjs.Objects = objects()
	resume := Section7Resume()
	cnp := wire.CNP{DestQP: 100}
	steps := []struct {
		name   string
		expect map[string]string
		build  func(b []byte) (int, error)
	}{
		{"longhaul-icmpv6-sec7", map[string]string{"icmpv6.type": "200", "icmpv6.code": "0"},
			func(b []byte) (int, error) { a := cnpAddr(true); return enc.LongHaulICMPv6(b, &a, &lh) }},
		{"longhaul-icmpv6-objects", map[string]string{"icmpv6.type": "200"},
			func(b []byte) (int, error) { a := cnpAddr(true); return enc.LongHaulICMPv6(b, &a, &lhObjs) }},
		{"longhaul-icmpv6-resume", map[string]string{"icmpv6.type": "200"},
			func(b []byte) (int, error) { a := cnpAddr(true); return enc.LongHaulICMPv6(b, &a, &resume) }},
		{"longhaul-roce-ipv4-sec7", roceFacts(0x81, 100, "60"),
			func(b []byte) (int, error) { a := cnpAddr(false); return enc.LongHaulRoCE(b, &a, &cnp, &lh) }},
		{"longhaul-roce-ipv4-udpcsum", roceFacts(0x81, 100, "60"),
			func(b []byte) (int, error) {
				a := cnpAddr(false)
				a.UDPChecksum = true
				return enc.LongHaulRoCE(b, &a, &cnp, &lhObjs)
			}},
		{"longhaul-roce-ipv6-objects", roceFacts(0x81, 100, "60"),
			func(b []byte) (int, error) { a := cnpAddr(true); return enc.LongHaulRoCE(b, &a, &cnp, &lhObjs) }},
		{"cnp-ipv4", roceFacts(0x81, 100, "40"),
			func(b []byte) (int, error) { a := cnpAddr(false); return enc.CNP(b, &a, &cnp) }},
		{"cnp-ipv6", roceFacts(0x81, 100, "40"),
			func(b []byte) (int, error) { a := cnpAddr(true); return enc.CNP(b, &a, &cnp) }},
		{"fastcnp-ipv6", roceFacts(0x81, 200, "40"),
			func(b []byte) (int, error) {
				a := cnpAddr(true)
				o := wire.FastCNPOption{OrigDst: Dest6.As16()}
				return enc.FastCNP(b, &a, &wire.CNP{DestQP: 200}, &o)
			}},
		{"fastcnp-ioam-ipv6", roceFacts(0x81, 200, "40"),
			func(b []byte) (int, error) {
				a := cnpAddr(true)
				o := wire.FastCNPOption{OrigDst: Dest6.As16(), IOAM: true, IOAMOptType: 0,
					IOAMData: []byte{0, 0x10, 0, 0x02, 0xf0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2}}
				return enc.FastCNP(b, &a, &wire.CNP{DestQP: 200}, &o)
			}},
		{"rc-write-only-ipv4", roceFacts(0x0a, 200, "00"),
			func(b []byte) (int, error) {
				a := dataAddr(false)
				h := wire.BTH{Opcode: wire.OpRCWriteOnly, PKey: 0xffff, DestQP: 200, AckReq: true, PSN: 0x1234}
				th := wire.TransportHeaders{RETH: wire.RETH{VA: 0x7f0000001000, RKey: 0x1234abcd, DMALen: 64}}
				return enc.RoCE(b, &a, &h, &th, make([]byte, 64))
			}},
		{"rc-send-only-imm-ipv6", roceFacts(0x05, 200, "00"),
			func(b []byte) (int, error) {
				a := dataAddr(true)
				h := wire.BTH{Opcode: wire.OpRCSendOnlyImm, PKey: 0xffff, DestQP: 200, PSN: 7}
				th := wire.TransportHeaders{ImmDt: 0xfeedface}
				return enc.RoCE(b, &a, &h, &th, []byte("lhcnp payload"))
			}},
		{"rc-ack-ipv4", roceFacts(0x11, 100, "00"),
			func(b []byte) (int, error) {
				a := dataAddr(false)
				a.SrcIP, a.DstIP, a.SrcMAC, a.DstMAC = Dest4, Source4, macDest, macN1
				h := wire.BTH{Opcode: wire.OpRCAck, PKey: 0xffff, DestQP: 100, PSN: 0x1234}
				th := wire.TransportHeaders{AETH: wire.AETH{Syndrome: 0x1f, MSN: 9}}
				return enc.RoCE(b, &a, &h, &th, nil)
			}},
		{"ud-send-only-ipv4", roceFacts(0x64, 0x333, "00"),
			func(b []byte) (int, error) {
				a := dataAddr(false)
				h := wire.BTH{Opcode: wire.OpUDSendOnly, PKey: 0xffff, DestQP: 0x333, PSN: 1}
				th := wire.TransportHeaders{DETH: wire.DETH{QKey: 0x11111111, SrcQP: 0x222}}
				return enc.RoCE(b, &a, &h, &th, make([]byte, 32))
			}},
		{"cm-req-ipv4", map[string]string{"infiniband.cm.req.localqpn": "0x000064", "infiniband.bth.destqp": "0x000001"},
			func(b []byte) (int, error) { a := dataAddr(false); m := req(); return enc.CM(b, &a, 1, &m) }},
		{"cm-rep-ipv4", map[string]string{"infiniband.cm.rep.localqpn": "0x0000c8"},
			func(b []byte) (int, error) {
				a := dataAddr(false)
				a.SrcIP, a.DstIP, a.SrcMAC, a.DstMAC = Dest4, Source4, macDest, macN1
				m := wire.CMMessage{Method: wire.MethodSend, TransactionID: 0x1122334455667788, AttrID: wire.CMAttrREP,
					LocalCommID: 0x01020304, RemoteCommID: 0x0a0b0c0d, LocalQPN: 200, StartingPSN: 0x4321,
					LocalCAGUID: 0x0002c90300d4e5f6, RNRRetryCount: 7, TargetACKDelay: 15}
				return enc.CM(b, &a, 1, &m)
			}},
		{"cm-rtu-ipv4", nil,
			func(b []byte) (int, error) {
				a := dataAddr(false)
				m := wire.CMMessage{Method: wire.MethodSend, TransactionID: 0x1122334455667788, AttrID: wire.CMAttrRTU,
					LocalCommID: 0x0a0b0c0d, RemoteCommID: 0x01020304}
				return enc.CM(b, &a, 2, &m)
			}},
		{"cm-dreq-ipv4", nil,
			func(b []byte) (int, error) {
				a := dataAddr(false)
				m := wire.CMMessage{Method: wire.MethodSend, TransactionID: 0x99, AttrID: wire.CMAttrDREQ,
					LocalCommID: 0x0a0b0c0d, RemoteCommID: 0x01020304, RemoteQPN: 200}
				return enc.CM(b, &a, 3, &m)
			}},
		{"cm-drep-ipv4", nil,
			func(b []byte) (int, error) {
				a := dataAddr(false)
				a.SrcIP, a.DstIP, a.SrcMAC, a.DstMAC = Dest4, Source4, macDest, macN1
				m := wire.CMMessage{Method: wire.MethodSend, TransactionID: 0x99, AttrID: wire.CMAttrDREP,
					LocalCommID: 0x01020304, RemoteCommID: 0x0a0b0c0d}
				return enc.CM(b, &a, 2, &m)
			}},
		{"rate-advice-ipv4", roceFacts(0xc0, 100, "00"),
			func(b []byte) (int, error) {
				a := cnpAddr(false)
				r := wire.RateAdvice{RateMbps: 40000, DestQP: 100, SrcQP: 0}
				return enc.RateAdvice(b, &a, &r)
			}},
		{"rate-advice-ipv6", roceFacts(0xc0, 100, "00"),
			func(b []byte) (int, error) {
				a := cnpAddr(true)
				r := wire.RateAdvice{RateMbps: 25000, DestQP: 100, SrcQP: 7}
				return enc.RateAdvice(b, &a, &r)
			}},
		{"fcn-ipv6", map[string]string{"udp.dstport": "1021", "ipv6.flow": "0x01cafe"},
			func(b []byte) (int, error) {
				a := wire.Addressing{DstMAC: macN1, SrcMAC: macDest, SrcIP: P6, DstIP: PE6, FlowLabel: 0x1cafe, SrcPort: 0xf00d}
				m := wire.FCNMessage{FlowLabel: 0x1cafe, Level: 5}
				return enc.FCN(b, &a, &m)
			}},
		{"tunnel-rc-write-ipv6-in-ipv6", roceFacts(0x0a, 200, "00"),
			func(b []byte) (int, error) {
				a := dataAddr(true)
				a.Tunnel = wire.Tunnel{Present: true, Src: PE6, Dst: P6, FlowLabel: 0x1cafe, TrafficClass: 0x02}
				h := wire.BTH{Opcode: wire.OpRCWriteOnly, PKey: 0xffff, DestQP: 200, PSN: 0x10}
				th := wire.TransportHeaders{RETH: wire.RETH{VA: 0x1000, RKey: 0x42, DMALen: 128}}
				return enc.RoCE(b, &a, &h, &th, make([]byte, 128))
			}},
	}
	for _, s := range steps {
		if err := add(s.name, s.expect, s.build); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// roceFacts are the BTH facts tshark must show: opcode (decimal), DestQP and
// byte 4 as tshark's infiniband.reserved (hex).
func roceFacts(op uint8, destQP uint32, byte4 string) map[string]string {
	return map[string]string{
		"infiniband.bth.opcode": fmt.Sprint(op),
		"infiniband.bth.destqp": fmt.Sprintf("0x%06x", destQP),
		"infiniband.reserved":   byte4,
	}
}

// Broken returns damaged copies of corpus frames, each with the sentinel
// error its decoding must wrap.
func Broken(frames []Frame) []Frame {
	byName := map[string][]byte{}
	for _, f := range frames {
		byName[f.Name] = f.Bytes
	}
	damage := func(name, from string, want error, f func(b []byte) []byte) Frame {
		b := append([]byte(nil), byName[from]...)
		return Frame{Name: name, Bytes: f(b), Broken: true, Want: want}
	}
	return []Frame{
		// Flip a byte of the extension fields: only the ICRC can tell.
		damage("bad-icrc", "longhaul-roce-ipv4-sec7", wire.ErrICRC, func(b []byte) []byte {
			b[14+20+8+12+2] ^= 0x01
			return b
		}),
		damage("bad-icmpv6-checksum", "longhaul-icmpv6-sec7", wire.ErrChecksum, func(b []byte) []byte {
			b[14+40+2] ^= 0xff
			return b
		}),
		damage("truncated", "cnp-ipv6", wire.ErrTruncated, func(b []byte) []byte { return b[:14+40+4] }),
	}
}
