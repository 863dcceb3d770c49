package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/internal/cputime"
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
	var first map[string][]byte // the outputs of the first sub-benchmark's last run
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cputime.Process()
			var events uint64
			var flows int
			var heap uint64
			var dir string
			var prof *engine.Profile
			for b.Loop() {
				dir = b.TempDir()
				opts := []Option{WithoutPlots(), WithDuration(d), WithThreads(threads)}
				if threads == 1 {
					opts = append(opts, func(o *options) {
						o.group = func(g *engine.Group) { prof = g.Profile(cputime.Thread) }
					})
				}
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
			b.ReportMetric(float64(b.N)*d.Seconds()/secs, "sim-s/s")
			b.ReportMetric(float64(flows), "flows")
			b.ReportMetric(float64(heap)/1e6, "heap-MB")
			b.ReportMetric(float64(cputime.PeakRSS())/1e6, "peak-rss-MB")
			if prof != nil {
				// The one-thread run's split (engine.Profile): the bound
				// on two threads' speedup that the partitions' imbalance
				// and the serial work between windows leave, whatever the
				// machine's load.
				b.ReportMetric(prof.Speedup(2), "bound-speedup-2")
				b.ReportMetric(prof.Serial.Seconds(), "serial-cpu-s")
				b.ReportMetric(float64(prof.Windows), "windows")
				for i, busy := range prof.Busy {
					b.ReportMetric(busy.Seconds(), fmt.Sprintf("part%d-cpu-s", i))
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
