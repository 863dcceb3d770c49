package collector_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lhcnp/lhcnp/collector/internal/switchtest"
	"github.com/lhcnp/lhcnp/internal/pgserver"
	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// TestCitusFaults is the fault test on Citus (docs/scaling.md Step
// 3), through the whole collector: two switches publish every 5 ms and
// send a Long-haul CNP every 20 rounds into a coordinator with two
// workers. A worker is stopped for 30 s (3 s with -short) under that load
// and started again; then the coordinator is stopped until the collector
// spills, and started again. The collector streams all along (no gap), so
// every sample and every CNP the switches sent is stored once: none lost,
// none twice, no event made again. With LHCNP_CITUS_SOAK set to a
// duration (make citus-soak) the faults repeat until it has passed.
func TestCitusFaults(t *testing.T) {
	// Its outage is wall-clock time spent waiting on a cluster of its own:
	// it runs beside the package's other waits.
	t.Parallel()
	outage := 30 * time.Second
	if testing.Short() {
		outage = 3 * time.Second
	}
	cl, dsn := pgtest.PrivateCitusDB(t, 2)
	pool := pgtest.Pool(t, dsn)
	sw1, sw2 := switchtest.Start(t, "sw1"), switchtest.Start(t, "sw2")
	feeds := []*cnpFeed{newCNPFeed(sw1), newCNPFeed(sw2)}
	cfg := testConfig(t, dsn, sw1, sw2)
	// The tests' 20 ms batches of a few rows each, 100 a second: a backlog
	// is replayed in group commits (storeCitusGroup), which batch by batch
	// fell behind at load ~28.
	cfg.Writer.QueueRows = 4 * cfg.Writer.BatchRows // spill soon
	c := start(t, cfg)
	waitStreaming(t, c, sw1, sw2)
	pu := startPump(feeds, 5*time.Millisecond)
	defer pu.stop()
	for _, f := range feeds {
		f.more(t, pool, cnpEvery)
	}
	m := c.Metrics()
	written := func() float64 { return testutil.ToFloat64(m.RowsWritten.WithLabelValues("samples")) }
	// down stops node, waits until the writer fails and until done holds,
	// starts node again and waits until the writer stores again. The test
	// does not query meanwhile: Citus refuses what needs the node.
	down := func(node *pgserver.Server, what string, done func() (bool, string)) {
		t.Helper()
		if err := node.Stop(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 60*time.Second, "the writer to fail with "+what+" down", func() (bool, string) {
			return testutil.ToFloat64(m.DBUp) == 0, ""
		})
		waitFor(t, outage+60*time.Second, what+" down under load", done)
		before := written()
		if err := node.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 120*time.Second, "the writer to store again after "+what+" came back", func() (bool, string) {
			return testutil.ToFloat64(m.DBUp) == 1 && written() > before, fmt.Sprintf("spilled batches %v", testutil.ToFloat64(m.SpillBatches))
		})
	}
	// One round of faults; make citus-soak repeats them (each worker in
	// turn) for $LHCNP_CITUS_SOAK.
	soak, _ := time.ParseDuration(os.Getenv("LHCNP_CITUS_SOAK"))
	began := time.Now()
	var workerSpill []float64
	for round := 0; round == 0 || time.Since(began) < soak; round++ {
		from := time.Now()
		down(cl.Workers[round%2], "a worker", func() (bool, string) { return time.Since(from) >= outage, "" })
		workerSpill = append(workerSpill, testutil.ToFloat64(m.SpillBatches))
		pool.Close()
		down(cl.Coordinator, "the coordinator", func() (bool, string) {
			n := testutil.ToFloat64(m.SpillBatches)
			return n >= 10, fmt.Sprintf("%v batches spilled", n)
		})
		// New connections: the coordinator's cached ones to the workers
		// did not survive.
		pool = pgtest.Pool(t, dsn)
		for _, f := range feeds {
			f.more(t, pool, cnpEvery)
		}
		t.Logf("round %d: a worker down %v (%v batches spilled at its return), then the coordinator; %v since the start",
			round+1, outage, workerSpill[round], time.Since(began).Round(time.Second))
	}
	pu.stop()
	for _, f := range feeds {
		waitLastRound(t, pool, f.p)
	}
	waitFor(t, 60*time.Second, "the spill emptied", func() (bool, string) {
		return testutil.ToFloat64(m.SpillBatches) == 0, ""
	})
	c.stop(t)
	for _, f := range feeds {
		tl := f.check(t, pool, nil, c)
		if tl.lost != 0 || tl.cnpsLost != 0 {
			t.Errorf("%s: %v", f.p.sw.Name, tl)
		}
		if st := f.p.sw.Stats(); st.Coalesced != 0 {
			t.Errorf("%s coalesced %d updates: the collector's receive path stalled", f.p.sw.Name, st.Coalesced)
		}
		t.Logf("%s: %v", f.p.sw.Name, tl)
	}
	t.Logf("%d rounds of faults in %v: %v samples stored, %.0f rows/s", len(workerSpill), time.Since(began).Round(time.Second),
		written(), written()/time.Since(began).Seconds())
}
