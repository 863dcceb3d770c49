package dataplane

import (
	"net/netip"
	"strings"

	"github.com/openconfig/ygot/ygot"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/fastcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/gnmi/schema"
)

// fastWithLongHaul is why a node refuses Fast CNP with a Long-haul CNP
// format: both would notify the sender of the same congestion (two cuts
// per event) and both drive the port's ECN marking.
const fastWithLongHaul = "Fast CNP and Long-haul CNP cannot both run on one node (each would notify the sender of the same congestion); turn long-haul-cnp-icmpv6 and long-haul-cnp-rocev2 off first"

// FastCNPConfig translates the Fast CNP leaves (global fast-cnp-enabled,
// /lhcnp/fast-cnp) into the Fast CNP configuration; the shared leaves
// (source address, CNP DSCP, code points, flow table) come from lc, the
// translated Long-haul CNP configuration, and border-interface names map
// to ports through ports. Errors name the YANG path.
func FastCNPConfig(l *oc.Lhcnp_Lhcnp, lc *lhcnp.Config, ports *Ports) (fastcnp.Config, error) {
	c := fastcnp.DefaultConfig()
	c.SourceAddress = lc.SourceAddress
	c.CNPDSCP = lc.CNPDSCP
	c.CodePoints = lc.CodePoints
	c.FlowTable = lc.FlowTable
	if l == nil {
		return c, nil
	}
	c.Enabled = l.GetGlobal().GetConfig().GetFastCnpEnabled()
	const at = "/lhcnp/fast-cnp/config"
	if f := l.GetFastCnp().GetConfig(); f != nil {
		setBool(&c.MarkUnknown, f.EcnMarkAlongside)
		setBool(&c.IOAM, f.IoamTrace)
		kmax := uint64(c.KMaxBytes)
		if f.CongestionThreshold != nil {
			kmax = *f.CongestionThreshold
			c.KMaxBytes = schema.ClampInt64(kmax)
		}
		if f.MarkingThreshold != nil {
			// The node reads 0 as "not set" (half the congestion
			// threshold): a configured 0 would run as that.
			if *f.MarkingThreshold == 0 {
				return c, invalid(at+"/marking-threshold", "0 bytes: must be at least 1 (leave it unset for half the congestion threshold)")
			}
			if *f.MarkingThreshold >= kmax {
				return c, invalid(at+"/marking-threshold", "%d bytes is not below congestion-threshold %d", *f.MarkingThreshold, kmax)
			}
			// Below the congestion threshold as configured, so below
			// it as held (schema.ClampInt64) too.
			c.KMinBytes = min(schema.ClampInt64(*f.MarkingThreshold), c.KMaxBytes-1)
		}
		if f.EcnPmax != nil {
			c.PMax = *f.EcnPmax
		}
		if f.MinCnpInterval != nil {
			c.MinCNPInterval = usec(*f.MinCnpInterval)
		}
		if f.PortCnpRate != nil {
			c.PortCNPRatePerSec = int64(*f.PortCnpRate)
		}
		if f.PortCnpBurst != nil {
			c.PortCNPBurst = int64(*f.PortCnpBurst)
		}
		if f.MaxFlowsPerTrigger != nil {
			c.MaxFlowsPerTrigger = int(*f.MaxFlowsPerTrigger)
		}
		for _, name := range f.BorderInterface {
			port, ok := ports.Port(name)
			if !ok {
				return c, invalid(at+"/border-interface", "%q: no such interface on this switch (interfaces: %s)", name, strings.Join(ports.Names(), ", "))
			}
			c.BorderPorts = append(c.BorderPorts, port)
		}
	}
	if sp := l.GetFastCnp().GetSourcePrefixes(); sp != nil {
		for _, k := range sortedKeys(sp.SourcePrefix) {
			p, err := netip.ParsePrefix(k)
			if err != nil {
				return c, invalid("/lhcnp/fast-cnp/source-prefixes/source-prefix[prefix="+k+"]", "%v", err)
			}
			c.Domain = append(c.Domain, p.Masked())
			if sp.SourcePrefix[k].GetConfig().GetSenderCapable() {
				c.CapableSenders = append(c.CapableSenders, p.Masked())
			}
		}
	}
	if c.Enabled && c.SourceAddress.IsValid() && !c.SourceAddress.Is6() {
		return c, invalid("/lhcnp/global/config/source-address", "%v is not IPv6: Fast CNP is IPv6 only", c.SourceAddress)
	}
	// The code points are global leaves: their errors name them, not
	// this container (the rule is fastcnp's, as Validate applies it).
	for _, cp := range []struct {
		leaf string
		v    uint8
	}{{"fast-cnp-option-type", c.CodePoints.FastCNPOptType}, {"fast-cnp-ioam-option-type", c.CodePoints.FastCNPIOAMOptType}} {
		if err := fastcnp.CheckOptionType(cp.v); err != nil {
			return c, invalid(codePointsPath+"/"+cp.leaf, "%v", err)
		}
	}
	if err := c.Validate(); err != nil {
		return c, invalid(at, "%v", err)
	}
	return c, nil
}

// codePointsPath holds the code points the mechanisms share (option
// types, opcode, port), which ToConfig reads into lhcnp.Config.CodePoints.
const codePointsPath = "/lhcnp/global/code-points/config"

func init() {
	register(mechanismKind{
		name: "fast-cnp",
		idle: fastcnp.State{},
		translate: func(l *oc.Lhcnp_Lhcnp, lc *lhcnp.Config, ports *Ports) (any, bool, error) {
			c, err := FastCNPConfig(l, lc, ports)
			return c, c.Enabled, err
		},
		off: func(cfg any) any {
			c := cfg.(fastcnp.Config)
			c.Enabled = false
			return c
		},
		// A border router filters the other switches' Fast CNPs whether
		// or not it sends its own (fast-cnp-enabled), and with the master
		// switch off: a protection of the domain, not a notification.
		// Off, the function is transparent: the node runs its mode.
		standing: func(cfg any) bool { return len(cfg.(fastcnp.Config).BorderPorts) > 0 },
		create:   func(node *lhcnp.Node, _ any) (mechanism.Function, error) { return fastcnp.NewFunction(node) },
		state: func(root *oc.Root, st, cfg any, v stateEnv) {
			fastCNPState(root, cfg.(fastcnp.Config), st.(fastcnp.State).Counters, v.ports)
		},
		// While Fast CNP is configured on, the node's notifications are
		// Fast CNPs. Not otherwise, as for an FCN transit node: the
		// function may be there for border filtering alone, the node
		// handing its notifications to another mode (an FCN PE's direct
		// CNPs).
		queueCount: func(cfg any) queueCounter {
			if !cfg.(fastcnp.Config).Enabled {
				return nil
			}
			return func(k *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue_State_Counters, n *uint64) { k.FastCnpSent = n }
		},
		format: func(cfg any) oc.E_LhcnpTypes_NotificationFormat {
			if cfg.(fastcnp.Config).Enabled {
				return oc.LhcnpTypes_NotificationFormat_FAST_CNP
			}
			return oc.LhcnpTypes_NotificationFormat_UNSET
		},
	})
}

// fastCNPState writes the Fast CNP configuration as configured and the
// counters into the state tree.
func fastCNPState(root *oc.Root, c fastcnp.Config, n fastcnp.Counters, ports *Ports) {
	l := root.GetOrCreateLhcnp()
	l.GetOrCreateGlobal().GetOrCreateState().FastCnpEnabled = ygot.Bool(c.Enabled)
	f := l.GetOrCreateFastCnp()
	s := f.GetOrCreateState()
	s.EcnMarkAlongside = ygot.Bool(c.MarkUnknown)
	s.IoamTrace = ygot.Bool(c.IOAM)
	s.CongestionThreshold = ygot.Uint64(uint64(c.KMaxBytes))
	if c.KMinBytes > 0 {
		s.MarkingThreshold = ygot.Uint64(uint64(c.KMinBytes))
	}
	s.EcnPmax = ygot.Float64(c.PMax)
	s.MinCnpInterval = ygot.Uint32(uint32(c.MinCNPInterval / engine.Microsecond))
	s.PortCnpRate = ygot.Uint32(uint32(c.PortCNPRatePerSec))
	s.PortCnpBurst = ygot.Uint32(uint32(c.PortCNPBurst))
	s.MaxFlowsPerTrigger = ygot.Uint16(uint16(c.MaxFlowsPerTrigger))
	s.BorderInterface = nil
	for _, port := range c.BorderPorts {
		if name, ok := ports.Interface(port); ok {
			s.BorderInterface = append(s.BorderInterface, name)
		}
	}
	k := s.GetOrCreateCounters()
	k.Sent = ygot.Uint64(uint64(n.Sent))
	k.SentWithIoam = ygot.Uint64(uint64(n.SentIOAM))
	k.EcnMarkedAlongside = ygot.Uint64(uint64(n.MarkedAlongside))
	k.EcnMarksWithheld = ygot.Uint64(uint64(n.MarksWithheld))
	k.OutsideDomain = ygot.Uint64(uint64(n.OutsideDomain))
	k.NotIpv6 = ygot.Uint64(uint64(n.NotIPv6))
	k.BorderDropped = ygot.Uint64(uint64(n.BorderDropped()))
	capable := map[netip.Prefix]bool{}
	for _, p := range c.CapableSenders {
		capable[p] = true
	}
	for _, p := range c.Domain {
		sp := f.GetOrCreateSourcePrefixes().GetOrCreateSourcePrefix(p.String()).GetOrCreateState()
		sp.Prefix = ygot.String(p.String())
		sp.SenderCapable = ygot.Bool(capable[p])
	}
}
