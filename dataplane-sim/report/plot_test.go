package report

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// lineSummary is what a reader sees of a line: its legend, kind and range.
type lineSummary struct {
	Legend, Threshold, Of string
	MinY, MaxY, LastX     float64
}

func summarize(m Model) []lineSummary {
	var out []lineSummary
	for _, l := range m.Lines {
		s := lineSummary{Legend: l.Legend(), Threshold: l.Threshold, Of: l.Of, MinY: l.XY[0].Y, MaxY: l.XY[0].Y, LastX: l.XY[len(l.XY)-1].X}
		for _, p := range l.XY {
			s.MinY, s.MaxY = min(s.MinY, p.Y), max(s.MaxY, p.Y)
		}
		out = append(out, s)
	}
	return out
}

func TestBuildPlot(t *testing.T) {
	// Three ports over 10 ms: n1→n2 rises to 2 MB, n2→n3 to 1 MB, and
	// n3→n4 follows n2→n3 within a byte; n1→n2 has K_min 0.5 MB and K_max
	// 1 MB, raised to 1.5 MB at 5 ms; n2→n3 has the same K_min.
	queues := NewFamily("queues", "queue_bytes", "node", "port")
	th := NewFamily("thresholds", "bytes", "node", "port", "threshold")
	a, b, c := queues.Series("n1", "n2"), queues.Series("n2", "n3"), queues.Series("n3", "n4")
	amin, amax := th.Series("n1", "n2", "K_min"), th.Series("n1", "n2", "K_max")
	bmin := th.Series("n2", "n3", "K_min")
	for i := int64(0); i <= 10; i++ {
		tNs := i * 1_000_000
		queues.Add(tNs, a, i*200_000)
		queues.Add(tNs, b, i*100_000)
		bump := int64(0)
		if i == 5 {
			bump = 1
		}
		queues.Add(tNs, c, i*100_000+bump)
	}
	th.Add(0, amin, 500_000)
	th.Add(0, amax, 1_000_000)
	th.Add(0, bmin, 500_000)
	th.Add(5_000_000, amax, 1_500_000)

	rates := NewFamily("rates", "rate_bps", "flow")
	f1, f2 := rates.Series("f1"), rates.Series("f2")
	for i := int64(0); i <= 10; i++ {
		rates.Add(i*1_000_000, f1, 90e9+i*1e8) // 90 to 91 Gb/s: the axis still starts at 0
		rates.Add(i*1_000_000, f2, 40e9)
	}

	tests := []struct {
		desc       string
		spec       PlotSpec
		want       []lineSummary
		wantYRange [2]float64
	}{
		{
			desc: "queues: ports named n1→n2, coinciding ports once, thresholds as steps to the end",
			spec: PlotSpec{Family: queues, Title: "q", YLabel: "queue (MB)", YScale: 1e-6, Label: PortLabel, Thresholds: th},
			want: []lineSummary{
				{Legend: "n1→n2", MinY: 0, MaxY: 2, LastX: 10},
				{Legend: "n2→n3, n3→n4", MinY: 0, MaxY: 1, LastX: 10},
				{Legend: "K_max n1→n2", Threshold: "K_max", Of: "n1→n2", MinY: 1, MaxY: 1.5, LastX: 10},
				{Legend: "K_min (n1→n2, n2→n3)", Threshold: "K_min", Of: "n1→n2", MinY: 0.5, MaxY: 0.5, LastX: 10},
			},
			wantYRange: [2]float64{0, 2.5},
		},
		{
			desc:       "rates: the axis starts at 0",
			spec:       PlotSpec{Family: rates, Title: "r", YLabel: "rate (Gb/s)", YScale: 1e-9, ByMean: true},
			want:       []lineSummary{{Legend: "f1", MinY: 90, MaxY: 91, LastX: 10}, {Legend: "f2", MinY: 40, MaxY: 40, LastX: 10}},
			wantYRange: [2]float64{0, 100},
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			m := BuildPlot(tt.spec)
			if diff := cmp.Diff(tt.want, summarize(m)); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			if got := [2]float64{m.YMin, m.YMax}; got != tt.wantYRange {
				t.Errorf("y range %v, want %v", got, tt.wantYRange)
			}
			for _, l := range m.Lines {
				if l.Color == (palette[0]) && l.Legend() != m.Lines[0].Legend() && l.Of != m.Lines[0].Legend() {
					t.Errorf("line %q has the first series' colour", l.Legend())
				}
			}
		})
	}
}

func TestWrap(t *testing.T) {
	tests := []struct {
		desc string
		in   string
		n    int
		want []string
	}{
		{desc: "short stays", in: "a, b", n: 10, want: []string{"a, b"}},
		{desc: "cut after commas", in: "alpha, beta, gamma", n: 13, want: []string{"alpha, beta,", "gamma"}},
		{desc: "a long name stays whole", in: "long-haul-cnp:best-static", n: 5, want: []string{"long-haul-cnp:best-static"}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, wrap(tt.in, tt.n)); diff != "" {
				t.Errorf("wrap (-want +got):\n%s", diff)
			}
		})
	}
}
