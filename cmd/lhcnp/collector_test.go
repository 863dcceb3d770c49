package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// collectorFile writes a collector configuration file.
func collectorFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "collector.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// lockedBuffer is an io.Writer safe for the collector's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	sb strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sb.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sb.String()
}

func TestCollectorBadConfig(t *testing.T) {
	_, dsn := pgtest.Private(t)
	state := t.TempDir()
	for _, tt := range []struct {
		desc string
		file string
		args []string
		env  []string
		want string // the one-line error, FILE standing for the file's path
	}{
		{desc: "unknown key", file: "db:\n  dsn: x\n  retension: 1h\n", want: "FILE:3:3: unknown key db.retension"},
		{desc: "unknown key in a target", file: "db: {dsn: x}\ntargets:\n  - name: a\n    adress: b\n", want: "FILE:4:5: unknown key targets[0].adress"},
		{desc: "bad mode", file: "db: {dsn: '" + dsn + "'}\nstate_dir: " + state + "\ntargets:\n  - name: a\n    address: h:1\n    insecure: true\n    subscriptions:\n      - paths: [/lhcnp]\n        mode: sometimes\n",
			want: `FILE:9:15: targets[a].subscriptions[0].mode: "sometimes" is not sample, on_change or target_defined`},
		{desc: "bad value in the file", file: "db: {dsn: x}\nwriter:\n  batch_rows: -5\n", want: "FILE:3:15: writer.batch_rows: -5: must be positive"},
		{desc: "bad value in a variable", args: []string{"--db.dsn", "x"}, env: []string{"LHCNP_COLLECTOR_WRITER_BATCH_ROWS=-5"},
			want: "LHCNP_COLLECTOR_WRITER_BATCH_ROWS: writer.batch_rows: -5: must be positive"},
		{desc: "bad DSN", file: "db: {dsn: 'postgres://127.0.0.1:1/nodb?connect_timeout=2'}\nstate_dir: " + state + "\n",
			want: "db.dsn: cannot reach PostgreSQL at 127.0.0.1:1"},
		{desc: "malformed DSN", args: []string{"--db.dsn", "postgres://%zz", "--state-dir", state},
			want: "db.dsn: cannot parse"},
		{desc: "missing DSN", args: []string{"--state-dir", state}, want: "db.dsn: missing (PostgreSQL connection string)"},
		{desc: "bad variable", args: []string{"--db.dsn", dsn}, env: []string{"LHCNP_COLLECTOR_WRITER_BATCHROWS=5"},
			want: "environment: unknown variable LHCNP_COLLECTOR_WRITER_BATCHROWS"},
		{desc: "bad flag value", args: []string{"--writer.batch-rows", "many"}, want: `--writer.batch-rows="many": not of type int`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			for _, e := range tt.env {
				k, v, _ := strings.Cut(e, "=")
				t.Setenv(k, v)
			}
			args := tt.args
			path := ""
			if tt.file != "" {
				path = collectorFile(t, tt.file)
				args = append([]string{"--config", path}, args...)
			}
			var stderr lockedBuffer
			code := run(append([]string{"collector"}, args...), io.Discard, &stderr)
			if code == 0 {
				t.Fatalf("exit status 0, want an error")
			}
			want := strings.ReplaceAll(tt.want, "FILE", path)
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			last := lines[len(lines)-1]
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr %q does not say %q", stderr.String(), want)
			}
			if !strings.HasPrefix(last, "lhcnp collector: ") && !strings.Contains(stderr.String(), "not of type") {
				t.Errorf("last line %q is not the command's one-line error", last)
			}
		})
	}
}

// TestCollectorAddressesApart: the collector's metrics and northbound on
// one port are refused before the database is reached, both keys named
// where their values came from, exit status 2: the northbound failed the
// start as "address already in use" once the collector had connected,
// migrated and taken the metrics' port.
func TestCollectorAddressesApart(t *testing.T) {
	withoutEnv(t, "LHCNP_COLLECTOR_")
	// No database answers there: a configuration taken would fail at it.
	file := collectorFile(t, "db: {dsn: 'postgres://127.0.0.1:1/lhcnp?connect_timeout=2'}\nstate_dir: "+t.TempDir()+"\nmetrics:\n  listen: 127.0.0.1:9273\nnorthbound:\n  insecure: true\n")
	const apart = ": each of the collector's listeners needs an address of its own (port 0: a free one each)"
	for _, tt := range []struct {
		desc string
		args []string
		env  string // NAME=VALUE, if any
		want string // FILE for the file; "" for a configuration taken
	}{
		{desc: "the northbound flag on the file's metrics", args: []string{"--northbound.listen", "127.0.0.1:9273"},
			want: "metrics.listen (FILE:4:11), northbound.listen (--northbound.listen): both 127.0.0.1:9273" + apart},
		{desc: "every interface's northbound of a variable over the metrics' loopback", env: "LHCNP_COLLECTOR_NORTHBOUND_LISTEN=:9273",
			want: "metrics.listen (FILE:4:11), northbound.listen (LHCNP_COLLECTOR_NORTHBOUND_LISTEN): 127.0.0.1:9273 and :9273 take one port" + apart},
		{desc: "the metrics flag on the northbound's", args: []string{"--metrics.listen", "0.0.0.0:9350", "--northbound.listen", "127.0.0.1:9350"},
			want: "metrics.listen (--metrics.listen), northbound.listen (--northbound.listen): 0.0.0.0:9350 and 127.0.0.1:9350 take one port" + apart},
		{desc: "no northbound"},
		{desc: "ports apart", args: []string{"--northbound.listen", "127.0.0.1:9350"}},
		{desc: "free ports", args: []string{"--metrics.listen", "127.0.0.1:0", "--northbound.listen", "127.0.0.1:0"}},
		{desc: "no metrics", args: []string{"--metrics.listen", "", "--northbound.listen", "127.0.0.1:9273"}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			args := append([]string{"--config", file}, tt.args...)
			var env []string
			if tt.env != "" {
				env = []string{tt.env}
			}
			_, err := parseCollector(args, func() []string { return env }, io.Discard)
			if tt.want == "" {
				if err != nil {
					t.Errorf("parseCollector(%q) = %v, want it taken", args, err)
				}
				return
			}
			want := strings.ReplaceAll(tt.want, "FILE", file)
			if err == nil || err.Error() != want || exitStatus(err) != 2 {
				t.Errorf("parseCollector(%q) = %v (exit status %d), want exit status 2 and\n%s", args, err, exitStatus(err), want)
			}
		})
	}
	// The command as a user runs it: the one line, nothing on stdout, the
	// database not reached (its error would be the line).
	var stdout, stderr lockedBuffer
	code := run([]string{"collector", "--config", file, "--northbound.listen", "127.0.0.1:9273"}, &stdout, &stderr)
	want := "lhcnp collector: metrics.listen (" + file + ":4:11), northbound.listen (--northbound.listen): both 127.0.0.1:9273" + apart + "\n"
	if code != 2 || stderr.String() != want || stdout.String() != "" {
		t.Errorf("exit status %d, stdout %q, stderr\n%s\nwant exit status 2, nothing on stdout and\n%s", code, stdout.String(), stderr.String(), want)
	}
}

// TestExampleCollectorConfig loads examples/collector.yaml as the command
// does (file, then checks), with the DSN and state directory overridden by
// flags and variables.
func TestExampleCollectorConfig(t *testing.T) {
	_, dsn := pgtest.Private(t)
	t.Setenv("LHCNP_COLLECTOR_DB_DSN", dsn)
	ctx, cancel := context.WithCancel(context.Background())
	out := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- runCollector(ctx, []string{"--config", "../../examples/collector.yaml", "--state-dir", t.TempDir(),
			"--metrics.listen", "127.0.0.1:0", "--db.targets-table=false"}, out, io.Discard)
	}()
	deadline := time.After(60 * time.Second)
	for !strings.Contains(out.String(), "lhcnp collector ") {
		select {
		case err := <-done:
			cancel()
			t.Fatalf("runCollector returned: %v", err)
		case <-deadline:
			cancel()
			t.Fatal("the collector did not start within 60 s")
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("runCollector: %v", err)
	}
	if !strings.Contains(out.String(), "1 targets from the file") {
		t.Errorf("output: %q", out.String())
	}
}

// TestCollectorFillsViews: two real `lhcnp switch` processes' worth of
// targets (in process), the collector command with a private PostgreSQL it
// migrates itself, and the views an NMS reads fill for both switches. sw-b
// has the collector's default subscription (TARGET_DEFINED): its switches
// sample at 500 ms, not the default 10 s, which notifications_per_second
// waited for (a counter's increase needs its second sample).
func TestCollectorFillsViews(t *testing.T) {
	t.Parallel()
	srv, _ := pgtest.Private(t)
	ctx := context.Background()
	if err := srv.CreateDatabase(ctx, "fresh", ""); err != nil {
		t.Fatal(err)
	}
	dsn := srv.DSN("fresh")
	a := startSwitch(t, "--speed", "0.05", "--target-defined-interval", "500ms")
	b := startSwitch(t, "--speed", "0.05", "--target-defined-interval", "500ms")
	file := collectorFile(t, fmt.Sprintf(`
db:
  dsn: %s
state_dir: %s
writer:
  batch_interval: 50ms
targets:
  - name: sw-a
    address: %s
    insecure: true
    subscriptions:
      - {paths: [/lhcnp/interfaces], mode: sample, sample_interval: 100ms}
      - {paths: [/lhcnp/global], mode: on_change}
  - name: sw-b
    address: %s
    insecure: true
`, dsn, t.TempDir(), a.addr, b.addr))
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logs := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- runCollector(cctx, []string{"--config", file}, io.Discard, logs) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("runCollector: %v", err)
		}
	}()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// events is a table: the Long-haul CNPs seen through last-cnp.
	for _, view := range []string{"queue_congestion", "current_config", "queue_latest", "notifications_per_second", "drops_and_pauses", "events"} {
		deadline := time.Now().Add(90 * time.Second)
		for {
			var n int64
			err := pool.QueryRow(ctx, `SELECT count(DISTINCT target) FROM `+view).Scan(&n)
			if err == nil && n == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("view %s: %d targets (err %v), want both; collector log:\n%s", view, n, err, logs.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// The ports' buffers reach the tuner's view: examples/switch-scenario.yaml's
	// WAN port holds 128 MB (the tuner's overrun ceiling, docs/tuner.md); and
	// so does every queue's overload-cut (off: rule pinned's leaf, which the
	// tuner switches where the switch publishes it).
	for _, q := range []struct{ what, sql string }{
		{"buffer_bytes of wan0 = 128 MB", `SELECT count(DISTINCT target) FROM queue_latest WHERE interface = 'wan0' AND buffer_bytes = 128000000`},
		{"overload_cut of wan0 queue 0 off", `SELECT count(DISTINCT target) FROM queue_latest WHERE interface = 'wan0' AND queue = 0 AND NOT (state ->> 'overload-cut')::boolean`},
	} {
		for deadline := time.Now().Add(90 * time.Second); ; {
			var n int64
			err := pool.QueryRow(ctx, q.sql).Scan(&n)
			if err == nil && n == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("queue_latest.%s for %d targets (err %v), want both", q.what, n, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	var series, rowsPerSecond float64
	if err := pool.QueryRow(ctx, `SELECT count(*)::float8 / 2 FROM series`).Scan(&series); err == nil {
		pool.QueryRow(ctx, `SELECT count(*) / greatest(extract(epoch FROM max(ts) - min(ts)), 1) / 2 FROM samples`).Scan(&rowsPerSecond)
		t.Logf("per switch: %.0f series, %.0f rows/s", series, rowsPerSecond)
	}
	// docs/scaling.md's count of the example switch's series, subscribed as
	// the collector does by default (sw-b): those of its schema's leaves, and
	// apart the flow table's, which grow with the flows learned (the
	// scenario's first three flows by now, its others after 2.1 s
	// simulated). It said 1 662 in all, a count of an older schema and of
	// sw-a's subscription and sw-b's mixed.
	var leaves, flows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE schema_path NOT LIKE '/lhcnp/flow-table/%'),
	                                     count(*) FILTER (WHERE schema_path LIKE '/lhcnp/flow-table/%')
	                              FROM series WHERE target = 'sw-b'`).Scan(&leaves, &flows); err != nil {
		t.Fatal(err)
	}
	t.Logf("the default subscription: %d series, and %d of the flow table", leaves, flows)
	md, err := os.ReadFile("../../docs/scaling.md")
	if err != nil {
		t.Fatal(err)
	}
	count := strconv.Itoa(leaves) // as the page writes numbers: 1 904
	if leaves >= 1000 {
		count = fmt.Sprintf("%d %03d", leaves/1000, leaves%1000)
	}
	if want := "**" + count + " series**"; !strings.Contains(string(md), want) {
		t.Errorf("docs/scaling.md does not say %s, the example switch's series besides its flow table's", want)
	}
	var unit string
	if err := pool.QueryRow(ctx, `SELECT unit FROM series WHERE schema_path = '/lhcnp/interfaces/interface/queues/queue/state/queue-depth' LIMIT 1`).Scan(&unit); err != nil || unit != "bytes" {
		t.Errorf("queue-depth series unit %q (%v), want bytes", unit, err)
	}
}

// TestCollectorBanner: the collector names its /metrics as lhcnp switch
// does, a URL the switch's banner pattern reads, not the quoted address
// it printed (`metrics on "127.0.0.1:9273"`); with metrics off it says so
// (it printed `metrics on ""`).
func TestCollectorBanner(t *testing.T) {
	for _, tt := range []struct {
		desc, addr, want string
	}{
		{desc: "metrics on", addr: "127.0.0.1:9273",
			want: "lhcnp collector c1: 2 targets from the file, targets table true, metrics on http://127.0.0.1:9273/metrics"},
		{desc: "metrics off", addr: "",
			want: "lhcnp collector c1: 2 targets from the file, targets table true, metrics off"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			got := collectorBanner("c1", 2, true, tt.addr)
			if got != tt.want {
				t.Errorf("banner (-want, +got):\n-%s\n+%s", tt.want, got)
			}
			if m := metricsRE.FindStringSubmatch(got); tt.addr != "" && (m == nil || m[1] != "http://"+tt.addr+"/metrics") {
				t.Errorf("the switch's banner pattern reads %q from %q", m, got)
			}
		})
	}
}
