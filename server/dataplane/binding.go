// Package dataplane binds the gNMI target of one switch to its simulated
// dataplane: the Long-haul CNP node of dataplane-sim/lhcnp running on an
// engine. It translates the intended YANG configuration into lhcnp.Config
// (ToConfig) and node snapshots into the YANG state tree (StateTree), and
// its Publisher writes that state into the telemetry store every interval,
// one store leaf per YANG leaf with its kind, deleting the leaves of what
// vanished (aged flows).
//
// The other mechanisms a switch can run (Fast CNP, FCN, the switch CNP,
// Rate Advice) are each one file here that registers its kind
// (mechanisms.go): how its YANG leaves translate into the plain
// configuration of its dataplane package, which mechanism.Function it
// creates on the node, and how that function's state is written back.
// Each runs when its own leaf and the master switch (global enabled) are
// on (translateAll).
//
// It is the only place where gen/ meets dataplane-sim/: the dataplane
// knows nothing of YANG, the target nothing of the simulator.
package dataplane

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/openconfig/ygot/ygot"
)

// The speeds the engine-speed leaf (decimal64, 9 fraction digits) holds.
const (
	MinSpeed = 1e-9
	MaxSpeed = 9e9
)

type bindingOptions struct {
	speed     float64
	wallStart time.Time
	noFlows   bool
}

// BindingOption configures a Binding.
type BindingOption func(*bindingOptions)

// WithSpeed is the realtime factor the engine runs at (simulated seconds
// per wall-clock second, default 1), for converting simulated times into
// wall-clock timestamps. It is published as /lhcnp/global/state/engine-speed,
// so the collector's views turn rates per wall-clock second into rates per
// simulated second; the leaf holds MinSpeed to MaxSpeed.
func WithSpeed(s float64) BindingOption { return func(o *bindingOptions) { o.speed = s } }

// WithWallStart sets the wall-clock time of the engine's current simulated
// time (default: when NewBinding runs).
func WithWallStart(t time.Time) BindingOption { return func(o *bindingOptions) { o.wallStart = t } }

// WithoutFlows leaves the flow table's entries out of snapshots (counters
// stay): for very large tables.
func WithoutFlows() BindingOption { return func(o *bindingOptions) { o.noFlows = true } }

// Binding is one switch's node seen by the target: it implements
// target.Dataplane and the Publisher's Source.
type Binding struct {
	sim      Engine
	node     *lhcnp.Node
	ports    *Ports
	o        bindingOptions
	simStart engine.Time
	// funcs are the mechanisms beside the node (registry), by name, each
	// created the first time it is configured on.
	funcs map[string]mechanism.Function
	// master (global enabled) and configured (each mechanism's
	// configuration, its own leaf as set) are the last configuration
	// applied as configured, what the state echoes; what runs differs (the
	// node's Long-haul CNP is off without a format, every mechanism off
	// without the master switch). The engine goroutine's, as funcs.
	master     bool
	configured map[string]any
	// applied is each mechanism's translation of the last configuration
	// applied (configured its cfg): what a failed Set rolls back to.
	applied map[string]translated
	// longHaul is the node's Long-haul CNP configuration as translated
	// from the last configuration applied (the node's own before one),
	// what the state echoes: the node's Config is what runs, a mode's
	// detection configuration while Fast CNP, FCN or the switch CNP is
	// on. The engine goroutine's, as funcs.
	longHaul lhcnp.Config
}

var _ service.KeepingDataplane = (*Binding)(nil)

// Engine is what a binding uses of the engine that drives its node: an
// engine.Group (the paced path: Network.Group) or a lone engine.Sim.
type Engine interface {
	Do(func())
	Now() engine.Time
	Epoch() time.Time
	Lag() engine.Time
}

// NewBinding binds node, driven by sim, with the interface names of ports.
func NewBinding(sim Engine, node *lhcnp.Node, ports *Ports, opts ...BindingOption) *Binding {
	o := bindingOptions{speed: 1}
	for _, opt := range opts {
		opt(&o)
	}
	if !(o.speed > 0) {
		o.speed = 1
	}
	b := &Binding{sim: sim, node: node, ports: ports, o: o, funcs: map[string]mechanism.Function{}, configured: map[string]any{},
		applied: map[string]translated{}}
	sim.Do(func() { b.simStart, b.longHaul = sim.Now(), node.Config() })
	if b.o.wallStart.IsZero() {
		b.o.wallStart = time.Now()
	}
	return b
}

// Ports returns the interface names.
func (b *Binding) Ports() *Ports { return b.ports }

// WallNS converts a simulated time into nanoseconds since the Unix epoch:
// by the engine's epoch once it has one (engine.Group.SetEpoch, or the start
// of its realtime run), else from the binding's wall start.
func (b *Binding) WallNS(t engine.Time) uint64 {
	if e := b.sim.Epoch(); !e.IsZero() {
		return uint64(e.Add(time.Duration(float64(t) / b.o.speed)).UnixNano())
	}
	d := time.Duration(float64(t-b.simStart) / b.o.speed)
	return uint64(b.o.wallStart.Add(d).UnixNano())
}

// EngineLag returns how far the engine's simulated time trails the wall
// clock it is paced to (engine.Group.Lag), as a duration of simulated time:
// the /lhcnp/global/state/engine-lag leaf and the metrics gauge.
func (b *Binding) EngineLag() time.Duration { return b.sim.Lag().Duration() }

// ApplyConfig translates the intended configuration and applies it to the
// node between two events. The node validates before it changes anything,
// so on error it runs as before; every rejection wraps
// target.ErrInvalidConfig.
func (b *Binding) ApplyConfig(ctx context.Context, l *oc.Lhcnp_Lhcnp) error {
	return b.ApplyConfigThen(ctx, l, nil)
}

// ApplyConfigThen is ApplyConfig calling keep (the startup configuration's
// write), if not nil, once the configuration is applied, between the same
// two events: if keep fails, the switch is set back as when a mechanism
// refuses its configuration (applyMechanisms), and keep's error returned,
// without target.ErrInvalidConfig: the configuration was not at fault.
func (b *Binding) ApplyConfigThen(ctx context.Context, l *oc.Lhcnp_Lhcnp, keep func() error) error {
	cfg, err := ToConfig(l, b.ports)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	master := cfg.Enabled
	ts, err := translateAll(l, &cfg, b.ports)
	if err != nil {
		return err
	}
	var aerr, kerr error
	kept := func() error {
		if keep != nil {
			kerr = keep()
		}
		return kerr
	}
	b.sim.Do(func() {
		if aerr = b.applyMechanisms(ts, cfg, master, kept); aerr == nil {
			b.longHaul = cfg
		}
	})
	switch {
	case kerr != nil:
		return aerr
	case aerr != nil:
		return fmt.Errorf("%w: %w", service.ErrInvalidConfig, aerr)
	}
	return nil
}

// Snapshot takes the node's state between two events and returns it as
// the YANG state tree.
func (b *Binding) Snapshot(ctx context.Context) (*oc.Root, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var st lhcnp.State
	var cfg lhcnp.Config
	var master bool
	// Every mechanism a Set configured (one whose function a failed Set
	// created is not), with its state: its function's, or for one never
	// created (its own leaf never on) its kind's idle state.
	states, configured := map[string]any{}, map[string]any{}
	b.sim.Do(func() {
		configured = maps.Clone(b.configured)
		for name := range b.configured {
			if f := b.funcs[name]; f != nil {
				states[name] = f.State()
			}
		}
		st = b.node.State(!b.o.noFlows)
		cfg = b.longHaul
		master = b.master
	})
	// The notifications the node hands to another mechanism are that
	// mechanism's, counted per queue in its leaf (at most one mode is on):
	// the first kind that claims them; and the last CNP one sent for the
	// node has the format of the one running now.
	var external queueCounter
	format := oc.LhcnpTypes_NotificationFormat_UNSET
	for _, k := range kinds() {
		c, ok := configured[k.name]
		if !ok {
			continue
		}
		if external == nil && k.queueCount != nil {
			external = k.queueCount(c)
		}
		if format == oc.LhcnpTypes_NotificationFormat_UNSET && k.format != nil {
			format = k.format(c)
		}
	}
	root := stateTree(&st, &cfg, b.ports, b.WallNS, external, format)
	gs := root.GetOrCreateLhcnp().GetOrCreateGlobal().GetOrCreateState()
	// The master switch as configured: the node's own Enabled is the
	// running mode's (a mechanism's detection, or Long-haul CNP, off
	// without a format).
	gs.Enabled = ygot.Bool(master)
	gs.EngineLag = ygot.Uint64(uint64(max(b.sim.Lag(), 0)))
	gs.EngineSpeed = ygot.Float64(b.o.speed)
	env := stateEnv{ports: b.ports, wallNS: b.WallNS}
	for _, k := range kinds() {
		c, ok := configured[k.name]
		if !ok {
			continue
		}
		st, ok := states[k.name]
		if !ok {
			st = k.idle
		}
		k.state(root, st, c, env)
	}
	return root, nil
}

// setQueueCount writes n into the counter set chooses of queue id of the
// interface on the model's port (nothing for a port without one).
func setQueueCount(root *oc.Root, ports *Ports, port string, id uint8, n int64, set queueCounter) {
	name, ok := ports.Interface(port)
	if !ok {
		return
	}
	q := root.GetOrCreateLhcnp().GetOrCreateInterfaces().GetOrCreateInterface(name).GetOrCreateQueues().GetOrCreateQueue(id)
	set(q.GetOrCreateState().GetOrCreateCounters(), ygot.Uint64(uint64(n)))
}
