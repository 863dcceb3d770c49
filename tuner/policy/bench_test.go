package policy

import (
	"testing"
	"time"
)

// BenchmarkDecide: one decision on a window of 100 samples (ten seconds
// at the collector's 100 ms), the work per queue and period of the
// service. decisions/s says how many queues one core serves per second.
func BenchmarkDecide(b *testing.B) {
	cfg := DefaultConfig()
	w := window(queue{util: 0.99, delayRTT: 0.8, notifies: 10, emr: 5}, bdp(1, vg))
	s0 := w.Samples[0]
	w.Samples = w.Samples[:0]
	for i := range 100 {
		s := s0
		s.Time = t0.Add(time.Duration(i) * 100 * time.Millisecond)
		s.QueueDepthBytes = int64(i) * bdpBytes / 100
		w.Samples = append(w.Samples, s)
	}
	w.End = w.Samples[99].Time
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Decide(cfg, w, Memory{})
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}
