package collector_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lhcnp/lhcnp/collector/config"
	"github.com/lhcnp/lhcnp/collector/internal/switchtest"
)

// benchLeaves are the leaves of each queue a benchmark switch publishes.
var benchLeaves = []string{"queue-depth", "peak-queue-depth", "effective-kmax", "effective-kmin",
	"counters/packets", "counters/bytes", "counters/ecn-marked-packets", "counters/cnp-notify-sent"}

// benchSwitch publishes rounds: every leaf of ifaces×queues queues a new
// value, one Apply per round.
type benchSwitch struct {
	sw     *switchtest.Switch
	paths  []string
	ts     int64
	rounds int
}

func newBenchSwitch(b testing.TB, name string, ifaces, queues int) *benchSwitch {
	bs := &benchSwitch{sw: switchtest.Start(b, name), ts: time.Now().UnixNano()}
	for i := range ifaces {
		for q := range queues {
			for _, l := range benchLeaves {
				bs.paths = append(bs.paths, switchtest.Queue(fmt.Sprintf("eth%d", i), q)+"/state/"+l)
			}
		}
	}
	return bs
}

// pacedRounds publishes n rounds, each once the switch has sent the
// previous one (the store keeps only the latest value of a leaf: a round
// applied before the previous one is sent would coalesce it).
func (bs *benchSwitch) pacedRounds(n int) {
	for range n {
		want := bs.sw.Stats().Updates + uint64(len(bs.paths))
		bs.round()
		for bs.sw.Stats().Updates < want {
			time.Sleep(time.Millisecond)
		}
	}
}

func (bs *benchSwitch) round() {
	bs.rounds++
	bs.ts += int64(time.Millisecond)
	leaves := make(map[string]*gnmi.TypedValue, len(bs.paths))
	for i, p := range bs.paths {
		leaves[p] = switchtest.Uint(uint64(bs.rounds*1000 + i))
	}
	bs.sw.Publish(bs.ts, leaves)
}

// BenchmarkEndToEnd: switches publish rounds of every leaf, each round once
// the previous one went out on the wire; the collector subscribes
// (ON_CHANGE, so every published change is sent) and stores.
// It reports committed rows/s end to end (first publish to last commit),
// then the raw pgx CopyFrom of the very rows stored, into the same table
// of a fresh database, in batches of the same size, and the ratio; and the
// p99 lag from the switch timestamp to the batch's transaction.
func BenchmarkEndToEnd(b *testing.B) {
	const switches, ifaces, queues = 2, 4, 8
	for range b.N {
		pool, dsn := newDB(b)
		var sws []*benchSwitch
		var targets []config.Target
		for i := range switches {
			bs := newBenchSwitch(b, fmt.Sprintf("bench%d", i), ifaces, queues)
			bs.round()
			sws = append(sws, bs)
			targets = append(targets, config.Target{Name: bs.sw.Name, Address: bs.sw.Addr, Insecure: true,
				Subscriptions: []config.Subscription{{Paths: []string{"/lhcnp"}, Mode: "on_change"}}})
		}
		cfg := config.Defaults()
		cfg.ID = "bench"
		cfg.DB.DSN, cfg.DB.Migrate, cfg.DB.TargetsTable = dsn, false, false
		cfg.StateDir = b.TempDir()
		cfg.Targets = targets
		c := start(b, cfg)
		waitFor(b, 30*time.Second, "the benchmark", func() (bool, string) {
			s := c.Metrics().TargetStates()
			return s["bench0"] == "streaming" && s["bench1"] == "streaming", ""
		})
		ctx := context.Background()
		waitFor(b, 30*time.Second, "the initial values stored", func() (bool, string) {
			return count(b, pool, `SELECT count(*) FROM samples`) == int64(switches*len(sws[0].paths)), ""
		})
		base := count(b, pool, `SELECT count(*) FROM samples`)
		const rounds = 400
		b.ResetTimer()
		start := time.Now()
		var wg sync.WaitGroup
		for _, bs := range sws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				bs.pacedRounds(rounds)
			}()
		}
		wg.Wait()
		published := int64(rounds * switches * ifaces * queues * len(benchLeaves))
		var coalesced uint64
		waitFor(b, 120*time.Second, "the benchmark", func() (bool, string) {
			coalesced = 0
			for _, bs := range sws {
				coalesced += bs.sw.Stats().Coalesced
			}
			return count(b, pool, `SELECT count(*) FROM samples`)-base >= published-int64(coalesced), ""
		})
		elapsed := time.Since(start)
		b.StopTimer()
		stored := count(b, pool, `SELECT count(*) FROM samples`) - base
		if stored != published {
			b.Logf("published %d, stored %d, base %d, coalesced %d, duplicates dropped %v, ledger rows %d", published, stored, base, coalesced,
				testutil.ToFloat64(c.Metrics().DroppedRows.WithLabelValues("duplicate")), count(b, pool, `SELECT sum(rows) FROM ingest_ledger`))
		}
		ours := float64(stored) / elapsed.Seconds()
		var p99 float64
		if err := pool.QueryRow(ctx, `SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM l.committed_at - s.ts))
			FROM samples s JOIN ingest_ledger l USING (batch_id) WHERE s.flags & 1 = 0`).Scan(&p99); err != nil {
			b.Fatal(err)
		}
		if testing.Verbose() {
			mfs, _ := c.Metrics().Registry.Gather()
			for _, mf := range mfs {
				if n := mf.GetName(); strings.Contains(n, "batches_total") || strings.Contains(n, "round_trip") || strings.Contains(n, "spill_batches") {
					b.Logf("%s", mf.String())
				}
			}
		}
		c.stop(b)

		// Raw COPY of the same rows into the same table of a fresh database.
		rs, err := pool.Query(ctx, `SELECT ts, series_id, v_int, v_float, v_num, v_bool, v_text, flags, batch_id FROM samples`)
		if err != nil {
			b.Fatal(err)
		}
		all, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := newDB(b)
		rawStart := time.Now()
		for i := 0; i < len(all); i += cfg.Writer.BatchRows {
			chunk := all[i:min(i+cfg.Writer.BatchRows, len(all))]
			if _, err := raw.CopyFrom(ctx, pgx.Identifier{"samples"},
				[]string{"ts", "series_id", "v_int", "v_float", "v_num", "v_bool", "v_text", "flags", "batch_id"},
				pgx.CopyFromRows(chunk)); err != nil {
				b.Fatal(err)
			}
		}
		rawRate := float64(len(all)) / time.Since(rawStart).Seconds()
		b.ReportMetric(ours, "rows/s")
		b.ReportMetric(rawRate, "raw-copy-rows/s")
		b.ReportMetric(ours/rawRate, "ratio")
		b.ReportMetric(p99*1000, "lag-p99-ms")
		b.ReportMetric(float64(coalesced), "coalesced")
		b.ReportMetric(float64(stored), "rows")
	}
}

// BenchmarkMemoryPerTarget: heap held by the collector per streaming target
// of 256 leaves (32 queues × 8 leaves), after a round of every leaf.
func BenchmarkMemoryPerTarget(b *testing.B) {
	const targets = 16
	for range b.N {
		_, dsn := newDB(b)
		var sws []*benchSwitch
		cfg := config.Defaults()
		cfg.ID = "bench-mem"
		cfg.DB.DSN, cfg.DB.Migrate, cfg.DB.TargetsTable = dsn, false, false
		cfg.StateDir = b.TempDir()
		for i := range targets {
			bs := newBenchSwitch(b, fmt.Sprintf("mem%d", i), 4, 8)
			bs.round()
			sws = append(sws, bs)
			cfg.Targets = append(cfg.Targets, config.Target{Name: bs.sw.Name, Address: bs.sw.Addr, Insecure: true,
				Subscriptions: []config.Subscription{{Paths: []string{"/lhcnp"}, Mode: "on_change"}}})
		}
		heap := func() uint64 {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			return ms.HeapAlloc
		}
		noTargets := cfg
		noTargets.Targets = nil
		noTargets.StateDir = b.TempDir()
		c0 := start(b, noTargets)
		time.Sleep(200 * time.Millisecond)
		before := heap()
		c := start(b, cfg)
		waitFor(b, 60*time.Second, "the benchmark", func() (bool, string) {
			for _, s := range c.Metrics().TargetStates() {
				if s != "streaming" {
					return false, ""
				}
			}
			return len(c.Metrics().TargetStates()) == targets, ""
		})
		for _, bs := range sws {
			bs.round()
		}
		time.Sleep(500 * time.Millisecond)
		after := heap()
		// The switches live in this process too: subtract what they hold
		// by measuring the collector alone against a collector without
		// targets (c0) and the switches built before both.
		b.ReportMetric(float64(after-before)/targets, "bytes/target")
		c.stop(b)
		c0.stop(b)
	}
}
