package fcn

import (
	"fmt"

	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
)

// Function is FCN as a mechanism.Function: the switch's ingress PE and
// its transit function, each created the first time its role is on, at
// most one on. Its configuration is a Roles, its state a State. It is a
// mechanism.Deferrer: a role created while held and off at Settle (a Set
// set back) is undone.
type Function struct {
	lh      *lhcnp.Node
	pe      *PE
	transit *Transit
	// held: between Hold and Settle. madePE and madeTransit: the roles
	// Configure created then, which Settle undoes if they are off (a Set
	// set back); local and rewrite are what the PE's creation replaced
	// on the switch.
	held                bool
	madePE, madeTransit bool
	local               netsim.LocalHandler
	rewrite             netsim.Forwarder
}

var _ mechanism.Deferrer = (*Function)(nil)

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
		sw := f.lh.Switch()
		local, rewrite := sw.LocalHandler(), sw.Forwarder(netsim.StageRewrite)
		f.pe = WrapPE(f.lh, tunnelPorts(sw))
		if f.held {
			f.madePE, f.local, f.rewrite = true, local, rewrite
			f.pe.hold()
		}
	}
	if r.Transit.Enabled && f.transit == nil {
		f.transit = WrapTransit(f.lh)
		f.madeTransit = f.held
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

// Hold implements mechanism.Deferrer: until Settle, the PE's aging timer
// is not re-armed, and the roles Configure creates are noted.
func (f *Function) Hold() {
	if f.held {
		return
	}
	f.held, f.madePE, f.madeTransit = true, false, false
	if f.pe != nil {
		f.pe.hold()
	}
}

// Settle implements mechanism.Deferrer: a role created since Hold that is
// off (the Set that created it set back) is undone, the PE's local
// handler and rewrite stage given back to what they replaced (the ports'
// observer is the caller's, as the node's mode is); the PE's aging timer
// is re-armed, once, if its period is not the one at Hold.
func (f *Function) Settle() {
	if !f.held {
		return
	}
	f.held = false
	if f.madePE && !f.pe.cfg.Enabled {
		sw := f.pe.sw
		sw.SetLocalHandler(f.local)
		sw.SetForwarder(netsim.StageRewrite, f.rewrite)
		f.pe = nil
	}
	if f.pe != nil {
		f.pe.settle()
	}
	if f.madeTransit && !f.transit.cfg.Enabled {
		f.transit = nil
	}
	f.madePE, f.madeTransit, f.local, f.rewrite = false, false, nil, nil
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
