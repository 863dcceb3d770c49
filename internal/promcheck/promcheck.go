// Package promcheck checks a service's Prometheus metrics the way
// Prometheus' own tools and scrapers will meet them: every metric family
// under the service's prefix passes client_golang's promlint (the rules of
// `promtool check metrics`: units in names, _total on counters only, no
// _count/_sum/_bucket suffix outside histograms, help text), and /metrics
// answers OpenMetrics when a scraper asks for it. Scrape reads a /metrics
// as a test checks it: the families by name.
//
// Test support only: it depends on client_golang, Prometheus' exposition
// parser (prometheus/common) and the standard library.
package promcheck

import (
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Lint gathers g and fails t for every promlint problem of the families
// whose names start with prefix (client_golang's Go and process
// collectors are its own), and for every metric that cs describe and g
// did not gather: promlint only sees families with a sample, so a vector
// no test touched would go unchecked.
func Lint(t testing.TB, g prometheus.Gatherer, prefix string, cs ...prometheus.Collector) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var ours []*dto.MetricFamily
	var gathered []string
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), prefix) {
			ours = append(ours, mf)
			gathered = append(gathered, mf.GetName())
		}
	}
	if len(ours) == 0 {
		t.Fatalf("no metric family named %s*", prefix)
	}
	for _, name := range Described(cs...) {
		if !slices.Contains(gathered, name) {
			t.Errorf("%s: registered, but no sample gathered (promlint cannot check it)", name)
		}
	}
	problems, err := promlint.NewWithMetricFamilies(ours).Lint()
	if err != nil {
		t.Fatalf("promlint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// descName reads a Desc's name from its String (Desc has no accessors).
var descName = regexp.MustCompile(`^Desc\{fqName: "([^"]+)"`)

// Described is the sorted names of the metrics cs describe.
func Described(cs ...prometheus.Collector) []string {
	var names []string
	for _, c := range cs {
		ch := make(chan *prometheus.Desc)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			if m := descName.FindStringSubmatch(d.String()); m != nil {
				names = append(names, m[1])
			} else {
				names = append(names, d.String())
			}
		}
	}
	slices.Sort(names)
	return names
}

// ScrapeAccept is the Accept header Prometheus 2.x sends by default
// (scrape_protocols OpenMetricsText1.0.0, OpenMetricsText0.0.1,
// PrometheusText0.0.4).
const ScrapeAccept = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"

// OpenMetrics fails t unless url answers a Prometheus scrape (ScrapeAccept)
// in OpenMetrics, ended by its "# EOF" (a scrape cut short is then an error,
// not a partial one), and a request with no Accept header in the classic
// text format, which parsers without OpenMetrics (expfmt's TextParser)
// read.
func OpenMetrics(t testing.TB, url string) {
	t.Helper()
	get := func(accept string) (string, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s (Accept %q): %s", url, accept, resp.Status)
		}
		return resp.Header.Get("Content-Type"), string(b)
	}
	if ct, body := get(ScrapeAccept); !strings.HasPrefix(ct, "application/openmetrics-text") || !strings.HasSuffix(body, "# EOF\n") {
		t.Errorf("a Prometheus scrape of %s answered %q (ends %q), want application/openmetrics-text ending # EOF",
			url, ct, body[max(0, len(body)-20):])
	}
	if ct, _ := get(""); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("GET %s without Accept answered %q, want text/plain", url, ct)
	}
}

// Scrape reads url (a /metrics) as a scraper without OpenMetrics does, and
// parses it with Prometheus' own text parser: the families by name. A
// status other than 200 or a body that does not parse fails t.
func Scrape(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: parsing the exposition: %v", url, err)
	}
	return mfs
}

// Registry is a registry that keeps what is registered with it, for Lint
// to know every metric a package registers where its collectors are
// unexported.
type Registry struct {
	*prometheus.Registry
	Collectors []prometheus.Collector
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry { return &Registry{Registry: prometheus.NewRegistry()} }

// Register registers c and keeps it.
func (r *Registry) Register(c prometheus.Collector) error {
	if err := r.Registry.Register(c); err != nil {
		return err
	}
	r.Collectors = append(r.Collectors, c)
	return nil
}

// MustRegister registers cs and keeps them; it panics as
// prometheus.Registry's does.
func (r *Registry) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}
