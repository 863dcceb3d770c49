package writer

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/collector/spill"
	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// TestEventsStoredOnce: an event met again in another batch (a restart, a
// handover, a replay under a new batch id: the ledger does not know it) is
// not stored again, whichever way its batch is written — a group commit, a
// batch alone, a batch with a bad row split out under savepoints — and is
// counted in event_conflicts_total.
func TestEventsStoredOnce(t *testing.T) {
	pool, _ := pgtest.New(t)
	sp, err := spill.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := collectormetrics.New()
	w := New(pool, sp, WithMetrics(m), WithLogger(slog.New(slog.NewTextHandler(t.Output(), nil))))
	ctx := context.Background()
	base := time.Now().UnixNano()
	cnp := func(queue int64, at int64, action string) rows.Event {
		return rows.Event{TS: base + at, Target: "sw1", Kind: "cnp", Interface: "wan", Queue: queue, Action: action, Details: "{}"}
	}
	mk := func(events ...rows.Event) *rows.Batch {
		b := &rows.Batch{ID: rows.NewBatchID(), Collector: "c", Target: "sw1", Events: events}
		id := rows.SeriesID("sw1", "/x")
		b.Series = []rows.Series{{ID: id, Target: "sw1", Path: "/x", FirstSeen: base}}
		b.Samples = []rows.Sample{{TS: base + int64(len(events)), SeriesID: id, Kind: rows.ValInt}}
		return b
	}
	tests := []struct {
		desc      string
		store     func() error
		wantRows  int64 // events in the table after
		conflicts float64
	}{
		{"a group: the same CNP in two batches, another CNP", func() error {
			return w.storeGroup(ctx, []*rows.Batch{mk(cnp(0, 1000, "PAUSE")), mk(cnp(0, 1000, "PAUSE"), cnp(1, 1000, "PAUSE"))})
		}, 2, 1},
		{"a batch alone, its CNP stored before", func() error { return w.store(ctx, mk(cnp(0, 1000, "PAUSE"))) }, 2, 2},
		{"another CNP of the same queue is another event", func() error { return w.store(ctx, mk(cnp(0, 2000, "RESUME"))) }, 3, 2},
		{"a batch with a bad row, split out: its stored CNP is not stored again", func() error {
			b := mk(cnp(0, 2000, "RESUME"), cnp(1, 3000, "REDUCE"))
			b.Samples[0].Kind, b.Samples[0].Text = rows.ValText, "a\x00b"
			return w.storeSafe(ctx, b)
		}, 4, 3},
	}
	for _, tt := range tests {
		if err := tt.store(); err != nil {
			t.Fatalf("%s: %v", tt.desc, err)
		}
		var n int64
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprintf("%d events, %v conflicts", n, testutil.ToFloat64(m.EventConflicts))
		if diff := cmp.Diff(fmt.Sprintf("%d events, %v conflicts", tt.wantRows, tt.conflicts), got); diff != "" {
			t.Errorf("%s (-want, +got):\n%s", tt.desc, diff)
		}
	}
	var dups int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM events GROUP BY target, kind, ts, interface, queue HAVING count(*) > 1) d`).Scan(&dups); err != nil {
		t.Fatal(err)
	}
	if dups != 0 {
		t.Errorf("%d events stored more than once", dups)
	}
}
