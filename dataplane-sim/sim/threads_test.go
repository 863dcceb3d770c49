package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/install"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/internal/cputime"
	"github.com/lhcnp/lhcnp/internal/gcgoal"
)

// runDir runs sc at threads into a fresh directory and returns its files.
func runDir(t *testing.T, sc *scenario.Scenario, threads int, opts ...Option) map[string][]byte {
	t.Helper()
	dir := t.TempDir()
	if _, err := Run(context.Background(), sc, dir, append(opts, WithThreads(threads))...); err != nil {
		t.Fatalf("%s at %d threads: %v", sc.Name, threads, err)
	}
	return readDir(t, dir)
}

// withGlobalSamples keeps a cut run's samplers global events, as they
// were before they ran inside the partitions.
func withGlobalSamples() Option { return func(o *options) { o.globalSamples = true } }

// withGroup stores the run's group in *g.
func withGroup(g **engine.Group) Option {
	return func(o *options) { o.group = func(x *engine.Group) { *g = x } }
}

// sameWithGlobalSamples checks that sc's outputs (want, with the samplers
// inside the partitions) are those of its samplers as global events, and
// that the samplers inside the partitions end fewer windows.
func sameWithGlobalSamples(t *testing.T, name string, sc *scenario.Scenario, want map[string][]byte, opts ...Option) {
	t.Helper()
	var split, global *engine.Group
	if err := sameDirs(want, runDir(t, sc, 2, append(opts, withGroup(&split))...)); err != nil {
		t.Fatalf("%s: threads=2: %v", name, err)
	}
	if err := sameDirs(want, runDir(t, sc, 2, append(opts, withGroup(&global), withGlobalSamples())...)); err != nil {
		t.Errorf("%s: samplers inside the partitions against global samplers: %v", name, err)
	}
	// Windows cut anywhere else (a global event that does nothing, every
	// 37 µs) change nothing either: no model reads another partition's
	// clock or state at a window's edge.
	extra := func(o *options) {
		o.group = func(g *engine.Group) { g.EveryGlobal(0, 37*engine.Microsecond, func(engine.Time) {}) }
	}
	if err := sameDirs(want, runDir(t, sc, 1, append(opts, extra)...)); err != nil {
		t.Errorf("%s: with windows cut every 37 µs: %v", name, err)
	}
	if split.Len() > 1 && sc.Tuner == nil && split.Windows() >= global.Windows() {
		t.Errorf("%s: %d windows with the samplers inside the partitions, %d with global samplers", name, split.Windows(), global.Windows())
	}
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
// the two-DC generated fabric (a partition per fabric) and every shipped
// scenario (at a short duration) write byte-identical output directories,
// plots included for the two-DC one, at 1, 2 and 4 threads.
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
	sameWithGlobalSamples(t, "two-dc", sc, want)

	// fabric/two-dc-k4.yaml: two generated fabrics, a partition each by
	// default, cut at the WAN.
	files := []string{filepath.Join("..", "..", "scenarios", "fabric", "two-dc-k4.yaml")}
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
		if len(sc.Fabrics) > 1 && len(sc.Partitions()) != len(sc.Fabrics) {
			t.Errorf("%s: %d partitions for %d fabrics", f, len(sc.Partitions()), len(sc.Fabrics))
		}
		d := min(sc.Duration, time.Millisecond)
		want := runDir(t, sc, 1, WithDuration(d), WithoutPlots())
		for _, th := range []int{2, 4} {
			if err := sameDirs(want, runDir(t, sc, th, WithDuration(d), WithoutPlots())); err != nil {
				t.Errorf("%s: threads=%d against threads=1: %v", f, th, err)
			}
		}
		if len(sc.Partitions()) > 1 {
			sameWithGlobalSamples(t, f, sc, want, WithDuration(d), WithoutPlots())
		}
	}
}

// TestThreadsEveryMechanism: every mechanism kind runs on a scenario cut
// into partitions (compare/mid-wan.yaml cut into DC-A, the WAN node M1
// and DC-B: the nodes of every kind sit in three partitions and notify
// senders across the cuts, FCN's transit nodes report to the ingress PE
// across one) and writes byte-identical output directories at 1, 2 and 4
// threads, with notifications sent.
func TestThreadsEveryMechanism(t *testing.T) {
	path := filepath.Join("..", "..", "scenarios", "compare", "mid-wan.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for sw, part := range map[string]string{"n1": "dc-a", "m1": "wan", "n2": "dc-b"} {
		old := "{name: " + sw + ", ip:"
		if !strings.Contains(text, old) {
			t.Fatalf("mid-wan.yaml has no %q", old)
		}
		text = strings.Replace(text, old, "{name: "+sw+", partition: "+part+", ip:", 1)
	}
	base, err := scenario.Parse(path, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(base.Partitions()); n != 3 {
		t.Fatalf("cut mid-wan has %d partitions, want 3", n)
	}
	kinds := []scenario.MechanismKind{scenario.MechanismLongHaulCNP, scenario.MechanismFastCNP,
		scenario.MechanismFCN, scenario.MechanismRateAdvice, scenario.MechanismSwitchCNP}
	if testing.Short() {
		kinds = kinds[:1]
	}
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			sc := *base
			if kind != scenario.MechanismLongHaulCNP {
				ns := sc.Mechanism.Nodes
				sc.Mechanism = scenario.Mechanism{Kind: kind, Nodes: ns, Params: scenario.DefaultParams(kind, ns)}
			}
			if !install.Cut(kind) {
				t.Fatalf("%s is not registered as running cut", kind)
			}
			opts := []Option{WithDuration(30 * time.Millisecond), WithoutPlots()}
			want := runDir(t, &sc, 1, opts...)
			var sum struct {
				Notifications map[string]int64 `json:"notifications"`
			}
			if err := json.Unmarshal(want[SummaryJSON], &sum); err != nil {
				t.Fatal(err)
			}
			sent := int64(0)
			for k, n := range sum.Notifications {
				if k != "cnp" {
					sent += n
				}
			}
			if sent == 0 {
				t.Errorf("%s sent no notifications of its own: %v", kind, sum.Notifications)
			}
			for _, th := range []int{2, 4} {
				if err := sameDirs(want, runDir(t, &sc, th, opts...)); err != nil {
					t.Errorf("%s: threads=%d against threads=1: %v", kind, th, err)
				}
			}
			sameWithGlobalSamples(t, string(kind), &sc, want, opts...)
		})
	}
}

// BenchmarkTwoDC runs scenarios/two-dc.yaml (two DCs cut at a 1 ms WAN,
// 10 ms simulated, series written, no plots) at 1 and 2 threads in the
// same benchmark run: events per wall second and per CPU second, the heap
// in use after a run. The outputs are the same at both
// (TestThreadsSameOutputs).
func BenchmarkTwoDC(b *testing.B) {
	defer gcgoal.Start()() // the collector goal of `lhcnp sim` (GOGC in the environment wins)
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

// TestThreadsFabricProperty: random small pairs of generated fabrics
// (fat-trees and leaf-spines of a few hosts, each its own partition by
// default), joined by a WAN of random delay (the lookahead), with random
// cross-DC and intra-DC traffic, under a random mechanism kind on the
// border routers (or on every switch of one fabric and the other's border
// router), write byte-identical output directories at 1, 2 and 4
// threads.
func TestThreadsFabricProperty(t *testing.T) {
	kinds := []scenario.MechanismKind{scenario.MechanismDCQCN, scenario.MechanismNone, scenario.MechanismLongHaulCNP,
		scenario.MechanismFastCNP, scenario.MechanismFCN, scenario.MechanismRateAdvice, scenario.MechanismSwitchCNP}
	cases := 8
	if testing.Short() {
		cases = 2
	}
	rng := rand.New(rand.NewPCG(25, 4))
	for i := range cases {
		fabric := func(name string) string {
			if rng.IntN(2) == 0 {
				return fmt.Sprintf("{name: %s, kind: fat-tree, k: %d, rate: 100Gbps, delay: %dus, ipv6: true, buffer: 2MB}",
					name, 2+2*rng.IntN(2), 1+rng.IntN(3))
			}
			return fmt.Sprintf("{name: %s, kind: leaf-spine, leaves: %d, spines: %d, hosts_per_leaf: %d, rate: 100Gbps, delay: %dus, ipv6: true, shared_buffer: {size: 8MB}}",
				name, 2+rng.IntN(2), 1+rng.IntN(2), 2+rng.IntN(2), 1+rng.IntN(3))
		}
		kind := kinds[rng.IntN(len(kinds))]
		nodes := "[a-br, b-br]"
		if kind != scenario.MechanismFCN && rng.IntN(2) == 0 {
			nodes = "[a-switches, b-br]"
		}
		mech := fmt.Sprintf("mechanism:\n  kind: %s\n  nodes: %s\n", kind, nodes)
		if kind == scenario.MechanismDCQCN || kind == scenario.MechanismNone {
			mech = fmt.Sprintf("mechanism:\n  kind: %s\n", kind)
		}
		text := fmt.Sprintf(`name: fabric-property-%d
seed: %d
duration: 3ms
sample_interval: 50us
topology:
  fabrics:
    - %s
    - %s
  wan:
    - {name: wan, a: a, b: b, rate: %dGbps, delay: %dus, buffer: 64MB}
queue:
  ecn: {enabled: true, k_min: 50KB, k_max: 200KB, p_max: 0.2}
%straffic:
  generated:
    - {name: x, senders: [a, b], receivers: [a, b], pattern: cross-dc, load_of: wan, load: 0.%d, cdf: [[1KB, 0], [100KB, 0.6], [2MB, 1]], stop: 2ms}
    - {name: y, senders: [a, b], receivers: [a, b], pattern: intra-dc, load: 0.%d, cdf: [[1KB, 0], [100KB, 0.6], [2MB, 1]], stop: 2ms}
`, i, 1+rng.IntN(1000), fabric("a"), fabric("b"), 10*(1+rng.IntN(10)), 50+rng.IntN(500), mech, 3+rng.IntN(6), 2+rng.IntN(5))
		sc, err := scenario.Parse(fmt.Sprintf("fabric-property-%d.yaml", i), []byte(text))
		if err != nil {
			t.Fatalf("case %d:\n%s\n%v", i, text, err)
		}
		if n := len(sc.Partitions()); n != 2 {
			t.Fatalf("case %d: %d partitions, want 2", i, n)
		}
		want := runDir(t, sc, 1, WithoutPlots())
		var sum struct {
			Events        uint64           `json:"events"`
			Notifications map[string]int64 `json:"notifications"`
		}
		if err := json.Unmarshal(want[SummaryJSON], &sum); err != nil {
			t.Fatal(err)
		}
		t.Logf("case %d: %s on %s, %d flows, %d events, notifications %v", i, kind, nodes, len(sc.Flows), sum.Events, sum.Notifications)
		for _, th := range []int{2, 4} {
			if err := sameDirs(want, runDir(t, sc, th, WithoutPlots())); err != nil {
				t.Errorf("case %d (%s):\n%s\nthreads=%d against threads=1: %v", i, kind, text, th, err)
			}
		}
		sameWithGlobalSamples(t, fmt.Sprintf("case %d (%s)", i, kind), sc, want, WithoutPlots())
	}
}

// TestThreadsProgress: a run of several partitions reports its progress
// and sees its context at the barriers it has anyway: slice boundaries in
// time order up to the end, no window cut for them (as many windows with
// progress as without), and a cancelled run stops.
func TestThreadsProgress(t *testing.T) {
	sc := load(t, "two-dc.yaml")
	d := sc.Duration // 10 ms: the WAN's lookahead (1 ms) leaves about ten windows
	windows := func(opts ...Option) uint64 {
		var g *engine.Group
		opts = append(opts, WithDuration(d), WithoutPlots(), WithThreads(2), func(o *options) { o.group = func(x *engine.Group) { g = x } })
		if _, err := Run(context.Background(), sc, t.TempDir(), opts...); err != nil {
			t.Fatal(err)
		}
		return g.Windows()
	}
	var got []Progress
	with := windows(WithProgress(func(p Progress) { got = append(got, p) }))
	// 200 slices of 50 µs would cut the run into 200 windows; the WAN's
	// lookahead leaves about ten (the samplers, inside the partitions,
	// end none).
	if without := windows(); with != without || with >= progressSlices/10 {
		t.Errorf("%d windows with progress, %d without", with, without)
	}
	if len(got) < 5 || len(got) > progressSlices+1 {
		t.Fatalf("%d progress reports", len(got))
	}
	for i, p := range got {
		if p.Total != d || (i > 0 && (p.Now <= got[i-1].Now || p.Events < got[i-1].Events)) {
			t.Errorf("report %d: %+v after %+v", i, p, got[max(i-1, 0)])
		}
	}
	if last := got[len(got)-1]; last.Now != d {
		t.Errorf("last report at %v, want %v", last.Now, d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	_, err := Run(ctx, sc, t.TempDir(), WithDuration(d), WithoutPlots(), WithThreads(2), WithProgress(func(Progress) {
		if calls++; calls == 3 {
			cancel()
		}
	}))
	if !errors.Is(err, context.Canceled) || calls != 3 {
		t.Errorf("Run after cancel = %v after %d reports, want context.Canceled after 3", err, calls)
	}
}
