// Package build turns a scenario (package scenario) into a network of the
// models (package netsim) on a fresh engine, adds the scenario's flows and
// carries out its timed events (link rate, delay and RTT changes, flow
// stops and starts). It is the one builder behind the batch runner
// (package sim), a switch's gNMI target and a fabric process (server/), so
// that the same scenario and seed build the same network everywhere.
//
// The steps are separate (New, AddFlows, ScheduleEvents) because the order
// in which things are put on the engine is part of a deterministic run:
// each caller attaches its mechanisms between them, where it always has.
//
// It must not import gen/ or server/.
package build

import (
	"fmt"
	"slices"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// Options are the choices New leaves to the caller.
type Options struct {
	// Seed seeds the engine's random source (ECN marking decisions).
	Seed int64
	// End, when positive, is when the run ends: flows starting at or
	// after it are left out, and stop times at or after it and events
	// after it are not scheduled. 0: the run has no end (a switch).
	End engine.Time
	// Local names the nodes this process runs (nil: every node). A flow
	// whose sender is elsewhere is added dormant, so that node, flow and
	// QP numbers are the same in every process, and events leave it alone.
	Local map[string]bool
	// Partitioned runs the scenario's partitions (its partition keys) as
	// partitions of an engine.Group, for the batch runner's threads.
	// false: the whole network is one partition, whatever the file says
	// (the paced engine of a switch and the lab runs one Sim).
	Partitioned bool
}

// Network is a scenario built on an engine.
type Network struct {
	Scenario *scenario.Scenario
	// Group runs the network: one partition (Sim itself) unless the
	// scenario cuts it into partitions (scenario.Scenario.Partitions).
	Group *engine.Group
	// Sim is partition 0's engine: the network's engine when it is not
	// cut.
	Sim *engine.Sim
	Net *netsim.Network
	// Links is the network's own copy of the scenario's links: events
	// change their rates and delays, the caller's scenario stays as loaded.
	Links []scenario.Link
	// Flows are the scenario's flows that AddFlows added, in scenario
	// order.
	Flows []*Flow

	o          Options
	linkPorts  map[string][2]*netsim.Port
	portLink   map[*netsim.Port]*scenario.Link
	flows      map[string]*Flow // the local ones, by name: what events act on
	beforeRate []func(*netsim.Port)
	linkHooks  []func(*scenario.Link, *netsim.Port, *netsim.Port)
}

// Flow is a flow of the network.
type Flow struct {
	// Scenario is the scenario's flow (AddFlows: an element of
	// Scenario.Flows, not a copy: 144 bytes a flow, 144 MB at a million).
	Scenario *scenario.Flow
	Net      *netsim.Flow
	// Stopped reports an administrative stop (the flow's stop time or a
	// flow-stop event) not yet lifted by a flow-start event.
	Stopped bool
}

// New builds the hosts, switches, links and routes of sc on a fresh
// engine. Flows come with AddFlows, events with ScheduleEvents.
func New(sc *scenario.Scenario, o Options) (*Network, error) {
	n := &Network{Scenario: sc, o: o,
		linkPorts: map[string][2]*netsim.Port{}, portLink: map[*netsim.Port]*scenario.Link{}, flows: map[string]*Flow{}}
	parts := 1
	if o.Partitioned {
		parts = max(1, len(sc.Partitions()))
	}
	n.Group = engine.NewGroup(parts, uint64(o.Seed))
	n.Sim = n.Group.Sim(0)
	if parts == 1 {
		n.Net = netsim.New(n.Sim)
	} else {
		n.Net = netsim.NewPartitioned(n.Group)
	}
	index := map[string]int{} // partition name -> index; "" is the first
	for i, p := range sc.Partitions() {
		index[p] = i
	}
	place := func(x netsim.Node, partition string) error {
		if parts == 1 {
			return nil
		}
		return n.Net.SetPartition(x, index[partition])
	}
	hc, err := hostConfig(sc)
	if err != nil {
		return nil, err
	}
	for _, h := range sc.Hosts {
		x, err := n.Net.AddHost(h.Name, h.IP, hc)
		if err == nil {
			err = place(x, h.Partition)
		}
		if err != nil {
			return nil, fmt.Errorf("build: %w", err)
		}
	}
	for _, s := range sc.Switches {
		x, err := n.Net.AddSwitch(s.Name, s.IP, netsim.SwitchConfig{Port: portConfig(s.Queue, 0),
			SharedBufferBytes: int64(s.SharedBuffer), SharedAlpha: s.SharedAlpha})
		if err == nil {
			err = place(x, s.Partition)
		}
		if err != nil {
			return nil, fmt.Errorf("build: %w", err)
		}
	}
	n.Links = slices.Clone(sc.Links)
	for i := range n.Links {
		lk := &n.Links[i]
		pa, pb, err := n.Net.Connect(n.Net.NodeByName(lk.A), n.Net.NodeByName(lk.B),
			netsim.LinkConfig{RateBitsPerSec: int64(lk.Rate), Delay: engine.FromDuration(lk.Delay)})
		if err != nil {
			return nil, fmt.Errorf("build: link %s: %w", lk.Name, err)
		}
		for _, pt := range []*netsim.Port{pa, pb} {
			if _, isSwitch := pt.Node().(*netsim.Switch); isSwitch && lk.Buffer > 0 {
				c := pt.Config()
				c.BufferBytes = int64(lk.Buffer)
				if err := pt.SetConfig(c); err != nil {
					return nil, fmt.Errorf("build: link %s: %w", lk.Name, err)
				}
			}
			n.portLink[pt] = lk
		}
		n.linkPorts[lk.Name] = [2]*netsim.Port{pa, pb}
	}
	if parts > 1 {
		if err := n.Group.SetLookahead(n.lookahead()); err != nil {
			return nil, fmt.Errorf("build: %w", err)
		}
	}
	n.Net.SetECMP(sc.ECMP.Enabled, uint64(sc.ECMP.Seed))
	n.Net.ComputeRoutes()
	for _, rt := range sc.Routes {
		if !rt.Explicit {
			continue
		}
		dst := n.Net.NodeByName(rt.Dst)
		for i := 1; i+1 < len(rt.Path); i++ {
			sw := n.Net.NodeByName(rt.Path[i]).(*netsim.Switch)
			if err := sw.SetRoute(dst.ID(), PortTowards(sw, rt.Path[i+1]).Index()); err != nil {
				return nil, fmt.Errorf("build: route %s->%s: %w", rt.Src, rt.Dst, err)
			}
		}
	}
	return n, nil
}

// PortTowards returns sw's port whose link leads to the node named peer;
// the scenario joins two nodes by at most one link, and its routes use
// only links that exist.
func PortTowards(sw *netsim.Switch, peer string) *netsim.Port {
	for _, pt := range sw.Ports() {
		if pt.Peer().Node().Name() == peer {
			return pt
		}
	}
	panic("build: validated route uses a missing link to " + peer)
}

// IsLocal reports whether this process runs the named node.
func (n *Network) IsLocal(name string) bool { return n.o.Local == nil || n.o.Local[name] }

// AddFlows adds the scenario's flows (those starting before the end) and
// schedules the stop times of the local ones.
func (n *Network) AddFlows() error {
	for i := range n.Scenario.Flows {
		f := &n.Scenario.Flows[i]
		if n.o.End > 0 && engine.FromDuration(f.Start) >= n.o.End {
			continue
		}
		fl, err := n.addFlow(f, n.IsLocal(f.Src))
		if err != nil {
			return err
		}
		n.Flows = append(n.Flows, fl)
		if n.IsLocal(f.Src) {
			n.flows[f.Name] = fl
		}
	}
	return nil
}

// AddFlow adds one flow that is not the scenario's (the lab's later
// windows of traffic): dormant when its sender runs elsewhere, stopped at
// its stop time. Events do not act on it.
func (n *Network) AddFlow(f scenario.Flow) (*Flow, error) { return n.AddFlowLocal(f, n.IsLocal(f.Src)) }

// AddFlowLocal is AddFlow with the sender's locality given by the caller
// (a switch's Network, whose Local map is the one its users see).
func (n *Network) AddFlowLocal(f scenario.Flow, local bool) (*Flow, error) {
	return n.addFlow(&f, local)
}

func (n *Network) addFlow(f *scenario.Flow, local bool) (*Flow, error) {
	src, _ := n.Net.NodeByName(f.Src).(*netsim.Host)
	dst, _ := n.Net.NodeByName(f.Dst).(*netsim.Host)
	// A flow's rate is its maximum rate (DCQCN's increases stop there);
	// a stop is administrative, so a Long-haul CNP Resume cannot lift it.
	nf, err := n.Net.AddFlow(netsim.FlowConfig{Name: f.Name, Src: src, Dst: dst, SrcQPN: f.SrcQP, DstQPN: f.DstQP,
		Bytes: int64(f.Size), Start: engine.FromDuration(f.Start), MaxRateBitsPerSec: int64(f.Rate), Dormant: !local})
	if err != nil {
		return nil, fmt.Errorf("build: flow %s: %w", f.Name, err)
	}
	fl := &Flow{Scenario: f, Net: nf}
	if stop := engine.FromDuration(f.Stop); f.Stop > 0 && local && (n.o.End <= 0 || stop < n.o.End) {
		src.Sim().AtFunc(stop, func() { n.stop(fl) })
	}
	return fl, nil
}

// Flow returns the local flow of the scenario named name, or nil.
func (n *Network) Flow(name string) *Flow { return n.flows[name] }

// stop holds the sender until a flow-start event: an administrative stop,
// which a Long-haul CNP Resume cannot lift (netsim.Flow.AdminStop: a
// no-op for a retired flow).
func (n *Network) stop(fl *Flow) {
	fl.Stopped = true
	fl.Net.AdminStop()
}

// ScheduleEvents puts the scenario's timed events on the engine, in time
// order (ties: file order): Apply runs each at its time.
func (n *Network) ScheduleEvents() {
	for _, ev := range n.Scenario.Events {
		at := engine.FromDuration(ev.At)
		if n.o.End > 0 && at > n.o.End {
			continue
		}
		n.Group.AtGlobal(at, func() { n.Apply(ev) })
	}
}

// BeforeRateChange registers f to run, inside the simulation, just before
// an event changes the rate of a port's egress link (the batch runner
// integrates each port's capacity up to then).
func (n *Network) BeforeRateChange(f func(pt *netsim.Port)) { n.beforeRate = append(n.beforeRate, f) }

// OnLinkChange registers f to run, inside the simulation, after an event
// changed a link's rate or delay (a Long-haul CNP node recomputes K_max);
// link is the network's copy, already changed.
func (n *Network) OnLinkChange(f func(link *scenario.Link, a, b *netsim.Port)) {
	n.linkHooks = append(n.linkHooks, f)
}

// LinkPorts returns the two ports of the named link, in the scenario's a, b
// order.
func (n *Network) LinkPorts(name string) (a, b *netsim.Port, ok bool) {
	lp, ok := n.linkPorts[name]
	return lp[0], lp[1], ok
}

// PortLink returns the link (the network's copy) a port belongs to.
func (n *Network) PortLink(pt *netsim.Port) (*scenario.Link, bool) {
	l, ok := n.portLink[pt]
	return l, ok
}

// Apply carries out a timed event now.
func (n *Network) Apply(ev scenario.Event) {
	switch ev.Kind {
	case scenario.EventLinkRate, scenario.EventLinkDelay, scenario.EventRTT:
		ports := n.linkPorts[ev.Target]
		lk := n.portLink[ports[0]]
		for _, pt := range ports {
			switch ev.Kind {
			case scenario.EventLinkRate:
				for _, f := range n.beforeRate {
					f(pt)
				}
				pt.Out().SetRateBitsPerSec(int64(ev.Rate))
			case scenario.EventLinkDelay:
				pt.Out().SetDelay(engine.FromDuration(ev.Delay))
			case scenario.EventRTT:
				pt.Out().SetDelay(engine.FromDuration(ev.Delay / 2))
			}
		}
		switch ev.Kind {
		case scenario.EventLinkRate:
			lk.Rate = ev.Rate
		case scenario.EventLinkDelay:
			lk.Delay = ev.Delay
		case scenario.EventRTT:
			lk.Delay = ev.Delay / 2
		}
		for _, h := range n.linkHooks {
			h(lk, ports[0], ports[1])
		}
	case scenario.EventFlowStop:
		if fl := n.flows[ev.Target]; fl != nil {
			n.stop(fl)
		}
	case scenario.EventFlowStart:
		if fl := n.flows[ev.Target]; fl != nil && fl.Stopped {
			fl.Stopped = false
			fl.Net.AdminStart()
		}
	}
}

// lookahead is the least one-way delay a link between partitions has now
// or is given by an event: the group's lookahead.
func (n *Network) lookahead() engine.Time {
	la := n.Net.Lookahead()
	for _, ev := range n.Scenario.Events {
		a, _, ok := n.LinkPorts(ev.Target)
		if !ok || !a.Out().Cut() {
			continue
		}
		switch ev.Kind {
		case scenario.EventLinkDelay:
			la = min(la, engine.FromDuration(ev.Delay))
		case scenario.EventRTT:
			la = min(la, engine.FromDuration(ev.Delay/2))
		}
	}
	return la
}
