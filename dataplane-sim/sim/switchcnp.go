package sim

import (
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/install"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/dataplane-sim/switchcnp"
)

// SwitchCNPConfig maps the scenario's switch-cnp parameters onto a node's
// configuration.
func SwitchCNPConfig(p scenario.SwitchCNP) switchcnp.Config {
	c := switchcnp.DefaultConfig()
	c.Enabled = true
	c.DSCP = uint8(p.DSCP)
	c.DelayThreshold = engine.FromDuration(p.DelayThreshold)
	c.BufferSharePercent = p.BufferShare
	c.MinCNPInterval = engine.FromDuration(p.CNPInterval)
	c.FlowTable.IdleTimeout = engine.FromDuration(p.FlowAging)
	c.FlowTable.MaxEntries = p.MaxEntries
	return c
}

func init() { install.RegisterCutInstaller(scenario.MechanismSwitchCNP, installSwitchCNP) }

// installSwitchCNP attaches the white paper's node (package switchcnp) to
// every switch of the block. The hosts need nothing new: the CNPs are
// standard ones their DCQCN reacts to. Notifications count as
// sent_switch-cnp; the meter times them as the block's signal.
func installSwitchCNP(env *Env) error {
	cfg := SwitchCNPConfig(env.Mech.SwitchCNP())
	var fns []mechanism.Function
	for _, sw := range env.Nodes {
		name := sw.Name()
		onEvent := func(ev lhcnp.Event) {
			if ev.Kind == lhcnp.EventCNPSent {
				env.Count(name, "switch-cnp", 1)
			}
			env.NodeEvent(&ev)
		}
		n, err := switchcnp.Attach(env.Net, sw, cfg, lhcnp.WithEvents(onEvent))
		if err != nil {
			return err
		}
		env.TapSwitch(sw, n)
		fns = append(fns, switchcnp.FunctionOf(n))
	}
	env.Signal("switch-cnp", true)
	env.CountFunctions(fns)
	return nil
}
