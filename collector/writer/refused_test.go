package writer_test

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/collector/spill"
	"github.com/lhcnp/lhcnp/collector/writer"
)

// warnings is how many times log holds the refused file's warning.
func warnings(log *bytes.Buffer) int {
	return strings.Count(log.String(), "refused file past its warning size")
}

// TestRefusedFileSize: the refused file (state_dir/dead_letters.jsonl,
// never rotated) has its size in refused_file_bytes, read at start (none:
// 0; a previous run's: its size) and after each line; past
// WithRefusedFileWarnBytes a warning is logged once, and once at the
// start of a writer that finds it past already. Moved away while the
// writer runs, the next line makes a new file: every line is in one of
// the two, the gauge the new file's, and the warning may come again when
// the new one passes the bound. No database: the rows are kept as the
// writer keeps those whose dead letter PostgreSQL refused.
func TestRefusedFileSize(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "dead_letters.jsonl")
	const warnBytes = 1000
	// The writer's goroutine is not run: the test keeps the rows itself.
	start := func() (*writer.Writer, *collectormetrics.Metrics, *bytes.Buffer) {
		t.Helper()
		sp, err := spill.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sp.Close() })
		m, log := collectormetrics.New(), &bytes.Buffer{}
		w := writer.New(nil, sp, writer.WithMetrics(m), writer.WithLogger(slog.New(slog.NewTextHandler(log, nil))),
			writer.WithRefusedFile(file), writer.WithRefusedFileWarnBytes(warnBytes))
		return w, m, log
	}
	n := 0
	keep := func(w *writer.Writer) {
		t.Helper()
		n++
		b := &rows.Batch{ID: int64(n), Target: "sw1"}
		w.KeepRefused(b, "events", map[string]any{"kind": "cnp", "details": strings.Repeat("x", 200)},
			errors.New("invalid input syntax for type json"), errors.New(`new row for relation "dead_letters" violates check constraint "refuse"`))
	}
	size := func(path string) float64 {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return float64(fi.Size())
	}
	check := func(m *collectormetrics.Metrics, log *bytes.Buffer, when string, size float64, warned int) {
		t.Helper()
		if got := testutil.ToFloat64(m.RefusedFileBytes); got != size {
			t.Errorf("%s: refused_file_bytes %v, want %v", when, got, size)
		}
		if got := warnings(log); got != warned {
			t.Errorf("%s: %d warnings, want %d", when, got, warned)
		}
	}

	w, m, log := start()
	check(m, log, "at start, no file", 0, 0)
	keep(w)
	first := size(file)
	if first >= warnBytes/2 {
		t.Fatalf("a line of %v bytes: the test wants several under %d", first, warnBytes)
	}
	check(m, log, "after a line", first, 0)
	for size(file) <= warnBytes {
		keep(w)
	}
	check(m, log, "past the bound", size(file), 1)
	for range 3 {
		keep(w)
	}
	check(m, log, "more lines past the bound", size(file), 1)

	// A restart: the file of the previous run.
	w, m, log = start()
	check(m, log, "at a restart", size(file), 1)
	keep(w)
	check(m, log, "a line after the restart", size(file), 1)

	// Moved away while the writer runs.
	moved := filepath.Join(dir, "dead_letters.jsonl.1")
	if err := os.Rename(file, moved); err != nil {
		t.Fatal(err)
	}
	before := n
	keep(w)
	check(m, log, "after the file was moved away", size(file), 1)
	for size(file) <= warnBytes {
		keep(w)
	}
	check(m, log, "the new file past the bound", size(file), 2)
	var got []int
	for _, path := range []string{moved, file} {
		for _, l := range refusedLines(t, path) {
			got = append(got, int(l.BatchID))
		}
	}
	if len(got) != n {
		t.Fatalf("%d lines in the two files, want %d", len(got), n)
	}
	for i, id := range got {
		if id != i+1 {
			t.Fatalf("line %d is batch %d's, want %d (lines %v)", i, id, i+1, got)
		}
	}
	if lines := len(refusedLines(t, moved)); lines != before {
		t.Errorf("the moved file holds %d lines, want the %d written before it was moved", lines, before)
	}
}
