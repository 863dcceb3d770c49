package dataplane_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/internal/cputime"
	"github.com/openconfig/gnmi/proto/gnmi"
)

// BenchmarkSetLatency measures one single-leaf gNMI Set end to end, over
// gRPC on loopback, while the engine runs paced to the wall clock with
// traffic: schema checks, ygot validation, the rules, translation, the
// node's ApplyConfig between two events, the commit and the state
// publication that follows it. The bar is p99 under 10 ms.
func BenchmarkSetLatency(b *testing.B) {
	r := newRig(b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.sw.Sim.RunRealtime(ctx, 0.01, engine.Never)
	}()
	defer func() { cancel(); <-done }()

	path := store.MustPath(q0 + "/config/v-growth")
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := &gnmi.SetRequest{Update: []*gnmi.Update{{Path: path,
			Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: uint64(1_000_000_000 + i)}}}}}
		start := time.Now()
		if _, err := r.c.Set(ctx, req); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1])/float64(time.Millisecond), "max-ms")
	if testing.Verbose() {
		fmt.Printf("set latency over %d: p50 %.2f ms, p99 %.2f ms\n", len(lat), pct(0.5), pct(0.99))
	}
}

// BenchmarkSnapshot is one state snapshot of the served switch as the
// publisher takes it (Binding.Snapshot: the node's state copied between two
// events and translated into the YANG state tree), on the IPv6 line after
// 8 ms of congestion, with Long-haul CNP and with Fast CNP (whose
// notifications are counted per queue, fast-cnp-sent).
func BenchmarkSnapshot(b *testing.B) {
	for _, tc := range []struct {
		desc   string
		config string
	}{
		{desc: "mode=long-haul-cnp", config: lineConfig},
		{desc: "mode=fast-cnp", config: `{"lhcnp:lhcnp": ` + fastConfig + `}`},
	} {
		b.Run(tc.desc, func(b *testing.B) {
			r := newRigFrom(b, "testdata/line6.yaml", tc.config)
			r.sw.Sim.Run(8 * engine.Millisecond)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			start, c0 := time.Now(), cputime.Process()
			for i := 0; i < b.N; i++ {
				if _, err := r.b.Snapshot(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "snapshots/s")
			// CPU time (all threads, the GC's too) apart from the wait for
			// a core on a shared machine.
			if cpu := cputime.Process() - c0; cpu > 0 {
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/snapshot")
			}
		})
	}
}

// BenchmarkInitialSync is what path order costs a Subscribe's initial data
// on the lab's switch model (scenarios/lab.yaml's n1 with
// examples/lab-n1.json, after 8 ms of traffic, its state published): the
// store walk of every leaf that gnmi/subscribe's fill does (walk, the old
// initial data, in map order) against the walk and the sort by
// store.SortByPath it does now (walk+sort), in the same run; and the sort
// Get did before it used SortByPath too (walk+compare: schema.ComparePaths
// as the comparator, which splits both keys at every comparison).
func BenchmarkInitialSync(b *testing.B) {
	cfg, err := os.ReadFile("../../examples/lab-n1.json")
	if err != nil {
		b.Fatal(err)
	}
	r := newRigFrom(b, "../../scenarios/lab.yaml", string(cfg))
	r.sw.Sim.Run(8 * engine.Millisecond)
	if err := r.pub.PublishNow(context.Background()); err != nil {
		b.Fatal(err)
	}
	pat, err := store.NewPattern(nil, &gnmi.Path{})
	if err != nil {
		b.Fatal(err)
	}
	type leaf struct {
		n *store.Node
		v *store.Value
	}
	for _, name := range []string{"walk", "walk+sort", "walk+compare"} {
		b.Run(name, func(b *testing.B) {
			var batch []leaf
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				batch = batch[:0]
				r.st.Walk(pat, func(n *store.Node, v *store.Value, _ store.Kind) { batch = append(batch, leaf{n, v}) })
				switch name {
				case "walk+sort":
					store.SortByPath(batch, func(l leaf) string { return l.n.Key() })
				case "walk+compare":
					slices.SortFunc(batch, func(a, b leaf) int { return schema.ComparePaths(a.n.Key(), b.n.Key()) })
				}
			}
			b.ReportMetric(float64(len(batch)), "leaves")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/leaf")
		})
	}
}
