package collector

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/northbound"
)

// TestMetricsDoc: docs/collector.md's two metrics tables ("Metrics and
// health", and the northbound's under "Northbound gNMI") list every metric
// the collector registers, with its labels, and nothing else: an operator
// reads the tables to know what /metrics holds, and a metric added in the
// code only would be found there with no word of what it counts (no test
// compared them: dead_letters_refused_total got its row by hand).
func TestMetricsDoc(t *testing.T) {
	doc, err := os.ReadFile("../docs/collector.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(doc), "\n")

	// The collector's own: every exported field of collectormetrics.Metrics
	// that is a prometheus.Collector but the Registry (its Go and process
	// collectors are client_golang's, not in the table).
	m := reflect.ValueOf(collectormetrics.New()).Elem()
	var own []prometheus.Collector
	for i := range m.NumField() {
		if f := m.Type().Field(i); f.IsExported() && f.Name != "Registry" {
			if c, ok := m.Field(i).Interface().(prometheus.Collector); ok {
				own = append(own, c)
			}
		}
	}
	if diff := cmp.Diff(docMetrics(t, tableAfter(t, lines, "### Metrics and health"), collectormetrics.Prefix),
		registered(own...)); diff != "" {
		t.Errorf("docs/collector.md, \"Metrics and health\" (-doc, +registered):\n%s", diff)
	}

	var nb recorder
	northbound.NewMetrics(&nb)
	if diff := cmp.Diff(docMetrics(t, tableAfter(t, lines, "**Metrics.** The northbound's own metrics"), northbound.MetricsPrefix),
		registered(nb...)); diff != "" {
		t.Errorf("docs/collector.md, the northbound's metrics (-doc, +registered):\n%s", diff)
	}
}

// tableAfter is the rows of the first table after the line starting with
// marker, its header and separator left out.
func tableAfter(t *testing.T, lines []string, marker string) []string {
	t.Helper()
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, marker) })
	if i < 0 {
		t.Fatalf("docs/collector.md: no line starting %q", marker)
	}
	for i < len(lines) && !strings.HasPrefix(lines[i], "|") {
		i++
	}
	j := i
	for j < len(lines) && strings.HasPrefix(lines[j], "|") {
		j++
	}
	if j-i < 3 {
		t.Fatalf("docs/collector.md: no table after %q", marker)
	}
	return lines[i+2 : j]
}

// docMetrics maps each metric a row names (`a`, `b` in its first cell:
// prefix added) to its labels (the second cell, sorted, comma-separated).
func docMetrics(t *testing.T, rows []string, prefix string) map[string]string {
	t.Helper()
	name := regexp.MustCompile("`([a-z_]+)`")
	got := map[string]string{}
	for _, r := range rows {
		cells := strings.Split(r, "|")
		if len(cells) < 4 {
			t.Fatalf("docs/collector.md: metrics row %q has no labels' cell", r)
		}
		var labels []string
		for _, l := range strings.Split(cells[2], ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
		slices.Sort(labels)
		for _, n := range name.FindAllStringSubmatch(cells[1], -1) {
			got[prefix+n[1]] = strings.Join(labels, ",")
		}
	}
	return got
}

// descRE reads a Desc's name and variable labels from its String (Desc has
// no accessors).
var descRE = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", .*variableLabels: \{([^}]*)\}\}$`)

// registered maps the name of each metric cs describe to its labels
// (sorted, comma-separated).
func registered(cs ...prometheus.Collector) map[string]string {
	got := map[string]string{}
	for _, c := range cs {
		ch := make(chan *prometheus.Desc)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := descRE.FindStringSubmatch(d.String())
			if m == nil {
				got[d.String()] = "unreadable Desc"
				continue
			}
			labels := strings.Split(m[2], ",")
			slices.Sort(labels)
			got[m[1]] = strings.Trim(strings.Join(labels, ","), ",")
		}
	}
	return got
}

// recorder is a prometheus.Registerer that keeps what is registered.
type recorder []prometheus.Collector

func (r *recorder) Register(c prometheus.Collector) error   { *r = append(*r, c); return nil }
func (r *recorder) MustRegister(cs ...prometheus.Collector) { *r = append(*r, cs...) }
func (r *recorder) Unregister(prometheus.Collector) bool    { return false }
