package sim

import (
	"context"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// retireScenario: two small leaf-spine fabrics (4 hosts each) joined by a
// 100 µs WAN, a partition each, with thousands of short web-search-like
// flows across the WAN and inside each fabric over 10 ms: far more flows
// over the run than run at once.
const retireScenario = `name: retire
seed: 3
duration: 10ms
sample_interval: 100us
topology:
  fabrics:
    - {name: a, kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 2, rate: 100Gbps, delay: 1us, shared_buffer: {size: 8MB}}
    - {name: b, kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 2, rate: 100Gbps, delay: 1us, shared_buffer: {size: 8MB}}
  wan:
    - {name: wan, a: a, b: b, rate: 100Gbps, delay: 100us, buffer: 64MB}
queue:
  ecn: {enabled: true, k_min: 50KB, k_max: 200KB, p_max: 0.2}
mechanism:
  kind: long-haul-cnp
  nodes: [a-br, b-br]
traffic:
  generated:
    - {name: x, senders: [a, b], receivers: [a, b], pattern: cross-dc, load_of: wan, load: 0.3, cdf: [[1KB, 0], [20KB, 0.7], [200KB, 1]], stop: 10ms}
    - {name: y, senders: [a, b], receivers: [a, b], pattern: intra-dc, load: 0.1, cdf: [[1KB, 0], [20KB, 0.7], [200KB, 1]], stop: 10ms}
`

// TestRunnerRetiresFinishedFlows: the runner retires finished flows (on a
// network cut into two partitions, at one and two threads): at every
// sample, each flow that finished more than the retirement delay and a
// round trip (its disconnect) ago has retired, so the queue pairs alive
// are those of the flows not started, running or just finished, far fewer
// than the flows of the run; and the output directory is byte for byte
// the one of a run that keeps every flow.
func TestRunnerRetiresFinishedFlows(t *testing.T) {
	sc, err := scenario.Parse("retire.yaml", []byte(retireScenario))
	if err != nil {
		t.Fatal(err)
	}
	keep := runDir(t, sc, 2, WithoutPlots(), func(o *options) { o.keepFlows = true })
	for _, threads := range []int{1, 2} {
		o := options{duration: sc.Duration, series: true, mechanisms: map[scenario.MechanismKind]Mechanism{}, threads: threads}
		r := newRunner(sc, o)
		if err := r.build(); err != nil {
			t.Fatal(err)
		}
		after := r.retireAfter()
		interval := engine.FromDuration(sc.SampleInterval)
		maxLive, maxRunning, samples := 0, 0, 0
		r.b.Group.EveryGlobal(0, interval, func(now engine.Time) {
			samples++
			live, notStarted := 0, 0
			for _, h := range r.net.Hosts() {
				s, _ := h.LiveQPs()
				live += s
			}
			for _, fr := range r.flowOrder {
				if engine.FromDuration(fr.Scenario.Start) > now {
					notStarted++
				}
				// Closed a round trip (at most half the delay) after
				// its last ACK; retired at the first sample after the
				// delay.
				if done, at := fr.Net.Done(); done && at+after+after/2+interval <= now && !fr.Net.Retired() {
					t.Fatalf("threads=%d at %v: flow %s finished at %v, not retired (delay %v)", threads, now, fr.Scenario.Name, at, after)
				}
			}
			maxLive, maxRunning = max(maxLive, live), max(maxRunning, live-notStarted)
		})
		if err := r.run(context.Background()); err != nil {
			t.Fatal(err)
		}
		retired := r.net.RetiredFlows()
		t.Logf("threads=%d: %d flows, %d retired, retirement delay %v; at the %d samples at most %d sender QPs alive, %d of started flows",
			threads, len(r.flowOrder), retired, after, samples, maxLive, maxRunning)
		if retired < int64(len(r.flowOrder))/2 {
			t.Errorf("threads=%d: %d of %d flows retired", threads, retired, len(r.flowOrder))
		}
		// Kept, every started flow's QPs would be alive at the end: all of them.
		if maxRunning > len(r.flowOrder)/4 {
			t.Errorf("threads=%d: up to %d queue pairs of started flows alive, of %d flows: not bounded by the flows running", threads, maxRunning, len(r.flowOrder))
		}
		for _, h := range r.net.Hosts() {
			if d := h.Stats().UnknownDropped; d != 0 {
				t.Errorf("threads=%d: %s dropped %d packets for unknown QPs: a flow retired too early", threads, h.Name(), d)
			}
		}
		if err := sameDirs(keep, runDir(t, sc, threads, WithoutPlots())); err != nil {
			t.Errorf("threads=%d: with retirement against without: %v", threads, err)
		}
	}
}
