package dataplane

import (
	"errors"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/gen/oc"
)

// RegisterUncreatable registers, until the test ends, a mechanism beside
// the node named name, configured on when on says so, whose function
// cannot be created: a Set that turns it on fails once the functions
// before it are created, before anything is configured.
func RegisterUncreatable(t testing.TB, name string, on func(*oc.Lhcnp_Lhcnp) bool) {
	registerBeside(t, name, on, func(*lhcnp.Node, any) (mechanism.Function, error) {
		return nil, errors.New(name + ": cannot be created")
	})
}

// RegisterWatcher registers, until the test ends, a mechanism beside the
// node named name, on when on says so, whose function counts the packets
// enqueued on the switch's ports into *enqueued.
func RegisterWatcher(t testing.TB, name string, on func(*oc.Lhcnp_Lhcnp) bool, enqueued *int64) {
	registerBeside(t, name, on, func(*lhcnp.Node, any) (mechanism.Function, error) { return watcher{enqueued}, nil })
}

// registerBeside registers, until the test ends, a mechanism beside the
// node with no configuration and no state, on when on says so, whose
// function create makes.
func registerBeside(t testing.TB, name string, on func(*oc.Lhcnp_Lhcnp) bool, create func(*lhcnp.Node, any) (mechanism.Function, error)) {
	register(mechanismKind{
		name:   name,
		beside: true,
		translate: func(l *oc.Lhcnp_Lhcnp, _ *lhcnp.Config, _ *Ports) (any, bool, error) {
			return struct{}{}, on(l), nil
		},
		off:    func(cfg any) any { return cfg },
		create: create,
		state:  func(*oc.Root, any, any, stateEnv) {},
		idle:   struct{}{},
	})
	t.Cleanup(func() { delete(registry, name) })
}

// watcher is RegisterWatcher's function.
type watcher struct{ enqueued *int64 }

func (watcher) Validate(any) error                              { return nil }
func (watcher) Configure(any, lhcnp.Config) error               { return nil }
func (w watcher) Observer() netsim.PortObserver                 { return w }
func (watcher) State() any                                      { return struct{}{} }
func (watcher) Counters() map[string]int64                      { return nil }
func (w watcher) OnEnqueue(*netsim.Port, *netsim.Packet, int64) { *w.enqueued++ }
func (watcher) OnDequeue(*netsim.Port, *netsim.Packet, int64)   {}
func (watcher) OnMark(*netsim.Port, *netsim.Packet, int64)      {}
func (watcher) OnDrop(*netsim.Port, *netsim.Packet, int64)      {}

// Unregister removes a mechanism RegisterUncreatable registered, before
// the test ends.
func Unregister(name string) { delete(registry, name) }

// RegisterUnconfigurable registers, until the test ends, a mechanism
// beside the node named name, always on, whose function validates every
// configuration and whose Configure refuses while refuse says so: a Set
// after the one that created it fails once the mechanisms before it (the
// modes, then those beside in the kinds' order) were configured, the
// path where applyMechanisms sets the switch back.
func RegisterUnconfigurable(t testing.TB, name string, refuse func() bool) {
	registerBeside(t, name, func(*oc.Lhcnp_Lhcnp) bool { return true }, func(*lhcnp.Node, any) (mechanism.Function, error) {
		return refuser{watcher: watcher{new(int64)}, name: name, refuse: refuse}, nil
	})
}

// refuser is RegisterUnconfigurable's function.
type refuser struct {
	watcher
	name   string
	refuse func() bool
}

func (f refuser) Configure(any, lhcnp.Config) error {
	if f.refuse() {
		return errors.New(f.name + ": configuration refused")
	}
	return nil
}
func (f refuser) Observer() netsim.PortObserver { return f }

// RegisterUnconfigurableMode registers, until the test ends, a mode named
// name that is never on but always created (standing work), whose
// Configure, switched off as it always is, hands the node lc as a mode
// switched off does, or refuses while refuse says so: a Set fails once
// the modes before it in the kinds' order were switched off, the node
// given the Set's configuration, and the switch is set back.
func RegisterUnconfigurableMode(t testing.TB, name string, refuse func() bool) {
	register(mechanismKind{
		name: name,
		translate: func(*oc.Lhcnp_Lhcnp, *lhcnp.Config, *Ports) (any, bool, error) {
			return struct{}{}, false, nil
		},
		off: func(cfg any) any { return cfg },
		create: func(node *lhcnp.Node, _ any) (mechanism.Function, error) {
			return modeRefuser{refuser: refuser{watcher: watcher{new(int64)}, name: name, refuse: refuse}, node: node}, nil
		},
		standing: func(any) bool { return true },
		state:    func(*oc.Root, any, any, stateEnv) {},
		idle:     struct{}{},
	})
	t.Cleanup(func() { delete(registry, name) })
}

// modeRefuser is RegisterUnconfigurableMode's function.
type modeRefuser struct {
	refuser
	node *lhcnp.Node
}

func (f modeRefuser) Configure(cfg any, lc lhcnp.Config) error {
	if err := f.refuser.Configure(cfg, lc); err != nil {
		return err
	}
	return f.node.SetNotifier(nil, lc)
}
