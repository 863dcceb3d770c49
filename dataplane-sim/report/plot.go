package report

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// maxLines is how many series a plot shows: the largest ones. A plot of a
// thousand web-search flows is a smear; the CSV has them all.
const maxLines = 8

// maxPoints bounds the points per line; longer series are reduced to the
// maximum of each bucket, which keeps the peaks that matter in a queue plot.
const maxPoints = 2000

// coincideFraction is how close two lines must stay, everywhere, as a
// fraction of the y axis's span, to be drawn once under both names: at
// this size they are one line on the page.
const coincideFraction = 0.005

// palette is fixed so that colours do not depend on anything but the order.
var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff},
}

// thresholdDashes tell K_max (long dashes) from K_min (dots); a
// threshold line has the colour of its series.
var thresholdDashes = map[string][]vg.Length{
	"K_max": {vg.Points(6), vg.Points(3)},
	"K_min": {vg.Points(1.5), vg.Points(2)},
}

// PlotSpec describes one PNG: a family, how to scale its values and how to
// rank series.
type PlotSpec struct {
	Family *Family
	File   string // e.g. "queues.png"
	Title  string
	YLabel string
	YScale float64 // value multiplier (e.g. 1e-6 for MB)
	// Rank orders series by peak (queues) or by mean (rates).
	ByMean bool
	// Label names a series from its labels (default: joined by spaces);
	// PortLabel names a port "n1→n2".
	Label func([]string) string
	// Thresholds, when set, holds horizontal step lines drawn with the
	// series they belong to: its labels are a plotted series' labels
	// followed by the threshold's name (K_min, K_max), its values in the
	// family's unit. A threshold is drawn from its first sample to the end
	// of the plot.
	Thresholds *Family
}

// PortLabel names a port by its node and the node at the other end of its
// link, "n1→n2".
func PortLabel(ls []string) string { return strings.Join(ls, "→") }

// Model is a plot before rendering: what WritePlot draws, for tests to
// check without reading pixels.
type Model struct {
	Title, XLabel, YLabel string
	// YMin and YMax are the y axis's range: from 0 to a round number a
	// little above the highest line, so that nothing touches the top.
	YMin, YMax float64
	Lines      []Line
}

// Line is one drawn line and the names the legend gives it: several when
// series coincide and are drawn once.
type Line struct {
	Names []string
	XY    plotter.XYs
	Color color.RGBA
	// Threshold is the threshold's name (K_min, K_max) for a threshold's
	// step line, "" for a series; Of names the series it belongs to (its
	// colour).
	Threshold, Of string
}

// Legend is the line's legend entry.
func (l Line) Legend() string { return strings.Join(l.Names, ", ") }

// WritePlots writes queues.png (with the ports' K_min and K_max) and
// rates.png into dir.
func (r *Recorder) WritePlots(dir, title string) error {
	specs := []PlotSpec{
		{Family: r.Queues, File: "queues.png", Title: title + ": egress queues (largest " + fmt.Sprint(maxLines) + ")", YLabel: "queue (MB)", YScale: 1e-6,
			Label: PortLabel, Thresholds: r.Thresholds},
		{Family: r.Rates, File: "rates.png", Title: title + ": sending rates (largest " + fmt.Sprint(maxLines) + ")", YLabel: "rate (Gb/s)", YScale: 1e-9, ByMean: true},
	}
	for _, sp := range specs {
		if err := WritePlot(filepath.Join(dir, sp.File), sp); err != nil {
			return err
		}
	}
	return nil
}

// BuildPlot turns sp into the lines to draw: the largest series (at most
// maxLines), those that coincide merged under all their names, then their
// thresholds (equal ones once), on a y axis from 0.
func BuildPlot(sp PlotSpec) Model {
	m := Model{Title: sp.Title, XLabel: "time (ms)", YLabel: sp.YLabel}
	label := sp.Label
	if label == nil {
		label = func(ls []string) string { return strings.Join(ls, " ") }
	}

	ts, vs := sp.Family.bySeries()
	type ranked struct {
		id    int
		score float64
	}
	var order []ranked
	for i, v := range vs {
		if len(v) == 0 {
			continue
		}
		score := float64(maxOf(v))
		if sp.ByMean {
			score = mean(v)
		}
		if score <= 0 {
			continue
		}
		order = append(order, ranked{i, score})
	}
	slices.SortStableFunc(order, func(a, b ranked) int { return cmp.Compare(b.score, a.score) })
	if len(order) > maxLines {
		order = order[:maxLines]
	}
	var lastX float64
	var plotted [][]string
	for _, o := range order {
		xy := reduce(ts[o.id], vs[o.id], sp.YScale)
		m.Lines = append(m.Lines, Line{Names: []string{label(sp.Family.labels[o.id])}, XY: xy})
		lastX = max(lastX, xy[len(xy)-1].X)
		plotted = append(plotted, sp.Family.labels[o.id])
	}
	m.Lines = append(m.Lines, thresholdLines(sp, plotted, label, lastX)...)

	for _, l := range m.Lines {
		for _, p := range l.XY {
			m.YMax = max(m.YMax, p.Y)
		}
	}
	if m.YMax <= 0 {
		m.YMax = 1
	}
	m.YMax *= 1.08
	m.YMax = niceCeil(m.YMax)
	m.Lines = mergeCoinciding(m.Lines, coincideFraction*(m.YMax-m.YMin))
	colors := map[string]color.RGBA{}
	n := 0
	for i, l := range m.Lines {
		if l.Threshold != "" {
			continue
		}
		m.Lines[i].Color = palette[n%len(palette)]
		for _, name := range l.Names {
			colors[name] = m.Lines[i].Color
		}
		n++
	}
	for i, l := range m.Lines {
		if l.Threshold != "" {
			m.Lines[i].Color = colors[l.Of]
		}
	}
	if n == 0 {
		m.Title += " (nothing to plot)"
	}
	return m
}

// thresholdLines returns the step lines of the thresholds of the plotted
// series (labels), named "K_max n1→n2", each held to lastX.
func thresholdLines(sp PlotSpec, plotted [][]string, label func([]string) string, lastX float64) []Line {
	if sp.Thresholds == nil {
		return nil
	}
	ts, vs := sp.Thresholds.bySeries()
	var out []Line
	for _, kind := range []string{"K_max", "K_min"} {
		for _, ls := range plotted {
			for id, tl := range sp.Thresholds.labels {
				if len(tl) != len(ls)+1 || tl[len(ls)] != kind || !slices.Equal(tl[:len(ls)], ls) || len(ts[id]) == 0 {
					continue
				}
				xy := make(plotter.XYs, 0, len(ts[id])+1)
				for i := range ts[id] {
					xy = append(xy, plotter.XY{X: float64(ts[id][i]) / 1e6, Y: float64(vs[id][i]) * sp.YScale})
				}
				if last := xy[len(xy)-1]; last.X < lastX {
					xy = append(xy, plotter.XY{X: lastX, Y: last.Y})
				}
				out = append(out, Line{Names: []string{kind + " " + label(ls)}, XY: xy, Threshold: kind, Of: label(ls)})
			}
		}
	}
	return out
}

// mergeCoinciding draws lines that stay within tol of each other (same
// kind, same x values) once, under all their names, at the first one's
// place.
func mergeCoinciding(lines []Line, tol float64) []Line {
	var out []Line
next:
	for _, l := range lines {
		for i := range out {
			if coincide(out[i], l, tol) {
				out[i].Names = append(out[i].Names, l.Names...)
				continue next
			}
		}
		l.Names = slices.Clone(l.Names)
		out = append(out, l)
	}
	// A threshold shared by every series needs no series name.
	for i, l := range out {
		if l.Threshold != "" && len(l.Names) > 1 {
			out[i].Names = []string{l.Threshold + " (" + strings.Join(trimPrefixes(l.Names, l.Threshold+" "), ", ") + ")"}
		}
	}
	return out
}

func trimPrefixes(ss []string, prefix string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.TrimPrefix(s, prefix)
	}
	return out
}

func coincide(a, b Line, tol float64) bool {
	if a.Threshold != b.Threshold || len(a.XY) != len(b.XY) {
		return false
	}
	for i := range a.XY {
		if a.XY[i].X != b.XY[i].X || math.Abs(a.XY[i].Y-b.XY[i].Y) > tol {
			return false
		}
	}
	return true
}

// Figure size; the legend takes a column on the right, off the data.
const (
	plotWidth   = 8 * vg.Inch
	plotHeight  = 4.5 * vg.Inch
	legendChars = 34 // a legend line wraps beyond this many characters
)

// WritePlot renders one family as a line plot over time (ms).
func WritePlot(path string, sp PlotSpec) error {
	return BuildPlot(sp).Save(path)
}

// Save renders m as a PNG: the plot on the left, the legend in its own
// column on the right, so that it never covers a line and never leaves the
// figure.
func (m Model) Save(path string) error {
	p := plot.New()
	p.Title.Text = m.Title
	p.X.Label.Text = m.XLabel
	p.Y.Label.Text = m.YLabel
	p.Y.Min, p.Y.Max = m.YMin, m.YMax
	p.Add(plotter.NewGrid())
	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	for _, l := range m.Lines {
		pl, err := plotter.NewLine(l.XY)
		if err != nil {
			return fmt.Errorf("plot %s: %w", filepath.Base(path), err)
		}
		pl.Color = l.Color
		pl.Width = vg.Points(1)
		if l.Threshold != "" {
			pl.StepStyle = plotter.PostStep
			pl.Dashes = thresholdDashes[l.Threshold]
		}
		p.Add(pl)
		for i, s := range wrap(l.Legend(), legendChars) {
			if i == 0 {
				leg.Add(s, pl)
			} else {
				leg.Add("   " + s)
			}
		}
	}
	if m.XMax() > 0 {
		p.X.Min = 0
	}

	var legendWidth vg.Length
	for _, l := range m.Lines {
		for _, s := range wrap(l.Legend(), legendChars) {
			legendWidth = max(legendWidth, leg.TextStyle.Width("   "+s))
		}
	}
	if legendWidth > 0 {
		legendWidth += leg.ThumbnailWidth + 3*vg.Millimeter
	}
	img := vgimg.New(plotWidth+legendWidth, plotHeight)
	dc := draw.New(img)
	p.Draw(draw.Crop(dc, 0, -legendWidth, 0, 0))
	if legendWidth > 0 {
		lc := draw.Crop(dc, plotWidth, 0, 0, -p.Title.TextStyle.Height(m.Title)-2*vg.Millimeter)
		leg.Draw(lc)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("plot %s: %w", filepath.Base(path), err)
	}
	return f.Close()
}

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten, so that the
// axis's top tick is a round number.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, f := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if f*p >= v*(1-1e-12) {
			return f * p
		}
	}
	return 10 * p
}

// XMax is the largest x of any line.
func (m Model) XMax() float64 {
	var x float64
	for _, l := range m.Lines {
		for _, p := range l.XY {
			x = max(x, p.X)
		}
	}
	return x
}

// wrap cuts s at ", " boundaries into lines of at most n characters (a
// single longer name stays whole).
func wrap(s string, n int) []string {
	parts := strings.SplitAfter(s, ", ")
	var out []string
	cur := ""
	for _, p := range parts {
		if cur != "" && len([]rune(cur+p)) > n {
			out = append(out, strings.TrimSuffix(cur, " "))
			cur = ""
		}
		cur += p
	}
	return append(out, cur)
}

// reduce turns a series into at most maxPoints points, the maximum of each
// bucket, at the bucket's first time.
func reduce(t, v []int64, scale float64) plotter.XYs {
	step := (len(t) + maxPoints - 1) / maxPoints
	step = max(step, 1)
	xy := make(plotter.XYs, 0, len(t)/step+1)
	for i := 0; i < len(t); i += step {
		m := v[i]
		for j := i + 1; j < min(i+step, len(t)); j++ {
			m = max(m, v[j])
		}
		xy = append(xy, plotter.XY{X: float64(t[i]) / 1e6, Y: float64(m) * scale})
	}
	return xy
}
