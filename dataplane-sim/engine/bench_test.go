package engine

import (
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/internal/cputime"
)

type selfTimer struct {
	s *Sim
	d Time
}

func (h *selfTimer) Handle(uint32, uint64) { h.s.After(h.d, h, 0, 0) }

// BenchmarkQueue measures the bare engine: 64 sources, each always holding
// one pending event, as links and ports do.
func BenchmarkQueue(b *testing.B) {
	s := New()
	for i := 0; i < 64; i++ {
		h := &selfTimer{s: s, d: Time(50 + i*7)}
		s.At(Time(i), h, 0, 0)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start, c0 := time.Now(), cputime.Process()
	for i := 0; i < b.N; i++ {
		s.Step()
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
	if cpu := cputime.Process() - c0; cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu.Seconds(), "events/cpu-s")
	}
}
