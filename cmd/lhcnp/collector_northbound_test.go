package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// startCollectorNorthbound runs what the collector commands of the docs
// talk to (docs/collector.md, "Northbound gNMI", 127.0.0.1:9350): two
// switches named n1 and n2 (each examples/switch.yaml), and `lhcnp
// collector` subscribed to both, with a database of its own and
// northbound.listen. It returns the northbound's address once both
// switches' values are in it and some are stored at least four seconds
// ago (the History examples ask for the last seconds).
func startCollectorNorthbound(t *testing.T) string {
	t.Helper()
	addr, _ := startCollectorNorthboundMetrics(t)
	return addr
}

var collectorMetricsRE = regexp.MustCompile(`metrics on http://(\S+)/metrics`)

// startCollectorNorthboundMetrics is startCollectorNorthbound with the
// collector's /metrics on a free port; it returns the northbound's address
// and the metrics' (host:port).
func startCollectorNorthboundMetrics(t *testing.T) (northbound, metrics string) {
	t.Helper()
	a, b := startSwitch(t), startSwitch(t)
	return startNorthboundOver(t, a.addr, b.addr)
}

// startLabNorthbound runs what lhcnp lab serves on 127.0.0.1:9350
// (docs/lab.md, "History"): a collector's northbound over the lab fabric's
// n1 and n2 (examples/lab.yaml, whose n1 has the interface wan that the
// lab's commands name; examples/switch.yaml's has wan0). It returns the
// northbound's address as startCollectorNorthbound does.
func startLabNorthbound(t *testing.T) string {
	t.Helper()
	sw := startLabFabric(t, "n1", "n2")
	addr, _ := startNorthboundOver(t, sw[0], sw[1])
	return addr
}

// startNorthboundOver runs `lhcnp collector` subscribed to the switches
// at n1 and n2 (named so), with a database of its own, its metrics and
// its northbound on free ports; it returns both addresses once the
// northbound is ready (waitNorthbound).
func startNorthboundOver(t *testing.T, n1, n2 string) (northbound, metrics string) {
	t.Helper()
	pool, dsn := pgtest.New(t)
	file := collectorFile(t, fmt.Sprintf(`
db: {dsn: '%s', targets_table: false}
state_dir: %s
writer: {batch_interval: 50ms}
metrics: {listen: 127.0.0.1:0}
northbound: {listen: 127.0.0.1:0, insecure: true}
targets:
  - {name: n1, address: %s, insecure: true, subscriptions: [{paths: [/lhcnp], mode: on_change}]}
  - {name: n2, address: %s, insecure: true, subscriptions: [{paths: [/lhcnp], mode: on_change}]}
`, dsn, t.TempDir(), n1, n2))
	ctx, cancel := context.WithCancel(context.Background())
	out := &addrWriter{addr: make(chan string, 1), re: regexp.MustCompile(`northbound gNMI on (\S+)\n`)}
	logs := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- runCollector(ctx, []string{"--config", file}, out, logs) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("collector: %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Error("the collector did not stop within 60 s of cancel")
		}
	})
	var addr string
	select {
	case addr = <-out.addr:
	case err := <-done:
		t.Fatalf("the collector returned before serving: %v\n%s", err, logs.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("the collector's northbound did not start within 60 s:\n%s", logs.String())
	}
	waitNorthbound(t, pool, addr, logs)
	out.mu.Lock()
	m := collectorMetricsRE.FindStringSubmatch(out.buf.String())
	out.mu.Unlock()
	if m == nil {
		t.Fatalf("the collector did not print its metrics address:\n%s", logs.String())
	}
	return addr, m[1]
}

// waitNorthbound waits until the northbound answers a Get for both
// switches and the database holds samples of both at least 4 s old.
func waitNorthbound(t *testing.T, pool *pgxpool.Pool, addr string, logs *lockedBuffer) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := gnmi.NewGNMIClient(conn)
	ctx := context.Background()
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := c.Get(ctx, &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "*"}, Encoding: gnmi.Encoding_JSON_IETF,
			Path: []*gnmi.Path{{Elem: []*gnmi.PathElem{{Name: "lhcnp"}, {Name: "global"}}}}})
		var old int
		qerr := pool.QueryRow(ctx, `SELECT count(DISTINCT s.target) FROM samples x JOIN series s ON s.id = x.series_id
			WHERE x.ts < now() - interval '4 seconds'`).Scan(&old)
		if err == nil && len(resp.GetNotification()) == 2 && qerr == nil && old == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("northbound not ready (get: %v, %d notifications; stored switches 4 s ago: %d, %v):\n%s",
				err, len(resp.GetNotification()), old, qerr, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestCollectorNorthboundConfig: the northbound's transport must be chosen,
// as a switch's.
func TestCollectorNorthboundConfig(t *testing.T) {
	_, dsn := pgtest.New(t)
	var stderr lockedBuffer
	code := run([]string{"collector", "--db.dsn", dsn, "--state-dir", t.TempDir(), "--db.targets-table=false",
		"--northbound.listen", "127.0.0.1:0"}, io.Discard, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), "northbound.insecure: exactly one of northbound.insecure and northbound.tls_cert") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestCollectorNorthboundUsersOverInsecureWarns: the collector's northbound
// with users and without TLS, on an address other than loopback, warns on
// stderr that the passwords cross the network in clear text. It failed
// before: no warning.
func TestCollectorNorthboundUsersOverInsecureWarns(t *testing.T) {
	got := northboundStartStderr(t, "0.0.0.0:0", "--northbound.users", usersFileOf(t, "nms"))
	want := "lhcnp collector: warning: northbound.users over northbound.insecure: " + clearPasswordsWarning + " (gNMI on 0.0.0.0:0)"
	if !strings.Contains(got, want) {
		t.Errorf("stderr:\n%s\nwant %q", got, want)
	}
}

// TestCollectorNorthboundAnonymousOverInsecureWarns: the collector's
// northbound without users and without TLS, on an address other than
// loopback, warns on stderr, naming the address, that anyone who reaches
// it may Set every target with the collector's credentials; on loopback it
// says only that every client is the anonymous user. It failed before: the
// same notice on every address.
func TestCollectorNorthboundAnonymousOverInsecureWarns(t *testing.T) {
	testAnonymousWarning(t, func(t *testing.T, listen string) string { return northboundStartStderr(t, listen) },
		"lhcnp collector: warning: no northbound.users over northbound.insecure: anyone who reaches gNMI on %s"+
			" can read every target and Set it with the collector's own credentials as the anonymous read-write user")
}

// northboundStartStderr runs lhcnp collector with an insecure northbound on
// listen (and extra arguments) until the northbound serves, and returns its
// stderr by then.
func northboundStartStderr(t *testing.T, listen string, extra ...string) string {
	t.Helper()
	_, dsn := pgtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	out := &addrWriter{addr: make(chan string, 1), re: regexp.MustCompile(`northbound gNMI on (\S+)\n`)}
	var stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- runCollector(ctx, append([]string{"--db.dsn", dsn, "--state-dir", t.TempDir(), "--db.targets-table=false",
			"--northbound.listen", listen, "--northbound.insecure"}, extra...), out, &stderr)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("collector: %v", err)
		}
	}()
	select {
	case <-out.addr: // the warnings come before
	case err := <-done:
		done <- err
		t.Fatalf("the collector returned before serving: %v\n%s", err, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("the collector's northbound did not start within 60 s:\n%s", stderr.String())
	}
	return stderr.String()
}
