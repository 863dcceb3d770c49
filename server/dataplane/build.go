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
)

// Switch is one switch of a scenario, built for a gNMI target: the
// scenario's network on one engine, with a Long-haul CNP node on the served
// switch. The node starts with lhcnp.DefaultConfig (disabled); the target
// loads the switch's YANG configuration into it.
//
// Until wires between processes exist, the rest of the scenario (its hosts,
// their traffic, the other switches with their queue configuration) runs in
// the same engine; timed events of the scenario are applied (link rate,
// delay and RTT changes, flow stop and start).
type Switch struct {
	Sim    *engine.Sim
	Net    *netsim.Network
	Switch *netsim.Switch
	Node   *lhcnp.Node
	Ports  *Ports
	// Reaction is the Long-haul CNP reaction point of every host: the
	// sources act on the notifications of the served switch.
	Reaction *lhcnp.ReactionPoint
}

// BuildOptions are the choices Build leaves to the caller.
type BuildOptions struct {
	// Interfaces renames the served switch's interfaces: YANG name → link
	// name of the scenario. A link not listed is named by its link name.
	Interfaces map[string]string
	// Events forwards node events (CNP sent, flows learned...).
	Events func(lhcnp.Event)
}

// Build builds the network of sc and attaches the node to switch name.
func Build(sc *scenario.Scenario, name string, o BuildOptions) (*Switch, error) {
	idx := slices.IndexFunc(sc.Switches, func(s scenario.Switch) bool { return s.Name == name })
	if idx < 0 {
		var names []string
		for _, s := range sc.Switches {
			names = append(names, s.Name)
		}
		return nil, fmt.Errorf("dataplane: scenario %s has no switch %q (switches: %v)", sc.Name, name, names)
	}
	sim := engine.New(engine.WithSeed(uint64(sc.Seed)))
	net := netsim.New(sim)
	hc := netsim.DefaultHostConfig()
	if sc.NIC.MTU != nil {
		hc.MTUBytes = int32(*sc.NIC.MTU)
	}
	for _, h := range sc.Hosts {
		if _, err := net.AddHost(h.Name, h.IP, hc); err != nil {
			return nil, fmt.Errorf("dataplane: %w", err)
		}
	}
	var served *netsim.Switch
	for _, s := range sc.Switches {
		ns, err := net.AddSwitch(s.Name, s.IP, netsim.SwitchConfig{Port: portConfig(s.Queue)})
		if err != nil {
			return nil, fmt.Errorf("dataplane: %w", err)
		}
		if s.Name == name {
			served = ns
		}
	}
	linkOf := map[string]*netsim.Port{} // link name → the served switch's port
	linkPorts := map[string][2]*netsim.Port{}
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
			if pt.Node() == netsim.Node(served) {
				linkOf[lk.Name] = pt
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

	ports, err := interfaceNames(sc, served, linkOf, o.Interfaces)
	if err != nil {
		return nil, err
	}
	var nopts []lhcnp.Option
	if o.Events != nil {
		nopts = append(nopts, lhcnp.WithEvents(o.Events))
	}
	node, err := lhcnp.Attach(net, served, lhcnp.DefaultConfig(), nopts...)
	if err != nil {
		return nil, fmt.Errorf("dataplane: %w", err)
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
		rp.Attach(h)
	}

	flows := map[string]*netsim.Flow{}
	for _, f := range sc.Flows {
		src, _ := net.NodeByName(f.Src).(*netsim.Host)
		dst, _ := net.NodeByName(f.Dst).(*netsim.Host)
		// A flow's rate is its maximum rate (DCQCN's increases stop there);
		// a stop is administrative, so a Long-haul CNP Resume cannot lift it.
		nf, err := net.AddFlow(netsim.FlowConfig{Name: f.Name, Src: src, Dst: dst, SrcQPN: f.SrcQP, DstQPN: f.DstQP,
			Bytes: int64(f.Size), Start: engine.FromDuration(f.Start), MaxRateBps: int64(f.Rate)})
		if err != nil {
			return nil, fmt.Errorf("dataplane: flow %s: %w", f.Name, err)
		}
		flows[f.Name] = nf
		if f.Stop > 0 {
			sim.AtFunc(engine.FromDuration(f.Stop), func() { nf.Sender.AdminStop() })
		}
	}
	for _, ev := range sc.Events {
		sim.AtFunc(engine.FromDuration(ev.At), func() { applyEvent(ev, linkPorts, flows, node, served) })
	}
	return &Switch{Sim: sim, Net: net, Switch: served, Node: node, Ports: ports, Reaction: rp}, nil
}

func applyEvent(ev scenario.Event, links map[string][2]*netsim.Port, flows map[string]*netsim.Flow, node *lhcnp.Node, served *netsim.Switch) {
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
			if pt.Node() == netsim.Node(served) {
				node.LinkChanged(pt)
			}
		}
	case scenario.EventFlowStop:
		if f := flows[ev.Target]; f != nil {
			f.Sender.AdminStop()
		}
	case scenario.EventFlowStart:
		if f := flows[ev.Target]; f != nil {
			f.Sender.AdminStart()
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

// portConfig maps a scenario queue onto a netsim port, as the batch runner
// does: the same ECN thresholds on every priority, PFC on every priority.
func portConfig(q scenario.Queue) netsim.PortConfig {
	return netsim.PortConfig{
		ECN: netsim.SameECN(netsim.ECNConfig{
			Enabled: q.ECN.Enabled, KMinBytes: int64(q.ECN.KMin), KMaxBytes: int64(q.ECN.KMax), PMax: q.ECN.PMax,
		}),
		PFC: netsim.PFCConfig{Enabled: q.PFC.Enabled, XOFFBytes: int64(q.PFC.XOff), XONBytes: int64(q.PFC.XOn)},
	}
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
