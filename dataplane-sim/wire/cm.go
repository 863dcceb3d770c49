package wire

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// InfiniBand Communication Management (IBA Vol 1, chapter 12) sets up and
// tears down connected QPs. In RoCEv2 its MADs travel as UD SEND_ONLY packets
// to the GSI queue pair (BTH DestQP 1, DETH Q_Key 0x80010000), 256 bytes
// after the BTH and DETH. A switch that sees the exchange learns which QPs
// talk between which addresses (the Fast CNP white paper's flow table); see
// FlowQPNs.
//
// Field offsets follow IBA Vol 1 Tables 106-113 and agree with the Linux
// kernel's include/rdma/ibta_vol1_c12.h and Wireshark's packet-infiniband.c
// dissector (infiniband.cm.*). Bit positions inside a byte count from the
// most significant bit, as the IBA tables do.

// MADLen is the size of every CM MAD: the common header and the attribute data.
const MADLen = 256

// madHeaderLen is the size of the common MAD header; cmAttrLen what follows.
const (
	madHeaderLen = 24
	cmAttrLen    = MADLen - madHeaderLen
)

// GSIQP is the queue pair number of the General Services Interface, to which
// CM MADs are sent.
const GSIQP = 1

// GSIQKey is the well-known Q_Key of QP1 (IBA Vol 1, 10.2.4.1); CM MADs carry
// it in the DETH.
const GSIQKey = 0x80010000

// MAD common header values for CM.
const (
	MADBaseVersion = 1
	MgmtClassCM    = 0x07
	// CMClassVersion is the CM class version whose attribute layouts this
	// file implements (IBA 1.2 and later; Linux's IB_CM_CLASS_VERSION).
	CMClassVersion = 2
	// MethodSend is the only method CM uses for its connection messages.
	MethodSend = 0x03
)

// CMAttrID is the Attribute ID of a CM MAD (IBA Vol 1, Table 104).
type CMAttrID uint16

// CM attribute IDs. DecodeCM parses the first seven; the others are named
// for logs but reported as ErrUnsupported.
const (
	CMAttrREQ     CMAttrID = 0x0010 // ConnectRequest
	CMAttrMRA     CMAttrID = 0x0011 // MsgRcptAck
	CMAttrREJ     CMAttrID = 0x0012 // ConnectReject
	CMAttrREP     CMAttrID = 0x0013 // ConnectReply
	CMAttrRTU     CMAttrID = 0x0014 // ReadyToUse
	CMAttrDREQ    CMAttrID = 0x0015 // DisconnectRequest
	CMAttrDREP    CMAttrID = 0x0016 // DisconnectReply
	CMAttrSIDRREQ CMAttrID = 0x0017 // ServiceIDResReq
	CMAttrSIDRREP CMAttrID = 0x0018 // ServiceIDResReqResp
	CMAttrLAP     CMAttrID = 0x0019 // LoadAlternatePath
	CMAttrAPR     CMAttrID = 0x001A // AlternatePathResponse
)

// String returns the IBA short name of the attribute ("REQ", "DREP", ...).
func (a CMAttrID) String() string {
	switch a {
	case CMAttrREQ:
		return "REQ"
	case CMAttrMRA:
		return "MRA"
	case CMAttrREJ:
		return "REJ"
	case CMAttrREP:
		return "REP"
	case CMAttrRTU:
		return "RTU"
	case CMAttrDREQ:
		return "DREQ"
	case CMAttrDREP:
		return "DREP"
	case CMAttrSIDRREQ:
		return "SIDR_REQ"
	case CMAttrSIDRREP:
		return "SIDR_REP"
	case CMAttrLAP:
		return "LAP"
	case CMAttrAPR:
		return "APR"
	}
	return fmt.Sprintf("CMAttrID(%#04x)", uint16(a))
}

// Private data areas: offset in the attribute data and length, per attribute.
const (
	reqPrivateOff  = 140
	mraPrivateOff  = 10
	rejPrivateOff  = 84
	repPrivateOff  = 36
	rtuPrivateOff  = 8
	dreqPrivateOff = 12
	drepPrivateOff = 8
)

// REJ Additional Reject Information.
const (
	rejARIOff = 12
	// MaxCMRejectInfo is the size of the REJ's Additional Reject Information.
	MaxCMRejectInfo = 72
)

// CMMessage is a CM MAD of one of the parsed attributes. Fields that the
// attribute does not carry are zero after DecodeCM and ignored by Encode;
// the comments say which attribute carries what. Reserved bits and the
// alternate path of a REQ are not kept: Encode writes them as zero.
//
// 24-bit fields (QPNs, EECNs, PSNs) and narrower bit fields are range-checked
// by Encode.
type CMMessage struct {
	// Common MAD header. BaseVersion, MgmtClass and ClassVersion are fixed
	// (MADBaseVersion, MgmtClassCM, CMClassVersion) and not stored.
	Method        uint8 // including the R (response) bit; CM sends MethodSend
	Status        uint16
	ClassSpecific uint16
	TransactionID uint64
	AttrID        CMAttrID
	AttrModifier  uint32

	// LocalCommID is the sender's communication ID (all attributes).
	// RemoteCommID is the receiver's (all but REQ; zero in a REJ or MRA of a
	// REQ whose sender has no ID for it yet).
	LocalCommID, RemoteCommID uint32

	// REQ and REP.
	LocalQKey          uint32
	LocalQPN           uint32 // 24 bits: the sender's QP
	LocalEECN          uint32 // 24 bits
	StartingPSN        uint32 // 24 bits
	LocalCAGUID        uint64
	ResponderResources uint8
	InitiatorDepth     uint8
	EndToEndFlowCtrl   bool
	RNRRetryCount      uint8 // 3 bits
	SRQ                bool

	// REQ only.
	ServiceID               uint64
	RemoteEECN              uint32 // 24 bits
	RemoteCMResponseTimeout uint8  // 5 bits
	TransportServiceType    uint8  // 2 bits: 0 RC, 1 UC, 2 RD
	LocalCMResponseTimeout  uint8  // 5 bits
	RetryCount              uint8  // 3 bits
	PKey                    uint16
	PathMTU                 uint8 // 4 bits, IBA encoding: 1 = 256 ... 5 = 4096
	RDCExists               bool
	MaxCMRetries            uint8 // 4 bits
	ExtendedTransportType   uint8 // 3 bits: 1 = XRC
	PrimaryLocalLID         uint16
	PrimaryRemoteLID        uint16
	// PrimaryLocalGID and PrimaryRemoteGID are the requester's and the
	// responder's port GIDs. In RoCEv2 they are IPv6 addresses, or IPv4
	// addresses mapped as ::ffff:a.b.c.d (see GIDAddr).
	PrimaryLocalGID        [16]byte
	PrimaryRemoteGID       [16]byte
	PrimaryFlowLabel       uint32 // 20 bits
	PrimaryPacketRate      uint8  // 6 bits
	PrimaryTrafficClass    uint8
	PrimaryHopLimit        uint8
	PrimarySL              uint8 // 4 bits
	PrimarySubnetLocal     bool
	PrimaryLocalACKTimeout uint8 // 5 bits

	// REP only.
	TargetACKDelay   uint8 // 5 bits
	FailoverAccepted uint8 // 2 bits

	// DREQ only: the QPN (or EECN) at the receiver of the DREQ. 24 bits.
	RemoteQPN uint32

	// MRA and REJ: which message is acknowledged or rejected (Message MRAed,
	// Message REJected; 2 bits): 0 REQ, 1 REP, 2 LAP or other.
	MessageSel uint8
	// MRA only: Service Timeout, 5 bits.
	ServiceTimeout uint8
	// REJ only: the rejection reason (IBA Table 109) and the Additional
	// Reject Information, Reject Info Length bytes of it (at most
	// MaxCMRejectInfo). DecodeCM returns a sub-slice of its input.
	RejectReason uint16
	RejectInfo   []byte

	// PrivateData is the attribute's whole private data area (92 bytes in a
	// REQ, 196 in a REP, ...; with rdma_cm it starts with the IP CM header).
	// DecodeCM returns a sub-slice of its input (no copy); Encode copies it
	// and zero-fills the rest of the area.
	PrivateData []byte
}

// GIDAddr returns a GID as an IP address: an IPv4 address for an
// IPv4-mapped GID (RoCEv2 over IPv4), otherwise the IPv6 address.
func GIDAddr(gid [16]byte) netip.Addr { return netip.AddrFrom16(gid).Unmap() }

// FlowQPNs reports the queue pair numbers this message gives away about its
// connection, seen from the MAD's sender (the IP source of the packet that
// carried it) and receiver (the IP destination). Zero means "not carried":
// QP0 is never a connected QP. ok is false for attributes that carry no QPN.
//
//	REQ:  senderQPN = LocalQPN, the requester's QP
//	REP:  senderQPN = LocalQPN, the responder's QP
//	DREQ: receiverQPN = RemoteQPN, the QP of whoever receives the DREQ
//
// A switch learns a flow (srcIP, dstIP, srcQP, dstQP) by correlating the
// messages of one connection; communication IDs are unique only within one
// CM, so every key includes the address of the node that chose the ID:
//
//  1. REQ from A to B: keep pending[(A, REQ.LocalCommID)] = (A, B, qpA).
//     A and B are the IP source and destination, which in RoCEv2 equal
//     PrimaryLocalGID and PrimaryRemoteGID.
//  2. REP from B to A: look up pending[(A, REP.RemoteCommID)]; REP.LocalQPN
//     is qpB, so (A, B, qpA, qpB) is known. Remember B's REP.LocalCommID.
//  3. RTU from A to B (LocalCommID = A's, RemoteCommID = B's): the
//     connection is up; install the flow in both directions. Data from A to
//     B carries BTH DestQP = qpB, data from B to A DestQP = qpA.
//     A REJ instead (RemoteCommID = the ID of its receiver) drops the
//     pending entry; an MRA only means "wait longer".
//  4. DREQ from X to Y: RemoteQPN is Y's QP, so (dstIP Y, DestQP RemoteQPN)
//     is the data-path key of the X-to-Y direction: remove the flow, as the
//     white paper does on seeing a disconnect request. DREP confirms it.
func (m *CMMessage) FlowQPNs() (senderQPN, receiverQPN uint32, ok bool) {
	switch m.AttrID {
	case CMAttrREQ, CMAttrREP:
		return m.LocalQPN, 0, true
	case CMAttrDREQ:
		return 0, m.RemoteQPN, true
	}
	return 0, 0, false
}

// DecodeCM reads a CM MAD from the start of b (bytes after MADLen are
// ignored). Errors: ErrTruncated if b is shorter than MADLen; ErrUnsupported
// for another base version, management class or class version, or an
// attribute other than REQ, MRA, REJ, REP, RTU, DREQ and DREP; ErrLength for
// a REJ whose Reject Info Length exceeds MaxCMRejectInfo.
func DecodeCM(b []byte) (CMMessage, error) {
	if len(b) < MADLen {
		return CMMessage{}, fmt.Errorf("cm: mad needs %d bytes, have %d: %w", MADLen, len(b), ErrTruncated)
	}
	if b[0] != MADBaseVersion || b[1] != MgmtClassCM || b[2] != CMClassVersion {
		return CMMessage{}, fmt.Errorf("cm: base version %d, class %#02x, class version %d (want %d, %#02x, %d): %w",
			b[0], b[1], b[2], MADBaseVersion, MgmtClassCM, CMClassVersion, ErrUnsupported)
	}
	m := CMMessage{
		Method:        b[3],
		Status:        binary.BigEndian.Uint16(b[4:6]),
		ClassSpecific: binary.BigEndian.Uint16(b[6:8]),
		TransactionID: binary.BigEndian.Uint64(b[8:16]),
		AttrID:        CMAttrID(binary.BigEndian.Uint16(b[16:18])),
		AttrModifier:  binary.BigEndian.Uint32(b[20:24]),
	}
	a := b[madHeaderLen:MADLen:MADLen]
	m.LocalCommID = cmU32(a, 0)
	switch m.AttrID {
	case CMAttrREQ:
		m.ServiceID = cmU64(a, 8)
		m.LocalCAGUID = cmU64(a, 16)
		m.LocalQKey = cmU32(a, 28)
		m.LocalQPN = cmU24(a, 32)
		m.ResponderResources = a[35]
		m.LocalEECN = cmU24(a, 36)
		m.InitiatorDepth = a[39]
		m.RemoteEECN = cmU24(a, 40)
		m.RemoteCMResponseTimeout = a[43] >> 3
		m.TransportServiceType = a[43] >> 1 & 3
		m.EndToEndFlowCtrl = a[43]&1 != 0
		m.StartingPSN = cmU24(a, 44)
		m.LocalCMResponseTimeout = a[47] >> 3
		m.RetryCount = a[47] & 7
		m.PKey = binary.BigEndian.Uint16(a[48:50])
		m.PathMTU = a[50] >> 4
		m.RDCExists = a[50]&0x08 != 0
		m.RNRRetryCount = a[50] & 7
		m.MaxCMRetries = a[51] >> 4
		m.SRQ = a[51]&0x08 != 0
		m.ExtendedTransportType = a[51] & 7
		m.PrimaryLocalLID = binary.BigEndian.Uint16(a[52:54])
		m.PrimaryRemoteLID = binary.BigEndian.Uint16(a[54:56])
		copy(m.PrimaryLocalGID[:], a[56:72])
		copy(m.PrimaryRemoteGID[:], a[72:88])
		m.PrimaryFlowLabel = cmU32(a, 88) >> 12
		m.PrimaryPacketRate = a[91] & 0x3F
		m.PrimaryTrafficClass = a[92]
		m.PrimaryHopLimit = a[93]
		m.PrimarySL = a[94] >> 4
		m.PrimarySubnetLocal = a[94]&0x08 != 0
		m.PrimaryLocalACKTimeout = a[95] >> 3
		m.PrivateData = a[reqPrivateOff:]
	case CMAttrMRA:
		m.RemoteCommID = cmU32(a, 4)
		m.MessageSel = a[8] >> 6
		m.ServiceTimeout = a[9] >> 3
		m.PrivateData = a[mraPrivateOff:]
	case CMAttrREJ:
		m.RemoteCommID = cmU32(a, 4)
		m.MessageSel = a[8] >> 6
		n := int(a[9] >> 1)
		if n > MaxCMRejectInfo {
			return CMMessage{}, fmt.Errorf("cm: rej: reject info length %d exceeds %d: %w", n, MaxCMRejectInfo, ErrLength)
		}
		m.RejectReason = binary.BigEndian.Uint16(a[10:12])
		m.RejectInfo = a[rejARIOff : rejARIOff+n : rejARIOff+n]
		m.PrivateData = a[rejPrivateOff:]
	case CMAttrREP:
		m.RemoteCommID = cmU32(a, 4)
		m.LocalQKey = cmU32(a, 8)
		m.LocalQPN = cmU24(a, 12)
		m.LocalEECN = cmU24(a, 16)
		m.StartingPSN = cmU24(a, 20)
		m.ResponderResources = a[24]
		m.InitiatorDepth = a[25]
		m.TargetACKDelay = a[26] >> 3
		m.FailoverAccepted = a[26] >> 1 & 3
		m.EndToEndFlowCtrl = a[26]&1 != 0
		m.RNRRetryCount = a[27] >> 5
		m.SRQ = a[27]&0x10 != 0
		m.LocalCAGUID = cmU64(a, 28)
		m.PrivateData = a[repPrivateOff:]
	case CMAttrRTU:
		m.RemoteCommID = cmU32(a, 4)
		m.PrivateData = a[rtuPrivateOff:]
	case CMAttrDREQ:
		m.RemoteCommID = cmU32(a, 4)
		m.RemoteQPN = cmU24(a, 8)
		m.PrivateData = a[dreqPrivateOff:]
	case CMAttrDREP:
		m.RemoteCommID = cmU32(a, 4)
		m.PrivateData = a[drepPrivateOff:]
	default:
		return CMMessage{}, fmt.Errorf("cm: attribute %v: %w", m.AttrID, ErrUnsupported)
	}
	return m, nil
}

// Encode writes the MAD into b and returns MADLen. Fields the attribute does
// not carry are ignored; reserved bits and unparsed fields are written as
// zero. Errors: ErrShortBuffer; ErrUnsupported for an attribute DecodeCM
// does not parse; ErrInvalid for a field wider than its bits or private data
// (or REJ information) longer than its area.
func (m *CMMessage) Encode(b []byte) (int, error) {
	if len(b) < MADLen {
		return 0, fmt.Errorf("cm: mad needs %d bytes, have %d: %w", MADLen, len(b), ErrShortBuffer)
	}
	privOff, err := m.check()
	if err != nil {
		return 0, err
	}
	b = b[:MADLen:MADLen]
	clear(b)
	b[0] = MADBaseVersion
	b[1] = MgmtClassCM
	b[2] = CMClassVersion
	b[3] = m.Method
	binary.BigEndian.PutUint16(b[4:6], m.Status)
	binary.BigEndian.PutUint16(b[6:8], m.ClassSpecific)
	binary.BigEndian.PutUint64(b[8:16], m.TransactionID)
	binary.BigEndian.PutUint16(b[16:18], uint16(m.AttrID))
	binary.BigEndian.PutUint32(b[20:24], m.AttrModifier)
	a := b[madHeaderLen:]
	binary.BigEndian.PutUint32(a[0:4], m.LocalCommID)
	switch m.AttrID {
	case CMAttrREQ:
		binary.BigEndian.PutUint64(a[8:16], m.ServiceID)
		binary.BigEndian.PutUint64(a[16:24], m.LocalCAGUID)
		binary.BigEndian.PutUint32(a[28:32], m.LocalQKey)
		binary.BigEndian.PutUint32(a[32:36], m.LocalQPN<<8|uint32(m.ResponderResources))
		binary.BigEndian.PutUint32(a[36:40], m.LocalEECN<<8|uint32(m.InitiatorDepth))
		binary.BigEndian.PutUint32(a[40:44], m.RemoteEECN<<8|
			uint32(m.RemoteCMResponseTimeout<<3|m.TransportServiceType<<1|cmBit(m.EndToEndFlowCtrl)))
		binary.BigEndian.PutUint32(a[44:48], m.StartingPSN<<8|uint32(m.LocalCMResponseTimeout<<3|m.RetryCount))
		binary.BigEndian.PutUint16(a[48:50], m.PKey)
		a[50] = m.PathMTU<<4 | cmBit(m.RDCExists)<<3 | m.RNRRetryCount
		a[51] = m.MaxCMRetries<<4 | cmBit(m.SRQ)<<3 | m.ExtendedTransportType
		binary.BigEndian.PutUint16(a[52:54], m.PrimaryLocalLID)
		binary.BigEndian.PutUint16(a[54:56], m.PrimaryRemoteLID)
		copy(a[56:72], m.PrimaryLocalGID[:])
		copy(a[72:88], m.PrimaryRemoteGID[:])
		binary.BigEndian.PutUint32(a[88:92], m.PrimaryFlowLabel<<12|uint32(m.PrimaryPacketRate))
		a[92] = m.PrimaryTrafficClass
		a[93] = m.PrimaryHopLimit
		a[94] = m.PrimarySL<<4 | cmBit(m.PrimarySubnetLocal)<<3
		a[95] = m.PrimaryLocalACKTimeout << 3
	case CMAttrMRA:
		binary.BigEndian.PutUint32(a[4:8], m.RemoteCommID)
		a[8] = m.MessageSel << 6
		a[9] = m.ServiceTimeout << 3
	case CMAttrREJ:
		binary.BigEndian.PutUint32(a[4:8], m.RemoteCommID)
		a[8] = m.MessageSel << 6
		a[9] = uint8(len(m.RejectInfo)) << 1
		binary.BigEndian.PutUint16(a[10:12], m.RejectReason)
		copy(a[rejARIOff:], m.RejectInfo)
	case CMAttrREP:
		binary.BigEndian.PutUint32(a[4:8], m.RemoteCommID)
		binary.BigEndian.PutUint32(a[8:12], m.LocalQKey)
		binary.BigEndian.PutUint32(a[12:16], m.LocalQPN<<8)
		binary.BigEndian.PutUint32(a[16:20], m.LocalEECN<<8)
		binary.BigEndian.PutUint32(a[20:24], m.StartingPSN<<8)
		a[24] = m.ResponderResources
		a[25] = m.InitiatorDepth
		a[26] = m.TargetACKDelay<<3 | m.FailoverAccepted<<1 | cmBit(m.EndToEndFlowCtrl)
		a[27] = m.RNRRetryCount<<5 | cmBit(m.SRQ)<<4
		binary.BigEndian.PutUint64(a[28:36], m.LocalCAGUID)
	case CMAttrRTU, CMAttrDREP:
		binary.BigEndian.PutUint32(a[4:8], m.RemoteCommID)
	case CMAttrDREQ:
		binary.BigEndian.PutUint32(a[4:8], m.RemoteCommID)
		binary.BigEndian.PutUint32(a[8:12], m.RemoteQPN<<8)
	}
	copy(a[privOff:], m.PrivateData)
	return MADLen, nil
}

// cmField is one range check of CMMessage.check.
type cmField struct {
	name string
	v    uint32
	bits uint
}

// check validates the fields the attribute carries and returns the offset of
// its private data area.
func (m *CMMessage) check() (int, error) {
	var privOff int
	var fields [16]cmField
	n := 0
	add := func(name string, v uint32, bits uint) {
		fields[n] = cmField{name, v, bits}
		n++
	}
	switch m.AttrID {
	case CMAttrREQ:
		privOff = reqPrivateOff
		add("local qpn", m.LocalQPN, 24)
		add("local eecn", m.LocalEECN, 24)
		add("remote eecn", m.RemoteEECN, 24)
		add("starting psn", m.StartingPSN, 24)
		add("remote cm response timeout", uint32(m.RemoteCMResponseTimeout), 5)
		add("transport service type", uint32(m.TransportServiceType), 2)
		add("local cm response timeout", uint32(m.LocalCMResponseTimeout), 5)
		add("retry count", uint32(m.RetryCount), 3)
		add("path mtu", uint32(m.PathMTU), 4)
		add("rnr retry count", uint32(m.RNRRetryCount), 3)
		add("max cm retries", uint32(m.MaxCMRetries), 4)
		add("extended transport type", uint32(m.ExtendedTransportType), 3)
		add("primary flow label", m.PrimaryFlowLabel, 20)
		add("primary packet rate", uint32(m.PrimaryPacketRate), 6)
		add("primary sl", uint32(m.PrimarySL), 4)
		add("primary local ack timeout", uint32(m.PrimaryLocalACKTimeout), 5)
	case CMAttrMRA:
		privOff = mraPrivateOff
		add("message mraed", uint32(m.MessageSel), 2)
		add("service timeout", uint32(m.ServiceTimeout), 5)
	case CMAttrREJ:
		privOff = rejPrivateOff
		add("message rejected", uint32(m.MessageSel), 2)
		if len(m.RejectInfo) > MaxCMRejectInfo {
			return 0, fmt.Errorf("cm: rej: %d bytes of reject info exceed %d: %w", len(m.RejectInfo), MaxCMRejectInfo, ErrInvalid)
		}
	case CMAttrREP:
		privOff = repPrivateOff
		add("local qpn", m.LocalQPN, 24)
		add("local eecn", m.LocalEECN, 24)
		add("starting psn", m.StartingPSN, 24)
		add("target ack delay", uint32(m.TargetACKDelay), 5)
		add("failover accepted", uint32(m.FailoverAccepted), 2)
		add("rnr retry count", uint32(m.RNRRetryCount), 3)
	case CMAttrRTU:
		privOff = rtuPrivateOff
	case CMAttrDREQ:
		privOff = dreqPrivateOff
		add("remote qpn", m.RemoteQPN, 24)
	case CMAttrDREP:
		privOff = drepPrivateOff
	default:
		return 0, fmt.Errorf("cm: encode attribute %v: %w", m.AttrID, ErrUnsupported)
	}
	for _, f := range fields[:n] {
		if f.v>>f.bits != 0 {
			return 0, fmt.Errorf("cm: %v: %s %#x exceeds %d bits: %w", m.AttrID, f.name, f.v, f.bits, ErrInvalid)
		}
	}
	if limit := cmAttrLen - privOff; len(m.PrivateData) > limit {
		return 0, fmt.Errorf("cm: %v: %d bytes of private data exceed %d: %w", m.AttrID, len(m.PrivateData), limit, ErrInvalid)
	}
	return privOff, nil
}

// cmU24 reads the 24-bit big-endian field at b[off:off+3].
func cmU24(b []byte, off int) uint32 {
	return uint32(b[off])<<16 | uint32(b[off+1])<<8 | uint32(b[off+2])
}

func cmU32(b []byte, off int) uint32 { return binary.BigEndian.Uint32(b[off : off+4]) }

func cmU64(b []byte, off int) uint64 { return binary.BigEndian.Uint64(b[off : off+8]) }

func cmBit(v bool) uint8 {
	if v {
		return 1
	}
	return 0
}
