// Package metricsdoc reads a docs page's table of metrics and the metrics
// a service registers, for the tests that compare them (the collector's
// and the tuner's TestMetricsDoc): an operator reads the table to know
// what /metrics holds, and a metric added in the code only would be found
// there with no word of what it counts.
//
// It is a test helper: it depends on client_golang and testing only.
package metricsdoc

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Page is a docs page read for its tables.
type Page struct {
	name  string
	lines []string
}

// Read reads the page at path (its name in the failures).
func Read(t testing.TB, path string) Page {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return Page{name: path, lines: strings.Split(string(doc), "\n")}
}

// Table maps each metric the first table after the line starting with
// marker names (`a`, `b` in a row's first cell: prefix added) to its
// labels (the second cell, sorted, comma-separated).
func (p Page) Table(t testing.TB, marker, prefix string) map[string]string {
	t.Helper()
	lines := p.lines
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, marker) })
	if i < 0 {
		t.Fatalf("%s: no line starting %q", p.name, marker)
	}
	for i < len(lines) && !strings.HasPrefix(lines[i], "|") {
		i++
	}
	j := i
	for j < len(lines) && strings.HasPrefix(lines[j], "|") {
		j++
	}
	if j-i < 3 {
		t.Fatalf("%s: no table after %q", p.name, marker)
	}
	name := regexp.MustCompile("`([a-z_]+)`")
	got := map[string]string{}
	for _, r := range lines[i+2 : j] { // the header and separator left out
		cells := strings.Split(r, "|")
		if len(cells) < 4 {
			t.Fatalf("%s: metrics row %q has no labels' cell", p.name, r)
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

// Fields are the exported fields of the struct m points to that are
// prometheus.Collectors, but a Registry (its Go and process collectors
// are client_golang's, in no table).
func Fields(m any) []prometheus.Collector {
	v := reflect.ValueOf(m).Elem()
	var out []prometheus.Collector
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.IsExported() && f.Name != "Registry" {
			if c, ok := v.Field(i).Interface().(prometheus.Collector); ok {
				out = append(out, c)
			}
		}
	}
	return out
}

// descRE reads a Desc's name and variable labels from its String (Desc has
// no accessors).
var descRE = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", .*variableLabels: \{([^}]*)\}\}$`)

// Registered maps the name of each metric cs describe to its labels
// (sorted, comma-separated).
func Registered(cs ...prometheus.Collector) map[string]string {
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

// Recorder is a prometheus.Registerer that keeps what is registered.
type Recorder []prometheus.Collector

func (r *Recorder) Register(c prometheus.Collector) error   { *r = append(*r, c); return nil }
func (r *Recorder) MustRegister(cs ...prometheus.Collector) { *r = append(*r, cs...) }
func (r *Recorder) Unregister(prometheus.Collector) bool    { return false }
