package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// viewsWorkload stores the workloads of the views tests into pool, one
// after another ten seconds apart (so that their samples do not collide),
// from t0.
func viewsWorkload(t *testing.T, pool *pgxpool.Pool, t0 time.Time) {
	f := newFixtureOn(t, pool, t0)
	for _, w := range []func(*fixture){congestionWorkload, counterWorkload, latestWorkload} {
		w(f)
		f.t0 = f.t0.Add(10 * time.Second)
	}
}

// rowsOf runs sql and returns its rows as values, or the error as text.
func rowsOf(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) ([][]any, string) {
	t.Helper()
	rows, err := pool.Query(context.Background(), sql, args...)
	if err != nil {
		return nil, err.Error()
	}
	defer rows.Close()
	var got [][]any
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			return nil, err.Error()
		}
		for i, x := range v {
			// Numerics as their text: pgtype.Numeric does not compare.
			if n, ok := x.(pgtype.Numeric); ok {
				if v[i], err = n.Value(); err != nil {
					return nil, err.Error()
				}
			}
		}
		got = append(got, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err.Error()
	}
	return got, ""
}

// viewQueries are the readers compared between one node and Citus: every
// view and window function, with the time arguments as offsets from t0.
var viewQueries = []struct {
	desc string
	sql  string
	args []time.Duration
}{
	{desc: "series_values", sql: `SELECT * FROM series_values ORDER BY series_id, ts`},
	{desc: "counter_increases", sql: `SELECT * FROM counter_increases ORDER BY series_id, ts`},
	{desc: "queue_congestion", sql: `SELECT * FROM queue_congestion ORDER BY target, interface, queue, ts`},
	{desc: "notifications_per_second", sql: `SELECT * FROM notifications_per_second ORDER BY target, interface, queue, second, action`},
	{desc: "drops_and_pauses", sql: `SELECT * FROM drops_and_pauses ORDER BY target, interface, queue, ts`},
	{desc: "queue_utilisation", sql: `SELECT * FROM queue_utilisation ORDER BY target, interface, queue, ts`},
	{desc: "current_config", sql: `SELECT * FROM current_config ORDER BY target, path`},
	{desc: "queue_latest", sql: `SELECT * FROM queue_latest ORDER BY target, interface, queue`},
	{desc: "queue_congestion_between all", sql: `SELECT * FROM queue_congestion_between($1, $2) ORDER BY target, interface, queue, ts`,
		args: []time.Duration{-time.Hour, time.Hour}},
	{desc: "queue_congestion_between later", sql: `SELECT * FROM queue_congestion_between($1, $2) ORDER BY target, interface, queue, ts`,
		args: []time.Duration{1450 * ms, 1600 * ms}},
	{desc: "queue_utilisation_between all", sql: `SELECT * FROM queue_utilisation_between($1, $2) ORDER BY target, interface, queue, ts`,
		args: []time.Duration{-time.Hour, time.Hour}},
	{desc: "queue_utilisation_between later", sql: `SELECT * FROM queue_utilisation_between($1, $2) ORDER BY target, interface, queue, ts`,
		args: []time.Duration{10500 * ms, 11500 * ms}},
	{desc: "notifications_between all", sql: `SELECT * FROM notifications_between($1, $2) ORDER BY target, interface, queue, second, action`,
		args: []time.Duration{-time.Hour, time.Hour}},
	{desc: "notifications_between later", sql: `SELECT * FROM notifications_between($1, $2) ORDER BY target, interface, queue, second, action`,
		args: []time.Duration{11500 * ms, 12 * time.Second}},
	{desc: "lhcnp_speed_at", sql: `SELECT t, lhcnp_speed_at(t, $1) FROM (VALUES ('sw1'), ('sw2'), ('none')) v (t) ORDER BY t`,
		args: []time.Duration{time.Minute}},
	{desc: "lhcnp_speed_of", sql: `SELECT * FROM lhcnp_speed_of('sw1', $1)`, args: []time.Duration{time.Minute}},
	{desc: "lhcnp_leaf_at", sql: `SELECT * FROM lhcnp_leaf_at('sw1', '{"name": "n1-n2", "id": "0"}', '/lhcnp/interfaces/interface/queues/queue/state/effective-kmax', $1)`,
		args: []time.Duration{1300 * ms}},
}

// TestCitusViewsSameAsOneNode stores the views tests' workloads into one
// PostgreSQL and into a Citus coordinator with two workers and compares
// every view's and window function's rows.
func TestCitusViewsSameAsOneNode(t *testing.T) {
	t.Parallel()
	one, _ := pgtest.New(t)
	citus, _ := pgtest.NewCitus(t)
	t0 := fixtureStart()
	viewsWorkload(t, one, t0)
	viewsWorkload(t, citus, t0)
	for _, q := range viewQueries {
		t.Run(q.desc, func(t *testing.T) {
			var args []any
			for _, a := range q.args {
				args = append(args, t0.Add(a))
			}
			want, werr := rowsOf(t, one, q.sql, args...)
			if werr != "" {
				t.Fatalf("one node: %s", werr)
			}
			got, gerr := rowsOf(t, citus, q.sql, args...)
			if gerr != "" {
				t.Fatalf("Citus: %s", gerr)
			}
			if len(want) == 0 {
				t.Errorf("no rows on one node: the workload does not reach %s", q.desc)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("Citus (-one node +Citus):\n%s", d)
			}
		})
	}
}

// TestLeafAtCarried: lhcnp_leaf_at at a time where a counter has a carried
// row (flags 8, schema 18) beside a real sample reads the real sample, a
// value or a delete; where the carried row is alone, its value; on one
// PostgreSQL and on a Citus coordinator (schema 19).
func TestLeafAtCarried(t *testing.T) {
	one, _ := pgtest.New(t)
	citus, _ := pgtest.NewCitus(t)
	t0 := fixtureStart()
	const flagCarried = 8
	for name, pool := range map[string]*pgxpool.Pool{"one node": one, "Citus": citus} {
		f := newFixtureOn(t, pool, t0)
		beside := f.series("sw1", queueState+"counters/cnp-pause-sent", "n1-n2", 0)
		f.add(beside, 0, 5, 0)
		// The carried row after the sample, as lhcnp_maintain writes it.
		f.add(beside, time.Second, 9, 0)
		f.add(beside, time.Second, 5, flagCarried)
		alone := f.series("sw1", queueState+"counters/dropped-packets", "n1-n2", 0)
		f.add(alone, 0, 3, 0)
		f.add(alone, time.Second, 3, flagCarried)
		deleted := f.series("sw1", queueState+"counters/bytes", "n1-n2", 0)
		f.add(deleted, 0, 7, 0)
		f.add(deleted, time.Second, nil, flagDelete)
		f.add(deleted, time.Second, 7, flagCarried)
		f.commit()
		for _, c := range []struct {
			leaf string
			at   time.Duration
			want string
		}{
			{"cnp-pause-sent", time.Second, "9"},
			{"cnp-pause-sent", 2 * time.Second, "9"},
			{"cnp-pause-sent", time.Second - time.Microsecond, "5"},
			{"dropped-packets", time.Second, "3"},
			{"bytes", time.Second, "NULL"},
		} {
			var v *string
			if err := pool.QueryRow(context.Background(),
				`SELECT value_num::text FROM lhcnp_leaf_at('sw1', '{"name": "n1-n2", "id": "0"}', $1, $2)`,
				queueState+"counters/"+c.leaf, t0.Add(c.at)).Scan(&v); err != nil {
				t.Fatalf("%s: %s at %v: %v", name, c.leaf, c.at, err)
			}
			got := "NULL"
			if v != nil {
				got = *v
			}
			if got != c.want {
				t.Errorf("%s: lhcnp_leaf_at(%s) at %v = %s, want %s", name, c.leaf, c.at, got, c.want)
			}
		}
	}
}
