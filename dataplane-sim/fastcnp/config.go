package fastcnp

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// ErrConfig is wrapped by every configuration error; the message names the
// key (the YANG leaf under /lhcnp/fast-cnp, the scenario param).
var ErrConfig = errors.New("invalid fast cnp configuration")

func cfgErr(key, format string, args ...any) error {
	return fmt.Errorf("%s: %s: %w", key, fmt.Sprintf(format, args...), ErrConfig)
}

// Config configures the Fast CNP function of one switch.
type Config struct {
	// Enabled turns the feature on; §5: "By default, the Fast CNP feature
	// MUST be disabled."
	Enabled bool
	// IOAM sends the second option type with IOAM trace data (§4), which
	// a switch copies from the congesting packet's IOAM Hop-by-Hop trace.
	// The simulated data packets carry none, so the node writes the
	// pre-allocated trace an IOAM transit node would have added: its own
	// node data (hop limit and node id, queue depth).
	IOAM bool
	// SourceAddress is the Fast CNP's source, the switch's loopback (§4);
	// invalid: the switch's address.
	SourceAddress netip.Addr
	// Domain is the controlled domain (§5: "MUST be applied in a specific
	// controlled domain"): Fast CNP goes only to senders inside these
	// prefixes; empty: to none (YANG source-prefixes).
	Domain []netip.Prefix
	// CapableSenders are the sources known to process Fast CNP: the node
	// MUST NOT CE-mark their packets (§4). MarkUnknown keeps ECN marking
	// for the others (§4: MAY mark when the capability is unknown, so
	// that their receivers' CNPs still slow them).
	CapableSenders []netip.Prefix
	MarkUnknown    bool
	// KMaxBytes is the queue depth above which the node sends Fast CNP to
	// the queue's largest flows; ECN marking for senders that are not
	// known to be capable runs from KMinBytes (0: KMaxBytes / 2) to
	// KMaxBytes with probability up to PMax.
	KMaxBytes int64
	KMinBytes int64
	PMax      float64
	// MinCNPInterval is the minimum time between two Fast CNPs to one
	// flow; PortCNPRatePerSec and PortCNPBurst the token bucket of each
	// egress port (§5: rate-limiting RECOMMENDED against DoS).
	MinCNPInterval    engine.Time
	PortCNPRatePerSec int64
	PortCNPBurst      int64
	// MaxFlowsPerTrigger bounds the flows notified per congestion event,
	// largest share of the queue first.
	MaxFlowsPerTrigger int
	// CNPDSCP and CNPPrio: the class of the CNPs (what the RNICs expect).
	CNPDSCP uint8
	CNPPrio uint8
	// FlowTable is the flow table (lhcnp's: CM and data learning, LRU,
	// idle aging).
	FlowTable lhcnp.FlowTableConfig
	// CodePoints hold the option types (TBD1, TBD2).
	CodePoints wire.CodePoints
	// BorderPorts name the switch's ports that face outside the controlled
	// domain (netsim Port.Name; YANG border-interface): a Fast CNP arriving
	// on one is dropped, and so is one that would leave through one (§5:
	// "A deployment MUST ensure that border-filtering drops inbound Fast
	// CNP from outside of the domain and that drops outbound Fast CNP
	// leaving the domain"). It works whether or not the switch sends Fast
	// CNP itself (Enabled): a border router need not.
	BorderPorts []string
}

// DefaultConfig returns the defaults: disabled (§5), the first option
// type, every sender of unknown capability (marked), K_max 100 KB (the
// ECN K_min of the scenarios' RED: where a receiver's CNP loop would
// start), one CNP per flow per 50 µs (the DCQCN paper's receiver CNP
// interval N; NVIDIA's receivers allow one per 4 µs, which a switch
// notifying many flows has less reason to match) and at most
// one per microsecond per port, bursts of 100: a bound against a flood
// (§5) that still lets a 100-flow incast be notified every 100 µs.
func DefaultConfig() Config {
	lc := lhcnp.DefaultConfig()
	return Config{
		MarkUnknown:        true,
		KMaxBytes:          100_000,
		PMax:               0.2,
		MinCNPInterval:     netsim.PaperNP().CNPInterval,
		PortCNPRatePerSec:  1_000_000,
		PortCNPBurst:       100,
		MaxFlowsPerTrigger: 4,
		CNPDSCP:            lc.CNPDSCP,
		CNPPrio:            lc.CNPPrio,
		FlowTable:          lc.FlowTable,
		CodePoints:         wire.DefaultCodePoints(),
	}
}

// Validate reports the first invalid key. The source address must be
// IPv6 only while the function sends (Enabled): off, the switch's
// source-address serves its other notifications, an IPv4 fabric's
// Long-haul CNPs among them, and Fast CNP does not use it.
func (c *Config) Validate() error {
	if c.Enabled && c.SourceAddress.IsValid() && !c.SourceAddress.Is6() {
		return cfgErr("source-address", "%v is not IPv6 (Fast CNP is IPv6 only, §3)", c.SourceAddress)
	}
	for i, p := range c.Domain {
		if !p.IsValid() {
			return cfgErr(fmt.Sprintf("source-prefixes[%d]", i), "invalid prefix")
		}
	}
	for i, p := range c.CapableSenders {
		if !p.IsValid() {
			return cfgErr(fmt.Sprintf("capable-senders[%d]", i), "invalid prefix")
		}
	}
	seen := map[string]bool{}
	for i, name := range c.BorderPorts {
		switch {
		case name == "":
			return cfgErr(fmt.Sprintf("border-interface[%d]", i), "empty name")
		case seen[name]:
			return cfgErr(fmt.Sprintf("border-interface[%d]", i), "%q listed twice", name)
		}
		seen[name] = true
	}
	if c.KMaxBytes <= 0 {
		return cfgErr("kmax", "%d bytes, must be positive", c.KMaxBytes)
	}
	if c.KMinBytes < 0 || c.KMinBytes >= c.KMaxBytes {
		return cfgErr("kmin", "%d bytes, must be in [0, kmax %d)", c.KMinBytes, c.KMaxBytes)
	}
	if c.PMax < 0 || c.PMax > 1 {
		return cfgErr("pmax", "%g outside [0, 1]", c.PMax)
	}
	if c.MinCNPInterval <= 0 {
		return cfgErr("min-cnp-interval", "%v, must be positive", c.MinCNPInterval)
	}
	if c.PortCNPRatePerSec <= 0 {
		return cfgErr("port-cnp-rate", "%d per second, must be positive (§5: rate limiting RECOMMENDED)", c.PortCNPRatePerSec)
	}
	if c.PortCNPBurst <= 0 {
		return cfgErr("port-cnp-burst", "%d, must be positive", c.PortCNPBurst)
	}
	if c.MaxFlowsPerTrigger < 1 {
		return cfgErr("max-flows-per-trigger", "%d, must be at least 1", c.MaxFlowsPerTrigger)
	}
	if c.CNPDSCP > 63 {
		return cfgErr("cnp-dscp", "%d above 63", c.CNPDSCP)
	}
	if c.CNPPrio >= netsim.NumPrio {
		return cfgErr("cnp-prio", "%d not below %d", c.CNPPrio, netsim.NumPrio)
	}
	for _, t := range []struct {
		key string
		v   uint8
	}{{"option-type", c.CodePoints.FastCNPOptType}, {"ioam-option-type", c.CodePoints.FastCNPIOAMOptType}} {
		if err := CheckOptionType(t.v); err != nil {
			return cfgErr(t.key, "%v", err)
		}
	}
	return nil
}

// CheckOptionType checks a Fast CNP destination option type (TBD1, TBD2;
// YANG fast-cnp-option-type, fast-cnp-ioam-option-type), the rule
// Validate applies, for a caller that names the value its own way (the
// gNMI target, the code-point leaf).
func CheckOptionType(v uint8) error {
	// §4: action bits 10, change bit 0.
	if v&0xE0 != 0x80 {
		return fmt.Errorf("%#02x: the three high-order bits must be 100 (act 10, chg 0, §4)", v)
	}
	return nil
}

// nodeConfig is the lhcnp configuration that does Fast CNP's detection,
// flow choice and rate limits: the QD trigger at K_max only, one
// notification kind, no Resume, no collaboration (the draft has none).
func (c *Config) nodeConfig() lhcnp.Config {
	lc := mechanism.DetectionConfig(c.Enabled, c.CNPDSCP, c.CNPPrio, mechanism.Limits{MinCNPInterval: c.MinCNPInterval,
		PortCNPRatePerSec: c.PortCNPRatePerSec, PortCNPBurst: c.PortCNPBurst, MaxFlowsPerTrigger: c.MaxFlowsPerTrigger})
	lc.SourceAddress = c.SourceAddress
	lc.CodePoints = c.CodePoints
	lc.FlowTable = c.FlowTable
	q := &lc.Interface.Queue
	q.KMaxMode, q.KMaxBytes = lhcnp.KMaxExplicit, c.KMaxBytes
	if c.KMinBytes > 0 {
		q.KMinMode, q.KMinBytes = lhcnp.KMinExplicit, c.KMinBytes
	}
	q.PMax = c.PMax
	q.VECNPercent, q.VGrowthBytesPerSec = 0, 0
	q.Action.DefaultAction = wire.ActionRateReduce
	return lc
}
