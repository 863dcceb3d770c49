package wire

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// Long-haul CNP (draft-tian-ccwg-long-haul-cnp §6). Both formats carry the
// same 12-octet body, optionally followed by an RFC 4884 extension header and
// extension objects:
//
//	Cong. Level (8) | Action Flags (8) | Parameter (16)
//	Source QP Number (32)
//	Metric Type (8) | Congestion Metric Value (24)
//	[Version=2 (4) | Reserved (12) | Checksum (16)]
//	[Length (16) | Class-Num (8) | C-Type (8) | payload, zero-padded to 4n] ...
//
// In the ICMPv6 format (§6.1) the body follows the 4-octet ICMPv6 header; in
// the RoCEv2 format (§6.2) it follows a BTH with E=1 and the ICRC ends the
// packet. In both, "more than 12 octets" means an extension header is there.

// Sizes of the Long-haul CNP structures.
const (
	LongHaulBodyLen    = 12
	ExtHeaderLen       = 4
	ExtObjectHeaderLen = 4
	// ExtVersion is the RFC 4884 extension header version.
	ExtVersion = 2
	// MaxMetricValue is the largest 24-bit Congestion Metric Value.
	MaxMetricValue = 1<<24 - 1
	// LongHaulCodeFlow is the ICMPv6 Code of a flow-level Long-haul CNP (§10.2).
	LongHaulCodeFlow = 0
)

// Action is the primary action, the upper 2 bits of Action Flags (§6.1).
type Action uint8

// Actions (§5.5.1).
const (
	ActionNotify     Action = 0 // 00: apply the default congestion response; Parameter 0
	ActionPause      Action = 1 // 01: halt the QP for Parameter microseconds
	ActionRateReduce Action = 2 // 10: reduce the rate by Parameter percent (0-100)
	ActionResume     Action = 3 // 11: recover Parameter percent of the last reduction (0 = all)
)

// String names the action.
func (a Action) String() string {
	switch a {
	case ActionNotify:
		return "notify"
	case ActionPause:
		return "pause"
	case ActionRateReduce:
		return "rate-reduce"
	case ActionResume:
		return "resume"
	}
	return "action(" + strconv.Itoa(int(a)) + ")"
}

// MetricType identifies the Congestion Metric Value (§10.4 registry).
type MetricType uint8

// Metric types of the §10.4 registry. 5-253 are unassigned.
const (
	MetricUnspecified    MetricType = 0   // implementation-defined, opaque context
	MetricQueueDepth     MetricType = 1   // kilobytes
	MetricQueueGrowth    MetricType = 2   // kilobytes per millisecond
	MetricECNMarkingRate MetricType = 3   // percent, 0-100
	MetricRTT            MetricType = 4   // microseconds
	MetricExperimental1  MetricType = 254 // experimental
	MetricExperimental2  MetricType = 255 // experimental
)

// String names the metric type as the registry does.
func (t MetricType) String() string {
	switch t {
	case MetricUnspecified:
		return "unspecified"
	case MetricQueueDepth:
		return "queue-depth"
	case MetricQueueGrowth:
		return "queue-growth-rate"
	case MetricECNMarkingRate:
		return "ecn-marking-rate"
	case MetricRTT:
		return "rtt"
	case MetricExperimental1, MetricExperimental2:
		return "experimental(" + strconv.Itoa(int(t)) + ")"
	}
	return "unassigned(" + strconv.Itoa(int(t)) + ")"
}

// Unit returns the registry's unit of the metric value, "" when it has none.
func (t MetricType) Unit() string {
	switch t {
	case MetricQueueDepth:
		return "KB"
	case MetricQueueGrowth:
		return "KB/ms"
	case MetricECNMarkingRate:
		return "%"
	case MetricRTT:
		return "us"
	}
	return ""
}

// CType is the C-Type of a Long-haul CNP extension object (§10.3, Table 4).
type CType uint8

// C-Types of the Long-haul CNP Extension class.
const (
	CTypeReserved  CType = 0
	CTypeTimestamp CType = 1 // 8-octet NTP timestamp
	CTypeDeviceID  CType = 2 // UTF-8 string
	CTypePathID    CType = 3 // opaque
)

// String names the C-Type.
func (c CType) String() string {
	switch c {
	case CTypeReserved:
		return "reserved"
	case CTypeTimestamp:
		return "timestamp"
	case CTypeDeviceID:
		return "device-id"
	case CTypePathID:
		return "path-id"
	}
	return "ctype(" + strconv.Itoa(int(c)) + ")"
}

// ExtObject is one RFC 4884 extension object.
type ExtObject struct {
	// ClassNum is the object's Class-Num. On encode, 0 means the Long-haul
	// CNP class of the encoder's CodePoints (Class-Num 0 is not assignable).
	ClassNum uint8
	CType    CType
	// Data is the object payload without the zero padding: its length plus 4
	// is the Length field. Decoders return a sub-slice of their input.
	Data []byte
}

// Len returns the object's Length field: header plus unpadded payload.
func (o *ExtObject) Len() int { return ExtObjectHeaderLen + len(o.Data) }

// paddedLen returns the bytes the object takes on the wire.
func (o *ExtObject) paddedLen() int { return pad4(o.Len()) }

// Timestamp returns the NTP timestamp of a Timestamp object.
func (o *ExtObject) Timestamp() (ntp uint64, ok bool) {
	if o.CType != CTypeTimestamp || len(o.Data) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(o.Data), true
}

// TimestampObject returns a Timestamp object holding t as an NTP timestamp.
// It allocates its 8 bytes; hot paths keep their own Data buffers.
func TimestampObject(t time.Time) ExtObject {
	d := make([]byte, 8)
	binary.BigEndian.PutUint64(d, NTPTime(t))
	return ExtObject{CType: CTypeTimestamp, Data: d}
}

// DeviceIDObject returns a Device Identifier object holding id.
func DeviceIDObject(id string) ExtObject {
	return ExtObject{CType: CTypeDeviceID, Data: []byte(id)}
}

// PathIDObject returns a Path Identifier object holding id (not copied).
func PathIDObject(id []byte) ExtObject {
	return ExtObject{CType: CTypePathID, Data: id}
}

// ntpEpochOffset is the number of seconds from 1900-01-01 to 1970-01-01.
const ntpEpochOffset = 2208988800

// NTPTime converts t to a 64-bit NTP timestamp (RFC 5905: 32 bits of
// seconds since 1900 modulo 2^32, 32 bits of fraction).
func NTPTime(t time.Time) uint64 {
	sec := uint64(t.Unix()+ntpEpochOffset) & 0xFFFFFFFF
	frac := (uint64(t.Nanosecond()) << 32) / 1e9
	return sec<<32 | frac
}

// TimeFromNTP converts an NTP timestamp back to a time. Seconds below 2^31
// are taken as NTP era 1 (from 2036), as RFC 4330 §3 suggests.
func TimeFromNTP(v uint64) time.Time {
	sec := int64(v >> 32)
	if sec < 1<<31 {
		sec += 1 << 32
	}
	nsec := int64(((v & 0xFFFFFFFF) * 1e9) >> 32)
	return time.Unix(sec-ntpEpochOffset, nsec).UTC()
}

// LongHaul is a Long-haul CNP: the 12-octet body and the extension objects.
type LongHaul struct {
	// CongLevel is the congestion severity, 0 none to 255 maximum.
	CongLevel uint8
	Action    Action
	// ActionReserved holds the low 6 bits of Action Flags as received;
	// receivers ignore them and Encode requires them zero.
	ActionReserved uint8
	// Parameter is a percentage (RateReduce, Resume), a pause in
	// microseconds (Pause) or zero (Notify).
	Parameter   uint16
	SourceQP    uint32
	MetricType  MetricType
	MetricValue uint32 // 24 bits
	// ICMPCode is the ICMPv6 Code of the ICMPv6 format (0, flow-level); the
	// RoCEv2 format has no code and ignores it.
	ICMPCode uint8
	// Objects are the extension objects; an extension header is written when
	// there is at least one. Decoders reuse the slice's capacity.
	Objects []ExtObject
	// Decoded only: whether an extension header was present, its checksum
	// and whether that verified.
	ExtPresent        bool
	ExtChecksum       uint16
	ExtChecksumStatus Status
}

// Validate checks the fields an encoder must not send (§6.1): an action
// above 3, nonzero reserved action bits, a percentage above 100 for
// RateReduce and Resume, a nonzero Notify parameter, a metric value above 24
// bits, an ECN marking rate above 100 percent (§6.1, §10.4: a percentage,
// 0-100), and malformed objects of the Long-haul class (a timestamp that is
// not 8 octets, a device identifier that is not UTF-8).
func (m *LongHaul) Validate(classNum uint8) error {
	if m.Action > ActionResume {
		return fmt.Errorf("long-haul cnp: action %d above 3: %w", m.Action, ErrInvalid)
	}
	if m.ActionReserved != 0 {
		return fmt.Errorf("long-haul cnp: reserved action bits %#x must be zero: %w", m.ActionReserved, ErrInvalid)
	}
	switch m.Action {
	case ActionNotify:
		if m.Parameter != 0 {
			return fmt.Errorf("long-haul cnp: notify parameter %d must be zero: %w", m.Parameter, ErrInvalid)
		}
	case ActionRateReduce, ActionResume:
		if m.Parameter > 100 {
			return fmt.Errorf("long-haul cnp: %s percentage %d above 100: %w", m.Action, m.Parameter, ErrInvalid)
		}
	}
	if m.MetricValue > MaxMetricValue {
		return fmt.Errorf("long-haul cnp: metric value %d exceeds 24 bits: %w", m.MetricValue, ErrInvalid)
	}
	if m.MetricType == MetricECNMarkingRate && m.MetricValue > 100 {
		return fmt.Errorf("long-haul cnp: ecn marking rate %d above 100 percent: %w", m.MetricValue, ErrInvalid)
	}
	return validateObjects(m.Objects, classNum)
}

// validateObjects checks object sizes and the payloads of the Long-haul class.
func validateObjects(objs []ExtObject, classNum uint8) error {
	for i := range objs {
		o := &objs[i]
		if o.Len() > 0xFFFF {
			return fmt.Errorf("extension object %d: length %d exceeds 16 bits: %w", i, o.Len(), ErrInvalid)
		}
		if o.ClassNum != 0 && o.ClassNum != classNum {
			continue
		}
		switch o.CType {
		case CTypeTimestamp:
			if len(o.Data) != 8 {
				return fmt.Errorf("extension object %d: timestamp of %d octets, want 8: %w", i, len(o.Data), ErrInvalid)
			}
		case CTypeDeviceID:
			if !utf8.Valid(o.Data) {
				return fmt.Errorf("extension object %d: device identifier is not utf-8: %w", i, ErrInvalid)
			}
		}
	}
	return nil
}

// Len returns the encoded length: the body plus the extension, if any.
func (m *LongHaul) Len() int { return LongHaulBodyLen + ExtensionLen(m.Objects) }

// Encode validates m and writes the body and extension into b. classNum
// replaces a zero ExtObject.ClassNum (give CodePoints.LongHaulClassNum).
func (m *LongHaul) Encode(b []byte, classNum uint8) (int, error) {
	if err := m.Validate(classNum); err != nil {
		return 0, err
	}
	n := m.Len()
	if len(b) < n {
		return 0, fmt.Errorf("long-haul cnp: need %d bytes, have %d: %w", n, len(b), ErrShortBuffer)
	}
	m.encodeBody(b)
	if len(m.Objects) > 0 {
		if _, err := EncodeExtension(b[LongHaulBodyLen:], m.Objects, classNum); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// encodeBody writes the 12-octet body; the caller validated m.
func (m *LongHaul) encodeBody(b []byte) {
	b[0] = m.CongLevel
	b[1] = uint8(m.Action) << 6
	binary.BigEndian.PutUint16(b[2:4], m.Parameter)
	binary.BigEndian.PutUint32(b[4:8], m.SourceQP)
	binary.BigEndian.PutUint32(b[8:12], uint32(m.MetricType)<<24|m.MetricValue)
}

// DecodeLongHaul reads a Long-haul CNP body from b, which must hold exactly
// the body and extension (the ICMPv6 message after its 4-octet header, or
// the RoCEv2 bytes between BTH and ICRC). m.Objects' capacity is reused.
//
// Fields are filled as far as the bytes allow. A bad extension checksum
// still fills every object and returns an error wrapping ErrExtChecksum;
// with verify false the checksum is not checked (StatusUnchecked).
func DecodeLongHaul(b []byte, m *LongHaul, verify bool) error {
	objs := m.Objects[:0]
	*m = LongHaul{Objects: objs}
	if len(b) < LongHaulBodyLen {
		return fmt.Errorf("long-haul cnp: body needs %d bytes, have %d: %w", LongHaulBodyLen, len(b), ErrTruncated)
	}
	m.CongLevel = b[0]
	m.Action = Action(b[1] >> 6)
	m.ActionReserved = b[1] & 0x3F
	m.Parameter = binary.BigEndian.Uint16(b[2:4])
	m.SourceQP = binary.BigEndian.Uint32(b[4:8])
	w := binary.BigEndian.Uint32(b[8:12])
	m.MetricType = MetricType(w >> 24)
	m.MetricValue = w & MaxMetricValue
	if len(b) == LongHaulBodyLen {
		return nil
	}
	m.ExtPresent = true
	var err error
	m.Objects, m.ExtChecksum, m.ExtChecksumStatus, err = DecodeExtension(b[LongHaulBodyLen:], objs, verify)
	return err
}

// ExtensionLen returns the bytes EncodeExtension writes for objs: zero when
// there are none (§6.1.1: no header without objects).
func ExtensionLen(objs []ExtObject) int {
	if len(objs) == 0 {
		return 0
	}
	n := ExtHeaderLen
	for i := range objs {
		n += objs[i].paddedLen()
	}
	return n
}

// EncodeExtension writes an RFC 4884 extension header (version 2, reserved
// zero, checksum over header and objects) followed by objs, each zero-padded
// to 4 octets. A zero ClassNum is written as classNum. It writes nothing for
// no objects.
func EncodeExtension(b []byte, objs []ExtObject, classNum uint8) (int, error) {
	n := ExtensionLen(objs)
	if n == 0 {
		return 0, nil
	}
	if len(b) < n {
		return 0, fmt.Errorf("extension: need %d bytes, have %d: %w", n, len(b), ErrShortBuffer)
	}
	b = b[:n]
	b[0], b[1], b[2], b[3] = ExtVersion<<4, 0, 0, 0
	off := ExtHeaderLen
	for i := range objs {
		o := &objs[i]
		l := o.Len()
		if l > 0xFFFF {
			return 0, fmt.Errorf("extension object %d: length %d exceeds 16 bits: %w", i, l, ErrInvalid)
		}
		cn := o.ClassNum
		if cn == 0 {
			cn = classNum
		}
		binary.BigEndian.PutUint16(b[off:], uint16(l))
		b[off+2] = cn
		b[off+3] = uint8(o.CType)
		copy(b[off+ExtObjectHeaderLen:], o.Data)
		clear(b[off+l : off+pad4(l)])
		off += pad4(l)
	}
	c := Checksum(b)
	if c == 0 {
		// RFC 4884 §7: an all-zero value means that no checksum was
		// transmitted; a sum that complements to zero goes as 0xFFFF, the
		// same in one's complement (RFC 768's rule for UDP).
		c = 0xFFFF
	}
	binary.BigEndian.PutUint16(b[2:4], c)
	return n, nil
}

// DecodeExtension reads an RFC 4884 extension header and the objects after
// it; b must end where the message ends. Objects are appended to objs and
// their Data are sub-slices of b. Objects are advanced over by their padded
// length (§6.1.1).
//
// Errors: ErrTruncated for fewer than 4 bytes, ErrExtVersion for a version
// other than 2, ErrObjectLength for an object whose Length is below 4 or
// whose padded length runs past the end, ErrExtChecksum when the checksum
// does not verify (all objects are still returned). A checksum of zero is
// none (RFC 4884 §7: "An all-zero value means that no checksum was
// transmitted"): StatusNone, nothing to verify.
func DecodeExtension(b []byte, objs []ExtObject, verify bool) (_ []ExtObject, csum uint16, st Status, err error) {
	if len(b) < ExtHeaderLen {
		return objs, 0, StatusNone, fmt.Errorf("extension: header needs %d bytes, have %d: %w", ExtHeaderLen, len(b), ErrTruncated)
	}
	if v := b[0] >> 4; v != ExtVersion {
		return objs, 0, StatusNone, fmt.Errorf("extension: version %d, want %d: %w", v, ExtVersion, ErrExtVersion)
	}
	csum = binary.BigEndian.Uint16(b[2:4])
	for off := ExtHeaderLen; off < len(b); {
		if len(b)-off < ExtObjectHeaderLen {
			return objs, csum, StatusNone, fmt.Errorf("extension: %d bytes at offset %d cannot hold an object header: %w",
				len(b)-off, off, ErrObjectLength)
		}
		l := int(binary.BigEndian.Uint16(b[off:]))
		if l < ExtObjectHeaderLen {
			return objs, csum, StatusNone, fmt.Errorf("extension: object at offset %d has length %d, below %d: %w",
				off, l, ExtObjectHeaderLen, ErrObjectLength)
		}
		if off+pad4(l) > len(b) {
			return objs, csum, StatusNone, fmt.Errorf("extension: object at offset %d of length %d (padded %d) runs past the %d-byte extension: %w",
				off, l, pad4(l), len(b), ErrObjectLength)
		}
		objs = append(objs, ExtObject{ClassNum: b[off+2], CType: CType(b[off+3]), Data: b[off+ExtObjectHeaderLen : off+l : off+l]})
		off += pad4(l)
	}
	switch {
	case csum == 0:
		return objs, csum, StatusNone, nil
	case !verify:
		return objs, csum, StatusUnchecked, nil
	}
	if Checksum(b) != 0 {
		return objs, csum, StatusBad, fmt.Errorf("extension: checksum %#04x does not verify: %w", csum, ErrExtChecksum)
	}
	return objs, csum, StatusGood, nil
}

// pad4 rounds n up to a multiple of 4.
func pad4(n int) int { return (n + 3) &^ 3 }
