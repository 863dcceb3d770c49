package collector_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lhcnp/lhcnp/collector"
	"github.com/lhcnp/lhcnp/collector/internal/switchtest"
)

// tableCollector is a collector reading the targets table every 50 ms,
// counting its reads.
type tableCollector struct {
	*runningCollector
	t     *testing.T
	pool  *pgxpool.Pool
	reads atomic.Int64
}

func startTable(t *testing.T, opts ...collector.Option) *tableCollector {
	pool, dsn := newDB(t)
	cfg := testConfig(t, dsn)
	cfg.DB.TargetsReread = 50 * time.Millisecond
	tc := &tableCollector{t: t, pool: pool}
	tc.runningCollector = start(t, cfg, append(opts, collector.WithTableRead(func() { tc.reads.Add(1) }))...)
	return tc
}

func (tc *tableCollector) exec(sql string, args ...any) {
	tc.t.Helper()
	if _, err := tc.pool.Exec(context.Background(), sql, args...); err != nil {
		tc.t.Fatalf("%s: %v", sql, err)
	}
}

// logged waits for an error line of the targets table naming target and
// holding what, then for three more reads of the table (which all saw the
// row as that line did).
func (tc *tableCollector) logged(target, what string) {
	tc.t.Helper()
	waitFor(tc.t, 30*time.Second, fmt.Sprintf("a log line of %s with %q", target, what), func() (bool, string) {
		for _, l := range tc.tableLines(target) {
			if strings.Contains(l, what) {
				return true, ""
			}
		}
		return false, strings.Join(tc.tableLines(target), "\n")
	})
	n := tc.reads.Load() + 3
	waitFor(tc.t, 30*time.Second, "three reads of the table", func() (bool, string) {
		return tc.reads.Load() >= n, fmt.Sprint(tc.reads.Load())
	})
}

// tableLines are the log lines of the targets table about target.
func (tc *tableCollector) tableLines(target string) []string {
	var out []string
	for _, l := range strings.Split(tc.logs.String(), "\n") {
		if strings.Contains(l, `msg="targets table: row`) && strings.Contains(l+" ", " target="+target+" ") {
			out = append(out, l)
		}
	}
	return out
}

// wantLines checks the targets table's log lines of target: one per
// distinct row, each holding its words.
func (tc *tableCollector) wantLines(target string, want ...[]string) {
	tc.t.Helper()
	got := tc.tableLines(target)
	if len(got) != len(want) {
		tc.t.Fatalf("%d log lines about the row of %s, want %d:\n%s", len(got), target, len(want), strings.Join(got, "\n"))
	}
	for i, words := range want {
		for _, w := range words {
			if !strings.Contains(got[i], w) {
				tc.t.Errorf("log line %d about %s does not say %q: %s", i, target, w, got[i])
			}
		}
	}
}

func (tc *tableCollector) wantRefused(n float64) {
	tc.t.Helper()
	// The read logs a refused row as it meets it and sets the gauge once
	// the read is done: a test that saw the log line may read the gauge
	// before the read ends (CI: 0 after the line was logged twice).
	waitFor(tc.t, 30*time.Second, fmt.Sprintf("targets_refused = %v", n), func() (bool, string) {
		got := testutil.ToFloat64(tc.Metrics().TargetsRefused)
		return got == n, fmt.Sprintf("targets_refused = %v", got)
	})
}

// TestTargetsTableBadEdit: a row being collected is edited to a value that
// does not check (an address with no valid port). Its previous definition
// keeps running (before, the loop was stopped and the switch's samples
// lost until the row was fixed); the refusal is logged once per distinct
// bad value, with the column and "keeping the previous definition", and
// counted in targets_refused (before: logged at every read, no metric).
// Fixed to the same definition, the loop runs on unrestarted; deleted, it
// stops.
func TestTargetsTableBadEdit(t *testing.T) {
	sw := switchtest.Start(t, "edited")
	p := newPublisher(sw, "n1-n2")
	p.round()
	gone := make(chan string, 10)
	tc := startTable(t, collector.WithTargetGone(func(name string) { gone <- name }))
	tc.exec(`INSERT INTO targets (name, address, insecure, subscriptions) VALUES ($1, $2, true, $3)`,
		sw.Name, sw.Addr, `[{"paths": ["/lhcnp"], "mode": "on_change"}]`)
	waitFor(t, 30*time.Second, "the table's target streaming", func() (bool, string) {
		return tc.Metrics().TargetStates()[sw.Name] == "streaming", fmt.Sprint(tc.Metrics().TargetStates())
	})
	samples := func() {
		t.Helper()
		for range 5 {
			p.round()
		}
		waitFor(t, 30*time.Second, "every sample published stored", func() (bool, string) {
			n := samplesOf(t, tc.pool, sw.Name)
			return n == p.published(), fmt.Sprintf("%d of %d", n, p.published())
		})
	}
	samples()
	runsAsBefore := func() {
		t.Helper()
		if got, ok := tc.Target(sw.Name); !ok || got.Address != sw.Addr || !slices.Contains(tc.Running(), sw.Name) {
			t.Fatalf("target %s: running %v, definition %+v (ok %v), want it running at %s", sw.Name, tc.Running(), got, ok, sw.Addr)
		}
	}

	tc.exec(`UPDATE targets SET address = '127.0.0.1:99999' WHERE name = $1`, sw.Name)
	tc.logged(sw.Name, "99999")
	runsAsBefore()
	kept := []string{"level=ERROR", "row refused, keeping the previous definition", ".address:", "99999", "kept_address=" + sw.Addr}
	tc.wantLines(sw.Name, kept)
	tc.wantRefused(1)
	samples()

	// Another bad value: logged again.
	tc.exec(`UPDATE targets SET address = 'no-port' WHERE name = $1`, sw.Name)
	tc.logged(sw.Name, "no-port")
	runsAsBefore()
	tc.wantLines(sw.Name, kept, []string{"row refused, keeping the previous definition", ".address:", "no-port"})
	tc.wantRefused(1)

	// Fixed: said once; the same definition runs on, not restarted.
	tc.exec(`UPDATE targets SET address = $2 WHERE name = $1`, sw.Name, sw.Addr)
	tc.logged(sw.Name, "row accepted")
	tc.wantLines(sw.Name, kept, []string{"row refused, keeping the previous definition", ".address:", "no-port"},
		[]string{"level=INFO", "row accepted"})
	runsAsBefore()
	tc.wantRefused(0)
	if n := strings.Count(tc.logs.String(), `msg="target started" target=`+sw.Name+" "); n != 1 {
		t.Errorf("the target's loop started %d times, want once", n)
	}
	samples()

	// Broken again, then deleted: the loop stops.
	tc.exec(`UPDATE targets SET address = '127.0.0.1:99999' WHERE name = $1`, sw.Name)
	tc.logged(sw.Name, "row refused")
	tc.exec(`DELETE FROM targets WHERE name = $1`, sw.Name)
	waitFor(t, 30*time.Second, "the deleted target stopped", func() (bool, string) {
		return len(tc.Running()) == 0, fmt.Sprint(tc.Running())
	})
	select {
	case name := <-gone:
		if name != sw.Name {
			t.Errorf("WithTargetGone called with %q, want %q", name, sw.Name)
		}
	case <-time.After(10 * time.Second):
		t.Error("WithTargetGone not called for the deleted target")
	}
	n := tc.reads.Load() + 1
	waitFor(t, 30*time.Second, "a read of the table", func() (bool, string) { return tc.reads.Load() >= n, "" })
	tc.wantRefused(0)
	tc.stop(t)
}

// TestTargetsTableBadNewRow: a row that never checked is not collected,
// logged once per distinct value (before: at every read) and counted in
// targets_refused; disabled, it is neither checked nor counted (before: its
// fault was logged at every read); enabled again, refused again.
func TestTargetsTableBadNewRow(t *testing.T) {
	tc := startTable(t)
	tc.exec(`INSERT INTO targets (name, address, insecure) VALUES ('fresh', '127.0.0.1:99999', true)`)
	tc.logged("fresh", "99999")
	notCollected := []string{"level=ERROR", "row refused, not collected", "targets[fresh].address:", "99999"}
	tc.wantLines("fresh", notCollected)
	tc.wantRefused(1)
	if len(tc.Running()) != 0 {
		t.Errorf("running %v, want none", tc.Running())
	}
	if _, ok := tc.Target("fresh"); ok {
		t.Error("the refused row is a target")
	}

	tc.exec(`UPDATE targets SET address = '127.0.0.1:1', subscriptions = '[{"paths": ["lhcnp"]}]' WHERE name = 'fresh'`)
	tc.logged("fresh", "subscriptions")
	badSubs := []string{"row refused, not collected", "targets[fresh].subscriptions[0].paths:"}
	tc.wantLines("fresh", notCollected, badSubs)
	tc.wantRefused(1)

	tc.exec(`UPDATE targets SET enabled = false WHERE name = 'fresh'`)
	waitFor(t, 30*time.Second, "the disabled row no longer refused", func() (bool, string) {
		return testutil.ToFloat64(tc.Metrics().TargetsRefused) == 0, ""
	})
	n := tc.reads.Load() + 3
	waitFor(t, 30*time.Second, "three reads of the table", func() (bool, string) { return tc.reads.Load() >= n, "" })
	tc.wantLines("fresh", notCollected, badSubs)

	tc.exec(`UPDATE targets SET enabled = true WHERE name = 'fresh'`)
	waitFor(t, 30*time.Second, "the enabled row refused again", func() (bool, string) {
		return len(tc.tableLines("fresh")) == 3, strings.Join(tc.tableLines("fresh"), "\n")
	})
	tc.wantLines("fresh", notCollected, badSubs, badSubs)
	tc.wantRefused(1)
	tc.stop(t)
}

// TestSkipVerifyWarnedOncePerDefinition: a target with skip_verify is
// warned of at its first start, not again when it starts again unchanged
// (disabled and enabled here; a lease lost and won again likewise), and
// again when its definition changes. Before, every start of its loop
// repeated the warning.
func TestSkipVerifyWarnedOncePerDefinition(t *testing.T) {
	tc := startTable(t)
	lines := func(what string) int {
		n := 0
		for _, l := range strings.Split(tc.logs.String(), "\n") {
			if strings.Contains(l, what) && strings.Contains(l+" ", " target=lab ") {
				n++
			}
		}
		return n
	}
	started := func(n int) {
		t.Helper()
		waitFor(t, 30*time.Second, fmt.Sprintf("%d starts of the target", n), func() (bool, string) {
			return lines(`msg="target started"`) == n && len(tc.Running()) == 1, tc.logs.String()
		})
	}
	const warning = "certificate not verified (skip_verify)"
	tc.exec(`INSERT INTO targets (name, address, skip_verify) VALUES ('lab', '127.0.0.1:1', true)`)
	started(1)
	tc.exec(`UPDATE targets SET enabled = false WHERE name = 'lab'`)
	waitFor(t, 30*time.Second, "the disabled target stopped", func() (bool, string) {
		return len(tc.Running()) == 0, fmt.Sprint(tc.Running())
	})
	tc.exec(`UPDATE targets SET enabled = true WHERE name = 'lab'`)
	started(2)
	if n := lines(warning); n != 1 {
		t.Errorf("%d skip_verify warnings after two starts of one definition, want 1:\n%s", n, tc.logs.String())
	}
	tc.exec(`UPDATE targets SET address = '127.0.0.1:2' WHERE name = 'lab'`)
	started(3)
	if n := lines(warning); n != 2 {
		t.Errorf("%d skip_verify warnings after a new definition, want 2:\n%s", n, tc.logs.String())
	}
	tc.stop(t)
}

// TestTargetsTableReadFailsPartway: a read of the targets table that fails
// after some rows (here a NULL address, which the schema forbids and the
// test allows, fails the scan of the row after the refused one) keeps what
// it logged of the rows before the failure: the refused row is logged once,
// not at every failing read (before: at every read, as the refusals of a
// failed read were not kept).
func TestTargetsTableReadFailsPartway(t *testing.T) {
	tc := startTable(t)
	tc.exec(`ALTER TABLE targets ALTER COLUMN address DROP NOT NULL`)
	// One statement: no read sees aa without zz.
	tc.exec(`INSERT INTO targets (name, address, insecure) VALUES ('aa', '127.0.0.1:99999', true), ('zz', NULL, true)`)
	tc.logged("aa", "99999")
	waitFor(t, 30*time.Second, "the failed read logged", func() (bool, string) {
		return strings.Contains(tc.logs.String(), "targets table:") && strings.Contains(tc.logs.String(), "NULL"), ""
	})
	n := tc.reads.Load() + 3
	waitFor(t, 30*time.Second, "three more reads of the table", func() (bool, string) { return tc.reads.Load() >= n, "" })
	notCollected := []string{"level=ERROR", "row refused, not collected", "targets[aa].address:", "99999"}
	tc.wantLines("aa", notCollected)

	// The failing row gone: the reads succeed, and still nothing new about aa.
	tc.exec(`DELETE FROM targets WHERE name = 'zz'`)
	n = tc.reads.Load() + 3
	waitFor(t, 30*time.Second, "three reads after the delete", func() (bool, string) { return tc.reads.Load() >= n, "" })
	tc.wantLines("aa", notCollected)
	tc.wantRefused(1)
	tc.stop(t)
}
