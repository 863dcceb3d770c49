package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// TestTunerMetricsEndpoint: `lhcnp tuner` with metrics.listen names its
// /metrics in its banner as the collector does, serves the lhcnp_tuner_
// metrics there (the first period's time among them) with the Go and
// process collectors, and /healthz answers ok with the database up.
func TestTunerMetricsEndpoint(t *testing.T) {
	_, dsn := pgtest.New(t)
	file := fileWriter(t, t.TempDir())("tuner.yaml", fmt.Sprintf(`
db: '%s'
state_dir: ''
metrics: {listen: 127.0.0.1:0}
switches:
  - {name: n1, address: 127.0.0.1:9339, insecure: true}
`, dsn))
	ctx, cancel := context.WithCancel(context.Background())
	out := &addrWriter{addr: make(chan string, 1), re: regexp.MustCompile(`metrics on http://(\S+)/metrics\n`)}
	logs := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- runTuner(ctx, []string{"--config", file}, out, logs) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("lhcnp tuner: %v", err)
		}
	})
	var addr string
	select {
	case addr = <-out.addr:
	case err := <-done:
		t.Fatalf("lhcnp tuner returned before its banner: %v\n%s", err, logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("no banner naming the metrics within 30s; logs:\n%s", logs.String())
	}
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	// The first period runs at the start: poll until it has ended.
	periodEnded := regexp.MustCompile(`(?m)^lhcnp_tuner_last_cycle_timestamp_seconds [1-9]`)
	var body string
	for deadline := time.Now().Add(30 * time.Second); ; {
		code, b := get("/metrics")
		if code != http.StatusOK {
			t.Fatalf("/metrics answered %d", code)
		}
		if body = b; periodEnded.MatchString(body) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics shows no period ended within 30s:\n%s", body)
		}
		time.Sleep(50 * time.Millisecond) // polling with a deadline
	}
	for _, want := range []string{`lhcnp_tuner_changes_total{outcome="pushed"} 0`, "lhcnp_tuner_commits_pending 0",
		`lhcnp_tuner_errors_total{kind="database"} 0`, "go_goroutines", "process_start_time_seconds"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics has no %q", want)
		}
	}
	code, hz := get("/healthz")
	var h struct {
		OK   bool `json:"ok"`
		DBUp bool `json:"db_up"`
	}
	if err := json.Unmarshal([]byte(hz), &h); code != http.StatusOK || err != nil || !h.OK || !h.DBUp {
		t.Errorf("/healthz: %d %s (%v), want 200 ok with the database up", code, hz, err)
	}
}

// TestTunerMetricsBanner: the tuner's banner names its /metrics as the
// collector's does (a URL the switch's banner pattern reads), or says
// they are off.
func TestTunerMetricsBanner(t *testing.T) {
	if got, want := tunerBanner(2, "every 5s", "pushing with Commit Confirmed", nil),
		"lhcnp tuner: 2 switch(es), every 5s, pushing with Commit Confirmed, metrics off"; got != want {
		t.Errorf("banner (-want, +got):\n-%s\n+%s", want, got)
	}
}
