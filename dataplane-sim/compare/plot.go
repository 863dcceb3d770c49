package compare

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lhcnp/lhcnp/dataplane-sim/report"
	"github.com/lhcnp/lhcnp/dataplane-sim/sim"
)

// The plots Run writes into its output directory, after the scenario's
// name.
const (
	queuePlotSuffix  = "-queue.png"
	ratePlotSuffix   = "-rate.png"
	fctPlotSuffix    = "-fct.png"
	fabricPlotSuffix = "-fabric-fct.png"
)

// removePlots removes the plots of scenario name in outDir that an earlier
// comparison wrote, before this one writes its own or none (Plots off, a
// scenario without finite flows): one left would be read as this run's,
// as sim.Run removes its own files first.
func removePlots(outDir, name string) error {
	for _, suffix := range []string{queuePlotSuffix, ratePlotSuffix, fctPlotSuffix, fabricPlotSuffix} {
		if err := os.Remove(filepath.Join(outDir, name+suffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// writePlots draws, for one scenario, the bottleneck's queue (with the
// K_min and K_max of the mechanisms that have them) and the senders' total
// sending rate over time, one line per mechanism, from the runs'
// queues.csv, thresholds.csv and rates.csv.
func writePlots(outDir, name string, rows []Row) ([]string, error) {
	queue := report.NewFamily("queue", "queue_bytes", "mechanism")
	thresholds := report.NewFamily("thresholds", "bytes", "mechanism", "threshold")
	rate := report.NewFamily("rate", "rate_bps", "mechanism")
	for _, row := range rows {
		qs := queue.Series(row.Mechanism)
		rs := rate.Series(row.Mechanism)
		ths := map[string]report.SeriesID{}
		dir := filepath.Join(outDir, row.Dir)
		err := readCSV(filepath.Join(dir, sim.ThresholdsCSV), func(f []string) error {
			if len(f) != 5 || f[1] != row.BottleneckNode || f[2] != row.BottleneckPeer {
				return nil
			}
			t, v, err := ints(f[0], f[4])
			if err != nil {
				return err
			}
			id, ok := ths[f[3]]
			if !ok {
				id = thresholds.Series(row.Mechanism, f[3])
				ths[f[3]] = id
			}
			thresholds.Add(t, id, v)
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		err = readCSV(filepath.Join(dir, sim.QueuesCSV), func(f []string) error {
			if len(f) != 4 || f[1] != row.BottleneckNode || f[2] != row.BottleneckPeer {
				return nil
			}
			t, v, err := ints(f[0], f[3])
			if err == nil {
				queue.Add(t, qs, v)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		// rates.csv has one row per flow per sample, in time order: sum them.
		var cur, sum int64 = -1, 0
		err = readCSV(filepath.Join(dir, sim.RatesCSV), func(f []string) error {
			if len(f) != 3 {
				return nil
			}
			t, v, err := ints(f[0], f[2])
			if err != nil {
				return err
			}
			if t != cur && cur >= 0 {
				rate.Add(cur, rs, sum)
				sum = 0
			}
			cur = t
			sum += v
			return nil
		})
		if err != nil {
			return nil, err
		}
		if cur >= 0 {
			rate.Add(cur, rs, sum)
		}
	}
	files := []string{name + queuePlotSuffix, name + ratePlotSuffix}
	b := rows[0]
	specs := []report.PlotSpec{
		{Family: queue, File: files[0], Title: fmt.Sprintf("%s: queue at %s→%s", name, b.BottleneckNode, b.BottleneckPeer), YLabel: "queue (MB)", YScale: 1e-6,
			Thresholds: thresholds},
		{Family: rate, File: files[1], Title: name + ": total sending rate of all flows", YLabel: "rate (Gb/s)", YScale: 1e-9, ByMean: true},
	}
	for _, sp := range specs {
		if err := report.WritePlot(filepath.Join(outDir, sp.File), sp); err != nil {
			return nil, fmt.Errorf("compare: plot %s: %w", sp.File, err)
		}
	}
	return files, nil
}

func readCSV(path string, row func([]string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue
		}
		// Our names carry no commas or quotes (scenario names, node
		// names), so a plain split reads the files the runner writes.
		if err := row(strings.Split(sc.Text(), ",")); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return sc.Err()
}

func ints(a, b string) (int64, int64, error) {
	x, err := strconv.ParseInt(a, 10, 64)
	if err != nil {
		return 0, 0, err
	}
	y, err := strconv.ParseInt(b, 10, 64)
	return x, y, err
}

// writeFCTPlot draws, for a scenario with finite flows (the web-search
// mixes), the FCT slowdown p50 to p99 of each flow-size class, one bar per
// mechanism; "" when no row has finite flows.
func writeFCTPlot(outDir, name string, rows []Row) (string, error) {
	var groups []string
	var series []string
	var low, high [][]float64
	for _, row := range rows {
		if len(row.Buckets) == 0 {
			continue
		}
		if groups == nil {
			for _, bk := range row.Buckets {
				groups = append(groups, bk.Name)
			}
		}
		lo, hi := make([]float64, len(groups)), make([]float64, len(groups))
		for g, bk := range row.Buckets {
			if g < len(groups) && bk.Finished > 0 {
				lo[g], hi[g] = bk.P50, bk.P99
			}
		}
		series = append(series, row.Mechanism)
		low, high = append(low, lo), append(high, hi)
	}
	if len(series) == 0 {
		return "", nil
	}
	file := name + fctPlotSuffix
	sp := report.IntervalSpec{File: file, Title: name + ": FCT slowdown by flow size, p50 (lower mark) to p99 (upper)",
		YLabel: "FCT slowdown (log)", Groups: groups, Series: series, Low: low, High: high, LogY: true}
	if err := report.WriteIntervalPlot(filepath.Join(outDir, file), sp); err != nil {
		return "", fmt.Errorf("compare: plot %s: %w", file, err)
	}
	return file, nil
}
