package collector_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lhcnp/lhcnp/collector"
	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/config"
	"github.com/lhcnp/lhcnp/collector/internal/switchtest"
	"github.com/lhcnp/lhcnp/collector/lease"
)

// leaseConfig is testConfig with leases on, for collector id.
func leaseConfig(t testing.TB, dsn, id string, sws ...*switchtest.Switch) config.File {
	cfg := testConfig(t, dsn, sws...)
	cfg.ID = id
	cfg.Leases = config.Leases{Enabled: true, TTL: 3 * time.Second, Renew: 200 * time.Millisecond}
	return cfg
}

// waitLastRound waits until the last round p published is stored (a
// collector stores a target's rows in order: the others are stored too).
func waitLastRound(t testing.TB, pool *pgxpool.Pool, p *publisher) {
	t.Helper()
	waitProgress(t, 30*time.Second, "storing "+p.sw.Name+"'s last round", func() (bool, int, string) {
		rs := storedRounds(t, pool, p)
		done, sum, msg := true, 0, ""
		for _, leaf := range p.paths {
			r := rs[leaf]
			sum += len(r)
			if len(r) == 0 || r[len(r)-1] != int(p.n) {
				done = false
				msg = fmt.Sprintf("%s: rounds stored %v, last published %d", leaf, tail(r), p.n)
			}
		}
		return done, sum, msg
	})
}

// TestCrashedHolderNoWakeStorm: collector a crashed holding the leases of
// two targets; b and c, which rendezvous hashing now gives one each, stream
// them on standby while a's leases run. Each announces that it is ready
// once its stream syncs and then at most once per renewal — a Ready from
// one does not wake the other (which would announce again, and wake the
// first...) — and each takes its target when the lease expires.
//
// The test drives the lease's expiry (it had a TTL of 3 s, which a loaded
// machine could spend before a standby stream synced, so that no Ready was
// announced, or whose expiry it could notice late, so that more renewals'
// Readys fell within it): a's leases run for an hour until the test sets
// them expired, once both have announced a few times; the bound on the
// announcements is the renewals in the time they had.
func TestCrashedHolderNoWakeStorm(t *testing.T) {
	pool, dsn := newDB(t)
	ids := []string{"collector-b", "collector-c"}
	var sws []*switchtest.Switch
	var pubs []*publisher
	for i := 0; len(sws) < len(ids); i++ {
		name := fmt.Sprintf("sw-crash%d", i)
		if lease.Owner(ids, name) == ids[len(sws)] {
			sw := switchtest.Start(t, name)
			sws = append(sws, sw)
			pubs = append(pubs, newPublisher(sw, "n1-n2"))
		}
	}
	const renew = 200 * time.Millisecond
	holdLeases(t, pool, time.Hour, sws...)
	started := time.Now()
	var cs []*runningCollector
	for _, id := range ids {
		cfg := leaseConfig(t, dsn, id, sws...)
		cfg.Leases.Renew = renew
		cs = append(cs, start(t, cfg))
	}
	// One announcement when the standby stream synced, then one per
	// renewal: three mean two renewals passed with a's lease running.
	const announced = 3
	for i, c := range cs {
		waitFor(t, 30*time.Second, c.ID()+" to announce Ready for "+sws[i].Name+" three times", func() (bool, string) {
			n := testutil.ToFloat64(c.Metrics().ReadyAnnounced)
			return n >= announced, fmt.Sprintf("%v announced; states %v", n, c.Metrics().TargetStates())
		})
	}
	// Per standby stream, the first and then at most one per renewal
	// (placement.Announce: 9/10 of one apart) in the time since the
	// collectors started, and slack for a pass on either side; b stands by
	// for both targets until c joins. A machine that runs the collectors
	// slowly makes fewer, a wake storm many more.
	for _, c := range cs {
		got := testutil.ToFloat64(c.Metrics().ReadyAnnounced)
		since := time.Since(started)
		bound := float64(len(sws))*float64(since/(renew*9/10)+1) + 1
		t.Logf("%s announced Ready %v times in the %v since the collectors started (bound %v)", c.ID(), got, since.Round(time.Millisecond), bound)
		if got < announced || got > bound {
			t.Errorf("%s announced Ready %v times while a's lease ran, want %d..%v", c.ID(), got, announced, bound)
		}
	}
	// a's leases expire now.
	for _, sw := range sws {
		if _, err := pool.Exec(context.Background(), `UPDATE leases SET expires_at = now() - interval '1 second' WHERE target = $1`, sw.Name); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cs {
		waitFor(t, 30*time.Second, c.ID()+" to take "+sws[i].Name, func() (bool, string) {
			return fmt.Sprint(c.Running()) == fmt.Sprint([]string{sws[i].Name}) && allStreaming(c),
				fmt.Sprint(c.Metrics().TargetStates())
		})
	}
	for _, p := range pubs {
		p.round()
		waitLastRound(t, pool, p)
	}
	for _, c := range cs {
		c.stop(t)
	}
	noDuplicates(t, pool)
}

// TestStaleReadyIgnored: the collector that should take a target over
// (here b, a member whose messages the test sends) announces its standby
// stream, then withdraws it (the stream dropped). The owner, a, which was
// waiting for its own stream to reach the announced sync point, collects on
// past it; it hands over only on b's next announcement (a new stream
// session).
func TestStaleReadyIgnored(t *testing.T) {
	pool, dsn := newDB(t)
	sw := switchOwnedBy(t, "sw-stale", "collector-b", "collector-a", "collector-b")
	p := newPublisher(sw, "n1-n2")
	p.round()
	cfg := leaseConfig(t, dsn, "collector-a", sw)
	cfg.Leases.TTL = time.Minute // no break-before-make during the test
	a := start(t, cfg)
	waitStreaming(t, a, sw)
	joinFake(t, pool, "collector-b")
	waitListening(t, pool, a)
	notify := func(h lease.Handover) { notifyHandover(t, pool, h) }
	readyOf := func(want uint64) func() (bool, string) {
		return func() (bool, string) {
			by, session, ok := a.ReadyOf(sw.Name)
			return ok == (want != 0) && session == want, fmt.Sprintf("ready %v: %s session %d", ok, by, session)
		}
	}
	// b's first stream synced at round 10, which a has not received yet.
	notify(lease.Handover{Target: sw.Name, Ready: "collector-b", Session: 1, SyncPoint: p.ts0 + 10*int64(time.Millisecond)})
	waitFor(t, 10*time.Second, "a to hear b's announcement", readyOf(1))
	notify(lease.Handover{Target: sw.Name, NotReady: "collector-b", Session: 1})
	waitFor(t, 10*time.Second, "a to hear b's withdrawal", readyOf(0))
	for p.n < 20 {
		p.round()
	}
	waitLastRound(t, pool, p)
	if got := a.Running(); fmt.Sprint(got) != "["+sw.Name+"]" {
		t.Fatalf("a runs %v after b withdrew its announcement, want [%s]", got, sw.Name)
	}
	if got := testutil.ToFloat64(a.Metrics().Handovers.WithLabelValues("given", collectormetrics.HandoverMakeBeforeBreak)); got != 0 {
		t.Fatalf("a handed %v targets over on a withdrawn announcement", got)
	}

	// b's next stream: a hands over once it has received as far.
	notify(lease.Handover{Target: sw.Name, Ready: "collector-b", Session: 2, SyncPoint: p.ts})
	waitFor(t, 10*time.Second, "a to hand the target over", func() (bool, string) {
		return len(a.Running()) == 0, fmt.Sprint(a.Running())
	})
	waitHandedOver(t, a, 1)
	if n := count(t, pool, `SELECT count(*) FROM leases WHERE target = $1 AND expires_at > now()`, sw.Name); n != 0 {
		t.Errorf("a's lease of %s not released", sw.Name)
	}
	waitLastRound(t, pool, p)
	noDuplicates(t, pool)
}

// notifyHandover sends h on the handover channel, as a collector would.
func notifyHandover(t testing.TB, pool *pgxpool.Pool, h lease.Handover) {
	t.Helper()
	data, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(context.Background(), `SELECT pg_notify($1, $2)`, lease.HandoverChannel, string(data)); err != nil {
		t.Fatal(err)
	}
}

// waitListening waits until c LISTENs on the handover channel (a message
// sent before would be lost): its listening connection's last statement.
func waitListening(t testing.TB, pool *pgxpool.Pool, c *runningCollector) {
	t.Helper()
	waitFor(t, 30*time.Second, c.ID()+" to listen", func() (bool, string) {
		n := count(t, pool, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND query = $2`,
			"lhcnp-collector "+c.ID(), "LISTEN "+lease.HandoverChannel)
		return n == 1, ""
	})
}

// joinFake makes id a member of the collectors (its heartbeat stays valid
// for an hour); the test speaks for it (notifyHandover).
func joinFake(t testing.TB, pool *pgxpool.Pool, id string) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `INSERT INTO collectors (id, heartbeat_at) VALUES ($1, now() + interval '1 hour')`, id); err != nil {
		t.Fatal(err)
	}
}

// TestSlowHandoverDoesNotStallRenewals: a handover waits (here until the
// owner's stream reaches the new owner's sync point, which the switch has
// not published yet) in a goroutine of its own: meanwhile the owner renews
// its leases, that of the target being handed over and that of the target
// it keeps. Once the stream gets there, the target goes make-before-break.
func TestSlowHandoverDoesNotStallRenewals(t *testing.T) {
	pool, dsn := newDB(t)
	members := []string{"collector-a", "collector-b"}
	var move, keep *switchtest.Switch
	for i := 0; move == nil || keep == nil; i++ {
		name := fmt.Sprintf("sw-slow%d", i)
		switch owner := lease.Owner(members, name); {
		case owner == "collector-b" && move == nil:
			move = switchtest.Start(t, name)
		case owner == "collector-a" && keep == nil:
			keep = switchtest.Start(t, name)
		}
	}
	p := newPublisher(move, "n1-n2")
	p.round()
	newPublisher(keep, "n1-n2").round()
	cfg := leaseConfig(t, dsn, "collector-a", move, keep)
	cfg.Leases.TTL = time.Minute // the handover may wait 30 s for the sync point
	a := start(t, cfg)
	waitFor(t, 30*time.Second, "a streaming both", func() (bool, string) {
		return len(a.Running()) == 2 && allStreaming(a), fmt.Sprint(a.Metrics().TargetStates())
	})
	joinFake(t, pool, "collector-b")
	expiry := func(name string) time.Time {
		var at time.Time
		if err := pool.QueryRow(context.Background(), `SELECT expires_at FROM leases WHERE target = $1`, name).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	waitListening(t, pool, a)
	notifyHandover(t, pool, lease.Handover{Target: move.Name, Ready: "collector-b", Session: 1, SyncPoint: p.ts0 + 30*int64(time.Millisecond)})
	waitFor(t, 10*time.Second, "a to hear b's announcement", func() (bool, string) {
		_, session, _ := a.ReadyOf(move.Name)
		return session == 1, ""
	})
	before := map[string]time.Time{move.Name: expiry(move.Name), keep.Name: expiry(keep.Name)}
	waitFor(t, 10*time.Second, "both leases renewed for a second while the handover waits", func() (bool, string) {
		var got []string
		ok := true
		for name, at := range before {
			d := expiry(name).Sub(at)
			ok = ok && d > time.Second
			got = append(got, fmt.Sprintf("%s renewed by %v", name, d))
		}
		return ok, fmt.Sprint(got)
	})
	if got := a.Running(); len(got) != 2 {
		t.Fatalf("a runs %v while its stream has not reached the sync point, want both", got)
	}
	for p.n < 30 {
		p.round()
	}
	waitFor(t, 10*time.Second, "a to hand "+move.Name+" over", func() (bool, string) {
		return fmt.Sprint(a.Running()) == "["+keep.Name+"]", fmt.Sprint(a.Running())
	})
	waitHandedOver(t, a, 1)
	if got := testutil.ToFloat64(a.Metrics().LeaseRenewals.WithLabelValues("error")); got != 0 {
		t.Errorf("%v lease renewals failed", got)
	}
	// a stored every round before b's sync point (round 30); the values at
	// it are in b's initial sync. (The switch sends a round as a
	// notification per leaf: a may stop after the first leaf of round 30.)
	rs := storedRounds(t, pool, p)
	for _, leaf := range p.paths {
		if missing := missingRounds(rs[leaf], 29); len(missing) > 0 {
			t.Errorf("%s: rounds %v of 1..29 not stored by a", leaf, missing)
		}
	}
	noDuplicates(t, pool)
	// b leaves: a, alone, drains at once.
	if _, err := pool.Exec(context.Background(), `DELETE FROM collectors WHERE id = 'collector-b'`); err != nil {
		t.Fatal(err)
	}
	a.stop(t)
}

// waitHandedOver waits until c has released n leases make-before-break
// (the handovers_total metric goes up once the lease is released).
func waitHandedOver(t testing.TB, c *runningCollector, n float64) {
	t.Helper()
	waitFor(t, 10*time.Second, c.ID()+" to release the lease", func() (bool, string) {
		got := testutil.ToFloat64(c.Metrics().Handovers.WithLabelValues("given", collectormetrics.HandoverMakeBeforeBreak))
		return got == n, fmt.Sprintf("%v given make-before-break", got)
	})
}

// TestStandbyWithdrawsReady: a collector streaming a target on standby
// (another collector's lease runs) announces Ready for its stream; when
// the stream drops (the switch goes down) it withdraws the announcement,
// and announces the next stream, a new session, once it has synced.
func TestStandbyWithdrawsReady(t *testing.T) {
	pool, dsn := newDB(t)
	sw := switchtest.Start(t, "sw-withdraw")
	newPublisher(sw, "n1-n2").round()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+lease.HandoverChannel); err != nil {
		t.Fatal(err)
	}
	holdLeases(t, pool, time.Hour, sw)
	// next returns the next message of b that is not a repeat of last.
	var last lease.Handover
	next := func() lease.Handover {
		t.Helper()
		for {
			n, err := conn.Conn().WaitForNotification(ctx)
			if err != nil {
				t.Fatalf("no handover message (the last: %+v): %v", last, err)
			}
			h, err := lease.ParseHandover(n.Payload)
			if err != nil {
				t.Fatal(err)
			}
			if h != last {
				last = h
				return h
			}
		}
	}
	b := start(t, leaseConfig(t, dsn, "collector-b", sw))
	if h := next(); h.Ready != "collector-b" || h.Session != 1 || h.SyncPoint == 0 {
		t.Fatalf("first message %+v, want b ready in session 1", h)
	}
	sw.Stop()
	if h := next(); h.NotReady != "collector-b" || h.Session != 1 {
		t.Fatalf("after the stream dropped: %+v, want b's session 1 withdrawn", h)
	}
	sw.Restart()
	newPublisher(sw, "n1-n2").round()
	if h := next(); h.Ready != "collector-b" || h.Session != 2 {
		t.Fatalf("after the switch came back: %+v, want b ready in session 2", h)
	}
	b.stop(t)
}

// TestStandbyBudgetShared: the standby streams of a collector hold at most
// writer.queue_rows rows together (not each); past that they let go of
// their oldest, counted by standby_discarded_rows_total, not as dropped
// rows (the owner stores them).
func TestStandbyBudgetShared(t *testing.T) {
	pool, dsn := newDB(t)
	sws, pubs := startSwitches(t, "sw-budget", 2)
	holdLeases(t, pool, time.Hour, sws...)
	cfg := leaseConfig(t, dsn, "collector-b", sws...)
	cfg.Writer.QueueRows, cfg.Writer.BatchRows = 100, 10
	b := start(t, cfg)
	waitFor(t, 30*time.Second, "both on standby", func() (bool, string) {
		s := b.Metrics().TargetStates()
		return s[sws[0].Name] == "standby" && s[sws[1].Name] == "standby", fmt.Sprint(s)
	})
	for range 150 {
		for _, p := range pubs {
			p.round()
		}
	}
	var published float64
	for _, p := range pubs {
		published += float64(p.published())
	}
	m := b.Metrics()
	waitFor(t, 30*time.Second, "every row held or let go of", func() (bool, string) {
		held, discarded := testutil.ToFloat64(m.StandbyRows), testutil.ToFloat64(m.StandbyDiscarded)
		return held+discarded >= published, fmt.Sprintf("%v held, %v let go of, %v published", held, discarded, published)
	})
	// Each loop keeps its newest batch: up to a batch over the budget each.
	if held := testutil.ToFloat64(m.StandbyRows); held > float64(cfg.Writer.QueueRows+2*cfg.Writer.BatchRows) {
		t.Errorf("the standby streams hold %v rows together, budget %d", held, cfg.Writer.QueueRows)
	}
	for _, reason := range []string{collectormetrics.DropSpillFull, collectormetrics.DropSpillError, collectormetrics.DropSpillCorrupt, collectormetrics.DropStaleEpoch} {
		if got := testutil.ToFloat64(m.DroppedRows.WithLabelValues(reason)); got != 0 {
			t.Errorf("%v rows dropped as %s", got, reason)
		}
	}
	b.stop(t)
	if held := testutil.ToFloat64(m.StandbyRows); held != 0 {
		t.Errorf("%v rows held after the standby loops stopped", held)
	}
}

// holdLeases gives the leases of sws to collector-a, not a member (what a
// crashed collector leaves), for d.
func holdLeases(t testing.TB, pool *pgxpool.Pool, d time.Duration, sws ...*switchtest.Switch) {
	t.Helper()
	for _, sw := range sws {
		if _, err := pool.Exec(context.Background(), `INSERT INTO leases (target, owner, epoch, expires_at)
			VALUES ($1, 'collector-a', 1, now() + $2 * interval '1 millisecond')`, sw.Name, d.Milliseconds()); err != nil {
			t.Fatal(err)
		}
	}
}

// startSwitches starts n switches named prefix0... with a publisher each
// (one round published).
func startSwitches(t testing.TB, prefix string, n int) ([]*switchtest.Switch, []*publisher) {
	var sws []*switchtest.Switch
	var pubs []*publisher
	for i := range n {
		sw := switchtest.Start(t, fmt.Sprintf("%s%d", prefix, i))
		sws = append(sws, sw)
		pubs = append(pubs, newPublisher(sw, "n1-n2"))
		pubs[i].round()
	}
	return sws, pubs
}

// TestFailedPromotionLosesNothing: the collector taking a target over
// (b, as a drains) cannot read the latest table when it promotes its
// standby stream: once, or more often than the four tries a promotion once
// had (after which it dropped its standby stream, and the values replaced
// before a fresh stream synced were lost). It retries for as long as it
// holds the lease, its standby stream holding the rows meanwhile; once
// the table answers, the standby is promoted and every round the switch
// published throughout is stored exactly once. The failed reads are
// counted (latest_read_errors_total{phase="promote"}) and the handover is
// make-before-break on both sides.
func TestFailedPromotionLosesNothing(t *testing.T) {
	for _, tt := range []struct {
		desc     string
		failures int64
	}{
		{"the first read fails", 1},
		{"six reads fail", 6},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			pool, dsn := newDB(t)
			sw := switchOwnedBy(t, "sw-promote", "collector-a", "collector-a", "collector-b") // a keeps it until it drains
			p := newPublisher(sw, "n1-n2")
			p.round()
			// A drain waits for the new owner's standby stream at most
			// leases.ttl: 3 s, the other tests' TTL, is shorter than a
			// standby's sync at a CI machine's load (b then took the lease
			// over with no standby to promote, and failed no read).
			long := func(cfg config.File) config.File { cfg.Leases.TTL = 15 * time.Second; return cfg }
			a := start(t, long(leaseConfig(t, dsn, "collector-a", sw)))
			waitStreaming(t, a, sw)
			// The last failing read waits for the test to look at b.
			var reads atomic.Int64
			failing, resume := make(chan struct{}), make(chan struct{})
			var once sync.Once
			release := func() { once.Do(func() { close(resume) }) }
			b := start(t, long(leaseConfig(t, dsn, "collector-b", sw)), collector.WithReadLatestFault(func(string) error {
				switch n := reads.Add(1); {
				case n == tt.failures:
					close(failing)
					<-resume
					fallthrough
				case n < tt.failures:
					return errors.New("injected: latest table not readable")
				}
				return nil
			}))
			t.Cleanup(release)
			pu := startPump([]*publisher{p}, 10*time.Millisecond)
			defer pu.stop()
			waitFor(t, 30*time.Second, "rows flowing", func() (bool, string) { return samplesOf(t, pool, sw.Name) > 20, "" })
			// b is a member before a drains (else a, alone, stops at once and
			// b takes a free lease: no standby to promote).
			waitFor(t, 30*time.Second, "b to join", func() (bool, string) {
				return count(t, pool, `SELECT count(*) FROM collectors WHERE id = 'collector-b'`) == 1, ""
			})

			a.stop(t) // drain: b takes the lease and promotes its standby stream
			select {
			case <-failing:
			case <-time.After(30 * time.Second):
				t.Fatalf("b did not fail %d reads of the latest table within 30 s: %d reads", tt.failures, reads.Load())
			}
			if got, want := fmt.Sprint(b.Running()), "["+sw.Name+"]"; got != want {
				t.Errorf("b runs %s while its promotion retries, want %s (the lease is b's)", got, want)
			}
			if st := b.Metrics().TargetStates()[sw.Name]; st != "standby" {
				t.Errorf("%s is %q on b while its promotion retries, want standby (rows held)", sw.Name, st)
			}
			if n := count(t, pool, `SELECT count(*) FROM leases WHERE target = $1 AND owner = 'collector-b' AND expires_at > now()`, sw.Name); n != 1 {
				t.Errorf("b does not hold the lease of %s while its promotion retries", sw.Name)
			}
			release()
			waitStreaming(t, b, sw)
			m := b.Metrics()
			waitTaken(t, b)
			base := samplesOf(t, pool, sw.Name)
			waitFor(t, 30*time.Second, "rounds stored from b", func() (bool, string) {
				n := samplesOf(t, pool, sw.Name) - base
				return n >= int64(5*len(p.paths)), fmt.Sprintf("%d more samples", n)
			})
			pu.stop()
			waitLastRound(t, pool, p)
			b.stop(t)

			if got := testutil.ToFloat64(m.LatestReadErrors.WithLabelValues("promote")); got != float64(tt.failures) {
				t.Errorf("%v failed reads of the latest table counted on promotion, want %d", got, tt.failures)
			}
			if got := testutil.ToFloat64(m.Handovers.WithLabelValues("taken", collectormetrics.HandoverMakeBeforeBreak)); got != 1 {
				t.Errorf("b took %v targets make-before-break, want 1", got)
			}
			if got := testutil.ToFloat64(a.Metrics().Handovers.WithLabelValues("given", collectormetrics.HandoverMakeBeforeBreak)); got != 1 {
				t.Errorf("a gave %v targets make-before-break, want 1", got)
			}
			noDuplicates(t, pool)
			rs := storedRounds(t, pool, p)
			for _, leaf := range p.paths {
				if missing := missingRounds(rs[leaf], int(p.n)); len(missing) > 0 {
					t.Errorf("%s: rounds %v of 1..%d not stored", leaf, missing, p.n)
				}
			}
		})
	}
}

// waitTaken waits until c has counted one takeover (of either kind).
func waitTaken(t testing.TB, c *runningCollector) {
	t.Helper()
	m := c.Metrics()
	waitFor(t, 30*time.Second, c.ID()+" to count the takeover", func() (bool, string) {
		mbb := testutil.ToFloat64(m.Handovers.WithLabelValues("taken", collectormetrics.HandoverMakeBeforeBreak))
		bbm := testutil.ToFloat64(m.Handovers.WithLabelValues("taken", collectormetrics.HandoverBreakBeforeMake))
		return mbb+bbm == 1, fmt.Sprintf("taken %v make-before-break, %v break-before-make", mbb, bbm)
	})
}

// streamCutter is a gRPC client interceptor that cuts a collector's
// streams on demand and refuses new ones until allowed: the collector's
// path to the switch breaks, while other clients' stays up.
type streamCutter struct {
	mu      sync.Mutex
	refuse  bool
	cancels []context.CancelFunc
}

func (c *streamCutter) intercept(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
	streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	c.mu.Lock()
	if c.refuse {
		c.mu.Unlock()
		return nil, status.Error(codes.Unavailable, "injected: the switch cannot be reached")
	}
	ctx, cancel := context.WithCancel(ctx)
	c.cancels = append(c.cancels, cancel)
	c.mu.Unlock()
	return streamer(ctx, desc, cc, method, opts...)
}

// cut breaks the streams open and refuses new ones.
func (c *streamCutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refuse = true
	for _, cancel := range c.cancels {
		cancel()
	}
	c.cancels = nil
}

// allow lets new streams through again.
func (c *streamCutter) allow() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refuse = false
}

// TestStandbyDropAfterFinalCheck: the stream a collector announced on
// standby (b's) drops just after the owner (a) took its last look at the
// announcement — a has stopped its own stream and is about to release the
// lease. b takes the lease and promotes its loop all the same, and judges
// the junction from the stream it streams next: when the switch published
// nothing meanwhile, that stream syncs at or before the newest value a
// stored, nothing is lost, and b counts the takeover make-before-break;
// when the switch published three rounds meanwhile, b's next stream
// re-syncs with the last of them (stored), the two before it are in
// neither stream, and b counts a break-before-make. a, which could not
// see the drop, counts what it saw: make-before-break.
func TestStandbyDropAfterFinalCheck(t *testing.T) {
	for _, tt := range []struct {
		desc     string
		gap      int // rounds published while neither collector streams
		wantKind string
	}{
		{"nothing published meanwhile", 0, collectormetrics.HandoverMakeBeforeBreak},
		{"three rounds published meanwhile", 3, collectormetrics.HandoverBreakBeforeMake},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			pool, dsn := newDB(t)
			sw := switchOwnedBy(t, "sw-drop", "collector-b", "collector-a", "collector-b")
			p := newPublisher(sw, "n1-n2")
			p.round()
			stopped, resume := make(chan struct{}), make(chan struct{})
			cfg := leaseConfig(t, dsn, "collector-a", sw)
			cfg.Leases.TTL = time.Minute // no lease expires during the test
			a := start(t, cfg, collector.WithHandedOff(func(string) {
				close(stopped)
				<-resume
			}))
			waitStreaming(t, a, sw)
			for range 4 {
				p.round()
			}
			waitLastRound(t, pool, p)
			cut := &streamCutter{}
			cfg = leaseConfig(t, dsn, "collector-b", sw)
			cfg.Leases.TTL = time.Minute
			b := start(t, cfg, collector.WithDialOptions(grpc.WithStreamInterceptor(cut.intercept)))
			select {
			case <-stopped:
			case <-time.After(30 * time.Second):
				t.Fatal("a did not hand the target over within 30 s")
			}
			// a has checked b's announcement and stopped its stream: b's
			// stream drops now, and the switch publishes while neither
			// streams.
			cut.cut()
			waitFor(t, 10*time.Second, "b's stream to drop", func() (bool, string) {
				st := b.Metrics().TargetStates()[sw.Name]
				return st == "backoff" || st == "connecting", st
			})
			last := int(p.n)
			for range tt.gap {
				p.round()
			}
			close(resume)
			waitFor(t, 30*time.Second, "b to take the lease", func() (bool, string) {
				n := count(t, pool, `SELECT count(*) FROM leases WHERE target = $1 AND owner = 'collector-b' AND expires_at > now()`, sw.Name)
				return n == 1 && fmt.Sprint(b.Running()) == "["+sw.Name+"]", fmt.Sprint(b.Running())
			})
			cut.allow()
			m := b.Metrics()
			waitTaken(t, b)
			for range 3 {
				p.round()
			}
			waitLastRound(t, pool, p)
			a.stop(t)
			b.stop(t)

			if got := testutil.ToFloat64(m.Handovers.WithLabelValues("taken", tt.wantKind)); got != 1 {
				t.Errorf("b took the target %v times as %s, want 1", got, tt.wantKind)
			}
			if got := testutil.ToFloat64(a.Metrics().Handovers.WithLabelValues("given", collectormetrics.HandoverMakeBeforeBreak)); got != 1 {
				t.Errorf("a gave %v targets make-before-break, want 1", got)
			}
			noDuplicates(t, pool)
			var want []int // the rounds superseded in the gap, in neither stream
			for r := last + 1; r < last+tt.gap; r++ {
				want = append(want, r)
			}
			rs := storedRounds(t, pool, p)
			for _, leaf := range p.paths {
				if d := cmp.Diff(want, missingRounds(rs[leaf], int(p.n))); d != "" {
					t.Errorf("%s: rounds not stored (-want +got):\n%s", leaf, d)
				}
			}
		})
	}
}

// switchOwnedBy starts a switch named prefix0, prefix1, ... : the first
// that rendezvous hashing gives owner among members.
func switchOwnedBy(t testing.TB, prefix, owner string, members ...string) *switchtest.Switch {
	t.Helper()
	for i := 0; ; i++ {
		if name := fmt.Sprintf("%s%d", prefix, i); lease.Owner(members, name) == owner {
			return switchtest.Start(t, name)
		}
	}
}

// waitStreaming waits until c runs exactly sws, all streaming.
func waitStreaming(t testing.TB, c *runningCollector, sws ...*switchtest.Switch) {
	t.Helper()
	var want []string
	for _, sw := range sws {
		want = append(want, sw.Name)
	}
	waitFor(t, 30*time.Second, c.ID()+" streaming "+fmt.Sprint(want), func() (bool, string) {
		return fmt.Sprint(c.Running()) == fmt.Sprint(want) && allStreaming(c), fmt.Sprint(c.Metrics().TargetStates())
	})
}

// TestLeaseCountersServedAtStart: a collector with leases on serves
// handovers_total (each direction and kind: five series) and
// lease_renewals_total (each result: four) from its start, before any
// handover or renewal, so that increase() sees the first; one without
// leases serves neither. Before, both appeared with their first event.
func TestLeaseCountersServedAtStart(t *testing.T) {
	_, dsn := newDB(t)
	for _, tt := range []struct {
		desc                string
		leases              bool
		handovers, renewals int
	}{{"leases on", true, 5, 4}, {"leases off", false, 0, 0}} {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := testConfig(t, dsn)
			if tt.leases {
				cfg = leaseConfig(t, dsn, "collector-a")
			}
			c := start(t, cfg) // no targets: nothing to hand over or renew
			for name, want := range map[string]int{collectormetrics.Prefix + "handovers_total": tt.handovers,
				collectormetrics.Prefix + "lease_renewals_total": tt.renewals} {
				if n, err := testutil.GatherAndCount(c.Metrics().Registry, name); err != nil || n != want {
					t.Errorf("%s: %d series (%v), want %d", name, n, err, want)
				}
			}
		})
	}
}
