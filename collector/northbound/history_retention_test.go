package northbound_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmi/proto/gnmi_ext"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lhcnp/lhcnp/collector/northbound"
	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/migrations"
)

// TestSnapshotAfterRetention: a queue whose configuration (alpha) and
// whose K_max last changed before the retention's horizon, and whose depth
// changed since; its kmax changed before the horizon and again after the
// snapshot's instant. A History snapshot after the horizon must give every
// leaf the switch held at that instant (docs/gnmi-target.md, "History"),
// and no value it cannot know.
//
// The collector stores only changes, so alpha has no sample left after the
// trim (only the leaves of lhcnp_carried_leaves, effective-kmax here, are
// carried to the horizon): snapshotRows reads it from latest, whose ts is
// at or before the instant (unchanged since). kmax's latest is after the
// instant and its older sample is trimmed: its value at the instant is
// unknown, so it is left out rather than served with the later value.
// Before the fix the snapshot left alpha out (this test failed).
func TestSnapshotAfterRetention(t *testing.T) {
	pool, _ := pgtest.New(t)
	ctx := context.Background()
	sch, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Millisecond)
	horizon := now.Add(-10 * time.Minute)
	type leaf struct {
		path  string
		at    time.Duration // before now
		col   string
		value any
	}
	leaves := []leaf{
		{wanQ0 + "/config/alpha", 30 * time.Minute, "v_num", "0.5"},
		{wanQ0 + "/state/effective-kmax", 30 * time.Minute, "v_int", int64(6000)},
		{wanQ0 + "/state/queue-depth", 20 * time.Minute, "v_int", int64(100)},
		{wanQ0 + "/state/queue-depth", time.Minute, "v_int", int64(300)},
		{wanQ0 + "/config/kmax", 30 * time.Minute, "v_int", int64(9000)},
		{wanQ0 + "/config/kmax", 10 * time.Second, "v_int", int64(12000)},
	}
	for _, l := range leaves {
		p := store.MustPath(l.path)
		sl, ok := sch.LeafAt(p)
		if !ok {
			t.Fatalf("%s: not a leaf", l.path)
		}
		id := rows.SeriesID("sw1", store.PathString(p))
		if _, err := pool.Exec(ctx, `INSERT INTO series (id, target, path, schema_path) VALUES ($1, 'sw1', $2, $3)
			ON CONFLICT DO NOTHING`, id, store.PathString(p), sl.SchemaPath); err != nil {
			t.Fatal(err)
		}
		ts := now.Add(-l.at)
		if _, err := pool.Exec(ctx, `INSERT INTO samples (ts, series_id, `+l.col+`, flags, batch_id) VALUES ($1, $2, $3, 0, 1)`,
			ts, id, l.value); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO latest (series_id, ts, `+l.col+`, flags) VALUES ($1, $2, $3, 0)
			ON CONFLICT (series_id) DO UPDATE SET ts = EXCLUDED.ts, `+l.col+` = EXCLUDED.`+l.col, id, ts, l.value); err != nil {
			t.Fatal(err)
		}
	}
	if err := migrations.TrimAt(ctx, pool, horizon); err != nil {
		t.Fatal(err)
	}

	c := gnmiClient(t, serveNorthbound(t, northbound.New(sch, northbound.WithHistory(pool))))
	got := historyOf(t, c, &gnmi.SubscribeRequest{
		Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_ONCE,
			Prefix: &gnmi.Path{Target: "sw1"}, Encoding: gnmi.Encoding_PROTO,
			Subscription: []*gnmi.Subscription{{Path: store.MustPath(wanQ0)}}}},
		Extension: []*gnmi_ext.Extension{{Ext: &gnmi_ext.Extension_History{History: &gnmi_ext.History{
			Request: &gnmi_ext.History_SnapshotTime{SnapshotTime: now.Add(-30 * time.Second).UnixNano()}}}}},
	})
	seen := map[string]string{}
	for _, n := range got {
		for _, u := range n.GetUpdate() {
			seen[store.PathString(schema.Join(n.GetPrefix(), u.GetPath()))] = u.GetVal().String()
		}
	}
	want := map[string]string{}
	for path, v := range map[string]*gnmi.TypedValue{
		wanQ0 + "/config/alpha":         {Value: &gnmi.TypedValue_DoubleVal{DoubleVal: 0.5}},
		wanQ0 + "/state/effective-kmax": {Value: &gnmi.TypedValue_UintVal{UintVal: 6000}},
		wanQ0 + "/state/queue-depth":    {Value: &gnmi.TypedValue_UintVal{UintVal: 300}},
	} {
		want[store.PathString(store.MustPath(path))] = v.String()
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("snapshot 30 s ago, after a trim at 10 min ago: every leaf the switch held then, kmax (changed since, older sample trimmed) left out (-want +got):\n%s", diff)
	}
}

// TestHistoryRetentionHorizon: History's horizon is the greatest one a
// retention pass recorded (migration 024), not now − db.retention, on one
// node and on Citus. Before any pass every time is served; after a trim 3 h
// ago (the lab's retention) and a maintenance pass (whose 30-day horizon is
// older: the trim's is kept), a snapshot and a range 2 h ago are served
// (an hour's db.retention refused them: this test failed), and a snapshot
// or a range from before the trim's horizon is OUT_OF_RANGE naming it.
func TestHistoryRetentionHorizon(t *testing.T) {
	sch, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, db := range []struct {
		desc  string
		citus bool
	}{{"one node", false}, {"citus", true}} {
		t.Run(db.desc, func(t *testing.T) {
			pool, _ := pgtest.New(t)
			if db.citus {
				pool, _ = pgtest.NewCitus(t)
			}
			ctx := context.Background()
			now := time.Now().Truncate(time.Millisecond)
			const h = time.Hour
			p := storeDepths(t, pool, sch, now, []depthAt{{4 * h, 100}, {150 * time.Minute, 200}, {30 * time.Minute, 300}})
			// A leaf retention carries to its horizon (lhcnp_carried_leaves),
			// set 4 h ago and changed 1 h ago.
			kp := store.MustPath(wanQ0 + "/state/effective-kmax")
			ksl, ok := sch.LeafAt(kp)
			if !ok {
				t.Fatal("effective-kmax: not a leaf")
			}
			kid := rows.SeriesID("sw1", store.PathString(kp))
			if _, err := pool.Exec(ctx, `INSERT INTO series (id, target, path, schema_path) VALUES ($1, 'sw1', $2, $3)`,
				kid, store.PathString(kp), ksl.SchemaPath); err != nil {
				t.Fatal(err)
			}
			for _, q := range []struct {
				sql string
				ago time.Duration
			}{
				{`INSERT INTO samples (ts, series_id, v_int, flags, batch_id) VALUES ($1, $2, 6000, 0, 1)`, 4 * h},
				{`INSERT INTO samples (ts, series_id, v_int, flags, batch_id) VALUES ($1, $2, 7000, 0, 1)`, h},
				{`INSERT INTO latest (series_id, ts, v_int, flags) VALUES ($2, $1, 7000, 0)`, h},
			} {
				if _, err := pool.Exec(ctx, q.sql, now.Add(-q.ago), kid); err != nil {
					t.Fatal(err)
				}
			}
			c := gnmiClient(t, serveNorthbound(t, northbound.New(sch, northbound.WithHistory(pool))))
			historyOf := func(p *gnmi.Path, mode gnmi.SubscriptionList_Mode, hist *gnmi_ext.History) ([]uint64, error) {
				ns, err := tryHistory(c, &gnmi.SubscribeRequest{
					Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{Mode: mode,
						Prefix: &gnmi.Path{Target: "sw1"}, Encoding: gnmi.Encoding_PROTO,
						Subscription: []*gnmi.Subscription{{Path: p}}}},
					Extension: []*gnmi_ext.Extension{{Ext: &gnmi_ext.Extension_History{History: hist}}},
				})
				var depths []uint64
				for _, n := range ns {
					for _, u := range n.GetUpdate() {
						depths = append(depths, u.GetVal().GetUintVal())
					}
				}
				return depths, err
			}
			history := func(mode gnmi.SubscriptionList_Mode, hist *gnmi_ext.History) ([]uint64, error) {
				return historyOf(p, mode, hist)
			}
			snapshot := func(ago time.Duration) ([]uint64, error) {
				return history(gnmi.SubscriptionList_ONCE, &gnmi_ext.History{
					Request: &gnmi_ext.History_SnapshotTime{SnapshotTime: now.Add(-ago).UnixNano()}})
			}
			span := func(from, to time.Duration) ([]uint64, error) {
				return history(gnmi.SubscriptionList_STREAM, &gnmi_ext.History{Request: &gnmi_ext.History_Range{
					Range: &gnmi_ext.TimeRange{Start: now.Add(-from).UnixNano(), End: now.Add(-to).UnixNano()}}})
			}

			got, err := snapshot(4*h - time.Minute)
			if diff := cmp.Diff([]uint64{100}, got); err != nil || diff != "" {
				t.Errorf("before any retention pass, snapshot 4 h ago: %v, (-want +got):\n%s", err, diff)
			}

			horizon := now.Add(-3 * h)
			if err := migrations.TrimAt(ctx, pool, horizon); err != nil {
				t.Fatal(err)
			}
			if err := migrations.Maintain(ctx, pool); err != nil {
				t.Fatal(err)
			}
			got, err = snapshot(2 * h)
			if diff := cmp.Diff([]uint64{200}, got); err != nil || diff != "" {
				t.Errorf("snapshot 2 h ago, after the horizon 3 h ago: %v, (-want +got):\n%s", err, diff)
			}
			got, err = span(2*h, time.Minute)
			if diff := cmp.Diff([]uint64{200, 300}, got); err != nil || diff != "" {
				t.Errorf("range from 2 h ago, after the horizon 3 h ago: %v, (-want +got):\n%s", err, diff)
			}
			// A range from the horizon itself (the instant OUT_OF_RANGE names)
			// starts from the tree before it: the carried leaf's value, which
			// only its copy at the horizon still holds.
			got, err = historyOf(kp, gnmi.SubscriptionList_STREAM, &gnmi_ext.History{Request: &gnmi_ext.History_Range{
				Range: &gnmi_ext.TimeRange{Start: horizon.UnixNano(), End: now.UnixNano()}}})
			if diff := cmp.Diff([]uint64{6000, 7000}, got); err != nil || diff != "" {
				t.Errorf("range of effective-kmax from the horizon: %v, (-want +got):\n%s", err, diff)
			}
			kept := "samples are kept from " + horizon.UTC().Format(time.RFC3339Nano) + " on"
			for _, tt := range []struct {
				desc string
				ask  func() ([]uint64, error)
			}{
				{"snapshot", func() ([]uint64, error) { return snapshot(3*h + time.Minute) }},
				{"range", func() ([]uint64, error) { return span(4*h, 2*h) }},
			} {
				if _, err := tt.ask(); status.Code(err) != codes.OutOfRange || !strings.Contains(err.Error(), kept) {
					t.Errorf("%s from before the horizon: %v, want OUT_OF_RANGE saying %q", tt.desc, err, kept)
				}
			}
		})
	}
}

// TestHistoryRetentionDuringRead: a retention pass that commits while a
// History answer is read (after the horizon was checked, between the
// queries of the rows) must not leave the client with a complete-looking
// answer missing the rows it removed: the RPC fails OUT_OF_RANGE naming the
// new horizon. On one node and on Citus, for a trim (the lab's retention,
// to an instant) and a maintenance pass (whole days). A pass whose horizon
// stays before the start changes nothing the answer holds: served whole.
//
// A queue depth of 100 three days ago, 250 two and a half days ago, 300
// half an hour ago; a range from 70 h ago, whose starting tree is 100 and
// whose changes are 250 and 300, and a snapshot 65 h ago (100). Before the
// fix the range came back [100 300] and the snapshot empty, each with its
// sync_response and no error (this test failed).
func TestHistoryRetentionDuringRead(t *testing.T) {
	sch, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	const h = time.Hour
	now := time.Now().Truncate(time.Millisecond)
	start := now.Add(-70 * h)
	trim := func(to time.Time) func(context.Context, *pgxpool.Pool) error {
		return func(ctx context.Context, pool *pgxpool.Pool) error { return migrations.TrimAt(ctx, pool, to) }
	}
	maintain := func(ctx context.Context, pool *pgxpool.Pool) error {
		if err := migrations.SetRetention(ctx, pool, 24*h); err != nil {
			return err
		}
		return migrations.Maintain(ctx, pool)
	}
	// A pass that removed the leaf's series too, as a trim does for a leaf
	// deleted before its horizon.
	trimSeries := func(ctx context.Context, pool *pgxpool.Pool) error {
		if err := migrations.TrimAt(ctx, pool, now.Add(-h)); err != nil {
			return err
		}
		_, err := pool.Exec(ctx, `DELETE FROM series WHERE target = 'sw1'`)
		return err
	}
	range70h := &gnmi_ext.History{Request: &gnmi_ext.History_Range{Range: &gnmi_ext.TimeRange{
		Start: start.UnixNano(), End: now.Add(-time.Minute).UnixNano()}}}
	snapshot65h := &gnmi_ext.History{Request: &gnmi_ext.History_SnapshotTime{SnapshotTime: now.Add(-65 * h).UnixNano()}}
	for _, tt := range []struct {
		desc  string
		stage string // when the pass runs (WithReadHook)
		pass  func(context.Context, *pgxpool.Pool) error
		hist  *gnmi_ext.History
		want  []uint64 // nil: OUT_OF_RANGE
	}{
		{desc: "range, a trim an hour ago after its tree", stage: "tree", pass: trim(now.Add(-h)), hist: range70h},
		{desc: "range, a day's retention after its tree", stage: "tree", pass: maintain, hist: range70h},
		{desc: "snapshot, a trim an hour ago before its rows", stage: "horizon", pass: trim(now.Add(-h)), hist: snapshot65h},
		{desc: "snapshot, a pass that removed the series before it was found", stage: "horizon", pass: trimSeries, hist: snapshot65h},
		{desc: "range, a trim before its start after its tree", stage: "tree", pass: trim(start.Add(-h)), hist: range70h,
			want: []uint64{100, 250, 300}},
	} {
		for _, citus := range []bool{false, true} {
			desc := tt.desc + ", one node"
			if citus {
				desc = tt.desc + ", citus"
			}
			t.Run(desc, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				var pool *pgxpool.Pool
				if citus {
					pool, _ = pgtest.NewCitus(t)
				} else {
					pool, _ = pgtest.New(t)
				}
				p := storeDepths(t, pool, sch, now, []depthAt{{72 * h, 100}, {60 * h, 250}, {30 * time.Minute, 300}})
				var ran atomic.Bool // the hook runs in the server's goroutine
				hook := northbound.WithReadHook(func(stage string) {
					if stage != tt.stage || !ran.CompareAndSwap(false, true) {
						return
					}
					if err := tt.pass(ctx, pool); err != nil {
						t.Errorf("the retention pass: %v", err)
					}
				})
				c := gnmiClient(t, serveNorthbound(t, northbound.New(sch, northbound.WithHistory(pool), hook)))
				mode := gnmi.SubscriptionList_STREAM
				if tt.hist.GetSnapshotTime() != 0 {
					mode = gnmi.SubscriptionList_ONCE
				}
				ns, err := tryHistory(c, &gnmi.SubscribeRequest{
					Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{Mode: mode,
						Prefix: &gnmi.Path{Target: "sw1"}, Encoding: gnmi.Encoding_PROTO,
						Subscription: []*gnmi.Subscription{{Path: p}}}},
					Extension: []*gnmi_ext.Extension{{Ext: &gnmi_ext.Extension_History{History: tt.hist}}},
				})
				if !ran.Load() {
					t.Fatalf("the hook's stage %q never came", tt.stage)
				}
				var got []uint64
				for _, n := range ns {
					for _, u := range n.GetUpdate() {
						got = append(got, u.GetVal().GetUintVal())
					}
				}
				if tt.want != nil {
					if diff := cmp.Diff(tt.want, got); err != nil || diff != "" {
						t.Errorf("%v, (-want +got):\n%s", err, diff)
					}
					return
				}
				var horizon time.Time
				if err := pool.QueryRow(ctx, `SELECT horizon FROM lhcnp_partitioning WHERE parent = 'public.samples'`).Scan(&horizon); err != nil {
					t.Fatal(err)
				}
				what := "range"
				if mode == gnmi.SubscriptionList_ONCE {
					what = "snapshot"
				}
				msg := "a retention pass ran while the " + what + " was read: samples are now kept from " +
					horizon.UTC().Format(time.RFC3339Nano) + " on"
				if status.Code(err) != codes.OutOfRange || !strings.Contains(err.Error(), msg) {
					t.Errorf("got %v and %v, want OUT_OF_RANGE saying %q", got, err, msg)
				}
			})
		}
	}
}

// depthAt is a queue depth stored ago before now.
type depthAt struct {
	ago   time.Duration
	depth int64
}

// storeDepths stores sw1's wan queue 0 depths, the last one as latest too,
// and returns the leaf's path.
func storeDepths(t *testing.T, pool *pgxpool.Pool, sch *schema.Schema, now time.Time, depths []depthAt) *gnmi.Path {
	t.Helper()
	ctx := context.Background()
	p := store.MustPath(wanQ0 + "/state/queue-depth")
	sl, ok := sch.LeafAt(p)
	if !ok {
		t.Fatal("queue-depth: not a leaf")
	}
	id := rows.SeriesID("sw1", store.PathString(p))
	if _, err := pool.Exec(ctx, `INSERT INTO series (id, target, path, schema_path) VALUES ($1, 'sw1', $2, $3)`,
		id, store.PathString(p), sl.SchemaPath); err != nil {
		t.Fatal(err)
	}
	for _, d := range depths {
		if _, err := pool.Exec(ctx, `INSERT INTO samples (ts, series_id, v_int, flags, batch_id) VALUES ($1, $2, $3, 0, 1)`,
			now.Add(-d.ago), id, d.depth); err != nil {
			t.Fatal(err)
		}
	}
	last := depths[len(depths)-1]
	if _, err := pool.Exec(ctx, `INSERT INTO latest (series_id, ts, v_int, flags) VALUES ($1, $2, $3, 0)`,
		id, now.Add(-last.ago), last.depth); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHistoryRangeSendsWithNoQueryOpen: while History sends a range's rows
// (to a client that may be slow), it holds no query open, so a retention
// pass can take the lock a DROP of a day needs (ACCESS EXCLUSIVE on
// samples) at once; one waiting would queue every writer's INSERT behind
// it, for as long as the client takes. 300000 changes in the range's first
// minute, more than PostgreSQL can push into the socket ahead of the reader
// (a query holds its locks until its last row is sent): before the fix the
// batches went out from inside the chunk's query, and the lock timed out
// (this test failed).
func TestHistoryRangeSendsWithNoQueryOpen(t *testing.T) {
	t.Parallel()
	sch, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	pool, _ := pgtest.New(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	start := now.Add(-time.Hour)
	p := storeDepths(t, pool, sch, now, []depthAt{{2 * time.Hour, 1}})
	id := rows.SeriesID("sw1", store.PathString(p))
	const n = 300_000
	changes := make([][]any, 0, n)
	for k := range n {
		changes = append(changes, []any{start.Add(time.Duration(k) * 150 * time.Microsecond), id, int64(k), int16(0), int64(1)})
	}
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"samples"}, []string{"ts", "series_id", "v_int", "flags", "batch_id"},
		pgx.CopyFromRows(changes)); err != nil {
		t.Fatal(err)
	}
	var sends atomic.Int64
	var waited atomic.Bool // once is enough: each wait is the lock timeout
	hook := northbound.WithReadHook(func(stage string) {
		if stage != "send" {
			return
		}
		if sends.Add(1); waited.Load() {
			return
		}
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Error(err)
			return
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '2s'`); err != nil {
			t.Error(err)
			return
		}
		if _, err := tx.Exec(ctx, `LOCK TABLE samples IN ACCESS EXCLUSIVE MODE`); err != nil {
			waited.Store(true)
			t.Errorf("send %d: a retention pass's lock on samples waited for the History client: %v", sends.Load(), err)
		}
	})
	c := gnmiClient(t, serveNorthbound(t, northbound.New(sch, northbound.WithHistory(pool), hook)))
	ns, err := tryHistory(c, &gnmi.SubscribeRequest{
		Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_STREAM,
			Prefix: &gnmi.Path{Target: "sw1"}, Encoding: gnmi.Encoding_PROTO, UpdatesOnly: true,
			Subscription: []*gnmi.Subscription{{Path: p}}}},
		Extension: []*gnmi_ext.Extension{{Ext: &gnmi_ext.Extension_History{History: &gnmi_ext.History{Request: &gnmi_ext.History_Range{
			Range: &gnmi_ext.TimeRange{Start: start.UnixNano(), End: now.UnixNano()}}}}}},
	})
	if err != nil || len(ns) != n {
		t.Errorf("range: %d notifications, %v; want %d", len(ns), err, n)
	}
	if got := sends.Load(); got < 2 {
		t.Errorf("%d batches sent, want the range's first minute in two at least", got)
	}
}
