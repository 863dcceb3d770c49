package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteIntervalPlot(t *testing.T) {
	groups := []string{"small", "medium", "large"}
	tests := []struct {
		desc    string
		series  []string
		low     [][]float64
		high    [][]float64
		wantErr string
	}{
		{desc: "eleven series, one class empty", series: strings.Split("a b c d e f g h i j k", " "),
			low: rows(11, []float64{1, 1.2, 2}), high: rows(11, []float64{1.5, 3, 40})},
		{desc: "missing values are left out", series: []string{"a"},
			low: [][]float64{{1, 0, math.NaN()}}, high: [][]float64{{2, 0, math.NaN()}}},
		{desc: "nothing at all", series: []string{"a"}, low: [][]float64{{0, 0, 0}}, high: [][]float64{{0, 0, 0}}},
		{desc: "rows do not match the series", series: []string{"a", "b"}, low: [][]float64{{1, 1, 1}},
			high: [][]float64{{2, 2, 2}}, wantErr: "2 series, 1 low and 1 high rows"},
		{desc: "a row does not match the groups", series: []string{"a"}, low: [][]float64{{1, 1}},
			high: [][]float64{{2, 2}}, wantErr: "series a has 2/2 values for 3 groups"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "fct.png")
			err := WriteIntervalPlot(path, IntervalSpec{File: "fct.png", Title: "t", YLabel: "slowdown",
				Groups: groups, Series: tt.series, Low: tt.low, High: tt.high, LogY: true})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("WriteIntervalPlot: %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(b, []byte("\x89PNG")) || len(b) < 1000 {
				t.Errorf("%d bytes, not a PNG image", len(b))
			}
		})
	}
}

func rows(n int, v []float64) [][]float64 {
	out := make([][]float64, n)
	for i := range out {
		out[i] = make([]float64, len(v))
		for j := range v {
			out[i][j] = v[j] * (1 + float64(i)/10)
		}
	}
	out[n-1][2] = 0 // the last series has no finished large flow
	return out
}

func TestTicks125(t *testing.T) {
	tests := []struct {
		desc   string
		lo, hi float64
		want   string
	}{
		{desc: "two decades and more", lo: 0.9, hi: 250, want: "1 2 5 10 20 50 100 200"},
		{desc: "one to four", lo: 1, hi: 4.3, want: "1 1.5 2 3 4"},
		{desc: "one to a little over two", lo: 1, hi: 2.4, want: "1 1.2 1.5 2"},
		{desc: "one to seven", lo: 1, hi: 7.5, want: "1 1.5 2 3 4 5 7"},
		{desc: "one to two and a half", lo: 0.98, hi: 2.6, want: "1 1.2 1.5 2 2.5"},
		{desc: "a narrow range", lo: 1.0, hi: 1.35, want: "1 1.1 1.2 1.3"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			var labels []string
			for _, tk := range (ticks125{}).Ticks(tt.lo, tt.hi) {
				labels = append(labels, tk.Label)
			}
			if got := strings.Join(labels, " "); got != tt.want {
				t.Errorf("ticks %q, want %q", got, tt.want)
			}
		})
	}
}
