package migrations_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// BenchmarkUtilisation reads ten seconds of one target's queue_utilisation
// out of two targets × 1 000 instants of a queue's bytes counter (with the
// port's rate and the engine's speed as the switches publish them, once),
// through the view with a filter and through queue_utilisation_between,
// on one node and on a Citus coordinator with two workers in the same run
// (docs/scaling.md, Step 3). rows/s is view rows produced per second.
func BenchmarkUtilisation(b *testing.B) {
	one, _ := pgtest.New(b)
	citus, _ := pgtest.NewCitus(b)
	ctx := context.Background()
	end := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, pool := range []*pgxpool.Pool{one, citus} {
		for _, sql := range []string{
			`INSERT INTO series (id, target, path, schema_path, keys)
			 SELECT t * 10 + l.i, 'sw' || t, 'p' || t || l.i, l.sp, l.keys::jsonb
			 FROM generate_series(1, 2) t,
			      (VALUES (1, '/lhcnp/interfaces/interface/queues/queue/state/counters/bytes', '{"name":"wan","id":"0"}'),
			              (2, '/lhcnp/interfaces/interface/state/effective-port-rate', '{"name":"wan"}'),
			              (3, '/lhcnp/global/state/engine-speed', '{}')) l (i, sp, keys)`,
			`INSERT INTO samples (ts, series_id, v_int, batch_id)
			 SELECT $1::timestamptz - (n * interval '100 ms'), t * 10 + 1, 1000000000 - n * 1000, 1
			 FROM generate_series(0, 999) n, generate_series(1, 2) t`,
			`INSERT INTO samples (ts, series_id, v_int, batch_id)
			 SELECT $1::timestamptz - interval '1 hour', t * 10 + 2, 10000000000, 1 FROM generate_series(1, 2) t`,
			`INSERT INTO samples (ts, series_id, v_float, batch_id)
			 SELECT $1::timestamptz - interval '1 hour', t * 10 + 3, 0.2, 1 FROM generate_series(1, 2) t`,
			`ANALYZE samples`,
		} {
			var args []any
			if strings.Contains(sql, "$1") {
				args = append(args, end)
			}
			if _, err := pool.Exec(ctx, sql, args...); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, db := range []struct {
		name string
		pool *pgxpool.Pool
	}{{"one", one}, {"citus", citus}} {
		for _, q := range []struct{ name, sql string }{
			{"view", `SELECT * FROM queue_utilisation WHERE target = 'sw1' AND ts > $1::timestamptz - interval '10 seconds'`},
			{"between", `SELECT * FROM queue_utilisation_between($1::timestamptz - interval '10 seconds', $1 + interval '1 microsecond') WHERE target = 'sw1'`},
		} {
			b.Run(db.name+"/"+q.name, func(b *testing.B) {
				rows := 0
				for b.Loop() {
					r, err := db.pool.Query(ctx, q.sql, end)
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
				b.ReportMetric(float64(rows)/float64(b.N), "rows/op")
				b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}
