package collector_test

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lhcnp/lhcnp/collector"
	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/config"
	"github.com/lhcnp/lhcnp/collector/internal/switchtest"
	"github.com/lhcnp/lhcnp/collector/rows"
)

// cnpFeed publishes on one switch what publisher does (a queue's depth and
// packets, new values every round) and, every cnpEvery rounds, a Long-haul
// CNP: the queue's last-cnp leaves, the timestamp the round's, the action
// going round three values, the congestion level and source address the
// same every time (the switch sends a leaf only when it changes, so after
// a restart the collector must know them from before). It is safe for a
// pump and the test to use at once.
type cnpFeed struct {
	mu   sync.Mutex
	p    *publisher
	cnps []cnpSent
}

const cnpEvery = 20

type cnpSent struct {
	round  int
	ts     int64
	action string
}

func newCNPFeed(sw *switchtest.Switch) *cnpFeed {
	f := &cnpFeed{p: newPublisher(sw, "n1-n2")}
	f.round()
	return f
}

func (f *cnpFeed) round() {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.p
	p.n++
	p.ts += int64(time.Millisecond)
	leaves := map[string]*gnmi.TypedValue{}
	for _, path := range p.paths {
		leaves[path] = switchtest.Uint(p.n * 10)
	}
	if p.n%cnpEvery == 0 {
		lc := switchtest.Queue("n1-n2", 0) + "/state/last-cnp/"
		action := []string{"PAUSE", "RATE_REDUCE", "RESUME"}[len(f.cnps)%3]
		leaves[lc+"timestamp"] = switchtest.Uint(uint64(p.ts))
		leaves[lc+"action"] = switchtest.Str(action)
		leaves[lc+"congestion-level"] = switchtest.Uint(200)
		leaves[lc+"source-address"] = switchtest.Str("2001:db8::1")
		f.cnps = append(f.cnps, cnpSent{round: int(p.n), ts: p.ts, action: action})
	}
	p.sw.Publish(p.ts, leaves)
}

// rounds is the number of rounds published so far.
func (f *cnpFeed) rounds() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return int(f.p.n)
}

// gap is a time no collector streamed the switch: for each leaf, from the
// last round of it the stopped collector received (after, by leaf path) to
// the round of the next stream's sync (upTo, read once it streams). A
// round in it that no stream delivered is the legitimate loss of gNMI: the
// switch sends a leaf's current value, not the values it had in between.
// A round's leaves can reach the collector in two notifications and a stop
// can come between them, so each leaf has its own start: a round one leaf
// of which was received is checked for that leaf. The CNP events' gap
// starts at the oldest leaf's (cnpAfter): the CNP leaves are not among
// the leaves followed.
type gap struct {
	after          map[string]int
	cnpAfter, upTo int
}

func (g gap) String() string {
	return fmt.Sprintf("{after %v (CNPs %d) up to %d}", g.after, g.cnpAfter, g.upTo)
}

// tally is what a run stored against what the feed published.
type tally struct {
	rounds, lost, lostOutsideGaps, dupRows int
	cnps, cnpsLost, cnpsOutsideGaps        int
	eventsDup, eventsWrong, eventsUnknown  int
}

func (tl tally) String() string {
	return fmt.Sprintf("%d rounds × 2 leaves published, %d samples lost (%d outside the gaps), %d stored twice; "+
		"%d CNPs published, %d lost (%d outside the gaps), %d stored twice, %d with wrong fields, %d never published",
		tl.rounds, tl.lost, tl.lostOutsideGaps, tl.dupRows, tl.cnps, tl.cnpsLost, tl.cnpsOutsideGaps, tl.eventsDup, tl.eventsWrong, tl.eventsUnknown)
}

// count compares what is stored with what f published (the pump stopped).
func (f *cnpFeed) count(t *testing.T, pool *pgxpool.Pool, gaps []gap) tally {
	t.Helper()
	inGap := func(leaf string, r int) bool {
		for _, g := range gaps {
			after := g.cnpAfter
			if leaf != "" {
				after = g.after[leaf]
			}
			if r > after && r <= g.upTo {
				return true
			}
		}
		return false
	}
	tl := tally{rounds: f.rounds(), cnps: len(f.cnps)}
	stored := storedRounds(t, pool, f.p)
	for _, leaf := range f.p.paths {
		seen := map[int]int{}
		for _, r := range stored[leaf] {
			seen[r]++
		}
		for r := 1; r <= tl.rounds; r++ {
			switch n := seen[r]; {
			case n == 0:
				tl.lost++
				if !inGap(leaf, r) {
					tl.lostOutsideGaps++
					t.Errorf("%s round %d lost outside the gaps %v", leaf, r, gaps)
				}
			case n > 1:
				tl.dupRows += n - 1
			}
		}
	}
	rs, err := pool.Query(context.Background(), `SELECT (extract(epoch FROM ts) * 1000000)::bigint, action,
		congestion_level, source_address FROM events WHERE target = $1 AND kind = 'cnp'`, f.p.sw.Name)
	if err != nil {
		t.Fatal(err)
	}
	type ev struct {
		action, src string
		level       int64
	}
	got := map[int64][]ev{}
	var us, level int64
	var action, src string
	if _, err := pgx.ForEachRow(rs, []any{&us, &action, &level, &src}, func() error {
		got[us] = append(got[us], ev{action, src, level})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range f.cnps {
		evs := got[c.ts/1000]
		delete(got, c.ts/1000)
		switch {
		case len(evs) == 0:
			tl.cnpsLost++
			if !inGap("", c.round) {
				tl.cnpsOutsideGaps++
				t.Errorf("CNP of round %d lost outside the gaps %v", c.round, gaps)
			}
			continue
		case len(evs) > 1:
			tl.eventsDup += len(evs) - 1
		}
		if want := (ev{c.action, "2001:db8::1", 200}); evs[0] != want {
			tl.eventsWrong++
			t.Errorf("CNP of round %d stored as %+v, want %+v", c.round, evs[0], want)
		}
	}
	for us, evs := range got {
		tl.eventsUnknown += len(evs)
		t.Errorf("event at %d µs never published: %+v", us, evs)
	}
	return tl
}

// restart stops c (cleanly, draining) and starts a collector with cfg (c's:
// its state directory, spill included), waiting until it streams; it
// returns the new collector and the gap.
func (f *cnpFeed) restart(t *testing.T, pool *pgxpool.Pool, c *runningCollector, cfg config.File, opts ...collector.Option) (*runningCollector, gap) {
	t.Helper()
	c.stop(t)
	after, oldest := f.lastReceived(t, pool, cfg.StateDir)
	n := start(t, cfg, opts...)
	waitStreaming(t, n, f.p.sw)
	return n, gap{after: after, cnpAfter: oldest, upTo: f.rounds()}
}

// lastStored is the newest round of f's first leaf stored.
func lastStored(t *testing.T, pool *pgxpool.Pool, p *publisher) int {
	r := storedRounds(t, pool, p)[p.paths[0]]
	if len(r) == 0 {
		return 0
	}
	sort.Ints(r)
	return r[len(r)-1]
}

// lastReceived is the newest round of each leaf of f a stopped collector
// received: stored (pool nil: not looked at), or acknowledged to the spill
// in stateDir; and the oldest of them.
func (f *cnpFeed) lastReceived(t *testing.T, pool *pgxpool.Pool, stateDir string) (byLeaf map[string]int, oldest int) {
	var stored map[string][]int
	if pool != nil {
		stored = storedRounds(t, pool, f.p)
	}
	spilled := spilledSamples(t, stateDir)
	byLeaf, oldest = map[string]int{}, -1
	for _, leaf := range f.p.paths {
		last := 0
		for _, r := range stored[leaf] {
			last = max(last, r)
		}
		id := rows.SeriesID(f.p.sw.Name, leaf)
		for k := range spilled {
			if k[0] == id {
				last = max(last, int(math.Round(float64(k[1]*1000-f.p.ts0)/float64(time.Millisecond))))
			}
		}
		byLeaf[leaf] = last
		if oldest < 0 || last < oldest {
			oldest = last
		}
	}
	return byLeaf, max(oldest, 0)
}

// more waits until n more rounds than now are stored; it fails when no
// round at all is stored for 30 s.
func (f *cnpFeed) more(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	want := f.rounds() + n
	// Any round stored is progress, not only a newer one: after an outage
	// the writer replays its spill oldest first, so the newest round stored
	// may stand still for a long while (CI: more than 30 s with 2841
	// batches of a worker's outage still to replay when the coordinator
	// went down).
	waitProgress(t, 30*time.Second, "storing a round of "+f.p.sw.Name, func() (bool, int, string) {
		r := storedRounds(t, pool, f.p)[f.p.paths[0]]
		last := 0
		for _, x := range r {
			last = max(last, x)
		}
		return last >= want, len(r), fmt.Sprintf("waiting for round %d: %d rounds stored, the newest %d", want, len(r), last)
	})
}

// check counts what is stored against what f published (count) and
// reports any sample or event stored twice, or made again by a collector
// of cs (event_conflicts_total).
func (f *cnpFeed) check(t *testing.T, pool *pgxpool.Pool, gaps []gap, cs ...*runningCollector) tally {
	t.Helper()
	tl := f.count(t, pool, gaps)
	if tl.dupRows != 0 || tl.eventsDup != 0 || conflicts(cs...) != 0 {
		t.Errorf("stored twice: %d samples, %d events; event_conflicts_total %v", tl.dupRows, tl.eventsDup, conflicts(cs...))
	}
	noDuplicates(t, pool)
	return tl
}

// conflicts sums event_conflicts_total over collectors: an event the
// converter made again, refused by the database's unique key (the writer
// does not count what an earlier try of the same batch stored: a replay,
// or on Citus an insert whose answer was lost).
func conflicts(cs ...*runningCollector) float64 {
	var n float64
	for _, c := range cs {
		n += testutil.ToFloat64(c.Metrics().EventConflicts)
	}
	return n
}

// TestThreeRestartsInARow: a collector restarted three times in a row
// while its switch publishes every 5 ms and sends a Long-haul CNP every
// 20 rounds: no sample and no event stored twice, no event made again (the
// database's unique key refuses nothing: event_conflicts_total 0), every
// CNP stored with all its fields (those its notification left out known
// from before the restart), and nothing lost but what was published
// between the last value a stopped collector stored and the next stream's
// sync, reported.
func TestThreeRestartsInARow(t *testing.T) {
	pool, dsn := newDB(t)
	sw := switchtest.Start(t, "sw-restarts")
	f := newCNPFeed(sw)
	cfg := testConfig(t, dsn, sw)
	c := start(t, cfg)
	waitStreaming(t, c, sw)
	pu := startPump([]*cnpFeed{f}, 5*time.Millisecond)
	defer pu.stop()
	f.more(t, pool, 2*cnpEvery)
	var gaps []gap
	all := []*runningCollector{c}
	for range 3 {
		var g gap
		c, g = f.restart(t, pool, c, cfg)
		gaps, all = append(gaps, g), append(all, c)
		f.more(t, pool, 2*cnpEvery)
	}
	pu.stop()
	waitLastRound(t, pool, f.p)
	c.stop(t)
	tl := f.check(t, pool, gaps, all...)
	t.Logf("three restarts: %v; gaps %v", tl, gaps)
}

// TestRestartDuringSpillReplay: the collector's writer is held inside a
// transaction (a lock on the ledger) while its switch publishes samples
// and CNPs, so batches spill; the collector is restarted with the spill
// full; the next one replays the spill and is restarted in the middle of
// the replay's transaction (held by a lock on events, after its samples
// went in); a third one replays it all. Every sample and every CNP is
// stored once, and no collector makes a spilled CNP's event again (it
// knows the CNP from the spill's timestamps).
func TestRestartDuringSpillReplay(t *testing.T) {
	pool, dsn := newDB(t)
	sw := switchtest.Start(t, "sw-replay")
	f := newCNPFeed(sw)
	cfg := testConfig(t, dsn, sw)
	cfg.Writer.QueueRows = 2 * cfg.Writer.BatchRows // past two batches, spill
	short := collector.WithDrainTimeout(time.Second)
	c := start(t, cfg, short)
	waitStreaming(t, c, sw)
	pu := startPump([]*cnpFeed{f}, 5*time.Millisecond)
	defer pu.stop()
	f.more(t, pool, cnpEvery)

	ctx := context.Background()
	lock := func(table string) pgx.Tx {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tx.Rollback(ctx) }) //nolint:errcheck // committed by then
		if _, err := tx.Exec(ctx, `LOCK TABLE `+table+` IN ACCESS EXCLUSIVE MODE`); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	ledger := lock("ingest_ledger")
	spilledFrom := f.rounds()
	waitFor(t, 30*time.Second, "batches and CNPs in the spill", func() (bool, string) {
		b := testutil.ToFloat64(c.Metrics().SpillBatches)
		return b >= 10 && f.rounds() > spilledFrom+3*cnpEvery, fmt.Sprintf("%v batches spilled", b)
	})
	all := []*runningCollector{c}
	events := lock("events")
	// Restart with the spill full and the writer held: the next collector
	// seeds from latest and from the spill, and replays the spill.
	var gaps []gap
	var g gap
	c, g = f.restart(t, pool, c, cfg, short)
	gaps, all = append(gaps, g), append(all, c)
	spilled := testutil.ToFloat64(c.Metrics().SpillBatches)
	if err := ledger.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the replay's transaction held on events", func() (bool, string) {
		return count(t, pool, `SELECT count(*) FROM pg_locks WHERE relation = 'events'::regclass AND NOT granted`) > 0, ""
	})
	c, g = f.restart(t, pool, c, cfg, short)
	gaps, all = append(gaps, g), append(all, c)
	if err := events.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	f.more(t, pool, 2*cnpEvery)
	pu.stop()
	waitLastRound(t, pool, f.p)
	waitFor(t, 30*time.Second, "the spill emptied", func() (bool, string) {
		return testutil.ToFloat64(c.Metrics().SpillBatches) == 0, ""
	})
	c.stop(t)
	tl := f.check(t, pool, gaps, all...)
	t.Logf("two restarts with %v spilled batches, the second during their replay: %v; gaps %v", spilled, tl, gaps)
}

// TestHandoverDuringOutage: PostgreSQL stops while collector a streams a
// switch (publishing every 5 ms, a CNP every 20 rounds) and b waits; a is
// drained during the outage (it cannot hand the target over: its rows
// spill), PostgreSQL comes back and b takes the target over once a's lease
// expires; a then starts again on its spill. No sample and no event is
// stored twice and no event is made again; what a received during the
// outage is stored although its lease moved meanwhile (its spilled batches
// carry the old epoch: the writer merges what b had not stored, none
// refused as stale_epoch); lost are only the rounds published while no
// collector streamed, reported.
func TestHandoverDuringOutage(t *testing.T) {
	srv, pool, dsn := newPrivateDB(t)
	sw := switchOwnedBy(t, "sw-outage", "collector-a", "collector-a", "collector-b")
	f := newCNPFeed(sw)
	cfgA, cfgB := leaseConfig(t, dsn, "collector-a", sw), leaseConfig(t, dsn, "collector-b", sw)
	short := collector.WithDrainTimeout(2 * time.Second)
	a := start(t, cfgA, short)
	waitStreaming(t, a, sw)
	b := start(t, cfgB, short)
	waitFor(t, 30*time.Second, "b to join, a to keep the target", func() (bool, string) {
		return count(t, pool, `SELECT count(*) FROM collectors`) == 2 && fmt.Sprint(a.Running()) == fmt.Sprint([]string{sw.Name}), ""
	})
	pu := startPump([]*cnpFeed{f}, 5*time.Millisecond)
	defer pu.stop()
	f.more(t, pool, 2*cnpEvery)

	pool.Close()
	stopServer(t, srv)
	waitFor(t, 30*time.Second, "a's writer to see the outage", func() (bool, string) {
		return testutil.ToFloat64(a.Metrics().DBUp) == 0, ""
	})
	outageFrom := f.rounds()
	waitFor(t, 30*time.Second, "CNPs during the outage", func() (bool, string) {
		return f.rounds() > outageFrom+2*cnpEvery, ""
	})
	a.stop(t) // drained during the outage: no handover possible
	received, oldest := f.lastReceived(t, nil, cfgA.StateDir)
	pool = restartServer(t, srv)
	stored := lastStored(t, pool, f.p)
	waitStreaming(t, b, sw)
	gaps := []gap{{after: received, cnpAfter: oldest, upTo: f.rounds()}} // a's spill is stored
	f.more(t, pool, 2*cnpEvery)
	a = start(t, cfgA, short) // on its spill; rendezvous hashing gives it the target back
	waitFor(t, 60*time.Second, "a's spill replayed", func() (bool, string) {
		return testutil.ToFloat64(a.Metrics().SpillBatches) == 0, ""
	})
	waitStreaming(t, a, sw)
	f.more(t, pool, 2*cnpEvery)
	pu.stop()
	waitLastRound(t, pool, f.p)
	am := a.Metrics()
	refused := testutil.ToFloat64(am.DroppedRows.WithLabelValues(collectormetrics.DropStaleEpoch))
	merged := testutil.ToFloat64(am.StaleMerged.WithLabelValues("samples"))
	mergedEvents := testutil.ToFloat64(am.StaleMerged.WithLabelValues("events"))
	dups := testutil.ToFloat64(am.DroppedRows.WithLabelValues(collectormetrics.DropStaleDuplicate))
	a.stop(t)
	b.stop(t)
	tl := f.check(t, pool, gaps, a, b)
	if refused != 0 || merged == 0 {
		t.Errorf("a's stale spill: %v rows refused as stale_epoch, %v samples merged; want 0 refused, some merged", refused, merged)
	}
	t.Logf("handover during an outage: %v; gap %v; rounds %d..%v (by leaf) reached a before it stopped, spilled and stored after "+
		"the lease moved: %v samples and %v events merged, %v rows b had stored, %v refused",
		tl, gaps, stored+1, received, merged, mergedEvents, dups, refused)
}

// TestHandoverStoresEventsOnce: collector a drains and b takes its switch
// over make-before-break while the switch publishes every 5 ms and sends
// a CNP every 20 rounds: b's standby stream met the CNPs a stored (its
// initial sync, and everything since), yet every sample and every CNP is
// stored exactly once — none lost, there is no gap — and no event is made
// again.
func TestHandoverStoresEventsOnce(t *testing.T) {
	pool, dsn := newDB(t)
	sw := switchOwnedBy(t, "sw-handover", "collector-a", "collector-a", "collector-b")
	f := newCNPFeed(sw)
	// No lease lapses during the test, however slowly the machine runs
	// the renewals (b's make-before-break take is asserted below).
	long := func(cfg config.File) config.File { cfg.Leases.TTL = time.Minute; return cfg }
	a := start(t, long(leaseConfig(t, dsn, "collector-a", sw)))
	waitStreaming(t, a, sw)
	b := start(t, long(leaseConfig(t, dsn, "collector-b", sw)))
	pu := startPump([]*cnpFeed{f}, 5*time.Millisecond)
	defer pu.stop()
	f.more(t, pool, 3*cnpEvery)
	a.stop(t) // drain: b takes the target, make-before-break
	waitStreaming(t, b, sw)
	f.more(t, pool, 3*cnpEvery)
	pu.stop()
	waitLastRound(t, pool, f.p)
	b.stop(t)
	tl := f.check(t, pool, nil, a, b)
	if got := testutil.ToFloat64(b.Metrics().Handovers.WithLabelValues("taken", collectormetrics.HandoverMakeBeforeBreak)); got != 1 {
		t.Errorf("b took %v targets make-before-break, want 1", got)
	}
	t.Logf("handover: %v", tl)
}
