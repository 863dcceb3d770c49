package dataplane

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"runtime"
	"slices"
	"strings"

	"github.com/lhcnp/lhcnp/dataplane-sim/build"
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// Switch is one switch of a scenario, built for a gNMI target: the
// scenario's network on one engine, with a Long-haul CNP node on the served
// switch. The node starts with lhcnp.DefaultConfig (disabled); the target
// loads the switch's YANG configuration into it.
type Switch struct {
	// Group drives the network (Run paces it); it has one partition,
	// whose Sim is Sim.
	Group  *engine.Group
	Sim    *engine.Sim
	Net    *netsim.Network
	Switch *netsim.Switch
	Node   *lhcnp.Node
	Ports  *Ports
	// Reaction is the Long-haul CNP reaction point of every host: the
	// sources act on the notifications of the served switches.
	Reaction *lhcnp.ReactionPoint
}

// Network is a scenario built for one process of a fabric: every node of
// the scenario exists (so that node numbers, addresses, routes, flow and
// QP numbers are the same in every process), the served switches carry a
// Long-haul CNP node each, and the nodes this process runs are those
// reachable from the served switches without crossing a wired link. The
// others are inert copies: their flows are dormant, nothing is delivered
// to them (the wired links carry a udpwire.Wire instead).
//
// Timed events of the scenario are applied (link rate, delay and RTT
// changes; flow stop and start for the flows this process sends).
type Network struct {
	// Group drives the network (paced: Group.RunRealtime, Do, SetEpoch);
	// it has one partition, whose Sim is Sim.
	Group    *engine.Group
	Sim      *engine.Sim
	Net      *netsim.Network
	Switches []*Switch // the served switches, in the order asked
	// Local holds the names of the nodes this process runs.
	Local map[string]bool
	// Wired maps each wired link's name to this process's port on it.
	Wired    map[string]*netsim.Port
	Reaction *lhcnp.ReactionPoint

	build *build.Network
}

// Served names a switch to serve and its YANG interface names (YANG name
// -> link name; a link not listed is named by its link name).
type Served struct {
	Name       string
	Interfaces map[string]string
}

// BuildOptions are the choices Build leaves to the caller.
type BuildOptions struct {
	// Interfaces renames the served switch's interfaces (Build only).
	Interfaces map[string]string
	// Events forwards node events (CNP sent, flows learned...).
	Events func(lhcnp.Event)
	// Wired names the links whose far end runs in another process.
	Wired []string
}

// Build builds the network of sc and attaches the node to switch name.
func Build(sc *scenario.Scenario, name string, o BuildOptions) (*Switch, error) {
	n, err := BuildNetwork(sc, []Served{{Name: name, Interfaces: o.Interfaces}}, o)
	if err != nil {
		return nil, err
	}
	return n.Switches[0], nil
}

// BuildNetwork builds the network of sc for one process serving the
// given switches; o.Wired names the links that cross to other processes.
// The network is built as the batch simulator builds it (package build),
// so the same scenario and seed give the same run.
func BuildNetwork(sc *scenario.Scenario, served []Served, o BuildOptions) (*Network, error) {
	if err := Check(sc, served, o.Wired); err != nil {
		return nil, err
	}
	local, err := localNodes(sc, served, o.Wired)
	if err != nil {
		return nil, err
	}
	b, err := build.New(sc, build.Options{Seed: sc.Seed, Local: local})
	if err != nil {
		return nil, fmt.Errorf("dataplane: %w", err)
	}
	sim, net := b.Sim, b.Net
	out := &Network{Group: b.Group, Sim: sim, Net: net, Local: local, Wired: map[string]*netsim.Port{}, build: b}
	for _, w := range o.Wired {
		a, z, _ := b.LinkPorts(w)
		for _, pt := range []*netsim.Port{a, z} {
			if local[pt.Node().Name()] {
				out.Wired[w] = pt
			}
		}
	}

	var nopts []lhcnp.Option
	if o.Events != nil {
		nopts = append(nopts, lhcnp.WithEvents(o.Events))
	}
	var nodes []*lhcnp.Node
	for _, sv := range served {
		sw := net.NodeByName(sv.Name).(*netsim.Switch)
		linkOf := map[string]*netsim.Port{} // link name → the switch's port
		for _, lk := range sc.Links {
			a, z, _ := b.LinkPorts(lk.Name)
			for _, pt := range []*netsim.Port{a, z} {
				if pt.Node() == netsim.Node(sw) {
					linkOf[lk.Name] = pt
				}
			}
		}
		ports, err := interfaceNames(sc, sw, linkOf, sv.Interfaces)
		if err != nil {
			return nil, err
		}
		node, err := lhcnp.Attach(net, sw, lhcnp.DefaultConfig(), nopts...)
		if err != nil {
			return nil, fmt.Errorf("dataplane: %w", err)
		}
		nodes = append(nodes, node)
		out.Switches = append(out.Switches, &Switch{Group: b.Group, Sim: sim, Net: net, Switch: sw, Node: node, Ports: ports})
	}
	rc := lhcnp.DefaultReactionConfig()
	switches := map[string]bool{}
	for _, s := range sc.Switches {
		rc.TrustedSources = append(rc.TrustedSources, netip.PrefixFrom(s.IP, s.IP.BitLen()))
		switches[s.Name] = true
	}
	rc.RTTEst = sourcesRTTEst(sc, switches)
	rp, err := lhcnp.NewReactionPoint(net, rc)
	if err != nil {
		return nil, fmt.Errorf("dataplane: %w", err)
	}
	for _, h := range net.Hosts() {
		if local[h.Name()] {
			rp.Attach(h)
		}
	}
	out.Reaction = rp
	for _, sw := range out.Switches {
		sw.Reaction = rp
	}

	if err := b.AddFlows(); err != nil {
		return nil, fmt.Errorf("dataplane: %w", err)
	}
	// The nodes watch their ports' links; an event's change is also
	// handed to them at once (lhcnp.Node.LinkChanged).
	b.OnLinkChange(func(_ *scenario.Link, a, z *netsim.Port) {
		for _, pt := range []*netsim.Port{a, z} {
			for _, node := range nodes {
				if pt.Node() == netsim.Node(node.Switch()) {
					node.LinkChanged(pt)
				}
			}
		}
	})
	b.ScheduleEvents()
	return out, nil
}

// AddFlow adds a flow that is not the scenario's (the lab's later windows
// of traffic) as BuildNetwork adds the scenario's: dormant when its sender
// runs in another process, stopped at its stop time.
func (n *Network) AddFlow(f scenario.Flow) error {
	_, err := n.build.AddFlowLocal(f, n.Local[f.Src])
	return err
}

// A KeyError is an error in one of the things BuildNetwork is asked to
// build, saying which: a served switch (Served, its index in served;
// Interface, one of its interfaces' YANG names, "" for its name) or a
// wired link (Wired, its index in BuildOptions.Wired; First, for a link
// wired twice, the index of the first). The indices that do not apply are
// -1. A caller names its own configuration's key from them (the fabric's
// Switches[i] and Wires[i], a file's line), which the dataplane does not
// know.
type KeyError struct {
	Served, Wired, First int
	Interface            string
	Err                  error
}

func (e *KeyError) Error() string {
	if e.Interface != "" {
		return fmt.Sprintf("dataplane: interface %q: %v", e.Interface, e.Err)
	}
	return "dataplane: " + e.Err.Error()
}

func (e *KeyError) Unwrap() error { return e.Err }

// Check checks what BuildNetwork is asked to build against sc, without
// building it: every served switch is sc's and served once, each of its
// interfaces names a link of the switch and no link twice, every wired
// link is sc's and wired once. Each error is a *KeyError, all of them
// joined (errors.Join), so a caller can name every key at once.
func Check(sc *scenario.Scenario, served []Served, wired []string) error {
	if len(served) == 0 {
		return errors.New("dataplane: no switch to serve")
	}
	var names []string
	for _, s := range sc.Switches {
		names = append(names, s.Name)
	}
	var errs []error
	bad := func(served, wired, first int, y string, format string, a ...any) {
		errs = append(errs, &KeyError{Served: served, Wired: wired, First: first, Interface: y, Err: fmt.Errorf(format, a...)})
	}
	for i, sv := range served {
		switch {
		case !slices.Contains(names, sv.Name):
			bad(i, -1, -1, "", "scenario %s has no switch %q (switches: %s)", sc.Name, sv.Name, strings.Join(names, ", "))
			continue
		case slices.ContainsFunc(served[:i], func(x Served) bool { return x.Name == sv.Name }):
			bad(i, -1, -1, "", "switch %q served twice", sv.Name)
			continue
		}
		var links []string
		for _, l := range sc.Links {
			if l.A == sv.Name || l.B == sv.Name {
				links = append(links, l.Name)
			}
		}
		named := map[string]string{} // link → the YANG name given it first
		for _, y := range slices.Sorted(maps.Keys(sv.Interfaces)) {
			link := sv.Interfaces[y]
			switch prev, dup := named[link]; {
			case !slices.Contains(links, link):
				bad(i, -1, -1, y, "switch %s has no link %q (links: %s)", sv.Name, link, strings.Join(links, ", "))
			case dup:
				bad(i, -1, -1, y, "link %q named twice (%s and %s)", link, prev, y)
			default:
				named[link] = y
			}
		}
	}
	for i, w := range wired {
		switch j := slices.Index(wired[:i], w); {
		case !slices.ContainsFunc(sc.Links, func(l scenario.Link) bool { return l.Name == w }):
			bad(-1, i, -1, "", "scenario %s has no link %q", sc.Name, w)
		case j >= 0:
			bad(-1, i, j, "", "link %q wired twice", w)
		}
	}
	return errors.Join(errs...)
}

// Reachable returns the nodes reachable from the served switches without
// crossing the cut links: the part of the scenario a process of a fabric
// runs.
func Reachable(sc *scenario.Scenario, served []Served, cut []string) map[string]bool {
	isCut := map[string]bool{}
	for _, w := range cut {
		isCut[w] = true
	}
	local := map[string]bool{}
	var queue []string
	for _, sv := range served {
		local[sv.Name] = true
		queue = append(queue, sv.Name)
	}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		for _, lk := range sc.Links {
			if isCut[lk.Name] {
				continue
			}
			for _, pair := range [][2]string{{lk.A, lk.B}, {lk.B, lk.A}} {
				if pair[0] == x && !local[pair[1]] {
					local[pair[1]] = true
					queue = append(queue, pair[1])
				}
			}
		}
	}
	return local
}

// localNodes returns the nodes reachable from the served switches without
// crossing a wired link: all nodes when nothing is wired. Every wired link
// must join a local node to one that is not.
func localNodes(sc *scenario.Scenario, served []Served, wired []string) (map[string]bool, error) {
	local := map[string]bool{}
	if len(wired) == 0 {
		for _, h := range sc.Hosts {
			local[h.Name] = true
		}
		for _, s := range sc.Switches {
			local[s.Name] = true
		}
		return local, nil
	}
	isWired := map[string]bool{}
	for _, w := range wired { // each a link of sc (Check)
		isWired[w] = true
	}
	local = Reachable(sc, served, wired)
	for _, lk := range sc.Links {
		if !isWired[lk.Name] {
			continue
		}
		if local[lk.A] == local[lk.B] {
			where := "in another process"
			if local[lk.A] {
				where = "in this process"
			}
			return nil, fmt.Errorf("dataplane: wired link %q: both %s and %s run %s; a wire joins this process to another", lk.Name, lk.A, lk.B, where)
		}
	}
	return local, nil
}

// interfaceNames names the served switch's ports: by link name, or by the
// caller's YANG name for a link (each a link of the switch, none named
// twice: Check).
func interfaceNames(sc *scenario.Scenario, sw *netsim.Switch, linkOf map[string]*netsim.Port, rename map[string]string) (*Ports, error) {
	yangOf := map[string]string{} // link → YANG name
	for y, link := range rename {
		yangOf[link] = y
	}
	var pairs [][2]string
	for _, pt := range sw.Ports() {
		for _, lk := range sc.Links {
			if linkOf[lk.Name] != pt {
				continue
			}
			y := lk.Name
			if r, ok := yangOf[lk.Name]; ok {
				y = r
			}
			pairs = append(pairs, [2]string{y, pt.Name()})
		}
	}
	return NewPorts(pairs)
}

// Run paces the engine to the wall clock at speed until ctx ends; it
// returns nil then, or the engine's error.
func (s *Switch) Run(ctx context.Context, speed float64) error {
	err := s.Group.RunRealtime(ctx, speed, engine.Never, runtime.GOMAXPROCS(0))
	if ctx.Err() != nil || errors.Is(err, engine.ErrStopped) {
		return nil
	}
	return err
}

// sourcesRTTEst is the hosts' RTT estimate (§5.6: a source recovers a cut
// rate after 2 × RTT_est without a new notification): the largest round
// trip of a switch's link (twice its one-way delay, each port's RTT_est
// when derived from its link), at least lhcnp.DefaultRTTEst — the
// simulator's rule for its sources (sim: the largest RTT_est of the nodes'
// ports), from the scenario the fabric is built from. The default alone
// (1 ms) let the lab's senders recover a Rate Reduce within 4 ms, before
// its effect could cross the lab's 10 ms WAN round trip: the step's queue
// swung between empty and 13 MB at n1's WAN with the link 77–85 % used,
// where the simulator held it at 0.25 MB and 94 % (docs/lab.md).
func sourcesRTTEst(sc *scenario.Scenario, switches map[string]bool) engine.Time {
	rtt := lhcnp.DefaultRTTEst
	for _, l := range sc.Links {
		if switches[l.A] || switches[l.B] {
			rtt = max(rtt, engine.FromDuration(2*l.Delay))
		}
	}
	return rtt
}
