package tuner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openconfig/ygnmi/ygnmi"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"

	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/internal/metricsdoc"
	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/internal/promcheck"
	"github.com/lhcnp/lhcnp/tuner/policy"
	"github.com/lhcnp/lhcnp/tuner/tunermetrics"
)

// serveMetrics serves m's /metrics on loopback until the test ends, and
// returns its URL.
func serveMetrics(t *testing.T, m *tunermetrics.Metrics) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- m.Serve(ctx, lis, func() tunermetrics.Health { return tunermetrics.Health{OK: true, DBUp: true} })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return "http://" + lis.Addr().String() + "/metrics"
}

// scraped is one scrape of /metrics, parsed.
type scraped map[string]*dto.MetricFamily

func scrapeMetrics(t *testing.T, url string) scraped {
	t.Helper()
	return promcheck.Scrape(t, url)
}

// get is the value of the metric name (prefix added) whose labels are
// labels (label=value, ...; "" for none): a counter's or gauge's value, a
// histogram's count; "absent" when the scrape has no such metric.
func (s scraped) get(name, labels string) string {
	for _, m := range s[tunermetrics.Prefix+name].GetMetric() {
		var ls []string
		for _, l := range m.GetLabel() {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		if strings.Join(ls, ",") != labels {
			continue
		}
		switch {
		case m.GetCounter() != nil:
			return fmt.Sprint(m.GetCounter().GetValue())
		case m.GetGauge() != nil:
			return fmt.Sprint(m.GetGauge().GetValue())
		case m.GetHistogram() != nil:
			return fmt.Sprint(m.GetHistogram().GetSampleCount())
		}
	}
	return "absent"
}

// TestTunerMetrics: a tuner against real parts (PostgreSQL, two switch
// targets, one refusing every Set) counts what it does on a /metrics
// scraped over HTTP: the decisions, a change pushed then confirmed, a Set
// refused, the commit pending between, the calls' durations, the queues
// decided on and held by an operator, the database's errors once it is
// gone, and when the last period ended.
func TestTunerMetrics(t *testing.T) {
	ctx := context.Background()
	pool, _ := pgtest.New(t)
	good, pub := testSwitch(t)
	refusing, _ := testSwitch(t, service.WithInterceptors([]grpc.UnaryServerInterceptor{refuseSet}, nil))
	cfg := testConfig(SwitchConfig{Name: "n1", Address: good, Insecure: true},
		SwitchConfig{Name: "refusing", Address: refusing, Insecure: true})
	src := &scriptSource{clients: map[string]*ygnmi.Client{"n1": ygnmiClient(t, good), "refusing": ygnmiClient(t, refusing)},
		traffic: func(_ string, s policy.Settings) traffic {
			if s.Alpha < 1 {
				return better
			}
			return congested
		}}
	rec := NewPGRecorder(pool)
	push := NewGNMIPusher(cfg.Switches)
	t.Cleanup(func() { push.Close() })
	m := tunermetrics.New()
	tu, err := New(cfg, src, push, rec, WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), WithMetrics(m))
	if err != nil {
		t.Fatal(err)
	}
	url := serveMetrics(t, m)

	// want compares a scrape with the values of some metrics.
	want := func(when string, w map[[2]string]string) {
		t.Helper()
		s := scrapeMetrics(t, url)
		got := map[[2]string]string{}
		for k := range w {
			got[k] = s.get(k[0], k[1])
		}
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("%s: /metrics (-want +got):\n%s", when, diff)
		}
	}

	// A decision on each switch: n1's change pushed, refusing's refused.
	if err := tu.Cycle(ctx, t1); err == nil || !strings.Contains(err.Error(), "set refused by test") {
		t.Fatalf("Cycle: %v, want refusing's Set refused", err)
	}
	want("after the first period", map[[2]string]string{
		{"decisions_total", "direction=tighten,rule=delay"}: "2",
		{"changes_total", "outcome=pushed"}:                 "1",
		{"changes_total", "outcome=refused"}:                "1",
		{"changes_total", "outcome=confirmed"}:              "0",
		{"commits_pending", ""}:                             "1",
		{"errors_total", "kind=set"}:                        "1",
		{"errors_total", "kind=dial"}:                       "0",
		{"errors_total", "kind=database"}:                   "0",
		{"set_duration_seconds", "call=commit"}:             "2",
		{"queues_tuned", "target=n1"}:                       "1",
		{"queues_tuned", "target=refusing"}:                 "1",
		{"last_cycle_timestamp_seconds", ""}:                fmt.Sprint(float64(t1.Unix())),
	})

	// n1's change judged better and confirmed; an operator holds
	// refusing's queue meanwhile.
	if err := pub.PublishNow(ctx); err != nil {
		t.Fatal(err)
	}
	at := t1.Add(cfg.JudgeWindow)
	if _, _, err := rec.Hold(ctx, "refusing", QueueID{"wan0", 0}, at.Add(-time.Second), at.Add(time.Hour), "maintenance"); err != nil {
		t.Fatal(err)
	}
	if err := tu.Cycle(ctx, at); err != nil {
		t.Fatal(err)
	}
	want("after the judgement", map[[2]string]string{
		{"changes_total", "outcome=confirmed"}:              "1",
		{"changes_total", "outcome=pushed"}:                 "1",
		{"commits_pending", ""}:                             "0",
		{"set_duration_seconds", "call=confirm"}:            "1",
		{"queues_tuned", "target=refusing"}:                 "0",
		{"queues_operator_held", "target=refusing"}:         "1",
		{"errors_total", "kind=database"}:                   "0",
		{"last_cycle_timestamp_seconds", ""}:                fmt.Sprint(float64(at.Unix())),
		{"decisions_total", "direction=tighten,rule=delay"}: "2",
	})

	// The database gone: each switch's read of the operators' holds fails.
	pool.Close()
	if err := tu.Cycle(ctx, at.Add(cfg.Period)); err == nil {
		t.Fatal("Cycle succeeded without the database")
	}
	want("without the database", map[[2]string]string{
		{"errors_total", "kind=database"}: "2",
		{"queues_tuned", "target=n1"}:     "0",
	})

	// Prometheus' own naming rules (what promtool check metrics applies).
	mf, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var ours []*dto.MetricFamily
	for _, f := range mf {
		if strings.HasPrefix(f.GetName(), tunermetrics.Prefix) {
			ours = append(ours, f)
		}
	}
	if len(ours) == 0 {
		t.Fatal("no metric of the prefix gathered")
	}
	if problems, err := promlint.NewWithMetricFamilies(ours).Lint(); err != nil || len(problems) > 0 {
		t.Errorf("promlint: %v %+v", err, problems)
	}
}

// TestTunerMetricsDial: a switch the tuner cannot reach counts a dial
// error, not a set one.
func TestTunerMetricsDial(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens there now
	push := NewGNMIPusher([]SwitchConfig{{Name: "gone", Address: addr, Insecure: true}})
	t.Cleanup(func() { push.Close() })
	m := tunermetrics.New()
	p := meteredPusher{push, m}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Commit(ctx, "gone", "c1", []Change{{Interface: "wan0", Before: bdpSettings(1), After: bdpSettings(congestedAlpha)}}, time.Minute); err == nil {
		t.Fatal("Commit to a switch nobody serves succeeded")
	}
	url := serveMetrics(t, m)
	s := scrapeMetrics(t, url)
	if d, set := s.get("errors_total", "kind=dial"), s.get("errors_total", "kind=set"); d != "1" || set != "0" {
		t.Errorf("errors_total dial %s set %s, want 1 and 0", d, set)
	}
}

// TestTunerMetricsDoc: docs/tuner.md's table under "Metrics and health"
// lists every metric the tuner registers, with its labels, and nothing
// else (the collector's TestMetricsDoc, for the tuner).
func TestTunerMetricsDoc(t *testing.T) {
	page := metricsdoc.Read(t, "../docs/tuner.md")
	if diff := cmp.Diff(page.Table(t, "### Metrics and health", tunermetrics.Prefix),
		metricsdoc.Registered(metricsdoc.Fields(tunermetrics.New())...)); diff != "" {
		t.Errorf("docs/tuner.md, \"Metrics and health\" (-doc, +registered):\n%s", diff)
	}
}
