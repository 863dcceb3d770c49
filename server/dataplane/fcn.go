package dataplane

import (
	"github.com/openconfig/ygot/ygot"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/fcn"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/gnmi/schema"
)

func init() {
	register(mechanismKind{
		name: "fcn",
		idle: fcn.State{},
		translate: func(l *oc.Lhcnp_Lhcnp, lc *lhcnp.Config, _ *Ports) (any, bool, error) {
			pe, transit, err := FCNConfig(l, lc)
			return fcn.Roles{PE: pe, Transit: transit}, pe.Enabled || transit.Enabled, err
		},
		off: func(cfg any) any {
			r := cfg.(fcn.Roles)
			r.PE.Enabled, r.Transit.Enabled = false, false
			return r
		},
		create: func(node *lhcnp.Node, _ any) (mechanism.Function, error) { return fcn.NewFunction(node), nil },
		state: func(root *oc.Root, st, cfg any, v stateEnv) {
			s := st.(fcn.State)
			fcnState(root, cfg.(fcn.Roles), &s, v.wallNS)
		},
		// A transit node's notifications are FCN messages.
		queueCount: func(cfg any) queueCounter {
			if !cfg.(fcn.Roles).Transit.Enabled {
				return nil
			}
			return func(k *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue_State_Counters, n *uint64) { k.FcnSent = n }
		},
		format: func(cfg any) oc.E_LhcnpTypes_NotificationFormat {
			if cfg.(fcn.Roles).Transit.Enabled {
				return oc.LhcnpTypes_NotificationFormat_FCN
			}
			return oc.LhcnpTypes_NotificationFormat_UNSET
		},
	})
}

const fcnRolePath = "/lhcnp/global/config/fcn-role"

// FCNConfig translates the FCN leaves (global fcn-role, /lhcnp/fcn) into
// the configuration of the node's role: pe for INGRESS_PE, transit for
// TRANSIT (a WAN node reads each tunnelled packet's flow label from its
// outer IPv6 header, which the ingress PE's encapsulation puts in the
// frames); at most one is enabled, both carry the /lhcnp/fcn parameters.
// FCN with Fast CNP or a Long-haul CNP format is refused: they would
// notify the sender of the same congestion. Errors name the YANG path.
func FCNConfig(l *oc.Lhcnp_Lhcnp, lc *lhcnp.Config) (pe, transit fcn.Config, err error) {
	c, err := fcnParams(l, lc)
	if err != nil {
		return c, c, err
	}
	pe, transit = c, c
	pe.Enabled, transit.Enabled = false, false
	switch l.GetGlobal().GetConfig().GetFcnRole() {
	case oc.LhcnpTypes_FcnRole_INGRESS_PE:
		pe.Enabled = true
	case oc.LhcnpTypes_FcnRole_TRANSIT:
		transit.Enabled = true
	}
	return pe, transit, nil
}

// fcnParams reads /lhcnp/fcn, with the shared leaves (source address,
// CNP DSCP, code points, flow table) from lc, and checks that the role can run beside
// the other mechanisms configured.
func fcnParams(l *oc.Lhcnp_Lhcnp, lc *lhcnp.Config) (fcn.Config, error) {
	c := fcn.DefaultConfig()
	c.SourceAddress = lc.SourceAddress
	c.CNPDSCP = lc.CNPDSCP
	c.CodePoints = lc.CodePoints
	c.FlowTable = lc.FlowTable
	if l == nil {
		return c, nil
	}
	g := l.GetGlobal().GetConfig()
	c.Enabled = g.GetFcnRole() == oc.LhcnpTypes_FcnRole_INGRESS_PE || g.GetFcnRole() == oc.LhcnpTypes_FcnRole_TRANSIT
	if c.Enabled && g.GetFastCnpEnabled() {
		return c, invalid(fcnRolePath, "FCN and Fast CNP cannot both run on one node (each would notify the sender of the same congestion)")
	}
	if c.Enabled && (g.GetLongHaulCnpIcmpv6() || g.GetLongHaulCnpRocev2()) {
		return c, invalid(fcnRolePath, "FCN and Long-haul CNP cannot both run on one node (each would notify the sender of the same congestion); turn long-haul-cnp-icmpv6 and long-haul-cnp-rocev2 off first")
	}
	const at = "/lhcnp/fcn/config"
	if f := l.GetFcn().GetConfig(); f != nil {
		if f.MaxMappings != nil {
			c.MaxMappings = int(*f.MaxMappings)
			// YANG takes any uint32: the flow labels bound it.
			if err := fcn.CheckMaxMappings(c.MaxMappings); err != nil {
				return c, invalid(at+"/max-mappings", "%v", err)
			}
		}
		if f.AgingTimeout != nil {
			c.AgingTimeout = engine.Time(*f.AgingTimeout) * engine.Second
		}
		if f.CongestionThreshold != nil {
			c.KMaxBytes = schema.ClampInt64(*f.CongestionThreshold)
		}
		if f.MinCnpInterval != nil {
			c.MinCNPInterval = usec(*f.MinCnpInterval)
		}
		if f.Domain != nil {
			d, err := prefixes(at+"/domain", f.Domain)
			if err != nil {
				return c, err
			}
			c.Domain = d
		}
	}
	if err := c.Validate(); err != nil {
		return c, invalid(at, "%v", err)
	}
	return c, nil
}

// fcnState writes the configuration of the role configured (r), the
// counters and the mappings into the state tree.
func fcnState(root *oc.Root, r fcn.Roles, v *fcn.State, wallNS func(engine.Time) uint64) {
	l := root.GetOrCreateLhcnp()
	role, c := oc.LhcnpTypes_FcnRole_DISABLED, r.PE
	switch {
	case r.PE.Enabled:
		role = oc.LhcnpTypes_FcnRole_INGRESS_PE
	case r.Transit.Enabled:
		role, c = oc.LhcnpTypes_FcnRole_TRANSIT, r.Transit
	}
	l.GetOrCreateGlobal().GetOrCreateState().FcnRole = role
	f := l.GetOrCreateFcn()
	s := f.GetOrCreateState()
	s.MaxMappings = ygot.Uint32(uint32(c.MaxMappings))
	s.AgingTimeout = ygot.Uint32(uint32(c.AgingTimeout / engine.Second))
	s.CongestionThreshold = ygot.Uint64(uint64(c.KMaxBytes))
	s.MinCnpInterval = ygot.Uint32(uint32(c.MinCNPInterval / engine.Microsecond))
	for _, p := range c.Domain {
		s.Domain = append(s.Domain, p.String())
	}
	s.MappingCount = ygot.Uint32(uint32(len(v.Mappings)))
	k := s.GetOrCreateCounters()
	n, tn := &v.PECounters, &v.TransitCounters
	k.FcnReceived = ygot.Uint64(uint64(n.FCNReceived))
	k.CnpTranslated = ygot.Uint64(uint64(n.CNPTranslated))
	// The PE sent them (the node counts only its direct CNPs), for
	// congestion on a WAN node.
	addNotificationsSent(root, nil, "", n.CNPTranslated)
	k.UnknownFlowLabel = ygot.Uint64(uint64(n.UnknownFlowLabel))
	k.MappingsCreated = ygot.Uint64(uint64(n.MappingsCreated))
	k.MappingsAged = ygot.Uint64(uint64(n.MappingsAged))
	k.EncapsulatedPackets = ygot.Uint64(uint64(n.Encapsulated))
	k.FcnSent = ygot.Uint64(uint64(tn.FCNSent))
	k.TunnelledPackets = ygot.Uint64(uint64(tn.TunnelledPackets))
	k.NotTunnelled = ygot.Uint64(uint64(tn.NotTunnelled))
	k.NotEcnCapable = ygot.Uint64(uint64(tn.NotECNCapable))
	for _, m := range v.Mappings {
		ms := f.GetOrCreateMappings().GetOrCreateMapping(m.FlowLabel).GetOrCreateState()
		ms.FlowLabel = ygot.Uint32(m.FlowLabel)
		ms.SourceAddress, ms.DestinationAddress = ygot.String(m.Flow.Src.String()), ygot.String(m.Flow.Dst.String())
		ms.SourceQp, ms.DestinationQp = ygot.Uint32(m.Flow.SrcQP), ygot.Uint32(m.Flow.DstQP)
		ms.CreatedTime, ms.LastSeen = ygot.Uint64(wallNS(m.Created)), ygot.Uint64(wallNS(m.LastSeen))
		mc := ms.GetOrCreateCounters()
		mc.Packets, mc.FcnReceived = ygot.Uint64(uint64(m.Packets)), ygot.Uint64(uint64(m.FCNReceived))
	}
}
