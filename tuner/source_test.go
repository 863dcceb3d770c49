package tuner

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/tuner/policy"
)

// collectorRows writes series, samples, latest and ingest_ledger rows the
// way the collector does (issue 9's schema), for one target: every value
// in a batch of its own.
type collectorRows struct {
	t      *testing.T
	pool   *pgxpool.Pool
	target string
	ids    map[string]int64
	batch  int64
}

const queueState = "/lhcnp/interfaces/interface/queues/queue/state/"

// leaf stores value v of a leaf at ts; iface and queue key it (queue < 0:
// an interface leaf). Numbers go to v_int, strings to v_text, float64 to
// v_num, booleans to v_bool, as the collector types them.
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
	var vb *bool
	switch x := v.(type) {
	case int:
		y := int64(x)
		vi = &y
	case string:
		vt = &x
	case float64:
		vn = &x
	case bool:
		vb = &x
	}
	c.batch++
	if _, err := c.pool.Exec(ctx, `INSERT INTO samples (ts, series_id, v_int, v_num, v_text, v_bool, batch_id) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		ts, id, vi, vn, vt, vb, c.batch); err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.pool.Exec(ctx, `INSERT INTO ingest_ledger (batch_id, collector, target, epoch, rows, first_ts, last_ts)
		VALUES ($1, 'c1', $2, 1, 1, $3, $3)`, c.batch, c.target, ts); err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.pool.Exec(ctx, `
		INSERT INTO latest (series_id, ts, v_int, v_num, v_text, v_bool) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (series_id) DO UPDATE SET ts = EXCLUDED.ts, v_int = EXCLUDED.v_int, v_num = EXCLUDED.v_num, v_text = EXCLUDED.v_text,
			v_bool = EXCLUDED.v_bool
		WHERE latest.ts <= EXCLUDED.ts`, id, ts, vi, vn, vt, vb); err != nil {
		c.t.Fatal(err)
	}
}

// pgSourceWorkload: TestPGSource's telemetry of one queue of c's target.
func pgSourceWorkload(c *collectorRows) {
	c.leaf("wan0", -1, "effective-rtt-est", t1, 10000)
	c.leaf("wan0", -1, "effective-port-rate", t1, 10_000_000_000)
	c.leaf("wan0", -1, "buffer-size", t1, 32_000_000)
	c.leaf("wan0", 0, "alpha", t1, 0.5)
	c.leaf("wan0", 0, "kmax-mode", t1, "BDP_ADAPTIVE")
	c.leaf("wan0", 0, "k-base", t1, 64000)
	c.leaf("wan0", 0, "v-growth", t1, 1_250_000_000)
	c.leaf("wan0", 0, "effective-kmax", t1, 6_250_000)
	c.leaf("wan0", 0, "overload-cut", t1, false)
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
		pgSourceWorkload(newCollectorRows(t, pool))
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
	c := newCollectorRows(t, pool)
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
		BufferBytes: 32_000_000, OverloadCutSupported: true, Speed: 1,
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
	// A window starting between two reports (t1, t1+1s): the increase
	// reported at t1+1s came over the second since t1, half of it in the
	// window (the whole of it read a full link 10 % over full in the lab).
	got, err = NewPGSource(pool).Windows(ctx, "n1", t1.Add(500*time.Millisecond), t1.Add(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var tx, packets int64
	for _, s := range got[0].Window.Samples {
		tx, packets = tx+s.TxBytes, packets+s.Packets
	}
	if tx != 2_500_000 || packets != 2500 || got[0].Window.Samples[1].TxBytes != 500_000 {
		t.Errorf("a window from between two reports: %d bytes, %d packets (%+v); want 2 500 000 and 2500, 500 000 at t1+1s",
			tx, packets, got[0].Window.Samples)
	}
	// Its engine falls behind its pace during the window (engine-lag, in
	// simulated ns, 2 ms before the window, 32 ms at its third sample):
	// the window carries the lag's growth from its first sample (the
	// value at or before the window's start) to its last (at or before
	// it); the link's use is per simulated second the samples really
	// covered.
	addLeaf := func(id int64, leaf string, ts time.Time, ns int64) {
		t.Helper()
		if _, err := pool.Exec(ctx, `INSERT INTO series (id, target, path, schema_path, keys) VALUES ($1, 'n1', $2, $2, '{}') ON CONFLICT DO NOTHING`, id, leaf); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO samples (ts, series_id, v_int, batch_id) VALUES ($1, $2, $3, 1)`, ts, id, ns); err != nil {
			t.Fatal(err)
		}
	}
	const lagLeaf = "/lhcnp/global/state/engine-lag"
	addLeaf(1001, lagLeaf, t1.Add(-time.Second), 2_000_000)
	addLeaf(1001, lagLeaf, t1.Add(2*time.Second), 32_000_000)
	addLeaf(1001, lagLeaf, t1.Add(5*time.Second), 0) // after the window: not read
	got, err = NewPGSource(pool).Windows(ctx, "n1", t1.Add(time.Nanosecond), t1.Add(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Window.LagGrowth != 30*time.Millisecond {
		t.Fatalf("Windows with the engine lagging: %+v; want one window, LagGrowth 30ms", got)
	}
	// 3 MB in 0.15 - 0.03 = 0.12 simulated seconds of a 10 Gbit/s port.
	if u := policy.Measure(got[0].Window).Utilisation; math.Abs(u-0.02) > 1e-9 {
		t.Errorf("utilisation %v with the engine lagging; want 0.02 (0.016 without the lag's growth)", u)
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

// TestPGSourcePausesOfThePriority: a congested egress queue's PFC PAUSEs
// leave by the interfaces its traffic arrives on (their queue's
// pfc-pause-frames; its own reads 0): the window of every queue of that
// priority counts the switch's, another priority's are not counted (the
// simulator's TestTunerCountsTheSwitchsPauses).
func TestPGSourcePausesOfThePriority(t *testing.T) {
	ctx := context.Background()
	pool, _ := pgtest.New(t)
	c := newCollectorRows(t, pool)
	pgSourceWorkload(c)
	for i := range 4 {
		ts := t1.Add(time.Duration(i) * time.Second)
		c.leaf("wan0", 0, "counters/pfc-pause-frames", ts, 0)
		c.leaf("dc1", 0, "counters/pfc-pause-frames", ts, 5*i)
		c.leaf("dc2", 0, "counters/pfc-pause-frames", ts, 2*i)
		c.leaf("dc1", 3, "counters/pfc-pause-frames", ts, 100*i)
	}
	got, err := NewPGSource(pool).Windows(ctx, "n1", t1, t1.Add(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(got, func(w QueueWindow) bool { return w.Interface == "wan0" && w.Queue == 0 })
	if i < 0 {
		t.Fatalf("windows %+v, none of wan0's queue 0", got)
	}
	var pauses []int64
	for _, s := range got[i].Window.Samples {
		pauses = append(pauses, s.Pauses)
	}
	if want := []int64{0, 7, 7, 7}; !cmp.Equal(pauses, want) {
		t.Errorf("wan0 queue 0's pauses by sample %v, want %v (dc1's 5 and dc2's 2 a second; not dc1 queue 3's)", pauses, want)
	}
}

// TestPGSourceBufferCeiling: the port's buffer, published by the switch
// (buffer-size) and stored by the collector, reaches the policy through
// queue_latest, and the service's overrun keeps K_max under half of it as
// the simulator's does. A 10 Gb/s port, RTT_est 10 ms (one BDP is 12.5 MB)
// with a 3 BDP buffer; its queue grows by 0.6 RTT_est per RTT_est from
// 0.5 RTT_est while the QGR trigger fires (V_growth 1 Gb/s, the policy's
// starting point): overrun. Without the buffer the lift is the step's,
// alpha 1 -> 2; with it, alpha 1.5 (K_max 18.75 MB, half of 37.5 MB).
func TestPGSourceBufferCeiling(t *testing.T) {
	ctx := context.Background()
	const (
		bdp    = 12_500_000 // bytes: 10 Gb/s × 10 ms / 8
		buffer = 3 * bdp
	)
	decide := func(withBuffer bool) (policy.Window, policy.Decision) {
		t.Helper()
		pool, _ := pgtest.New(t)
		c := newCollectorRows(t, pool)
		c.leaf("wan0", -1, "effective-rtt-est", t1.Add(-time.Hour), 10000)
		c.leaf("wan0", -1, "effective-port-rate", t1.Add(-time.Hour), 10_000_000_000)
		if withBuffer {
			c.leaf("wan0", -1, "buffer-size", t1.Add(-time.Hour), buffer)
		}
		c.leaf("wan0", 0, "alpha", t1.Add(-time.Hour), 1.0)
		c.leaf("wan0", 0, "kmax-mode", t1.Add(-time.Hour), "BDP_ADAPTIVE")
		c.leaf("wan0", 0, "k-base", t1.Add(-time.Hour), 64000)
		c.leaf("wan0", 0, "v-growth", t1.Add(-time.Hour), 125_000_000)
		c.leaf("wan0", 0, "effective-kmax", t1.Add(-time.Hour), bdp)
		for i := range 5 {
			ts := t1.Add(time.Duration(i) * 2500 * time.Microsecond)
			c.leaf("wan0", 0, "queue-depth", ts, int((0.5+0.15*float64(i))*bdp))
			c.leaf("wan0", 0, "queue-growth-rate", ts, 750_000_000)
			c.leaf("wan0", 0, "counters/bytes", ts, i*3_093_750) // 99 % of the port
			c.leaf("wan0", 0, "counters/packets", ts, i*3000)
		}
		wins, err := NewPGSource(pool).Windows(ctx, "n1", t1, t1.Add(10*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if len(wins) != 1 {
			t.Fatalf("%d windows, want 1: %+v", len(wins), wins)
		}
		d, _ := policy.Decide(everyRule(), wins[0].Window, policy.Memory{})
		return wins[0].Window, d
	}

	w, d := decide(false)
	if w.BufferBytes != 0 || d.Rule != policy.RuleOverrun || d.After.Alpha != 2 {
		t.Errorf("without buffer-size: window's buffer %d, rule %s, alpha %v (%s); want 0, %s, 2 (the step's lift)",
			w.BufferBytes, d.Rule, d.After.Alpha, d.Reason, policy.RuleOverrun)
	}
	w, d = decide(true)
	if w.BufferBytes != buffer {
		t.Errorf("window's buffer %d bytes, want the published %d", w.BufferBytes, buffer)
	}
	if d.Rule != policy.RuleOverrun || d.After.Alpha != 1.5 {
		t.Errorf("with buffer-size: rule %s, alpha %v (%s); want %s, 1.5 (half the buffer)", d.Rule, d.After.Alpha, d.Reason, policy.RuleOverrun)
	}
	if kmax := d.After.Alpha * bdp; kmax > 0.5*buffer {
		t.Errorf("K_max lifted to %v bytes, above half the %d-byte buffer", kmax, buffer)
	}
}

// TestPGSourceOverloadCut: the queue's overload-cut, published by the
// switch (state/overload-cut) and stored by the collector, reaches the
// policy through queue_latest (its state column): the window carries the value and
// OverloadCutSupported, and rule pinned escalates there alone. wan0's queue
// 0 publishes the leaf (off, later on), queue 1 never does (a switch
// without the option); both stand at 0.9 of a 3 BDP buffer and drop a
// tenth of their packets in a window after a loss decision (loss persists).
func TestPGSourceOverloadCut(t *testing.T) {
	ctx := context.Background()
	const (
		bdp    = 12_500_000 // bytes: 10 Gb/s × 10 ms / 8
		buffer = 3 * bdp
	)
	pool, _ := pgtest.New(t)
	c := newCollectorRows(t, pool)
	before := t1.Add(-time.Hour)
	c.leaf("wan0", -1, "effective-rtt-est", before, 10000)
	c.leaf("wan0", -1, "effective-port-rate", before, 10_000_000_000)
	c.leaf("wan0", -1, "buffer-size", before, buffer)
	for q := range 2 {
		c.leaf("wan0", q, "alpha", before, 1.0)
		c.leaf("wan0", q, "kmax-mode", before, "BDP_ADAPTIVE")
		c.leaf("wan0", q, "k-base", before, 64000)
		c.leaf("wan0", q, "v-growth", before, 1_250_000_000)
		c.leaf("wan0", q, "effective-kmax", before, bdp)
		if q == 0 {
			c.leaf("wan0", q, "overload-cut", before, false)
		}
		for i := range 5 {
			ts := t1.Add(time.Duration(i) * 2500 * time.Microsecond)
			c.leaf("wan0", q, "queue-depth", ts, buffer*9/10)
			c.leaf("wan0", q, "counters/bytes", ts, i*3_093_750)
			c.leaf("wan0", q, "counters/packets", ts, i*3000)
			c.leaf("wan0", q, "counters/dropped-packets", ts, i*300)
		}
	}
	windows := func(end time.Time) []QueueWindow {
		t.Helper()
		wins, err := NewPGSource(pool).Windows(ctx, "n1", end.Add(-10*time.Millisecond), end)
		if err != nil {
			t.Fatal(err)
		}
		if len(wins) != 2 {
			t.Fatalf("%d windows, want 2: %+v", len(wins), wins)
		}
		return wins
	}
	wins := windows(t1.Add(10 * time.Millisecond))
	type leaf struct{ Cut, Supported bool }
	got := []leaf{{wins[0].Window.Config.OverloadCut, wins[0].Window.OverloadCutSupported},
		{wins[1].Window.Config.OverloadCut, wins[1].Window.OverloadCutSupported}}
	if diff := cmp.Diff([]leaf{{false, true}, {false, false}}, got); diff != "" {
		t.Errorf("queues 0 (publishes overload-cut off) and 1 (never): (-want +got):\n%s", diff)
	}
	// The policy's memory after a loss decision, a cool-down ago.
	mem := policy.Memory{LastChange: t1.Add(-time.Minute), Changes: 1, LossStreak: 1}
	for i, want := range []struct {
		rule policy.Rule
		cut  bool
	}{{policy.RulePinned, true}, {policy.RuleLoss, false}} {
		d, m := policy.Decide(everyRule(), wins[i].Window, mem)
		if !d.Change || d.Rule != want.rule || d.After.OverloadCut != want.cut || m.CutOn != want.cut {
			t.Errorf("queue %d: change %v, rule %s, overload_cut %v, memory's CutOn %v (%s); want a change by %s, overload_cut %v",
				i, d.Change, d.Rule, d.After.OverloadCut, m.CutOn, d.Reason, want.rule, want.cut)
		}
	}
	// The switch runs the option from then on: the next window says so.
	c.leaf("wan0", 0, "overload-cut", t1.Add(11*time.Millisecond), true)
	wins = windows(t1.Add(20 * time.Millisecond))
	if w := wins[0].Window; !w.Config.OverloadCut || !w.OverloadCutSupported {
		t.Errorf("queue 0 after overload-cut true: overload_cut %v, supported %v; want both", w.Config.OverloadCut, w.OverloadCutSupported)
	}
}

// newCollectorRows writes the collector's rows of target n1 into pool.
func newCollectorRows(t *testing.T, pool *pgxpool.Pool) *collectorRows {
	return &collectorRows{t: t, pool: pool, target: "n1", ids: map[string]int64{}}
}

// steadyPort stores, at ts, wan0's RTT_est (10 ms) and port rate (10 Gb/s)
// and three queues whose leaves do not change after: 0 idle, 1 standing at
// half an RTT_est, 2 idle until the test makes it busy.
func steadyPort(c *collectorRows, ts time.Time) {
	c.leaf("wan0", -1, "effective-rtt-est", ts, 10000)
	c.leaf("wan0", -1, "effective-port-rate", ts, 10_000_000_000)
	steadyQueue(c, 0, ts, 0)
	steadyQueue(c, 1, ts, 6_250_000)
	steadyQueue(c, 2, ts, 0)
}

// steadyQueue stores the settings and state of queue q of wan0 once, at
// ts: a queue whose leaves do not change after (idle at depth 0, or
// standing at depthBytes).
func steadyQueue(c *collectorRows, q int, ts time.Time, depthBytes int) {
	c.leaf("wan0", q, "alpha", ts, 1.0)
	c.leaf("wan0", q, "kmax-mode", ts, "BDP_ADAPTIVE")
	c.leaf("wan0", q, "k-base", ts, 64000)
	c.leaf("wan0", q, "v-growth", ts, 1_250_000_000)
	c.leaf("wan0", q, "effective-kmax", ts, 12_500_000)
	c.leaf("wan0", q, "queue-depth", ts, depthBytes)
	c.leaf("wan0", q, "peak-queue-depth", ts, depthBytes)
	c.leaf("wan0", q, "queue-growth-rate", ts, 0)
	c.leaf("wan0", q, "ecn-marking-rate", ts, 0.0)
	c.leaf("wan0", q, "counters/bytes", ts, 5_000_000)
	c.leaf("wan0", q, "counters/packets", ts, 5000)
}

// busySwitch stores switch n1 in a fresh database: its port and queues
// steady from an hour before t1 (steadyPort), and queue 2 busy, its bytes
// changing every second from t1+1s to t1+6s.
func busySwitch(t *testing.T) *collectorRows {
	pool, _ := pgtest.New(t)
	c := newCollectorRows(t, pool)
	steadyPort(c, t1.Add(-time.Hour))
	for i := 1; i <= 6; i++ {
		c.leaf("wan0", 2, "counters/bytes", t1.Add(time.Duration(i)*time.Second), 5_000_000+i*1_000_000)
	}
	return c
}

// TestPGSourceCarriesSteadyQueues: the collector stores a leaf when it
// changes, so queues whose leaves did not change have no rows in a window.
// Their windows are their state all the same: the values before the window
// carried to its start and to every instant the collector was receiving
// the switch (its ingest ledger: here a busy queue's changes), and the
// policy decides on them. Where the switch stopped reporting the windows
// stop too, and the policy sees the gap.
func TestPGSourceCarriesSteadyQueues(t *testing.T) {
	ctx := context.Background()
	c := busySwitch(t)
	pool := c.pool
	// Queue 2 stands at 1 MB from t1+2s. Then the switch stops reporting.
	c.leaf("wan0", 2, "queue-depth", t1.Add(2*time.Second), 1_000_000)

	wins, err := NewPGSource(pool).Windows(ctx, "n1", t1, t1.Add(6*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(wins) != 3 {
		t.Fatalf("%d windows, want 3: %+v", len(wins), wins)
	}
	at := func(i int) time.Time { return t1.Add(time.Duration(i) * time.Second) }
	depths := func(w policy.Window) (ts []time.Time, depth []int64, tx int64) {
		for _, s := range w.Samples {
			ts, depth, tx = append(ts, s.Time), append(depth, s.QueueDepthBytes), tx+s.TxBytes
		}
		return ts, depth, tx
	}
	every := []time.Time{at(0), at(1), at(2), at(3), at(4), at(5), at(6)}
	for _, tt := range []struct {
		queue uint8
		depth []int64
		tx    int64
	}{
		{0, []int64{0, 0, 0, 0, 0, 0, 0}, 0},
		{1, []int64{6_250_000, 6_250_000, 6_250_000, 6_250_000, 6_250_000, 6_250_000, 6_250_000}, 0},
		{2, []int64{0, 0, 1_000_000, 1_000_000, 1_000_000, 1_000_000, 1_000_000}, 6_000_000},
	} {
		w := wins[tt.queue].Window
		ts, depth, tx := depths(w)
		if diff := cmp.Diff(every, ts); diff != "" {
			t.Errorf("queue %d: sample times (-want +got):\n%s", tt.queue, diff)
		}
		if diff := cmp.Diff(tt.depth, depth); diff != "" {
			t.Errorf("queue %d: queue depths (-want +got):\n%s", tt.queue, diff)
		}
		if tx != tt.tx {
			t.Errorf("queue %d: %d bytes sent in the window, want %d", tt.queue, tx, tt.tx)
		}
		if rule, why := policy.Check(policy.DefaultConfig(), w); rule != "" {
			t.Errorf("queue %d: the policy cannot decide on its window: %s: %s", tt.queue, rule, why)
		}
	}

	// A window reaching past the switch's last report: every queue's
	// samples end where its reports end, and the policy sees a gap.
	wins, err = NewPGSource(pool).Windows(ctx, "n1", t1.Add(2*time.Second), t1.Add(12*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, qw := range wins {
		w := qw.Window
		if last := w.Samples[len(w.Samples)-1].Time; !last.Equal(at(6)) {
			t.Errorf("queue %d: last sample at %v, want %v (the last report)", qw.Queue, last, at(6))
		}
		if rule, _ := policy.Check(policy.DefaultConfig(), w); rule != policy.RuleGap {
			t.Errorf("queue %d: rule %q on a window the switch stopped reporting in, want %q", qw.Queue, rule, policy.RuleGap)
		}
	}
}

// TestPGSourceClockSkew: a switch whose clock is 5 minutes ahead of the
// database's has its batches committed 5 minutes before the instants they
// carry. With the default clock_skew (1 minute) the ledger's reports are
// not found and a steady queue's window has only its start; with
// clock_skew 10m every report is, as for a switch in time.
func TestPGSourceClockSkew(t *testing.T) {
	ctx := context.Background()
	pool := busySwitch(t).pool
	if _, err := pool.Exec(ctx, `UPDATE ingest_ledger SET committed_at = last_ts - interval '5 minutes'`); err != nil {
		t.Fatal(err)
	}
	times := func(src *PGSource) []time.Time {
		t.Helper()
		wins, err := src.Windows(ctx, "n1", t1, t1.Add(6*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var ts []time.Time
		for _, qw := range wins {
			if qw.Queue == 0 {
				for _, s := range qw.Window.Samples {
					ts = append(ts, s.Time)
				}
			}
		}
		return ts
	}
	if got := times(NewPGSource(pool)); len(got) != 1 {
		t.Errorf("clock_skew 1m: queue 0 sampled at %v, want its start only (the reports are missed)", got)
	}
	var every []time.Time
	for i := range 7 {
		every = append(every, t1.Add(time.Duration(i)*time.Second))
	}
	if diff := cmp.Diff(every, times(NewPGSource(pool, WithClockSkew(10*time.Minute)))); diff != "" {
		t.Errorf("clock_skew 10m: queue 0's sample times (-want +got):\n%s", diff)
	}
}

// everyRule is the policy's defaults with every rule on and the switch's
// K_max kept at the first decision (alpha_start 0, rules_off empty), and
// under-use as written (under_use_after_rtt 0, its guard at one BDP).
func everyRule() policy.Config {
	c := policy.DefaultConfig()
	c.AlphaStart, c.RulesOff = 0, nil
	c.UnderUseAfterRTT, c.UnderUseCeilingBDP = 0, 1
	return c
}
