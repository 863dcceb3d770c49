package wire

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// cmMAD builds a 256-byte MAD from hand-written hex: the 24-byte common
// header, the attribute data from its offset 0, and the private data at its
// offset in the attribute data. Everything else is zero.
func cmMAD(t testing.TB, header, attr string, privOff int, priv string) []byte {
	t.Helper()
	b := make([]byte, MADLen)
	h := specHex(t, header)
	if len(h) != madHeaderLen {
		t.Fatalf("header literal is %d bytes, want %d", len(h), madHeaderLen)
	}
	copy(b, h)
	a := specHex(t, attr)
	if len(a) > privOff {
		t.Fatalf("attribute literal of %d bytes runs into the private data at %d", len(a), privOff)
	}
	copy(b[madHeaderLen:], a)
	p := specHex(t, priv)
	if madHeaderLen+privOff+len(p) > MADLen {
		t.Fatalf("private data literal too long")
	}
	copy(b[madHeaderLen+privOff:], p)
	return b
}

var (
	cmGIDA = netip.MustParseAddr("::ffff:10.0.0.1").As16()
	cmGIDB = netip.MustParseAddr("::ffff:10.0.0.2").As16()
)

// cmGolden holds one MAD of each parsed attribute, written by hand from IBA
// Vol 1 Tables 106-113 (offsets cross-checked with Linux's
// include/rdma/ibta_vol1_c12.h and Wireshark's infiniband.cm.* fields), and
// the struct each decodes to. Every bit field holds a value other than zero
// and all ones where it can, so a field at the wrong offset or bit shows.
//
// The exchange is A (10.0.0.1, QP 0xabcdef, comm ID 0x11223344) connecting
// to B (10.0.0.2, QP 0x123456, comm ID 0x55667788), then disconnecting.
func cmGolden(t testing.TB) []struct {
	desc string
	mad  []byte
	want CMMessage
} {
	const tid = 0x0123456789abcdef
	hdr := func(attr string) string {
		// BaseVersion 1, class CM, class version 2, method Send, status 0,
		// class specific 0, TID, attribute ID, reserved, attribute modifier 0.
		return "01 07 02 03 | 0000 | 0000 | 0123456789abcdef | " + attr + " | 0000 | 00000000"
	}
	reqPriv := "00 40 9c41 | 00000000 00000000 00000000 0a000001 | 00000000 00000000 00000000 0a000002"
	req := cmMAD(t, hdr("0010"),
		"11223344 | 00000000 | 0000000001064e21 | 0002c90300a1b2c3 | 00000000 | 0badf00d |"+
			// 32: Local QPN | Responder Resources; Local EECN | Initiator Depth
			"abcdef 10 | 0a0b0c 08 |"+
			// 40: Remote EECN | RemoteCMRespTO 20, TST 1 (UC), E2E 1: 10100 01 1
			"0d0e0f a3 |"+
			// 44: Starting PSN | LocalCMRespTO 19, Retry Count 6: 10011 110
			"5a5a5a 9e |"+
			// 48: P_Key | PathMTU 5 (4096), RDC 1, RNR retry 6: 0101 1 110 | MaxCMRetries 15, SRQ 1, ext 1: 1111 1 001
			"ffff 5e f9 |"+
			// 52: primary local LID, remote LID, local GID (56), remote GID (72)
			"0001 0002 | 00000000000000000000ffff0a000001 | 00000000000000000000ffff0a000002 |"+
			// 88: flow label 0x12345 (20 bits), 6 reserved, packet rate 16: 0001 0010 0011 0100 0101 000000 010000
			"12345010 |"+
			// 92: traffic class, hop limit, SL 3 + subnet local 1: 0011 1 000, local ACK timeout 18: 10010 000
			"6a 40 38 90",
		reqPrivateOff, reqPriv)
	rep := cmMAD(t, hdr("0013"),
		"55667788 | 11223344 | 0badf00e | 123456 00 | 0a0b0d 00 | a5a5a5 00 |"+
			// 24: responder resources, initiator depth,
			// target ACK delay 15, failover 2, E2E 1: 01111 10 1,
			// RNR retry 7, SRQ 1: 111 1 0000
			"10 08 7d f0 |"+
			"0002c90300d4e5f6",
		repPrivateOff, "01020304")
	rtu := cmMAD(t, hdr("0014"), "11223344 | 55667788", rtuPrivateOff, "cafe")
	dreq := cmMAD(t, hdr("0015"), "11223344 | 55667788 | 123456 00", dreqPrivateOff, "")
	drep := cmMAD(t, hdr("0016"), "55667788 | 11223344", drepPrivateOff, "")
	// MRA of a REP (Message MRAed 1: 01 000000), service timeout 20: 10100 000.
	mra := cmMAD(t, hdr("0011"), "55667788 | 11223344 | 40 a0", mraPrivateOff, "")
	// REJ of a REQ (00 000000), 2 bytes of ARI (0000010 0), reason 28 consumer reject.
	rej := cmMAD(t, hdr("0012"), "00000000 | 11223344 | 00 04 001c | abcd", rejPrivateOff, "")

	return []struct {
		desc string
		mad  []byte
		want CMMessage
	}{{
		desc: "REQ",
		mad:  req,
		want: CMMessage{
			Method: MethodSend, TransactionID: tid, AttrID: CMAttrREQ,
			LocalCommID: 0x11223344, ServiceID: 0x0000000001064e21, LocalCAGUID: 0x0002c90300a1b2c3,
			LocalQKey: 0x0badf00d, LocalQPN: 0xabcdef, ResponderResources: 0x10,
			LocalEECN: 0x0a0b0c, InitiatorDepth: 8, RemoteEECN: 0x0d0e0f,
			RemoteCMResponseTimeout: 20, TransportServiceType: 1, EndToEndFlowCtrl: true,
			StartingPSN: 0x5a5a5a, LocalCMResponseTimeout: 19, RetryCount: 6,
			PKey: 0xffff, PathMTU: 5, RDCExists: true, RNRRetryCount: 6,
			MaxCMRetries: 15, SRQ: true, ExtendedTransportType: 1,
			PrimaryLocalLID: 1, PrimaryRemoteLID: 2,
			PrimaryLocalGID: cmGIDA, PrimaryRemoteGID: cmGIDB,
			PrimaryFlowLabel: 0x12345, PrimaryPacketRate: 16, PrimaryTrafficClass: 0x6a,
			PrimaryHopLimit: 0x40, PrimarySL: 3, PrimarySubnetLocal: true, PrimaryLocalACKTimeout: 18,
			PrivateData: req[madHeaderLen+reqPrivateOff:],
		},
	}, {
		desc: "REP",
		mad:  rep,
		want: CMMessage{
			Method: MethodSend, TransactionID: tid, AttrID: CMAttrREP,
			LocalCommID: 0x55667788, RemoteCommID: 0x11223344, LocalQKey: 0x0badf00e,
			LocalQPN: 0x123456, LocalEECN: 0x0a0b0d, StartingPSN: 0xa5a5a5,
			ResponderResources: 0x10, InitiatorDepth: 8,
			TargetACKDelay: 15, FailoverAccepted: 2, EndToEndFlowCtrl: true,
			RNRRetryCount: 7, SRQ: true, LocalCAGUID: 0x0002c90300d4e5f6,
			PrivateData: rep[madHeaderLen+repPrivateOff:],
		},
	}, {
		desc: "RTU",
		mad:  rtu,
		want: CMMessage{
			Method: MethodSend, TransactionID: tid, AttrID: CMAttrRTU,
			LocalCommID: 0x11223344, RemoteCommID: 0x55667788,
			PrivateData: rtu[madHeaderLen+rtuPrivateOff:],
		},
	}, {
		desc: "DREQ",
		mad:  dreq,
		want: CMMessage{
			Method: MethodSend, TransactionID: tid, AttrID: CMAttrDREQ,
			LocalCommID: 0x11223344, RemoteCommID: 0x55667788, RemoteQPN: 0x123456,
			PrivateData: dreq[madHeaderLen+dreqPrivateOff:],
		},
	}, {
		desc: "DREP",
		mad:  drep,
		want: CMMessage{
			Method: MethodSend, TransactionID: tid, AttrID: CMAttrDREP,
			LocalCommID: 0x55667788, RemoteCommID: 0x11223344,
			PrivateData: drep[madHeaderLen+drepPrivateOff:],
		},
	}, {
		desc: "MRA",
		mad:  mra,
		want: CMMessage{
			Method: MethodSend, TransactionID: tid, AttrID: CMAttrMRA,
			LocalCommID: 0x55667788, RemoteCommID: 0x11223344, MessageSel: 1, ServiceTimeout: 20,
			PrivateData: mra[madHeaderLen+mraPrivateOff:],
		},
	}, {
		desc: "REJ",
		mad:  rej,
		want: CMMessage{
			Method: MethodSend, TransactionID: tid, AttrID: CMAttrREJ,
			RemoteCommID: 0x11223344, MessageSel: 0, RejectReason: 28, RejectInfo: []byte{0xab, 0xcd},
			PrivateData: rej[madHeaderLen+rejPrivateOff:],
		},
	}}
}

func TestCMGolden(t *testing.T) {
	for _, tt := range cmGolden(t) {
		t.Run(tt.desc, func(t *testing.T) {
			got, err := DecodeCM(tt.mad)
			if err != nil {
				t.Fatalf("DecodeCM: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("DecodeCM (-want, +got):\n%s", diff)
			}
			b := bytes.Repeat([]byte{0xEE}, MADLen+4)
			n, err := tt.want.Encode(b)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if n != MADLen {
				t.Errorf("Encode returned %d, want %d", n, MADLen)
			}
			if diff := cmp.Diff(tt.mad, b[:n]); diff != "" {
				t.Errorf("Encode bytes (-want, +got):\n%s", diff)
			}
			if !bytes.Equal(b[MADLen:], []byte{0xEE, 0xEE, 0xEE, 0xEE}) {
				t.Errorf("Encode wrote past MADLen")
			}
		})
	}
}

func TestCMAttrString(t *testing.T) {
	for id, want := range map[CMAttrID]string{
		CMAttrREQ: "REQ", CMAttrMRA: "MRA", CMAttrREJ: "REJ", CMAttrREP: "REP", CMAttrRTU: "RTU",
		CMAttrDREQ: "DREQ", CMAttrDREP: "DREP", CMAttrSIDRREQ: "SIDR_REQ", CMAttrSIDRREP: "SIDR_REP",
		CMAttrLAP: "LAP", CMAttrAPR: "APR", 0x0001: "CMAttrID(0x0001)",
	} {
		if got := id.String(); got != want {
			t.Errorf("CMAttrID(%#x).String() = %q, want %q", uint16(id), got, want)
		}
	}
}

// TestCMFlowLearning walks the exchange of cmGolden the way the doc comment
// of FlowQPNs tells a switch to, and checks it recovers (A, B, qpA, qpB).
func TestCMFlowLearning(t *testing.T) {
	a, b := GIDAddr(cmGIDA), GIDAddr(cmGIDB)
	if a != netip.MustParseAddr("10.0.0.1") || b != netip.MustParseAddr("10.0.0.2") {
		t.Fatalf("GIDAddr = %v, %v; want IPv4 addresses", a, b)
	}
	if v6 := GIDAddr(destOptsDst); v6 != netip.MustParseAddr("2001:db8::2") {
		t.Errorf("GIDAddr(2001:db8::2) = %v", v6)
	}
	msgs := map[string]CMMessage{}
	for _, g := range cmGolden(t) {
		m, err := DecodeCM(g.mad)
		if err != nil {
			t.Fatal(err)
		}
		msgs[g.desc] = m
	}
	type key struct {
		node   netip.Addr
		commID uint32
	}
	type flow struct {
		src, dst     netip.Addr
		srcQP, dstQP uint32
	}
	pending := map[key]flow{}

	req := msgs["REQ"] // A -> B
	qp, peer, ok := req.FlowQPNs()
	if !ok || qp != 0xabcdef || peer != 0 {
		t.Fatalf("REQ FlowQPNs = %#x, %#x, %v", qp, peer, ok)
	}
	pending[key{GIDAddr(req.PrimaryLocalGID), req.LocalCommID}] = flow{
		src: GIDAddr(req.PrimaryLocalGID), dst: GIDAddr(req.PrimaryRemoteGID), srcQP: qp}

	rep := msgs["REP"] // B -> A: key on the IP destination A and the requester's comm ID
	qp, peer, ok = rep.FlowQPNs()
	if !ok || qp != 0x123456 || peer != 0 {
		t.Fatalf("REP FlowQPNs = %#x, %#x, %v", qp, peer, ok)
	}
	f, found := pending[key{a, rep.RemoteCommID}]
	if !found {
		t.Fatalf("REP remote comm ID %#x matches no REQ", rep.RemoteCommID)
	}
	f.dstQP = qp
	if want := (flow{a, b, 0xabcdef, 0x123456}); f != want {
		t.Errorf("learnt %+v, want %+v", f, want)
	}
	rtu := msgs["RTU"]
	if rtu.LocalCommID != req.LocalCommID || rtu.RemoteCommID != rep.LocalCommID {
		t.Errorf("RTU comm IDs %#x, %#x do not name the connection", rtu.LocalCommID, rtu.RemoteCommID)
	}
	if _, _, ok := rtu.FlowQPNs(); ok {
		t.Errorf("RTU FlowQPNs ok, want no QPN")
	}

	dreq := msgs["DREQ"] // A -> B: names B's QP, the DestQP of A-to-B data
	qp, peer, ok = dreq.FlowQPNs()
	if !ok || qp != 0 || peer != f.dstQP {
		t.Errorf("DREQ FlowQPNs = %#x, %#x, %v; want 0, %#x, true", qp, peer, ok, f.dstQP)
	}
}

func TestCMDecodeErrors(t *testing.T) {
	good := cmGolden(t)[0].mad
	with := func(off int, v ...byte) []byte {
		b := bytes.Clone(good)
		copy(b[off:], v)
		return b
	}
	rejLen73 := bytes.Clone(cmGolden(t)[6].mad)
	rejLen73[madHeaderLen+9] = 73 << 1
	for _, tt := range []struct {
		desc string
		in   []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"255 bytes", good[:MADLen-1], ErrTruncated},
		{"base version 2", with(0, 2), ErrUnsupported},
		{"subnet administration class", with(1, 0x03), ErrUnsupported},
		{"class version 1", with(2, 1), ErrUnsupported},
		{"ClassPortInfo", with(16, 0x00, 0x01), ErrUnsupported},
		{"SIDR_REQ", with(16, 0x00, 0x17), ErrUnsupported},
		{"LAP", with(16, 0x00, 0x19), ErrUnsupported},
		{"unknown attribute", with(16, 0xff, 0x10), ErrUnsupported},
		{"reject info length 73", rejLen73, ErrLength},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if _, err := DecodeCM(tt.in); !errors.Is(err, tt.want) {
				t.Errorf("DecodeCM error = %v, want %v", err, tt.want)
			}
		})
	}
	// A longer buffer (the MAD followed by the ICRC) decodes the same.
	m, err := DecodeCM(append(bytes.Clone(good), 1, 2, 3, 4))
	if err != nil || len(m.PrivateData) != cmAttrLen-reqPrivateOff {
		t.Errorf("DecodeCM of 260 bytes: %v, %d bytes of private data", err, len(m.PrivateData))
	}
}

func TestCMEncodeErrors(t *testing.T) {
	golden := cmGolden(t)
	req, rep, dreq, mra, rej := golden[0].want, golden[1].want, golden[3].want, golden[5].want, golden[6].want
	mod := func(m CMMessage, f func(*CMMessage)) CMMessage { f(&m); return m }
	for _, tt := range []struct {
		desc string
		msg  CMMessage
		buf  int
		want error
	}{
		{"short buffer", req, MADLen - 1, ErrShortBuffer},
		{"unknown attribute", CMMessage{AttrID: 0x0001}, MADLen, ErrUnsupported},
		{"SIDR_REP", CMMessage{AttrID: CMAttrSIDRREP}, MADLen, ErrUnsupported},
		{"req local qpn 25 bits", mod(req, func(m *CMMessage) { m.LocalQPN = 1 << 24 }), MADLen, ErrInvalid},
		{"req starting psn", mod(req, func(m *CMMessage) { m.StartingPSN = 1 << 24 }), MADLen, ErrInvalid},
		{"req remote eecn", mod(req, func(m *CMMessage) { m.RemoteEECN = 1 << 24 }), MADLen, ErrInvalid},
		{"req path mtu", mod(req, func(m *CMMessage) { m.PathMTU = 16 }), MADLen, ErrInvalid},
		{"req transport service type", mod(req, func(m *CMMessage) { m.TransportServiceType = 4 }), MADLen, ErrInvalid},
		{"req flow label", mod(req, func(m *CMMessage) { m.PrimaryFlowLabel = 1 << 20 }), MADLen, ErrInvalid},
		{"req packet rate", mod(req, func(m *CMMessage) { m.PrimaryPacketRate = 64 }), MADLen, ErrInvalid},
		{"req sl", mod(req, func(m *CMMessage) { m.PrimarySL = 16 }), MADLen, ErrInvalid},
		{"req ack timeout", mod(req, func(m *CMMessage) { m.PrimaryLocalACKTimeout = 32 }), MADLen, ErrInvalid},
		{"req private data 93 bytes", mod(req, func(m *CMMessage) { m.PrivateData = make([]byte, 93) }), MADLen, ErrInvalid},
		{"rep local qpn", mod(rep, func(m *CMMessage) { m.LocalQPN = 1 << 24 }), MADLen, ErrInvalid},
		{"rep failover", mod(rep, func(m *CMMessage) { m.FailoverAccepted = 4 }), MADLen, ErrInvalid},
		{"rep rnr retry", mod(rep, func(m *CMMessage) { m.RNRRetryCount = 8 }), MADLen, ErrInvalid},
		{"rep private data 197 bytes", mod(rep, func(m *CMMessage) { m.PrivateData = make([]byte, 197) }), MADLen, ErrInvalid},
		{"dreq remote qpn", mod(dreq, func(m *CMMessage) { m.RemoteQPN = 1 << 24 }), MADLen, ErrInvalid},
		{"mra message", mod(mra, func(m *CMMessage) { m.MessageSel = 4 }), MADLen, ErrInvalid},
		{"mra service timeout", mod(mra, func(m *CMMessage) { m.ServiceTimeout = 32 }), MADLen, ErrInvalid},
		{"rej reject info 73 bytes", mod(rej, func(m *CMMessage) { m.RejectInfo = make([]byte, 73) }), MADLen, ErrInvalid},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if _, err := tt.msg.Encode(make([]byte, tt.buf)); !errors.Is(err, tt.want) {
				t.Errorf("Encode error = %v, want %v", err, tt.want)
			}
		})
	}
	// Fields of other attributes are ignored, not range-checked.
	rtu := golden[2].want
	rtu.LocalQPN = 1 << 30
	if _, err := rtu.Encode(make([]byte, MADLen)); err != nil {
		t.Errorf("RTU with a REQ field out of range: %v", err)
	}
}

func TestCMPrivateDataShortIsZeroFilled(t *testing.T) {
	m := CMMessage{Method: MethodSend, AttrID: CMAttrRTU, LocalCommID: 1, RemoteCommID: 2, PrivateData: []byte{9}}
	b := bytes.Repeat([]byte{0xEE}, MADLen)
	if _, err := m.Encode(b); err != nil {
		t.Fatal(err)
	}
	want := cmMAD(t, "01 07 02 03 0000 0000 0000000000000000 0014 0000 00000000", "00000001 00000002", rtuPrivateOff, "09")
	if diff := cmp.Diff(want, b); diff != "" {
		t.Errorf("Encode (-want, +got):\n%s", diff)
	}
}

func TestCMZeroAlloc(t *testing.T) {
	b := make([]byte, MADLen)
	for _, g := range cmGolden(t) {
		m := g.want
		if a := testing.AllocsPerRun(100, func() {
			if _, err := m.Encode(b); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("%s: Encode allocates %v times", g.desc, a)
		}
		if a := testing.AllocsPerRun(100, func() {
			if _, err := DecodeCM(g.mad); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("%s: DecodeCM allocates %v times", g.desc, a)
		}
	}
}

func FuzzDecodeCM(f *testing.F) {
	for _, g := range cmGolden(f) {
		f.Add(g.mad)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := DecodeCM(in)
		if err != nil {
			return
		}
		b := make([]byte, MADLen)
		if _, err := m.Encode(b); err != nil {
			t.Fatalf("Encode(DecodeCM(x)): %v", err)
		}
		m2, err := DecodeCM(b)
		if err != nil {
			t.Fatalf("DecodeCM(Encode(DecodeCM(x))): %v", err)
		}
		if diff := cmp.Diff(m, m2, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("round trip (-first, +second):\n%s", diff)
		}
	})
}
