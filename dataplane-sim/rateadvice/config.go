package rateadvice

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// CapabilityBit is the BTH reserved bit (of the seven after AckReq) a
// capable sender sets in its data packets.
const CapabilityBit uint8 = 0x01

// ErrConfig is wrapped by every configuration error; the message names the
// key (the YANG leaf under /lhcnp/rate-advice, the scenario param).
var ErrConfig = errors.New("invalid rate advice configuration")

func cfgErr(key, format string, args ...any) error {
	return fmt.Errorf("%s: %s: %w", key, fmt.Sprintf(format, args...), ErrConfig)
}

// Policy is a configured rate for the flows it matches (§4.1).
type Policy struct {
	Name string
	// Precedence orders the policies: lowest first, the first match wins.
	Precedence uint32
	// Src and Dst match the flow's addresses (invalid: any); DstQP its
	// destination QP (0: any).
	Src, Dst netip.Prefix
	DstQP    uint32
	// RateMbps is the advised rate.
	RateMbps uint32
}

func (p *Policy) match(src, dst netip.Addr, dstQP uint32) bool {
	return (!p.Src.IsValid() || p.Src.Contains(src)) && (!p.Dst.IsValid() || p.Dst.Contains(dst)) &&
		(p.DstQP == 0 || p.DstQP == dstQP)
}

// Config configures the Rate Advice function of one switch.
type Config struct {
	// Enabled turns the node on (YANG rate-advice-enabled, default off).
	Enabled bool
	// QueueBased advises the fair share (§4.2) to flows no policy matches;
	// off, only policy flows are advised.
	QueueBased bool
	Policies   []Policy
	// MinAdviceInterval is the minimum time between two messages to one
	// flow; it is also the window in which a flow counts as active on its
	// queue.
	MinAdviceInterval engine.Time
	// DrainInterval: the fair share leaves room to drain the standing
	// queue in this time.
	DrainInterval engine.Time
	// ChangePercent: a new message when the advice moved by this much
	// since the last one to the flow.
	ChangePercent int
	// IdleTimeout forgets a flow without packets for this long.
	IdleTimeout engine.Time
	// SourceAddress is the messages' source (invalid: the switch's).
	SourceAddress netip.Addr
	DSCP, Prio    uint8
	CodePoints    wire.CodePoints
}

// DefaultConfig returns the defaults: off, queue-based, one message per
// flow per 100 µs at most, when the advice moved by 10%, draining a
// standing queue in 1 ms.
func DefaultConfig() Config {
	return Config{
		QueueBased:        true,
		MinAdviceInterval: 100 * engine.Microsecond,
		DrainInterval:     engine.Millisecond,
		ChangePercent:     10,
		IdleTimeout:       engine.Second,
		DSCP:              48,
		Prio:              6,
		CodePoints:        wire.DefaultCodePoints(),
	}
}

// Validate reports the first invalid key.
func (c *Config) Validate() error {
	names := map[string]bool{}
	for i, p := range c.Policies {
		key := fmt.Sprintf("policies[%d]", i)
		switch {
		case p.Name == "":
			return cfgErr(key+".name", "empty")
		case names[p.Name]:
			return cfgErr(key+".name", "%q named twice", p.Name)
		case p.RateMbps == 0:
			return cfgErr(key+".rate", "must be at least 1 Mb/s")
		case p.DstQP > 0xFFFFFF:
			return cfgErr(key+".destination-qp", "%d is not a 24-bit QP number", p.DstQP)
		}
		names[p.Name] = true
	}
	if c.MinAdviceInterval <= 0 {
		return cfgErr("min-advice-interval", "%v, must be positive", c.MinAdviceInterval)
	}
	if c.DrainInterval <= 0 {
		return cfgErr("drain-interval", "%v, must be positive", c.DrainInterval)
	}
	if c.ChangePercent < 0 || c.ChangePercent > 100 {
		return cfgErr("change-percent", "%d outside 0..100", c.ChangePercent)
	}
	if c.IdleTimeout <= 0 {
		return cfgErr("idle-timeout", "%v, must be positive", c.IdleTimeout)
	}
	if c.DSCP > 63 {
		return cfgErr("dscp", "%d above 63", c.DSCP)
	}
	if c.Prio >= netsim.NumPrio {
		return cfgErr("prio", "%d not below %d", c.Prio, netsim.NumPrio)
	}
	if err := CheckOpcode(c.CodePoints.RateAdviceOpcode); err != nil {
		return cfgErr("rate-advice-opcode", "%v", err)
	}
	return nil
}

// CheckOpcode checks the Rate Advice BTH opcode (YANG rate-advice-opcode),
// the rule Validate applies, for a caller that names the value its own
// way (the gNMI target, the code-point leaf).
func CheckOpcode(op wire.Opcode) error {
	if op == wire.OpCNP || op < 0x80 && op != 0x1D {
		// 0x00-0x7F are RC/UC opcodes an RNIC executes; the draft's 0x1D
		// is allowed for a deployment that knows its RNICs (but it is RC
		// ATOMIC_WRITE in IBA 1.5).
		return fmt.Errorf("%#02x is an opcode RNICs already use", uint8(op))
	}
	return nil
}

// sorted returns the policies by precedence (stable: file order among
// equals).
func (c *Config) sorted() []Policy {
	ps := slices.Clone(c.Policies)
	slices.SortStableFunc(ps, func(a, b Policy) int {
		switch {
		case a.Precedence < b.Precedence:
			return -1
		case a.Precedence > b.Precedence:
			return 1
		}
		return 0
	})
	return ps
}
