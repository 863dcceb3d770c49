package wire

import (
	"encoding/binary"
	"fmt"
)

// The RoCEv2 data path: which extended transport headers follow the BTH for
// each opcode (IBA Vol 1 §9.2-9.5, Table 38), their codecs, and the RoCEv2
// control messages that reuse the BTH (CNP, SCONE Rate Advice).

// Sizes of the extended transport headers.
const (
	RETHLen         = 16
	AETHLen         = 4
	DETHLen         = 8
	ImmDtLen        = 4
	IETHLen         = 4
	FETHLen         = 4
	AtomicETHLen    = 28
	AtomicAckETHLen = 8
	// CNPReservedLen is the size of the reserved field after the BTH of a
	// standard CNP.
	CNPReservedLen = 16
	// RateAdviceLen is the size of the SCONE Rate Advice packet after the BTH.
	RateAdviceLen = 16
	// RateAdviceVersion is the only Rate Advice version defined.
	RateAdviceVersion = 1
)

// ETH is a set of extended transport headers, as bits.
type ETH uint16

// Extended transport headers, in the order they follow the BTH.
const (
	HasDETH ETH = 1 << iota
	HasFETH
	HasRETH
	HasAtomicETH
	HasAETH
	HasAtomicAckETH
	HasImmDt
	HasIETH
	// HasPayload: the opcode carries a payload (possibly empty).
	HasPayload
)

// Len returns the bytes of the headers in the set.
func (s ETH) Len() int {
	n := 0
	if s&HasDETH != 0 {
		n += DETHLen
	}
	if s&HasFETH != 0 {
		n += FETHLen
	}
	if s&HasRETH != 0 {
		n += RETHLen
	}
	if s&HasAtomicETH != 0 {
		n += AtomicETHLen
	}
	if s&HasAETH != 0 {
		n += AETHLen
	}
	if s&HasAtomicAckETH != 0 {
		n += AtomicAckETHLen
	}
	if s&HasImmDt != 0 {
		n += ImmDtLen
	}
	if s&HasIETH != 0 {
		n += IETHLen
	}
	return n
}

// OpcodeHeaders returns the extended headers an RC, UC or UD opcode carries
// and whether it has a payload; ok is false for opcodes this package does
// not parse (RD, XRC, CNP, reserved and vendor opcodes).
func OpcodeHeaders(op Opcode) (s ETH, ok bool) {
	switch op.Class() {
	case ClassRC:
		switch op {
		case OpRCSendFirst, OpRCSendMiddle, OpRCSendLast, OpRCSendOnly,
			OpRCWriteMiddle, OpRCWriteLast, OpRCReadResponseMiddle:
			return HasPayload, true
		case OpRCSendLastImm, OpRCSendOnlyImm, OpRCWriteLastImm:
			return HasImmDt | HasPayload, true
		case OpRCWriteFirst, OpRCWriteOnly:
			return HasRETH | HasPayload, true
		case OpRCWriteOnlyImm:
			return HasRETH | HasImmDt | HasPayload, true
		case OpRCReadRequest:
			return HasRETH, true
		case OpRCReadResponseFirst, OpRCReadResponseLast, OpRCReadResponseOnly:
			return HasAETH | HasPayload, true
		case OpRCAck:
			return HasAETH, true
		case OpRCAtomicAck:
			return HasAETH | HasAtomicAckETH, true
		case OpRCCompareSwap, OpRCFetchAdd:
			return HasAtomicETH, true
		case OpRCSendLastInv, OpRCSendOnlyInv:
			return HasIETH | HasPayload, true
		case OpRCFlush:
			return HasFETH | HasRETH, true
		case OpRCAtomicWrite:
			return HasRETH | HasPayload, true
		}
	case ClassUC:
		switch op {
		case OpUCSendFirst, OpUCSendMiddle, OpUCSendLast, OpUCSendOnly, OpUCWriteMiddle, OpUCWriteLast:
			return HasPayload, true
		case OpUCSendLastImm, OpUCSendOnlyImm, OpUCWriteLastImm:
			return HasImmDt | HasPayload, true
		case OpUCWriteFirst, OpUCWriteOnly:
			return HasRETH | HasPayload, true
		case OpUCWriteOnlyImm:
			return HasRETH | HasImmDt | HasPayload, true
		}
	case ClassUD:
		switch op {
		case OpUDSendOnly:
			return HasDETH | HasPayload, true
		case OpUDSendOnlyImm:
			return HasDETH | HasImmDt | HasPayload, true
		}
	}
	return 0, false
}

// RETH is the RDMA Extended Transport Header.
type RETH struct {
	VA     uint64
	RKey   uint32
	DMALen uint32
}

// AETH is the ACK Extended Transport Header.
type AETH struct {
	Syndrome uint8
	MSN      uint32 // 24 bits
}

// DETH is the Datagram Extended Transport Header.
type DETH struct {
	QKey     uint32
	Reserved uint8
	SrcQP    uint32 // 24 bits
}

// AtomicETH is the Atomic Extended Transport Header.
type AtomicETH struct {
	VA          uint64
	RKey        uint32
	SwapAdd     uint64 // swap (CmpSwap) or add (FetchAdd) data
	CompareData uint64
}

// TransportHeaders holds the extended transport headers of a RoCEv2 packet;
// Set says which are present.
type TransportHeaders struct {
	Set          ETH
	DETH         DETH
	FETH         uint32 // raw FLUSH extended header
	RETH         RETH
	AtomicETH    AtomicETH
	AETH         AETH
	AtomicAckETH uint64 // original remote data
	ImmDt        uint32
	IETH         uint32 // R_Key to invalidate
}

// decodeTransport reads the headers in set from b and returns their length.
func decodeTransport(b []byte, set ETH, h *TransportHeaders) (int, error) {
	n := set.Len()
	if len(b) < n {
		return 0, fmt.Errorf("transport headers: need %d bytes, have %d: %w", n, len(b), ErrTruncated)
	}
	h.Set = set
	off := 0
	if set&HasDETH != 0 {
		h.DETH = DETH{QKey: binary.BigEndian.Uint32(b[off:]), Reserved: b[off+4], SrcQP: binary.BigEndian.Uint32(b[off+4:]) & 0xFFFFFF}
		off += DETHLen
	}
	if set&HasFETH != 0 {
		h.FETH = binary.BigEndian.Uint32(b[off:])
		off += FETHLen
	}
	if set&HasRETH != 0 {
		h.RETH = RETH{VA: binary.BigEndian.Uint64(b[off:]), RKey: binary.BigEndian.Uint32(b[off+8:]), DMALen: binary.BigEndian.Uint32(b[off+12:])}
		off += RETHLen
	}
	if set&HasAtomicETH != 0 {
		h.AtomicETH = AtomicETH{
			VA:          binary.BigEndian.Uint64(b[off:]),
			RKey:        binary.BigEndian.Uint32(b[off+8:]),
			SwapAdd:     binary.BigEndian.Uint64(b[off+12:]),
			CompareData: binary.BigEndian.Uint64(b[off+20:]),
		}
		off += AtomicETHLen
	}
	if set&HasAETH != 0 {
		w := binary.BigEndian.Uint32(b[off:])
		h.AETH = AETH{Syndrome: uint8(w >> 24), MSN: w & 0xFFFFFF}
		off += AETHLen
	}
	if set&HasAtomicAckETH != 0 {
		h.AtomicAckETH = binary.BigEndian.Uint64(b[off:])
		off += AtomicAckETHLen
	}
	if set&HasImmDt != 0 {
		h.ImmDt = binary.BigEndian.Uint32(b[off:])
		off += ImmDtLen
	}
	if set&HasIETH != 0 {
		h.IETH = binary.BigEndian.Uint32(b[off:])
		off += IETHLen
	}
	return off, nil
}

// encodeTransport writes the headers in set; the caller checked the room.
func encodeTransport(b []byte, set ETH, h *TransportHeaders) (int, error) {
	off := 0
	if set&HasDETH != 0 {
		if h.DETH.SrcQP > 0xFFFFFF {
			return 0, fmt.Errorf("deth: source qp %#x exceeds 24 bits: %w", h.DETH.SrcQP, ErrInvalid)
		}
		binary.BigEndian.PutUint32(b[off:], h.DETH.QKey)
		binary.BigEndian.PutUint32(b[off+4:], uint32(h.DETH.Reserved)<<24|h.DETH.SrcQP)
		off += DETHLen
	}
	if set&HasFETH != 0 {
		binary.BigEndian.PutUint32(b[off:], h.FETH)
		off += FETHLen
	}
	if set&HasRETH != 0 {
		binary.BigEndian.PutUint64(b[off:], h.RETH.VA)
		binary.BigEndian.PutUint32(b[off+8:], h.RETH.RKey)
		binary.BigEndian.PutUint32(b[off+12:], h.RETH.DMALen)
		off += RETHLen
	}
	if set&HasAtomicETH != 0 {
		binary.BigEndian.PutUint64(b[off:], h.AtomicETH.VA)
		binary.BigEndian.PutUint32(b[off+8:], h.AtomicETH.RKey)
		binary.BigEndian.PutUint64(b[off+12:], h.AtomicETH.SwapAdd)
		binary.BigEndian.PutUint64(b[off+20:], h.AtomicETH.CompareData)
		off += AtomicETHLen
	}
	if set&HasAETH != 0 {
		if h.AETH.MSN > 0xFFFFFF {
			return 0, fmt.Errorf("aeth: msn %#x exceeds 24 bits: %w", h.AETH.MSN, ErrInvalid)
		}
		binary.BigEndian.PutUint32(b[off:], uint32(h.AETH.Syndrome)<<24|h.AETH.MSN)
		off += AETHLen
	}
	if set&HasAtomicAckETH != 0 {
		binary.BigEndian.PutUint64(b[off:], h.AtomicAckETH)
		off += AtomicAckETHLen
	}
	if set&HasImmDt != 0 {
		binary.BigEndian.PutUint32(b[off:], h.ImmDt)
		off += ImmDtLen
	}
	if set&HasIETH != 0 {
		binary.BigEndian.PutUint32(b[off:], h.IETH)
		off += IETHLen
	}
	return off, nil
}

// RateAdvice is the SCONE Rate Advice packet that follows the BTH.
type RateAdvice struct {
	RateMbps uint32 // advised rate
	Version  uint32 // RateAdviceVersion; the encoder writes 1 for 0
	DestQP   uint32 // the sender's QP the advice is for
	SrcQP    uint32 // the receiver's or the node's QP
}

// DecodeRateAdvice reads the 16-byte Rate Advice packet. A version other
// than 1 fills the fields and returns an error wrapping ErrUnsupported.
func DecodeRateAdvice(b []byte) (RateAdvice, error) {
	if len(b) < RateAdviceLen {
		return RateAdvice{}, fmt.Errorf("rate advice: need %d bytes, have %d: %w", RateAdviceLen, len(b), ErrTruncated)
	}
	r := RateAdvice{
		RateMbps: binary.BigEndian.Uint32(b[0:]),
		Version:  binary.BigEndian.Uint32(b[4:]),
		DestQP:   binary.BigEndian.Uint32(b[8:]),
		SrcQP:    binary.BigEndian.Uint32(b[12:]),
	}
	if len(b) != RateAdviceLen {
		return r, fmt.Errorf("rate advice: %d bytes between bth and icrc, want %d: %w", len(b), RateAdviceLen, ErrLength)
	}
	if r.Version != RateAdviceVersion {
		return r, fmt.Errorf("rate advice: version %d: %w", r.Version, ErrUnsupported)
	}
	return r, nil
}

// Encode writes the 16-byte Rate Advice packet.
func (r *RateAdvice) Encode(b []byte) (int, error) {
	if len(b) < RateAdviceLen {
		return 0, fmt.Errorf("rate advice: need %d bytes, have %d: %w", RateAdviceLen, len(b), ErrShortBuffer)
	}
	v := r.Version
	if v == 0 {
		v = RateAdviceVersion
	}
	binary.BigEndian.PutUint32(b[0:], r.RateMbps)
	binary.BigEndian.PutUint32(b[4:], v)
	binary.BigEndian.PutUint32(b[8:], r.DestQP)
	binary.BigEndian.PutUint32(b[12:], r.SrcQP)
	return RateAdviceLen, nil
}

// CNP holds the BTH fields a CNP sender chooses (standard, Long-haul RoCEv2
// and Fast CNP). Every other BTH field has the value §6.2.3 prescribes:
// SE, M, PadCnt, TVer, FECN, A, PSN and the reserved bits zero, BECN one.
type CNP struct {
	// DestQP is the QP at the receiver of the CNP that should react.
	DestQP uint32
	// PKey is the partition key; 0 means 0xFFFF, the default partition.
	PKey uint16
}

// bth returns the BTH of a CNP; e sets the Long-haul Extension Present bit.
func (c *CNP) bth(e bool) BTH {
	h := BTH{Opcode: OpCNP, PKey: c.PKey, Byte4: BTHBECN, DestQP: c.DestQP}
	if h.PKey == 0 {
		h.PKey = 0xFFFF
	}
	if e {
		h.Byte4 |= BTHE
	}
	return h
}

// decodeBTH reads a BTH into h; the caller checked len(b) >= BTHLen. It is
// DecodeBTH without the copy of the result, for the decoder's hot path.
func decodeBTH(b []byte, h *BTH) {
	w1 := binary.BigEndian.Uint32(b[4:8])
	w2 := binary.BigEndian.Uint32(b[8:12])
	h.Opcode = Opcode(b[0])
	h.SE = b[1]&0x80 != 0
	h.MigReq = b[1]&0x40 != 0
	h.PadCount = (b[1] >> 4) & 3
	h.TVer = b[1] & 0x0F
	h.PKey = binary.BigEndian.Uint16(b[2:4])
	h.Byte4 = b[4]
	h.DestQP = w1 & 0xFFFFFF
	h.AckReq = w2&(1<<31) != 0
	h.Resv7 = uint8(w2>>24) & 0x7F
	h.PSN = w2 & 0xFFFFFF
}
