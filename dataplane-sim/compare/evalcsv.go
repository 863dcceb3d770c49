package compare

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	famspec "github.com/lhcnp/lhcnp/dataplane-sim/family"
)

// A family evaluation's rows as a CSV file (`lhcnp sim eval` writes
// OUT/<set>.csv; docs/tuner.md "The evaluation's CSV file" lists the
// columns): one header line, one row per seed. The columns of J at each
// simulation seed are tuner_j_k0 .. tuner_j_k{N-1} and best_j_k0 ..
// best_j_k{N-1}, N the file's simulation seeds; a cell the source did not
// have (a table's per-seed J, an unmeasured re-measured J) is empty.

// evalCSVHeader is the header of a file of rows at n simulation seeds.
func evalCSVHeader(n int) []string {
	h := []string{"set", "seed", "scenario", "bottleneck", "sim_seeds", "tuner_j", "tuner_se"}
	for k := range n {
		h = append(h, fmt.Sprintf("tuner_j_k%d", k))
	}
	h = append(h, "coarse_j", "coarse_setting", "best_j", "best_se", "best_setting")
	for k := range n {
		h = append(h, fmt.Sprintf("best_j_k%d", k))
	}
	return append(h, "remeasured_j", "changes_per_queue_s", "changes_per_cycle", "confirmed", "rolled_back")
}

// evalCSVOracle are the columns after evalCSVHeader's of a file whose rows
// have their oracle floor (EvalRow.Oracle; `lhcnp sim eval --oracle`).
func evalCSVOracle(n int) []string {
	h := []string{"oracle_j", "oracle_se"}
	for k := range n {
		h = append(h, fmt.Sprintf("oracle_j_k%d", k))
	}
	return h
}

// evalCSVGrid are the last columns of a file whose rows have the untuned
// run and the coarse grid (EvalRow.Untuned, Grid: a full evaluation's):
// untuned_j, then grid_j_a<alpha>_<V_growth as a share of R or off> in
// GridSettings' order.
func evalCSVGrid() []string {
	h := []string{"untuned_j"}
	for _, pt := range gridPoints() {
		h = append(h, "grid_j_a"+pt[0]+"_"+pt[1])
	}
	return h
}

// hasGrid says whether the row has the untuned run and the whole coarse
// grid.
func (r EvalRow) hasGrid() bool { return len(r.Grid) == len(GridAlphas)*len(GridVGrowthShares) }

// formatJ is a number as the file holds it: every digit a float64 needs
// to read back the same (NaN: an empty cell).
func formatJ(x float64) string {
	if math.IsNaN(x) {
		return ""
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// WriteEvalCSV writes a set's rows as CSV: the header, a row per seed.
// Every row must be at the same number of simulation seeds.
func WriteEvalCSV(w io.Writer, rows []EvalRow) error {
	n := 1
	if len(rows) > 0 {
		n = max(1, rows[0].SimSeeds)
	}
	oracle := len(rows) > 0 && rows[0].HasOracle()
	grid := len(rows) > 0 && rows[0].hasGrid()
	head := evalCSVHeader(n)
	if oracle {
		head = append(head, evalCSVOracle(n)...)
	}
	if grid {
		head = append(head, evalCSVGrid()...)
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(head); err != nil {
		return err
	}
	perSeed := func(rec []string, js []float64) []string {
		for k := range n {
			c := ""
			if len(js) == n {
				c = formatJ(js[k])
			}
			rec = append(rec, c)
		}
		return rec
	}
	for _, r := range rows {
		if max(1, r.SimSeeds) != n {
			return fmt.Errorf("compare: seed %d at %d simulation seeds, the first row at %d: one file holds one protocol", r.Draw.Seed, r.SimSeeds, n)
		}
		rec := []string{r.Draw.Set, strconv.FormatInt(r.Draw.Seed, 10), r.Name(), r.Bottleneck, strconv.Itoa(n),
			formatJ(r.Tuner), formatJ(r.TunerSE)}
		rec = perSeed(rec, r.TunerJs)
		rec = append(rec, formatJ(r.Coarse), r.CoarseSetting, formatJ(r.Best), formatJ(r.BestSE), r.BestSetting)
		rec = perSeed(rec, r.BestJs)
		rec = append(rec, formatJ(r.Remeasured), formatJ(r.ChangesPerQueuePerSec), formatJ(r.ChangesPerCycle),
			strconv.FormatInt(r.Confirmed, 10), strconv.FormatInt(r.RolledBack, 10))
		if oracle != r.HasOracle() {
			return fmt.Errorf("compare: seed %d: the oracle floor measured on some rows only: one file holds one protocol", r.Draw.Seed)
		}
		if oracle {
			rec = append(rec, formatJ(r.Oracle), formatJ(r.OracleSE))
			rec = perSeed(rec, r.OracleJs)
		}
		if grid != r.hasGrid() {
			return fmt.Errorf("compare: seed %d: the untuned run and the coarse grid on some rows only: one file holds one protocol", r.Draw.Seed)
		}
		if grid {
			rec = append(rec, formatJ(r.Untuned))
			for _, j := range r.Grid {
				rec = append(rec, formatJ(j))
			}
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// EvalTable is a stored evaluation of one seed set (ReadEvalCSV).
type EvalTable struct {
	File     string
	Set      string
	SimSeeds int
	// Rows are the file's rows in order (their Draw holds the seed and
	// the set alone, Scenario the draw as written); Lines each row's line.
	Rows  []EvalRow
	Lines []int
}

// CSVError is a bad evaluation file: the file, the line and, where one
// cell is at fault, its column (1-based) and name.
type CSVError struct {
	File   string
	Line   int
	Column int
	Name   string
	Msg    string
}

func (e *CSVError) Error() string {
	if e.Column > 0 {
		return fmt.Sprintf("%s:%d: column %d (%s): %s", e.File, e.Line, e.Column, e.Name, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// ReadEvalCSV reads a file WriteEvalCSV wrote (file names it in errors):
// one set, every row at the header's simulation seeds, each seed once.
func ReadEvalCSV(file string, r io.Reader) (*EvalTable, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = false
	head, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, &CSVError{File: file, Line: 1, Msg: "empty file: want a header line (" + strings.Join(evalCSVHeader(1), ",") + ")"}
	}
	if err != nil {
		return nil, csvErr(file, err)
	}
	n := 0
	for _, h := range head {
		if strings.HasPrefix(h, "tuner_j_k") {
			n++
		}
	}
	want := evalCSVHeader(max(1, n))
	oracle := len(head) > len(want) && head[len(want)] == "oracle_j"
	if oracle {
		want = append(want, evalCSVOracle(max(1, n))...)
	}
	grid := len(head) > len(want) && head[len(want)] == "untuned_j"
	if grid {
		want = append(want, evalCSVGrid()...)
	}
	for i := range max(len(head), len(want)) {
		switch {
		case i >= len(head):
			return nil, &CSVError{File: file, Line: 1, Column: i + 1, Name: want[i], Msg: fmt.Sprintf("the header lacks column %q (want %s)", want[i], strings.Join(want, ","))}
		case i >= len(want):
			return nil, &CSVError{File: file, Line: 1, Column: i + 1, Name: head[i], Msg: fmt.Sprintf("unknown column %q (want %s)", head[i], strings.Join(want, ","))}
		case head[i] != want[i]:
			return nil, &CSVError{File: file, Line: 1, Column: i + 1, Name: head[i], Msg: fmt.Sprintf("column %q where %q belongs (want %s)", head[i], want[i], strings.Join(want, ","))}
		}
	}
	n = max(1, n)
	t := &EvalTable{File: file, SimSeeds: n}
	seen := map[int64]int{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, csvErr(file, err)
		}
		line, _ := cr.FieldPos(0)
		c := &cells{file: file, line: line, names: want, rec: rec}
		var row EvalRow
		if row.Draw.Set = c.text(); row.Draw.Set != "" && row.Draw.Set != "train" && row.Draw.Set != "test" {
			c.fail(0, "set %q: want train or test", row.Draw.Set)
		}
		row.Draw.Seed = c.integer()
		row.Scenario = c.text()
		row.Bottleneck = c.text()
		if row.SimSeeds = int(c.integer()); c.err == nil && row.SimSeeds != n {
			c.fail(c.col-1, "%d simulation seeds, the header's per-seed columns %d: N mismatch", row.SimSeeds, n)
		}
		row.Tuner = c.number(false)
		row.TunerSE = c.number(false)
		row.TunerJs = c.perSeed(n)
		row.Coarse = c.number(false)
		row.CoarseSetting = c.text()
		row.Best = c.number(false)
		row.BestSE = c.number(false)
		row.BestSetting = c.text()
		row.BestJs = c.perSeed(n)
		row.Remeasured = c.number(true)
		row.ChangesPerQueuePerSec = c.number(false)
		row.ChangesPerCycle = c.number(false)
		row.Confirmed = c.integer()
		row.RolledBack = c.integer()
		if oracle {
			row.Oracle = c.number(false)
			row.OracleSE = c.number(false)
			row.OracleJs = c.perSeed(n)
		}
		if grid {
			row.Untuned = c.number(true)
			for range len(GridAlphas) * len(GridVGrowthShares) {
				row.Grid = append(row.Grid, c.number(false))
			}
		}
		if c.err != nil {
			return nil, c.err
		}
		if t.Set == "" {
			t.Set = row.Draw.Set
		} else if row.Draw.Set != t.Set {
			return nil, &CSVError{File: file, Line: line, Column: 1, Name: "set", Msg: fmt.Sprintf("set %q, the file's first row %q: one file holds one set", row.Draw.Set, t.Set)}
		}
		if l, ok := seen[row.Draw.Seed]; ok {
			return nil, &CSVError{File: file, Line: line, Column: 2, Name: "seed", Msg: fmt.Sprintf("seed %d again (first on line %d)", row.Draw.Seed, l)}
		}
		seen[row.Draw.Seed] = line
		t.Rows = append(t.Rows, row)
		t.Lines = append(t.Lines, line)
	}
	if len(t.Rows) == 0 {
		return nil, &CSVError{File: file, Line: 2, Msg: "no rows: want one per seed after the header"}
	}
	return t, nil
}

// cells reads one row's cells in order, keeping the first error.
type cells struct {
	file  string
	line  int
	names []string // the header
	rec   []string
	col   int // the next cell's index
	err   error
}

// fail records an error of the cell at index col.
func (c *cells) fail(col int, format string, args ...any) {
	if c.err == nil {
		c.err = &CSVError{File: c.file, Line: c.line, Column: col + 1, Name: c.names[col], Msg: fmt.Sprintf(format, args...)}
	}
}

func (c *cells) next() string {
	c.col++
	return c.rec[c.col-1]
}

// text is a cell that must not be empty.
func (c *cells) text() string {
	s := c.next()
	if s == "" {
		c.fail(c.col-1, "empty")
	}
	return s
}

// number is a cell holding a number of at least 0 (optional: or empty,
// NaN).
func (c *cells) number(optional bool) float64 {
	s := c.next()
	if s == "" && optional {
		return math.NaN()
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		c.fail(c.col-1, "%q is not a number of at least 0", s)
	}
	return x
}

// integer is a cell holding a whole number of at least 0.
func (c *cells) integer() int64 {
	s := c.next()
	x, err := strconv.ParseInt(s, 10, 64)
	if err != nil || x < 0 {
		c.fail(c.col-1, "%q is not a whole number of at least 0", s)
	}
	return x
}

// perSeed is n cells of J at each simulation seed: all numbers, or all
// empty (nil).
func (c *cells) perSeed(n int) []float64 {
	js := make([]float64, n)
	empty := 0
	for k := range n {
		if js[k] = c.number(true); math.IsNaN(js[k]) {
			empty++
		}
	}
	switch empty {
	case 0:
		return js
	case n:
		return nil
	}
	c.fail(c.col-n, "%d of the %d cells %s..%s are empty: give all or none", empty, n, c.names[c.col-n], c.names[c.col-1])
	return nil
}

// csvErr names the file in encoding/csv's errors (a row of the wrong
// length, a stray quote: the line and column are the csv package's).
func csvErr(file string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		msg := pe.Err.Error()
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			msg = "the row's number of cells is not the header's"
		}
		return &CSVError{File: file, Line: pe.Line, Column: pe.Column, Name: "cell", Msg: msg}
	}
	return fmt.Errorf("%s: %w", file, err)
}

// The markdown table WriteEvalMarkdown writes, read back
// (EvalRowsFromMarkdown).
var (
	mdSimSeeds = regexp.MustCompile(`J the mean over (\d+) simulation seeds`)
	mdJ        = regexp.MustCompile(`^([0-9.]+)(?: ± ([0-9.]+))?(?: \(([^()]*)\))?$`)
	mdChanges  = regexp.MustCompile(`^([0-9.]+) \((\d+) / (\d+)\)$`)
)

// EvalRowsFromMarkdown reads a set's rows back from the table
// WriteEvalMarkdown wrote between <!-- tuner-eval:SET --> and
// <!-- /tuner-eval:SET --> in md (file names it in errors): the means as
// printed (tuner J ± its standard error, the coarse and finer best, the
// re-measured J, the changes); the per-seed J the table does not show are
// left empty. The simulation seeds are the bar table's ("J the mean over N
// simulation seeds"; one without it).
func EvalRowsFromMarkdown(file string, md []byte, set string) ([]EvalRow, error) {
	open, end := "<!-- tuner-eval:"+set+" -->", "<!-- /tuner-eval:"+set+" -->"
	sc := bufio.NewScanner(strings.NewReader(string(md)))
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	bad := func(line int, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", file, line, fmt.Sprintf(format, args...))
	}
	var rows []EvalRow
	var cols map[string]int
	in, closed, line, n, start := false, false, 0, 1, 0
	for sc.Scan() {
		line++
		l := sc.Text()
		switch {
		case strings.TrimSpace(l) == open:
			in, start = true, line
			continue
		case strings.TrimSpace(l) == end:
			closed = in
			in = false
		}
		if !in || !strings.HasPrefix(l, "| ") {
			continue
		}
		if m := mdSimSeeds.FindStringSubmatch(l); m != nil {
			n, _ = strconv.Atoi(m[1])
			continue
		}
		cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(l, "| "), " |"), " | ")
		if cells[0] == "seed" {
			cols = map[string]int{}
			for i, c := range cells {
				cols[c] = i
			}
			for _, c := range []string{"scenario", "bottleneck", "tuner J", "coarse best (setting)", "finer best (setting)", "changes per queue per s (confirmed / rolled back)", "per cycle"} {
				if _, ok := cols[c]; !ok {
					return nil, bad(line, "the table's header has no column %q", c)
				}
			}
			continue
		}
		if cols == nil {
			continue // the bars
		}
		if len(cells) != len(cols) {
			return nil, bad(line, "%d cells, the header %d", len(cells), len(cols))
		}
		cell := func(name string) string { return cells[cols[name]] }
		seed, err := strconv.ParseInt(cell("seed"), 10, 64)
		if err != nil {
			return nil, bad(line, "seed %q is not a number", cell("seed"))
		}
		row := EvalRow{Draw: famspec.Draw{Seed: seed, Set: set}, Scenario: cell("scenario"), Bottleneck: cell("bottleneck"),
			SimSeeds: n, Remeasured: math.NaN()}
		// j reads "J[ ± SE][ (setting)]".
		j := func(name string, withSetting bool) (x, se float64, setting string, err error) {
			m := mdJ.FindStringSubmatch(cell(name))
			if m == nil || (m[3] == "") == withSetting {
				return 0, 0, "", bad(line, "column %q: %q is not J[ ± SE] (setting)", name, cell(name))
			}
			if x, err = strconv.ParseFloat(m[1], 64); err != nil {
				return 0, 0, "", bad(line, "column %q: %q is not a number", name, m[1])
			}
			if m[2] != "" {
				if se, err = strconv.ParseFloat(m[2], 64); err != nil {
					return 0, 0, "", bad(line, "column %q: %q is not a number", name, m[2])
				}
			}
			return x, se, m[3], nil
		}
		if row.Tuner, row.TunerSE, _, err = j("tuner J", false); err != nil {
			return nil, err
		}
		if row.Coarse, _, row.CoarseSetting, err = j("coarse best (setting)", true); err != nil {
			return nil, err
		}
		if row.Best, row.BestSE, row.BestSetting, err = j("finer best (setting)", true); err != nil {
			return nil, err
		}
		if _, ok := cols["best static re-measured"]; ok {
			if row.Remeasured, _, _, err = j("best static re-measured", false); err != nil {
				return nil, err
			}
		}
		m := mdChanges.FindStringSubmatch(cell("changes per queue per s (confirmed / rolled back)"))
		if m == nil {
			return nil, bad(line, "column %q: %q is not RATE (CONFIRMED / ROLLED BACK)", "changes per queue per s (confirmed / rolled back)", cell("changes per queue per s (confirmed / rolled back)"))
		}
		row.ChangesPerQueuePerSec, _ = strconv.ParseFloat(m[1], 64)
		row.Confirmed, _ = strconv.ParseInt(m[2], 10, 64)
		row.RolledBack, _ = strconv.ParseInt(m[3], 10, 64)
		if row.ChangesPerCycle, _, _, err = j("per cycle", false); err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	switch {
	case start == 0:
		return nil, fmt.Errorf("%s: no %q marker", file, open)
	case !closed:
		return nil, bad(start, "%q has no %q after it", open, end)
	case len(rows) == 0:
		return nil, bad(start, "no table rows between %q and %q", open, end)
	}
	for i := range rows {
		rows[i].SimSeeds = n
	}
	return rows, nil
}
