package wire

import "fmt"

// Fast CNP (draft-xiao-rtgwg-rocev2-fast-cnp-01) is a RoCEv2 CNP sent by the
// congested switch, with an IPv6 Destination Options header (RFC 8200 §4.6)
// between the IPv6 header and UDP. The header carries one Fast CNP option
// holding the destination address of the data packet that met congestion;
// with the destination QP in the BTH it lets the sender find its own QP.
//
// The two option types are TBD in the draft; they come from CodePoints. The
// draft requires their two high-order bits to be 10 (discard and send an ICMP
// Parameter Problem if unrecognised) and the change bit to be 0.
//
// Layout written by EncodeDestOpts. The draft does not place the option, so
// we choose the RFC 8200 §4.2 alignment that puts the 16-byte address on an
// 8-octet boundary: a single Pad1/PadN before the option, none after. The
// address then ends exactly at the end of the header, so no trailing padding
// is ever needed.
//
//	plain option (alignment 8n+6):
//	  0  Next Header | Hdr Ext Len=2 | PadN (type 1, len 2, 0, 0)
//	  6  Option Type | Opt Data Len=16
//	  8  original destination address (16 octets)       -> 24 octets total
//
//	IOAM option, n octets of IOAM trace option data:
//	  0  Next Header | Hdr Ext Len | padding of p octets, p = (2-n) mod 8
//	  2+p  Option Type | Opt Data Len=18+n | Reserved=0 | IOAM Opt-Type
//	  6+p  IOAM option data (n octets)
//	  6+p+n  original destination address (16 octets, 8-octet aligned)
//
// With IOAM data of a multiple of 4 octets (every IOAM trace option is), the
// trace data also starts 4-octet aligned, as RFC 9486 asks of the IOAM
// Hop-by-Hop option it was copied from. With no IOAM data (n=0) p is 2.
//
// DecodeDestOpts accepts any valid placement of padding and any other
// options; it does not depend on this choice.

// Option types RFC 8200 §4.2 defines for padding.
const (
	optPad1 = 0x00
	optPadN = 0x01
)

// destOptsFixedLen is Next Header and Hdr Ext Len.
const destOptsFixedLen = 2

// fastCNPAddrLen is the length of the original destination address.
const fastCNPAddrLen = 16

// fastCNPIOAMMinDataLen is the smallest Opt Data Len of the IOAM variant:
// Reserved, IOAM Opt-Type and the address.
const fastCNPIOAMMinDataLen = 2 + fastCNPAddrLen

// MaxFastCNPIOAMData is the largest IOAM option data the IOAM variant can
// carry: Opt Data Len is 8 bits and also covers Reserved, IOAM Opt-Type and
// the address.
const MaxFastCNPIOAMData = 255 - fastCNPIOAMMinDataLen

// FastCNPOption is the content of a Fast CNP destination option.
type FastCNPOption struct {
	// OrigDst is the destination address of the RoCEv2 data packet that was
	// subject to forward congestion.
	OrigDst [16]byte
	// IOAM selects the second option type, which also carries IOAM trace data.
	IOAM bool
	// IOAMOptType is the IOAM Opt-Type copied from the data packet's IOAM
	// Hop-by-Hop option (RFC 9486; for example 0, pre-allocated trace).
	// Used only when IOAM is set.
	IOAMOptType uint8
	// IOAMData is the IOAM option data copied from the data packet's
	// Hop-by-Hop IOAM option (the trace option header and node data). Used
	// only when IOAM is set. DecodeDestOpts returns a sub-slice of its input
	// (no copy): it is valid only as long as that buffer is.
	IOAMData []byte
}

// checkFastCNPOptType enforces the draft's MUSTs on an option type: action
// bits 10 and change bit 0, that is the three high-order bits are 100.
func checkFastCNPOptType(name string, t uint8) error {
	if t&0xE0 != 0x80 {
		return fmt.Errorf("fast cnp: %s option type %#02x: high-order bits must be 100 (act 10, chg 0): %w",
			name, t, ErrInvalid)
	}
	return nil
}

// layout returns the number of octets from the Option Type to the end of the
// address, and the length of the leading padding that 8-aligns the address.
func (o *FastCNPOption) layout() (body, pad int) {
	body = 2 + fastCNPAddrLen
	if o.IOAM {
		body += 2 + len(o.IOAMData)
	}
	// The address starts at destOptsFixedLen+pad+body-16; make that 0 mod 8.
	pad = (8 - (destOptsFixedLen+body-fastCNPAddrLen)%8) % 8
	return body, pad
}

// DestOptsLen returns the length of the Destination Options header
// EncodeDestOpts writes, padding included (a multiple of 8).
func (o *FastCNPOption) DestOptsLen() int {
	body, pad := o.layout()
	return destOptsFixedLen + pad + body
}

// EncodeDestOpts writes an IPv6 Destination Options header holding this Fast
// CNP option into b and returns its length. nextHeader is the protocol that
// follows (17 for the UDP of a RoCEv2 CNP). cp supplies the option types;
// nil means DefaultCodePoints.
func (o *FastCNPOption) EncodeDestOpts(b []byte, nextHeader uint8, cp *CodePoints) (int, error) {
	if cp == nil {
		d := DefaultCodePoints()
		cp = &d
	}
	optType := cp.FastCNPOptType
	name := "fast cnp"
	if o.IOAM {
		optType, name = cp.FastCNPIOAMOptType, "fast cnp ioam"
		if len(o.IOAMData) > MaxFastCNPIOAMData {
			return 0, fmt.Errorf("fast cnp: ioam data of %d octets exceeds %d: %w",
				len(o.IOAMData), MaxFastCNPIOAMData, ErrInvalid)
		}
	}
	if err := checkFastCNPOptType(name, optType); err != nil {
		return 0, err
	}
	if cp.FastCNPOptType == cp.FastCNPIOAMOptType {
		return 0, fmt.Errorf("fast cnp: both option types are %#02x: %w", optType, ErrInvalid)
	}
	body, pad := o.layout()
	n := destOptsFixedLen + pad + body
	if len(b) < n {
		return 0, fmt.Errorf("fast cnp: destination options need %d bytes, have %d: %w", n, len(b), ErrShortBuffer)
	}
	b[0] = nextHeader
	b[1] = uint8(n/8 - 1)
	i := destOptsFixedLen
	switch {
	case pad == 1:
		b[i] = optPad1
	case pad >= 2:
		b[i] = optPadN
		b[i+1] = uint8(pad - 2)
		clear(b[i+2 : i+pad])
	}
	i += pad
	b[i] = optType
	b[i+1] = uint8(body - 2)
	i += 2
	if o.IOAM {
		b[i] = 0 // Reserved
		b[i+1] = o.IOAMOptType
		i += 2
		i += copy(b[i:], o.IOAMData)
	}
	copy(b[i:i+fastCNPAddrLen], o.OrigDst[:])
	return n, nil
}

// DecodeDestOpts reads an IPv6 Destination Options header from the start of
// b and returns the Fast CNP option in it, the header's Next Header and its
// length in octets (8 × (Hdr Ext Len + 1)). cp supplies the option types;
// nil means DefaultCodePoints.
//
// Every option is walked: Pad1, PadN and options of other types are skipped
// by their length, whatever their action bits say (the caller has already
// decided to read this header). The first Fast CNP option of either type is
// returned; later ones are ignored. Errors: ErrTruncated if the header runs
// past b, ErrLength if an option runs past the header or a Fast CNP option
// has the wrong Opt Data Len, ErrUnsupported if no Fast CNP option is present.
func DecodeDestOpts(b []byte, cp *CodePoints) (opt FastCNPOption, nextHeader uint8, hdrLen int, err error) {
	if cp == nil {
		d := DefaultCodePoints()
		cp = &d
	}
	if len(b) < destOptsFixedLen {
		return FastCNPOption{}, 0, 0, fmt.Errorf("fast cnp: destination options: need %d bytes, have %d: %w",
			destOptsFixedLen, len(b), ErrTruncated)
	}
	nextHeader = b[0]
	hdrLen = 8 * (int(b[1]) + 1)
	if len(b) < hdrLen {
		return FastCNPOption{}, 0, 0, fmt.Errorf("fast cnp: destination options: hdr ext len %d means %d bytes, have %d: %w",
			b[1], hdrLen, len(b), ErrTruncated)
	}
	h := b[:hdrLen]
	found := false
	for i := destOptsFixedLen; i < len(h); {
		t := h[i]
		if t == optPad1 {
			i++
			continue
		}
		if i+2 > len(h) {
			return FastCNPOption{}, 0, 0, fmt.Errorf("fast cnp: option %#02x at offset %d: header ends inside the option header: %w",
				t, i, ErrLength)
		}
		l := int(h[i+1])
		data := i + 2
		end := data + l
		if end > len(h) {
			return FastCNPOption{}, 0, 0, fmt.Errorf("fast cnp: option %#02x at offset %d: opt data len %d runs past the %d-byte header: %w",
				t, i, l, hdrLen, ErrLength)
		}
		switch {
		case found || t == optPadN:
		case t == cp.FastCNPOptType:
			if l != fastCNPAddrLen {
				return FastCNPOption{}, 0, 0, fmt.Errorf("fast cnp: option %#02x: opt data len %d, want %d: %w",
					t, l, fastCNPAddrLen, ErrLength)
			}
			copy(opt.OrigDst[:], h[data:end])
			found = true
		case t == cp.FastCNPIOAMOptType:
			if l < fastCNPIOAMMinDataLen {
				return FastCNPOption{}, 0, 0, fmt.Errorf("fast cnp: ioam option %#02x: opt data len %d, want at least %d: %w",
					t, l, fastCNPIOAMMinDataLen, ErrLength)
			}
			opt.IOAM = true
			// h[data] is Reserved: ignored on receipt.
			opt.IOAMOptType = h[data+1]
			opt.IOAMData = h[data+2 : end-fastCNPAddrLen : end-fastCNPAddrLen]
			copy(opt.OrigDst[:], h[end-fastCNPAddrLen:end])
			found = true
		}
		i = end
	}
	if !found {
		return FastCNPOption{}, 0, 0, fmt.Errorf("fast cnp: no fast cnp option (types %#02x, %#02x) in %d-byte destination options: %w",
			cp.FastCNPOptType, cp.FastCNPIOAMOptType, hdrLen, ErrUnsupported)
	}
	return opt, nextHeader, hdrLen, nil
}
