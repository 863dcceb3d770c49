// Package install is how a mechanism joins the batch runner (package
// sim): one registration (Register) gives its kind name, its scenario
// params (defaults, reader and checks, through scenario.ParamsBlock) and
// its installer, and Env is what the installer works with on a built
// network. Package sim implements Env's runner side and looks kinds up
// here; neither it nor package scenario holds a case or a field per kind.
//
// A mechanism's package may import this one (sim imports the mechanisms'
// packages, so the environment cannot live there). It must not import gen/
// or server/: a switch's side of a mechanism (its YANG leaves) is
// translated in server/dataplane.
package install

import (
	"fmt"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/report"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// Func installs a mechanism block on a built network, after hosts,
// switches, links, routes and flows exist and before the first event
// runs.
type Func func(env *Env) error

// Kind is everything the simulator needs of a mechanism kind.
type Kind struct {
	// Name is the kind as a scenario names it (mechanism.kind).
	Name scenario.MechanismKind
	// Beside: the kind runs beside any other on a node
	// (scenario.MechanismSpec.Beside).
	Beside bool
	// Params reads the kind's params block (scenario.MechanismSpec.Params);
	// the installer finds the result in Env.Mech.Params.
	Params func(b scenario.ParamsBlock) any
	// Install installs one block of the kind.
	Install Func
	// Cut: the kind runs on a scenario cut into partitions (topology
	// partition keys): its models keep state only per node and per port
	// and schedule on their node's Sim (Switch.Sim, Host.Sim), and work
	// on several partitions goes through Env.Group's global events. The
	// batch runner refuses a kind without it on a cut scenario.
	Cut bool
}

// installer is a kind's registered installer and whether it runs cut
// (Kind.Cut).
type installer struct {
	f   Func
	cut bool
}

// installers holds the registered installers by kind; written only by
// Register, RegisterInstaller and RegisterCutInstaller, from init
// functions.
var installers = map[scenario.MechanismKind]installer{}

// Register makes a mechanism kind known to the scenario loader and the
// batch runner: the one call a new mechanism's package makes, from an
// init function. It panics on a duplicate kind or a missing installer.
func Register(k Kind) {
	scenario.RegisterMechanism(scenario.MechanismSpec{Kind: k.Name, Beside: k.Beside, Params: k.Params})
	register(k.Name, k.Install, k.Cut)
}

// RegisterInstaller registers the installer of a kind that package
// scenario registers itself (the kinds whose params types it holds:
// dcqcn, none, long-haul-cnp, fast-cnp, fcn, rate-advice, switch-cnp),
// from an init function.
func RegisterInstaller(kind scenario.MechanismKind, f Func) { register(kind, f, false) }

// RegisterCutInstaller is RegisterInstaller for a kind that runs on a
// scenario cut into partitions (Kind.Cut).
func RegisterCutInstaller(kind scenario.MechanismKind, f Func) { register(kind, f, true) }

func register(kind scenario.MechanismKind, f Func, cut bool) {
	if f == nil {
		panic(fmt.Sprintf("install: mechanism %s without an installer", kind))
	}
	if _, dup := installers[kind]; dup {
		panic(fmt.Sprintf("install: mechanism %s registered twice", kind))
	}
	installers[kind] = installer{f: f, cut: cut}
}

// Installer returns the installer of kind.
func Installer(kind scenario.MechanismKind) (Func, bool) {
	in, ok := installers[kind]
	return in.f, ok
}

// Cut reports whether kind is registered as one that runs on a scenario
// cut into partitions (Kind.Cut).
func Cut(kind scenario.MechanismKind) bool { return installers[kind].cut }

// Runner is the batch runner's side of an Env, implemented by package
// sim; an installer reaches it through Env's methods.
type Runner interface {
	Count(node, kind string, n int64)
	Warn(msg string)
	OnLinkChange(f func(link *scenario.Link, a, b *netsim.Port))
	LinkPorts(name string) (a, b *netsim.Port, ok bool)
	PortLink(pt *netsim.Port) (*scenario.Link, bool)
	TapSwitch(sw *netsim.Switch, o netsim.PortObserver)
	TapHost(h *netsim.Host, c netsim.ControlHandler)
	Signal(name string, switchCNPs bool)
	NodeEvent(from *netsim.Switch, ev *lhcnp.Event)
	Classify(h *netsim.Host, f func(*netsim.Host, *netsim.Packet) *netsim.QP)
	Counters() map[string]int64
	OnSummary(f func(*report.Input))
	OnSample(f func(now engine.Time))
	OnWrite(f func(outDir string) error)
}

// Env is what an installer gets to work with.
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

	run Runner
}

// NewEnv returns the environment of a run of sc on n, driven by g (s:
// its partition 0), whose runner side is run (package sim's).
func NewEnv(sc *scenario.Scenario, s *engine.Sim, g *engine.Group, n *netsim.Network, run Runner) *Env {
	return &Env{Scenario: sc, Sim: s, Group: g, Net: n, run: run}
}

// Runner returns the runner side the Env was made with.
func (e *Env) Runner() Runner { return e.run }

// Count adds n notifications of kind sent by node; they appear in
// counters.csv (counter "sent_<kind>", port "-") and in the summary's
// notifications.
func (e *Env) Count(node, kind string, n int64) { e.run.Count(node, kind, n) }

// Warn records a caveat about the run in summary.json.
func (e *Env) Warn(format string, args ...any) { e.run.Warn(fmt.Sprintf(format, args...)) }

// OnLinkChange registers f to run, inside the simulation, after an event
// changed a link's rate or delay (the Long-haul CNP node recomputes
// K_max on an RTT change).
func (e *Env) OnLinkChange(f func(link *scenario.Link, a, b *netsim.Port)) { e.run.OnLinkChange(f) }

// LinkPorts returns the two ports of the named link, in the scenario's a, b
// order.
func (e *Env) LinkPorts(name string) (a, b *netsim.Port, ok bool) { return e.run.LinkPorts(name) }

// PortLink returns the scenario link a port belongs to.
func (e *Env) PortLink(pt *netsim.Port) (*scenario.Link, bool) { return e.run.PortLink(pt) }

// TapSwitch installs o as the observer of sw's ports, with the runner's
// meter behind it; a second block's observer on the same switch runs
// beside the first's.
func (e *Env) TapSwitch(sw *netsim.Switch, o netsim.PortObserver) { e.run.TapSwitch(sw, o) }

// TapHost installs c as h's control handler, with the runner's meter
// around it; a second block's handler on the same host is offered what
// the first's did not take.
func (e *Env) TapHost(h *netsim.Host, c netsim.ControlHandler) { e.run.TapHost(h, c) }

// Signal names the notification the block's nodes send (summary.json's
// feedback_signal), whose feedback latency the meter times from the
// nodes' events (NodeEvent); switchCNPs: the nodes send standard CNPs, so
// that a CNP from a switch is the signal.
func (e *Env) Signal(name string, switchCNPs bool) { e.run.Signal(name, switchCNPs) }

// NodeEvent hands the meter an event of a node (a notification sent
// starts a feedback-latency measurement), reported by the node itself
// (the switch named ev.Node).
func (e *Env) NodeEvent(ev *lhcnp.Event) {
	sw, _ := e.Net.NodeByName(ev.Node).(*netsim.Switch)
	e.run.NodeEvent(sw, ev)
}

// NodeEventFrom is NodeEvent for an event that switch from reports on
// behalf of the node ev.Node (FCN's transit nodes for their ingress PE):
// on a network cut into partitions the event belongs to from's.
func (e *Env) NodeEventFrom(from *netsim.Switch, ev *lhcnp.Event) { e.run.NodeEvent(from, ev) }

// Classify sets how the meter finds the QP a switch-originated
// notification received by h is for, when its BTH does not name the
// sender's QP (Fast CNP names the receiver's).
func (e *Env) Classify(h *netsim.Host, f func(*netsim.Host, *netsim.Packet) *netsim.QP) {
	e.run.Classify(h, f)
}

// Counters returns the run's mechanism counters (summary.json
// mechanism_counters), to add to; they are written at the end of the run.
func (e *Env) Counters() map[string]int64 { return e.run.Counters() }

// CountFunctions adds the counters of fs (mechanism.Function.Counters) to
// the run's mechanism counters at the end of the run.
func (e *Env) CountFunctions(fs []mechanism.Function) {
	counts := e.Counters()
	e.OnSummary(func(*report.Input) {
		for _, f := range fs {
			mechanism.AddCounters(counts, f.Counters())
		}
	})
}

// OnSummary registers f to add to the summary's input at the end of the
// run.
func (e *Env) OnSummary(f func(*report.Input)) { e.run.OnSummary(f) }

// OnSample registers f to record series of its own at every sample, after
// the runner's.
func (e *Env) OnSample(f func(now engine.Time)) { e.run.OnSample(f) }

// OnWrite registers f to write a file of its own into the run's output
// directory, after the summary.
func (e *Env) OnWrite(f func(outDir string) error) { e.run.OnWrite(f) }
