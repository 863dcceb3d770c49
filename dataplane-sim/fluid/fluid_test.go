package fluid

import (
	"math"
	"strings"
	"testing"
)

// The fixed point solves the equations: integrating them from line rate
// ends there when the loop is stable (small tau*), for a few N.
func TestFixedPointIsWhereTheModelSettles(t *testing.T) {
	for _, tt := range []struct {
		desc    string
		n       int
		renewal bool
	}{
		{desc: "2:1", n: 2},
		{desc: "8:1", n: 8},
		{desc: "4:1", n: 4},
		{desc: "2:1 NP renewal", n: 2, renewal: true},
		{desc: "8:1 NP renewal", n: 8, renewal: true},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			p := Paper(tt.n, 40e9, 10e-6)
			p.NPRenewal = tt.renewal
			fp, err := p.FixedPoint()
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fp.RateBitsPerSec, 40e9/float64(tt.n); got != want {
				t.Errorf("R_C = %g, want C/N = %g", got, want)
			}
			if fp.QueueBytes <= p.KMinBytes || fp.QueueBytes >= p.KMaxBytes {
				t.Errorf("queue %g outside (K_min, K_max)", fp.QueueBytes)
			}
			tr, err := p.Simulate(0.15, 0.25e-6, 10e-6)
			if err != nil {
				t.Fatal(err)
			}
			w := tr.Window(0.12, 0.15)
			for _, c := range []struct {
				name      string
				got, want float64
			}{
				{"queue", w.MeanQueueBytes, fp.QueueBytes},
				{"rate", w.MeanRateBitsPerSec, fp.RateBitsPerSec},
				{"alpha", w.MeanAlpha, fp.Alpha},
			} {
				if math.Abs(c.got/c.want-1) > 0.01 {
					t.Errorf("%s: trajectory %g, fixed point %g: more than 1%% apart", c.name, c.got, c.want)
				}
			}
			if w.Oscillates(0.05) {
				t.Errorf("oscillates at tau* = 10 µs: queue %g..%g", w.MinQueueBytes, w.MaxQueueBytes)
			}
		})
	}
}

// More senders need more marking: the fixed-point queue grows with N (at
// 16:1 with the paper's parameters p* passes P_max, and FixedPoint says so).
func TestQueueGrowsWithSenders(t *testing.T) {
	prev := 0.0
	for _, n := range []int{2, 4, 8} {
		fp, err := Paper(n, 40e9, 10e-6).FixedPoint()
		if err != nil {
			t.Fatal(err)
		}
		if fp.QueueBytes <= prev {
			t.Errorf("N=%d: queue %g not above N/2's %g", n, fp.QueueBytes, prev)
		}
		prev = fp.QueueBytes
	}
}

// A long control loop makes the 8:1 incast oscillate: the fixed point is
// unchanged, the trajectory no longer reaches it.
func TestLongFeedbackDelayOscillates(t *testing.T) {
	p := Paper(8, 40e9, 85e-6)
	tr, err := p.Simulate(0.15, 0.25e-6, 10e-6)
	if err != nil {
		t.Fatal(err)
	}
	if w := tr.Window(0.12, 0.15); !w.Oscillates(0.05) {
		t.Errorf("8:1 at tau* = 85 µs settles (queue %g..%g), want a limit cycle", w.MinQueueBytes, w.MaxQueueBytes)
	}
}

func TestInvalid(t *testing.T) {
	ok := Paper(2, 40e9, 10e-6)
	for _, tt := range []struct {
		desc    string
		edit    func(*Params)
		wantErr string
	}{
		{"no senders", func(p *Params) { p.Senders = 0 }, "senders 0"},
		{"kmax below kmin", func(p *Params) { p.KMaxBytes = 1e3 }, "kmin"},
		{"pmax zero", func(p *Params) { p.PMax = 0 }, "pmax"},
		{"no congestion", func(p *Params) { p.Senders = 1 }, "no congestion"},
		{"marking past pmax", func(p *Params) { p.Senders = 16 }, "above pmax"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			p := ok
			tt.edit(&p)
			_, err := p.FixedPoint()
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("FixedPoint: %v, want an error with %q", err, tt.wantErr)
			}
		})
	}
	if _, err := ok.Simulate(0.01, 0, 1e-5); err == nil {
		t.Error("Simulate with step 0: no error")
	}
}

func BenchmarkSimulate(b *testing.B) {
	p := Paper(8, 40e9, 10e-6)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Simulate(0.01, 0.25e-6, 10e-6); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(0.01/0.25e-6*float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}
