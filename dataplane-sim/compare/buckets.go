package compare

import (
	"slices"

	"github.com/lhcnp/lhcnp/dataplane-sim/report"
)

// Flow-size classes of the web-search comparison: small below 100 KB,
// large above 10 MB (KB and MB powers of 1000), medium between.
const (
	smallBytes = 100_000
	largeBytes = 10_000_000
)

// buckets returns the FCT slowdown p50, p95 and p99 (nearest rank) of the
// finished finite flows by size class, with how many started and
// finished; nil when the run has no finite flow.
func buckets(s *report.Summary) []Bucket { return bucketsOf(s.Flows) }

// bucketsOf is buckets over some of a run's flows (p95 too).
func bucketsOf(fs []report.FlowSummary) []Bucket {
	names := []string{"small < 100 KB", "medium", "large > 10 MB"}
	var slow [3][]float64
	var flows [3]int
	any := false
	for _, f := range fs {
		if f.SizeBytes <= 0 {
			continue
		}
		any = true
		i := 1
		switch {
		case f.SizeBytes < smallBytes:
			i = 0
		case f.SizeBytes > largeBytes:
			i = 2
		}
		flows[i]++
		if f.Finished && f.Slowdown != nil {
			slow[i] = append(slow[i], float64(*f.Slowdown))
		}
	}
	if !any {
		return nil
	}
	out := make([]Bucket, 3)
	for i := range out {
		slices.Sort(slow[i])
		out[i] = Bucket{Name: names[i], Flows: flows[i], Finished: len(slow[i]), P50: rank(slow[i], 0.5),
			P95: rank(slow[i], 0.95), P99: rank(slow[i], 0.99)}
	}
	return out
}

// rank is the nearest-rank percentile of sorted v (0 when empty).
func rank(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	i := int(p*float64(len(v))+0.999999) - 1
	return v[max(0, min(i, len(v)-1))]
}
