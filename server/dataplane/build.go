package dataplane

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	lhsim "github.com/lhcnp/lhcnp/dataplane-sim/sim"
)

// Switch is one switch of a scenario, built for a gNMI target: the
// scenario's network on one engine, with a Long-haul CNP node on the served
// switch. The node starts with lhcnp.DefaultConfig (disabled); the target
// loads the switch's YANG configuration into it.
type Switch struct {
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
	Sim      *engine.Sim
	Net      *netsim.Network
	Switches []*Switch // the served switches, in the order asked
	// Local holds the names of the nodes this process runs.
	Local map[string]bool
	// Wired maps each wired link's name to this process's port on it.
	Wired    map[string]*netsim.Port
	Reaction *lhcnp.ReactionPoint
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
// The hosts and switches are configured as the batch simulator configures
// them (sim.HostConfig, sim.PortConfig), so the same scenario and seed give
// the same run.
func BuildNetwork(sc *scenario.Scenario, served []Served, o BuildOptions) (*Network, error) {
	if len(served) == 0 {
		return nil, errors.New("dataplane: no switch to serve")
	}
	servedIdx := map[string]int{}
	for i, sv := range served {
		if !slices.ContainsFunc(sc.Switches, func(s scenario.Switch) bool { return s.Name == sv.Name }) {
			var names []string
			for _, s := range sc.Switches {
				names = append(names, s.Name)
			}
			return nil, fmt.Errorf("dataplane: scenario %s has no switch %q (switches: %v)", sc.Name, sv.Name, names)
		}
		if _, dup := servedIdx[sv.Name]; dup {
			return nil, fmt.Errorf("dataplane: switch %q served twice", sv.Name)
		}
		servedIdx[sv.Name] = i
	}
	local, err := localNodes(sc, served, o.Wired)
	if err != nil {
		return nil, err
	}
	sim := engine.New(engine.WithSeed(uint64(sc.Seed)))
	net := netsim.New(sim)
	hc, err := lhsim.HostConfig(sc)
	if err != nil {
		return nil, fmt.Errorf("dataplane: %w", err)
	}
	for _, h := range sc.Hosts {
		if _, err := net.AddHost(h.Name, h.IP, hc); err != nil {
			return nil, fmt.Errorf("dataplane: %w", err)
		}
	}
	servedSw := make([]*netsim.Switch, len(served))
	for _, s := range sc.Switches {
		ns, err := net.AddSwitch(s.Name, s.IP, netsim.SwitchConfig{Port: lhsim.PortConfig(s.Queue, 0)})
		if err != nil {
			return nil, fmt.Errorf("dataplane: %w", err)
		}
		if i, ok := servedIdx[s.Name]; ok {
			servedSw[i] = ns
		}
	}
	linkOf := make([]map[string]*netsim.Port, len(served)) // per served switch: link name → its port
	for i := range linkOf {
		linkOf[i] = map[string]*netsim.Port{}
	}
	linkPorts := map[string][2]*netsim.Port{}
	wired := map[string]*netsim.Port{}
	isWired := map[string]bool{}
	for _, w := range o.Wired {
		isWired[w] = true
	}
	for _, lk := range sc.Links {
		pa, pb, err := net.Connect(net.NodeByName(lk.A), net.NodeByName(lk.B),
			netsim.LinkConfig{RateBps: int64(lk.Rate), Delay: engine.FromDuration(lk.Delay)})
		if err != nil {
			return nil, fmt.Errorf("dataplane: link %s: %w", lk.Name, err)
		}
		for _, pt := range []*netsim.Port{pa, pb} {
			if _, isSwitch := pt.Node().(*netsim.Switch); isSwitch && lk.Buffer > 0 {
				c := pt.Config()
				c.BufferBytes = int64(lk.Buffer)
				if err := pt.SetConfig(c); err != nil {
					return nil, fmt.Errorf("dataplane: link %s: %w", lk.Name, err)
				}
			}
			if i, ok := servedIdx[pt.Node().Name()]; ok {
				linkOf[i][lk.Name] = pt
			}
			if isWired[lk.Name] && local[pt.Node().Name()] {
				wired[lk.Name] = pt
			}
		}
		linkPorts[lk.Name] = [2]*netsim.Port{pa, pb}
	}
	net.ComputeRoutes()
	for _, rt := range sc.Routes {
		if !rt.Explicit {
			continue
		}
		dst := net.NodeByName(rt.Dst)
		for i := 1; i+1 < len(rt.Path); i++ {
			sw := net.NodeByName(rt.Path[i]).(*netsim.Switch)
			for _, pt := range sw.Ports() {
				if pt.Peer().Node().Name() == rt.Path[i+1] {
					if err := sw.SetRoute(dst.ID(), pt.Index()); err != nil {
						return nil, fmt.Errorf("dataplane: route %s->%s: %w", rt.Src, rt.Dst, err)
					}
				}
			}
		}
	}

	var nopts []lhcnp.Option
	if o.Events != nil {
		nopts = append(nopts, lhcnp.WithEvents(o.Events))
	}
	out := &Network{Sim: sim, Net: net, Local: local, Wired: wired}
	var nodes []*lhcnp.Node
	for i, sv := range served {
		ports, err := interfaceNames(sc, servedSw[i], linkOf[i], sv.Interfaces)
		if err != nil {
			return nil, err
		}
		node, err := lhcnp.Attach(net, servedSw[i], lhcnp.DefaultConfig(), nopts...)
		if err != nil {
			return nil, fmt.Errorf("dataplane: %w", err)
		}
		nodes = append(nodes, node)
		out.Switches = append(out.Switches, &Switch{Sim: sim, Net: net, Switch: servedSw[i], Node: node, Ports: ports})
	}
	rc := lhcnp.DefaultReactionConfig()
	for _, s := range sc.Switches {
		rc.TrustedSources = append(rc.TrustedSources, netip.PrefixFrom(s.IP, s.IP.BitLen()))
	}
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

	flows := map[string]*netsim.Flow{}
	for _, f := range sc.Flows {
		src, _ := net.NodeByName(f.Src).(*netsim.Host)
		dst, _ := net.NodeByName(f.Dst).(*netsim.Host)
		// A flow's rate is its maximum rate (DCQCN's increases stop there);
		// a stop is administrative, so a Long-haul CNP Resume cannot lift it.
		nf, err := net.AddFlow(netsim.FlowConfig{Name: f.Name, Src: src, Dst: dst, SrcQPN: f.SrcQP, DstQPN: f.DstQP,
			Bytes: int64(f.Size), Start: engine.FromDuration(f.Start), MaxRateBps: int64(f.Rate), Dormant: !local[f.Src]})
		if err != nil {
			return nil, fmt.Errorf("dataplane: flow %s: %w", f.Name, err)
		}
		if !local[f.Src] {
			continue
		}
		flows[f.Name] = nf
		if f.Stop > 0 {
			sim.AtFunc(engine.FromDuration(f.Stop), nf.AdminStop) // a no-op once finished and retired (lab traffic)
		}
	}
	for _, ev := range sc.Events {
		sim.AtFunc(engine.FromDuration(ev.At), func() { applyEvent(ev, linkPorts, flows, nodes) })
	}
	return out, nil
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
	for _, w := range wired {
		if !slices.ContainsFunc(sc.Links, func(l scenario.Link) bool { return l.Name == w }) {
			return nil, fmt.Errorf("dataplane: wired link %q: scenario %s has no such link", w, sc.Name)
		}
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

func applyEvent(ev scenario.Event, links map[string][2]*netsim.Port, flows map[string]*netsim.Flow, nodes []*lhcnp.Node) {
	switch ev.Kind {
	case scenario.EventLinkRate, scenario.EventLinkDelay, scenario.EventRTT:
		for _, pt := range links[ev.Target] {
			switch ev.Kind {
			case scenario.EventLinkRate:
				pt.Out().SetRateBps(int64(ev.Rate))
			case scenario.EventLinkDelay:
				pt.Out().SetDelay(engine.FromDuration(ev.Delay))
			case scenario.EventRTT:
				pt.Out().SetDelay(engine.FromDuration(ev.Delay / 2))
			}
			for _, node := range nodes {
				if pt.Node() == netsim.Node(node.Switch()) {
					node.LinkChanged(pt)
				}
			}
		}
	case scenario.EventFlowStop:
		if f := flows[ev.Target]; f != nil {
			f.AdminStop()
		}
	case scenario.EventFlowStart:
		if f := flows[ev.Target]; f != nil {
			f.AdminStart()
		}
	}
}

// interfaceNames names the served switch's ports: by link name, or by the
// caller's YANG name for a link.
func interfaceNames(sc *scenario.Scenario, sw *netsim.Switch, linkOf map[string]*netsim.Port, rename map[string]string) (*Ports, error) {
	yangOf := map[string]string{} // link → YANG name
	for y, link := range rename {
		if _, ok := linkOf[link]; !ok {
			return nil, fmt.Errorf("dataplane: interface %q: switch %s has no link %q", y, sw.Name(), link)
		}
		if prev, dup := yangOf[link]; dup {
			return nil, fmt.Errorf("dataplane: link %q named twice (%q and %q)", link, prev, y)
		}
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
	err := s.Sim.RunRealtime(ctx, speed, engine.Never)
	if ctx.Err() != nil || errors.Is(err, engine.ErrStopped) {
		return nil
	}
	return err
}
