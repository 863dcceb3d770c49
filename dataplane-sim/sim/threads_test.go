package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/internal/cputime"
)

// runDir runs sc at threads into a fresh directory and returns its files.
func runDir(t *testing.T, sc *scenario.Scenario, threads int, opts ...Option) map[string][]byte {
	t.Helper()
	dir := t.TempDir()
	if _, err := Run(context.Background(), sc, dir, append(opts, WithThreads(threads))...); err != nil {
		t.Fatalf("%s at %d threads: %v", sc.Name, threads, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}

// sameDirs reports the first file that differs between two runs' outputs.
func sameDirs(a, b map[string][]byte) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d files, %d files", len(a), len(b))
	}
	for name, x := range a {
		if !bytes.Equal(x, b[name]) {
			return fmt.Errorf("%s differs", name)
		}
	}
	return nil
}

// TestThreadsSameOutputs: the two-DC scenario, cut into two partitions,
// and every shipped scenario (at a short duration) write byte-identical
// output directories, plots included for the two-DC one, at 1, 2 and 4
// threads.
func TestThreadsSameOutputs(t *testing.T) {
	sc := load(t, "two-dc.yaml")
	if n := len(sc.Partitions()); n != 2 {
		t.Fatalf("two-dc has %d partitions, want 2", n)
	}
	want := runDir(t, sc, 1)
	for _, th := range []int{2, 4} {
		if err := sameDirs(want, runDir(t, sc, th)); err != nil {
			t.Errorf("two-dc: threads=%d against threads=1: %v", th, err)
		}
	}

	var files []string
	for _, dir := range []string{"", "compare", "tuner", "checks"} {
		fs, err := filepath.Glob(filepath.Join("..", "..", "scenarios", dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fs...)
	}
	if testing.Short() {
		files = files[:3]
	}
	for _, f := range files {
		sc, err := scenario.LoadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d := min(sc.Duration, time.Millisecond)
		want := runDir(t, sc, 1, WithDuration(d), WithoutPlots())
		for _, th := range []int{2, 4} {
			if err := sameDirs(want, runDir(t, sc, th, WithDuration(d), WithoutPlots())); err != nil {
				t.Errorf("%s: threads=%d against threads=1: %v", f, th, err)
			}
		}
	}
}

// TestPartitionedMechanismRefused: a mechanism whose models share state
// across partitions is refused on a cut scenario, not run wrong.
func TestPartitionedMechanismRefused(t *testing.T) {
	sc := load(t, "two-dc.yaml")
	sc.Mechanism.Kind = scenario.MechanismLongHaulCNP
	_, err := Run(context.Background(), sc, t.TempDir(), WithDuration(time.Millisecond), WithoutPlots())
	if !errors.Is(err, ErrNotPartitioned) {
		t.Errorf("long-haul-cnp on two-dc: %v, want ErrNotPartitioned", err)
	}
}

// BenchmarkTwoDC runs scenarios/two-dc.yaml (two DCs cut at a 1 ms WAN,
// 10 ms simulated, series written, no plots) at 1 and 2 threads in the
// same benchmark run: events per wall second and per CPU second, the heap
// in use after a run. The outputs are the same at both
// (TestThreadsSameOutputs).
func BenchmarkTwoDC(b *testing.B) {
	sc := load(b, "two-dc.yaml")
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			b.ReportAllocs()
			var events uint64
			var heap uint64
			var cpu time.Duration
			for b.Loop() {
				c0 := cputime.Process()
				sum, err := Run(context.Background(), sc, b.TempDir(), WithoutPlots(), WithThreads(threads))
				cpu += cputime.Process() - c0
				if err != nil {
					b.Fatal(err)
				}
				events += sum.Events
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				heap = max(heap, ms.HeapAlloc)
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
			if cpu > 0 {
				b.ReportMetric(float64(events)/cpu.Seconds(), "events/cpu-s")
			}
			b.ReportMetric(float64(heap)/1e6, "heap-MB")
		})
	}
}
