package dataplane

import (
	"github.com/openconfig/ygot/ygot"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/dataplane-sim/switchcnp"
	"github.com/lhcnp/lhcnp/gen/oc"
)

func init() {
	register(mechanismKind{
		name: "switch-cnp",
		idle: switchcnp.State{},
		translate: func(l *oc.Lhcnp_Lhcnp, lc *lhcnp.Config, _ *Ports) (any, bool, error) {
			c, err := SwitchCNPConfig(l, lc)
			return c, c.Enabled, err
		},
		off: func(cfg any) any {
			c := cfg.(switchcnp.Config)
			c.Enabled = false
			return c
		},
		create: func(node *lhcnp.Node, _ any) (mechanism.Function, error) { return switchcnp.NewFunction(node), nil },
		state: func(root *oc.Root, st, cfg any, _ stateEnv) {
			s := st.(switchcnp.State)
			switchCNPState(root, cfg.(switchcnp.Config), s.Counters, s.Sent)
		},
		format: func(cfg any) oc.E_LhcnpTypes_NotificationFormat {
			if cfg.(switchcnp.Config).Enabled {
				return oc.LhcnpTypes_NotificationFormat_STANDARD_CNP
			}
			return oc.LhcnpTypes_NotificationFormat_UNSET
		},
	})
}

const switchCNPPath = "/lhcnp/switch-cnp/config/enabled"

// SwitchCNPConfig translates /lhcnp/switch-cnp (the white paper's
// practice) into the node's configuration; the DSCP, the source address
// and the flow table come from lc. On with Fast CNP, FCN or a Long-haul CNP format it is
// refused naming the leaf: each would notify the sender of the same
// congestion. Errors name the YANG path.
func SwitchCNPConfig(l *oc.Lhcnp_Lhcnp, lc *lhcnp.Config) (switchcnp.Config, error) {
	c := switchcnp.DefaultConfig()
	c.DSCP = lc.CNPDSCP
	c.SourceAddress = lc.SourceAddress
	c.FlowTable = lc.FlowTable
	s := l.GetSwitchCnp().GetConfig()
	if s == nil {
		return c, nil
	}
	setBool(&c.Enabled, s.Enabled)
	if s.DelayThreshold != nil {
		c.DelayThreshold = usec(*s.DelayThreshold)
	}
	if s.BufferShare != nil {
		c.BufferSharePercent = int(*s.BufferShare)
	}
	if s.MinCnpInterval != nil {
		c.MinCNPInterval = usec(*s.MinCnpInterval)
	}
	if c.Enabled {
		g := l.GetGlobal().GetConfig()
		switch {
		case g.GetFastCnpEnabled():
			return c, invalid(switchCNPPath, "the switch CNP and Fast CNP cannot both run on one node (each would notify the sender of the same congestion)")
		case g.GetFcnRole() == oc.LhcnpTypes_FcnRole_INGRESS_PE || g.GetFcnRole() == oc.LhcnpTypes_FcnRole_TRANSIT:
			return c, invalid(switchCNPPath, "the switch CNP and FCN cannot both run on one node (each would notify the sender of the same congestion)")
		case g.GetLongHaulCnpIcmpv6() || g.GetLongHaulCnpRocev2():
			return c, invalid(switchCNPPath, "the switch CNP and Long-haul CNP cannot both run on one node (each would notify the sender of the same congestion); turn long-haul-cnp-icmpv6 and long-haul-cnp-rocev2 off first")
		}
	}
	if err := c.Validate(); err != nil {
		return c, invalid("/lhcnp/switch-cnp/config", "%v", err)
	}
	return c, nil
}

// switchCNPState writes the configuration as configured and the counters.
func switchCNPState(root *oc.Root, c switchcnp.Config, n switchcnp.Counters, sent int64) {
	s := root.GetOrCreateLhcnp().GetOrCreateSwitchCnp().GetOrCreateState()
	s.Enabled = ygot.Bool(c.Enabled)
	s.DelayThreshold = ygot.Uint32(uint32(c.DelayThreshold / engine.Microsecond))
	s.BufferShare = ygot.Uint8(uint8(c.BufferSharePercent))
	s.MinCnpInterval = ygot.Uint32(uint32(c.MinCNPInterval / engine.Microsecond))
	k := s.GetOrCreateCounters()
	k.Sent = ygot.Uint64(uint64(sent))
	k.DelayedPackets = ygot.Uint64(uint64(n.Delayed))
	k.CongestionConfirmed = ygot.Uint64(uint64(n.Confirmed))
}
