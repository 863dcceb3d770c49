package collector_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"

	"github.com/lhcnp/lhcnp/collector"
	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/config"
	"github.com/lhcnp/lhcnp/collector/internal/switchtest"
)

// TestRestartedSwitchLosesLeaf: a switch restarted without a receiver it
// had (its configuration no longer holds it) sends no delete of it; its
// initial data just leaves it out. The collector deletes it at the new
// stream's sync_response: one delete row (flags bit 1) stamped with the
// restarted switch's oldest new timestamp, so current_config no longer has
// it, while the receiver the switch still has stays. Before the fix
// current_config kept the receiver for ever (this test failed).
func TestRestartedSwitchLosesLeaf(t *testing.T) {
	pool, dsn := newDB(t)
	sw := switchtest.Start(t, "sw1")
	const (
		gone = "/lhcnp/global/rocev2-receivers/receiver[prefix=192.168.0.0/16]/config/prefix"
		kept = "/lhcnp/global/rocev2-receivers/receiver[prefix=10.0.0.0/8]/config/prefix"
	)
	t0 := time.Now().Truncate(time.Millisecond).UnixNano() // whole µs: PostgreSQL keeps µs, to_timestamp below rounds
	sw.Publish(t0, map[string]*gnmi.TypedValue{kept: switchtest.Str("10.0.0.0/8"), gone: switchtest.Str("192.168.0.0/16")})
	c := start(t, testConfig(t, dsn, sw))
	config := func() string {
		var s string
		rs, err := pool.Query(t.Context(), `SELECT path FROM current_config WHERE target = 'sw1' ORDER BY path`)
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		for rs.Next() {
			var p string
			if err := rs.Scan(&p); err != nil {
				t.Fatal(err)
			}
			s += p + "\n"
		}
		return s
	}
	both := kept + "\n" + gone + "\n"
	waitFor(t, 30*time.Second, "both receivers in current_config", func() (bool, string) {
		got := config()
		return got == both, got
	})

	// The switch restarts without the 192.168 receiver.
	sw.Restart()
	restart := t0 + int64(time.Second)
	sw.Publish(restart, map[string]*gnmi.TypedValue{kept: switchtest.Str("10.0.0.0/8")})
	waitFor(t, 30*time.Second, "resubscription", func() (bool, string) {
		subs := testutil.ToFloat64(c.Metrics().Resubscribes.WithLabelValues("sw1"))
		return subs >= 2 && c.Metrics().TargetStates()["sw1"] == "streaming", fmt.Sprintf("%v subscribes", subs)
	})
	waitFor(t, 30*time.Second, "the receiver gone from current_config", func() (bool, string) {
		got := config()
		return got == kept+"\n", got
	})
	c.stop(t)
	if n := count(t, pool, `SELECT count(*) FROM samples s JOIN series r ON r.id = s.series_id
		WHERE r.path = $1 AND s.flags & 2 = 2 AND s.ts = to_timestamp($2::float8 / 1e9)`, gone, float64(restart)); n != 1 {
		t.Errorf("%d delete rows of the receiver at the restart, want 1", n)
	}
	noDuplicates(t, pool)
}

// TestSuppressRedundantSweepsNothingLive: a SAMPLE subscription with
// suppress_redundant sends, between samples, only the leaves that changed;
// a new stream's initial data must still send every leaf before its
// sync_response, or the sweep at that sync_response would delete every
// live leaf that had not changed. The stream is cut after the switch
// suppressed unchanged leaves in several samples and resubscribes: no
// delete row is stored and current_config keeps both receivers. (The
// switch's subscribe server keeps what it last sent per stream, so the
// new stream starts with nothing suppressed; this test guards that.)
func TestSuppressRedundantSweepsNothingLive(t *testing.T) {
	pool, dsn := newDB(t)
	sw := switchtest.Start(t, "sw1")
	const (
		rcvA = "/lhcnp/global/rocev2-receivers/receiver[prefix=192.168.0.0/16]/config/prefix"
		rcvB = "/lhcnp/global/rocev2-receivers/receiver[prefix=10.0.0.0/8]/config/prefix"
	)
	pkts := switchtest.Queue("n1-n2", 3) + "/state/counters/packets"
	t0 := time.Now().Truncate(time.Millisecond).UnixNano() // whole µs: PostgreSQL keeps µs, to_timestamp below rounds
	sw.Publish(t0, map[string]*gnmi.TypedValue{rcvA: switchtest.Str("192.168.0.0/16"), rcvB: switchtest.Str("10.0.0.0/8"),
		pkts: switchtest.Uint(1)})
	cfg := testConfig(t, dsn)
	cfg.Targets = []config.Target{{Name: sw.Name, Address: sw.Addr, Insecure: true, Subscriptions: []config.Subscription{{
		Paths: []string{"/lhcnp"}, Mode: "sample", SampleInterval: config.Duration(20 * time.Millisecond), SuppressRedundant: true}}}}
	cut := &streamCutter{}
	c := start(t, cfg, collector.WithDialOptions(grpc.WithStreamInterceptor(cut.intercept)))
	ctr := func(v uint64) int64 {
		ts := t0 + int64(v)*int64(time.Millisecond)
		sw.Publish(ts, map[string]*gnmi.TypedValue{pkts: switchtest.Uint(v)})
		return ts
	}
	stored := func(ts int64) {
		t.Helper()
		waitFor(t, 30*time.Second, "the counter's value stored", func() (bool, string) {
			n := count(t, pool, `SELECT count(*) FROM samples s JOIN series r ON r.id = s.series_id
				WHERE r.path = $1 AND s.ts = to_timestamp($2::float8 / 1e9)`, pkts, float64(ts))
			return n == 1, ""
		})
	}
	// Several samples in which only the counter changed: the receivers
	// were suppressed.
	for v := range uint64(5) {
		stored(ctr(v + 2))
	}
	cut.cut()
	waitFor(t, 10*time.Second, "the stream to drop", func() (bool, string) {
		st := c.Metrics().TargetStates()[sw.Name]
		return st == "backoff" || st == "connecting", st
	})
	cut.allow()
	waitFor(t, 30*time.Second, "resubscription", func() (bool, string) {
		subs := testutil.ToFloat64(c.Metrics().Resubscribes.WithLabelValues(sw.Name))
		return subs >= 2 && c.Metrics().TargetStates()[sw.Name] == "streaming", fmt.Sprintf("%v subscribes", subs)
	})
	// A value after the new stream's sync_response is stored after the
	// rows of that sync_response.
	stored(ctr(20))
	c.stop(t)
	if n := count(t, pool, `SELECT count(*) FROM samples WHERE flags & 2 = 2`); n != 0 {
		t.Errorf("%d delete rows after the resubscription, want 0", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM current_config WHERE target = 'sw1'`); n != 2 {
		t.Errorf("%d receivers in current_config, want 2", n)
	}
	noDuplicates(t, pool)
}

// TestRestartedSwitchLeafDeletedOnceAcrossHandover: two collectors
// through a switch restart without a receiver, and a handover. a owns the
// switch and drains; b's standby stream knows the receiver (its initial
// data had it). While a waits for its own stream to reach b's sync point
// (a's path to the switch cut), b's stream drops too and the switch
// restarts with only a counter (T1): a's stream, back first, deletes the
// receiver at its sync_response, at T1, and stores it. The counter
// changes (T2: every leaf changed) before b's stream is back: b deletes
// the receiver at its own sync_response, at T2, held until its promotion.
// One delete row of the receiver is stored: the promotion drops b's,
// latest holding a's. Before the fix two were (T1 and T2; this test
// failed).
func TestRestartedSwitchLeafDeletedOnceAcrossHandover(t *testing.T) {
	pool, dsn := newDB(t)
	sw := switchOwnedBy(t, "sw-sweep", "collector-a", "collector-a", "collector-b")
	const gone = "/lhcnp/global/rocev2-receivers/receiver[prefix=192.168.0.0/16]/config/prefix"
	pkts := switchtest.Queue("n1-n2", 0) + "/state/counters/packets"
	t0 := time.Now().Add(-time.Minute).Truncate(time.Millisecond).UnixNano()
	sw.Publish(t0, map[string]*gnmi.TypedValue{gone: switchtest.Str("192.168.0.0/16"), pkts: switchtest.Uint(1)})
	long := func(cfg config.File) config.File { cfg.Leases.TTL = time.Minute; return cfg }
	ca, cb := &streamCutter{}, &streamCutter{}
	a := start(t, long(leaseConfig(t, dsn, "collector-a", sw)), collector.WithDialOptions(grpc.WithStreamInterceptor(ca.intercept)))
	waitStreaming(t, a, sw)
	deletes := func() int64 {
		return count(t, pool, `SELECT count(*) FROM samples s JOIN series r ON r.id = s.series_id
			WHERE r.path = $1 AND s.flags & 2 = 2`, gone)
	}
	waitFor(t, 30*time.Second, "the receiver in current_config", func() (bool, string) {
		return count(t, pool, `SELECT count(*) FROM current_config WHERE path = $1`, gone) == 1, ""
	})
	down := func(c *runningCollector) {
		t.Helper()
		waitFor(t, 30*time.Second, c.ID()+"'s stream to drop", func() (bool, string) {
			st := c.Metrics().TargetStates()[sw.Name]
			return st == "backoff" || st == "connecting", st
		})
	}
	ready := func(want bool) {
		t.Helper()
		waitFor(t, 30*time.Second, fmt.Sprintf("b's standby stream announced to a: %v", want), func() (bool, string) {
			by, _, ok := a.ReadyOf(sw.Name)
			return ok == want, by
		})
	}

	b := start(t, long(leaseConfig(t, dsn, "collector-b", sw)), collector.WithDialOptions(grpc.WithStreamInterceptor(cb.intercept)))
	waitFor(t, 30*time.Second, "b to join", func() (bool, string) {
		return count(t, pool, `SELECT count(*) FROM collectors WHERE id = 'collector-b'`) == 1, ""
	})
	// a's stream drops; the counter changes: b's standby stream syncs at
	// a point a has not received, so a keeps the target while it waits.
	ca.cut()
	down(a)
	sw.Publish(t0+int64(time.Millisecond), map[string]*gnmi.TypedValue{pkts: switchtest.Uint(2)})
	stopped := make(chan struct{})
	go func() { defer close(stopped); a.stop(t) }() // drain: b's standby stream, then the lease to b
	ready(true)
	// b's stream drops (its announcement withdrawn), the switch restarts,
	// a's stream comes back first.
	cb.cut()
	ready(false)
	sw.Restart()
	t1 := time.Now().Truncate(time.Millisecond).UnixNano()
	sw.Publish(t1, map[string]*gnmi.TypedValue{pkts: switchtest.Uint(3)})
	ca.allow()
	waitFor(t, 30*time.Second, "a's delete stored", func() (bool, string) { n := deletes(); return n == 1, fmt.Sprint(n) })
	// Every leaf changes before b's stream is back.
	sw.Publish(t1+int64(time.Millisecond), map[string]*gnmi.TypedValue{pkts: switchtest.Uint(4)})
	cb.allow()
	select {
	case <-stopped:
	case <-time.After(90 * time.Second):
		t.Fatal("a did not drain within 90 s")
	}
	waitStreaming(t, b, sw)
	waitTaken(t, b)
	t3 := t1 + 2*int64(time.Millisecond)
	sw.Publish(t3, map[string]*gnmi.TypedValue{pkts: switchtest.Uint(5)})
	waitFor(t, 30*time.Second, "b's next counter stored", func() (bool, string) {
		return count(t, pool, `SELECT count(*) FROM samples s JOIN series r ON r.id = s.series_id
			WHERE r.path = $1 AND s.ts = to_timestamp($2::float8 / 1e9)`, pkts, float64(t3)) == 1, ""
	})
	b.stop(t)
	if n := deletes(); n != 1 {
		t.Errorf("%d delete rows of the receiver, want 1 (one disappearance)", n)
	}
	if got := testutil.ToFloat64(b.Metrics().Handovers.WithLabelValues("taken", collectormetrics.HandoverMakeBeforeBreak)); got != 1 {
		t.Errorf("b took the target %v times make-before-break, want 1", got)
	}
	noDuplicates(t, pool)
}

// TestSpillOnlyLeafSwept: a receiver created while PostgreSQL was down
// reaches only the spill (no path of it in latest); the collector is
// restarted during the outage, and the switch restarts without the
// receiver. The next collector replays the spill (the receiver's value is
// stored) and its stream's sync_response deletes the receiver: the spill
// seeds its path (SeedSpilled). Before, a series known only from the spill
// was not swept: current_config and latest kept the receiver for ever
// (this test failed).
func TestSpillOnlyLeafSwept(t *testing.T) {
	srv, pool, dsn := newPrivateDB(t)
	sw := switchtest.Start(t, "sw1")
	const (
		gone = "/lhcnp/global/rocev2-receivers/receiver[prefix=192.168.0.0/16]/config/prefix"
		kept = "/lhcnp/global/rocev2-receivers/receiver[prefix=10.0.0.0/8]/config/prefix"
	)
	t0 := time.Now().Truncate(time.Millisecond).UnixNano() // whole µs: PostgreSQL keeps µs, to_timestamp below rounds
	sw.Publish(t0, map[string]*gnmi.TypedValue{kept: switchtest.Str("10.0.0.0/8")})
	cfg := testConfig(t, dsn, sw)
	short := collector.WithDrainTimeout(time.Second)
	c := start(t, cfg, short)
	waitFor(t, 30*time.Second, "the receiver in current_config", func() (bool, string) {
		return count(t, pool, `SELECT count(*) FROM current_config WHERE path = $1`, kept) == 1, ""
	})
	pool.Close()
	stopServer(t, srv)
	received := testutil.ToFloat64(c.Metrics().Notifications.WithLabelValues("sw1"))
	sw.Publish(t0+int64(time.Millisecond), map[string]*gnmi.TypedValue{gone: switchtest.Str("192.168.0.0/16")})
	waitFor(t, 30*time.Second, "the new receiver received, its batch not stored", func() (bool, string) {
		return testutil.ToFloat64(c.Metrics().Notifications.WithLabelValues("sw1")) > received &&
			testutil.ToFloat64(c.Metrics().DBUp) == 0, ""
	})
	c.stop(t) // the drain cannot store: the receiver goes to the spill

	sw.Restart()
	restart := t0 + int64(time.Second)
	sw.Publish(restart, map[string]*gnmi.TypedValue{kept: switchtest.Str("10.0.0.0/8")})
	pool = restartServer(t, srv)
	c = start(t, cfg, short)
	waitFor(t, 30*time.Second, "the spilled receiver stored", func() (bool, string) {
		return count(t, pool, `SELECT count(*) FROM samples s JOIN series r ON r.id = s.series_id
			WHERE r.path = $1 AND s.flags & 2 = 0`, gone) == 1, ""
	})
	waitFor(t, 30*time.Second, "the receiver gone from current_config", func() (bool, string) {
		n := count(t, pool, `SELECT count(*) FROM current_config WHERE path = $1`, gone)
		return n == 0, fmt.Sprint(n)
	})
	c.stop(t)
	if n := count(t, pool, `SELECT count(*) FROM samples s JOIN series r ON r.id = s.series_id
		WHERE r.path = $1 AND s.flags & 2 = 2 AND s.ts = to_timestamp($2::float8 / 1e9)`, gone, float64(restart)); n != 1 {
		t.Errorf("%d delete rows of the receiver at the restart, want 1", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM current_config WHERE path = $1`, kept); n != 1 {
		t.Errorf("the kept receiver: %d rows in current_config, want 1", n)
	}
	noDuplicates(t, pool)
}
