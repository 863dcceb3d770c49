package fcn

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
// key (the YANG leaf under /lhcnp/fcn, the scenario param).
var ErrConfig = errors.New("invalid fcn configuration")

func cfgErr(key, format string, args ...any) error {
	return fmt.Errorf("%s: %s: %w", key, fmt.Sprintf(format, args...), ErrConfig)
}

// Config configures one FCN node, either role.
type Config struct {
	// Enabled: the node takes its role (YANG fcn-role not DISABLED).
	Enabled bool
	// Domain is the controlled domain (§6: FCN MUST be applied in one): an
	// ingress PE accepts FCN messages only from these prefixes; empty:
	// from none.
	Domain []netip.Prefix
	// MaxMappings and AgingTimeout: the ingress PE's flow-label table
	// (§4.1: cleared when the flow's timer runs out).
	MaxMappings  int
	AgingTimeout engine.Time
	// KMaxBytes: the queue depth above which the node reports (a transit
	// node's FCN, a PE's direct CNP); MinCNPInterval the per-flow gap;
	// PortCNPRatePerSec and PortCNPBurst the per-port bucket;
	// MaxFlowsPerTrigger the flows per congestion event.
	KMaxBytes          int64
	MinCNPInterval     engine.Time
	PortCNPRatePerSec  int64
	PortCNPBurst       int64
	MaxFlowsPerTrigger int
	// CNPDSCP and CNPPrio: the class of FCN messages and CNPs.
	CNPDSCP, CNPPrio uint8
	// SourceAddress is the source of the node's notifications, the
	// switch's loopback: a PE's CNPs for the flows of its family, a
	// transit node's FCN messages when it is IPv6; invalid, or of the
	// other family: the switch's address.
	SourceAddress netip.Addr
	// CodePoints hold the FCN UDP port.
	CodePoints wire.CodePoints
	// FlowTable is the detection node's flow table (lhcnp's: CM and data
	// learning, LRU, idle aging), whose flows a PE's CNPs and a transit
	// node's FCN messages are for.
	FlowTable lhcnp.FlowTableConfig
}

// DefaultConfig returns the defaults: off, the YANG model's table (65 536
// mappings, 60 s aging), reports above 100 KB, one per flow per 50 µs,
// lhcnp's flow table.
func DefaultConfig() Config {
	lc := lhcnp.DefaultConfig()
	return Config{
		MaxMappings: 65536, AgingTimeout: 60 * engine.Second, KMaxBytes: 100_000,
		MinCNPInterval: 50 * engine.Microsecond, PortCNPRatePerSec: 1_000_000, PortCNPBurst: 100,
		MaxFlowsPerTrigger: 4, CNPDSCP: lc.CNPDSCP, CNPPrio: lc.CNPPrio, CodePoints: wire.DefaultCodePoints(),
		FlowTable: lc.FlowTable,
	}
}

// Validate reports the first invalid key.
func (c *Config) Validate() error {
	for i, p := range c.Domain {
		if !p.IsValid() {
			return cfgErr(fmt.Sprintf("domain[%d]", i), "invalid prefix")
		}
	}
	if err := CheckMaxMappings(c.MaxMappings); err != nil {
		return cfgErr("max-mappings", "%v", err)
	}
	switch {
	case c.AgingTimeout <= 0:
		return cfgErr("aging-timeout", "%v, must be positive", c.AgingTimeout)
	case c.KMaxBytes <= 0:
		return cfgErr("kmax", "%d bytes, must be positive", c.KMaxBytes)
	case c.MinCNPInterval <= 0:
		return cfgErr("min-cnp-interval", "%v, must be positive", c.MinCNPInterval)
	case c.PortCNPRatePerSec <= 0 || c.PortCNPBurst <= 0:
		return cfgErr("port-cnp-rate", "rate %d and burst %d must be positive", c.PortCNPRatePerSec, c.PortCNPBurst)
	case c.MaxFlowsPerTrigger < 1:
		return cfgErr("max-flows-per-trigger", "%d, must be at least 1", c.MaxFlowsPerTrigger)
	case c.CNPDSCP > 63:
		return cfgErr("cnp-dscp", "%d above 63", c.CNPDSCP)
	case c.CNPPrio >= netsim.NumPrio:
		return cfgErr("cnp-prio", "%d not below %d", c.CNPPrio, netsim.NumPrio)
	case c.CodePoints.FCNPort == 0:
		return cfgErr("fcn-udp-port", "0 is not a port")
	}
	return nil
}

// CheckMaxMappings checks the ingress PE's table capacity (YANG
// max-mappings), the rule Validate applies, for a caller that names the
// value its own way (the gNMI target, the leaf's path): each mapping
// takes one of the 2^20-1 flow labels.
func CheckMaxMappings(n int) error {
	switch {
	case n < 1:
		return fmt.Errorf("%d, must be at least 1", n)
	case n > wire.MaxFCNFlowLabel:
		return fmt.Errorf("%d, more than the %d flow labels", n, wire.MaxFCNFlowLabel)
	}
	return nil
}

// nodeConfig is the detection node's configuration: the QD trigger at
// K_max, no Resume, no collaboration.
func (c *Config) nodeConfig() lhcnp.Config {
	lc := mechanism.DetectionConfig(c.Enabled, c.CNPDSCP, c.CNPPrio, mechanism.Limits{MinCNPInterval: c.MinCNPInterval,
		PortCNPRatePerSec: c.PortCNPRatePerSec, PortCNPBurst: c.PortCNPBurst, MaxFlowsPerTrigger: c.MaxFlowsPerTrigger})
	lc.SourceAddress = c.SourceAddress
	lc.FlowTable = c.FlowTable
	q := &lc.Interface.Queue
	q.KMaxMode, q.KMaxBytes = lhcnp.KMaxExplicit, c.KMaxBytes
	q.VECNPercent, q.VGrowthBytesPerSec = 0, 0
	return lc
}

// setMode validates cfg and sets the mode of the detection node lh: with
// cfg enabled it notifies through n with cfg's node configuration,
// disabled it runs Long-haul CNP with lc. On error nothing changes.
func setMode(lh *lhcnp.Node, n lhcnp.Notifier, cfg Config, lc lhcnp.Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("fcn: switch %s: %w", lh.Switch().Name(), err)
	}
	var err error
	if cfg.Enabled {
		err = lh.SetNotifier(n, cfg.nodeConfig())
	} else {
		err = lh.SetNotifier(nil, lc)
	}
	if err != nil {
		return fmt.Errorf("fcn: %w", err)
	}
	return nil
}
