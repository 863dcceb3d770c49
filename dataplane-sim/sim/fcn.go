package sim

import (
	"net/netip"
	"slices"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/fcn"
	"github.com/lhcnp/lhcnp/dataplane-sim/install"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// FCNConfig maps the scenario's fcn parameters onto a node's
// configuration (both roles).
func FCNConfig(p scenario.FCN) fcn.Config {
	c := fcn.DefaultConfig()
	c.Enabled = true
	c.KMaxBytes = int64(p.KMax)
	c.MinCNPInterval = engine.FromDuration(p.CNPInterval)
	c.AgingTimeout = engine.FromDuration(p.Aging)
	c.MaxMappings = p.MaxMappings
	return c
}

func init() { install.RegisterCutInstaller(scenario.MechanismFCN, installFCN) }

// installFCN attaches an ingress PE (package fcn) to the block's ingress
// nodes, its tunnel being its ports towards the block's other nodes, and
// a transit node to the others. The hosts need nothing new (standard
// CNPs). Notifications: sent_fcn (messages from transit nodes) and
// sent_fcn-cnp (standard CNPs from the PEs); the meter times a sender's
// cut from the moment the transit node (or the congested PE) reported.
func installFCN(env *Env) error {
	p := env.Mech.FCN()
	cfg := FCNConfig(p)
	inBlock := map[*netsim.Switch]bool{}
	for _, sw := range env.Nodes {
		inBlock[sw] = true
		// The controlled domain: the block's nodes.
		if a := sw.Addr(); a.IsValid() {
			cfg.Domain = append(cfg.Domain, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	var fns []mechanism.Function
	// from: the switch that reports it, whose partition's time it is.
	record := func(from *netsim.Switch, node string, k lhcnp.FlowKey) {
		env.NodeEventFrom(from, &lhcnp.Event{Kind: lhcnp.EventCNPSent, Time: from.Sim().Now(), Node: node, Flow: k})
	}
	for _, sw := range env.Nodes {
		if !slices.Contains(p.Ingress, sw.Name()) {
			continue
		}
		var tunnel []*netsim.Port
		for _, pt := range sw.Ports() {
			if peer, ok := pt.Peer().Node().(*netsim.Switch); ok && inBlock[peer] {
				tunnel = append(tunnel, pt)
			}
		}
		name := sw.Name()
		onEvent := func(ev lhcnp.Event) {
			if ev.Kind == lhcnp.EventCNPSent {
				env.Count(name, "fcn-cnp", 1)
				record(sw, name, ev.Flow)
			}
		}
		pe, err := fcn.AttachPE(env.Net, sw, cfg, tunnel, lhcnp.WithEvents(onEvent))
		if err != nil {
			return err
		}
		pe.OnTranslated = func(lhcnp.FlowKey) { env.Count(name, "fcn-cnp", 1) }
		env.TapSwitch(sw, pe)
		fns = append(fns, fcn.FunctionOf(pe, nil))
	}
	for _, sw := range env.Nodes {
		if slices.Contains(p.Ingress, sw.Name()) {
			continue
		}
		name := sw.Name()
		tr, err := fcn.AttachTransit(env.Net, sw, cfg)
		if err != nil {
			return err
		}
		tr.OnSent = func(k lhcnp.FlowKey, pe *netsim.Switch) {
			env.Count(name, "fcn", 1)
			record(sw, pe.Name(), k)
		}
		env.TapSwitch(sw, tr.Observer())
		fns = append(fns, fcn.FunctionOf(nil, tr))
	}
	env.Signal("fcn", true)
	env.CountFunctions(fns)
	return nil
}
