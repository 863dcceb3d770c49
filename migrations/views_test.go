package migrations_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/internal/pgtest"
)

const (
	queueState = "/lhcnp/interfaces/interface/queues/queue/state/"
	ifState    = "/lhcnp/interfaces/interface/state/"
	queueConf  = "/lhcnp/interfaces/interface/queues/queue/config/"
)

// Flags of samples, as the collector writes them.
const (
	flagSync   = 1
	flagDelete = 2
	flagReset  = 4
)

// num is a decimal value for v_num (decimal64 leaves, uint64 above int64).
type num string

// fixture writes series and samples through the columns the collector uses
// (COPY into samples, an upsert into latest).
type fixture struct {
	t      *testing.T
	pool   *pgxpool.Pool
	t0     time.Time
	nextID int64
	ids    map[string]int64
	rows   [][]any
}

func newFixture(t *testing.T) *fixture {
	pool, _ := pgtest.New(t)
	return newFixtureOn(t, pool, fixtureStart())
}

// fixtureStart is whole seconds, a minute ago: inside today's partitions,
// and the per-second buckets of the views line up with the offsets of the
// workloads.
func fixtureStart() time.Time { return time.Now().Truncate(time.Second).Add(-time.Minute) }

// newFixtureOn writes into pool's database with samples at t0 and after.
func newFixtureOn(t *testing.T, pool *pgxpool.Pool, t0 time.Time) *fixture {
	return &fixture{t: t, pool: pool, t0: t0, ids: map[string]int64{}}
}

// series returns the id of (target, leaf) creating the row on first use.
// leaf is a schema path; iface and queue are its list keys ("" and -1 for
// none).
func (f *fixture) series(target, schemaPath, iface string, queue int) int64 {
	path, keys := schemaPath, map[string]string{}
	if iface != "" {
		path = replaceOnce(path, "/interface/", fmt.Sprintf("/interface[name=%s]/", iface))
		keys["name"] = iface
	}
	if queue >= 0 {
		path = replaceOnce(path, "/queue/", fmt.Sprintf("/queue[id=%d]/", queue))
		keys["id"] = fmt.Sprint(queue)
	}
	k := target + " " + path
	if id, ok := f.ids[k]; ok {
		return id
	}
	f.nextID++
	_, err := f.pool.Exec(context.Background(),
		`INSERT INTO series (id, target, path, schema_path, keys) VALUES ($1, $2, $3, $4, $5)`,
		f.nextID, target, path, schemaPath, keys)
	if err != nil {
		f.t.Fatal(err)
	}
	f.ids[k] = f.nextID
	return f.nextID
}

func replaceOnce(s, old, new string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + new + s[i+len(old):]
		}
	}
	return s
}

// add queues a sample of series id at t0+at.
func (f *fixture) add(id int64, at time.Duration, value any, flags int16) {
	row := []any{f.t0.Add(at), id, nil, nil, nil, nil, nil, flags, int64(1)}
	switch v := value.(type) {
	case int:
		row[2] = int64(v)
	case float64:
		row[3] = v
	case num:
		var n pgtype.Numeric
		if err := n.Scan(string(v)); err != nil {
			f.t.Fatal(err)
		}
		row[4] = n
	case bool:
		row[5] = v
	case string:
		row[6] = v
	case nil:
	default:
		f.t.Fatalf("value %v of type %T", value, value)
	}
	f.rows = append(f.rows, row)
}

// commit COPYs the queued samples and brings latest up to date.
func (f *fixture) commit() {
	ctx := context.Background()
	_, err := f.pool.CopyFrom(ctx, pgx.Identifier{"samples"},
		[]string{"ts", "series_id", "v_int", "v_float", "v_num", "v_bool", "v_text", "flags", "batch_id"},
		pgx.CopyFromRows(f.rows))
	if err != nil {
		f.t.Fatal(err)
	}
	f.rows = nil
	_, err = f.pool.Exec(ctx, `
		INSERT INTO latest (series_id, ts, v_int, v_float, v_num, v_bool, v_text, flags)
		SELECT DISTINCT ON (series_id) series_id, ts, v_int, v_float, v_num, v_bool, v_text, flags
		FROM samples ORDER BY series_id, ts DESC
		ON CONFLICT (series_id) DO UPDATE SET ts = EXCLUDED.ts, v_int = EXCLUDED.v_int,
			v_float = EXCLUDED.v_float, v_num = EXCLUDED.v_num, v_bool = EXCLUDED.v_bool,
			v_text = EXCLUDED.v_text, flags = EXCLUDED.flags`)
	if err != nil {
		f.t.Fatal(err)
	}
}

func query[T any](t *testing.T, pool *pgxpool.Pool, sql string, args ...any) []T {
	t.Helper()
	rows, err := pool.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByName[T])
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return got
}

func p[T any](v T) *T { return &v }

const ms = time.Millisecond

// congestionWorkload: the samples of TestQueueCongestion, committed.
func congestionWorkload(f *fixture) {
	leaf := func(target, name string, queue int) int64 { return f.series(target, queueState+name, "n1-n2", queue) }
	qd := leaf("sw1", "queue-depth", 0)
	for i, v := range []int{100, 2000, 5000, 300} {
		f.add(qd, time.Duration(i)*500*ms, v, 0)
	}
	f.add(leaf("sw1", "effective-kmax", 0), 0, 4000, flagSync)
	f.add(leaf("sw1", "effective-kmax", 0), 1200*ms, 6000, 0)
	f.add(leaf("sw1", "effective-kmin", 0), 0, 1000, flagSync)
	f.add(leaf("sw1", "effective-kmin", 0), 1400*ms, nil, flagDelete)
	f.add(leaf("sw1", "queue-growth-rate", 0), 0, -200, 0)
	f.add(leaf("sw1", "ecn-marking-rate", 0), 500*ms, num("12.5"), 0)
	f.add(leaf("sw1", "peak-queue-depth", 0), 1000*ms, 5000, 0)
	// Another queue of the same interface, and the same queue on another
	// switch: their values must not leak into queue 0 of sw1.
	f.add(leaf("sw1", "queue-depth", 1), 0, 7, 0)
	f.add(leaf("sw1", "effective-kmax", 1), 0, 9999, 0)
	f.add(leaf("sw2", "queue-depth", 0), 0, 8, 0)
	f.add(leaf("sw2", "effective-kmax", 0), 0, 1, 0)
	// A bogus switch: a depth beyond bigint and a queue id that is no
	// number. Its row shows NULLs; the view does not fail.
	bogus := f.series("sw3", queueState+"queue-depth", "n1-n2", 0)
	if _, err := f.pool.Exec(context.Background(), `UPDATE series SET keys = '{"name": "n1-n2", "id": "x"}' WHERE id = $1`, bogus); err != nil {
		f.t.Fatal(err)
	}
	f.add(bogus, 0, num("18446744073709551615"), 0)
	f.commit()
}

// TestQueueCongestion: one row per queue-depth sample; K_max, K_min and the
// other leaves carried forward from their latest sample at or before it; a
// deleted leaf reads NULL; queues and targets do not mix.
func TestQueueCongestion(t *testing.T) {
	f := newFixture(t)
	congestionWorkload(f)

	type row struct {
		Ts                       time.Time
		Target                   string
		Interface                string
		Queue                    *int32
		QueueDepthBytes          *int64
		PeakQueueDepthBytes      *int64
		KmaxBytes                *int64
		KminBytes                *int64
		GrowthRateBytesPerSecond *int64
		EcnMarkingRatePercent    *float64
	}
	got := query[row](t, f.pool, `SELECT ts, target, interface, queue, queue_depth_bytes, peak_queue_depth_bytes,
		kmax_bytes, kmin_bytes, growth_rate_bytes_per_second, ecn_marking_rate_percent::float8 AS ecn_marking_rate_percent
		FROM queue_congestion ORDER BY target, queue, ts`)
	at := func(d time.Duration) time.Time { return f.t0.Add(d) }
	q0, q1 := p[int32](0), p[int32](1)
	want := []row{
		{at(0), "sw1", "n1-n2", q0, p[int64](100), nil, p[int64](4000), p[int64](1000), p[int64](-200), nil},
		{at(500 * ms), "sw1", "n1-n2", q0, p[int64](2000), nil, p[int64](4000), p[int64](1000), p[int64](-200), p(12.5)},
		{at(1000 * ms), "sw1", "n1-n2", q0, p[int64](5000), p[int64](5000), p[int64](4000), p[int64](1000), p[int64](-200), p(12.5)},
		{at(1500 * ms), "sw1", "n1-n2", q0, p[int64](300), p[int64](5000), p[int64](6000), nil, p[int64](-200), p(12.5)},
		{at(0), "sw1", "n1-n2", q1, p[int64](7), nil, p[int64](9999), nil, nil, nil},
		{at(0), "sw2", "n1-n2", q0, p[int64](8), nil, p[int64](1), nil, nil, nil},
		{at(0), "sw3", "n1-n2", nil, nil, nil, nil, nil, nil, nil},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("queue_congestion (-want +got):\n%s", diff)
	}

	// The windowed function gives the same rows: for the whole run, and
	// for a window that starts after K_max, K_min and the growth rate were
	// last sampled (their values come from before the window) and after
	// K_min was deleted.
	between := `SELECT ts, target, interface, queue, queue_depth_bytes, peak_queue_depth_bytes,
		kmax_bytes, kmin_bytes, growth_rate_bytes_per_second, ecn_marking_rate_percent::float8 AS ecn_marking_rate_percent
		FROM queue_congestion_between($1, $2) ORDER BY target, queue, ts`
	got = query[row](t, f.pool, between, at(-time.Hour), at(time.Hour))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("queue_congestion_between the whole run (-want +got):\n%s", diff)
	}
	got = query[row](t, f.pool, between, at(1000*ms), at(1600*ms))
	if diff := cmp.Diff(want[2:4], got); diff != "" {
		t.Errorf("queue_congestion_between a later window (-want +got):\n%s", diff)
	}
	got = query[row](t, f.pool, between, at(1450*ms), at(1600*ms))
	if diff := cmp.Diff(want[3:4], got); diff != "" {
		t.Errorf("queue_congestion_between a window after K_min's delete (-want +got):\n%s", diff)
	}
}

// counterWorkload: the samples of TestCounterViews, committed.
func counterWorkload(f *fixture) {
	counter := func(name string) int64 { return f.series("sw1", queueState+"counters/"+name, "n1-n2", 0) }
	notify := counter("cnp-notify-sent")
	f.add(notify, 0, 10, flagSync)
	f.add(notify, 500*ms, 15, 0)
	f.add(notify, 1000*ms, 25, 0)
	f.add(notify, 1500*ms, 3, flagReset) // the switch restarted
	f.add(notify, 2500*ms, 2, 0)         // went backwards without the flag
	pause := counter("cnp-pause-sent")
	f.add(pause, 0, 0, 0)
	f.add(pause, 1000*ms, 4, 0)
	dropped, pfc := counter("dropped-packets"), counter("pfc-pause-frames")
	f.add(dropped, 0, 0, 0)
	f.add(dropped, 1000*ms, 10, 0)
	f.add(pfc, 0, 5, 0)
	f.add(pfc, 1000*ms, 5, 0)
	bytes := counter("bytes")
	f.add(bytes, 0, 0, 0)
	f.add(bytes, 1000*ms, 1_250_000, 0)
	f.add(f.series("sw1", ifState+"effective-port-rate", "n1-n2", -1), 0, 100_000_000, 0)
	f.commit()
}

// TestCounterViews: notifications per second per action, drops and pauses
// and utilisation, from successive counter samples; a reset (flagged, or a
// counter going backwards) counts from zero and never gives a negative rate.
func TestCounterViews(t *testing.T) {
	f := newFixture(t)
	counterWorkload(f)

	type nps struct {
		Second         time.Time
		Action         string
		Notifications  int64
		SampledSeconds float64
		RatePerSecond  float64
		CounterReset   bool
	}
	got := query[nps](t, f.pool, `SELECT second, action, notifications, sampled_seconds, rate_per_second, counter_reset
		FROM notifications_per_second WHERE target = 'sw1' AND interface = 'n1-n2' AND queue = 0 ORDER BY second, action`)
	at := func(d time.Duration) time.Time { return f.t0.Add(d) }
	want := []nps{
		{at(0), "NOTIFY", 5, 0.5, 10, false},
		{at(time.Second), "NOTIFY", 13, 1, 13, true},
		{at(time.Second), "PAUSE", 4, 1, 4, false},
		{at(2 * time.Second), "NOTIFY", 2, 1, 2, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notifications_per_second (-want +got):\n%s", diff)
	}
	// The windowed function gives the same rows, and only the window's.
	between := `SELECT second, action, notifications, sampled_seconds, rate_per_second, counter_reset
		FROM notifications_between($1, $2) WHERE target = 'sw1' AND interface = 'n1-n2' AND queue = 0 ORDER BY second, action`
	got = query[nps](t, f.pool, between, at(-time.Second), at(10*time.Second))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notifications_between the whole run (-want +got):\n%s", diff)
	}
	got = query[nps](t, f.pool, between, at(1500*ms), at(2*time.Second))
	if diff := cmp.Diff(want[1:3], got); diff != "" {
		t.Errorf("notifications_between a window from the middle of a second (-want +got):\n%s", diff)
	}

	type dp struct {
		Ts                      time.Time
		DroppedPackets          int64
		PfcPauseFrames          int64
		DroppedPacketsPerSecond *float64
		PfcPauseFramesPerSecond *float64
	}
	gotDP := query[dp](t, f.pool, `SELECT ts, dropped_packets, pfc_pause_frames, dropped_packets_per_second, pfc_pause_frames_per_second
		FROM drops_and_pauses WHERE target = 'sw1' ORDER BY ts`)
	wantDP := []dp{{at(0), 0, 5, nil, nil}, {at(time.Second), 10, 5, p(10.0), p(0.0)}}
	if diff := cmp.Diff(wantDP, gotDP); diff != "" {
		t.Errorf("drops_and_pauses (-want +got):\n%s", diff)
	}

	type util struct {
		Ts                 time.Time
		BitsPerSecond      float64
		PortRateBitsPerSec int64 `db:"port_rate_bps"`
		UtilisationPercent float64
	}
	gotU := query[util](t, f.pool, `SELECT ts, bits_per_second, port_rate_bps, utilisation_percent FROM queue_utilisation`)
	if diff := cmp.Diff([]util{{at(time.Second), 10_000_000, 100_000_000, 10}}, gotU); diff != "" {
		t.Errorf("queue_utilisation (-want +got):\n%s", diff)
	}

	// No view ever shows a negative increase.
	var negative int
	if err := f.pool.QueryRow(context.Background(), `SELECT count(*) FROM counter_increases WHERE increase < 0`).Scan(&negative); err != nil {
		t.Fatal(err)
	}
	if negative != 0 {
		t.Errorf("%d negative increases in counter_increases", negative)
	}
}

// latestWorkload: the samples of TestLatestViews, committed.
func latestWorkload(f *fixture) {
	q := func(leaf string) int64 { return f.series("sw1", queueState+leaf, "n1-n2", 0) }
	c := func(leaf string) int64 { return f.series("sw1", queueConf+leaf, "n1-n2", 0) }
	f.add(c("alpha"), 0, num("0.5"), flagSync)
	f.add(c("alpha"), 2*time.Second, num("0.25"), 0)
	f.add(c("enabled"), 0, true, flagSync)
	f.add(c("kmax-mode"), 0, "ALPHA", flagSync)
	f.add(c("kmax"), 0, 9000, flagSync)
	f.add(c("kmax"), time.Second, nil, flagDelete)
	f.add(q("queue-depth"), 0, 100, 0)
	f.add(q("queue-depth"), time.Second, 300, 0)
	f.add(q("effective-kmax"), 0, 6000, 0)
	f.add(q("ecn-marking-rate"), 0, num("12.5"), 0)
	f.add(q("ecn-marking-active"), 0, true, 0)
	f.add(q("kmax-mode"), 0, "ALPHA", 0)
	f.add(q("last-cnp/congestion-level"), 0, 3, 0)
	f.add(q("congestion-level"), 0, 1, 0)
	f.add(q("counters/cnp-notify-sent"), 0, 2, 0)
	f.add(f.series("sw1", ifState+"effective-rtt-est", "n1-n2", -1), 0, 10000, 0)
	f.add(f.series("sw1", ifState+"buffer-size", "n1-n2", -1), 0, num("64000000"), 0)
	f.add(q("overload-cut"), 0, false, 0)
	f.add(q("overload-cut"), time.Second, true, 0)
	// Queue 1 of a switch that does not publish overload-cut.
	f.add(f.series("sw1", queueState+"queue-depth", "n1-n2", 1), 0, 50, 0)
	f.commit()
}

// TestLatestViews: current_config shows the config leaves as last reported
// (not deleted ones, not state); queue_latest pivots a queue's latest state
// and joins its interface's RTT, port rate and buffer (schema 16); its
// state carries the queue's latest overload-cut, which the tuner and the
// dashboard read as (state ->> 'overload-cut')::boolean: NULL where the
// switch never published the leaf.
func TestLatestViews(t *testing.T) {
	f := newFixture(t)
	latestWorkload(f)

	type cfg struct {
		Path  string
		Value string
	}
	gotCfg := query[cfg](t, f.pool, `SELECT path, value FROM current_config WHERE target = 'sw1' ORDER BY path`)
	base := "/lhcnp/interfaces/interface[name=n1-n2]/queues/queue[id=0]/config/"
	wantCfg := []cfg{{base + "alpha", "0.25"}, {base + "enabled", "true"}, {base + "kmax-mode", "ALPHA"}}
	if diff := cmp.Diff(wantCfg, gotCfg); diff != "" {
		t.Errorf("current_config (-want +got):\n%s", diff)
	}

	type ql struct {
		Target                string
		Interface             string
		Queue                 int32
		Ts                    time.Time
		QueueDepthBytes       *int64
		KmaxBytes             *int64
		KminBytes             *int64
		EcnMarkingRatePercent *float64
		EcnMarkingActive      *bool
		KmaxMode              *string
		CongestionLevel       *int64
		CnpNotifySent         *float64
		RttEstUs              *int64
		PortRateBitsPerSec    *int64 `db:"port_rate_bps"`
		BufferBytes           *int64
		State                 map[string]any
		OverloadCut           *bool
	}
	got := query[ql](t, f.pool, `SELECT target, interface, queue, ts, queue_depth_bytes, kmax_bytes, kmin_bytes,
		ecn_marking_rate_percent::float8 AS ecn_marking_rate_percent, ecn_marking_active, kmax_mode, congestion_level,
		cnp_notify_sent::float8 AS cnp_notify_sent, rtt_est_us, port_rate_bps, buffer_bytes, state,
		(state ->> 'overload-cut')::boolean AS overload_cut
		FROM queue_latest ORDER BY queue`)
	want := []ql{{
		Target: "sw1", Interface: "n1-n2", Queue: 0, Ts: f.t0.Add(time.Second),
		QueueDepthBytes: p[int64](300), KmaxBytes: p[int64](6000), EcnMarkingRatePercent: p(12.5),
		EcnMarkingActive: p(true), KmaxMode: p("ALPHA"), CongestionLevel: p[int64](1), CnpNotifySent: p(2.0),
		RttEstUs: p[int64](10000), BufferBytes: p[int64](64_000_000),
		State: map[string]any{
			"queue-depth": 300.0, "effective-kmax": 6000.0, "ecn-marking-rate": 12.5, "ecn-marking-active": true,
			"kmax-mode": "ALPHA", "last-cnp/congestion-level": 3.0, "congestion-level": 1.0,
			"counters/cnp-notify-sent": 2.0, "overload-cut": true,
		},
		OverloadCut: p(true),
	}, {
		Target: "sw1", Interface: "n1-n2", Queue: 1, Ts: f.t0, QueueDepthBytes: p[int64](50),
		RttEstUs: p[int64](10000), BufferBytes: p[int64](64_000_000), State: map[string]any{"queue-depth": 50.0},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("queue_latest (-want +got):\n%s", diff)
	}
}
