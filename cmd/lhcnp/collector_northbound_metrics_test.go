package main

import (
	"context"
	"maps"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/lhcnp/lhcnp/internal/promcheck"
)

// scrapeCollector reads the collector's /metrics over HTTP with
// Prometheus' own parser and returns the samples of the metrics whose names
// start with prefix, keyed `name{label=value,...}` (labels sorted).
func scrapeCollector(t *testing.T, addr, prefix string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for name, mf := range scrapeFamilies(t, addr) {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			out[name+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return out
}

// scrapeFamilies reads the collector's /metrics over HTTP with
// Prometheus' own parser.
func scrapeFamilies(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	return promcheck.Scrape(t, "http://"+addr+"/metrics")
}

// TestCollectorNorthboundMetrics drives `lhcnp collector`'s northbound with
// gnmic (capabilities, get, a ONCE subscription of both switches and a
// History snapshot of one, Sets the
// switch applies and refuses, Sets naming no switch or an unknown one, a
// live stream) and scrapes the collector's /metrics: RPCs by method and
// code, subscriptions being served, updates sent and Sets by outcome count
// exactly those calls.
func TestCollectorNorthboundMetrics(t *testing.T) {
	t.Parallel()
	needGnmic(t)
	nb, maddr := startCollectorNorthboundMetrics(t)
	const pre = "lhcnp_collector_northbound_"
	before := scrapeCollector(t, maddr, pre)
	q := "/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=0]"
	a := []string{"-a", nb, "--insecure"}
	gnmicOK(t, append(a, "capabilities")...)
	gnmicOK(t, append(a, "get", "--target", "n1", "--path", q+"/state/effective-kmax")...)
	gnmicOK(t, append(a, "subscribe", "--target", "*", "--mode", "once", "--path", q+"/state/queue-depth")...)
	gnmicOK(t, append(a, "subscribe", "--target", "n1", "--mode", "once", "--path", q+"/state/queue-depth",
		"--history-snapshot", time.Now().Add(-2*time.Second).UTC().Format(time.RFC3339Nano))...)
	gnmicOK(t, append(a, "set", "--target", "n1", "--update-path", q+"/config/alpha", "--update-value", "0.5")...)
	for _, bad := range [][]string{
		{"set", "--target", "n1", "--update-path", q + "/config/alpha", "--update-value", "not-a-number"},
		{"set", "--target", "nosuch", "--update-path", q + "/config/alpha", "--update-value", "0.5"},
		{"set", "--update-path", q + "/config/alpha", "--update-value", "0.5"},
	} {
		if out, err := gnmic(t, append(a, bad...)...); err == nil {
			t.Errorf("gnmic %q succeeded:\n%s", bad, out)
		}
	}
	after := scrapeCollector(t, maddr, pre)
	delta := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			delta[k] = d
		}
	}
	want := map[string]float64{
		pre + "rpcs_total{code=OK,method=Capabilities}":     1,
		pre + "rpcs_total{code=OK,method=Get}":              1,
		pre + "rpcs_total{code=OK,method=Subscribe}":        2, // live, History
		pre + "rpcs_total{code=OK,method=Set}":              1,
		pre + "rpcs_total{code=InvalidArgument,method=Set}": 2, // refused by n1; no target
		pre + "rpcs_total{code=NotFound,method=Set}":        1,
		pre + "updates_sent_total{}":                        3, // the queue depth of n1 and of n2; n1's from History
		pre + "sets_total{outcome=applied,target=n1}":       1,
		pre + "sets_total{outcome=refused,target=n1}":       1,
		pre + "sets_total{outcome=unknown_target,target=}":  1,
		pre + "sets_total{outcome=no_target,target=}":       1,
	}
	if d := cmp.Diff(want, delta); d != "" {
		t.Errorf("northbound metrics, change over the calls (-want +got):\n%s", d)
	}
	// What Prometheus scrapes after that work: the collector's families
	// and the northbound's pass promlint, in OpenMetrics when asked.
	promcheck.Lint(t, prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		return slices.Collect(maps.Values(scrapeFamilies(t, maddr))), nil
	}), "lhcnp_collector_")
	promcheck.OpenMetrics(t, "http://"+maddr+"/metrics")

	// A live stream is counted while it is served.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, needGnmic(t), append(a, "subscribe", "--target", "*", "--stream-mode", "on-change",
		"--path", q+"/state/counters")...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitScrape := func(what string, cond func(m map[string]float64) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			m := scrapeCollector(t, maddr, pre)
			if cond(m) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s: %v", what, m)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	subs := pre + "subscriptions{}"
	upd := pre + "updates_sent_total{}"
	waitScrape("one subscription and its initial updates", func(m map[string]float64) bool {
		return m[subs] == 1 && m[upd] > after[upd]
	})
	cancel()
	cmd.Wait() //nolint:errcheck // killed
	subscribes := func(m map[string]float64) (n float64) {
		for k, v := range m {
			if strings.HasPrefix(k, pre+"rpcs_total{") && strings.HasSuffix(k, ",method=Subscribe}") {
				n += v
			}
		}
		return n
	}
	waitScrape("the subscription gone and counted", func(m map[string]float64) bool {
		return m[subs] == 0 && subscribes(m) == subscribes(after)+1
	})
}
