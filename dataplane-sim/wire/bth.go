package wire

import (
	"encoding/binary"
	"fmt"
)

// Opcode is the 8-bit BTH OpCode: 3 bits of transport class, 5 of operation.
type Opcode uint8

// Transport classes, the upper 3 bits of an Opcode (IBA Vol 1, 9.2).
const (
	ClassRC  = 0x00
	ClassUC  = 0x20
	ClassRD  = 0x40
	ClassUD  = 0x60
	ClassCNP = 0x80
	ClassXRC = 0xA0
	// ClassVendor covers 0xC0-0xFF, the manufacturer-specific opcodes.
	ClassVendor = 0xC0
)

// Opcodes lhcnp uses. RC and UC share the lower 5 bits.
const (
	OpRCSendFirst          Opcode = 0x00
	OpRCSendMiddle         Opcode = 0x01
	OpRCSendLast           Opcode = 0x02
	OpRCSendLastImm        Opcode = 0x03
	OpRCSendOnly           Opcode = 0x04
	OpRCSendOnlyImm        Opcode = 0x05
	OpRCWriteFirst         Opcode = 0x06
	OpRCWriteMiddle        Opcode = 0x07
	OpRCWriteLast          Opcode = 0x08
	OpRCWriteLastImm       Opcode = 0x09
	OpRCWriteOnly          Opcode = 0x0A
	OpRCWriteOnlyImm       Opcode = 0x0B
	OpRCReadRequest        Opcode = 0x0C
	OpRCReadResponseFirst  Opcode = 0x0D
	OpRCReadResponseMiddle Opcode = 0x0E
	OpRCReadResponseLast   Opcode = 0x0F
	OpRCReadResponseOnly   Opcode = 0x10
	OpRCAck                Opcode = 0x11
	OpRCAtomicAck          Opcode = 0x12
	OpRCCompareSwap        Opcode = 0x13
	OpRCFetchAdd           Opcode = 0x14
	OpRCSendLastInv        Opcode = 0x16
	OpRCSendOnlyInv        Opcode = 0x17
	OpRCFlush              Opcode = 0x1C
	OpRCAtomicWrite        Opcode = 0x1D

	OpUCSendFirst    Opcode = 0x20
	OpUCSendMiddle   Opcode = 0x21
	OpUCSendLast     Opcode = 0x22
	OpUCSendLastImm  Opcode = 0x23
	OpUCSendOnly     Opcode = 0x24
	OpUCSendOnlyImm  Opcode = 0x25
	OpUCWriteFirst   Opcode = 0x26
	OpUCWriteMiddle  Opcode = 0x27
	OpUCWriteLast    Opcode = 0x28
	OpUCWriteLastImm Opcode = 0x29
	OpUCWriteOnly    Opcode = 0x2A
	OpUCWriteOnlyImm Opcode = 0x2B
	OpUDSendOnly     Opcode = 0x64
	OpUDSendOnlyImm  Opcode = 0x65
	OpCNP            Opcode = 0x81
	// OpRateAdviceDefault is lhcnp's default opcode for SCONE Rate Advice.
	// The draft's example, 0x1D, is RC ATOMIC_WRITE in IBA 1.5+, so we take the
	// first manufacturer-specific opcode, which no IBTA release assigns.
	// Configurable; see docs/codepoints.md.
	OpRateAdviceDefault Opcode = 0xC0
)

// Class returns the transport class bits of the opcode.
func (o Opcode) Class() uint8 { return uint8(o) & 0xE0 }

// IsData reports whether the opcode carries RDMA data: RC and UC send and
// write (with or without immediate or invalidate), and UD send. ACKs, read
// requests and responses, atomics, CNPs and vendor opcodes do not. The
// network model counts a flow's data packets and lhcnp's monitors its
// marking rate with it.
func (o Opcode) IsData() bool {
	switch o.Class() {
	case ClassRC, ClassUC:
		low := o & 0x1F
		return low <= 0x0B || low == 0x16 || low == 0x17
	case ClassUD:
		return true
	}
	return false
}

// BTH byte-4 bits. The Long-haul CNP E bit is the most significant of the six
// reserved bits after BECN (draft-tian-ccwg-long-haul-cnp §6.2.1).
const (
	BTHFECN = 0x80
	BTHBECN = 0x40
	BTHE    = 0x20
)

// BTHLen is the size of the InfiniBand Base Transport Header.
const BTHLen = 12

// BTH is the InfiniBand Base Transport Header (IBA Vol 1, 9.2).
type BTH struct {
	Opcode   Opcode
	SE       bool  // solicited event
	MigReq   bool  // migration request
	PadCount uint8 // 2 bits
	TVer     uint8 // 4 bits
	PKey     uint16
	// Byte4 holds FECN (0x80), BECN (0x40) and the six reserved bits (0x3F,
	// of which 0x20 is the Long-haul CNP E bit) exactly as on the wire.
	Byte4  uint8
	DestQP uint32 // 24 bits
	AckReq bool
	Resv7  uint8  // 7 reserved bits after AckReq
	PSN    uint32 // 24 bits
}

// FECN reports the forward ECN bit.
func (h *BTH) FECN() bool { return h.Byte4&BTHFECN != 0 }

// BECN reports the backward ECN bit.
func (h *BTH) BECN() bool { return h.Byte4&BTHBECN != 0 }

// E reports the Long-haul CNP Extension Present bit.
func (h *BTH) E() bool { return h.Byte4&BTHE != 0 }

// Encode writes the header into b and returns BTHLen.
func (h *BTH) Encode(b []byte) (int, error) {
	if len(b) < BTHLen {
		return 0, fmt.Errorf("bth: need %d bytes, have %d: %w", BTHLen, len(b), ErrShortBuffer)
	}
	if h.DestQP > 0xFFFFFF || h.PSN > 0xFFFFFF || h.PadCount > 3 || h.TVer > 15 || h.Resv7 > 0x7F {
		return 0, fmt.Errorf("bth: field out of range (destqp %#x, psn %#x, padcnt %d, tver %d): %w",
			h.DestQP, h.PSN, h.PadCount, h.TVer, ErrInvalid)
	}
	b[0] = uint8(h.Opcode)
	b1 := h.PadCount<<4 | h.TVer
	if h.SE {
		b1 |= 0x80
	}
	if h.MigReq {
		b1 |= 0x40
	}
	b[1] = b1
	binary.BigEndian.PutUint16(b[2:4], h.PKey)
	binary.BigEndian.PutUint32(b[4:8], uint32(h.Byte4)<<24|h.DestQP)
	w := h.PSN | uint32(h.Resv7)<<24
	if h.AckReq {
		w |= 1 << 31
	}
	binary.BigEndian.PutUint32(b[8:12], w)
	return BTHLen, nil
}

// DecodeBTH reads a BTH from the start of b.
func DecodeBTH(b []byte) (BTH, error) {
	if len(b) < BTHLen {
		return BTH{}, fmt.Errorf("bth: need %d bytes, have %d: %w", BTHLen, len(b), ErrTruncated)
	}
	w1 := binary.BigEndian.Uint32(b[4:8])
	w2 := binary.BigEndian.Uint32(b[8:12])
	return BTH{
		Opcode:   Opcode(b[0]),
		SE:       b[1]&0x80 != 0,
		MigReq:   b[1]&0x40 != 0,
		PadCount: (b[1] >> 4) & 3,
		TVer:     b[1] & 0x0F,
		PKey:     binary.BigEndian.Uint16(b[2:4]),
		Byte4:    b[4],
		DestQP:   w1 & 0xFFFFFF,
		AckReq:   w2&(1<<31) != 0,
		Resv7:    uint8(w2>>24) & 0x7F,
		PSN:      w2 & 0xFFFFFF,
	}, nil
}

var opcodeNames = map[Opcode]string{
	OpRCSendFirst: "RC SEND_FIRST", OpRCSendMiddle: "RC SEND_MIDDLE", OpRCSendLast: "RC SEND_LAST",
	OpRCSendLastImm: "RC SEND_LAST_IMM", OpRCSendOnly: "RC SEND_ONLY", OpRCSendOnlyImm: "RC SEND_ONLY_IMM",
	OpRCWriteFirst: "RC RDMA_WRITE_FIRST", OpRCWriteMiddle: "RC RDMA_WRITE_MIDDLE", OpRCWriteLast: "RC RDMA_WRITE_LAST",
	OpRCWriteLastImm: "RC RDMA_WRITE_LAST_IMM", OpRCWriteOnly: "RC RDMA_WRITE_ONLY", OpRCWriteOnlyImm: "RC RDMA_WRITE_ONLY_IMM",
	OpRCReadRequest: "RC RDMA_READ_REQUEST", OpRCReadResponseFirst: "RC RDMA_READ_RESPONSE_FIRST",
	OpRCReadResponseMiddle: "RC RDMA_READ_RESPONSE_MIDDLE", OpRCReadResponseLast: "RC RDMA_READ_RESPONSE_LAST",
	OpRCReadResponseOnly: "RC RDMA_READ_RESPONSE_ONLY", OpRCAck: "RC ACKNOWLEDGE", OpRCAtomicAck: "RC ATOMIC_ACKNOWLEDGE",
	OpRCCompareSwap: "RC COMPARE_SWAP", OpRCFetchAdd: "RC FETCH_ADD", OpRCSendLastInv: "RC SEND_LAST_INV",
	OpRCSendOnlyInv: "RC SEND_ONLY_INV", OpRCFlush: "RC FLUSH", OpRCAtomicWrite: "RC ATOMIC_WRITE",
	OpUCSendFirst: "UC SEND_FIRST", OpUCSendMiddle: "UC SEND_MIDDLE", OpUCSendLast: "UC SEND_LAST",
	OpUCSendLastImm: "UC SEND_LAST_IMM", OpUCSendOnly: "UC SEND_ONLY", OpUCSendOnlyImm: "UC SEND_ONLY_IMM",
	OpUCWriteFirst: "UC RDMA_WRITE_FIRST", OpUCWriteMiddle: "UC RDMA_WRITE_MIDDLE", OpUCWriteLast: "UC RDMA_WRITE_LAST",
	OpUCWriteLastImm: "UC RDMA_WRITE_LAST_IMM", OpUCWriteOnly: "UC RDMA_WRITE_ONLY", OpUCWriteOnlyImm: "UC RDMA_WRITE_ONLY_IMM",
	OpUDSendOnly: "UD SEND_ONLY", OpUDSendOnlyImm: "UD SEND_ONLY_IMM", OpCNP: "CNP",
}

// String names the opcode as the IBA does ("RC RDMA_WRITE_ONLY", "CNP"), or
// gives its class and value ("vendor 0xc0") when it has no name here.
func (o Opcode) String() string {
	if n, ok := opcodeNames[o]; ok {
		return n
	}
	class := [...]string{"RC", "UC", "RD", "UD", "CNP-class", "XRC", "vendor", "vendor"}[o>>5]
	const hex = "0123456789abcdef"
	return class + " 0x" + string([]byte{hex[o>>4], hex[o&0xF]})
}
