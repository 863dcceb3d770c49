// Package dataplane binds the gNMI target of one switch to its simulated
// dataplane: the Long-haul CNP node of dataplane-sim/lhcnp running on an
// engine. It translates the intended YANG configuration into lhcnp.Config
// (ToConfig) and node snapshots into the YANG state tree (StateTree), and
// its Publisher writes that state into the telemetry store every interval,
// one store leaf per YANG leaf with its kind, deleting the leaves of what
// vanished (aged flows).
//
// It is the only place where gen/ meets dataplane-sim/: the dataplane
// knows nothing of YANG, the target nothing of the simulator.
package dataplane

import (
	"context"
	"fmt"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/fastcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/fcn"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/rateadvice"
	"github.com/lhcnp/lhcnp/dataplane-sim/switchcnp"
	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/server/target"
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
	sim      *engine.Sim
	node     *lhcnp.Node
	ports    *Ports
	o        bindingOptions
	simStart engine.Time
	fast     *fastFunction   // created when Fast CNP is first configured on
	advice   *adviceFunction // created when Rate Advice is first configured on
	pe       *fcn.PE         // created when FCN's ingress PE is first configured on
	transit  *fcn.Transit    // created when FCN's transit role is first configured on
	wp       *switchcnp.Node // created when the switch CNP is first configured on
}

var _ target.Dataplane = (*Binding)(nil)

// NewBinding binds node, driven by sim, with the interface names of ports.
func NewBinding(sim *engine.Sim, node *lhcnp.Node, ports *Ports, opts ...BindingOption) *Binding {
	o := bindingOptions{speed: 1}
	for _, opt := range opts {
		opt(&o)
	}
	if !(o.speed > 0) {
		o.speed = 1
	}
	b := &Binding{sim: sim, node: node, ports: ports, o: o}
	sim.Do(func() { b.simStart = sim.Now() })
	if b.o.wallStart.IsZero() {
		b.o.wallStart = time.Now()
	}
	return b
}

// Ports returns the interface names.
func (b *Binding) Ports() *Ports { return b.ports }

// WallNS converts a simulated time into nanoseconds since the Unix epoch:
// by the engine's epoch once it has one (engine.Sim.SetEpoch, or the start
// of its realtime run), else from the binding's wall start.
func (b *Binding) WallNS(t engine.Time) uint64 {
	if e := b.sim.Epoch(); !e.IsZero() {
		return uint64(e.Add(time.Duration(float64(t) / b.o.speed)).UnixNano())
	}
	d := time.Duration(float64(t-b.simStart) / b.o.speed)
	return uint64(b.o.wallStart.Add(d).UnixNano())
}

// EngineLag returns how far the engine's simulated time trails the wall
// clock it is paced to (engine.Sim.Lag), as a duration of simulated time:
// the /lhcnp/global/state/engine-lag leaf and the metrics gauge.
func (b *Binding) EngineLag() time.Duration { return b.sim.Lag().Duration() }

// ApplyConfig translates the intended configuration and applies it to the
// node between two events. The node validates before it changes anything,
// so on error it runs as before; every rejection wraps
// target.ErrInvalidConfig.
func (b *Binding) ApplyConfig(ctx context.Context, l *oc.Lhcnp_Lhcnp) error {
	cfg, err := ToConfig(l, b.ports)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	fc, err := FastCNPConfig(l, &cfg, b.ports)
	if err != nil {
		return err
	}
	rc, err := RateAdviceConfig(l, &cfg)
	if err != nil {
		return err
	}
	pc, tc, err := FCNConfig(l, &cfg)
	if err != nil {
		return err
	}
	wc, err := SwitchCNPConfig(l, &cfg)
	if err != nil {
		return err
	}
	var aerr error
	b.sim.Do(func() {
		if aerr = b.applyMode(fc, pc, tc, wc, cfg); aerr != nil {
			return
		}
		aerr = b.applyAdvice(rc)
	})
	if aerr != nil {
		return fmt.Errorf("%w: %w", target.ErrInvalidConfig, aerr)
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
	var fc fastcnp.Config
	var fn fastcnp.Counters
	var ra rateadvice.State
	var fv fcnView
	var wc switchcnp.Config
	var wn switchcnp.Counters
	var wsent int64
	fast, advice, fcnOn, wp := false, false, false, false
	b.sim.Do(func() {
		if wp = b.wp != nil; wp {
			wc, wn, wsent = b.wp.Config(), b.wp.Counters(), b.wp.Sent()
		}
		if b.pe != nil {
			fcnOn = true
			fv.pe, fv.pn, fv.mappings = b.pe.Config(), b.pe.Counters(), b.pe.Mappings()
		}
		if b.transit != nil {
			fcnOn = true
			fv.transit, fv.tn = b.transit.Config(), b.transit.Counters()
		}
		st = b.node.State(!b.o.noFlows)
		cfg = b.node.Config()
		if fast = b.fast != nil; fast {
			fc, fn = b.fast.node.Config(), b.fast.node.Counters()
		}
		if advice = b.advice != nil; advice {
			ra = b.advice.node.State()
		}
	})
	// The notifications the node hands to another mechanism are that
	// mechanism's, counted per queue in its leaf (at most one mode is on):
	// Fast CNP's, or an FCN transit node's messages.
	var external func(k *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue_State_Counters, n *uint64)
	switch {
	case fast:
		external = func(k *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue_State_Counters, n *uint64) { k.FastCnpSent = n }
	case fcnOn && fv.transit.Enabled:
		external = func(k *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue_State_Counters, n *uint64) { k.FcnSent = n }
	}
	root := stateTree(&st, &cfg, b.ports, b.WallNS, external)
	gs := root.GetOrCreateLhcnp().GetOrCreateGlobal().GetOrCreateState()
	gs.EngineLag = ygot.Uint64(uint64(max(b.sim.Lag(), 0)))
	gs.EngineSpeed = ygot.Float64(b.o.speed)
	if fast {
		fastCNPState(root, fc, fn, b.ports)
	}
	if advice {
		rateAdviceState(root, ra, b.ports, b.WallNS)
	}
	if fcnOn {
		fcnState(root, &fv, b.WallNS)
	}
	if wp {
		switchCNPState(root, wc, wn, wsent)
	}
	return root, nil
}

// setQueueCount writes n into the counter set chooses of queue id of the
// interface on the model's port (nothing for a port without one).
func setQueueCount(root *oc.Root, ports *Ports, port string, id uint8, n int64,
	set func(k *oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue_State_Counters, n *uint64)) {
	name, ok := ports.Interface(port)
	if !ok {
		return
	}
	q := root.GetOrCreateLhcnp().GetOrCreateInterfaces().GetOrCreateInterface(name).GetOrCreateQueues().GetOrCreateQueue(id)
	set(q.GetOrCreateState().GetOrCreateCounters(), ygot.Uint64(uint64(n)))
}
