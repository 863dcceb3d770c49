package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/build"
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/report"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/tuner/policy"
)

// Option configures Run.
type Option func(*options)

type options struct {
	duration   time.Duration
	seed       *int64
	progress   func(Progress)
	mechanisms map[scenario.MechanismKind]Mechanism
	plots      bool
	series     bool
	threads    int
	// group, when set (the benchmarks), sees the group once it is built.
	group func(*engine.Group)
	// keepFlows keeps finished flows' queue pairs (the tests compare).
	keepFlows bool
	// runner, when set (the benchmarks), receives the run's runner.
	runner **runner
	// globalSamples keeps the samplers global events on a cut network
	// (the tests compare with the samplers inside the partitions).
	globalSamples bool
	// tunerPolicy, when set, is the closed loop's policy configuration
	// in place of policy.DefaultConfig (WithTunerPolicy).
	tunerPolicy *policy.Config
}

// WithDuration runs for d instead of the scenario's duration (to shorten a
// scenario in tests, or to look further). Flows starting at or after the
// end are left out.
func WithDuration(d time.Duration) Option { return func(o *options) { o.duration = d } }

// WithSeed seeds the engine's random source (ECN marking decisions) with
// seed instead of the scenario's. Generated traffic is drawn when the
// scenario is loaded: use scenario.WithSeed there to change it too.
func WithSeed(seed int64) Option { return func(o *options) { o.seed = &seed } }

// Progress is reported during a run.
type Progress struct {
	Now, Total time.Duration // simulated
	Events     uint64        // processed so far
}

// WithProgress calls f about every half percent of simulated time, from
// the goroutine that called Run.
func WithProgress(f func(Progress)) Option { return func(o *options) { o.progress = f } }

// WithMechanism installs m for scenarios of the given kind, replacing the
// registered installer (package install), which is metered; m is not,
// unless it says so.
func WithMechanism(kind scenario.MechanismKind, m Mechanism) Option {
	return func(o *options) { o.mechanisms[kind] = m }
}

// WithThreads runs the partitions of a scenario cut into partitions on n
// goroutines (default: GOMAXPROCS). The outputs do not depend on n; a
// scenario that is not cut runs on one.
func WithThreads(n int) Option { return func(o *options) { o.threads = n } }

// WithoutPlots skips the PNG files.
func WithoutPlots() Option { return func(o *options) { o.plots = false } }

// WithTunerPolicy runs a scenario's tuner block with cfg as the policy's
// configuration instead of its defaults (the development loop's policy
// experiments: lhcnp sim eval --tuner-config); the block's own keys
// (weights, alpha_start, rules_off, search_after_rtt) still override it.
// cfg must be valid (policy.Config.Validate).
func WithTunerPolicy(cfg policy.Config) Option {
	return func(o *options) { o.tunerPolicy = &cfg }
}

// WithoutSeries skips the time series (queues.csv, rates.csv,
// counters.csv) and the plots drawn from them: summary.json and the
// mechanism's own files (tuner.csv) are written. A run of many is a few
// megabytes less (lhcnp sim phases: 4.7 GB less over its 340 runs).
func WithoutSeries() Option { return func(o *options) { o.series, o.plots = false, false } }

// Output file names, in outDir.
const (
	QueuesCSV   = "queues.csv"
	RatesCSV    = "rates.csv"
	CountersCSV = "counters.csv"
	// ThresholdsCSV holds the congestion-aware ports' K_min and K_max.
	ThresholdsCSV = "thresholds.csv"
	SummaryJSON   = "summary.json"
	QueuesPNG     = "queues.png"
	RatesPNG      = "rates.png"
)

// outputFiles are the names of every file Run may write.
var outputFiles = []string{QueuesCSV, RatesCSV, CountersCSV, ThresholdsCSV, SummaryJSON, QueuesPNG, RatesPNG, TunerCSV}

// Run simulates sc and writes queues.csv, rates.csv, counters.csv,
// thresholds.csv, summary.json, queues.png and rates.png into outDir (created if needed),
// and tuner.csv when the scenario has a tuner block. Files of those names
// already in outDir are an earlier run's: Run removes them before it
// writes, so that one it does not write this time (the plots
// WithoutPlots, the series WithoutSeries, tuner.csv without a tuner) is
// not read as this run's.
// It returns the summary. When ctx ends, Run stops between slices of
// simulated time and returns ctx's error without writing anything.
func Run(ctx context.Context, sc *scenario.Scenario, outDir string, opts ...Option) (*report.Summary, error) {
	o := options{duration: sc.Duration, plots: true, series: true, mechanisms: map[scenario.MechanismKind]Mechanism{}, threads: runtime.GOMAXPROCS(0)}
	for _, opt := range opts {
		opt(&o)
	}
	if o.duration <= 0 {
		return nil, fmt.Errorf("sim: duration %v must be positive", o.duration)
	}
	r := newRunner(sc, o)
	if o.runner != nil {
		*o.runner = r
	}
	if err := r.build(); err != nil {
		return nil, err
	}
	if err := r.run(ctx); err != nil {
		return nil, err
	}
	sum := r.summarize()
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	for _, name := range outputFiles {
		if err := os.Remove(filepath.Join(outDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	if o.series {
		if err := r.rec.WriteCSV(outDir); err != nil {
			return nil, err
		}
	}
	if err := sum.WriteFile(outDir); err != nil {
		return nil, err
	}
	if r.rt != nil {
		for _, f := range r.rt.writeHooks {
			if err := f(outDir); err != nil {
				return nil, err
			}
		}
	}
	if o.plots {
		if err := r.rec.WritePlots(outDir, sc.Name); err != nil {
			return nil, fmt.Errorf("plots: %w", err)
		}
	}
	return sum, nil
}

// newRunner prepares the run of sc with options o (the seed: o's or the
// scenario's).
func newRunner(sc *scenario.Scenario, o options) *runner {
	seed := sc.Seed
	if o.seed != nil {
		seed = *o.seed
	}
	return &runner{
		sc: sc, opts: o, seed: seed, end: engine.FromDuration(o.duration),
		rec: report.NewRecorder(), sent: map[string]int64{}, sentSeries: map[[2]string]int{},
	}
}

// runner is the state of one run.
type runner struct {
	sc   *scenario.Scenario
	opts options
	seed int64
	end  engine.Time

	b   *build.Network
	sim *engine.Sim     // b.Sim
	net *netsim.Network // b.Net
	env *Env
	rt  *runEnv // env's runner side
	rec *report.Recorder

	ports     []*portRun
	flowOrder []*flowRun
	hosts     []*hostRun
	// sampled lists the flows the sampler records: those started and not
	// finished before the last sample, in flowOrder's order; byStart holds
	// the others, by start (ties: flowOrder's order), from nextStart on.
	// A sample visits the flows running, not every flow of the run.
	sampled   []*flowRun
	byStart   []*flowRun
	nextStart int
	// byFlow is flowOrder by netsim flow ID (dense from 0: a slice, not a
	// map, 8 bytes a flow); maxOneWay the longest one-way path delay of a
	// flow (idealFCT), from which the retirement delay.
	byFlow    []*flowRun
	maxOneWay engine.Time

	sent       map[string]int64 // notifications by kind
	sentBy     []sentCounter
	sentSeries map[[2]string]int // index into sentBy
	// sentIn, on a network cut into partitions, holds the counts of each
	// partition's nodes since the last merge (mergeCounts, at every
	// sample and at the end), so that partitions running side by side
	// never touch the shared counters and the series appear in an order
	// that does not depend on the threads: partition by partition, each
	// in its own order.
	sentIn [][]partCount
	// ps, when set, samples inside the partitions (partSampler).
	ps       *partSampler
	warnings []string
	events   uint64
}

type portRun struct {
	pt       *netsim.Port
	node     string
	peer     string
	queue    report.SeriesID
	marks    report.SeriesID
	drops    report.SeriesID
	pauseTx  report.SeriesID
	pausedNs report.SeriesID
	// Capacity: the integral of the rate over time, advanced at every rate
	// change and at the end.
	capBits    float64
	capFrom    engine.Time
	pausedTime int64 // sampled: a sample interval per sample found paused
}

type flowRun struct {
	*build.Flow
	order    int // index in flowOrder
	rate     report.SeriesID
	idealFCT int64
	// final is what the summary needs of the flow's queue pairs, kept
	// when the flow retires (nil: not retired, read them at the end).
	final *flowFinal
}

// flowFinal is what the summary reads of a flow's queue pairs.
type flowFinal struct {
	srcQP, dstQP        uint32
	rxBytes, lost, cnps int64
	retx, timeouts      int64
}

func finalOf(f *netsim.Flow) *flowFinal {
	q, rq := f.Sender, f.Receiver
	return &flowFinal{srcQP: q.QPN, dstQP: q.PeerQPN, rxBytes: rq.RxBytes(), lost: rq.LostPackets(), cnps: rq.CNPs(),
		retx: q.RetransmittedPackets(), timeouts: q.Timeouts()}
}

// OnRetire implements netsim.RetireObserver: the summary's figures of the
// flow outlive its queue pairs.
func (r *runner) OnRetire(f *netsim.Flow) {
	if int(f.ID) >= len(r.byFlow) {
		return
	}
	if fr := r.byFlow[f.ID]; fr != nil {
		fr.final = finalOf(f)
	}
}

type hostRun struct {
	h       *netsim.Host
	cnpTx   report.SeriesID
	cnpRx   report.SeriesID
	ctrlRx  report.SeriesID
	unknown report.SeriesID
}

type sentCounter struct {
	node, kind string
	n          int64
	id         report.SeriesID
}

// partCount is a count of a partition's node not yet merged.
type partCount struct {
	node, kind string
	n          int64
}

func (r *runner) count(node, kind string, n int64) {
	if r.sentIn != nil {
		i := 0
		if x := r.net.NodeByName(node); x != nil {
			i = r.net.Partition(x)
		}
		r.sentIn[i] = append(r.sentIn[i], partCount{node, kind, n})
		return
	}
	r.countNow(node, kind, n)
}

// mergeCounts adds the partitions' counts since the last merge, in
// partition order; the partitions are stopped (a global event, or the end
// of the run).
func (r *runner) mergeCounts() {
	for i, cs := range r.sentIn {
		for _, c := range cs {
			r.countNow(c.node, c.kind, c.n)
		}
		r.sentIn[i] = cs[:0]
	}
}

func (r *runner) countNow(node, kind string, n int64) {
	r.sent[kind] += n
	key := [2]string{node, kind}
	i, ok := r.sentSeries[key]
	if !ok {
		i = len(r.sentBy)
		r.sentSeries[key] = i
		r.sentBy = append(r.sentBy, sentCounter{node: node, kind: kind, id: r.rec.Counters.Series(node, "-", "sent_"+kind)})
	}
	r.sentBy[i].n += n
}
