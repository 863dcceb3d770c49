package collector_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lhcnp/lhcnp/collector"
	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/config"
	"github.com/lhcnp/lhcnp/collector/internal/switchtest"
	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/gnmi/auth"
)

// testConfig is a collector configuration for tests: small batches, short
// intervals, on-change subscriptions (every published change is sent, so
// the test can count them).
func testConfig(t testing.TB, dsn string, sws ...*switchtest.Switch) config.File {
	cfg := config.Defaults()
	cfg.ID = "test-" + strings.ReplaceAll(t.Name(), "/", "-")
	cfg.DB.DSN = dsn
	cfg.DB.Migrate = false
	cfg.DB.TargetsReread = time.Second
	cfg.StateDir = t.TempDir()
	cfg.Writer.BatchRows = 200
	cfg.Writer.BatchInterval = 20 * time.Millisecond
	cfg.Writer.QueueRows = 20_000
	cfg.Writer.RetryMax = 500 * time.Millisecond
	for _, sw := range sws {
		cfg.Targets = append(cfg.Targets, targetOf(sw))
	}
	return cfg
}

func targetOf(sw *switchtest.Switch) config.Target { return onChange(sw.Name, sw.Addr) }

type runningCollector struct {
	*collector.Collector
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned, with err set
	err    error
	logs   *syncBuffer
}

// stop drains the collector and waits for it.
func (r *runningCollector) stop(t testing.TB) {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
		if r.err != nil {
			t.Errorf("collector: %v", r.err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("collector did not stop within 60 s")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	sb strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sb.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sb.String()
}

func start(t testing.TB, cfg config.File, opts ...collector.Option) *runningCollector {
	t.Helper()
	logs := &syncBuffer{}
	var w io.Writer = logs
	if testing.Verbose() {
		w = io.MultiWriter(logs, os.Stderr)
	}
	opts = append([]collector.Option{collector.WithLogger(slog.New(slog.NewTextHandler(w, nil))),
		collector.WithTargetBackoff(20*time.Millisecond, 200*time.Millisecond),
		collector.WithDrainTimeout(20 * time.Second)}, opts...)
	c, err := collector.New(context.Background(), cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningCollector{Collector: c, cancel: cancel, done: make(chan struct{}), logs: logs}
	go func() {
		r.err = c.Run(ctx)
		close(r.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	var last string
	for time.Now().Before(deadline) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out after %v waiting for %s: %s", d, what, last)
}

func count(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// publisher publishes distinct values of a queue's leaves on a switch at
// increasing timestamps, and remembers what it published.
type publisher struct {
	sw    *switchtest.Switch
	ts0   int64 // round r is published at ts0 + r ms
	ts    int64
	n     uint64
	paths []string
}

func newPublisher(sw *switchtest.Switch, iface string) *publisher {
	q := switchtest.Queue(iface, 0)
	now := time.Now().UnixNano()
	return &publisher{sw: sw, ts0: now, ts: now, paths: []string{
		q + "/state/queue-depth", q + "/state/counters/packets"}}
}

// round publishes one new value of every leaf.
func (p *publisher) round() {
	p.n++
	p.ts += int64(time.Millisecond)
	leaves := map[string]*gnmi.TypedValue{}
	for _, path := range p.paths {
		leaves[path] = switchtest.Uint(p.n * 10)
	}
	p.sw.Publish(p.ts, leaves)
}

// published is the number of samples published (every round, every leaf).
func (p *publisher) published() int64 { return int64(p.n) * int64(len(p.paths)) }

func samplesOf(t testing.TB, pool *pgxpool.Pool, target string) int64 {
	return count(t, pool, `SELECT count(*) FROM samples s JOIN series r ON r.id = s.series_id WHERE r.target = $1`, target)
}

// noDuplicates checks that no (series, ts) is stored twice.
func noDuplicates(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	if n := count(t, pool, `SELECT count(*) FROM (SELECT series_id, ts FROM samples GROUP BY 1, 2 HAVING count(*) > 1) d`); n != 0 {
		t.Errorf("%d (series, ts) stored more than once", n)
	}
}

func TestCollectsTwoSwitchesExactlyOnce(t *testing.T) {
	pool, dsn := newDB(t)
	sw1, sw2 := switchtest.Start(t, "sw1"), switchtest.Start(t, "sw2")
	p1, p2 := newPublisher(sw1, "n1-n2"), newPublisher(sw2, "n2-n3")
	p1.round()
	p2.round()
	c := start(t, testConfig(t, dsn, sw1, sw2))
	waitFor(t, 30*time.Second, "initial sync of both switches", func() (bool, string) {
		s := c.Metrics().TargetStates()
		return s["sw1"] == "streaming" && s["sw2"] == "streaming", fmt.Sprint(s)
	})
	for range 300 {
		p1.round()
		p2.round()
	}
	for _, p := range []*publisher{p1, p2} {
		waitFor(t, 30*time.Second, p.sw.Name+"'s samples", func() (bool, string) {
			n := samplesOf(t, pool, p.sw.Name)
			return n >= p.published(), fmt.Sprintf("%d of %d stored", n, p.published())
		})
	}
	c.stop(t)
	for _, p := range []*publisher{p1, p2} {
		if got := samplesOf(t, pool, p.sw.Name); got != p.published() {
			t.Errorf("%s: %d samples stored, %d published", p.sw.Name, got, p.published())
		}
		if st := p.sw.Stats(); st.Coalesced != 0 {
			t.Errorf("%s coalesced %d updates: the collector did not keep up", p.sw.Name, st.Coalesced)
		}
	}
	noDuplicates(t, pool)
	if n := count(t, pool, `SELECT count(*) FROM samples WHERE flags & 1 = 1`); n != 4 {
		t.Errorf("%d samples flagged initial, want 4 (2 leaves of 2 switches before sync_response)", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM series`); n != 4 {
		t.Errorf("%d series, want 4", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM latest l JOIN series s ON s.id = l.series_id WHERE s.path LIKE '%/counters/packets' AND l.v_int = 3010`); n != 2 {
		t.Errorf("latest: %d counters at their last value 3010, want 2", n)
	}
	ledger := count(t, pool, `SELECT coalesce(sum(rows), 0) FROM ingest_ledger`)
	if want := p1.published() + p2.published(); ledger != want {
		t.Errorf("ledger counts %d rows, want %d", ledger, want)
	}
	if got := testutil.ToFloat64(c.Metrics().RowsWritten.WithLabelValues("samples")); int64(got) != p1.published()+p2.published() {
		t.Errorf("rows_written_total{table=samples} = %v, want %d", got, p1.published()+p2.published())
	}
}

func TestSwitchRestartResetsNoDuplicates(t *testing.T) {
	pool, dsn := newDB(t)
	sw := switchtest.Start(t, "sw1")
	p := newPublisher(sw, "n1-n2")
	p.round()
	c := start(t, testConfig(t, dsn, sw))
	waitFor(t, 30*time.Second, "streaming", func() (bool, string) {
		return c.Metrics().TargetStates()["sw1"] == "streaming", ""
	})
	for range 50 {
		p.round()
	}
	waitFor(t, 30*time.Second, "samples before the restart", func() (bool, string) {
		n := samplesOf(t, pool, "sw1")
		return n == p.published(), fmt.Sprintf("%d of %d", n, p.published())
	})
	before := p.published()

	// The switch reboots: its store is empty and its counters start again.
	sw.Restart()
	p.n = 0
	p.round()
	waitFor(t, 30*time.Second, "resubscription", func() (bool, string) {
		subs := testutil.ToFloat64(c.Metrics().Resubscribes.WithLabelValues("sw1"))
		return subs >= 2 && c.Metrics().TargetStates()["sw1"] == "streaming", fmt.Sprintf("%v subscribes", subs)
	})
	for range 20 {
		p.round()
	}
	want := before + p.published()
	waitFor(t, 30*time.Second, "samples after the restart", func() (bool, string) {
		n := samplesOf(t, pool, "sw1")
		return n >= want, fmt.Sprintf("%d of %d", n, want)
	})
	c.stop(t)
	if n := samplesOf(t, pool, "sw1"); n != want {
		t.Errorf("%d samples, want %d", n, want)
	}
	noDuplicates(t, pool)
	resets := count(t, pool, `SELECT count(*) FROM samples s JOIN series r ON r.id = s.series_id WHERE s.flags & 4 = 4`)
	if resets != 1 {
		t.Errorf("%d samples flagged reset, want 1 (the packets counter's first value after the restart)", resets)
	}
	if n := count(t, pool, `SELECT count(*) FROM samples s JOIN series r ON r.id = s.series_id
		WHERE s.flags & 4 = 4 AND r.path LIKE '%/counters/packets' AND s.v_int = 10`); n != 1 {
		t.Errorf("the reset is not on the counter's first value after the restart")
	}
}

func TestResubscribeDoesNotDuplicate(t *testing.T) {
	pool, dsn := newDB(t)
	sw := switchtest.Start(t, "sw1")
	p := newPublisher(sw, "n1-n2")
	for range 10 {
		p.round()
	}
	cfg := testConfig(t, dsn, sw)
	c := start(t, cfg)
	waitFor(t, 30*time.Second, "the initial values", func() (bool, string) {
		n := samplesOf(t, pool, "sw1")
		return n == 2, fmt.Sprint(n)
	})
	c.stop(t)
	// A new collector process: the switch sends the same current values
	// with their original timestamps; they are in latest, so dropped.
	c2 := start(t, cfg)
	waitFor(t, 30*time.Second, "streaming", func() (bool, string) {
		return c2.Metrics().TargetStates()["sw1"] == "streaming", ""
	})
	p.round()
	waitFor(t, 30*time.Second, "the new round", func() (bool, string) {
		n := samplesOf(t, pool, "sw1")
		return n == 4, fmt.Sprint(n)
	})
	c2.stop(t)
	noDuplicates(t, pool)
	if d := testutil.ToFloat64(c2.Metrics().DroppedRows.WithLabelValues(collectormetrics.DropDuplicate)); d != 2 {
		t.Errorf("duplicates dropped by the second collector: %v, want 2", d)
	}
}

func TestBadTargetDoesNotStopOthers(t *testing.T) {
	pool, dsn := newDB(t)
	good := switchtest.Start(t, "good")
	down := switchtest.Start(t, "down")
	down.Stop()
	p := newPublisher(good, "n1-n2")
	p.round()
	cfg := testConfig(t, dsn, good, down)
	c := start(t, cfg)
	waitFor(t, 30*time.Second, "the good switch streaming", func() (bool, string) {
		return c.Metrics().TargetStates()["good"] == "streaming", fmt.Sprint(c.Metrics().TargetStates())
	})
	for range 20 {
		p.round()
	}
	waitFor(t, 30*time.Second, "the good switch's samples", func() (bool, string) {
		n := samplesOf(t, pool, "good")
		return n == p.published(), fmt.Sprint(n)
	})
	waitFor(t, 10*time.Second, "the bad switch's error", func() (bool, string) {
		err, _ := c.TargetError("down")
		return err != nil, ""
	})
	err, _ := c.TargetError("down")
	if msg := err.Error(); !strings.Contains(msg, "target down ("+down.Addr+")") || strings.Contains(msg, "\n") {
		t.Errorf("error of the unreachable target: %q, want one line naming it", msg)
	}
	resp, herr := http.Get("http://" + c.Addr() + "/healthz")
	if herr == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), `"down":"backoff"`) && !strings.Contains(string(body), `"down":"connecting"`) {
			t.Errorf("/healthz does not show the bad target: %s", body)
		}
	}
	c.stop(t)
}

func TestDeadLetters(t *testing.T) {
	pool, dsn := newDB(t)
	sw := switchtest.Start(t, "sw1")
	c := start(t, testConfig(t, dsn, sw))
	waitFor(t, 30*time.Second, "streaming", func() (bool, string) {
		return c.Metrics().TargetStates()["sw1"] == "streaming", ""
	})
	// PostgreSQL text cannot hold NUL: that row is refused, the others of
	// its batch are stored.
	q := switchtest.Queue("n1-n2", 0)
	ts := time.Now().UnixNano()
	sw.Publish(ts, map[string]*gnmi.TypedValue{
		q + "/state/queue-depth":                  switchtest.Uint(5),
		q + "/state/last-cnp/source-address":      switchtest.Str("bad\x00address"),
		q + "/state/last-cnp/destination-address": switchtest.Str("2001:db8::2"),
	})
	waitFor(t, 30*time.Second, "the dead letter", func() (bool, string) {
		return count(t, pool, `SELECT count(*) FROM dead_letters`) == 1, ""
	})
	c.stop(t)
	if n := samplesOf(t, pool, "sw1"); n != 2 {
		t.Errorf("%d samples stored, want 2 (all but the bad row)", n)
	}
	var errText, row string
	if err := pool.QueryRow(context.Background(), `SELECT error, "row"::text FROM dead_letters`).Scan(&errText, &row); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errText, "22021") && !strings.Contains(errText, "0x00") {
		t.Errorf("dead letter error %q does not name the bad byte", errText)
	}
	if !strings.Contains(row, "source-address") {
		t.Errorf("dead letter row %s does not name the path", row)
	}
	if got := testutil.ToFloat64(c.Metrics().DeadLetters); got != 1 {
		t.Errorf("dead_letters_total = %v, want 1", got)
	}
}

func TestTargetsTable(t *testing.T) {
	pool, dsn := newDB(t)
	sw := switchtest.Start(t, "from-table")
	p := newPublisher(sw, "n1-n2")
	p.round()
	cfg := testConfig(t, dsn)
	cfg.DB.TargetsReread = time.Hour // only LISTEN/NOTIFY can bring it in time
	gone := make(chan string, 10)
	c := start(t, cfg, collector.WithTargetGone(func(name string) { gone <- name }))
	waitFor(t, 10*time.Second, "LISTEN", func() (bool, string) {
		return count(t, pool, `SELECT count(*) FROM pg_stat_activity WHERE query = 'LISTEN lhcnp_targets'`) > 0, ""
	})
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO targets (name, address, insecure, subscriptions) VALUES ($1, $2, true, $3)`,
		sw.Name, sw.Addr, `[{"paths": ["/lhcnp"], "mode": "on_change"}]`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the table's target streaming", func() (bool, string) {
		return c.Metrics().TargetStates()["from-table"] == "streaming", fmt.Sprint(c.Metrics().TargetStates())
	})
	for range 10 {
		p.round()
	}
	waitFor(t, 30*time.Second, "its samples", func() (bool, string) {
		n := samplesOf(t, pool, "from-table")
		return n == p.published(), fmt.Sprint(n)
	})
	if _, err := pool.Exec(ctx, `UPDATE targets SET enabled = false WHERE name = $1`, sw.Name); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the disabled target stopped", func() (bool, string) {
		return len(c.Running()) == 0, fmt.Sprint(c.Running())
	})
	select {
	case name := <-gone:
		if name != sw.Name {
			t.Errorf("WithTargetGone called with %q, want %q", name, sw.Name)
		}
	case <-time.After(10 * time.Second):
		t.Error("WithTargetGone not called for the disabled target")
	}
	c.stop(t)
}

func TestSpillSeedsDedupe(t *testing.T) {
	// A batch left in the spill by a dead collector is not in latest yet;
	// the next collector must not store its values again when the switch
	// re-sends them.
	pool, dsn := newDB(t)
	sw := switchtest.Start(t, "sw1")
	p := newPublisher(sw, "n1-n2")
	p.round()
	cfg := testConfig(t, dsn, sw)
	q := switchtest.Queue("n1-n2", 0)
	b := &rows.Batch{ID: rows.NewBatchID(), Collector: cfg.ID, Target: "sw1"}
	for _, path := range []string{q + "/state/queue-depth", q + "/state/counters/packets"} {
		b.Samples = append(b.Samples, rows.Sample{TS: p.ts, SeriesID: rows.SeriesID("sw1", path), Kind: rows.ValInt, Int: 10})
		b.Series = append(b.Series, rows.Series{ID: rows.SeriesID("sw1", path), Target: "sw1", Path: path, FirstSeen: p.ts})
	}
	writeSpill(t, cfg.StateDir, b)
	c := start(t, cfg)
	waitFor(t, 30*time.Second, "streaming", func() (bool, string) {
		return c.Metrics().TargetStates()["sw1"] == "streaming", ""
	})
	p.round()
	waitFor(t, 30*time.Second, "the spilled batch and the new round", func() (bool, string) {
		n := samplesOf(t, pool, "sw1")
		return n >= 4, fmt.Sprint(n)
	})
	c.stop(t)
	if n := samplesOf(t, pool, "sw1"); n != 4 {
		t.Errorf("%d samples, want 4", n)
	}
	noDuplicates(t, pool)
}

// TestTLSAndPasswords: a switch with mutual TLS and a users file; targets
// with the CA, with skip_verify, and one with a wrong password: the first
// two stream, the third fails with a one-line error naming it.
func TestTLSAndPasswords(t *testing.T) {
	pool, dsn := newDB(t)
	pki := switchtest.NewPKI(t)
	serverTLS, err := auth.ServerTLS(pki.ServerCert, pki.ServerKey, pki.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	hash, err := auth.HashPassword("s3cret", 4)
	if err != nil {
		t.Fatal(err)
	}
	sw := switchtest.Start(t, "sw", switchtest.WithTLS(serverTLS),
		switchtest.WithUsers(auth.NewUsers(auth.User{Name: "collector", Role: auth.ReadOnly, Hash: []byte(hash)})))
	p := newPublisher(sw, "n1-n2")
	p.round()
	sub := []config.Subscription{{Paths: []string{"/lhcnp"}, Mode: "on_change"}}
	cfg := testConfig(t, dsn)
	cfg.Targets = []config.Target{
		{Name: "with-ca", Address: sw.Addr, CAFile: pki.CAFile, CertFile: pki.ClientCert, KeyFile: pki.ClientKey,
			Username: "collector", Password: "s3cret", Subscriptions: sub},
		{Name: "skip-verify", Address: sw.Addr, SkipVerify: true, CertFile: pki.ClientCert, KeyFile: pki.ClientKey,
			Username: "collector", Password: "s3cret", Subscriptions: sub},
		{Name: "wrong-password", Address: sw.Addr, CAFile: pki.CAFile, CertFile: pki.ClientCert, KeyFile: pki.ClientKey,
			Username: "collector", Password: "guess", Subscriptions: sub},
	}
	c := start(t, cfg)
	waitFor(t, 30*time.Second, "the two good targets streaming", func() (bool, string) {
		s := c.Metrics().TargetStates()
		return s["with-ca"] == "streaming" && s["skip-verify"] == "streaming", fmt.Sprint(s)
	})
	waitFor(t, 30*time.Second, "the wrong password's error", func() (bool, string) {
		err, _ := c.TargetError("wrong-password")
		return err != nil, ""
	})
	err, _ = c.TargetError("wrong-password")
	if msg := err.Error(); !strings.HasPrefix(msg, "target wrong-password ("+sw.Addr+"): ") ||
		!strings.Contains(msg, "Unauthenticated") || strings.Contains(msg, "\n") {
		t.Errorf("wrong password: %q, want one line naming the target and Unauthenticated", msg)
	}
	for range 10 {
		p.round()
	}
	for _, name := range []string{"with-ca", "skip-verify"} {
		waitFor(t, 30*time.Second, name+"'s samples", func() (bool, string) {
			n := samplesOf(t, pool, name)
			return n == p.published(), fmt.Sprintf("%d of %d", n, p.published())
		})
	}
	c.stop(t)
	// skip_verify is warned of, naming its target only; no password is
	// in the logs.
	var warned []string
	for _, l := range strings.Split(c.logs.String(), "\n") {
		if strings.Contains(l, "level=WARN") && strings.Contains(l, "skip_verify") {
			warned = append(warned, l)
		}
	}
	if len(warned) == 0 || slices.ContainsFunc(warned, func(l string) bool { return !strings.Contains(l, "target=skip-verify ") }) {
		t.Errorf("skip_verify warnings:\n%s\nwant one or more, each of target skip-verify", strings.Join(warned, "\n"))
	}
	if strings.Contains(c.logs.String(), "s3cret") || strings.Contains(c.logs.String(), "guess") {
		t.Errorf("a password in the logs:\n%s", c.logs.String())
	}
}
