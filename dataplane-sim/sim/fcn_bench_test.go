package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/internal/cputime"
)

// fcnScenario is scenarios/compare/<name>.yaml with FCN as the mechanism
// on the same nodes (the first the ingress PE), run for duration.
func fcnScenario(tb testing.TB, name, duration string) *scenario.Scenario {
	tb.Helper()
	path := filepath.Join("..", "..", "scenarios", "compare", name+".yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	y := string(b)
	i := strings.Index(y, "\nmechanism:")
	j := strings.Index(y, "\ntraffic:")
	if i < 0 || j < i {
		tb.Fatalf("%s: no mechanism block before traffic", path)
	}
	nodes := ""
	for _, l := range strings.Split(y[i:j], "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "nodes:") {
			nodes = t
		}
	}
	y = y[:i] + "\nmechanism:\n  kind: fcn\n  " + nodes + "\n" + y[j:]
	y = regexp.MustCompile(`\nduration: \S+`).ReplaceAllString(y, "\nduration: "+duration)
	y = strings.Replace(y, "cdf_file: ../cdf/websearch.txt", "cdf_file: "+filepath.Join("..", "..", "scenarios", "cdf", "websearch.txt"), 1)
	sc, err := scenario.Parse(path, []byte(y))
	if err != nil {
		tb.Fatal(err)
	}
	return sc
}

// BenchmarkFCN runs comparison scenarios under FCN: mid-wan (congestion
// at M1 in the middle of the WAN, FCN's case, the whole 60 ms) and
// websearch-70 (hundreds of QPs through the PE, 50 ms): the cost of the
// ingress PE, the transit node and the tunnel. It reports events and
// simulated milliseconds per wall second.
func BenchmarkFCN(b *testing.B) {
	for _, bc := range []struct {
		name  string
		simMS int
	}{{"mid-wan", 60}, {"websearch-70", 50}} {
		b.Run(bc.name, func(b *testing.B) { benchFCN(b, bc.name, bc.simMS) })
	}
}

func benchFCN(b *testing.B, name string, simMS int) {
	sc := fcnScenario(b, name, fmt.Sprintf("%dms", simMS))
	b.ReportAllocs()
	var events uint64
	var cpu time.Duration
	for b.Loop() {
		c0 := cputime.Process()
		sum, err := Run(context.Background(), sc, b.TempDir(), WithoutPlots())
		cpu += cputime.Process() - c0
		if err != nil {
			b.Fatal(err)
		}
		if sum.MechanismCounters["fcn_mappings"] == 0 {
			b.Fatalf("no flow through the ingress pe: %v", sum.MechanismCounters)
		}
		events += sum.Events
	}
	secs := b.Elapsed().Seconds()
	b.ReportMetric(float64(events)/secs, "events/s")
	b.ReportMetric(float64(simMS*b.N)/secs, "sim-ms/s")
	// CPU time, apart from the wait for a core on a shared machine; per
	// event, apart from how many events the run's dynamics make.
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(events), "cpu-ns/event")
}
