package fcn

import (
	"fmt"

	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
)

// Function is FCN as a mechanism.Function: the switch's ingress PE and
// its transit function, each created the first time its role is on, at
// most one on. Its configuration is a Roles, its state a State.
type Function struct {
	lh      *lhcnp.Node
	pe      *PE
	transit *Transit
}

var _ mechanism.Function = (*Function)(nil)

// Roles configures both roles of a Function; at most one is enabled.
type Roles struct {
	PE, Transit Config
}

// State is what a Function shows: each role's configuration and counters
// and the PE's mappings (zero for a role the switch never had).
type State struct {
	PE              Config
	PECounters      PECounters
	Mappings        []Mapping
	Transit         Config
	TransitCounters TransitCounters
}

// NewFunction is FCN on the switch of the Long-haul CNP node lh, both
// roles off: an ingress PE wraps lh (WrapPE, its tunnel being the
// switch's ports towards other switches) or a transit function does
// (WrapTransit) when Configure first turns that role on.
func NewFunction(lh *lhcnp.Node) *Function { return &Function{lh: lh} }

// FunctionOf is the Function of roles attached on their own (AttachPE,
// AttachTransit); either may be nil.
func FunctionOf(pe *PE, transit *Transit) *Function { return &Function{pe: pe, transit: transit} }

func roles(cfg any) (Roles, error) {
	r, err := mechanism.ConfigAs[Roles](cfg)
	if err != nil {
		return r, fmt.Errorf("fcn: %w", err)
	}
	if r.PE.Enabled && r.Transit.Enabled {
		return r, fmt.Errorf("fcn: a switch is an ingress PE or a transit node, not both")
	}
	return r, nil
}

// Validate implements mechanism.Function.
func (f *Function) Validate(cfg any) error {
	r, err := roles(cfg)
	if err != nil {
		return err
	}
	for _, c := range []Config{r.PE, r.Transit} {
		if err := c.Validate(); err != nil {
			return fmt.Errorf("fcn: %w", err)
		}
	}
	return nil
}

// Configure implements mechanism.Function: the roles that exist are
// switched off first, the enabled one (created on first use) last, since
// each sets the node's mode. With no role enabled and none created yet
// (a function created and never configured on: a Set that failed after
// creating it), the node is handed lc all the same, as a role switched
// off hands it back. Everything the roles and the node would refuse is
// checked first: a role's creation wraps the node (the ports' observer,
// the local handler, the rewrite stage), which a refusal after it would
// leave behind.
func (f *Function) Configure(cfg any, lc lhcnp.Config) error {
	r, err := roles(cfg)
	if err != nil {
		return err
	}
	if err := f.check(r, lc); err != nil {
		return err
	}
	if r.PE.Enabled && f.pe == nil {
		f.pe = WrapPE(f.lh, tunnelPorts(f.lh.Switch()))
	}
	if r.Transit.Enabled && f.transit == nil {
		f.transit = WrapTransit(f.lh)
	}
	if f.pe != nil && !r.PE.Enabled {
		if err := f.pe.Apply(r.PE, lc); err != nil {
			return err
		}
	}
	if f.transit != nil && !r.Transit.Enabled {
		if err := f.transit.Apply(r.Transit, lc); err != nil {
			return err
		}
	}
	switch {
	case r.PE.Enabled:
		return f.pe.Apply(r.PE, lc)
	case r.Transit.Enabled:
		return f.transit.Apply(r.Transit, lc)
	case f.pe == nil && f.transit == nil && f.lh != nil:
		if err := setMode(f.lh, nil, r.PE, lc); err != nil {
			return err
		}
	}
	return nil
}

// check tells whether Configure would take r and lc, changing nothing:
// each role's configuration, and what the node is handed: lc by a role
// switched off (or by none, with none enabled), the enabled role's
// detection configuration with its notifier. A Function of roles
// attached on their own (FunctionOf) creates nothing: its roles check.
func (f *Function) check(r Roles, lc lhcnp.Config) error {
	for _, c := range []Config{r.PE, r.Transit} {
		if err := c.Validate(); err != nil {
			return fmt.Errorf("fcn: %w", err)
		}
	}
	if f.lh == nil {
		return nil
	}
	on := r.PE.Enabled || r.Transit.Enabled
	if !on || f.pe != nil && !r.PE.Enabled || f.transit != nil && !r.Transit.Enabled {
		if err := f.lh.CheckConfig(lc, false); err != nil {
			return fmt.Errorf("fcn: %w", err)
		}
	}
	var node Config
	switch {
	case r.PE.Enabled:
		node = r.PE
	case r.Transit.Enabled:
		node = r.Transit
	default:
		return nil
	}
	if err := f.lh.CheckConfig(node.nodeConfig(), true); err != nil {
		return fmt.Errorf("fcn: %w", err)
	}
	return nil
}

// tunnelPorts are the switch's ports towards other switches: an ingress
// PE's tunnel into the WAN.
func tunnelPorts(sw *netsim.Switch) []*netsim.Port {
	var out []*netsim.Port
	for _, pt := range sw.Ports() {
		if _, ok := pt.Peer().Node().(*netsim.Switch); ok {
			out = append(out, pt)
		}
	}
	return out
}

// Observer implements mechanism.Function: the role that is on.
func (f *Function) Observer() netsim.PortObserver {
	switch {
	case f.pe != nil && f.pe.cfg.Enabled:
		return f.pe
	case f.transit != nil && f.transit.cfg.Enabled:
		return f.transit
	}
	return nil
}

// State implements mechanism.Function: a State.
func (f *Function) State() any {
	var s State
	if f.pe != nil {
		s.PE, s.PECounters, s.Mappings = f.pe.Config(), f.pe.Counters(), f.pe.Mappings()
	}
	if f.transit != nil {
		s.Transit, s.TransitCounters = f.transit.Config(), f.transit.Counters()
	}
	return s
}

// Counters implements mechanism.Function: those of the roles the switch
// has.
func (f *Function) Counters() map[string]int64 {
	out := map[string]int64{}
	if pe := f.pe; pe != nil {
		c := pe.Counters()
		out["fcn_received"] = c.FCNReceived
		out["fcn_translated"] = c.CNPTranslated
		out["fcn_unknown_label"] = c.UnknownFlowLabel
		out["fcn_direct_cnp"] = c.DirectCNPs
		out["fcn_mappings"] = c.MappingsCreated
		out["fcn_encapsulated"] = c.Encapsulated
	}
	if tr := f.transit; tr != nil {
		out["fcn_not_tunnelled"] = tr.Counters().NotTunnelled
	}
	return out
}
