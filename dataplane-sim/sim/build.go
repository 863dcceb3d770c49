package sim

import (
	"fmt"
	"slices"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// build turns the scenario into a network on a fresh engine.
func (r *runner) build() error {
	sc := r.sc
	r.sim = engine.New(engine.WithSeed(uint64(r.seed)))
	r.net = netsim.New(r.sim)

	hc, err := hostConfig(sc)
	if err != nil {
		return err
	}
	for _, h := range sc.Hosts {
		nh, err := r.net.AddHost(h.Name, h.IP, hc)
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		r.hosts = append(r.hosts, &hostRun{h: nh})
	}
	var aware []*netsim.Switch
	for _, s := range sc.Switches {
		ns, err := r.net.AddSwitch(s.Name, s.IP, netsim.SwitchConfig{Port: portConfig(s.Queue, 0)})
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		if s.CongestionAware {
			aware = append(aware, ns)
		}
	}
	// The runner's own copy of the links: events change rates and delays
	// and the caller's scenario stays as loaded.
	r.links = slices.Clone(sc.Links)
	for i := range r.links {
		lk := &r.links[i]
		a, b := r.net.NodeByName(lk.A), r.net.NodeByName(lk.B)
		pa, pb, err := r.net.Connect(a, b, netsim.LinkConfig{RateBps: int64(lk.Rate), Delay: engine.FromDuration(lk.Delay)})
		if err != nil {
			return fmt.Errorf("sim: link %s: %w", lk.Name, err)
		}
		for _, pt := range []*netsim.Port{pa, pb} {
			if _, isSwitch := pt.Node().(*netsim.Switch); isSwitch && lk.Buffer > 0 {
				c := pt.Config()
				c.BufferBytes = int64(lk.Buffer)
				if err := pt.SetConfig(c); err != nil {
					return fmt.Errorf("sim: link %s: %w", lk.Name, err)
				}
			}
			r.portLink[pt] = lk
		}
		r.linkPorts[lk.Name] = [2]*netsim.Port{pa, pb}
	}
	r.net.ComputeRoutes()
	for _, rt := range sc.Routes {
		if !rt.Explicit {
			continue
		}
		dst := r.net.NodeByName(rt.Dst)
		for i := 1; i+1 < len(rt.Path); i++ {
			sw := r.net.NodeByName(rt.Path[i]).(*netsim.Switch)
			port := portTowards(sw, rt.Path[i+1])
			if err := sw.SetRoute(dst.ID(), port.Index()); err != nil {
				return fmt.Errorf("sim: route %s->%s: %w", rt.Src, rt.Dst, err)
			}
		}
	}

	// Ports: every port of every node, in node then port order.
	for _, n := range r.net.Nodes() {
		for _, pt := range n.Ports() {
			pr := &portRun{pt: pt, node: n.Name(), peer: pt.Peer().Node().Name()}
			pr.queue = r.rec.Queues.Series(pr.node, pr.peer)
			pr.marks = r.rec.Counters.Series(pr.node, pr.peer, "ecn_marks")
			pr.drops = r.rec.Counters.Series(pr.node, pr.peer, "drops")
			pr.pauseTx = r.rec.Counters.Series(pr.node, pr.peer, "pfc_pause_sent")
			pr.pausedNs = r.rec.Counters.Series(pr.node, pr.peer, "pfc_paused_ns")
			r.ports = append(r.ports, pr)
		}
	}
	for _, hr := range r.hosts {
		name, peer := hr.h.Name(), hr.h.Port().Peer().Node().Name()
		hr.cnpTx = r.rec.Counters.Series(name, peer, "cnp_sent")
		hr.cnpRx = r.rec.Counters.Series(name, peer, "cnp_received")
		hr.ctrlRx = r.rec.Counters.Series(name, peer, "control_received")
	}

	// Flows: those that start before the end.
	for _, f := range sc.Flows {
		if engine.FromDuration(f.Start) >= r.end {
			continue
		}
		src := r.net.NodeByName(f.Src).(*netsim.Host)
		dst := r.net.NodeByName(f.Dst).(*netsim.Host)
		nf, err := r.net.AddFlow(netsim.FlowConfig{
			Name: f.Name, Src: src, Dst: dst, SrcQPN: f.SrcQP, DstQPN: f.DstQP,
			Bytes: int64(f.Size), Start: engine.FromDuration(f.Start), MaxRateBps: int64(f.Rate),
		})
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		fr := &flowRun{f: f, nf: nf, rate: r.rec.Rates.Series(f.Name)}
		fr.idealFCT = r.idealFCT(src, dst, int64(f.Size))
		r.flows[f.Name] = fr
		r.flowOrder = append(r.flowOrder, fr)
		if f.Stop > 0 && engine.FromDuration(f.Stop) < r.end {
			r.sim.AtFunc(engine.FromDuration(f.Stop), func() { r.stopFlow(fr) })
		}
	}

	// The mechanism, then the events, in time order (ties: file order).
	r.env = &Env{Scenario: sc, Sim: r.sim, Net: r.net, r: r}
	blocks := append([]scenario.Mechanism{sc.Mechanism}, sc.Mechanism.With...)
	for i, b := range blocks {
		m, ok := r.opts.mechanisms[b.Kind]
		if !ok {
			return fmt.Errorf("sim: mechanism %s: %w", b.Kind, ErrNoModel)
		}
		r.env.Mech, r.env.Nodes = b, nil
		for _, name := range b.Nodes {
			if sw, ok := r.net.NodeByName(name).(*netsim.Switch); ok {
				r.env.Nodes = append(r.env.Nodes, sw)
			}
		}
		if i == 0 && len(b.Nodes) == 0 {
			r.env.Nodes = aware
		}
		if err := m.Install(r.env); err != nil {
			return fmt.Errorf("sim: mechanism %s: %w", b.Kind, err)
		}
	}
	for _, ev := range sc.Events {
		at := engine.FromDuration(ev.At)
		if at > r.end {
			continue
		}
		r.sim.AtFunc(at, func() { r.apply(ev) })
	}
	for _, pr := range r.ports {
		pr.capFrom = 0
	}
	return nil
}

func portTowards(sw *netsim.Switch, peer string) *netsim.Port {
	for _, pt := range sw.Ports() {
		if pt.Peer().Node().Name() == peer {
			return pt
		}
	}
	panic("sim: validated route uses a missing link to " + peer)
}

// portConfig maps a scenario queue onto a netsim port: the same ECN
// thresholds on every priority, PFC on every priority.
func portConfig(q scenario.Queue, bufferBytes int64) netsim.PortConfig {
	return netsim.PortConfig{
		BufferBytes: bufferBytes,
		ECN: netsim.SameECN(netsim.ECNConfig{
			Enabled: q.ECN.Enabled, KMinBytes: int64(q.ECN.KMin), KMaxBytes: int64(q.ECN.KMax), PMax: q.ECN.PMax,
		}),
		PFC: netsim.PFCConfig{Enabled: q.PFC.Enabled, XOFFBytes: int64(q.PFC.XOff), XONBytes: int64(q.PFC.XOn)},
	}
}

// hostConfig applies the scenario's DCQCN and NIC overrides to the model's
// defaults.
func hostConfig(sc *scenario.Scenario) (netsim.HostConfig, error) {
	c := netsim.DefaultHostConfig()
	d, rp := sc.DCQCN, &c.DCQCN
	if d.Profile == scenario.DCQCNProfilePaper {
		c.DCQCN, c.NP = netsim.PaperDCQCN(), netsim.PaperNP()
	}
	set(&rp.AlphaPerCNP, d.AlphaPerCNP, func(v bool) bool { return v })
	set(&rp.Enabled, d.Enabled, func(v bool) bool { return v })
	set(&rp.G, d.G, func(v int) uint32 { return uint32(v) })
	set(&rp.AlphaUpdatePeriod, d.AlphaUpdatePeriod, engine.FromDuration)
	set(&rp.InitialAlpha, d.InitialAlpha, func(v int) uint32 { return uint32(v) })
	set(&rp.RateOnFirstCNPBps, d.RateOnFirstCNP, rateBps)
	set(&rp.MinDecFacPercent, d.MinDecFacPercent, func(v int) int64 { return int64(v) })
	set(&rp.MinRateBps, d.MinRate, rateBps)
	set(&rp.GD, d.GD, func(v int) uint { return uint(v) })
	set(&rp.RateReduceMonitorPeriod, d.RateReduceMonitorPeriod, engine.FromDuration)
	set(&rp.ClampTargetRate, d.ClampTargetRate, func(v bool) bool { return v })
	set(&rp.ClampTargetAfterTimeInc, d.ClampTargetAfterTimeInc, func(v bool) bool { return v })
	set(&rp.TimeReset, d.TimeReset, engine.FromDuration)
	set(&rp.ByteResetBytes, d.ByteReset, func(v scenario.Size) int64 { return int64(v) })
	set(&rp.Threshold, d.Threshold, func(v int) int { return v })
	set(&rp.MaxRateBps, d.MaxRate, rateBps)
	set(&rp.AIRateBps, d.RateAI, rateBps)
	set(&rp.HAIRateBps, d.RateHAI, rateBps)
	set(&c.NP.CNPInterval, d.CNPInterval, engine.FromDuration)
	set(&c.NP.CNPPrio, d.CNPPrio, func(v int) uint8 { return uint8(v) })
	set(&c.MTUBytes, sc.NIC.MTU, func(v scenario.Size) int32 { return int32(v) })
	set(&c.AckEveryPackets, sc.NIC.AckEveryPackets, func(v int) uint32 { return uint32(v) })
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("sim: rnic configuration: %w", err)
	}
	return c, nil
}

func rateBps(r scenario.Rate) int64 { return int64(r) }

// set assigns conv(*v) to dst when the scenario overrides the field.
func set[S, D any](dst *D, v *S, conv func(S) D) {
	if v != nil {
		*dst = conv(*v)
	}
}
