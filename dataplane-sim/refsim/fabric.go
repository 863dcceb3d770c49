package refsim

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/build"
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/report"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// A generated fabric (topology.fabrics) has no single bottleneck and its
// flows take their paths by ECMP hashes that differ between the two
// simulators, so a fabric is compared by distributions: FCT slowdown per
// flow-size bucket, pooled over runs, and the queues of every switch port
// towards a host (where a fat-tree's flows meet) as one time-weighted
// distribution.

// IsFabric reports whether sc is compared as a fabric.
func IsFabric(sc *scenario.Scenario) bool { return len(sc.Fabrics) > 0 }

// queueBinBytes is the bin of the stored queue distributions.
const queueBinBytes = 1000

// portQueues accumulates the time-weighted distribution of several ports'
// queues: port-nanoseconds per queueBinBytes bin.
type portQueues struct {
	endNs int64
	last  map[[2]int][2]int64 // port: time, bytes since then
	hist  []float64
}

func newPortQueues(endNs int64) *portQueues {
	return &portQueues{endNs: endNs, last: map[[2]int][2]int64{}}
}

func (p *portQueues) add(bytes, ns int64) {
	if ns <= 0 {
		return
	}
	b := int(bytes / queueBinBytes)
	for len(p.hist) <= b {
		p.hist = append(p.hist, 0)
	}
	p.hist[b] += float64(ns)
}

// set records that port's queue became bytes at t (t never decreasing).
func (p *portQueues) set(port [2]int, t, bytes int64) {
	t = min(t, p.endNs)
	l, ok := p.last[port]
	if ok {
		p.add(l[1], t-l[0])
	} else {
		p.add(0, t) // empty since the start
	}
	p.last[port] = [2]int64{t, bytes}
}

// finish closes every port at the end; a port of ports never seen was
// empty throughout.
func (p *portQueues) finish(ports map[[2]int]bool) []float64 {
	for port := range ports {
		if _, seen := p.last[port]; !seen {
			p.add(0, p.endNs)
		}
	}
	for port, l := range p.last {
		p.add(l[1], p.endNs-l[0])
		delete(p.last, port)
	}
	return p.hist
}

// QueueMeanAndPct are the mean and the p-th quantile (its bin's upper
// edge) of a stored port-queue distribution.
func QueueMeanAndPct(hist []float64, p float64) (mean, q float64) {
	var tot, sum float64
	for b, ns := range hist {
		tot += ns
		sum += ns * (float64(b) + 0.5) * queueBinBytes
	}
	if tot == 0 {
		return 0, 0
	}
	var acc float64
	for b, ns := range hist {
		acc += ns
		if acc >= p*tot {
			return sum / tot, float64(b+1) * queueBinBytes
		}
	}
	return sum / tot, float64(len(hist)) * queueBinBytes
}

// RunOursFabric runs a fabric scenario on our models. Each flow's FCT
// counts from when its first data packet left the sender, and its ideal
// FCT leaves out the CM exchange: the reference has no connection setup
// and its flows send from their start (docs/validation.md: our CM MADs
// travel at the data priority and wait behind the queues they meet); the
// switch ports towards hosts are sampled every queueSampleEvery.
func RunOursFabric(sc *scenario.Scenario) (*Summary, error) {
	end := engine.FromDuration(sc.Duration)
	nw, err := build.New(sc, build.Options{Seed: sc.Seed, End: end})
	if err != nil {
		return nil, err
	}
	if err := nw.AddFlows(); err != nil {
		return nil, err
	}
	nw.ScheduleEvents()
	var ports []*netsim.Port
	for _, n := range nw.Net.Nodes() {
		sw, ok := n.(*netsim.Switch)
		if !ok {
			continue
		}
		for _, pt := range sw.Ports() {
			if _, host := pt.Peer().Node().(*netsim.Host); host {
				ports = append(ports, pt)
			}
		}
	}
	// The first data packet of each flow, as a switch first sees it: its
	// SentAt is when the flow's data began (after our CM exchange).
	firstData := map[netsim.FlowID]engine.Time{}
	tap := firstDataTap{first: firstData}
	for _, n := range nw.Net.Nodes() {
		if sw, ok := n.(*netsim.Switch); ok {
			for _, pt := range sw.Ports() {
				pt.SetObserver(tap)
			}
		}
	}
	pq := newPortQueues(int64(sc.Duration))
	step := int64(queueSampleEvery)
	nw.Sim.Every(0, queueSampleEvery, func(now engine.Time) {
		if int64(now) >= pq.endNs {
			return
		}
		for _, pt := range ports {
			pq.add(pt.TotalQueueBytes(), min(step, pq.endNs-int64(now)))
		}
	})
	start := time.Now()
	nw.Sim.Run(end)
	wall := time.Since(start)
	s := &Summary{Scenario: sc.Name, Simulator: "lhcnp", StepNs: step, Events: int64(nw.Sim.Events()), WallSec: wall.Seconds(),
		HostPortQueueNs: pq.hist}
	rates := map[[2]string]int64{}
	delays := map[[2]string]int64{}
	for _, lk := range sc.Links {
		for _, e := range [][2]string{{lk.A, lk.B}, {lk.B, lk.A}} {
			rates[e], delays[e] = int64(lk.Rate), lk.Delay.Nanoseconds()
		}
	}
	for _, f := range nw.Flows {
		fs := FlowSummary{Name: f.Scenario.Name, SizeBytes: int64(f.Scenario.Size)}
		src := nw.Net.NodeByName(f.Scenario.Src).(*netsim.Host)
		var hops []int64
		var oneWay int64
		for i := 0; i+1 < len(f.Scenario.Path); i++ {
			e := [2]string{f.Scenario.Path[i], f.Scenario.Path[i+1]}
			hops, oneWay = append(hops, rates[e]), oneWay+delays[e]
		}
		if fs.SizeBytes > 0 && len(hops) > 0 {
			fr := netsim.FlowFrameBytes(src.Addr(), fs.SizeBytes, int64(src.Config().MTUBytes), 0)
			fs.IdealNs = report.IdealFCT(fr.TotalBytes, fr.FirstBytes, fr.LastBytes, 2*oneWay, hops)
			if done, at := f.Net.Done(); done {
				fs.FCTNs = int64(at) - int64(firstData[f.Net.ID])
			}
		}
		s.Flows = append(s.Flows, fs)
	}
	s.addPortStats(nw.Net)
	s.fctPercentiles()
	return s, nil
}

// sizeBuckets are the flow-size buckets of the fabric comparison: the
// web-search mix's short flows (about half of them), its middle and its
// long flows.
var sizeBuckets = []struct {
	Name   string
	Lo, Hi int64
}{
	{"< 100 KB", 0, 100_000},
	{"100 KB - 1 MB", 100_000, 1_000_000},
	{">= 1 MB", 1_000_000, math.MaxInt64},
}

// Tolerances of the fabric comparison, set before it: FCT slowdown p50
// within the 10 %; p99 of a bucket of a few dozen flows per run is
// its slowest few, and the two simulators hash flows onto different paths
// (different collisions), so 25 %; the host ports' queue distribution
// (mean and p99.9) 20 %, as the queue series of the single-switch scenarios.
const (
	tolSlowdownP50 = 0.10
	tolSlowdownP99 = 0.25
	tolPortQueue   = 0.20
)

// slowdowns pools the finished flows' FCT / ideal FCT per size bucket.
func slowdowns(ss []*Summary) [][]float64 {
	out := make([][]float64, len(sizeBuckets))
	for _, s := range ss {
		for _, f := range s.Flows {
			if f.FCTNs <= 0 || f.IdealNs <= 0 {
				continue
			}
			for b, k := range sizeBuckets {
				if f.SizeBytes >= k.Lo && f.SizeBytes < k.Hi {
					out[b] = append(out[b], float64(f.FCTNs)/float64(f.IdealNs))
				}
			}
		}
	}
	for _, x := range out {
		slices.Sort(x)
	}
	return out
}

// CompareFabric computes the figures of a fabric scenario from several
// runs of each simulator.
func CompareFabric(ours, ref []*Summary) []Figure {
	so, sr := slowdowns(ours), slowdowns(ref)
	var figs []Figure
	finished := func(ss []*Summary) float64 {
		var n float64
		for _, s := range ss {
			for _, f := range s.Flows {
				if f.FCTNs > 0 {
					n++
				}
			}
		}
		return n / float64(max(1, len(ss)))
	}
	figs = append(figs, Figure{Name: "flows finished per run", Ours: finished(ours), Ref: finished(ref), Tol: tolSlowdownP50})
	for b, k := range sizeBuckets {
		figs = append(figs,
			Figure{Name: fmt.Sprintf("FCT slowdown p50, %s", k.Name), Ours: pct(so[b], 0.50), Ref: pct(sr[b], 0.50), Tol: tolSlowdownP50},
			Figure{Name: fmt.Sprintf("FCT slowdown p99, %s", k.Name), Ours: pct(so[b], 0.99), Ref: pct(sr[b], 0.99), Tol: tolSlowdownP99})
	}
	pool := func(ss []*Summary) []float64 {
		var h []float64
		for _, s := range ss {
			for len(h) < len(s.HostPortQueueNs) {
				h = append(h, 0)
			}
			for i, x := range s.HostPortQueueNs {
				h[i] += x
			}
		}
		return h
	}
	// Most of the port-time is an empty queue (p99 is 2-3 KB in both):
	// the tail that DCQCN and ECN shape is p99.9.
	mo, po := QueueMeanAndPct(pool(ours), 0.999)
	mr, pr := QueueMeanAndPct(pool(ref), 0.999)
	figs = append(figs,
		Figure{Name: "queue towards hosts, time mean (B)", Ours: mo, Ref: mr, Tol: tolPortQueue},
		Figure{Name: "queue towards hosts, time p99.9 (B)", Ours: po, Ref: pr, Tol: tolPortQueue},
		Figure{Name: "PFC pause time (ns)", Ours: runMean(ours, func(s *Summary) float64 { return float64(s.PFCPauseNs) }),
			Ref: runMean(ref, func(s *Summary) float64 { return float64(s.PFCPauseNs) }), Tol: tolPFC},
		Figure{Name: "drops", Ours: runMean(ours, func(s *Summary) float64 { return float64(s.Drops) }),
			Ref: runMean(ref, func(s *Summary) float64 { return float64(s.Drops) })})
	return figs
}

// firstDataTap records the send time of each flow's first data packet
// seen at a switch (a flow's packets reach its first switch in order).
type firstDataTap struct{ first map[netsim.FlowID]engine.Time }

func (d firstDataTap) OnEnqueue(_ *netsim.Port, p *netsim.Packet, _ int64) {
	if _, seen := d.first[p.Flow]; !seen && p.PayloadBytes > 0 {
		d.first[p.Flow] = p.SentAt
	}
}
func (d firstDataTap) OnMark(*netsim.Port, *netsim.Packet, int64)    {}
func (d firstDataTap) OnDrop(*netsim.Port, *netsim.Packet, int64)    {}
func (d firstDataTap) OnDequeue(*netsim.Port, *netsim.Packet, int64) {}
