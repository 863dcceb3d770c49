package dataplane

import (
	"github.com/openconfig/ygot/ygot"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/fastcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/fcn"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/switchcnp"
	"github.com/lhcnp/lhcnp/gen/oc"
)

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

// fcnParams reads /lhcnp/fcn and checks that the role can run beside the
// other mechanisms configured.
func fcnParams(l *oc.Lhcnp_Lhcnp, lc *lhcnp.Config) (fcn.Config, error) {
	c := fcn.DefaultConfig()
	c.CNPDSCP = lc.CNPDSCP
	c.CodePoints = lc.CodePoints
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
		}
		if f.AgingTimeout != nil {
			c.AgingTimeout = engine.Time(*f.AgingTimeout) * engine.Second
		}
		if f.CongestionThreshold != nil {
			c.KMaxBytes = int64(*f.CongestionThreshold)
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

// tunnelPorts are the served switch's ports towards other switches: an
// ingress PE's tunnel into the WAN.
func tunnelPorts(sw *netsim.Switch) []*netsim.Port {
	var out []*netsim.Port
	for _, pt := range sw.Ports() {
		if _, ok := pt.Peer().Node().(*netsim.Switch); ok {
			out = append(out, pt)
		}
	}
	return out
}

// fcnView is what the state tree shows of FCN: the ingress PE's
// configuration, counters and mappings, the transit function's
// configuration and counters (each zero when the switch never had it).
type fcnView struct {
	pe       fcn.Config
	pn       fcn.PECounters
	mappings []fcn.Mapping
	transit  fcn.Config
	tn       fcn.TransitCounters
}

// fcnState writes the configuration of the role in use, the counters
// and the mappings into the state tree.
func fcnState(root *oc.Root, v *fcnView, wallNS func(engine.Time) uint64) {
	l := root.GetOrCreateLhcnp()
	role, c := oc.LhcnpTypes_FcnRole_DISABLED, v.pe
	switch {
	case v.pe.Enabled:
		role = oc.LhcnpTypes_FcnRole_INGRESS_PE
	case v.transit.Enabled:
		role, c = oc.LhcnpTypes_FcnRole_TRANSIT, v.transit
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
	s.MappingCount = ygot.Uint32(uint32(len(v.mappings)))
	k := s.GetOrCreateCounters()
	n, tn := &v.pn, &v.tn
	k.FcnReceived = ygot.Uint64(uint64(n.FCNReceived))
	k.CnpTranslated = ygot.Uint64(uint64(n.CNPTranslated))
	k.UnknownFlowLabel = ygot.Uint64(uint64(n.UnknownFlowLabel))
	k.MappingsCreated = ygot.Uint64(uint64(n.MappingsCreated))
	k.MappingsAged = ygot.Uint64(uint64(n.MappingsAged))
	k.EncapsulatedPackets = ygot.Uint64(uint64(n.Encapsulated))
	k.FcnSent = ygot.Uint64(uint64(tn.FCNSent))
	k.TunnelledPackets = ygot.Uint64(uint64(tn.TunnelledPackets))
	k.NotTunnelled = ygot.Uint64(uint64(tn.NotTunnelled))
	k.NotEcnCapable = ygot.Uint64(uint64(tn.NotECNCapable))
	for _, m := range v.mappings {
		ms := f.GetOrCreateMappings().GetOrCreateMapping(m.FlowLabel).GetOrCreateState()
		ms.FlowLabel = ygot.Uint32(m.FlowLabel)
		ms.SourceAddress, ms.DestinationAddress = ygot.String(m.Flow.Src.String()), ygot.String(m.Flow.Dst.String())
		ms.SourceQp, ms.DestinationQp = ygot.Uint32(m.Flow.SrcQP), ygot.Uint32(m.Flow.DstQP)
		ms.CreatedTime, ms.LastSeen = ygot.Uint64(wallNS(m.Created)), ygot.Uint64(wallNS(m.LastSeen))
		mc := ms.GetOrCreateCounters()
		mc.Packets, mc.FcnReceived = ygot.Uint64(uint64(m.Packets)), ygot.Uint64(uint64(m.FCNReceived))
	}
}

// applyMode puts the served switch in the mode the configuration asks
// for, on the engine goroutine: Fast CNP (fc), FCN's ingress PE (pc) or
// transit node (tc), the white paper's switch CNP (wc) or Long-haul CNP
// (lc) as configured. The
// translation refused the combinations that cannot coexist, so at most one
// is on. Its wrapper is created on first use, the other wrappers are
// switched off first, and the switch's observer is the active wrapper (the
// node itself for Long-haul CNP); Rate Advice goes beside it afterwards.
func (b *Binding) applyMode(fc fastcnp.Config, pc, tc fcn.Config, wc switchcnp.Config, lc lhcnp.Config) error {
	var err error
	if fc.Enabled && b.fast == nil {
		if b.fast, err = newFastFunction(b.node); err != nil {
			return err
		}
	}
	if pc.Enabled && b.pe == nil {
		b.pe = fcn.WrapPE(b.node, tunnelPorts(b.node.Switch()))
	}
	if tc.Enabled && b.transit == nil {
		b.transit = fcn.WrapTransit(b.node)
	}
	if wc.Enabled && b.wp == nil {
		b.wp = switchcnp.Wrap(b.node)
	}
	fcOff, pcOff, tcOff, wcOff := fc, pc, tc, wc
	fcOff.Enabled, pcOff.Enabled, tcOff.Enabled, wcOff.Enabled = false, false, false, false
	// Off first, the active one last: each Apply sets the node's mode.
	type mode struct {
		exists, on bool
		apply      func(on bool) error
		obs        netsim.PortObserver
	}
	var modes []mode
	if b.fast != nil {
		modes = append(modes, mode{true, fc.Enabled, func(on bool) error {
			if on {
				return b.fast.apply(fc, lc)
			}
			return b.fast.apply(fcOff, lc)
		}, b.fast.node})
	}
	if b.pe != nil {
		modes = append(modes, mode{true, pc.Enabled, func(on bool) error {
			if on {
				return b.pe.Apply(pc, lc)
			}
			return b.pe.Apply(pcOff, lc)
		}, b.pe})
	}
	if b.transit != nil {
		modes = append(modes, mode{true, tc.Enabled, func(on bool) error {
			if on {
				return b.transit.Apply(tc, lc)
			}
			return b.transit.Apply(tcOff, lc)
		}, b.transit})
	}
	if b.wp != nil {
		modes = append(modes, mode{true, wc.Enabled, func(on bool) error {
			if on {
				return b.wp.Apply(wc, lc)
			}
			return b.wp.Apply(wcOff, lc)
		}, b.wp})
	}
	var active netsim.PortObserver = b.node
	for _, m := range modes {
		if !m.on {
			if err := m.apply(false); err != nil {
				return err
			}
		}
	}
	done := false
	for _, m := range modes {
		if m.on {
			if err := m.apply(true); err != nil {
				return err
			}
			active, done = m.obs, true
		}
	}
	if !done && len(modes) == 0 {
		if err := b.node.ApplyConfig(lc); err != nil {
			return err
		}
	}
	b.node.Switch().SetObserver(active)
	return nil
}
