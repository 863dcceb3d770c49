package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
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
// scenario cut into partitions: its models keep state that nodes of several
// partitions share (flow tables fed by observers, counters of the run).
var ErrNotPartitioned = errors.New("not supported yet on a scenario cut into partitions (topology partition keys)")

// cutSafe are the mechanisms that run on a scenario cut into partitions:
// their state is per host and per port, and the meter's is kept per
// partition.
var cutSafe = map[scenario.MechanismKind]bool{scenario.MechanismDCQCN: true, scenario.MechanismNone: true}

// Env is what a Mechanism gets to work with.
type Env struct {
	Scenario *scenario.Scenario
	// Sim is the engine of a network that is not cut (partition 0's of
	// one that is: models of a node use its own, Switch.Sim, Host.Sim).
	Sim *engine.Sim
	// Group runs the partitions (one when the scenario is not cut);
	// samplers and work on several partitions go through its global
	// events.
	Group *engine.Group
	Net   *netsim.Network
	// Mech is the mechanism block being installed: the scenario's
	// mechanism or one of its mechanism.with blocks.
	Mech scenario.Mechanism
	// Nodes are the congestion-aware switches of the block (its nodes),
	// in scenario order.
	Nodes []*netsim.Switch

	r            *runner
	meter        *meter
	counters     map[string]int64
	summaryHooks []func(*report.Input)
	writeHooks   []func(outDir string) error
	sampleHooks  []func(now engine.Time)
}

// mechCounters returns the run's mechanism counters (summary.json
// mechanism_counters), created on first use.
func (e *Env) mechCounters() map[string]int64 {
	if e.counters == nil {
		e.counters = map[string]int64{}
	}
	return e.counters
}

// countFunctions adds the counters of fs (mechanism.Function.Counters) to
// the run's mechanism counters at the end of the run.
func (e *Env) countFunctions(fs []mechanism.Function) {
	counts := e.mechCounters()
	e.onSummary(func(*report.Input) {
		for _, f := range fs {
			mechanism.AddCounters(counts, f.Counters())
		}
	})
}

// onSummary registers f to add to the summary's input at the end of the
// run.
func (e *Env) onSummary(f func(*report.Input)) { e.summaryHooks = append(e.summaryHooks, f) }

// onSample registers f to record series of its own at every sample, after
// the runner's.
func (e *Env) onSample(f func(now engine.Time)) { e.sampleHooks = append(e.sampleHooks, f) }

// onWrite registers f to write a file of its own into the run's output
// directory, after the summary.
func (e *Env) onWrite(f func(outDir string) error) { e.writeHooks = append(e.writeHooks, f) }

// finishSummary runs the summary hooks; the runner calls it last before
// summarising.
func (e *Env) finishSummary(in *report.Input) {
	for _, f := range e.summaryHooks {
		f(in)
	}
	if len(e.counters) > 0 {
		in.MechanismCounters = e.counters
	}
}

// Count adds n notifications of kind sent by node; they appear in
// counters.csv (counter "sent_<kind>", port "-") and in the summary's
// notifications.
func (e *Env) Count(node, kind string, n int64) { e.r.count(node, kind, n) }

// Warn records a caveat about the run in summary.json.
func (e *Env) Warn(format string, args ...any) {
	e.r.warnings = append(e.r.warnings, fmt.Sprintf(format, args...))
}

// OnLinkChange registers f to run, inside the simulation, after an event
// changed a link's rate or delay (the Long-haul CNP node recomputes
// K_max on an RTT change).
func (e *Env) OnLinkChange(f func(link *scenario.Link, a, b *netsim.Port)) { e.r.b.OnLinkChange(f) }

// LinkPorts returns the two ports of the named link, in the scenario's a, b
// order.
func (e *Env) LinkPorts(name string) (a, b *netsim.Port, ok bool) { return e.r.b.LinkPorts(name) }

// PortLink returns the scenario link a port belongs to.
func (e *Env) PortLink(pt *netsim.Port) (*scenario.Link, bool) { return e.r.b.PortLink(pt) }

func defaultMechanisms() map[scenario.MechanismKind]Mechanism {
	return map[scenario.MechanismKind]Mechanism{
		scenario.MechanismDCQCN:       metered(MechanismFunc(func(*Env) error { return nil })),
		scenario.MechanismNone:        metered(MechanismFunc(installNone)),
		scenario.MechanismLongHaulCNP: metered(MechanismFunc(func(env *Env) error { return installLongHaulCNP(env, nil) })),
		scenario.MechanismFastCNP:     metered(MechanismFunc(installFastCNP)),
		scenario.MechanismRateAdvice:  metered(MechanismFunc(installRateAdvice)),
		scenario.MechanismSwitchCNP:   metered(MechanismFunc(installSwitchCNP)),
		scenario.MechanismFCN:         metered(MechanismFunc(installFCN)),
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
