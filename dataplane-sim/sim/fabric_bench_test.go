package sim

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/internal/cputime"
	"github.com/lhcnp/lhcnp/internal/gcgoal"
)

// BenchmarkTwoDCK8 is issue 25's scale scenario, scenarios/fabric/
// two-dc-k8.yaml: two k=8 fat-trees (128 hosts each, 100 Gb/s) joined by
// a 10 ms WAN, web search at 50 % of the WAN plus intra-DC web search at
// 30 %, ECMP, Long-haul CNP on the border routers, sampled every 100 µs,
// CSV written, no plots. Each fabric is a partition of its own, cut at
// the WAN (lookahead 10 ms); the sub-benchmarks run it on 1 and 2 threads
// in the same benchmark run, and the second fails unless its output files
// are byte-identical to the first's. LHCNP_BENCH_DURATION (a scenario
// duration, e.g. 100ms: the figure) overrides the file's simulated
// time; the default is 2ms, so that `go test -bench .` stays short. It
// reports events per wall second and per CPU second (the process's,
// garbage collection included: on a shared machine the wall time counts
// the other processes too), CPU and wall seconds per run, simulated
// seconds per wall second, the flows, the heap after the run and the
// process's peak resident set (VmHWM: the process's, so a later
// sub-benchmark's includes the earlier ones'; run one alone with
// -bench 'TwoDCK8/threads=2' for its own).
func BenchmarkTwoDCK8(b *testing.B) {
	defer gcgoal.Start()() // the collector goal of `lhcnp sim` (GOGC in the environment wins)
	sc, err := scenario.LoadFile(filepath.Join("..", "..", "scenarios", "fabric", "two-dc-k8.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	if n := len(sc.Partitions()); n != 2 {
		b.Fatalf("two-dc-k8 has %d partitions, want 2", n)
	}
	d := 2 * time.Millisecond
	if s := os.Getenv("LHCNP_BENCH_DURATION"); s != "" {
		if d, err = scenario.ParseDuration(s); err != nil {
			b.Fatal(err)
		}
	}
	// LHCNP_BENCH_CLOCK=events profiles the one-thread run with a clock
	// that counts events instead of CPU time: its bound (bound-speedup-2-events)
	// is the partitions' per-window imbalance in events, the same in every
	// run and on every machine (the serial work, which processes no event,
	// counts nothing).
	eventClock := os.Getenv("LHCNP_BENCH_CLOCK") == "events"
	var first map[string][]byte // the outputs of the first sub-benchmark's last run
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			b.ReportAllocs()
			gc0 := gcCPU()
			cpu0 := cputime.Process()
			var events uint64
			var flows int
			var heap uint64
			var dir string
			var prof *engine.Profile
			for b.Loop() {
				dir = b.TempDir()
				opts := []Option{WithoutPlots(), WithDuration(d), WithThreads(threads), func(o *options) {
					o.group = func(g *engine.Group) {
						if eventClock && threads == 1 {
							// One goroutine: the events it processed.
							prof = g.Profile(func() time.Duration { return time.Duration(g.Events()) })
							return
						}
						prof = g.Profile(cputime.Thread)
					}
				}}
				sum, err := Run(context.Background(), sc, dir, opts...)
				if err != nil {
					b.Fatal(err)
				}
				events += sum.Events
				flows = sum.Totals.Flows
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				heap = max(heap, ms.HeapAlloc)
			}
			secs := b.Elapsed().Seconds()
			cpu := (cputime.Process() - cpu0).Seconds()
			b.ReportMetric(float64(events)/secs, "events/s")
			if cpu > 0 {
				b.ReportMetric(float64(events)/cpu, "events/cpu-s")
				b.ReportMetric(cpu/float64(b.N), "cpu-s/op")
			}
			b.ReportMetric(secs/float64(b.N), "wall-s/op")
			b.ReportMetric((gcCPU()-gc0)/float64(b.N), "gc-cpu-s/op")
			b.ReportMetric(float64(b.N)*d.Seconds()/secs, "sim-s/s")
			b.ReportMetric(float64(flows), "flows")
			b.ReportMetric(float64(heap)/1e6, "heap-MB")
			b.ReportMetric(float64(cputime.PeakRSS())/1e6, "peak-rss-MB")
			if prof != nil {
				// The run's split (engine.Profile). On one thread: the
				// bound on two threads' speedup that the partitions'
				// imbalance and the serial work between windows leave,
				// whatever the machine's load. On two, the partitions'
				// CPU against one thread's says what running side by
				// side costs each event (caches, memory, the host), and
				// the driver's serial CPU includes its spinning at the
				// barrier.
				switch {
				case threads == 1 && eventClock:
					b.ReportMetric(prof.Speedup(2), "bound-speedup-2-events")
					b.ReportMetric(float64(prof.Windows), "windows")
					for i, busy := range prof.Busy {
						b.ReportMetric(float64(busy), fmt.Sprintf("part%d-events", i))
					}
				default:
					if threads == 1 {
						b.ReportMetric(prof.Speedup(2), "bound-speedup-2")
					}
					b.ReportMetric(prof.Serial.Seconds(), "serial-cpu-s")
					b.ReportMetric(float64(prof.Windows), "windows")
					for i, busy := range prof.Busy {
						b.ReportMetric(busy.Seconds(), fmt.Sprintf("part%d-cpu-s", i))
					}
				}
			}
			out := readDir(b, dir)
			if first == nil {
				first = out
			} else if err := sameDirs(first, out); err != nil {
				b.Errorf("threads=%d against threads=1: %v", threads, err)
			}
		})
	}
}

// gcCPU returns the CPU seconds the garbage collector has used (the
// runtime's estimate: its workers, assists and pauses).
func gcCPU() float64 {
	m := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(m)
	if m[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return m[0].Value.Float64()
}

// readDir returns the files of dir by name.
func readDir(tb testing.TB, dir string) map[string][]byte {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}

// BenchmarkRunnerFlowMemory measures what the runner keeps per flow:
// scenarios/fabric/two-dc-k4.yaml (its 60 ms, flows over the first 30)
// with finished flows retired (the default) and kept, on one thread. At
// the end of the run, before Run returns, a collection is forced and the
// live heap read: heap-MB, and bytes/flow, that heap over the run's flows
// (an upper bound: the network, the series and the summary's records are
// in it too); kept-bytes/flow is what each retired flow would have held
// had it been kept (the difference of the two heaps over the flows
// retired), in the retire=true row.
func BenchmarkRunnerFlowMemory(b *testing.B) {
	sc, err := scenario.LoadFile(filepath.Join("..", "..", "scenarios", "fabric", "two-dc-k4.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	d := sc.Duration
	if s := os.Getenv("LHCNP_BENCH_DURATION"); s != "" {
		if d, err = scenario.ParseDuration(s); err != nil {
			b.Fatal(err)
		}
	}
	var keptHeap uint64
	for _, retire := range []bool{false, true} {
		b.Run(fmt.Sprintf("retire=%v", retire), func(b *testing.B) {
			var heap uint64
			var flows int
			var retired int64
			for b.Loop() {
				var r *runner
				opts := []Option{WithoutPlots(), WithoutSeries(), WithDuration(d), WithThreads(1), func(o *options) {
					o.keepFlows = !retire
					o.group = func(g *engine.Group) {
						g.AtGlobal(engine.FromDuration(d), func() {
							runtime.GC()
							var ms runtime.MemStats
							runtime.ReadMemStats(&ms)
							heap = ms.HeapAlloc
						})
					}
				}}
				sum, err := Run(context.Background(), sc, b.TempDir(), append(opts, func(o *options) { o.runner = &r })...)
				if err != nil {
					b.Fatal(err)
				}
				flows, retired = sum.Totals.Flows, r.net.RetiredFlows()
			}
			b.ReportMetric(float64(heap)/1e6, "heap-MB")
			b.ReportMetric(float64(flows), "flows")
			b.ReportMetric(float64(retired), "retired")
			if flows > 0 {
				b.ReportMetric(float64(heap)/float64(flows), "bytes/flow")
			}
			if !retire {
				keptHeap = heap
			} else if retired > 0 && keptHeap > heap {
				b.ReportMetric(float64(keptHeap-heap)/float64(retired), "kept-bytes/flow")
			}
		})
	}
}

// BenchmarkRunnerMillionFlows is issue 25's memory bar through the
// scenario runner, what `lhcnp sim run` does: scenarios/fabric/
// million-flows.yaml (a k=4 fat-tree, Google RPC and Alibaba storage
// sizes at 60 % of the hosts' links, about a million flows over 40 ms),
// loaded and run on one thread with finished flows retired, CSV and
// summary written, no plots. It reports the flows, the engine's events,
// the CPU seconds of the load and of the run (the process's, GC
// included), the process's peak resident set (VmHWM: run it alone, with
// -benchtime 1x), the peak heap (HeapAlloc after the load, every
// simulated millisecond and after the run: garbage not yet collected
// included), the live heap after the run (a collection forced at the end,
// before Run returns) and both over the flows: rss-bytes/flow and
// bytes/flow. It takes minutes, so it runs only when -bench names it
// (`-bench RunnerMillionFlows`), not with `-bench .`; LHCNP_BENCH_DURATION
// (e.g. 4ms) runs the first part of the file only.
func BenchmarkRunnerMillionFlows(b *testing.B) {
	if f := flag.Lookup("test.bench"); f == nil || !strings.Contains(f.Value.String(), "MillionFlows") {
		b.Skip("minutes long: run with -bench RunnerMillionFlows")
	}
	path := filepath.Join("..", "..", "scenarios", "fabric", "million-flows.yaml")
	var d time.Duration
	if s := os.Getenv("LHCNP_BENCH_DURATION"); s != "" {
		var err error
		if d, err = scenario.ParseDuration(s); err != nil {
			b.Fatal(err)
		}
	}
	var flows int
	var events uint64
	var peakHeap, endHeap uint64
	var loadCPU, runCPU time.Duration
	heapNow := func() uint64 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for b.Loop() {
		c0 := cputime.Process()
		sc, err := scenario.LoadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		c1 := cputime.Process()
		loadCPU += c1 - c0
		peakHeap = max(peakHeap, heapNow())
		if d == 0 {
			d = sc.Duration
		}
		opts := []Option{WithoutPlots(), WithDuration(d), WithThreads(1), func(o *options) {
			o.group = func(g *engine.Group) {
				g.EveryGlobal(0, engine.Millisecond, func(engine.Time) { peakHeap = max(peakHeap, heapNow()) })
				g.AtGlobal(engine.FromDuration(d), func() {
					peakHeap = max(peakHeap, heapNow())
					runtime.GC()
					endHeap = heapNow()
				})
			}
		}}
		sum, err := Run(context.Background(), sc, b.TempDir(), opts...)
		if err != nil {
			b.Fatal(err)
		}
		runCPU += cputime.Process() - c1
		peakHeap = max(peakHeap, heapNow())
		flows, events = sum.Totals.Flows, sum.Events
	}
	n := float64(b.N)
	b.ReportMetric(float64(flows), "flows")
	b.ReportMetric(float64(events), "events")
	b.ReportMetric(loadCPU.Seconds()/n, "load-cpu-s/op")
	b.ReportMetric(runCPU.Seconds()/n, "run-cpu-s/op")
	if runCPU > 0 {
		b.ReportMetric(float64(events)*n/runCPU.Seconds(), "events/cpu-s")
	}
	rss := float64(cputime.PeakRSS())
	b.ReportMetric(rss/1e6, "peak-rss-MB")
	b.ReportMetric(float64(peakHeap)/1e6, "peak-heap-MB")
	b.ReportMetric(float64(endHeap)/1e6, "end-heap-MB")
	if flows > 0 {
		b.ReportMetric(rss/float64(flows), "rss-bytes/flow")
		b.ReportMetric(float64(endHeap)/float64(flows), "bytes/flow")
	}
}
