package deploy_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lhcnp/lhcnp/deploy/grafanasql"
	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/lab/labtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func readDashboard(t *testing.T) grafanasql.Dashboard {
	t.Helper()
	b, err := os.ReadFile("grafana/dashboards/lhcnp-lab.json")
	if err != nil {
		t.Fatal(err)
	}
	d, err := grafanasql.Parse(b)
	if err != nil {
		t.Fatalf("grafana/dashboards/lhcnp-lab.json: %v", err)
	}
	return d
}

// checkResults fails t for every query that failed or returned no rows,
// or whose data source is not the provisioned PostgreSQL.
func checkResults(t *testing.T, results []grafanasql.Result) {
	t.Helper()
	for _, r := range results {
		switch {
		case r.Datasource != "lhcnp-pg":
			t.Errorf("%s: data source %q, want the provisioned lhcnp-pg", r.Where, r.Datasource)
		case r.Err != nil:
			t.Errorf("%s: %v\n%s", r.Where, r.Err, r.SQL)
		case r.Rows == 0:
			t.Errorf("%s: no rows\n%s", r.Where, r.SQL)
		case r.Format == "time_series" && (len(r.Columns) == 0 || r.Columns[0] != "time"):
			t.Errorf("%s: a time series whose first column is not \"time\": %v", r.Where, r.Columns)
		}
	}
}

// TestGrafanaQueries runs every query of the lab dashboard (variables,
// annotations, every panel's) against a real PostgreSQL with the collector's
// schema and a stretch of lab telemetry written through the collector's
// tables: each must run and return rows. (cmd/lhcnp's TestLabStarts runs
// them again after a short run of the real lab.)
func TestGrafanaQueries(t *testing.T) {
	d := readDashboard(t)
	pool, _ := pgtest.New(t)
	ctx := context.Background()
	const seconds = 60
	fx, err := labtest.Fill(ctx, pool, time.Now().Add(-seconds*time.Second), seconds)
	if err != nil {
		t.Fatal(err)
	}
	choose := map[string]string{"target": labtest.Congested.Target, "interface": labtest.Congested.Interface,
		"queue": fmt.Sprint(labtest.Congested.ID)}
	results, err := grafanasql.Run(ctx, pool, d, fx.Start.Add(-time.Minute), fx.End.Add(time.Minute), choose)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Variables) != 3 || len(results) < 9 {
		t.Errorf("%d variables and %d queries, want target, interface, queue and every panel's", len(d.Variables), len(results))
	}
	checkResults(t, results)

	// The same panels as the lab page (lab/dashboard/static/index.html).
	titles := d.Titles
	page, err := os.ReadFile("../lab/dashboard/static/index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, title := range []string{"Queues", "Tuner decisions"} {
		if !slices.Contains(titles, title) || !strings.Contains(string(page), "<h2>"+title+"</h2>") {
			t.Errorf("%q: not on both the page and the Grafana dashboard", title)
		}
	}
	caption := regexp.MustCompile(`<figcaption>(.*?)</figcaption>`)
	sub := regexp.MustCompile(`<sub>(.*?)</sub>`)
	// An empty span is a place the page's script fills (the actions not
	// drawn), not a part of the title.
	filled := regexp.MustCompile(`<span[^>]*></span>`)
	var captions []string
	for _, m := range caption.FindAllStringSubmatch(string(page), -1) {
		captions = append(captions, filled.ReplaceAllString(sub.ReplaceAllString(m[1], "_$1"), ""))
	}
	for _, c := range captions {
		if !slices.Contains(titles, c) {
			t.Errorf("page chart %q has no Grafana panel (panels: %q)", c, titles)
		}
	}
	if len(captions) != 5 {
		t.Errorf("page has %d charts, want 5", len(captions))
	}
}

// TestGrafanaProvisioning: the data sources the dashboard names are
// provisioned, the dashboard provider points where the compose file mounts
// the dashboards.
func TestGrafanaProvisioning(t *testing.T) {
	var ds struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Name, UID, Type, URL string
			JSONData             map[string]any `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	readYAML(t, "grafana/provisioning/datasources/lhcnp.yaml", &ds)
	byUID := map[string]string{}
	for _, d := range ds.Datasources {
		byUID[d.UID] = d.Type
	}
	if byUID["lhcnp-pg"] != "grafana-postgresql-datasource" || byUID["lhcnp-prom"] != "prometheus" {
		t.Errorf("data sources %v, want lhcnp-pg (PostgreSQL) and lhcnp-prom (Prometheus)", byUID)
	}
	var prov struct {
		Providers []struct {
			Type    string
			Options struct{ Path string }
		}
	}
	readYAML(t, "grafana/provisioning/dashboards/lhcnp.yaml", &prov)
	if len(prov.Providers) != 1 || prov.Providers[0].Options.Path != "/etc/grafana/dashboards" {
		t.Errorf("dashboard providers %+v, want one reading /etc/grafana/dashboards", prov.Providers)
	}
	d := readDashboard(t)
	if d.UID == "" || len(d.Titles) < 7 {
		t.Errorf("dashboard uid %q with %d panels", d.UID, len(d.Titles))
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestPrometheusConfig: promtool (Debian's prometheus package) accepts
// prometheus.yml, and it scrapes the collector, the tuner and the three
// switches.
func TestPrometheusConfig(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" || os.Getenv("LHCNP_ORACLES") == "required" {
			t.Fatal("promtool not found (required: CI=true or LHCNP_ORACLES=required); scripts/deps.sh installs it (Debian package prometheus)")
		}
		t.Skip("skipping: promtool not found; scripts/deps.sh installs it (Debian package prometheus)")
	}
	out, err := exec.Command(promtool, "check", "config", "prometheus.yml").CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check config prometheus.yml: %v\n%s", err, out)
	}
	var cfg struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, "prometheus.yml", &cfg)
	var targets []string
	for _, sc := range cfg.ScrapeConfigs {
		for _, s := range sc.StaticConfigs {
			targets = append(targets, s.Targets...)
		}
	}
	sort.Strings(targets)
	if want := []string{"collector:9273", "n1:9464", "n2:9464", "t1:9464", "tuner:9274"}; !slices.Equal(targets, want) {
		t.Errorf("scrape targets %v, want %v", targets, want)
	}
}

// TestDockerfile: the image is built in stages, the final one small
// (distroless static) and run as a non-root user; every file it copies
// from the build context exists.
func TestDockerfile(t *testing.T) {
	f, err := os.Open("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var froms, users []string
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		switch strings.ToUpper(fields[0]) {
		case "FROM":
			froms = append(froms, fields[1])
			users = append(users, "")
		case "USER":
			users[len(users)-1] = fields[1]
		case "COPY":
			var src []string
			from := false
			for _, a := range fields[1 : len(fields)-1] {
				if strings.HasPrefix(a, "--from=") {
					from = true
				}
				if !strings.HasPrefix(a, "--") {
					src = append(src, a)
				}
			}
			for _, s := range src {
				if from {
					continue
				}
				if _, err := os.Stat(filepath.Join("..", s)); err != nil {
					t.Errorf("Dockerfile:%d: COPY %s: %v", line, s, err)
				}
			}
		}
	}
	if len(froms) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a build stage and a final one", len(froms))
	}
	final := froms[len(froms)-1]
	if !strings.Contains(final, "distroless/static") {
		t.Errorf("final stage FROM %s, want a distroless static image", final)
	}
	if u := users[len(users)-1]; u == "" || strings.HasPrefix(u, "root") || strings.HasPrefix(u, "0") {
		t.Errorf("final stage runs as %q, want a non-root user", u)
	}
}
