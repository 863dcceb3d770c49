package fluid_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/build"
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/fluid"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// incastYAML is an N:1 incast of long-lived flows in one rack at 40 Gb/s
// with the DCQCN paper's parameters (profile paper: Table 3's g, K, timer,
// byte counter, F, R_AI, R_HAI and N = 50 µs; RED-ECN 5 KB / 200 KB / 1 %)
// and 1000-byte payloads: the network of the paper's fluid-model figures.
// The buffer is deep and PFC off, so the queue is DCQCN's alone.
func incastYAML(n int, dur string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: fluid-incast-%d\nseed: 1\nduration: %s\nsample_interval: 100us\n", n, dur)
	b.WriteString("topology:\n  hosts:\n    - {name: r}\n")
	for i := range n {
		fmt.Fprintf(&b, "    - {name: s%d}\n", i)
	}
	b.WriteString("  switches:\n    - {name: tor}\n  links:\n    - {a: r, b: tor, rate: 40Gbps, delay: 1us, buffer: 16MB}\n")
	for i := range n {
		fmt.Fprintf(&b, "    - {a: s%d, b: tor, rate: 40Gbps, delay: 1us, buffer: 16MB}\n", i)
	}
	b.WriteString("queue:\n  ecn: {enabled: true, k_min: 5KB, k_max: 200KB, p_max: 0.01}\n  pfc: {enabled: false}\n")
	b.WriteString("mechanism:\n  kind: dcqcn\ndcqcn:\n  profile: paper\nnic:\n  mtu: 1000B\ntraffic:\n  flows:\n")
	for i := range n {
		fmt.Fprintf(&b, "    - {name: f%d, src: s%d, dst: r, start: 0s}\n", i, i)
	}
	return b.String()
}

// packetRun is what the packet model did over a window: the mean queue at
// the bottleneck, its range, the mean per-flow R_C and alpha.
type packetRun struct {
	meanQueue, minQueue, maxQueue float64
	meanRate, meanAlpha           float64
	frameBytes                    float64
	events                        uint64
	cnpPerPeriod                  float64 // CNPs per flow per 55 µs
	marksPerPacket                float64 // CE marks per packet the bottleneck sent
}

// incastSeeds is how many runs of each incast (build seeds 1 to
// incastSeeds) the comparisons average. One run's figures move with the
// seed (ECN's random marking) as much as with a change of the increase:
// the 1 b/s rounding of DCQCN's fast recovery moved the fluctuation's
// share of the 2:1 queue excess from 0.41 to 0.28 in the seed-1 run, and
// it spreads from -0.29 to 0.53 over seeds 1-8 (docs/validation.md).
const incastSeeds = 8

// newIncast builds incastYAML's n:1 incast to run until to (build seed
// seed, the flows added) and returns it with its bottleneck, the switch's
// port towards the receiver.
func newIncast(t *testing.T, n int, to engine.Time, seed int64) (*build.Network, *netsim.Port) {
	t.Helper()
	return newIncastFrom(t, n, to, incastYAML(n, to.String()), seed)
}

// newIncastFrom is newIncast for a variant of incastYAML's text.
func newIncastFrom(t *testing.T, n int, to engine.Time, yaml string, seed int64) (*build.Network, *netsim.Port) {
	t.Helper()
	sc, err := scenario.Parse(fmt.Sprintf("incast-%d.yaml", n), []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	nw, err := build.New(sc, build.Options{Seed: seed, End: to})
	if err != nil {
		t.Fatal(err)
	}
	if err := nw.AddFlows(); err != nil {
		t.Fatal(err)
	}
	sw := nw.Net.NodeByName("tor").(*netsim.Switch)
	return nw, build.PortTowards(sw, "r")
}

// paperFixedPoint is the fluid model of the n:1 incast (the paper's
// parameters, packets of frameBytes, tau* 0) and its fixed point.
func paperFixedPoint(t *testing.T, n int, frameBytes float64) (fluid.Params, fluid.FixedPoint) {
	t.Helper()
	p := fluid.Paper(n, 40e9, 0)
	p.PacketBytes = frameBytes
	fp, err := p.FixedPoint()
	if err != nil {
		t.Fatal(err)
	}
	return p, fp
}

func runIncast(t *testing.T, n int, from, to engine.Time, seed int64) packetRun {
	t.Helper()
	nw, bott := newIncast(t, n, to, seed)
	var qps []*netsim.QP
	for _, f := range nw.Flows {
		qps = append(qps, f.Net.Sender)
	}
	r := packetRun{minQueue: 1e18}
	samples := 0
	nw.Sim.Every(from, 10*engine.Microsecond, func(now engine.Time) {
		if now >= to {
			return
		}
		q := float64(bott.TotalQueueBytes())
		r.meanQueue += q
		r.minQueue, r.maxQueue = min(r.minQueue, q), max(r.maxQueue, q)
		for _, qp := range qps {
			r.meanRate += float64(qp.RateBitsPerSec()) / float64(len(qps))
			r.meanAlpha += qp.Alpha() / float64(len(qps))
		}
		samples++
	})
	var cnp0 int64
	var st0 netsim.PortStats
	nw.Sim.AtFunc(from, func() {
		for _, qp := range qps {
			cnp0 += qp.CNPs()
		}
		st0 = bott.Stats()
	})
	nw.Sim.Run(to)
	var cnp1 int64
	for _, qp := range qps {
		cnp1 += qp.CNPs()
	}
	r.cnpPerPeriod = float64(cnp1-cnp0) / float64(len(qps)) / (float64(to-from) / float64(55*engine.Microsecond))
	r.meanQueue /= float64(samples)
	r.meanRate /= float64(samples)
	r.meanAlpha /= float64(samples)
	st1 := bott.Stats()
	r.marksPerPacket = float64(st1.ECNMarks-st0.ECNMarks) / float64(st1.TxPackets-st0.TxPackets)
	r.frameBytes = float64(1000 + netsim.RoCEOverheadBytes(nw.Net.NodeByName("s0").(*netsim.Host).Addr()))
	r.events = nw.Sim.Events()
	return r
}

// TestAgainstPacketIncast compares the packet model (build, netsim) with
// the fluid model on the 2:1 and 8:1 incasts of incastYAML, measured over
// 60-100 ms (alpha's time constant, K/g = 14 ms, has then run out) and
// averaged over build seeds 1-incastSeeds, against the fluid fixed point
// and the fluid trajectory over the same window.
// docs/validation.md has the table; the tolerances are set there and
// every figure beyond its tolerance is explained there. known bounds the
// ratio ours/fluid of those figures so that the documented state cannot
// drift unnoticed.
func TestAgainstPacketIncast(t *testing.T) {
	type figure struct {
		name        string
		ours, fluid float64
		tol         float64    // relative
		known       [2]float64 // documented ratio range when beyond tol
	}
	for _, n := range []int{2, 8} {
		t.Run(fmt.Sprintf("%d:1", n), func(t *testing.T) {
			from, to := 60*engine.Millisecond, 100*engine.Millisecond
			// The figures are the means over the seeds; the queue's
			// range is the widest any run reached.
			r := packetRun{minQueue: 1e18}
			for seed := range int64(incastSeeds) {
				s := runIncast(t, n, from, to, seed+1)
				t.Logf("seed %d: queue mean %.0f B, 0..%.0f B; R_C %.6g b/s; alpha %.4f; CNPs per alpha period %.4f; marks per packet %.5f",
					seed+1, s.meanQueue, s.maxQueue, s.meanRate, s.meanAlpha, s.cnpPerPeriod, s.marksPerPacket)
				r.meanQueue += s.meanQueue / incastSeeds
				r.meanRate += s.meanRate / incastSeeds
				r.meanAlpha += s.meanAlpha / incastSeeds
				r.cnpPerPeriod += s.cnpPerPeriod / incastSeeds
				r.marksPerPacket += s.marksPerPacket / incastSeeds
				r.minQueue, r.maxQueue = min(r.minQueue, s.minQueue), max(r.maxQueue, s.maxQueue)
				r.frameBytes = s.frameBytes
				r.events += s.events
			}
			// tau*: the base RTT (4 links of 1 µs, a frame and an ACK
			// serialised on each) plus the fixed point's queueing delay;
			// it decides stability only, not the fixed point.
			p, fp0 := paperFixedPoint(t, n, r.frameBytes)
			p.FeedbackDelaySec = 4e-6 + 8*(r.frameBytes+64)*4/40e9 + fp0.QueueBytes*8/40e9
			fp, err := p.FixedPoint()
			if err != nil {
				t.Fatal(err)
			}
			tr, err := p.Simulate(to.Seconds(), 0.25e-6, 10e-6)
			if err != nil {
				t.Fatal(err)
			}
			w := tr.Window(from.Seconds(), to.Seconds())
			if w.Oscillates(0.05) {
				t.Errorf("fluid model oscillates at tau* = %.1f µs: queue %.0f..%.0f B", p.FeedbackDelaySec*1e6, w.MinQueueBytes, w.MaxQueueBytes)
			}
			figs := []figure{
				{name: "R_C per flow (b/s) vs C/N", ours: r.meanRate, fluid: fp.RateBitsPerSec, tol: 0.02},
				{name: "queue (B) vs fixed point", ours: r.meanQueue, fluid: fp.QueueBytes, tol: 0.10, known: [2]float64{1.1, 1.5}},
				{name: "alpha vs fluid trajectory", ours: r.meanAlpha, fluid: w.MeanAlpha, tol: 0.20},
				{name: "CNPs per alpha period vs 1-(1-p*)^(tau' R_C)", ours: r.cnpPerPeriod, fluid: fp.Alpha, tol: 0.10, known: [2]float64{1.1, 1.4}},
				{name: "marks per packet vs p*", ours: r.marksPerPacket, fluid: fp.MarkProb, tol: 0.10, known: [2]float64{1.1, 2.4}},
			}
			t.Logf("tau* %.1f µs; packet queue %.0f..%.0f B over the window (all seeds), fluid %.0f..%.0f B; %d events (all seeds)",
				p.FeedbackDelaySec*1e6, r.minQueue, r.maxQueue, w.MinQueueBytes, w.MaxQueueBytes, r.events)
			for _, f := range figs {
				ratio := f.ours / f.fluid
				t.Logf("%-48s ours %12.6g fluid %12.6g diff %+6.1f%% tol %.0f%%", f.name, f.ours, f.fluid, 100*(ratio-1), 100*f.tol)
				if ratio >= 1-f.tol && ratio <= 1+f.tol {
					continue
				}
				if ratio < f.known[0] || ratio > f.known[1] {
					t.Errorf("%s: ours %g, fluid %g (ratio %.3f): outside the tolerance %.0f%% and the documented range %v", f.name, f.ours, f.fluid, ratio, 100*f.tol, f.known)
				}
			}
		})
	}
}
