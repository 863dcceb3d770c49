package migrations_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/migrations"
)

// retentionFixture is a fixture on a fresh database migrated with manager,
// its t0 five UTC days ago at midnight, with daily partitions for the days
// since then (as a collector running all along would have had made).
func retentionFixture(t *testing.T, manager string) *fixture {
	ctx := context.Background()
	dsn := emptyDB(t)
	if err := migrations.Up(ctx, connect(t, dsn), migrations.WithPartitionManager(manager)); err != nil {
		t.Fatal(err)
	}
	return dailyFixture(t, pgtest.Pool(t, dsn))
}

// retentionDB is a database a retention test runs on: desc names it,
// fixture makes a dailyFixture on a fresh one.
type retentionDB struct {
	desc    string
	fixture func(t *testing.T) *fixture
}

// retentionDBs are a database migrated with each partition manager and a
// Citus coordinator's.
func retentionDBs() []retentionDB {
	var dbs []retentionDB
	for _, manager := range managers {
		dbs = append(dbs, retentionDB{manager, func(t *testing.T) *fixture { return retentionFixture(t, manager) }})
	}
	return append(dbs, retentionDB{"citus", func(t *testing.T) *fixture {
		pool, _ := pgtest.NewCitus(t)
		return dailyFixture(t, pool)
	}})
}

// dailyFixture is a fixture on pool, its t0 five UTC days ago at midnight,
// with daily partitions for the days since then (as a collector running all
// along would have had made).
func dailyFixture(t *testing.T, pool *pgxpool.Pool) *fixture {
	t0 := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -5)
	for d := range 4 {
		if _, err := pool.Exec(context.Background(), `SELECT lhcnp_create_daily_partition('samples', $1::date)`, t0.AddDate(0, 0, d).Format("2006-01-02")); err != nil {
			t.Fatal(err)
		}
	}
	return &fixture{t: t, pool: pool, t0: t0, ids: map[string]int64{}}
}

// viewRows is every view's answer (as JSON rows) for the rows a retention
// keeps and whose inputs it keeps: from horizon for the views that read the
// leaves at an instant; from after the first kept sample of each counter
// for the counter views (the first kept sample's increase needs the
// previous one, which is dropped).
func viewRows(t *testing.T, pool *pgxpool.Pool, horizon time.Time) map[string][]string {
	t.Helper()
	// Every counter row from the horizon on: the first kept sample of each
	// counter keeps its increase (lhcnp_carry_counters, schema 17).
	counters := horizon
	queries := map[string]struct {
		sql  string
		from time.Time
	}{
		"queue_congestion":         {`SELECT * FROM queue_congestion WHERE ts >= $1 ORDER BY target, interface, queue, ts`, horizon},
		"queue_congestion_between": {`SELECT * FROM queue_congestion_between($1, now() + interval '1 day') ORDER BY target, interface, queue, ts`, horizon},
		"queue_utilisation":        {`SELECT * FROM queue_utilisation WHERE ts > $1 ORDER BY target, interface, queue, ts`, counters},
		"drops_and_pauses":         {`SELECT * FROM drops_and_pauses WHERE ts > $1 ORDER BY target, interface, queue, ts`, counters},
		"notifications_per_second": {`SELECT * FROM notifications_per_second WHERE second > $1 ORDER BY target, interface, queue, action, second`, counters},
		"counter_increases":        {`SELECT * FROM counter_increases WHERE ts >= $1 ORDER BY series_id, ts`, counters},
		"lhcnp_speed_at": {`SELECT t, lhcnp_speed_at('sim', t) AS speed
			FROM generate_series($1, now(), interval '30 minutes') t ORDER BY t`, horizon},
		"lhcnp_leaf_at (port rate)": {`SELECT t, r.value_num FROM generate_series($1, now(), interval '30 minutes') t
			LEFT JOIN LATERAL lhcnp_leaf_at('sim', '{"name": "wan"}', '/lhcnp/interfaces/interface/state/effective-port-rate', t) r ON true
			ORDER BY t`, horizon},
	}
	got := map[string][]string{}
	for name, q := range queries {
		rs := query[struct{ Row string }](t, pool, `SELECT row_to_json(v)::text AS row FROM (`+q.sql+`) v`, q.from)
		for _, r := range rs {
			got[name] = append(got[name], r.Row)
		}
		if len(got[name]) == 0 {
			t.Fatalf("%s: no rows", name)
		}
	}
	return got
}

// TestRetentionKeepsValuesRead: a switch's engine speed and port rate
// changed in days the retention then drops (and its speed changes again
// later); so did its queue's K_max, K_min, growth rate, peak depth and
// marking rate (deleted, at last). After the maintenance pass that drops
// those days, with either partition manager, every view answers for the
// kept rows exactly as before: the last value of each leaf the views read
// at an instant, and of each counter (with the time it was sampled), was
// carried to the oldest kept day's start (flag bit 3); the first kept
// sample of a counter keeps its increase.
// Without it the utilisation lost its port rate (NULL) and the rates the
// switch's speed (read as the next remaining value, or latest's).
func TestRetentionKeepsValuesRead(t *testing.T) {
	for _, manager := range managers {
		t.Run(manager, func(t *testing.T) {
			f := retentionFixture(t, manager)
			ctx := context.Background()
			const h = time.Hour
			queue := func(name string) int64 { return f.series("sim", queueState+name, "wan", 0) }
			speed := f.series("sim", engineSpeed, "", -1)
			f.add(speed, 1*h, 0.05, flagSync)
			f.add(speed, 25*h, 0.5, 0)
			f.add(speed, 26*h, nil, flagDelete) // skipped by the views: they read 0.5 on
			f.add(speed, 84*h, 2.0, 0)          // a kept day
			port := f.series("sim", ifState+"effective-port-rate", "wan", -1)
			f.add(port, 1*h, 100_000_000, flagSync)
			f.add(port, 25*h, 40_000_000, 0)
			f.add(queue("effective-kmax"), 0, 1000, flagSync)
			f.add(queue("effective-kmax"), 27*h, 2000, 0)
			f.add(queue("effective-kmin"), 2*h, 500, flagSync)
			f.add(queue("ecn-marking-rate"), 2*h, num("12.5"), flagSync)
			f.add(queue("ecn-marking-rate"), 30*h, nil, flagDelete)
			f.add(queue("peak-queue-depth"), 4*h, 9000, flagSync)
			f.add(queue("queue-growth-rate"), 5*h, -100, flagSync)
			f.add(queue("queue-growth-rate"), 60*h, 300, 0)
			// Counters and depth every 6 hours, until an hour before today.
			for k := 0; k < 20; k++ {
				at := 30*time.Minute + time.Duration(k)*6*h
				f.add(queue("counters/cnp-notify-sent"), at, 10*k, 0)
				f.add(queue("counters/dropped-packets"), at, 2*k, 0)
				f.add(queue("counters/pfc-pause-frames"), at, k, 0)
				f.add(queue("counters/bytes"), at, 2_700_000_000*k, 0) // 1 Mb/s
				f.add(queue("queue-depth"), at+150*time.Minute, 100*k, 0)
				// A counter sampled on the clock's six hours: one sample
				// exactly at the horizon, the day's start (schema 18).
				f.add(queue("counters/cnp-pause-sent"), time.Duration(k)*6*h, k, 0)
			}
			f.commit()

			var horizon time.Time
			if err := f.pool.QueryRow(ctx, `SELECT lhcnp_retention_horizon('3 days')`).Scan(&horizon); err != nil {
				t.Fatal(err)
			}
			if want := f.t0.AddDate(0, 0, 2); !horizon.Equal(want) {
				t.Fatalf("retention horizon of 3 days %v, want %v (the start of the day 3 days ago)", horizon, want)
			}
			before := viewRows(t, f.pool, horizon)
			if err := migrations.SetRetention(ctx, f.pool, 3*24*time.Hour); err != nil {
				t.Fatal(err)
			}
			if err := migrations.Maintain(ctx, f.pool); err != nil {
				t.Fatal(err)
			}
			if n := count(t, connect(t, f.pool.Config().ConnString()), `SELECT count(*) FROM samples WHERE ts < $1`, horizon); n != 0 {
				t.Fatalf("%d samples older than the horizon after the pass", n)
			}
			after := viewRows(t, f.pool, horizon)
			if d := cmp.Diff(before, after); d != "" {
				t.Errorf("the views for the kept rows changed with the retention (-before +after):\n%s", d)
			}

			// A counter read at exactly the horizon, where its carried row
			// (the value before the horizon) lies beside a real sample:
			// the real one (schema 19).
			var atHorizon int64
			if err := f.pool.QueryRow(ctx, `SELECT value_num::bigint FROM lhcnp_leaf_at('sim', '{"id": "0", "name": "wan"}', $1, $2)`,
				queueState+"counters/cnp-pause-sent", horizon).Scan(&atHorizon); err != nil {
				t.Fatal(err)
			} else if atHorizon != 8 {
				t.Errorf("lhcnp_leaf_at(cnp-pause-sent) at the horizon: %d, want the sample there (8), not the carried value (7)", atHorizon)
			}

			// What they say: the carried values, and the kept change.
			type util struct {
				Ts                 time.Time
				PortRateBitsPerSec *int64 `db:"port_rate_bps"`
				Speed              float64
			}
			for _, u := range query[util](t, f.pool, `SELECT ts, port_rate_bps, speed FROM queue_utilisation ORDER BY ts`) {
				wantSpeed := 0.5
				if !u.Ts.Before(f.t0.Add(84 * h)) {
					wantSpeed = 2
				}
				if u.PortRateBitsPerSec == nil || *u.PortRateBitsPerSec != 40_000_000 || u.Speed != wantSpeed {
					t.Errorf("queue_utilisation at %v: port rate %v, speed %v; want 40000000, %v", u.Ts, fmtPtr(u.PortRateBitsPerSec), u.Speed, wantSpeed)
				}
			}
			type carried struct {
				SchemaPath string
				Ts         time.Time
				Value      *string
				Flags      int16
			}
			got := query[carried](t, f.pool, `SELECT se.schema_path, x.ts, COALESCE(x.v_text, x.v_int::text, x.v_num::text, x.v_float::text) AS value, x.flags
				FROM samples x JOIN series se ON se.id = x.series_id WHERE x.flags & 8 <> 0 ORDER BY se.schema_path COLLATE "C"`)
			str := func(s string) *string { return &s }
			want := []carried{
				{engineSpeed, horizon, str("0.5"), 8},
				{queueState + "counters/bytes", horizon, str("18900000000"), 8},
				{queueState + "counters/cnp-notify-sent", horizon, str("70"), 8},
				{queueState + "counters/cnp-pause-sent", horizon, str("7"), 8},
				{queueState + "counters/dropped-packets", horizon, str("14"), 8},
				{queueState + "counters/pfc-pause-frames", horizon, str("7"), 8},
				{queueState + "ecn-marking-rate", horizon, nil, flagDelete | 8},
				{queueState + "effective-kmax", horizon, str("2000"), 8},
				{queueState + "effective-kmin", horizon, str("500"), flagSync | 8},
				{queueState + "peak-queue-depth", horizon, str("9000"), flagSync | 8},
				{queueState + "queue-growth-rate", horizon, str("-100"), flagSync | 8},
				{ifState + "effective-port-rate", horizon, str("40000000"), 8},
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("carried samples (-want +got):\n%s", d)
			}

			// Another pass carries nothing more (the values are at the
			// horizon already).
			if err := migrations.Maintain(ctx, f.pool); err != nil {
				t.Fatal(err)
			}
			if n := len(query[carried](t, f.pool, `SELECT '' AS schema_path, ts, NULL AS value, flags FROM samples WHERE flags & 8 <> 0`)); n != len(want) {
				t.Errorf("%d carried samples after a second pass, want %d", n, len(want))
			}
		})
	}
}

func fmtPtr[T any](v *T) string {
	if v == nil {
		return "NULL"
	}
	return fmt.Sprint(*v)
}
