package wire

// CodePoints holds the values the drafts leave to IANA or the IBTA ("TBD").
// Every one is configurable; the defaults come from ranges set aside for
// experimentation, so they collide with nothing assigned. docs/codepoints.md
// gives the reasoning for each.
type CodePoints struct {
	// LongHaulICMPv6Type is the ICMPv6 type of a Long-haul CNP
	// (draft-tian-ccwg-long-haul-cnp §10.1, TBD1). Default 200: RFC 4443
	// reserves 200 and 201 for private experimentation, in the informational
	// range the draft asks for.
	LongHaulICMPv6Type uint8
	// LongHaulClassNum is the RFC 4884 extension object Class-Num of the
	// Long-haul CNP objects (§10.3, TBD2). Default 247, the first of the
	// Class-Num values RFC 4884 reserves for private use (247-255).
	LongHaulClassNum uint8
	// FastCNPOptType is the IPv6 destination option carrying the original
	// destination (draft-xiao-rtgwg-rocev2-fast-cnp, TBD1). Default 0x9E: the
	// RFC 4727 experimental option type whose action bits are 10 and change
	// bit 0, as the draft requires.
	FastCNPOptType uint8
	// FastCNPIOAMOptType is the destination option that also carries IOAM
	// trace data (TBD2). RFC 4727 has only one experimental value with bits
	// 10-0, so the default is 0x9D, unassigned in the IANA registry, with the
	// same action and change bits.
	FastCNPIOAMOptType uint8
	// FCNPort is the UDP destination port of FCN messages
	// (FCN in WAN-interconnected RoCEv2, TBD1). Default 1021, the UDP port
	// RFC 4727 assigns for experimentation ("exp1").
	FCNPort uint16
	// RateAdviceOpcode is the BTH opcode of SCONE Rate Advice. The draft's
	// example 0x1D is RC ATOMIC_WRITE; the default 0xC0 is the first
	// manufacturer-specific opcode, which no IBTA release assigns.
	RateAdviceOpcode Opcode
}

// isZero reports whether every code point is zero: cp == CodePoints{}, by
// fields (the compiler compares the struct byte by byte with a zero value
// in memory).
func (cp *CodePoints) isZero() bool {
	return cp.LongHaulICMPv6Type|cp.LongHaulClassNum|cp.FastCNPOptType|cp.FastCNPIOAMOptType|uint8(cp.RateAdviceOpcode) == 0 &&
		cp.FCNPort == 0
}

// OrDefaults is cp, or DefaultCodePoints when every code point is zero:
// the code points an Encoder or Decoder given cp uses. A reader of one
// field (a receiver telling its own ICMPv6 type) takes it from here, not
// from a zero CodePoints.
func (cp CodePoints) OrDefaults() CodePoints {
	if cp.isZero() {
		return DefaultCodePoints()
	}
	return cp
}

// RoCEv2Port is the IANA-assigned UDP destination port of RoCEv2.
const RoCEv2Port = 4791

// DefaultCodePoints returns lhcnp's documented defaults.
func DefaultCodePoints() CodePoints {
	return CodePoints{
		LongHaulICMPv6Type: 200,
		LongHaulClassNum:   247,
		FastCNPOptType:     0x9E,
		FastCNPIOAMOptType: 0x9D,
		FCNPort:            1021,
		RateAdviceOpcode:   OpRateAdviceDefault,
	}
}
