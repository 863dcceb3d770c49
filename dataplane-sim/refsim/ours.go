package refsim

import (
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/build"
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// queueSampleEvery is how often our run samples the bottleneck queue for
// the time average (the reference's trace gives it at every packet).
const queueSampleEvery = engine.Microsecond

// RunOurs runs sc on our models (package build, as the batch runner does,
// without a mechanism beyond DCQCN) and summarises it as the reference's
// outputs are summarised. Wall time is measured; everything else is
// deterministic.
func RunOurs(sc *scenario.Scenario, bn Bottleneck, step time.Duration) (*Summary, error) {
	end := engine.FromDuration(sc.Duration)
	nw, err := build.New(sc, build.Options{Seed: sc.Seed, End: end})
	if err != nil {
		return nil, err
	}
	if err := nw.AddFlows(); err != nil {
		return nil, err
	}
	nw.ScheduleEvents()
	sw, _ := nw.Net.NodeByName(bn.Switch).(*netsim.Switch)
	if sw == nil {
		return nil, errNoSwitch(bn.Switch)
	}
	bott := build.PortTowards(sw, bn.Peer)
	se := newSeries(step.Nanoseconds(), int64(sc.Duration))
	names := map[netsim.FlowID]string{}
	for _, f := range nw.Flows {
		names[f.Net.ID] = f.Scenario.Name
	}
	firstData := map[netsim.FlowID]engine.Time{}
	bott.SetObserver(dequeueTap{se: se, names: names, now: nw.Sim.Now, first: firstData})
	// The first rate cut of each flow, seen by polling its QP's cut count
	// at the queue's sampling step (so to within queueSampleEvery).
	cutAt := map[netsim.FlowID]engine.Time{}
	nw.Sim.Every(0, queueSampleEvery, func(now engine.Time) {
		se.set(int64(now), float64(bott.TotalQueueBytes()))
		if len(cutAt) == len(nw.Flows) {
			return
		}
		for _, f := range nw.Flows {
			if _, ok := cutAt[f.Net.ID]; !ok && f.Net.Sender.RateCuts() > 0 {
				cutAt[f.Net.ID] = now
			}
		}
	})
	start := time.Now()
	nw.Sim.Run(end)
	wall := time.Since(start)
	q, thr := se.finish()
	s := &Summary{Scenario: sc.Name, Simulator: "lhcnp", StepNs: step.Nanoseconds(), QueueBytes: q,
		Events: int64(nw.Sim.Events()), WallSec: wall.Seconds(), BottleneckPackets: se.packets}
	for _, f := range nw.Flows {
		fs := FlowSummary{Name: f.Scenario.Name, ThroughputBitsPerSec: thr[f.Scenario.Name]}
		if fs.ThroughputBitsPerSec == nil {
			fs.ThroughputBitsPerSec = make([]float64, len(q))
		}
		if at, ok := cutAt[f.Net.ID]; ok {
			if t0, ok := firstData[f.Net.ID]; ok {
				fs.FirstCutNs = int64(at) - int64(t0)
			}
		}
		if done, at := f.Net.Done(); done && f.Scenario.Size > 0 {
			fs.FCTNs = int64(at) - int64(f.Scenario.Start)
		}
		s.Flows = append(s.Flows, fs)
	}
	s.addPortStats(nw.Net)
	s.fctPercentiles()
	return s, nil
}

// addPortStats adds the PFC pause time and frames and the drops of every
// port of the network, hosts' and switches', to s.
func (s *Summary) addPortStats(net *netsim.Network) {
	for _, n := range net.Nodes() {
		for _, pt := range portsOf(n) {
			st := pt.Stats()
			s.PFCPauseNs += st.PFCPausedNs
			s.PFCPauses += st.PFCPauseRx
			s.Drops += st.DropPackets
		}
	}
}

func portsOf(n netsim.Node) []*netsim.Port {
	switch n := n.(type) {
	case *netsim.Switch:
		return n.Ports()
	case *netsim.Host:
		return n.Ports()
	}
	return nil
}

// dequeueTap counts each flow's frames leaving the bottleneck and keeps
// the send time of each flow's first data packet there (a flow's packets
// reach the bottleneck in order): when its data began, after our CM
// exchange.
type dequeueTap struct {
	se    *series
	names map[netsim.FlowID]string
	now   func() engine.Time
	first map[netsim.FlowID]engine.Time
}

func (d dequeueTap) OnEnqueue(*netsim.Port, *netsim.Packet, int64) {}
func (d dequeueTap) OnMark(*netsim.Port, *netsim.Packet, int64)    {}
func (d dequeueTap) OnDrop(*netsim.Port, *netsim.Packet, int64)    {}
func (d dequeueTap) OnDequeue(_ *netsim.Port, p *netsim.Packet, _ int64) {
	if _, seen := d.first[p.Flow]; !seen && p.PayloadBytes > 0 {
		d.first[p.Flow] = p.SentAt
	}
	if name, ok := d.names[p.Flow]; ok && p.PayloadBytes > 0 {
		d.se.add(name, int64(d.now()), int64(p.SizeBytes))
	}
}
