package writer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/collector/writer"
)

// TestDeadLetterOnceConcurrent: two collectors replay one batch at the
// same instant, and each dead-letters its refused event before the other
// committed (each in a transaction of its own, as the two writers'
// statements run). The dead letters' unique key makes the second wait for
// the first and write nothing: one dead letter, on one node and on Citus
// (where nothing else guards a batch's events).
func TestDeadLetterOnceConcurrent(t *testing.T) {
	for _, db := range bothDBs {
		t.Run(db.name, func(t *testing.T) {
			ctx := context.Background()
			pool, _ := db.new(t)
			row := `{"table": "events", "row": {"kind": "cnp", "details": "{bad json"}}`
			first, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer first.Rollback(ctx)
			if _, err := first.Exec(ctx, writer.DeadLetterSQL, "sw1", int64(7), row, "first"); err != nil {
				t.Fatal(err)
			}
			second, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer second.Rollback(ctx)
			done := make(chan error, 1)
			go func() {
				_, err := second.Exec(ctx, writer.DeadLetterSQL, "sw1", int64(7), row, "second")
				done <- err
			}()
			// The second statement either returned (nothing made it wait)
			// or waits for the first's transaction.
			err2, returned := waitsOrReturns(t, pool, db.name == "citus", "INSERT INTO dead_letters", done)
			if err := first.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if !returned {
				err2 = <-done
			}
			if err2 != nil {
				t.Fatal(err2)
			}
			if err := second.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if n := count(t, pool, `SELECT count(*) FROM dead_letters WHERE target = 'sw1' AND batch_id = 7`); n != 1 {
				t.Errorf("%d dead letters of the batch's refused event, want 1", n)
			}
		})
	}
}

// TestDeadLetterRefused: PostgreSQL refuses the dead letters of a batch's
// refused rows too (a constraint the test adds to dead_letters: a
// permanent error). The writer keeps each such row in its refused file, a
// JSON line with the batch, the row and both errors, counts it in
// dead_letters_refused_total, writes the other dead letters and stores
// the rest of the batch (partial). Without a file it can write, the row
// is dropped, counted under dropped_rows_total{reason=dead_letter_refused}
// and logged with the row. refused_file_bytes is the file's size. On one
// node and on Citus (a sample's dead letter in its part's transaction, an
// event's in a statement of its own); and so when the batch's COMMIT lost its answer (its retry finds
// it in the ledger: partial, the rows in the file once). On the old code
// the batch was retried for ever: nothing stored.
func TestDeadLetterRefused(t *testing.T) {
	for _, db := range bothDBs {
		for _, tt := range []struct {
			desc  string
			check string // the constraint added to dead_letters, of batch $ID
			kept  int    // of the 3 dead letters, those refused
			file  bool   // a refused file the writer can write
			cut   bool   // the connection cut after the batch's COMMIT, its answer lost
		}{
			{"every dead letter of the batch", `batch_id <> $ID`, 3, true, false},
			{"the event's dead letter", `batch_id <> $ID OR "row"->>'table' <> 'events'`, 1, true, false},
			{"every dead letter, no file", `batch_id <> $ID`, 3, false, false},
			{"every dead letter, the COMMIT's answer lost", `batch_id <> $ID`, 3, true, true},
		} {
			t.Run(db.name+"/"+tt.desc, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				pool, dsn := db.new(t)
				wpool := pool
				// The first commit statement: on one node storeSafe's,
				// on Citus storePartSafe's.
				cut := &cutter{match: func(data pgx.TraceQueryStartData) bool { return strings.HasPrefix(data.SQL, "commit") },
					at: map[int]cutAt{1: afterCommit}}
				if tt.cut {
					wpool = cut.pool(t, dsn)
				}
				b := badBatch()
				check := strings.ReplaceAll(tt.check, "$ID", fmt.Sprint(b.ID))
				if _, err := pool.Exec(ctx, `ALTER TABLE dead_letters ADD CONSTRAINT test_refused CHECK (`+check+`)`); err != nil {
					t.Fatal(err)
				}
				file := filepath.Join(t.TempDir(), "dead_letters.jsonl")
				if !tt.file {
					file = filepath.Join(t.TempDir(), "missing", "dead_letters.jsonl")
				}
				w, m, stop := newWriter(t, wpool, writer.WithRefusedFile(file), writer.WithRetryMax(100*time.Millisecond))
				w.Enqueue(b)
				stop()
				if tt.cut && cut.faults() != 1 {
					t.Fatalf("%d connections cut, want 1", cut.faults())
				}
				for _, c := range []struct {
					desc, sql string
					want      int64
				}{
					{"samples", `SELECT count(*) FROM samples WHERE batch_id = $1`, 98},
					{"events", `SELECT count(*) FROM events WHERE batch_id = $1`, 1},
					{"dead letters", `SELECT count(*) FROM dead_letters WHERE batch_id = $1`, int64(3 - tt.kept)},
				} {
					if n := count(t, pool, c.sql, b.ID); n != c.want {
						t.Errorf("%s: %d, want %d", c.desc, n, c.want)
					}
				}
				var dropped float64
				lines := refusedLines(t, file)
				if tt.file {
					if len(lines) != tt.kept {
						t.Errorf("%d lines in the refused file, want %d", len(lines), tt.kept)
					}
					for _, l := range lines {
						if l.BatchID != b.ID || l.Target != "sw1" || l.Row.Table == "" || l.Error == "" || !strings.Contains(l.Refused, "test_refused") {
							t.Errorf("refused file line %+v: want batch %d, target sw1, the row's table, its error and the dead letter's (test_refused)", l, b.ID)
						}
					}
					if fi, err := os.Stat(file); err != nil {
						t.Error(err)
					} else if got := testutil.ToFloat64(m.RefusedFileBytes); got != float64(fi.Size()) {
						t.Errorf("refused_file_bytes %v, want the file's %d", got, fi.Size())
					}
				} else {
					dropped = float64(tt.kept)
				}
				for _, c := range []struct {
					desc      string
					got, want float64
				}{
					{"dead_letters_total", testutil.ToFloat64(m.DeadLetters), float64(3 - tt.kept)},
					{"dead_letters_refused_total", testutil.ToFloat64(m.DeadLettersRefused), float64(tt.kept)},
					{"dropped_rows_total{reason=dead_letter_refused}", testutil.ToFloat64(m.DroppedRows.WithLabelValues(collectormetrics.DropDeadLetterRefused)), dropped},
					{"batches_total{outcome=partial}", testutil.ToFloat64(m.Batches.WithLabelValues("partial")), 1},
					{"rows_written_total{table=samples}", testutil.ToFloat64(m.RowsWritten.WithLabelValues("samples")), 98},
					{"rows_written_total{table=events}", testutil.ToFloat64(m.RowsWritten.WithLabelValues("events")), 1},
				} {
					if c.got != c.want {
						t.Errorf("%s = %v, want %v", c.desc, c.got, c.want)
					}
				}
			})
		}
	}
}

// TestSeriesRefused: PostgreSQL refuses a series of a batch (a constraint
// the test adds to series, a permanent error). The samples of that series
// are dead-lettered with its error and the rest of the batch is stored
// (partial), a batch alone or in a group with another target's, each row
// counted once. On one node a series is written with its samples, and
// refuses them (storeSafe); on Citus the series are written before the
// parts (storeSeries), and on the code before it the batch was retried for
// ever, every batch queued behind it: the test's deadline fails it.
func TestSeriesRefused(t *testing.T) {
	for _, db := range bothDBs {
		for _, tt := range []struct {
			desc      string
			groupRows int
		}{
			{"a batch alone", 0},
			{"in a group", 1000},
		} {
			t.Run(db.name+"/"+tt.desc, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				pool, _ := db.new(t)
				if _, err := pool.Exec(ctx, `ALTER TABLE series ADD CONSTRAINT test_refused CHECK (unit <> 'test-refused')`); err != nil {
					t.Fatal(err)
				}
				ts := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).UnixNano()
				b, other := batch("sw1", ts, 10), batch("sw2", ts, 10)
				b.Series[3].YangType, b.Series[3].Unit = "uint64", "test-refused"
				m := storeBacklog(t, pool, tt.groupRows, []*rows.Batch{b, other})
				for _, c := range []struct {
					desc, sql string
					want      int64
				}{
					{"samples", `SELECT count(*) FROM samples WHERE $1::bigint IS NOT NULL`, 19},
					{"series", `SELECT count(*) FROM series WHERE $1::bigint IS NOT NULL`, 19},
					{"latest", `SELECT count(*) FROM latest WHERE $1::bigint IS NOT NULL`, 19},
					{"dead letters of the series' sample, with its error", `SELECT count(*) FROM dead_letters
  WHERE batch_id = $1 AND "row"->'row'->>'path' = '/x[i=3]' AND error LIKE '%test_refused%'`, 1},
					{"dead letters", `SELECT count(*) FROM dead_letters WHERE $1::bigint IS NOT NULL`, 1},
					{"ledger rows of the batch, summed", `SELECT sum(rows) FROM ingest_ledger WHERE batch_id = $1`, 10},
				} {
					if n := count(t, pool, c.sql, b.ID); n != c.want {
						t.Errorf("%s: %d, want %d", c.desc, n, c.want)
					}
				}
				for _, c := range []struct {
					desc      string
					got, want float64
				}{
					{"batches_total{outcome=partial}", testutil.ToFloat64(m.Batches.WithLabelValues("partial")), 1},
					{"batches_total{outcome=stored}", testutil.ToFloat64(m.Batches.WithLabelValues("stored")), 1},
					{"rows_written_total{table=samples}", testutil.ToFloat64(m.RowsWritten.WithLabelValues("samples")), 19},
					{"dead_letters_total", testutil.ToFloat64(m.DeadLetters), 1},
				} {
					if c.got != c.want {
						t.Errorf("%s = %v, want %v", c.desc, c.got, c.want)
					}
				}
			})
		}
	}
}

// refusedLine is a line of the writer's refused file.
type refusedLine struct {
	Target  string `json:"target"`
	BatchID int64  `json:"batch_id"`
	Row     struct {
		Table string `json:"table"`
	} `json:"row"`
	Error   string `json:"error"`
	Refused string `json:"dead_letter_error"`
}

// refusedLines reads the refused file at path (none: no line).
func refusedLines(t *testing.T, path string) []refusedLine {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var lines []refusedLine
	for l := range strings.Lines(string(data)) {
		var r refusedLine
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%s: %q: %v", path, l, err)
		}
		lines = append(lines, r)
	}
	return lines
}
