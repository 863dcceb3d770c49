package wire

import (
	"encoding/binary"
	"fmt"
)

// FCN is the congestion message of "FCN in WAN-interconnected RoCEv2"
// (fcn-wan-rocev2-tunnels §4.2): a congested WAN node sends it in UDP to
// CodePoints.FCNPort of the ingress PE, naming the RoCEv2 flow by the flow
// label the PE put in the outer IPv6 header. The UDP payload is one word:
//
//	Flow Label (20) | CL (3) | Rvd (9)
//
// so the UDP length is always 12.

// FCNMessageLen is the length of the FCN UDP payload.
const FCNMessageLen = 4

// Limits of the FCN fields.
const (
	MaxFCNFlowLabel = 1<<20 - 1
	MaxFCNLevel     = 7
)

// FCNMessage is the FCN UDP payload.
type FCNMessage struct {
	// FlowLabel is the 20-bit outer IPv6 flow label of the congested flow.
	FlowLabel uint32
	// Level is the 3-bit congestion level: 1 lowest to 7 highest, 0 when not used.
	Level uint8
	// Reserved holds the 9 reserved bits as received. They MUST be zero on
	// transmission and are ignored on receipt: DecodeFCN keeps them for
	// inspection and Encode always writes zero.
	Reserved uint16
}

// DecodeFCN reads an FCN message. b must be the UDP payload, exactly
// FCNMessageLen bytes: ErrTruncated if shorter, ErrLength if longer (the
// draft fixes the UDP length at 12).
func DecodeFCN(b []byte) (FCNMessage, error) {
	if len(b) < FCNMessageLen {
		return FCNMessage{}, fmt.Errorf("fcn: need %d bytes, have %d: %w", FCNMessageLen, len(b), ErrTruncated)
	}
	if len(b) > FCNMessageLen {
		return FCNMessage{}, fmt.Errorf("fcn: payload is %d bytes, want %d: %w", len(b), FCNMessageLen, ErrLength)
	}
	w := binary.BigEndian.Uint32(b)
	return FCNMessage{
		FlowLabel: w >> 12,
		Level:     uint8(w>>9) & MaxFCNLevel,
		Reserved:  uint16(w & 0x1FF),
	}, nil
}

// Encode writes the message into b and returns FCNMessageLen. The reserved
// bits are written as zero whatever m.Reserved holds.
func (m *FCNMessage) Encode(b []byte) (int, error) {
	if len(b) < FCNMessageLen {
		return 0, fmt.Errorf("fcn: need %d bytes, have %d: %w", FCNMessageLen, len(b), ErrShortBuffer)
	}
	if m.FlowLabel > MaxFCNFlowLabel {
		return 0, fmt.Errorf("fcn: flow label %#x exceeds 20 bits: %w", m.FlowLabel, ErrInvalid)
	}
	if m.Level > MaxFCNLevel {
		return 0, fmt.Errorf("fcn: congestion level %d exceeds %d: %w", m.Level, MaxFCNLevel, ErrInvalid)
	}
	binary.BigEndian.PutUint32(b, m.FlowLabel<<12|uint32(m.Level)<<9)
	return FCNMessageLen, nil
}
