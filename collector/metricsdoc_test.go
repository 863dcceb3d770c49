package collector

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/northbound"
	"github.com/lhcnp/lhcnp/internal/metricsdoc"
)

// TestMetricsDoc: docs/collector.md's two metrics tables ("Metrics and
// health", and the northbound's under "Northbound gNMI") list every metric
// the collector registers, with its labels, and nothing else: an operator
// reads the tables to know what /metrics holds, and a metric added in the
// code only would be found there with no word of what it counts (no test
// compared them: dead_letters_refused_total got its row by hand).
func TestMetricsDoc(t *testing.T) {
	page := metricsdoc.Read(t, "../docs/collector.md")

	// The collector's own: every exported field of collectormetrics.Metrics
	// that is a prometheus.Collector but the Registry.
	if diff := cmp.Diff(page.Table(t, "### Metrics and health", collectormetrics.Prefix),
		metricsdoc.Registered(metricsdoc.Fields(collectormetrics.New())...)); diff != "" {
		t.Errorf("docs/collector.md, \"Metrics and health\" (-doc, +registered):\n%s", diff)
	}

	var nb metricsdoc.Recorder
	northbound.NewMetrics(&nb)
	if diff := cmp.Diff(page.Table(t, "**Metrics.** The northbound's own metrics", northbound.MetricsPrefix),
		metricsdoc.Registered(nb...)); diff != "" {
		t.Errorf("docs/collector.md, the northbound's metrics (-doc, +registered):\n%s", diff)
	}
}
