package migrations_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// BenchmarkViews reads the last minute of each view for one queue out of a
// day of history (10 samples/s of queue depth, K_max, growth rate, marking
// rate and three counters: 6 M rows), as a dashboard refresh does; rows/s is
// view rows produced per second.
func BenchmarkViews(b *testing.B) {
	pool, _ := pgtest.New(b)
	ctx := context.Background()
	// The history ends at end; every query reads the minute before it.
	var end time.Time
	if err := pool.QueryRow(ctx, `SELECT now()`).Scan(&end); err != nil {
		b.Fatal(err)
	}
	setup := []string{
		`INSERT INTO series (id, target, path, schema_path, keys)
		 SELECT i, 'sw1', 'p' || i, '/lhcnp/interfaces/interface/queues/queue/state/' || leaf, '{"name":"n1-n2","id":"0"}'
		 FROM unnest(ARRAY['queue-depth', 'effective-kmax', 'queue-growth-rate', 'ecn-marking-rate',
		                   'counters/cnp-notify-sent', 'counters/dropped-packets', 'counters/pfc-pause-frames']) WITH ORDINALITY AS l(leaf, i)`,
		`INSERT INTO samples (ts, series_id, v_int, batch_id)
		 SELECT $1::timestamptz - (n * interval '100 ms'), s, 1000000 - n, 1 FROM generate_series(0, 863999) n, generate_series(1, 7) s`,
		// The switch's speed, as it publishes it once (the rate views
		// divide by it on every row).
		`INSERT INTO series (id, target, path, schema_path, keys)
		 VALUES (8, 'sw1', '/lhcnp/global/state/engine-speed', '/lhcnp/global/state/engine-speed', '{}')`,
		`INSERT INTO samples (ts, series_id, v_float, batch_id) VALUES ($1::timestamptz - interval '1 day', 8, 0.05, 1)`,
		`ANALYZE samples`,
	}
	for _, sql := range setup {
		var args []any
		if strings.Contains(sql, "$1") {
			args = append(args, end)
		}
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			b.Fatal(err)
		}
	}
	for _, bm := range []struct{ name, sql string }{
		{"queue_congestion", `SELECT * FROM queue_congestion WHERE target = 'sw1' AND ts > $1::timestamptz - interval '1 minute'`},
		{"queue_congestion_between", `SELECT * FROM queue_congestion_between($1::timestamptz - interval '1 minute', $1) WHERE target = 'sw1'`},
		{"drops_and_pauses", `SELECT * FROM drops_and_pauses WHERE target = 'sw1' AND ts > $1::timestamptz - interval '1 minute'`},
		{"counter_increases", `SELECT * FROM counter_increases WHERE target = 'sw1' AND ts > $1::timestamptz - interval '1 minute'`},
		{"notifications_per_second", `SELECT * FROM notifications_per_second WHERE target = 'sw1' AND second > $1::timestamptz - interval '1 minute'`},
		{"notifications_between", `SELECT * FROM notifications_between($1::timestamptz - interval '1 minute', $1) WHERE target = 'sw1'`},
	} {
		b.Run(bm.name, func(b *testing.B) {
			rows := 0
			for b.Loop() {
				r, err := pool.Query(ctx, bm.sql, end)
				if err != nil {
					b.Fatal(err)
				}
				for r.Next() {
					rows++
				}
				if err := r.Err(); err != nil {
					b.Fatal(err)
				}
			}
			if rows == 0 {
				b.Fatal("no rows")
			}
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
