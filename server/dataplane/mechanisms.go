package dataplane

import (
	"maps"
	"slices"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/gen/oc"
)

// A mechanismKind is how the target runs one mechanism beside the served
// switch's Long-haul CNP node: its YANG leaves translated into the
// dataplane's configuration, its mechanism.Function created on the node the
// first time it is on, and its state written into the YANG state tree.
// Each mechanism's file registers its kind (register, from init); the
// Binding holds no field and no case per mechanism.
type mechanismKind struct {
	name string
	// beside: the function runs beside the node's mode (Rate Advice)
	// instead of being it.
	beside bool
	// translate reads the mechanism's leaves into its configuration,
	// validated, and tells whether they turn it on; lc is the translated
	// Long-haul CNP configuration (the leaves the mechanisms share).
	// Errors name the YANG path.
	translate func(l *oc.Lhcnp_Lhcnp, lc *lhcnp.Config, ports *Ports) (cfg any, on bool, err error)
	// create makes the function on node the first time cfg turns it on:
	// off for a mode (Configure follows), configured for one beside.
	create func(node *lhcnp.Node, cfg any) (mechanism.Function, error)
	// state writes the function's State into root.
	state func(root *oc.Root, st any, v stateEnv)
	// queueCount, if set, returns the per-queue counter leaf that the
	// notifications the node hands to this mechanism count in, or nil.
	queueCount func(st any) queueCounter
	// format, if set, is the format of the notifications the node hands
	// to this mechanism while it runs (UNSET when it does not): the last
	// CNP's format when it went that way (lhcnp.FormatExternal).
	format func(st any) oc.E_LhcnpTypes_NotificationFormat
}

// queueCounter sets one counter leaf of a queue.
type queueCounter func(k *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue_State_Counters, n *uint64)

// stateEnv is what the state writers need of the binding.
type stateEnv struct {
	ports  *Ports
	wallNS func(engine.Time) uint64
}

// registry holds the mechanism kinds by name; it is written only by
// register, from the mechanisms' init functions.
var registry = map[string]mechanismKind{}

// register adds a mechanism kind (from an init function).
func register(k mechanismKind) {
	if _, dup := registry[k.name]; dup {
		panic("dataplane: mechanism " + k.name + " registered twice")
	}
	registry[k.name] = k
}

// kinds returns the registered kinds in name order: the order in which
// they are translated, configured and written, the same on every Set.
func kinds() []mechanismKind {
	var out []mechanismKind
	for _, name := range slices.Sorted(maps.Keys(registry)) {
		out = append(out, registry[name])
	}
	return out
}

// translated is one mechanism's configuration from an intended tree.
type translated struct {
	kind mechanismKind
	cfg  any
	on   bool
}

// translateAll translates every registered mechanism's leaves.
func translateAll(l *oc.Lhcnp_Lhcnp, lc *lhcnp.Config, ports *Ports) ([]translated, error) {
	var out []translated
	for _, k := range kinds() {
		cfg, on, err := k.translate(l, lc, ports)
		if err != nil {
			return nil, err
		}
		out = append(out, translated{kind: k, cfg: cfg, on: on})
	}
	return out, nil
}

// applyMechanisms puts the served switch in the mode the configuration
// asks for and the functions beside it, on the engine goroutine. The
// translation refused the combinations that cannot coexist, so at most one
// mode is on. A function is created the first time it is on; the modes
// that exist are switched off first and the one on last (each sets the
// node's mode), and the ports' observer is the one on (the node itself
// for Long-haul CNP); the functions beside go beside it afterwards.
func (b *Binding) applyMechanisms(ts []translated, lc lhcnp.Config) error {
	for _, t := range ts {
		if f := b.funcs[t.kind.name]; f != nil {
			if err := f.Validate(t.cfg); err != nil {
				return err
			}
		}
	}
	for _, t := range ts {
		if !t.kind.beside && t.on && b.funcs[t.kind.name] == nil {
			f, err := t.kind.create(b.node, t.cfg)
			if err != nil {
				return err
			}
			b.funcs[t.kind.name] = f
		}
	}
	modes := 0
	for _, t := range ts {
		if f := b.funcs[t.kind.name]; f != nil && !t.kind.beside {
			modes++
			if !t.on {
				if err := f.Configure(t.cfg, lc); err != nil {
					return err
				}
			}
		}
	}
	var active netsim.PortObserver = b.node
	for _, t := range ts {
		if f := b.funcs[t.kind.name]; f != nil && !t.kind.beside && t.on {
			if err := f.Configure(t.cfg, lc); err != nil {
				return err
			}
			active = f.Observer()
		}
	}
	if modes == 0 {
		if err := b.node.ApplyConfig(lc); err != nil {
			return err
		}
	}
	sw := b.node.Switch()
	sw.SetObserver(active)
	for _, t := range ts {
		if !t.kind.beside {
			continue
		}
		f := b.funcs[t.kind.name]
		switch {
		case f == nil && !t.on:
			continue // never enabled: stays absent
		case f == nil:
			var err error
			if f, err = t.kind.create(b.node, t.cfg); err != nil {
				return err
			}
			b.funcs[t.kind.name] = f
		default:
			if err := f.Configure(t.cfg, lc); err != nil {
				return err
			}
		}
		mechanism.Beside(sw, f.Observer())
	}
	return nil
}
