package migrations_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// TestViewColumnTypes: the views' numeric columns are the ones
// docs/collector.md ("Views") names: the percentages and ratios, the
// counters queue_latest and counter_increases give as the switch sent them
// (a counter64 runs to 2^64−1), and series_values' value; every other
// integer column is bigint (lhcnp_int), on one node and on Citus alike.
// The page said every integer column was bigint.
func TestViewColumnTypes(t *testing.T) {
	t.Parallel()
	want := []string{
		"counter_increases.increase", "counter_increases.value",
		"queue_congestion.ecn_marking_rate_percent",
		"queue_latest.alpha", "queue_latest.cnp_notify_sent", "queue_latest.cnp_pause_sent",
		"queue_latest.cnp_rate_reduce_sent", "queue_latest.cnp_resume_sent", "queue_latest.dropped_packets",
		"queue_latest.ecn_marking_rate_percent", "queue_latest.pfc_pause_frames", "queue_latest.v_ecn_percent",
		"series_values.value_num",
	}
	for _, tt := range []struct {
		desc  string
		newDB func(testing.TB) (*pgxpool.Pool, string)
	}{
		{desc: "one node", newDB: pgtest.New},
		{desc: "citus", newDB: pgtest.NewCitus},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			pool, _ := tt.newDB(t)
			rows, err := pool.Query(context.Background(), `
				SELECT table_name || '.' || column_name FROM information_schema.columns
				WHERE table_schema = 'public' AND data_type = 'numeric' AND table_name IN
				  ('queue_congestion', 'notifications_per_second', 'drops_and_pauses', 'queue_utilisation',
				   'current_config', 'queue_latest', 'series_values', 'counter_increases')
				ORDER BY 1`)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("numeric columns of the views (-want +got):\n%s", diff)
			}
		})
	}
}
