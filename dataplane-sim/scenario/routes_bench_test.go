package scenario

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// fatTreeFlows is a scenario of one k-ary fat-tree (ECMP as for every
// generated fabric, unless topology, more lines of the topology block,
// says otherwise) and n flows between hosts drawn with a fixed seed, so
// that nearly every flow has a destination of its own: the loader's route
// tables are what grows with n.
func fatTreeFlows(k, n int, topology string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "duration: 1ms\nsample_interval: 1ms\ntopology:\n%s  fabrics:\n    - {name: f, kind: fat-tree, k: %d, rate: 100G, delay: 1us}\ntraffic:\n  flows:\n", topology, k)
	r := rand.New(rand.NewPCG(1, uint64(k)))
	host := func() string {
		return fmt.Sprintf("f-h%d-%d-%d", r.IntN(k), r.IntN(k/2), r.IntN(k/2))
	}
	for i := range n {
		src, dst := host(), host()
		for dst == src {
			dst = host()
		}
		fmt.Fprintf(&b, "    - {name: f%d, src: %s, dst: %s, size: 1MB, start: 0s}\n", i, src, dst)
	}
	return []byte(b.String())
}

// BenchmarkLoadFatTree measures loading a k-ary fat-tree scenario with n
// flows: the time (ns/op) and what the loader allocates (B/op), most of it
// the route tables towards the flows' destinations (docs/scaling.md, "The
// simulator: route tables of a large fabric"). k = 48 alone:
// -bench 'LoadFatTree/k=48/'.
func BenchmarkLoadFatTree(b *testing.B) {
	for _, k := range []int{16, 32, 48} {
		for _, n := range []int{64, 512} {
			data := fatTreeFlows(k, n, "")
			b.Run(fmt.Sprintf("k=%d/flows=%d", k, n), func(b *testing.B) {
				b.ReportAllocs()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for b.Loop() {
					sc, err := Parse("f.yaml", data)
					if err != nil {
						b.Fatal(err)
					}
					if len(sc.Flows) != n {
						b.Fatalf("%d flows, want %d", len(sc.Flows), n)
					}
				}
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/load")
				b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/1e6/float64(b.N), "MB-allocated/load")
			})
		}
	}
}
