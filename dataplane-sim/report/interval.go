package report

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// IntervalSpec is a plot of ranges by category: for every group on the x
// axis (a flow-size class) one vertical bar per series (a mechanism) from
// Low to High (p50 to p99), with a marker at each end.
type IntervalSpec struct {
	File   string
	Title  string
	YLabel string
	Groups []string
	Series []string
	// Low[s][g] and High[s][g] are series s in group g; a value that is
	// not positive (or NaN) leaves that interval out (a class with no
	// finished flow).
	Low, High [][]float64
	// LogY draws the y axis in log scale (slowdowns span 1 to hundreds).
	LogY bool
}

// extraColors extend the line palette for plots with more than eight
// series; the glyph shape changes too, so colours never have to carry the
// distinction alone.
var extraColors = []color.RGBA{
	{0xbc, 0xbd, 0x22, 0xff}, {0x17, 0xbe, 0xcf, 0xff}, {0x00, 0x00, 0x00, 0xff}, {0xff, 0xbb, 0x00, 0xff},
}

func seriesColor(i int) color.RGBA {
	if i < len(palette) {
		return palette[i]
	}
	return extraColors[(i-len(palette))%len(extraColors)]
}

var glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.PyramidGlyph{}, draw.BoxGlyph{}, draw.RingGlyph{}}

// WriteIntervalPlot renders sp to path (PNG).
func WriteIntervalPlot(path string, sp IntervalSpec) error {
	if len(sp.Low) != len(sp.Series) || len(sp.High) != len(sp.Series) {
		return fmt.Errorf("plot %s: %d series, %d low and %d high rows", sp.File, len(sp.Series), len(sp.Low), len(sp.High))
	}
	p := plot.New()
	p.Title.Text = sp.Title
	p.Y.Label.Text = sp.YLabel
	p.Add(plotter.NewGrid())
	// The legend sits in an empty column on the right, off the data.
	p.Legend.Top = true
	p.Legend.Left = false
	if sp.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = ticks125{}
	}
	p.NominalX(append(append([]string(nil), sp.Groups...), "")...)
	n := len(sp.Series)
	width := 0.8 // of a group's unit width
	ok := func(v float64) bool { return v > 0 && !math.IsNaN(v) && !math.IsInf(v, 0) }
	any := false
	for s, name := range sp.Series {
		if len(sp.Low[s]) != len(sp.Groups) || len(sp.High[s]) != len(sp.Groups) {
			return fmt.Errorf("plot %s: series %s has %d/%d values for %d groups", sp.File, name, len(sp.Low[s]), len(sp.High[s]), len(sp.Groups))
		}
		c := seriesColor(s)
		sty := draw.GlyphStyle{Color: c, Radius: vg.Points(3), Shape: glyphs[s%len(glyphs)]}
		var ends plotter.XYs
		for g := range sp.Groups {
			lo, hi := sp.Low[s][g], sp.High[s][g]
			if !ok(lo) || !ok(hi) {
				continue
			}
			x := float64(g) - width/2 + width*(float64(s)+0.5)/float64(n)
			bar, err := plotter.NewLine(plotter.XYs{{X: x, Y: lo}, {X: x, Y: hi}})
			if err != nil {
				return fmt.Errorf("plot %s: %w", sp.File, err)
			}
			bar.Color, bar.Width = c, vg.Points(2)
			p.Add(bar)
			ends = append(ends, plotter.XY{X: x, Y: lo}, plotter.XY{X: x, Y: hi})
		}
		if len(ends) == 0 {
			continue
		}
		any = true
		sc, err := plotter.NewScatter(ends)
		if err != nil {
			return fmt.Errorf("plot %s: %w", sp.File, err)
		}
		sc.GlyphStyle = sty
		p.Add(sc)
		p.Legend.Add(name, sc)
	}
	p.X.Min, p.X.Max = -0.5, float64(len(sp.Groups))+0.5 // the last column holds the legend
	if sp.LogY && any && p.Y.Min > 0 {
		// Down to the power of ten below the data, so that 1 (no slowdown)
		// is on the axis.
		p.Y.Min = math.Pow(10, math.Floor(math.Log10(p.Y.Min)))
	}
	if !any {
		p.Title.Text += " (nothing to plot)"
		p.Y.Scale = plot.LinearScale{}
		p.Y.Tick.Marker = plot.DefaultTicks{}
	}
	return p.Save(10*vg.Inch, 5*vg.Inch, path)
}

// ticks125 marks 1, 2, 5, 10, 20, 50, ... on a log axis, each labelled (a
// reader of slowdowns wants to read 2 and 5, not only powers of ten), and
// finer steps (1.5, 2, 3, 4, ... or 1.2, 1.5, 2, 2.5, ...) when the range
// is too narrow for four of those; 1 (no slowdown) is always marked when
// the axis reaches it.
type ticks125 struct{}

var tickSteps = [][]float64{
	{1, 2, 5},
	{1, 1.5, 2, 3, 4, 5, 7},
	{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8},
	{1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.8, 2, 2.2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9},
}

func (ticks125) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 {
		lo = 1e-3
	}
	var ts []plot.Tick
	for _, steps := range tickSteps {
		ts = ts[:0]
		for d := math.Pow(10, math.Floor(math.Log10(lo))); d <= hi; d *= 10 {
			for _, m := range steps {
				if v := d * m; v >= lo*(1-1e-9) && v <= hi*(1+1e-9) {
					ts = append(ts, plot.Tick{Value: v, Label: fmt.Sprintf("%.3g", v)})
				}
			}
		}
		if len(ts) >= 4 {
			break
		}
	}
	return ts
}
