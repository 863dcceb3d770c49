package sim

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/lhcnp/lhcnp/dataplane-sim/build"
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/install"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// retireAfter is how long after its sender closed a finished flow waits
// before it retires (then at the next sample): twice the longest round
// trip of the run's flows' paths, at least a millisecond.
func (r *runner) retireAfter() engine.Time { return max(4*r.maxOneWay, engine.Millisecond) }

// build turns the scenario into a network on a fresh engine (package
// build), with the runner's series, the flows, the mechanism and then the
// events, in that order.
func (r *runner) build() error {
	sc := r.sc
	b, err := build.New(sc, build.Options{Seed: r.seed, End: r.end, Partitioned: true})
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	r.b, r.sim, r.net = b, b.Sim, b.Net
	if r.opts.group != nil {
		r.opts.group(b.Group)
	}
	if n := b.Group.Len(); n > 1 {
		r.sentIn = make([][]partCount, n)
	}
	for _, h := range r.net.Hosts() {
		r.hosts = append(r.hosts, &hostRun{h: h})
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
	// A rate change closes the port's capacity integral at the old rate.
	b.BeforeRateChange(func(pt *netsim.Port) { r.advanceCapacity(r.portRun(pt), r.sim.Now()) })

	// Flows: those that start before the end.
	if err := b.AddFlows(); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	for _, fl := range b.Flows {
		src := r.net.NodeByName(fl.Scenario.Src).(*netsim.Host)
		dst := r.net.NodeByName(fl.Scenario.Dst).(*netsim.Host)
		fr := &flowRun{Flow: fl, order: len(r.flowOrder), rate: r.rec.Rates.Series(fl.Scenario.Name)}
		fr.idealFCT = r.idealFCT(src, dst, fl.Net.Sender.QPN, fl.Net.Sender.PeerQPN, int64(fl.Scenario.Size))
		r.flowOrder = append(r.flowOrder, fr)
	}
	r.byFlow = make([]*flowRun, len(r.net.Flows()))
	for _, fr := range r.flowOrder {
		r.byFlow[fr.Net.ID] = fr
	}
	if !r.opts.keepFlows {
		// Finished flows retire at the first sample twice their longest
		// round trip after they closed (queueing as much again as the
		// path's delay), so that nothing of theirs is still on its way:
		// memory stays bounded by the flows running, and the run is the
		// run without retirement (no event is added: RetireFinishedLater).
		if err := r.net.RetireFinishedLater(r.retireAfter()); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		r.net.AddRetireObserver(r)
	}
	r.byStart = slices.Clone(r.flowOrder)
	slices.SortStableFunc(r.byStart, func(a, b *flowRun) int { return cmp.Compare(a.Scenario.Start, b.Scenario.Start) })

	// The mechanism, then the events, in time order (ties: file order).
	r.rt = &runEnv{r: r}
	r.env = install.NewEnv(sc, r.sim, b.Group, r.net, r.rt)
	var aware []*netsim.Switch
	for _, s := range sc.Switches {
		if s.CongestionAware {
			aware = append(aware, r.net.NodeByName(s.Name).(*netsim.Switch))
		}
	}
	blocks := append([]scenario.Mechanism{sc.Mechanism}, sc.Mechanism.With...)
	for i, blk := range blocks {
		if b.Group.Len() > 1 && !install.Cut(blk.Kind) {
			return fmt.Errorf("sim: mechanism %s: %w", blk.Kind, ErrNotPartitioned)
		}
		m, ok := r.opts.mechanismFor(blk.Kind)
		if !ok {
			return fmt.Errorf("sim: mechanism %s: %w", blk.Kind, ErrNoModel)
		}
		r.env.Mech, r.env.Nodes = blk, nil
		for _, name := range blk.Nodes {
			if sw, ok := r.net.NodeByName(name).(*netsim.Switch); ok {
				r.env.Nodes = append(r.env.Nodes, sw)
			}
		}
		if i == 0 && len(blk.Nodes) == 0 {
			r.env.Nodes = aware
		}
		if err := m.Install(r.env); err != nil {
			return fmt.Errorf("sim: mechanism %s: %w", blk.Kind, err)
		}
	}
	b.ScheduleEvents()
	for _, pr := range r.ports {
		pr.capFrom = 0
	}
	return nil
}
