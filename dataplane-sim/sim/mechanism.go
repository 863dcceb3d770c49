package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/install"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/report"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// Mechanism installs a congestion-notification mechanism on a built
// network, after hosts, switches, links, routes and flows exist and before
// the first event runs.
type Mechanism interface {
	Install(env *Env) error
}

// MechanismFunc adapts a function to Mechanism.
type MechanismFunc func(env *Env) error

// Install implements Mechanism.
func (f MechanismFunc) Install(env *Env) error { return f(env) }

// ErrNoModel is returned for a mechanism kind nothing implements yet.
var ErrNoModel = errors.New("no model for this mechanism")

// ErrNotPartitioned is returned for a mechanism that cannot run yet on a
// scenario cut into partitions: its kind is not registered as one that
// runs cut (install.Kind.Cut), its models keeping state that nodes of
// several partitions share (flow tables fed by observers, counters of the
// run).
var ErrNotPartitioned = errors.New("not supported yet on a scenario cut into partitions (topology partition keys)")

// Env is what a Mechanism gets to work with (package install's, which a
// mechanism's own package may import).
type Env = install.Env

// The installers of the kinds whose params package scenario holds
// register from their files here (this one: DCQCN alone, which needs
// nothing, and none); a kind of another package registers its own with
// install.Register. Every one of them runs on a scenario cut into
// partitions: their models keep state per node, per host and per port and
// schedule on their node's Sim, and the meter's and the runner's counts
// are kept per partition (TestThreadsEveryMechanism).
func init() {
	install.RegisterCutInstaller(scenario.MechanismDCQCN, func(*Env) error { return nil })
	install.RegisterCutInstaller(scenario.MechanismNone, installNone)
}

// mechanismFor returns the installer of kind: the one passed with
// WithMechanism, else the registered one, metered.
func (o *options) mechanismFor(kind scenario.MechanismKind) (Mechanism, bool) {
	if m, ok := o.mechanisms[kind]; ok {
		return m, true
	}
	if f, ok := install.Installer(kind); ok {
		return metered(MechanismFunc(f)), true
	}
	return nil, false
}

// runEnv is the runner's side of the Env (install.Runner): the meter, the
// mechanism counters and the hooks the installers registered.
type runEnv struct {
	r            *runner
	meter        *meter
	counters     map[string]int64
	summaryHooks []func(*report.Input)
	writeHooks   []func(outDir string) error
	// sampleHooks run at every sample after the runner's, in the order
	// registered: OnSample's (global: they read the whole network, so a
	// run with one keeps its samplers global) and samplers cut in two
	// (onSampleSplit: run in the partitions and merged at the barriers
	// when the samplers are, partSampler; else both halves at the global
	// sample).
	sampleHooks []splitHook
}

// runOf returns the runner side of env.
func runOf(env *Env) *runEnv { return env.Runner().(*runEnv) }

// Counters returns the run's mechanism counters, created on first use.
func (e *runEnv) Counters() map[string]int64 {
	if e.counters == nil {
		e.counters = map[string]int64{}
	}
	return e.counters
}

func (e *runEnv) OnSummary(f func(*report.Input)) { e.summaryHooks = append(e.summaryHooks, f) }
func (e *runEnv) OnSample(f func(now engine.Time)) {
	e.sampleHooks = append(e.sampleHooks, splitHook{global: true, merge: func(now engine.Time, _ [][]int64) { f(now) }})
}
func (e *runEnv) OnWrite(f func(outDir string) error) { e.writeHooks = append(e.writeHooks, f) }

// onSampleSplit registers a sampler cut in two: snap reads a partition
// at the instant, merge records from every partition's snapshot.
func (e *runEnv) onSampleSplit(h splitHook) { e.sampleHooks = append(e.sampleHooks, h) }

// finishSummary runs the summary hooks; the runner calls it last before
// summarising.
func (e *runEnv) finishSummary(in *report.Input) {
	for _, f := range e.summaryHooks {
		f(in)
	}
	if len(e.counters) > 0 {
		in.MechanismCounters = e.counters
	}
}

func (e *runEnv) Count(node, kind string, n int64) { e.r.count(node, kind, n) }
func (e *runEnv) Warn(msg string)                  { e.r.warnings = append(e.r.warnings, msg) }
func (e *runEnv) OnLinkChange(f func(link *scenario.Link, a, b *netsim.Port)) {
	e.r.b.OnLinkChange(f)
}
func (e *runEnv) LinkPorts(name string) (a, b *netsim.Port, ok bool) { return e.r.b.LinkPorts(name) }
func (e *runEnv) PortLink(pt *netsim.Port) (*scenario.Link, bool)    { return e.r.b.PortLink(pt) }

// Signal names the block's notification for the meter.
func (e *runEnv) Signal(name string, switchCNPs bool) {
	if e.meter != nil {
		e.meter.signal = name
		e.meter.switchCNP = e.meter.switchCNP || switchCNPs
	}
}

// NodeEvent hands a node's event, reported by switch from, to the meter.
func (e *runEnv) NodeEvent(from *netsim.Switch, ev *lhcnp.Event) {
	if e.meter != nil {
		e.meter.longHaulEvent(from, ev)
	}
}

// Classify sets the meter's QP finder for h.
func (e *runEnv) Classify(h *netsim.Host, f func(*netsim.Host, *netsim.Packet) *netsim.QP) {
	if e.meter != nil {
		e.meter.classify[h] = f
	}
}

// installNone turns DCQCN off at every RNIC: senders stay at line rate and
// receivers send no CNPs. Switches still mark (nobody listens).
func installNone(env *Env) error {
	for _, h := range env.Net.Hosts() {
		c := h.Config()
		c.DCQCN.Enabled = false
		c.NP.Disabled = true
		if err := h.SetConfig(c); err != nil {
			return fmt.Errorf("host %s: %w", h.Name(), err)
		}
	}
	return nil
}

// BDPThresholds returns K_max and K_min in bytes for a port of rate
// rateBitsPerSec whose link has one-way delay oneWay: RTT_est is the configured one
// or, when zero, twice the link's delay.
func BDPThresholds(p scenario.LongHaulCNP, rateBitsPerSec int64, oneWay time.Duration) (kmax, kmin int64) {
	rtt := p.RTTEst
	if rtt == 0 {
		rtt = 2 * oneWay
	}
	kmax = lhcnp.BDPKMaxBytes(int64(p.KBase), p.Alpha, rateBitsPerSec, rtt)
	kmin = int64(p.KMinFraction * float64(kmax))
	return kmax, kmin
}
