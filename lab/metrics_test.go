package lab

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	dto "github.com/prometheus/client_model/go"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/config"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/internal/promcheck"
	"github.com/lhcnp/lhcnp/server/fabric"
	"github.com/lhcnp/lhcnp/tuner"
)

// TestLabServesTunerMetrics: the lab's tuner's metrics are on the
// collector's /metrics, which Addresses names for both: once the tuner
// has decided, lhcnp_tuner_decisions_total is there beside the
// collector's metrics, and the process's Go metrics once (the scrape
// would fail on a family gathered twice). A lab on the shared test
// cluster's database, n1 alone tuned, dry run, no traffic: the queues'
// idle telemetry is enough for a decision.
func TestLabServesTunerMetrics(t *testing.T) {
	_, dsn := pgtest.New(t)
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	l := runTunedLab(t, pc)

	a := l.Addresses()
	if a.TunerMetrics == "" || a.TunerMetrics != a.Metrics {
		t.Errorf("Addresses: tuner metrics %q, want the collector's %q", a.TunerMetrics, a.Metrics)
	}
	decisions := func(mfs map[string]*dto.MetricFamily) (n float64) {
		for _, m := range mfs["lhcnp_tuner_decisions_total"].GetMetric() {
			n += m.GetCounter().GetValue()
		}
		return n
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		mfs := promcheck.Scrape(t, a.Metrics)
		if decisions(mfs) > 0 {
			for _, name := range []string{"lhcnp_collector_target_state", "lhcnp_tuner_changes_total", "go_goroutines"} {
				if mfs[name] == nil {
					t.Errorf("no %s on %s", name, a.Metrics)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			_, tuner := mfs["lhcnp_tuner_changes_total"]
			t.Fatalf("%s: no lhcnp_tuner_decisions_total within 60s (the tuner's metrics there at all: %v)", a.Metrics, tuner)
		}
		time.Sleep(100 * time.Millisecond) // polling the tuner's period, with the deadline above
	}
}

// TestLabHealthzHasTheTuner: the lab's /healthz (the collector's
// endpoint, where the tuner's metrics are) says the tuner's health too: a
// tuner whose database does not answer makes it 503, with the tuner's
// error among the collector's, and 200 again once it answers. Before, it
// was the collector's alone: 200 whatever the tuner's state.
func TestLabHealthzHasTheTuner(t *testing.T) {
	_, dsn := pgtest.New(t)
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	// The tuner's pool alone (the collector's is its own, on the DSN):
	// every acquire fails while cut.
	var cut atomic.Bool
	pc.PrepareConn = func(context.Context, *pgx.Conn) (bool, error) {
		if cut.Load() {
			return true, errors.New("cut by the test")
		}
		return true, nil
	}
	l := runTunedLab(t, pc)
	url := strings.TrimSuffix(l.Addresses().Metrics, "/metrics") + "/healthz"
	healthz := func() (int, collectormetrics.Health) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var h collectormetrics.Health
		if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		return resp.StatusCode, h
	}
	// The listener is open since Start: the first GET waits for Run to serve it.
	if code, h := healthz(); code != http.StatusOK || !h.OK {
		t.Fatalf("the tuner's database up: %s answered %d %+v, want 200 and ok", url, code, h)
	}

	cut.Store(true)
	code, h := healthz()
	want := "tuner: database: cut by the test"
	if code != http.StatusServiceUnavailable || h.OK || !h.DBUp || !slices.Contains(h.Errors, want) {
		t.Errorf("the tuner's database cut: %s answered %d %+v, want 503, not ok, the collector's database up and the error %q",
			url, code, h, want)
	}

	cut.Store(false)
	if code, h := healthz(); code != http.StatusOK || !h.OK {
		t.Errorf("the tuner's database back: %s answered %d %+v, want 200 and ok", url, code, h)
	}
}

// runTunedLab starts a lab on pc's database and runs it until the test
// ends: the lab topology's switches, n1 alone tuned, dry run, no traffic
// (the queues' idle telemetry is enough for a decision).
func runTunedLab(t *testing.T, pc *pgxpool.Config) *Lab {
	t.Helper()
	sc, err := scenario.LoadFile(labScenario)
	if err != nil {
		t.Fatal(err)
	}
	n1, err := os.ReadFile("../examples/lab-n1.json")
	if err != nil {
		t.Fatal(err)
	}
	tc := tuner.DefaultConfig()
	tc.Period, tc.Window, tc.DryRun = 200*time.Millisecond, 2*time.Second, true
	tc.Switches = []tuner.SwitchConfig{{Name: "n1"}}
	fast := config.Duration(200 * time.Millisecond)
	l, err := Start(context.Background(), Config{StateDir: t.TempDir(), Postgres: pc, HTTPAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0",
		Fabric: fabric.Config{Scenario: sc, Speed: 0.05, PublishInterval: 100 * time.Millisecond,
			TargetOptions: []service.Option{service.WithInsecure()},
			Switches: []fabric.Switch{{Name: "t1", Listen: "127.0.0.1:0"}, {Name: "n1", Listen: "127.0.0.1:0", Config: n1, ConfigName: "lab-n1.json"},
				{Name: "n2", Listen: "127.0.0.1:0"}}},
		Subscriptions: []config.Subscription{{Paths: []string{"/lhcnp/interfaces"}, Mode: "sample", SampleInterval: fast},
			{Paths: []string{"/lhcnp/global"}, Mode: "on_change"}},
		Tuner: tc})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return l
}
