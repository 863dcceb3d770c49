package tuner

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/tuner/policy"
)

// collectorRows writes series, samples and latest rows the way the
// collector does (issue 9's schema), for one target.
type collectorRows struct {
	t      *testing.T
	pool   *pgxpool.Pool
	target string
	ids    map[string]int64
}

const queueState = "/lhcnp/interfaces/interface/queues/queue/state/"

// leaf stores value v of a leaf at ts; iface and queue key it (queue < 0:
// an interface leaf). Numbers go to v_int, strings to v_text, float64 to
// v_num, as the collector types them.
func (c *collectorRows) leaf(iface string, queue int, leaf string, ts time.Time, v any) {
	c.t.Helper()
	ctx := context.Background()
	schema := queueState + leaf
	keys := fmt.Sprintf(`{"name":%q,"id":"%d"}`, iface, queue)
	path := fmt.Sprintf("/lhcnp/interfaces/interface[name=%s]/queues/queue[id=%d]/state/%s", iface, queue, leaf)
	if queue < 0 {
		schema = "/lhcnp/interfaces/interface/state/" + leaf
		keys = fmt.Sprintf(`{"name":%q}`, iface)
		path = fmt.Sprintf("/lhcnp/interfaces/interface[name=%s]/state/%s", iface, leaf)
	}
	id, ok := c.ids[path]
	if !ok {
		id = int64(len(c.ids) + 1)
		c.ids[path] = id
		if _, err := c.pool.Exec(ctx, `INSERT INTO series (id, target, path, schema_path, keys) VALUES ($1, $2, $3, $4, $5)`,
			id, c.target, path, schema, keys); err != nil {
			c.t.Fatal(err)
		}
	}
	var vi *int64
	var vt *string
	var vn *float64
	switch x := v.(type) {
	case int:
		y := int64(x)
		vi = &y
	case string:
		vt = &x
	case float64:
		vn = &x
	}
	if _, err := c.pool.Exec(ctx, `INSERT INTO samples (ts, series_id, v_int, v_num, v_text, batch_id) VALUES ($1, $2, $3, $4, $5, 1)`,
		ts, id, vi, vn, vt); err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.pool.Exec(ctx, `
		INSERT INTO latest (series_id, ts, v_int, v_num, v_text) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (series_id) DO UPDATE SET ts = EXCLUDED.ts, v_int = EXCLUDED.v_int, v_num = EXCLUDED.v_num, v_text = EXCLUDED.v_text
		WHERE latest.ts <= EXCLUDED.ts`, id, ts, vi, vn, vt); err != nil {
		c.t.Fatal(err)
	}
}

// pgSourceWorkload: TestPGSource's telemetry of one queue of c's target.
func pgSourceWorkload(c *collectorRows) {
	c.leaf("wan0", -1, "effective-rtt-est", t1, 10000)
	c.leaf("wan0", -1, "effective-port-rate", t1, 10_000_000_000)
	c.leaf("wan0", 0, "alpha", t1, 0.5)
	c.leaf("wan0", 0, "kmax-mode", t1, "BDP_ADAPTIVE")
	c.leaf("wan0", 0, "k-base", t1, 64000)
	c.leaf("wan0", 0, "v-growth", t1, 1_250_000_000)
	c.leaf("wan0", 0, "effective-kmax", t1, 6_250_000)
	for i := range 4 {
		ts := t1.Add(time.Duration(i) * time.Second)
		c.leaf("wan0", 0, "queue-depth", ts, 1000*(i+1))
		c.leaf("wan0", 0, "peak-queue-depth", ts, 2000*(i+1))
		c.leaf("wan0", 0, "queue-growth-rate", ts, 100*i)
		c.leaf("wan0", 0, "ecn-marking-rate", ts, 1.5)
		c.leaf("wan0", 0, "counters/bytes", ts, 1_000_000*i)
		c.leaf("wan0", 0, "counters/packets", ts, 1000*i)
		c.leaf("wan0", 0, "counters/cnp-rate-reduce-sent", ts, 3*i)
		c.leaf("wan0", 0, "counters/dropped-packets", ts, i/2)
	}
}

// addSpeed stores an engine-speed sample of target n1 an hour before t1.
func addSpeed(t *testing.T, pool *pgxpool.Pool, speed float64) {
	t.Helper()
	ctx := context.Background()
	const speedLeaf = "/lhcnp/global/state/engine-speed"
	if _, err := pool.Exec(ctx, `INSERT INTO series (id, target, path, schema_path, keys) VALUES (1000, 'n1', $1, $1, '{}')`, speedLeaf); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO samples (ts, series_id, v_float, batch_id) VALUES ($1, 1000, $2, 1)`, t1.Add(-time.Hour), speed); err != nil {
		t.Fatal(err)
	}
}

// TestPGSourceCitus: the tuner's reads through a Citus coordinator with two
// workers give the windows that one PostgreSQL gives for the same rows,
// before and after the switch published its speed.
func TestPGSourceCitus(t *testing.T) {
	ctx := context.Background()
	one, _ := pgtest.New(t)
	citus, _ := pgtest.NewCitus(t)
	windows := func(pool *pgxpool.Pool) []QueueWindow {
		t.Helper()
		w, err := NewPGSource(pool).Windows(ctx, "n1", t1, t1.Add(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	for _, pool := range []*pgxpool.Pool{one, citus} {
		pgSourceWorkload(&collectorRows{t: t, pool: pool, target: "n1", ids: map[string]int64{}})
	}
	want := windows(one)
	if len(want) == 0 {
		t.Fatal("no windows on one node")
	}
	if diff := cmp.Diff(want, windows(citus)); diff != "" {
		t.Errorf("Windows on Citus (-one node +Citus):\n%s", diff)
	}
	for _, pool := range []*pgxpool.Pool{one, citus} {
		addSpeed(t, pool, 0.05)
	}
	want = windows(one)
	if len(want) == 0 || want[0].Window.Speed != 0.05 {
		t.Fatalf("windows on one node %+v, want speed 0.05", want)
	}
	if diff := cmp.Diff(want, windows(citus)); diff != "" {
		t.Errorf("Windows at speed 0.05 on Citus (-one node +Citus):\n%s", diff)
	}
}

// TestPGSource: a queue's telemetry written as the collector writes it
// comes back through the views as the policy's window.
func TestPGSource(t *testing.T) {
	ctx := context.Background()
	pool, _ := pgtest.New(t)
	c := &collectorRows{t: t, pool: pool, target: "n1", ids: map[string]int64{}}
	pgSourceWorkload(c)
	got, err := NewPGSource(pool).Windows(ctx, "n1", t1, t1.Add(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var samples []policy.Sample
	for i := range 4 {
		s := policy.Sample{Time: t1.Add(time.Duration(i) * time.Second), QueueDepthBytes: int64(1000 * (i + 1)),
			PeakQueueDepthBytes: int64(2000 * (i + 1)), GrowthRateBytesPerSec: int64(100 * i), ECNMarkingPercent: 1.5}
		if i > 0 {
			s.TxBytes, s.Packets, s.Notifications.RateReduce = 1_000_000, 1000, 3
			s.Drops = int64(i/2 - (i-1)/2)
		}
		samples = append(samples, s)
	}
	want := []QueueWindow{{Interface: "wan0", Queue: 0, Window: policy.Window{
		Start: t1, End: t1.Add(3 * time.Second), Samples: samples,
		Config:     policy.Settings{KMaxMode: policy.KMaxBDP, Alpha: 0.5, VGrowthBytesPerSec: 1_250_000_000},
		KBaseBytes: 64000, EffectiveKMaxBytes: 6_250_000, RTTEst: 10 * time.Millisecond, PortRateBitsPerSec: 10_000_000_000,
		Speed: 1,
	}}}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("Windows (-want +got):\n%s", diff)
	}
	// A switch simulated at a twentieth of the wall clock (it publishes
	// engine-speed 0.05 with its state): the window carries its speed.
	addSpeed(t, pool, 0.05)
	got, err = NewPGSource(pool).Windows(ctx, "n1", t1, t1.Add(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want[0].Window.Speed = 0.05
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("Windows at speed 0.05 (-want +got):\n%s", diff)
	}
	// A target without telemetry has no windows; a closed pool is an error.
	if w, err := NewPGSource(pool).Windows(ctx, "n9", t1, t1.Add(time.Second)); err != nil || len(w) != 0 {
		t.Errorf("Windows of an unknown target: %v, %v; want none, nil", w, err)
	}
	pool.Close()
	if _, err := NewPGSource(pool).Windows(ctx, "n1", t1, t1.Add(time.Second)); err == nil {
		t.Error("Windows on a closed pool: no error")
	}
}
