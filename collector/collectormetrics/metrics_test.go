package collectormetrics

import (
	"context"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lhcnp/lhcnp/internal/promcheck"
)

// TestProfileOnlyWhenAsked: /debug/pprof/ answers beside /metrics only
// with profile on; off (the default), it is not found.
func TestProfileOnlyWhenAsked(t *testing.T) {
	for _, profile := range []bool{false, true} {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- New().Serve(ctx, lis, profile, func() Health { return Health{OK: true} }) }()
		get := func(path string) int {
			resp, err := http.Get("http://" + lis.Addr().String() + path)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode
		}
		if got := get("/metrics"); got != http.StatusOK {
			t.Errorf("profile %v: /metrics answered %d", profile, got)
		}
		want := http.StatusNotFound
		if profile {
			want = http.StatusOK
		}
		if got := get("/debug/pprof/heap"); got != want {
			t.Errorf("profile %v: /debug/pprof/heap answered %d, want %d", profile, got, want)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestLintMetrics: every metric the collector registers, each with a
// sample (the runtime's labels: a target's state, a table, an outcome...),
// passes promlint, the naming rules `promtool check metrics` applies.
func TestLintMetrics(t *testing.T) {
	m := New()
	m.SetState("n1", "streaming")
	m.Notifications.WithLabelValues("n1").Inc()
	m.Resubscribes.WithLabelValues("n1").Inc()
	m.RowsWritten.WithLabelValues("samples").Add(3)
	m.Batches.WithLabelValues("stored").Inc()
	m.WriteErrors.WithLabelValues("temporary").Inc()
	m.RoundTrip.Observe(0.002)
	m.Lag.Observe(0.05)
	m.Handovers.WithLabelValues("taken", HandoverMakeBeforeBreak).Inc()
	m.LeaseRenewals.WithLabelValues("renewed").Inc()
	m.LatestReadErrors.WithLabelValues("seed").Inc()
	var own []prometheus.Collector
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.IsExported() && f.Name != "Registry" {
			if c, ok := v.Field(i).Interface().(prometheus.Collector); ok {
				own = append(own, c)
			}
		}
	}
	promcheck.Lint(t, m.Registry, Prefix, own...)
}

// TestOpenMetrics: /metrics answers a Prometheus scrape in OpenMetrics (the
// format Prometheus asks for first), and a plain GET in the text format.
func TestOpenMetrics(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New().Serve(ctx, lis, false, func() Health { return Health{OK: true} }) }()
	promcheck.OpenMetrics(t, "http://"+lis.Addr().String()+"/metrics")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestErrorCountersStartAtZero: a fresh registry serves write_errors_total
// for each class and latest_read_errors_total for each phase at 0, as
// dropped_rows_total for each reason. A series that first appears at 1 is
// no increase() or rate(): an alert on the first write error never fired,
// and a lab's /metrics named neither counter its docs list.
func TestErrorCountersStartAtZero(t *testing.T) {
	servedAtZero(t, New(),
		Prefix+"write_errors_total{class="+WriteErrorTemporary+"}",
		Prefix+"write_errors_total{class="+WriteErrorPermanent+"}",
		Prefix+"latest_read_errors_total{phase="+LatestReadSeed+"}",
		Prefix+"latest_read_errors_total{phase="+LatestReadPromote+"}",
	)
}

// TestWriteCountersStartAtZero: rows_written_total for each table and
// batches_total for each outcome are served at 0 from the start. Before,
// they appeared with the first batch (of each outcome), at 1: increase()
// did not count the collector's first batch, nor its first stale one.
func TestWriteCountersStartAtZero(t *testing.T) {
	servedAtZero(t, New(),
		Prefix+"rows_written_total{table="+TableSamples+"}",
		Prefix+"rows_written_total{table="+TableEvents+"}",
		Prefix+"batches_total{outcome="+BatchStored+"}",
		Prefix+"batches_total{outcome="+BatchReplayed+"}",
		Prefix+"batches_total{outcome="+BatchPartial+"}",
		Prefix+"batches_total{outcome="+BatchStale+"}",
	)
}

// TestLeaseCountersStartAtZero: LeasesOn (a collector whose leases are on
// calls it at start) serves handovers_total for each direction and kind a
// collector counts and lease_renewals_total for each result at 0; a fresh
// registry has neither (no leases, nothing to count). Before, the first
// handover appeared at 1: no increase(), an alert on it never fired.
func TestLeaseCountersStartAtZero(t *testing.T) {
	want := []string{
		Prefix + "handovers_total{direction=" + HandoverGiven + ",kind=" + HandoverMakeBeforeBreak + "}",
		Prefix + "handovers_total{direction=" + HandoverGiven + ",kind=" + HandoverBreakBeforeMake + "}",
		Prefix + "handovers_total{direction=" + HandoverTaken + ",kind=" + HandoverMakeBeforeBreak + "}",
		Prefix + "handovers_total{direction=" + HandoverTaken + ",kind=" + HandoverBreakBeforeMake + "}",
		Prefix + "handovers_total{direction=" + HandoverTaken + ",kind=" + HandoverTakeover + "}",
		Prefix + "lease_renewals_total{result=" + LeaseRenewed + "}",
		Prefix + "lease_renewals_total{result=" + LeaseReacquired + "}",
		Prefix + "lease_renewals_total{result=" + LeaseLost + "}",
		Prefix + "lease_renewals_total{result=" + LeaseRenewError + "}",
	}
	m := New()
	for _, s := range want {
		if _, ok := counters(t, m)[s]; ok {
			t.Errorf("%s: served without leases", s)
		}
	}
	m.LeasesOn()
	servedAtZero(t, m, want...)
}

// servedAtZero checks that m serves each counter series (as counters
// names it) at 0.
func servedAtZero(t *testing.T, m *Metrics, series ...string) {
	t.Helper()
	got := counters(t, m)
	for _, s := range series {
		if v, ok := got[s]; !ok || v != 0 {
			t.Errorf("%s: served %v, value %v; want served at 0", s, ok, v)
		}
	}
}

// counters returns the value of every counter series m gathers, by
// name{label=value,...} (labels in their sorted order).
func counters(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			var ls []string
			for _, l := range s.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			got[mf.GetName()+"{"+strings.Join(ls, ",")+"}"] = s.GetCounter().GetValue()
		}
	}
	return got
}
