package sim

import (
	"context"
	"fmt"
	"slices"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/report"
)

// progressSlices is how many slices the run is cut into: the context is
// checked and progress reported between slices.
const progressSlices = 200

func (r *runner) run(ctx context.Context) error {
	interval := engine.FromDuration(r.sc.SampleInterval)
	g := r.b.Group
	split := r.canSplitSamples()
	if mt := r.meterOf(); mt != nil && mt.split != split {
		panic("sim: the meter and the runner disagree on where they sample")
	}
	if split {
		r.ps = newPartSampler(r)
		g.EveryPartition(0, interval, r.ps.snapshot)
	} else {
		g.EveryGlobal(0, interval, r.sample)
	}
	slice := max(r.end/progressSlices, 1)
	if g.Len() > 1 {
		// Several partitions: one run to the end, the context and the
		// progress seen at the barriers the run has anyway, so that no
		// slice ends a window the lookahead would let go on.
		if err := r.runWhole(ctx, g, slice); err != nil {
			return err
		}
	} else {
		for t := slice; ; t += slice {
			t = min(t, r.end)
			g.Run(t, r.opts.threads)
			if err := ctx.Err(); err != nil {
				return err
			}
			r.progress(t, g)
			if t == r.end {
				break
			}
		}
	}
	if r.ps != nil {
		r.ps.mergeBefore(engine.Never)
	}
	r.mergeCounts()
	for _, pr := range r.ports {
		r.advanceCapacity(pr, r.end)
	}
	r.events = g.Events()
	return nil
}

// runWhole runs a group of several partitions to the end in one Run,
// checking the context and reporting progress at the barriers: at most
// once per slice, at the last slice boundary the run has passed.
func (r *runner) runWhole(ctx context.Context, g *engine.Group, slice engine.Time) error {
	next := slice
	g.OnBarrier(func(reached engine.Time) {
		if r.ps != nil {
			// The samples every partition has passed.
			r.ps.mergeBefore(reached)
		}
		if ctx.Err() != nil {
			g.Stop()
			return
		}
		if reached <= next || next >= r.end {
			return
		}
		at := min((reached-1)/slice*slice, r.end)
		next = at + slice
		r.progress(at, g)
	})
	defer g.OnBarrier(nil)
	g.Run(r.end, r.opts.threads)
	if err := ctx.Err(); err != nil {
		return err
	}
	r.progress(r.end, g)
	return nil
}

func (r *runner) progress(t engine.Time, g *engine.Group) {
	if r.opts.progress != nil {
		r.opts.progress(Progress{Now: t.Duration(), Total: r.end.Duration(), Events: g.Events()})
	}
}

// sample records one row per series. Flows are recorded from their start
// to their completion; a stopped or paused flow records 0.
func (r *runner) sample(now engine.Time) {
	r.mergeCounts()
	t := now.Nanos()
	rec := r.rec
	for _, pr := range r.ports {
		pt := pr.pt
		rec.Queues.Add(t, pr.queue, pt.TotalQueueBytes())
		st := pt.Stats()
		rec.Counters.Add(t, pr.marks, st.ECNMarks)
		rec.Counters.Add(t, pr.drops, st.DropPackets)
		rec.Counters.Add(t, pr.pauseTx, st.PFCPauseTx)
		rec.Counters.Add(t, pr.pausedNs, st.PFCPausedNs)
	}
	for _, hr := range r.hosts {
		st := hr.h.Stats()
		rec.Counters.Add(t, hr.cnpTx, st.CNPTx)
		rec.Counters.Add(t, hr.cnpRx, st.CNPRx)
		rec.Counters.Add(t, hr.ctrlRx, st.ControlRx)
	}
	for _, sc := range r.sentBy {
		rec.Counters.Add(t, sc.id, sc.n)
	}
	r.sampleFlows(now)
	if r.env != nil {
		for _, h := range r.rt.sampleHooks {
			h.runGlobal(now, r.b.Group.Len())
		}
	}
	// Last, when everything at now has been read: the flows due retire.
	r.net.RetireDue(now)
}

// sampleFlows records the rate of every flow started at or before now and
// not finished before now, in flowOrder's order. A flow finished before a
// sample is never recorded again, so it leaves the list for good.
func (r *runner) sampleFlows(now engine.Time) {
	r.sampled = admitStarted(r.sampled, r.byStart, &r.nextStart, now)
	t := now.Nanos()
	keep := r.sampled[:0]
	for _, fr := range r.sampled {
		if done, at := fr.Net.Done(); done && at < now {
			continue
		}
		keep = append(keep, fr)
		r.rec.Rates.Add(t, fr.rate, recordedRate(fr, now))
	}
	clear(r.sampled[len(keep):])
	r.sampled = keep
}

// admitStarted appends to running the flows of byStart, from *next on,
// that started at or before now, and keeps running in flowOrder's order:
// the started-flows list of the global sampler and of each partition's.
func admitStarted(running, byStart []*flowRun, next *int, now engine.Time) []*flowRun {
	added := false
	for ; *next < len(byStart) && engine.FromDuration(byStart[*next].Scenario.Start) <= now; *next++ {
		running = append(running, byStart[*next])
		added = true
	}
	if added {
		slices.SortFunc(running, func(a, b *flowRun) int { return a.order - b.order })
	}
	return running
}

// recordedRate is the rate the rates series records for a flow at now:
// its sender's, 0 while it is stopped or paused.
func recordedRate(fr *flowRun, now engine.Time) int64 {
	q := fr.Net.Sender
	if fr.Stopped || q.PausedUntil() > now {
		return 0
	}
	return q.RateBitsPerSec()
}

// meterOf returns the run's meter (nil: not metered).
func (r *runner) meterOf() *meter {
	if r.rt == nil {
		return nil
	}
	return r.rt.meter
}

func (r *runner) advanceCapacity(pr *portRun, now engine.Time) {
	pr.capBits += float64(pr.pt.RateBitsPerSec()) * (now - pr.capFrom).Seconds()
	pr.capFrom = now
}

func (r *runner) portRun(pt *netsim.Port) *portRun {
	for _, pr := range r.ports {
		if pr.pt == pt {
			return pr
		}
	}
	return nil
}

// idealFCT walks the routing tables from src to dst, as the packets of
// the connection of queue pairs srcQP and dstQP go (ECMP included), and
// returns the flow's FCT alone on that path (0 for a long-lived flow).
func (r *runner) idealFCT(src, dst *netsim.Host, srcQP, dstQP uint32, size int64) int64 {
	if size <= 0 {
		return 0
	}
	var rates []int64
	var oneWay engine.Time
	pt := src.Port()
	for hops := 0; pt != nil && hops < 64; hops++ {
		rates = append(rates, pt.RateBitsPerSec())
		oneWay += pt.Out().Delay()
		next := pt.Peer().Node()
		if next == netsim.Node(dst) {
			break
		}
		sw, ok := next.(*netsim.Switch)
		if !ok {
			return 0
		}
		pt = sw.RouteFlow(src.ID(), dst.ID(), srcQP, dstQP)
	}
	r.maxOneWay = max(r.maxOneWay, oneWay)
	// The frames as the sender makes them (one message: the runner never
	// sets FlowConfig.MessageBytes).
	fr := netsim.FlowFrameBytes(src.Addr(), size, int64(src.Config().MTUBytes), 0)
	ideal := report.IdealFCT(fr.TotalBytes, fr.FirstBytes, fr.LastBytes, 2*oneWay.Nanos(), rates)
	// The FCT counts from the flow's start, and the flow first connects
	// with the CM exchange (the runner never sets FlowConfig.NoCM; netsim
	// skips CM only between hosts without addresses of one family): the
	// REQ out and the REP back, each stored and forwarded at every hop,
	// before the first data packet leaves.
	if sa, da := src.Addr(), dst.Addr(); sa.IsValid() && da.IsValid() && sa.Is4() == da.Is4() {
		ideal += report.CMConnectNs(int64(netsim.CMBytes(sa)), 2*oneWay.Nanos(), rates)
	}
	return ideal
}

func (r *runner) summarize() *report.Summary {
	in := report.Input{
		Scenario: r.sc.Name, Mechanism: string(r.sc.Mechanism.Kind), Seed: r.seed,
		DurationNs: r.end.Nanos(), SampleNs: r.sc.SampleInterval.Nanoseconds(), Events: r.events,
		Recorder: r.rec, Warnings: r.warnings, Notifications: map[string]int64{},
	}
	for _, pr := range r.ports {
		st := pr.pt.Stats()
		in.Ports = append(in.Ports, report.PortInput{
			Node: pr.node, Port: pr.peer, Queue: pr.queue, RateBitsPerSec: pr.pt.RateBitsPerSec(), CapacityBits: pr.capBits,
			TxBytes: st.TxBytes, TxPackets: st.TxPackets, PeakQueueBytes: st.PeakQueueBytes, DropPackets: st.DropPackets, DropBytes: st.DropBytes,
			ECNMarks: st.ECNMarks, PFCPauseFrames: st.PFCPauseTx, PFCPausedNs: st.PFCPausedNs,
		})
	}
	var cnps int64
	for _, hr := range r.hosts {
		cnps += hr.h.Stats().CNPTx
	}
	in.Notifications["cnp"] = cnps
	for k, v := range r.sent {
		in.Notifications[k] = v
	}
	in.Flows = make([]report.FlowInput, 0, len(r.flowOrder))
	for _, fr := range r.flowOrder {
		f, fin := fr.Scenario, fr.final
		if fin == nil {
			fin = finalOf(fr.Net)
		}
		done, at := fr.Net.Done()
		fi := report.FlowInput{
			Name: f.Name, Src: f.Src, Dst: f.Dst, SrcQP: fin.srcQP, DstQP: fin.dstQP, Group: f.Group,
			SizeBytes: int64(f.Size), StartNs: f.Start.Nanoseconds(), StopNs: f.Stop.Nanoseconds(),
			Finished: done, FinishNs: at.Nanos(), IdealFCTNs: fr.idealFCT,
			RxBytes: fin.rxBytes, Lost: fin.lost, CNPs: fin.cnps, RetxPackets: fin.retx, Timeouts: fin.timeouts,
		}
		in.Flows = append(in.Flows, fi)
	}
	r.rt.finishSummary(&in)
	in.Warnings = slices.Clone(r.warnings)
	if w := lossyFinished(in.Flows); w != "" {
		in.Warnings = append(in.Warnings, w)
	}
	return report.Summarize(in)
}

// lossyFinished is the warning for finite flows that finished without
// all their bytes ("" when none did): without go-back-N
// (nic.loss_recovery) nothing is resent and the receiver acknowledges past
// a gap, so such a flow finishes when its last packet's ACK comes back,
// and its FCT and slowdown count only what arrived. With it a flow
// finishes with every byte, whatever it lost on the way.
func lossyFinished(flows []report.FlowInput) string {
	var n int
	var missing int64
	for _, f := range flows {
		if f.Finished && f.RxBytes < f.SizeBytes {
			n++
			missing += max(0, f.SizeBytes-f.RxBytes)
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d finished flows lost packets, %d bytes in all, that are not resent (nic.loss_recovery none, docs/engine.md \"Loss recovery\"): their fct_ns and slowdown count only what arrived", n, missing)
}
