package report

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// Family is one CSV file's worth of samples: a set of registered series
// (ports, flows, counters) and a flat log of (time, series, value) rows in
// recording order.
type Family struct {
	name   string   // file name without .csv
	header []string // label columns after time_ns; the value column last
	labels [][]string
	// rows in chunks of at most rowChunk rows: appending never copies
	// what is recorded (a long run's series are its largest allocation,
	// and growing one slice allocates about twice its final size, the
	// copies garbage for the collector).
	rows [][]row
	n    int
}

// row is one sample.
type row struct {
	t int64
	v int64
	k int32
}

const rowChunk = 1 << 14

// each calls fn for every row in recording order.
func (f *Family) each(fn func(t int64, k int32, v int64)) {
	for _, c := range f.rows {
		for i := range c {
			fn(c[i].t, c[i].k, c[i].v)
		}
	}
}

// NewFamily returns an empty family. labelCols name the columns that
// identify a series (e.g. node, port); valueCol names the value column.
func NewFamily(name string, valueCol string, labelCols ...string) *Family {
	return &Family{name: name, header: append(append([]string{}, labelCols...), valueCol)}
}

// Name returns the family's name (its CSV file is Name()+".csv").
func (f *Family) Name() string { return f.name }

// Series registers a series and returns its id for Add. labels must match
// the family's label columns.
func (f *Family) Series(labels ...string) SeriesID {
	if len(labels) != len(f.header)-1 {
		panic(fmt.Sprintf("report: family %s wants %d labels, got %d", f.name, len(f.header)-1, len(labels)))
	}
	f.labels = append(f.labels, labels)
	return SeriesID(len(f.labels) - 1)
}

// SeriesID names a series within its family.
type SeriesID int32

// Add appends one sample. Callers add in time order.
func (f *Family) Add(tNs int64, s SeriesID, v int64) {
	if len(f.rows) == 0 || len(f.rows[len(f.rows)-1]) == cap(f.rows[len(f.rows)-1]) {
		// Chunks double from 256 rows up to rowChunk: a short run's
		// family stays small.
		size := 256
		if len(f.rows) > 0 {
			size = min(rowChunk, 2*cap(f.rows[len(f.rows)-1]))
		}
		f.rows = append(f.rows, make([]row, 0, size))
	}
	last := &f.rows[len(f.rows)-1]
	*last = append(*last, row{t: tNs, v: v, k: int32(s)})
	f.n++
}

// Len returns the number of samples recorded.
func (f *Family) Len() int { return f.n }

// NumSeries returns the number of registered series.
func (f *Family) NumSeries() int { return len(f.labels) }

// Labels returns the labels of series s.
func (f *Family) Labels(s SeriesID) []string { return f.labels[s] }

// Values returns the samples of series s as parallel time and value slices.
func (f *Family) Values(s SeriesID) (t, v []int64) {
	f.each(func(rt int64, k int32, rv int64) {
		if k == int32(s) {
			t = append(t, rt)
			v = append(v, rv)
		}
	})
	return t, v
}

// bySeries returns the samples of every series, indexed by series id,
// in one pass.
func (f *Family) bySeries() (t, v [][]int64) {
	t = make([][]int64, len(f.labels))
	v = make([][]int64, len(f.labels))
	f.each(func(rt int64, k int32, rv int64) {
		t[k] = append(t[k], rt)
		v[k] = append(v[k], rv)
	})
	return t, v
}

// WriteCSV writes the header and every row.
func (f *Family) WriteCSV(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	bw.WriteString("time_ns")
	for _, h := range f.header {
		bw.WriteByte(',')
		bw.WriteString(h)
	}
	bw.WriteByte('\n')
	// Labels are quoted once, not per row.
	quoted := make([]string, len(f.labels))
	for i, ls := range f.labels {
		var b []byte
		for _, l := range ls {
			b = append(b, ',')
			b = appendCSVField(b, l)
		}
		quoted[i] = string(b)
	}
	var buf []byte
	for _, c := range f.rows {
		for i := range c {
			buf = strconv.AppendInt(buf[:0], c[i].t, 10)
			buf = append(buf, quoted[c[i].k]...)
			buf = append(buf, ',')
			buf = strconv.AppendInt(buf, c[i].v, 10)
			buf = append(buf, '\n')
			if _, err := bw.Write(buf); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

func appendCSVField(b []byte, s string) []byte {
	needs := false
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == ',' || c == '"' || c == '\n' || c == '\r' {
			needs = true
			break
		}
	}
	if !needs {
		return append(b, s...)
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			b = append(b, '"')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}

// WriteFile writes the family to dir/<name>.csv.
func (f *Family) WriteFile(dir string) error {
	return writeFile(filepath.Join(dir, f.name+".csv"), f.WriteCSV)
}

func writeFile(path string, write func(io.Writer) error) error {
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(file); err != nil {
		file.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return file.Close()
}

// Recorder holds the families every run writes:
//
//	queues.csv     time_ns,node,port,queue_bytes
//	rates.csv      time_ns,flow,rate_bps
//	counters.csv   time_ns,node,port,counter,value
//	thresholds.csv time_ns,node,port,threshold,bytes
//
// A port is named by its node and the node at the other end of its link.
// Counters are cumulative since the start of the run. Thresholds are the
// congestion-aware ports' K_min and K_max (threshold "K_min", "K_max"),
// recorded at the first sample and whenever they change; the queue plot
// draws them.
type Recorder struct {
	Queues     *Family
	Rates      *Family
	Counters   *Family
	Thresholds *Family
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder {
	return &Recorder{
		Queues:     NewFamily("queues", "queue_bytes", "node", "port"),
		Rates:      NewFamily("rates", "rate_bps", "flow"),
		Counters:   NewFamily("counters", "value", "node", "port", "counter"),
		Thresholds: NewFamily("thresholds", "bytes", "node", "port", "threshold"),
	}
}

// WriteCSV writes the four CSV files into dir.
func (r *Recorder) WriteCSV(dir string) error {
	for _, f := range []*Family{r.Queues, r.Rates, r.Counters, r.Thresholds} {
		if err := f.WriteFile(dir); err != nil {
			return err
		}
	}
	return nil
}
