package writer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/collector/spill"
	"github.com/lhcnp/lhcnp/collector/writer"
	"github.com/lhcnp/lhcnp/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestClassify(t *testing.T) {
	for _, tt := range []struct {
		desc string
		err  error
		want writer.Class
	}{
		{"connection failure", &pgconn.PgError{Code: "08006"}, writer.Temporary},
		{"serialization", &pgconn.PgError{Code: "40001"}, writer.Temporary},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, writer.Temporary},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, writer.Temporary},
		{"disk full", &pgconn.PgError{Code: "53100"}, writer.Temporary},
		{"NUL in text", &pgconn.PgError{Code: "22021"}, writer.Permanent},
		{"numeric out of range", &pgconn.PgError{Code: "22003"}, writer.Permanent},
		{"not null", &pgconn.PgError{Code: "23502"}, writer.Permanent},
		{"wrapped", fmt.Errorf("copy: %w", &pgconn.PgError{Code: "22P02"}), writer.Permanent},
		{"statement timeout", &pgconn.PgError{Code: "57014", Message: "canceling statement due to statement timeout"}, writer.Temporary},
		{"row pgx could not encode", &pgconn.PgError{Code: "57014", Message: "COPY from stdin failed: unable to encode"}, writer.Permanent},
		{"network", errors.New("read tcp: connection reset by peer"), writer.Temporary},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if got := writer.Classify(tt.err); got != tt.want {
				t.Errorf("Classify(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func newWriter(t testing.TB, pool *pgxpool.Pool, opts ...writer.Option) (*writer.Writer, *collectormetrics.Metrics, func()) {
	t.Helper()
	w, m, stop := spillWriter(t, pool, t.TempDir(), opts...)
	return w, m, func() { stop(true) }
}

// spillWriter runs a writer on pool whose spill is in dir (a process's
// state directory: the next writer on dir reads what this one spilled);
// stop ends its Run and waits for it: drained, once every batch (the
// spill's too) is stored, or after 30 s; else at once (ctx cancelled: the
// batches in memory spilled).
func spillWriter(t testing.TB, pool *pgxpool.Pool, dir string, opts ...writer.Option) (*writer.Writer, *collectormetrics.Metrics, func(drained bool)) {
	t.Helper()
	sp, err := spill.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := collectormetrics.New()
	opts = append([]writer.Option{writer.WithMetrics(m), writer.WithLogger(slog.New(slog.NewTextHandler(t.Output(), nil)))}, opts...)
	w := writer.New(pool, sp, opts...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		w.Run(ctx)
		close(done)
	}()
	return w, m, func(drained bool) {
		if drained {
			w.Close()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
			}
		}
		cancel()
		<-done
		sp.Close()
	}
}

func batch(target string, ts int64, n int) *rows.Batch {
	b := &rows.Batch{ID: rows.NewBatchID(), Collector: "c", Target: target}
	for i := range n {
		id := rows.SeriesID(target, fmt.Sprintf("/x[i=%d]", i))
		b.Series = append(b.Series, rows.Series{ID: id, Target: target, Path: fmt.Sprintf("/x[i=%d]", i), FirstSeen: ts})
		b.Samples = append(b.Samples, rows.Sample{TS: ts, SeriesID: id, Kind: rows.ValInt, Int: int64(i)})
	}
	return b
}

func count(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLedgerSkipsReplay: a batch stored once and handed in again (a spill
// replayed after a crash) is recognised by its ledger row; a different
// batch that drew the same id gets a new one and is stored.
func TestLedgerSkipsReplay(t *testing.T) {
	pool, _ := pgtest.New(t)
	w, m, stop := newWriter(t, pool)
	b := batch("sw1", time.Now().UnixNano(), 10)
	w.Enqueue(b)
	replay := *b
	w.Enqueue(&replay)
	clash := batch("sw2", time.Now().UnixNano(), 5)
	clash.ID = b.ID
	w.Enqueue(clash)
	stop()
	if n := count(t, pool, `SELECT count(*) FROM samples`); n != 15 {
		t.Errorf("%d samples, want 15 (10 once, 5 of the clashing batch)", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM ingest_ledger`); n != 2 {
		t.Errorf("%d ledger rows, want 2", n)
	}
	if got := testutil.ToFloat64(m.Batches.WithLabelValues("replayed")); got != 1 {
		t.Errorf("batches_total{outcome=replayed} = %v, want 1", got)
	}
	if clash.ID == b.ID {
		t.Error("the clashing batch kept the id")
	}
}

// badBatch is a batch of 100 samples and 2 events of which 2 samples
// (numbers out of range, NUL in text) and an event (bad JSON) are refused.
func badBatch() *rows.Batch {
	b := batch("sw1", time.Now().UnixNano(), 100)
	b.Samples[17] = rows.Sample{TS: b.Samples[17].TS, SeriesID: b.Samples[17].SeriesID, Kind: rows.ValText, Text: "a\x00b"}
	b.Samples[63] = rows.Sample{TS: b.Samples[63].TS, SeriesID: b.Samples[63].SeriesID, Kind: rows.ValNum, Text: "not-a-number"}
	b.Events = []rows.Event{{TS: b.Samples[0].TS, Target: "sw1", Kind: "cnp", Details: "{}"}, {TS: b.Samples[0].TS, Target: "sw1", Kind: "cnp", Details: "{bad json"}}
	return b
}

// TestBadRowsSplitOut: several bad rows in one batch (numbers out of
// range, NUL in text) go to dead_letters, one each; every other row is
// stored and latest has the good values.
func TestBadRowsSplitOut(t *testing.T) {
	pool, _ := pgtest.New(t)
	w, m, stop := newWriter(t, pool)
	b := badBatch()
	w.Enqueue(b)
	stop()
	if n := count(t, pool, `SELECT count(*) FROM samples`); n != 98 {
		t.Errorf("%d samples, want 98", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM events`); n != 1 {
		t.Errorf("%d events, want 1", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM dead_letters`); n != 3 {
		t.Errorf("%d dead letters, want 3", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM latest`); n != 98 {
		t.Errorf("%d latest rows, want 98", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM ingest_ledger WHERE batch_id = $1`, b.ID); n != 1 {
		t.Errorf("ledger rows of the batch: %d, want 1", n)
	}
	if got := testutil.ToFloat64(m.Batches.WithLabelValues("partial")); got != 1 {
		t.Errorf("batches_total{outcome=partial} = %v, want 1", got)
	}
}

// TestSeriesFollowTheModel: a series stored by a collector of an earlier
// model revision (flow-table learn-failures in "entries" before
// 2026-12-06) takes the unit and type of the revision the collector runs
// when it writes the series again, keeping its first_seen; a row without
// a type (undescribed) leaves them as stored; a batch naming one series
// twice is stored (the upsert touches each row once).
func TestSeriesFollowTheModel(t *testing.T) {
	pool, _ := pgtest.New(t)
	ctx := context.Background()
	const path = "/lhcnp/flow-table/state/counters/learn-failures"
	id := rows.SeriesID("sw1", path)
	first := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	if _, err := pool.Exec(ctx, `INSERT INTO series (id, target, path, schema_path, keys, yang_type, unit, first_seen)
		VALUES ($1, 'sw1', $2, $2, '{}', 'counter64', 'entries', $3)`, id, path, first); err != nil {
		t.Fatal(err)
	}
	unit := func() (string, string, time.Time) {
		var typ, u string
		var fs time.Time
		if err := pool.QueryRow(ctx, `SELECT yang_type, unit, first_seen FROM series WHERE id = $1`, id).Scan(&typ, &u, &fs); err != nil {
			t.Fatal(err)
		}
		return typ, u, fs
	}
	write := func(s rows.Series, twice bool) {
		t.Helper()
		w, _, stop := newWriter(t, pool)
		now := time.Now().UnixNano()
		b := &rows.Batch{ID: rows.NewBatchID(), Collector: "c", Target: "sw1", Series: []rows.Series{s}}
		if twice {
			b.Series = append(b.Series, s)
		}
		b.Samples = []rows.Sample{{TS: now, SeriesID: id, Kind: rows.ValInt, Int: 7}}
		w.Enqueue(b)
		stop()
	}
	s := rows.Series{ID: id, Target: "sw1", Path: path, SchemaPath: path, YangType: "counter64", Unit: "packets", FirstSeen: time.Now().UnixNano()}
	write(s, true)
	if typ, u, fs := unit(); typ != "counter64" || u != "packets" || !fs.Equal(first) {
		t.Errorf("after the new revision's write: %s %s first seen %v; want counter64 packets %v", typ, u, fs, first)
	}
	s.YangType, s.Unit = "", ""
	write(s, false)
	if typ, u, _ := unit(); typ != "counter64" || u != "packets" {
		t.Errorf("after an undescribed row: %s %s, want counter64 packets kept", typ, u)
	}
	if n := count(t, pool, `SELECT count(*) FROM samples WHERE series_id = $1`, id); n != 2 {
		t.Errorf("%d samples, want 2 (one per batch)", n)
	}
}
