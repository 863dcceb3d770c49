package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	composecli "github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/lhcnp/lhcnp/collector/config"
	"github.com/lhcnp/lhcnp/deploy/grafanasql"
)

// imageShare is where the Dockerfile puts scenarios/, examples/ and deploy/.
const imageShare = "/usr/share/lhcnp/"

// loadCompose loads the top-level docker-compose.yml, and the override
// files given (paths in the repository) over it, with compose-go, the
// library docker compose itself uses: schema validation, interpolation,
// anchors and merges, as `docker compose config` would.
func loadCompose(t *testing.T, overrides ...string) *types.Project {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files := []string{filepath.Join(root, "docker-compose.yml")}
	for _, o := range overrides {
		files = append(files, filepath.Join(root, o))
	}
	opts, err := composecli.NewProjectOptions(files,
		composecli.WithWorkingDirectory(root), composecli.WithEnv(nil), composecli.WithInterpolation(true))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return p
}

// repoPath maps a path inside the image to the repository.
func repoPath(t *testing.T, p string) string {
	t.Helper()
	rel, ok := strings.CutPrefix(p, imageShare)
	if !ok {
		t.Fatalf("%s: not under %s (the image's copy of the repository files)", p, imageShare)
	}
	return filepath.Join("../..", rel)
}

// flagValue returns the value of --name in args.
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == "--"+name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// serviceEnv is a service's environment as os.Environ gives it.
func serviceEnv(s types.ServiceConfig) func() []string {
	var env []string
	for k, v := range s.Environment {
		if v != nil {
			env = append(env, k+"="+*v)
		}
	}
	sort.Strings(env)
	return func() []string { return env }
}

// inRepo returns a service's arguments (after the subcommand) with the
// --config file mapped from the image to the repository.
func inRepo(t *testing.T, args []string) []string {
	t.Helper()
	out := slices.Clone(args[1:])
	for i, a := range out {
		if a == "--config" && i+1 < len(out) {
			out[i+1] = repoPath(t, out[i+1])
		} else if v, ok := strings.CutPrefix(a, "--config="); ok {
			out[i] = "--config=" + repoPath(t, v)
		}
	}
	return out
}

// parses runs the binary's own command-line parsing on args with -h
// appended: every flag must be known and its value well formed; -h then
// stops the command before it does anything. The exit status is 0 only
// when parsing reached -h.
func parses(t *testing.T, args []string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(append(slices.Clone(args), "-h"), &stdout, &stderr)
	if code != 0 {
		t.Errorf("lhcnp %s: the binary's flag parsing refuses it (exit %d):\n%s", strings.Join(args, " "), code, stderr.String())
	}
}

// TestComposeFile loads docker-compose.yml and checks the lab it describes:
// the services, their order (healthchecks and depends_on conditions), and
// every lhcnp command line parsed by the binary's own flag parser, with
// the files it names (fabric, collector, tuner) loaded as the commands
// load them.
func TestComposeFile(t *testing.T) {
	p := loadCompose(t)
	names := p.ServiceNames()
	sort.Strings(names)
	want := []string{"collector", "grafana", "n1", "n2", "postgres", "prometheus", "t1", "tuner"}
	if !slices.Equal(names, want) {
		t.Fatalf("services %v, want %v", names, want)
	}

	// Start order: what each service waits for, and how.
	deps := map[string]map[string]string{
		"collector":  {"postgres": "service_healthy", "t1": "service_healthy", "n1": "service_healthy", "n2": "service_healthy"},
		"tuner":      {"collector": "service_healthy"},
		"prometheus": {"collector": "service_healthy"},
		"grafana":    {"collector": "service_healthy", "prometheus": "service_healthy"},
	}
	for _, name := range names {
		s := p.Services[name]
		got := map[string]string{}
		for dep, d := range s.DependsOn {
			got[dep] = d.Condition
		}
		if w := deps[name]; len(w) > 0 || len(got) > 0 {
			if fmt.Sprint(w) != fmt.Sprint(got) {
				t.Errorf("%s: depends_on %v, want %v", name, got, w)
			}
		}
		// Everything another service waits on for health has a healthcheck.
		for _, d := range deps {
			if d[name] == "service_healthy" && (s.HealthCheck == nil || len(s.HealthCheck.Test) == 0) {
				t.Errorf("%s: others wait for it to be healthy, but it has no healthcheck", name)
			}
		}
	}
	if pg := p.Services["postgres"]; !strings.HasPrefix(pg.Image, "postgres:") || len(pg.Volumes) == 0 || pg.Volumes[0].Type != "volume" {
		t.Errorf("postgres: image %q volumes %+v, want the official image with a named volume", pg.Image, pg.Volumes)
	}

	for _, name := range names {
		s := p.Services[name]
		if s.Build == nil {
			continue // postgres, prometheus, grafana: official images
		}
		if s.Build.Context == "" || s.Build.Dockerfile != "Dockerfile" {
			t.Errorf("%s: build %+v, want the top-level Dockerfile", name, s.Build)
		}
		t.Run(name, func(t *testing.T) {
			args := []string(s.Command)
			if _, ok := commands()[args[0]]; !ok {
				t.Fatalf("command %q: lhcnp has no such subcommand", args[0])
			}
			parses(t, args)
			if hc := s.HealthCheck; hc != nil && len(hc.Test) > 1 && hc.Test[1] == "/usr/local/bin/lhcnp" {
				parses(t, hc.Test[2:])
			}
			// The command's own parser, on the service's arguments and
			// environment: the same layering the container runs.
			switch args[0] {
			case "switch":
				checkComposeSwitch(t, p, name, s, args)
			case "collector":
				checkComposeCollector(t, p, s, args)
			case "tuner":
				checkComposeTuner(t, p, s, args)
			default:
				t.Errorf("no check for subcommand %s", args[0])
			}
		})
	}
}

// checkComposeSwitch: the service's command line and environment parse as
// `lhcnp switch` parses them, the service runs the switch named like
// itself, listens where the others reach it, and the wires' ends are the
// services running them.
func checkComposeSwitch(t *testing.T, p *types.Project, name string, s types.ServiceConfig, args []string) {
	f, _, _, err := parseSwitchArgs(inRepo(t, args), serviceEnv(s), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if f.Run != name {
		t.Errorf("runs switches %q, want the service's name %q", f.Run, name)
	}
	if _, port, _ := net.SplitHostPort(f.Metrics); port != "9464" {
		t.Errorf("metrics %q: prometheus.yml scrapes port 9464", f.Metrics)
	}
	sw := slices.IndexFunc(f.Switches, func(s fileSwitch) bool { return s.Name == name })
	if sw < 0 {
		t.Fatalf("%s has no switch %s", flagValue(args, "config"), name)
	}
	// gNMI listens on every interface of the container, on the port the
	// compose file publishes.
	host, port, _ := net.SplitHostPort(firstOf(f.Listen, f.Switches[sw].Listen))
	if host != "0.0.0.0" && host != name {
		t.Errorf("%s: gNMI listens on host %q, unreachable from the other containers", name, host)
	}
	svc := p.Services[name]
	if len(svc.Ports) != 1 || fmt.Sprint(svc.Ports[0].Target) != port {
		t.Errorf("%s: publishes %+v, gNMI listens on port %s", name, svc.Ports, port)
	}
	// A wire's ends are switch services, each running the switch it names.
	for _, w := range f.Wires {
		for _, end := range []string{w.A, w.B} {
			h, _, err := net.SplitHostPort(end)
			_, isService := p.Services[h]
			isSwitch := slices.ContainsFunc(f.Switches, func(s fileSwitch) bool { return s.Name == h })
			if err != nil || !isService || !isSwitch {
				t.Errorf("wire %s: end %s is not a switch service", w.Link, end)
			}
		}
	}
	for _, path := range []string{f.Scenario, f.Switches[sw].Config} {
		if path == "" {
			continue
		}
		if _, err := os.Stat(path); err != nil {
			t.Error(err)
		}
	}
}

// checkComposeCollector: the service's command line and LHCNP_COLLECTOR_
// variables, parsed by parseCollector as `lhcnp collector` parses them,
// give a valid configuration whose targets are the switch services, each
// subscribed to its engine-speed leaf.
func checkComposeCollector(t *testing.T, p *types.Project, s types.ServiceConfig, args []string) {
	a, err := parseCollector(inRepo(t, args), serviceEnv(s), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg := a.cfg
	if err := cfg.Check(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cfg.DB.DSN, "@postgres:5432/") {
		t.Errorf("db.dsn %q does not reach the postgres service", cfg.DB.DSN)
	}
	if _, port, _ := net.SplitHostPort(cfg.Metrics.Listen); port != "9273" {
		t.Errorf("metrics.listen %q: prometheus.yml and the healthcheck use port 9273", cfg.Metrics.Listen)
	}
	for _, tg := range cfg.Targets {
		host, _, _ := net.SplitHostPort(tg.Address)
		if _, ok := p.Services[host]; !ok {
			t.Errorf("target %s: address %s is not a service", tg.Name, tg.Address)
		}
	}
	if len(cfg.Targets) != 3 {
		t.Errorf("%d targets, want the three switches", len(cfg.Targets))
	}
	// Each switch's speed is collected: the views divide by it.
	const speedLeaf = "/lhcnp/global/state/engine-speed"
	for _, tg := range cfg.Targets {
		subs := tg.Subscriptions
		if len(subs) == 0 {
			subs = config.DefaultSubscriptions()
		}
		if !slices.ContainsFunc(subs, func(s config.Subscription) bool {
			return slices.ContainsFunc(s.Paths, func(p string) bool { return strings.HasPrefix(speedLeaf+"/", strings.TrimSuffix(p, "/")+"/") })
		}) {
			t.Errorf("target %s: subscriptions %+v leave out %s", tg.Name, subs, speedLeaf)
		}
	}
}

// checkComposeTuner: the service's command line and LHCNP_TUNER_DB, parsed
// by parseTuner as `lhcnp tuner` parses them, give a valid configuration
// whose switches are switch services, serving its metrics where
// prometheus.yml scrapes them and the healthcheck asks.
func checkComposeTuner(t *testing.T, p *types.Project, s types.ServiceConfig, args []string) {
	a, err := parseTuner(inRepo(t, args), serviceEnv(s), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg := a.cfg
	if !strings.Contains(cfg.DB, "@postgres:5432/") {
		t.Errorf("db %q does not reach the postgres service", cfg.DB)
	}
	host, port, _ := net.SplitHostPort(cfg.Metrics.Listen)
	if host != "0.0.0.0" || port != "9274" {
		t.Errorf("metrics.listen %q: prometheus.yml scrapes tuner:9274 from another container", cfg.Metrics.Listen)
	}
	if len(s.Ports) != 1 || fmt.Sprint(s.Ports[0].Target) != port {
		t.Errorf("publishes %+v, metrics.listen is on port %s", s.Ports, port)
	}
	if hc := s.HealthCheck; hc == nil || !slices.Contains(hc.Test, "http://127.0.0.1:"+port+"/healthz") {
		t.Errorf("healthcheck %+v does not ask the tuner's /healthz on port %s", hc, port)
	}
	fab, _, err := loadSwitchFile("../../examples/lab-containers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, sw := range cfg.Switches {
		host, _, _ := net.SplitHostPort(sw.Address)
		if _, ok := p.Services[host]; !ok || host != sw.Name {
			t.Errorf("switch %s: address %s is not its service", sw.Name, sw.Address)
		}
		// The interfaces it tunes are those the switch runs Long-haul CNP
		// on, as `lhcnp lab` chooses them.
		i := slices.IndexFunc(fab.Switches, func(s fileSwitch) bool { return s.Name == sw.Name })
		if i < 0 || fab.Switches[i].Config == "" {
			t.Errorf("switch %s: no configuration in examples/lab-containers.yaml", sw.Name)
			continue
		}
		js, err := os.ReadFile(fab.Switches[i].Config)
		if err != nil {
			t.Fatal(err)
		}
		want, err := configuredInterfaces(js)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(sw.Interfaces, want) {
			t.Errorf("switch %s: tunes interfaces %v, its configuration sets %v", sw.Name, sw.Interfaces, want)
		}
	}
}

// TestComposeSpeedFromSwitches: the compose switches publish the speed
// they run at (examples/lab-containers.yaml's) in their engine-speed leaf,
// which the collector stores and the views read: no service writes a speed
// into the database, and Grafana reads the views' rates per simulated
// second, so no panel divides by a speed of its own.
func TestComposeSpeedFromSwitches(t *testing.T) {
	p := loadCompose(t)
	for _, name := range p.ServiceNames() {
		s := p.Services[name]
		if args := []string(s.Command); len(args) > 0 && args[0] == "psql" {
			t.Errorf("%s: runs psql %q: the switches publish their speed, nothing writes it to the database", name, args)
		}
		for _, v := range s.Volumes {
			if strings.HasSuffix(v.Source, ".sql") {
				t.Errorf("%s: mounts %s", name, v.Source)
			}
		}
	}
	f, _, err := loadSwitchFile("../../examples/lab-containers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !(f.Speed > 0 && f.Speed < 1) {
		t.Errorf("examples/lab-containers.yaml: speed %v, want a simulated speed below real time", f.Speed)
	}
	d := grafanaDashboard(t)
	for _, v := range d.Variables {
		if v.Name == "speed" {
			t.Errorf("the Grafana dashboard has a speed variable: the views give rates per simulated second")
		}
	}
}

// grafanaDashboard reads the compose lab's Grafana dashboard.
func grafanaDashboard(t *testing.T) grafanasql.Dashboard {
	t.Helper()
	b, err := os.ReadFile("../../deploy/grafana/dashboards/lhcnp-lab.json")
	if err != nil {
		t.Fatal(err)
	}
	d, err := grafanasql.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
