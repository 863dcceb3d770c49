package switchcnp

import (
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
)

// Function is the switch CNP as a mechanism.Function; its configuration
// is a Config, its state a State.
type Function struct{ node *Node }

var _ mechanism.Function = (*Function)(nil)

// State is what the Function shows: the configuration in use, the
// counters and the CNPs sent.
type State struct {
	Config   Config
	Counters Counters
	Sent     int64
}

// NewFunction wraps the Long-haul CNP node lh (Wrap), disabled.
func NewFunction(lh *lhcnp.Node) *Function { return &Function{node: Wrap(lh)} }

// FunctionOf is the Function of a node attached on its own (Attach).
func FunctionOf(n *Node) *Function { return &Function{node: n} }

// Validate implements mechanism.Function.
func (f *Function) Validate(cfg any) error {
	return mechanism.Validate[Config](cfg, "switchcnp: switch "+f.node.sw.Name())
}

// Configure implements mechanism.Function: the switch's mode (Node.Apply).
func (f *Function) Configure(cfg any, lc lhcnp.Config) error {
	c, err := mechanism.ConfigAs[Config](cfg)
	if err != nil {
		return err
	}
	return f.node.Apply(c, lc)
}

// Observer implements mechanism.Function: the node.
func (f *Function) Observer() netsim.PortObserver { return f.node }

// State implements mechanism.Function: a State.
func (f *Function) State() any {
	return State{Config: f.node.Config(), Counters: f.node.Counters(), Sent: f.node.Sent()}
}

// Counters implements mechanism.Function.
func (f *Function) Counters() map[string]int64 {
	c := f.node.Counters()
	return map[string]int64{
		"delayed_packets":      c.Delayed,
		"congestion_confirmed": c.Confirmed,
		"max_delay_ns":         c.MaxDelay.Nanos(),
	}
}
