package sim

import (
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
)

// Samplers inside the partitions (issue 25). On a network cut into
// partitions the samplers used to be global events: every sample_interval
// all partitions stopped at a barrier while one thread read the whole
// network, so the windows were the samples' (100 µs) and a window waited
// for its busier partition a thousand times per 100 ms. Instead each
// partition takes a snapshot of what it holds at every sample instant
// (engine.Group.EveryPartition: on its own goroutine, ahead of its events
// at the instant, as the global event ran before them), into a record of
// its own; at the barriers, which now come only at the lookahead and the
// remaining global events, the records of the instants every partition
// has passed are merged into the recorder, the meter and the mechanisms'
// split hooks in the order the global sampler read them (ports, hosts,
// sent counters, flows in flowOrder's order), instant by instant. So
// every row, every series' creation and every figure of the meter are
// what the global sampler made, for every thread count.
//
// What a partition reads: its ports (queue, counters, the meter's TxBytes
// and rate), its hosts, the flows whose sender it holds (the rate, done,
// and whether the sender offers load, for the meter), the sent counters
// its nodes counted before the instant (a mark in its list), and the
// split hooks' snapshots (Long-haul CNP's thresholds of its nodes).
// Retirement (Network.RetireDue, both ends of a flow) runs at the merge
// for the instant merged: it changes no event.

// splitHook is a mechanism's sampler cut in two: snap runs in partition
// part at the instant and appends what it reads of the partition to buf;
// merge runs at the barrier with every partition's snapshot of the
// instant, in partition order.
// A global hook (OnSample's) has merge alone, which reads the network
// itself.
type splitHook struct {
	snap   func(part int, now engine.Time, buf []int64) []int64
	merge  func(now engine.Time, snaps [][]int64)
	global bool
}

// runGlobal runs h at a global sample: both halves, every partition
// stopped at now.
func (h splitHook) runGlobal(now engine.Time, parts int) {
	if h.global {
		h.merge(now, nil)
		return
	}
	snaps := make([][]int64, parts)
	for i := range snaps {
		snaps[i] = h.snap(i, now, nil)
	}
	h.merge(now, snaps)
}

// partSampler drives the samplers of a run cut into partitions.
type partSampler struct {
	r     *runner
	m     *meter // nil: not metered
	parts []*partBuf
	hooks []splitHook
	snaps [][]int64 // scratch for a hook's merge
}

// partBuf is one partition's share of the samplers.
type partBuf struct {
	ports      []*portRun // its own, in r.ports's order
	hosts      []*hostRun
	meterPorts []*portMeter // its own, in the meter's order
	// byStart: the flows whose sender it holds, by start (ties:
	// flowOrder's); running the started ones not dropped, in flowOrder's
	// order.
	byStart   []*flowRun
	nextStart int
	running   []*flowRun
	// sentBase is the absolute index of r.sentIn[part][0].
	sentBase int
	recs     []*sampleRec // not merged yet, in time order
	head     int
	free     []*sampleRec
}

// sampleRec is what a partition read at one instant.
type sampleRec struct {
	t     engine.Time
	ports []int64 // per port: queue, ECN marks, drops, PFC pauses sent, PFC paused ns
	hosts []int64 // per host: CNPs sent, received, control received
	sent  int     // absolute index in the partition's sent counts: those before the instant
	flows []flowSnap
	meter []int64 // per meter port: TxBytes, rate
	hooks [][]int64
}

type flowSnap struct {
	fr     *flowRun
	rate   int64
	doneAt engine.Time
	done   bool
	offers bool // the sender offers load (the meter's)
}

// canSplitSamples reports whether the run's samplers can run inside its
// partitions: a network cut into partitions, no tuner (its ticks decide
// and write at sample instants: global), no mechanism.with block, no
// sample hook that is not split, no scenario event at time 0 (at 0 one
// runs between the meter's sample and the runner's), and every network
// flow a runner's flow. Otherwise the samplers stay global events, as
// before.
func (r *runner) canSplitSamples() bool {
	if r.b.Group.Len() < 2 || r.opts.globalSamples || r.sc.Tuner != nil || len(r.sc.Mechanism.With) > 0 {
		return false
	}
	if r.rt != nil {
		for _, h := range r.rt.sampleHooks {
			if h.global {
				return false
			}
		}
	}
	for _, ev := range r.sc.Events {
		if ev.At == 0 {
			return false
		}
	}
	return len(r.net.Flows()) == len(r.flowOrder)
}

func newPartSampler(r *runner) *partSampler {
	g := r.b.Group
	ps := &partSampler{r: r, parts: make([]*partBuf, g.Len()), snaps: make([][]int64, g.Len())}
	if r.rt != nil {
		ps.m, ps.hooks = r.rt.meter, r.rt.sampleHooks
	}
	for i := range ps.parts {
		ps.parts[i] = &partBuf{}
	}
	part := func(n netsim.Node) *partBuf { return ps.parts[r.net.Partition(n)] }
	for _, pr := range r.ports {
		p := part(pr.pt.Node())
		p.ports = append(p.ports, pr)
	}
	for _, hr := range r.hosts {
		p := part(hr.h)
		p.hosts = append(p.hosts, hr)
	}
	if ps.m != nil {
		for _, pm := range ps.m.ports {
			p := part(pm.pt.Node())
			p.meterPorts = append(p.meterPorts, pm)
		}
	}
	for _, fr := range r.byStart {
		p := part(fr.Net.Sender.Host())
		p.byStart = append(p.byStart, fr)
	}
	return ps
}

// snapshot runs in partition part at now.
func (ps *partSampler) snapshot(part int, now engine.Time) {
	p := ps.parts[part]
	var rec *sampleRec
	if n := len(p.free); n > 0 {
		rec = p.free[n-1]
		p.free = p.free[:n-1]
	} else {
		rec = &sampleRec{hooks: make([][]int64, len(ps.hooks))}
	}
	rec.t = now
	rec.ports = rec.ports[:0]
	for _, pr := range p.ports {
		pt := pr.pt
		st := pt.Stats()
		rec.ports = append(rec.ports, pt.TotalQueueBytes(), st.ECNMarks, st.DropPackets, st.PFCPauseTx, st.PFCPausedNs)
	}
	rec.hosts = rec.hosts[:0]
	for _, hr := range p.hosts {
		st := hr.h.Stats()
		rec.hosts = append(rec.hosts, st.CNPTx, st.CNPRx, st.ControlRx)
	}
	rec.sent = p.sentBase
	if ps.r.sentIn != nil {
		rec.sent += len(ps.r.sentIn[part])
	}
	ps.snapFlows(p, rec, now)
	rec.meter = rec.meter[:0]
	for _, pm := range p.meterPorts {
		rec.meter = append(rec.meter, pm.pt.Stats().TxBytes, pm.pt.RateBitsPerSec())
	}
	for i, h := range ps.hooks {
		rec.hooks[i] = h.snap(part, now, rec.hooks[i][:0])
	}
	p.recs = append(p.recs, rec)
}

// snapFlows reads the partition's started flows as sampleFlows and the
// meter do: every flow started at or before now and not finished before
// the last instant (a finished one is read once more, for the meter, and
// then dropped for good).
func (ps *partSampler) snapFlows(p *partBuf, rec *sampleRec, now engine.Time) {
	p.running = admitStarted(p.running, p.byStart, &p.nextStart, now)
	rec.flows = rec.flows[:0]
	keep := p.running[:0]
	for _, fr := range p.running {
		done, at := fr.Net.Done()
		s := flowSnap{fr: fr, done: done, doneAt: at}
		if !done || at >= now {
			s.rate = recordedRate(fr, now)
		}
		if !done {
			s.offers = offersLoad(fr.Net.Sender)
		}
		rec.flows = append(rec.flows, s)
		if done && at < now {
			continue
		}
		keep = append(keep, fr)
	}
	clear(p.running[len(keep):])
	p.running = keep
}

// mergeBefore merges the records of the instants before reached, which
// every partition has passed, in time order; every partition is stopped.
func (ps *partSampler) mergeBefore(reached engine.Time) {
	for {
		p0 := ps.parts[0]
		if p0.head == len(p0.recs) || p0.recs[p0.head].t >= reached {
			break
		}
		ps.merge(p0.recs[p0.head].t)
	}
	for _, p := range ps.parts {
		if p.head == len(p.recs) {
			p.recs, p.head = p.recs[:0], 0
		}
	}
}

// merge records the instant t from every partition's record of it, in the
// order of the global sampler (runner.sample after meter.sample).
func (ps *partSampler) merge(t engine.Time) {
	r := ps.r
	recs := make([]*sampleRec, len(ps.parts))
	for i, p := range ps.parts {
		if p.head == len(p.recs) || p.recs[p.head].t != t {
			panic("sim: a partition's sample record is missing")
		}
		recs[i] = p.recs[p.head]
		p.head++
	}
	if m := ps.m; m != nil {
		for i, p := range ps.parts {
			for k, pm := range p.meterPorts {
				pm.snapTx, pm.snapRate = recs[i].meter[2*k], recs[i].meter[2*k+1]
			}
			for _, s := range recs[i].flows {
				fm := m.flows[s.fr.Net.ID]
				fm.snapAt, fm.snapDone, fm.snapOffers = t, s.done, s.offers
			}
		}
		m.sampleSnap(t)
	}
	// The sent counts before t, partition by partition (mergeCounts).
	for i, p := range ps.parts {
		if r.sentIn == nil {
			break
		}
		n := recs[i].sent - p.sentBase
		cs := r.sentIn[i]
		for _, c := range cs[:n] {
			r.countNow(c.node, c.kind, c.n)
		}
		r.sentIn[i] = append(cs[:0], cs[n:]...)
		clear(cs[len(cs)-n:])
		p.sentBase += n
	}
	tn := t.Nanos()
	rec := r.rec
	cur := make([]int, len(ps.parts))
	for _, pr := range r.ports {
		i := r.net.Partition(pr.pt.Node())
		v := recs[i].ports[cur[i] : cur[i]+5]
		cur[i] += 5
		rec.Queues.Add(tn, pr.queue, v[0])
		rec.Counters.Add(tn, pr.marks, v[1])
		rec.Counters.Add(tn, pr.drops, v[2])
		rec.Counters.Add(tn, pr.pauseTx, v[3])
		rec.Counters.Add(tn, pr.pausedNs, v[4])
	}
	clear(cur)
	for _, hr := range r.hosts {
		i := r.net.Partition(hr.h)
		v := recs[i].hosts[cur[i] : cur[i]+3]
		cur[i] += 3
		rec.Counters.Add(tn, hr.cnpTx, v[0])
		rec.Counters.Add(tn, hr.cnpRx, v[1])
		rec.Counters.Add(tn, hr.ctrlRx, v[2])
	}
	for _, sc := range r.sentBy {
		rec.Counters.Add(tn, sc.id, sc.n)
	}
	// The flows, in flowOrder's order: a merge of the partitions' lists.
	clear(cur)
	for {
		best := -1
		for i := range recs {
			if cur[i] < len(recs[i].flows) && (best < 0 || recs[i].flows[cur[i]].fr.order < recs[best].flows[cur[best]].fr.order) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		s := recs[best].flows[cur[best]]
		cur[best]++
		if s.done && s.doneAt < t {
			continue
		}
		rec.Rates.Add(tn, s.fr.rate, s.rate)
	}
	for k, h := range ps.hooks {
		for i := range recs {
			ps.snaps[i] = recs[i].hooks[k]
		}
		h.merge(t, ps.snaps)
	}
	// Last, when everything at t has been read: the flows due retire.
	r.net.RetireDue(t)
	for i, p := range ps.parts {
		p.free = append(p.free, recs[i])
	}
}
