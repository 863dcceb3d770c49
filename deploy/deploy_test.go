package deploy_test

import (
	"bufio"
	"context"
	"encoding/json"
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

	"gopkg.in/yaml.v3"

	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/lab/labtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// grafanaTarget is a query of a panel, a variable or an annotation.
type grafanaTarget struct {
	RefID      string `json:"refId"`
	RawSQL     string `json:"rawSql"`
	Format     string `json:"format"`
	Datasource struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
}

type grafanaDashboard struct {
	UID    string `json:"uid"`
	Panels []struct {
		Title   string          `json:"title"`
		Type    string          `json:"type"`
		Targets []grafanaTarget `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Query string `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Annotations struct {
		List []struct {
			Name   string         `json:"name"`
			Target *grafanaTarget `json:"target"`
		} `json:"list"`
	} `json:"annotations"`
}

func readDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	b, err := os.ReadFile("grafana/dashboards/lhcnp-lab.json")
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana/dashboards/lhcnp-lab.json: %v", err)
	}
	return d
}

var (
	timeFilter = regexp.MustCompile(`\$__timeFilter\(([^)]+)\)`)
	anyMacro   = regexp.MustCompile(`\$__\w+`)
	variable   = regexp.MustCompile(`\$\{?(\w+)\}?`)
)

// expand does what Grafana's PostgreSQL data source does to a query before
// sending it: the time macros become the dashboard's range, and a
// single-valued variable its raw value.
func expand(t *testing.T, sql string, from, to time.Time, vars map[string]string) string {
	t.Helper()
	lit := func(ts time.Time) string { return "'" + ts.UTC().Format(time.RFC3339Nano) + "'" }
	sql = timeFilter.ReplaceAllString(sql, "$1 BETWEEN "+lit(from)+" AND "+lit(to))
	sql = strings.ReplaceAll(sql, "$__timeFrom()", lit(from))
	sql = strings.ReplaceAll(sql, "$__timeTo()", lit(to))
	if m := anyMacro.FindString(sql); m != "" {
		t.Fatalf("query uses macro %s, which this test does not expand:\n%s", m, sql)
	}
	return variable.ReplaceAllStringFunc(sql, func(m string) string {
		name := variable.FindStringSubmatch(m)[1]
		v, ok := vars[name]
		if !ok {
			t.Fatalf("query uses variable $%s, which the dashboard does not define:\n%s", name, sql)
		}
		return v
	})
}

// TestGrafanaQueries runs every query of the lab dashboard (variables,
// annotations, every panel's) against a real PostgreSQL with the collector's
// schema and a stretch of lab telemetry written through the collector's
// tables: each must run and return rows.
func TestGrafanaQueries(t *testing.T) {
	d := readDashboard(t)
	pool, _ := pgtest.New(t)
	ctx := context.Background()
	const seconds = 60
	fx, err := labtest.Fill(ctx, pool, time.Now().Add(-seconds*time.Second), seconds)
	if err != nil {
		t.Fatal(err)
	}
	from, to := fx.Start.Add(-time.Minute), fx.End.Add(time.Minute)

	// Variables in order, each may use the ones before it; the fixture's
	// congested queue must be among the choices.
	want := map[string]string{"target": labtest.Congested.Target, "interface": labtest.Congested.Interface,
		"queue": fmt.Sprint(labtest.Congested.ID)}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		rows, err := pool.Query(ctx, expand(t, v.Query, from, to, vars))
		if err != nil {
			t.Fatalf("variable %s: %v", v.Name, err)
		}
		var choices []string
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			choices = append(choices, fmt.Sprint(vals[0]))
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("variable %s: %v", v.Name, err)
		}
		if !slices.Contains(choices, want[v.Name]) {
			t.Fatalf("variable %s: choices %v lack %q", v.Name, choices, want[v.Name])
		}
		vars[v.Name] = want[v.Name]
	}
	if len(vars) != 3 {
		t.Fatalf("variables %v, want target, interface and queue", vars)
	}

	run := func(where string, q grafanaTarget) {
		t.Run(where, func(t *testing.T) {
			if q.Datasource.UID != "lhcnp-pg" {
				t.Errorf("data source %q, want the provisioned lhcnp-pg", q.Datasource.UID)
			}
			rows, err := pool.Query(ctx, expand(t, q.RawSQL, from, to, vars))
			if err != nil {
				t.Fatalf("query: %v\n%s", err, q.RawSQL)
			}
			n := 0
			fields := rows.FieldDescriptions()
			for rows.Next() {
				n++
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("query: %v\n%s", err, q.RawSQL)
			}
			if n == 0 {
				t.Errorf("no rows:\n%s", q.RawSQL)
			}
			if q.Format == "time_series" && (len(fields) == 0 || string(fields[0].Name) != "time") {
				t.Errorf("time series query's first column is not \"time\"")
			}
		})
	}
	for _, a := range d.Annotations.List {
		if a.Target != nil {
			run("annotation "+a.Name, *a.Target)
		}
	}
	var titles []string
	for _, p := range d.Panels {
		titles = append(titles, p.Title)
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			run(p.Title+" "+q.RefID, q)
		}
	}
	// The same panels as the lab page (lab/dashboard/static/index.html).
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
	tags := regexp.MustCompile(`</?sub>`)
	var captions []string
	for _, m := range caption.FindAllStringSubmatch(string(page), -1) {
		captions = append(captions, tags.ReplaceAllString(m[1], "_"))
	}
	for _, c := range captions {
		c = strings.ReplaceAll(strings.ReplaceAll(c, "K_min_", "K_min"), "K_max_", "K_max")
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
	if len(prov.Providers) != 1 || prov.Providers[0].Options.Path != "/var/lib/grafana/dashboards" {
		t.Errorf("dashboard providers %+v, want one reading /var/lib/grafana/dashboards", prov.Providers)
	}
	d := readDashboard(t)
	if d.UID == "" || len(d.Panels) < 7 {
		t.Errorf("dashboard uid %q with %d panels", d.UID, len(d.Panels))
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
// prometheus.yml, and it scrapes the collector and the three switches.
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
	if want := []string{"collector:9273", "n1:9464", "n2:9464", "t1:9464"}; !slices.Equal(targets, want) {
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
