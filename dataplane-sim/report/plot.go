package report

import (
	"cmp"
	"fmt"
	"image/color"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// maxLines is how many series a plot shows: the largest ones. A plot of a
// thousand web-search flows is a smear; the CSV has them all.
const maxLines = 8

// maxPoints bounds the points per line; longer series are reduced to the
// maximum of each bucket, which keeps the peaks that matter in a queue plot.
const maxPoints = 2000

// palette is fixed so that colours do not depend on anything but the order.
var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff},
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
}

// WritePlots writes queues.png and rates.png into dir.
func (r *Recorder) WritePlots(dir, title string) error {
	specs := []PlotSpec{
		{Family: r.Queues, File: "queues.png", Title: title + ": egress queues (largest " + fmt.Sprint(maxLines) + ")", YLabel: "queue (MB)", YScale: 1e-6},
		{Family: r.Rates, File: "rates.png", Title: title + ": sending rates (largest " + fmt.Sprint(maxLines) + ")", YLabel: "rate (Gb/s)", YScale: 1e-9, ByMean: true},
	}
	for _, sp := range specs {
		if err := WritePlot(filepath.Join(dir, sp.File), sp); err != nil {
			return err
		}
	}
	return nil
}

// WritePlot renders one family as a line plot over time (ms).
func WritePlot(path string, sp PlotSpec) error {
	p := plot.New()
	p.Title.Text = sp.Title
	p.X.Label.Text = "time (ms)"
	p.Y.Label.Text = sp.YLabel
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = false

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
	for n, o := range order {
		xy := reduce(ts[o.id], vs[o.id], sp.YScale)
		l, err := plotter.NewLine(xy)
		if err != nil {
			return fmt.Errorf("plot %s: %w", sp.File, err)
		}
		l.Color = palette[n%len(palette)]
		l.Width = vg.Points(1)
		p.Add(l)
		p.Legend.Add(joinLabels(sp.Family.labels[o.id]), l)
	}
	if len(order) == 0 {
		p.Title.Text += " (nothing to plot)"
	}
	return p.Save(8*vg.Inch, 4.5*vg.Inch, path)
}

func joinLabels(ls []string) string {
	s := ""
	for i, l := range ls {
		if i > 0 {
			s += " "
		}
		s += l
	}
	return s
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
