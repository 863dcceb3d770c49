// Package queuewatch is a toy sixth mechanism, for tests only: it shows
// that a mechanism is one package and one registration. Its nodes watch
// their switches' egress queues and count each rise above a threshold
// (a "crossing", re-armed once the queue falls below threshold minus
// hysteresis); they notify nobody.
//
// Everything the simulator needs is in the one install.Register call of
// init: the kind's name, its params (defaults, reader, checks) and its
// installer. Nothing in package scenario or sim names it. A switch's gNMI
// side would be one more file in server/dataplane (its YANG leaves), which
// this toy does not have.
package queuewatch

import (
	"fmt"

	"github.com/lhcnp/lhcnp/dataplane-sim/install"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// Kind is the name a scenario gives the mechanism (mechanism.kind).
const Kind scenario.MechanismKind = "queue-watch"

func init() {
	install.Register(install.Kind{Name: Kind, Params: readParams, Install: installWatch})
}

// Params are the scenario's params of a queue-watch block.
type Params struct {
	Threshold  scenario.Size
	Hysteresis scenario.Size
}

// DefaultParams are the params when the file sets none.
func DefaultParams() Params { return Params{Threshold: 20 * scenario.KB} }

// readParams reads a block's params, reporting mistakes with the file,
// line and key.
func readParams(b scenario.ParamsBlock) any {
	p := DefaultParams()
	if !b.Keys("threshold", "hysteresis") {
		return p
	}
	b.Size("threshold", &p.Threshold, true)
	b.Size("hysteresis", &p.Hysteresis, false)
	if p.Hysteresis >= p.Threshold {
		b.Errorf("hysteresis", "%v must be below the threshold %v", p.Hysteresis, p.Threshold)
	}
	return p
}

// Config is a node's configuration.
type Config struct {
	ThresholdBytes  int64
	HysteresisBytes int64
}

// Validate checks c.
func (c *Config) Validate() error {
	if c.ThresholdBytes <= 0 || c.HysteresisBytes < 0 || c.HysteresisBytes >= c.ThresholdBytes {
		return fmt.Errorf("queue-watch: threshold %d B, hysteresis %d B: want 0 <= hysteresis < threshold", c.ThresholdBytes, c.HysteresisBytes)
	}
	return nil
}

// Watch is the mechanism on one switch: a port observer and a
// mechanism.Function.
type Watch struct {
	cfg       Config
	armed     map[*netsim.Port]bool
	crossings int64
	maxQueue  int64
	onCross   func(pt *netsim.Port)
}

// installWatch puts a Watch on every switch of the block; each crossing
// counts as a queue-watch notification of its switch (counters.csv
// sent_queue-watch), and the Watches' counters go into summary.json.
func installWatch(env *install.Env) error {
	p := scenario.ParamsOf[Params](env.Mech)
	cfg := Config{ThresholdBytes: int64(p.Threshold), HysteresisBytes: int64(p.Hysteresis)}
	var fns []mechanism.Function
	for _, sw := range env.Nodes {
		w := &Watch{armed: map[*netsim.Port]bool{}}
		if err := w.Configure(cfg, lhcnp.Config{}); err != nil {
			return fmt.Errorf("switch %s: %w", sw.Name(), err)
		}
		name := sw.Name()
		w.onCross = func(*netsim.Port) { env.Count(name, string(Kind), 1) }
		env.TapSwitch(sw, w.Observer())
		fns = append(fns, w)
	}
	env.CountFunctions(fns)
	return nil
}

// Validate implements mechanism.Function.
func (w *Watch) Validate(cfg any) error { return mechanism.Validate[Config](cfg, "queue-watch") }

// Configure implements mechanism.Function.
func (w *Watch) Configure(cfg any, _ lhcnp.Config) error {
	if err := w.Validate(cfg); err != nil {
		return err
	}
	w.cfg = cfg.(Config)
	return nil
}

// Observer implements mechanism.Function.
func (w *Watch) Observer() netsim.PortObserver { return observer{w} }

// State implements mechanism.Function.
func (w *Watch) State() any { return w.cfg }

// Counters implements mechanism.Function.
func (w *Watch) Counters() map[string]int64 {
	return map[string]int64{"queue_watch_crossings": w.crossings, "max_queue_watch_bytes": w.maxQueue}
}

// observer watches the enqueues only.
type observer struct{ w *Watch }

func (o observer) OnEnqueue(pt *netsim.Port, _ *netsim.Packet, q int64) {
	w := o.w
	w.maxQueue = max(w.maxQueue, q)
	switch armed, seen := w.armed[pt]; {
	case q > w.cfg.ThresholdBytes && (armed || !seen):
		w.armed[pt] = false
		w.crossings++
		if w.onCross != nil {
			w.onCross(pt)
		}
	case q < w.cfg.ThresholdBytes-w.cfg.HysteresisBytes:
		w.armed[pt] = true
	}
}
func (observer) OnDequeue(*netsim.Port, *netsim.Packet, int64) {}
func (observer) OnMark(*netsim.Port, *netsim.Packet, int64)    {}
func (observer) OnDrop(*netsim.Port, *netsim.Packet, int64)    {}
