package sim

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/internal/cputime"
	"github.com/lhcnp/lhcnp/internal/gcgoal"
)

// websearch70Second is scenarios/compare/websearch-70.yaml run for one
// simulated second with traffic throughout (the file stops starting flows
// at 150 ms of a 200 ms run): the web-search mix at 70% load on the §7
// topology, 16 hosts, Long-haul CNP on N1 and N2.
func websearch70Second(tb testing.TB) *scenario.Scenario {
	tb.Helper()
	path := filepath.Join("..", "..", "scenarios", "compare", "websearch-70.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	y := strings.Replace(string(b), "duration: 200ms", "duration: 1s", 1)
	y = strings.Replace(y, "stop: 150ms", "stop: 1s", 1)
	y = strings.Replace(y, "cdf_file: ../cdf/websearch.txt", "cdf_file: "+filepath.Join("..", "..", "scenarios", "cdf", "websearch.txt"), 1)
	sc, err := scenario.Parse(path, []byte(y))
	if err != nil {
		tb.Fatal(err)
	}
	if sc.Duration != time.Second {
		tb.Fatalf("duration %v, want 1s", sc.Duration)
	}
	return sc
}

// BenchmarkWebsearch70 is issue 12's performance figure: one simulated
// second of the web-search mix at 70% load on the §7 topology (every flow
// with its CM exchange, Long-haul CNP nodes, sampling every 200 µs, CSV
// written, no plots). It reports events per second, simulated seconds per
// wall second, events per CPU second, the flows started and the heap in use after the run
// (runtime.MemStats.HeapAlloc, before the run's output is dropped) and
// its peak (HeapSys, what the heap took from the OS). docs/engine.md has
// the figures. LHCNP_BENCH_DURATION (e.g. 200ms) runs the first part of
// the second only.
func BenchmarkWebsearch70(b *testing.B) {
	defer gcgoal.Start()() // the collector goal of `lhcnp sim` (GOGC in the environment wins)
	sc := websearch70Second(b)
	b.ReportAllocs()
	var events uint64
	var flows int
	var heap, sys uint64
	opts := []Option{WithoutPlots()}
	simSecs := 1.0
	if v := os.Getenv("LHCNP_BENCH_DURATION"); v != "" {
		// A shorter run (as BenchmarkTwoDCK8's): the traffic is the same
		// mix from the start, so events per CPU second compare.
		d, err := scenario.ParseDuration(v)
		if err != nil {
			b.Fatal(err)
		}
		opts = append(opts, WithDuration(d))
		simSecs = d.Seconds()
	}
	cpu0 := cputime.Process()
	for b.Loop() {
		sum, err := Run(context.Background(), sc, b.TempDir(), opts...)
		if err != nil {
			b.Fatal(err)
		}
		events += sum.Events
		flows = sum.Totals.Flows
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap, sys = max(heap, ms.HeapAlloc), max(sys, ms.HeapSys)
	}
	secs := b.Elapsed().Seconds()
	cpu := (cputime.Process() - cpu0).Seconds()
	b.ReportMetric(float64(events)/secs, "events/s")
	if cpu > 0 {
		// The process's CPU time, the GC and the CSV writing included: on
		// a shared machine the wall time counts the other processes too.
		b.ReportMetric(float64(events)/cpu, "events/cpu-s")
	}
	b.ReportMetric(float64(b.N)*simSecs/secs, "sim-s/s")
	b.ReportMetric(float64(flows), "flows")
	b.ReportMetric(float64(heap)/1e6, "heap-MB")
	b.ReportMetric(float64(sys)/1e6, "heap-sys-MB")
}
