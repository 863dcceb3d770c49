package compare

// Figures of runs on generated fabrics (scenario topology.fabrics): the
// FCT slowdown by flow size, p50, p95 and p99 as HPCC's figure 11 gives
// them, for the flows inside each data centre and for those that cross
// the WAN apart, and the WAN links' utilisation in each direction.

import (
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"

	"github.com/lhcnp/lhcnp/dataplane-sim/report"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// CrossDC names the class of flows between two fabrics (or to or from a
// host outside them).
const CrossDC = "cross-DC"

// FabricFigures are a run's figures on generated fabrics.
type FabricFigures struct {
	// Classes are the FCT slowdowns of the flows inside each fabric (named
	// by it), in the scenario's order, then of the flows between two
	// (CrossDC).
	Classes []FCTClass
	// WAN is every direction of every topology.wan link.
	WAN []WANPort
}

// FCTClass is the FCT slowdown by flow size of one class of flows.
type FCTClass struct {
	Name    string
	Buckets []Bucket
}

// WANPort is one direction of a WAN link: the port of From towards To.
type WANPort struct {
	Link, From, To string
	// Utilisation is bytes sent over the integral of the rate over the
	// run; PeakQueueBytes and Drops are the port's.
	Utilisation    float64
	PeakQueueBytes int64
	Drops          int64
}

// fabricFigures classifies the flows of s by the fabrics of their ends
// and reads the WAN ports; nil for a scenario without fabrics.
func fabricFigures(s *report.Summary, sc *scenario.Scenario) *FabricFigures {
	if len(sc.Fabrics) == 0 {
		return nil
	}
	fabric := map[string]string{}
	for _, h := range sc.Hosts {
		fabric[h.Name] = h.Fabric
	}
	by := map[string][]report.FlowSummary{}
	for _, f := range s.Flows {
		class := CrossDC
		if a := fabric[f.Src]; a != "" && a == fabric[f.Dst] {
			class = a
		}
		by[class] = append(by[class], f)
	}
	ff := &FabricFigures{}
	for _, name := range append(fabricNames(sc), CrossDC) {
		if bs := bucketsOf(by[name]); bs != nil {
			ff.Classes = append(ff.Classes, FCTClass{Name: name, Buckets: bs})
		}
	}
	ports := map[[2]string]report.PortSummary{}
	for _, p := range s.Ports {
		ports[[2]string{p.Node, p.Port}] = p
	}
	for _, lk := range sc.Links {
		if !lk.WAN {
			continue
		}
		for _, end := range [][2]string{{lk.A, lk.B}, {lk.B, lk.A}} {
			p := ports[end]
			ff.WAN = append(ff.WAN, WANPort{Link: lk.Name, From: end[0], To: end[1], Utilisation: float64(p.Utilisation),
				PeakQueueBytes: p.PeakQueueBytes, Drops: p.DropPackets})
		}
	}
	return ff
}

func fabricNames(sc *scenario.Scenario) []string {
	names := make([]string, len(sc.Fabrics))
	for i, f := range sc.Fabrics {
		names[i] = f.Name
	}
	return names
}

// WriteFabricMarkdown writes the FCT slowdowns by class and flow size and
// the WAN's utilisation (when there is a WAN) of the rows run on
// generated fabrics (nothing when none is).
func (r *Result) WriteFabricMarkdown(w io.Writer) error {
	var b strings.Builder
	for _, row := range r.Rows {
		if row.Fabric == nil {
			continue
		}
		for _, c := range row.Fabric.Classes {
			if b.Len() == 0 {
				b.WriteString("| scenario | mechanism | flows |")
				for _, bk := range c.Buckets {
					fmt.Fprintf(&b, " %s p50 / p95 / p99 (finished/flows) |", bk.Name)
				}
				if r.DCQCNRef != nil {
					b.WriteString(" " + DCQCNRefColumn + " |\n|---")
				} else {
					b.WriteString("\n")
				}
				b.WriteString("|---|---|---|---|---|---|\n")
			}
			fmt.Fprintf(&b, "| %s | %s | %s |", row.Scenario, row.Mechanism, c.Name)
			for _, bk := range c.Buckets {
				if bk.Finished == 0 {
					fmt.Fprintf(&b, " — (0/%d) |", bk.Flows)
					continue
				}
				fmt.Fprintf(&b, " %.2f / %.2f / %.2f (%d/%d) |", bk.P50, bk.P95, bk.P99, bk.Finished, bk.Flows)
			}
			if r.DCQCNRef != nil {
				fmt.Fprintf(&b, " %s |", r.DCQCNRef.cell(row.Mechanism, true))
			}
			b.WriteString("\n")
		}
	}
	if b.Len() == 0 {
		return nil
	}
	// The WAN's table when some run has a WAN: a single fabric has none,
	// and a table of no rows is a header that reads as a failed run.
	var wan strings.Builder
	for _, row := range r.Rows {
		if row.Fabric == nil {
			continue
		}
		for _, p := range row.Fabric.WAN {
			fmt.Fprintf(&wan, "| %s | %s | %s (%s→%s) | %.2f%% | %s | %d |\n", row.Scenario, row.Mechanism, p.Link, p.From, p.To,
				100*p.Utilisation, mb(p.PeakQueueBytes), p.Drops)
		}
	}
	if wan.Len() > 0 {
		b.WriteString("\n| scenario | mechanism | WAN port | utilisation | peak queue | drops |\n|---|---|---|---|---|---|\n")
		b.WriteString(wan.String())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeFabricPlot draws, for a scenario on generated fabrics, the FCT
// slowdown p50 to p99 of every class and flow size, one bar per
// mechanism; "" when no row has fabric figures.
func writeFabricPlot(outDir, name string, rows []Row) (string, error) {
	var groups, series []string
	var low, high [][]float64
	for _, row := range rows {
		if row.Fabric == nil {
			continue
		}
		var lo, hi []float64
		var gs []string
		for _, c := range row.Fabric.Classes {
			for _, bk := range c.Buckets {
				gs = append(gs, c.Name+"\n"+strings.Fields(bk.Name)[0])
				if bk.Finished > 0 {
					lo, hi = append(lo, bk.P50), append(hi, bk.P99)
				} else {
					lo, hi = append(lo, 0), append(hi, 0)
				}
			}
		}
		if groups == nil {
			groups = gs
		}
		if len(gs) != len(groups) {
			return "", fmt.Errorf("compare: %s: %s has %d flow classes, %s %d", name, row.Mechanism, len(gs), series[0], len(groups))
		}
		series = append(series, row.Mechanism)
		low, high = append(low, lo), append(high, hi)
	}
	if len(series) == 0 {
		return "", nil
	}
	file := name + fabricPlotSuffix
	sp := report.IntervalSpec{File: file, Title: name + ": FCT slowdown inside each DC and across the WAN, by flow size, p50 (lower mark) to p99 (upper)",
		YLabel: "FCT slowdown (log)", Groups: groups, Series: series, Low: low, High: high, LogY: true}
	if err := report.WriteIntervalPlot(filepath.Join(outDir, file), sp); err != nil {
		return "", fmt.Errorf("compare: plot %s: %w", file, err)
	}
	return file, nil
}

// FabricDoc is the section of the results document on generated fabrics:
// the runs and the scenarios they ran.
type FabricDoc struct {
	Result    *Result
	Scenarios []ScenarioInfo
}

// writeFabricSection writes the section on generated fabrics.
func writeFabricSection(b *strings.Builder, d FabricDoc, plotDir string) error {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## Generated fabrics: two data centres over a WAN\n\n")
	p("Data centres generated from a few numbers (`topology.fabrics`, docs/scenarios.md), ECMP over their\n")
	p("equal-cost paths by a seeded hash of each flow's five-tuple, published flow-size distributions. The FCT\n")
	p("slowdown is given apart for the flows inside each data centre and for those that cross the WAN, by flow\n")
	p("size, at p50, p95 and p99 (nearest rank over the finished flows; HPCC's figure 11 reads the same way);\n")
	p("the WAN's utilisation is bytes sent over the integral of its rate over the whole run, the quiet tail\n")
	p("after the traffic stops included.\n\n")
	for _, sc := range d.Scenarios {
		p("- `%s` (%s): %s.\n", sc.File, sc.Name, sc.Description)
	}
	p("\n")
	if err := d.Result.WriteFabricMarkdown(b); err != nil {
		return err
	}
	p("\n")
	for _, f := range d.Result.Plots {
		if strings.HasSuffix(f, fabricPlotSuffix) {
			p("![%s](%s)\n\n", strings.TrimSuffix(f, ".png"), path.Join(plotDir, f))
		}
	}
	return nil
}
