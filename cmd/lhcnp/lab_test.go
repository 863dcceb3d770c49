package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/deploy/grafanasql"
	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/internal/pidlock"
	"github.com/lhcnp/lhcnp/lab"
	"github.com/lhcnp/lhcnp/lab/dashboard"
	"github.com/lhcnp/lhcnp/tuner"
	"github.com/lhcnp/lhcnp/tuner/policy"
)

// startedLab is a `lhcnp lab` running in this test process.
type startedLab struct {
	cancel    func()
	done      chan error
	out       *io.PipeReader
	dashboard string   // http://127.0.0.1:PORT/
	dsn       string   // the collector's database
	metrics   string   // the collector's /metrics
	nb        string   // the collector's northbound gNMI host:port
	banner    string   // every line up to the end of the banner
	gnmic     []string // the commands printed to try
	switches  map[string]string
	once      sync.Once
	err       error
}

// startLab runs runLab in-process on a state directory and free ports, and
// reads what it prints up to the line that ends its banner.
func startLab(t *testing.T, stateDir string, extra ...string) *startedLab {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	l := &startedLab{cancel: cancel, done: make(chan error, 1), out: pr, switches: map[string]string{}}
	args := append([]string{"--state-dir", stateDir, "--http", "127.0.0.1:0", "--listen", "127.0.0.1:0",
		"--postgres-port", "0", "--metrics", "127.0.0.1:0", "--northbound", "127.0.0.1:0", "--fabric", "../../examples/lab.yaml"}, extra...)
	go func() {
		err := runLab(ctx, args, pw, pw)
		if err != nil {
			fmt.Fprintf(pw, "lhcnp lab: %v\n", err)
		}
		pw.CloseWithError(io.EOF)
		l.done <- err
	}()
	t.Cleanup(func() { _ = l.stop() })
	sc := bufio.NewScanner(pr)
	sw := regexp.MustCompile(`^\s+switch (\S+)\s+gNMI (\S+)`)
	deadline := time.AfterFunc(180*time.Second, func() { pr.CloseWithError(fmt.Errorf("no banner within 180s")) })
	defer deadline.Stop()
	for sc.Scan() {
		line := sc.Text()
		t.Log(line)
		l.banner += line + "\n"
		switch f := strings.Fields(line); {
		case len(f) >= 2 && f[0] == "dashboard":
			l.dashboard = f[1]
		case len(f) >= 2 && f[0] == "postgresql":
			l.dsn = f[1]
		case len(f) >= 2 && f[0] == "collector":
			l.metrics = f[1]
		case len(f) >= 3 && f[0] == "northbound":
			l.nb = f[2]
		case len(f) > 0 && f[0] == "gnmic":
			l.gnmic = append(l.gnmic, strings.TrimSpace(line))
		case sw.MatchString(line):
			m := sw.FindStringSubmatch(line)
			l.switches[m[1]] = m[2]
		}
		if strings.HasPrefix(line, "-----") {
			go func() { _, _ = io.Copy(io.Discard, pr) }()
			return l
		}
	}
	t.Fatalf("lhcnp lab ended before its banner: %v", sc.Err())
	return nil
}

// labStateDir is a state directory for a lab: as root the cluster runs as
// the postgres user, who must reach it (t.TempDir's are 0700).
func labStateDir(t *testing.T) string {
	t.Helper()
	state := t.TempDir()
	for _, d := range []string{filepath.Dir(state), state} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return state
}

// stop ends the lab as Ctrl-C does, waits for it and returns its error.
func (l *startedLab) stop() error {
	l.once.Do(func() {
		l.cancel()
		l.err = <-l.done
	})
	return l.err
}

func getLabJSON(t *testing.T, url string, v any) error {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s", resp.Status, b)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// runPrinted runs a command line exactly as the lab printed it, through
// bash, with gnmic on the PATH.
func runPrinted(t *testing.T, line string, timeout time.Duration) (string, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(needGnmic(t), filepath.Join(dir, "gnmic")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// kmaxOf reads effective-kmax from the output of the printed get command.
func kmaxOf(t *testing.T, out string) int64 {
	t.Helper()
	m := regexp.MustCompile(`effective-kmax"?\s*:\s*"?(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no effective-kmax in:\n%s", out)
	}
	v, _ := strconv.ParseInt(m[1], 10, 64)
	return v
}

// TestLabStarts runs `lhcnp lab` in this process with its real parts (a
// private PostgreSQL, the lab topology's switches, the collector, the
// tuner, the dashboard) for a short while: the dashboard's API has data of
// both congestion points, every gnmic command the lab prints works as
// printed (the alpha it sets moves K_max), every Grafana query of the
// compose lab returns rows from the lab's database, Ctrl-C stops it, and a
// second start reuses the state directory.
func TestLabStarts(t *testing.T) {
	pgtest.Require(t)
	if testing.Short() {
		t.Skip("skipping the lab run in -short mode")
	}
	// Most of its time is the lab's wall-clock pace (the tuner's windows
	// below): it runs beside the package's other labs and tuner.
	t.Parallel()
	state := labStateDir(t)
	// The tuner decides without pushing: the alpha set below must be the
	// only change of K_max.
	l := startLab(t, state, "--dry-run")
	started := time.Now()
	if l.dashboard == "" || l.dsn == "" || l.nb == "" || len(l.switches) != 3 || len(l.gnmic) != 6 {
		t.Fatalf("banner: dashboard %q, postgresql %q, northbound %q, switches %v, %d gnmic commands", l.dashboard, l.dsn, l.nb, l.switches, len(l.gnmic))
	}

	// The dashboard has data of both congestion points.
	deadline := time.Now().Add(90 * time.Second)
	busy := map[string]bool{}
	for len(busy) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("dashboard: queues with notifications %v after 90s, want n1 wan and n2 to-dest", busy)
		}
		var qs dashboard.QueuesResponse
		if err := getLabJSON(t, l.dashboard+"api/queues", &qs); err != nil {
			t.Fatal(err)
		}
		for _, q := range qs.Queues {
			if q.Notifications != nil && *q.Notifications > 0 {
				busy[q.Target+" "+q.Interface] = true
			}
		}
		time.Sleep(500 * time.Millisecond) // polling the lab's own pace, with the deadline above
	}
	for _, want := range []string{"n1 wan", "n2 to-dest"} {
		if !busy[want] {
			t.Errorf("no notifications on %s (busy: %v)", want, busy)
		}
	}
	// Notifications can show before the third congestion sample is stored.
	var q dashboard.QueueResponse
	for {
		if err := getLabJSON(t, l.dashboard+"api/queue?target=n1&interface=wan&queue=0", &q); err != nil {
			t.Fatal(err)
		}
		if len(q.Congestion.T) >= 3 && len(q.Notifications.T) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n1 wan q0: %d congestion samples, %d seconds of notifications after 90s", len(q.Congestion.T), len(q.Notifications.T))
		}
		time.Sleep(500 * time.Millisecond) // polling the lab's own pace, with the deadline above
	}

	// The five gnmic commands, exactly as printed.
	if out, err := runPrinted(t, l.gnmic[0], 30*time.Second); err != nil || !strings.Contains(out, "lhcnp") {
		t.Errorf("%s: %v\n%s", l.gnmic[0], err, out)
	}
	out, err := runPrinted(t, l.gnmic[1], 30*time.Second)
	if err != nil {
		t.Fatalf("%s: %v\n%s", l.gnmic[1], err, out)
	}
	before := kmaxOf(t, out)
	// A stream subscription runs until stopped: it must deliver a value.
	out, _ = runPrinted(t, l.gnmic[2], 8*time.Second)
	if !strings.Contains(out, "queue-depth") {
		t.Errorf("%s: no queue-depth update in 8s:\n%s", l.gnmic[2], out)
	}
	// The Set, again a moment later while the switch refuses it for a
	// commit of the tuner's waiting for its judgement (the tuner's start,
	// alpha 1 to 0.5, may be pending): as README's tour says to.
	for deadline := time.Now().Add(60 * time.Second); ; {
		out, err := runPrinted(t, l.gnmic[3], 30*time.Second)
		if err == nil {
			break
		}
		if !strings.Contains(out, "waiting for confirmation") || time.Now().After(deadline) {
			t.Fatalf("%s: %v\n%s", l.gnmic[3], err, out)
		}
		time.Sleep(time.Second) // the tuner ends its commit within judge_window + 2 periods
	}
	var after int64
	for deadline := time.Now().Add(30 * time.Second); ; {
		out, err := runPrinted(t, l.gnmic[1], 30*time.Second)
		if err != nil {
			t.Fatalf("%s: %v\n%s", l.gnmic[1], err, out)
		}
		if after = kmaxOf(t, out); after != before || time.Now().After(deadline) {
			break
		}
	}
	// Alpha 0.25 from the tuner's starting point (0.5: half) or, when the
	// tuner had not yet decided on the queue, from the draft's 1 (a quarter;
	// the tuner's start then keeps the operator's alpha).
	if near := func(a, b int64) bool { return a-b <= 4 && b-a <= 4 }; !near(after*2, before) && !near(after*4, before) {
		t.Errorf("effective-kmax %d before alpha 0.25 and %d after, want it halved (from the tuner's 0.5) or quartered (from the draft's 1)", before, after)
	}
	if out, err := runPrinted(t, l.gnmic[4], 30*time.Second); err != nil || !strings.Contains(out, "engine-lag") {
		t.Errorf("%s: %v\n%s", l.gnmic[4], err, out)
	}
	// History through the collector's northbound: the last minute of n1's
	// queue depth from the database, then the end of the range (the stream
	// then stays open, idle, until stopped: docs/collector.md).
	if out, _ := runPrinted(t, l.gnmic[5], 15*time.Second); !strings.Contains(out, `"queue-depth"`) || !strings.Contains(compact(out), `"sync-response":true`) {
		t.Errorf("%s: want queue-depth updates and a sync-response within 15s:\n%s", l.gnmic[5], out)
	}

	pool, err := pgxpool.New(context.Background(), l.dsn)
	if err != nil {
		t.Fatal(err)
	}
	// The operator wins: the tuner records the alpha set above as an
	// operator's change of n1 wan queue 0, held for operator_hold; and the
	// start's first, short windows wrote holds, not errors.
	for deadline := time.Now().Add(30 * time.Second); ; {
		var alpha *float64
		var heldSeconds float64
		err := pool.QueryRow(context.Background(), `SELECT (after ->> 'alpha')::float8, extract(epoch FROM hold_until - ts)::float8 FROM tuner_actions
			WHERE target = 'n1' AND interface = 'wan' AND queue = 0 AND outcome = 'operator' ORDER BY id DESC LIMIT 1`).Scan(&alpha, &heldSeconds)
		heldFor := time.Duration(heldSeconds * float64(time.Second))
		if err == nil && alpha != nil && *alpha == 0.25 && heldFor == tuner.DefaultConfig().OperatorHold {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("no operator row for alpha 0.25 on n1 wan queue 0 held for %v within 30s (alpha %v, held for %v, %v)",
				tuner.DefaultConfig().OperatorHold, alpha != nil && *alpha == 0.25, heldFor, err)
			break
		}
		time.Sleep(500 * time.Millisecond) // polling the tuner's period, with the deadline above
	}
	// No error rows for normal life, looked at until twice the time after
	// which a window without telemetry becomes an error (a window and a
	// period): the tour saw idle queues' errors 15 s after a start.
	cfg := tuner.DefaultConfig()
	for errorsFrom := started.Add(2 * (cfg.Window + cfg.Period)); ; {
		var errorRows int
		var firstError *string
		if err := pool.QueryRow(context.Background(), `SELECT count(*), min(target || ' ' || interface || ' ' || queue || ': ' || coalesce(error, '')) FROM tuner_actions WHERE outcome = 'error'`).Scan(&errorRows, &firstError); err != nil {
			t.Fatal(err)
		}
		if errorRows != 0 {
			t.Errorf("%d error rows in tuner_actions after a normal start, want none (%s)", errorRows, *firstError)
			break
		}
		if time.Now().After(errorsFrom) {
			break
		}
		time.Sleep(500 * time.Millisecond) // polling the tuner's period until errorsFrom
	}

	// The compose lab's Grafana panels, on this lab's database.
	d := grafanaDashboard(t)
	results, err := grafanasql.Run(context.Background(), pool, d, time.Now().Add(-10*time.Minute), time.Now().Add(time.Minute),
		map[string]string{"target": "n1", "interface": "wan", "queue": "0"})
	if err != nil {
		pool.Close()
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Err != nil || r.Rows == 0 {
			t.Errorf("grafana %s: %d rows, %v", r.Where, r.Rows, r.Err)
		}
	}
	var samples int64
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM samples`).Scan(&samples); err != nil {
		t.Fatal(err)
	}
	// The switches published their speed (engine-speed), the collector
	// stored it, and the views' rates per simulated second divide by it.
	var wantSpeeds []string
	for _, n := range []string{"n1", "n2", "t1"} {
		wantSpeeds = append(wantSpeeds, n+" "+strconv.FormatFloat(lab.DefaultSpeed, 'f', -1, 64))
	}
	if got := labSpeeds(t, pool); !slices.Equal(got, wantSpeeds) {
		t.Errorf("speeds %v, want %v (the lab's default speed)", got, wantSpeeds)
	}
	pool.Close()

	// Ctrl-C, then a second start on the same state directory finds the
	// first one's data.
	if err := l.stop(); err != nil {
		t.Errorf("lab stopped with %v", err)
	}
	var status bytes.Buffer
	if err := runLab(context.Background(), []string{"status", "--state-dir", state}, &status, io.Discard); err != nil {
		t.Fatalf("lab status: %v", err)
	}
	for _, want := range []string{"stopped", l.dashboard, l.dsn, l.metrics, "northbound  gNMI " + l.nb, l.switches["n1"]} {
		if !strings.Contains(status.String(), want) {
			t.Errorf("lab status lacks %q:\n%s", want, status.String())
		}
	}
	// The second start listens where the first did (ports 0: chosen once,
	// kept in the state directory).
	l2 := startLab(t, state, "--tuner=false")
	type addrs struct {
		Dashboard, DSN, Metrics, Northbound string
		Switches                            map[string]string
	}
	first := addrs{l.dashboard, l.dsn, l.metrics, l.nb, l.switches}
	if diff := cmp.Diff(first, addrs{l2.dashboard, l2.dsn, l2.metrics, l2.nb, l2.switches}); diff != "" {
		t.Errorf("second start's addresses differ (-first +second):\n%s", diff)
	}
	pool2, err := pgxpool.New(context.Background(), l2.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool2.Close()
	var again int64
	if err := pool2.QueryRow(context.Background(), `SELECT count(*) FROM samples`).Scan(&again); err != nil {
		t.Fatal(err)
	}
	if again < samples {
		t.Errorf("second start: %d samples, the first run stored %d", again, samples)
	}
	if got := labSpeeds(t, pool2); !slices.Equal(got, wantSpeeds) {
		t.Errorf("second start: speeds %v, want %v", got, wantSpeeds)
	}
	// n1 kept the alpha 0.25 it was committed with (its startup
	// configuration in the state directory): K_max is as it was.
	if out, err := runPrinted(t, l2.gnmic[1], 30*time.Second); err != nil {
		t.Errorf("second start: %s: %v\n%s", l2.gnmic[1], err, out)
	} else if got := kmaxOf(t, out); got != after {
		t.Errorf("second start: effective-kmax %d, want %d (alpha 0.25 kept across the restart)", got, after)
	}
	if _, err := os.Stat(filepath.Join(state, "switches", "n1.json")); err != nil {
		t.Errorf("n1's startup configuration: %v", err)
	}
}

// labSpeeds lists, as "target speed", the speed the views use now for each
// target that published its engine-speed leaf.
func labSpeeds(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT target || ' ' || lhcnp_speed_at(target, now()) FROM series
		WHERE schema_path = '/lhcnp/global/state/engine-speed' ORDER BY target`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestREADMELabBanner: the gnmic commands the README's tour shows are the
// ones `lhcnp lab` prints for the default addresses of examples/lab.yaml
// (TestLabStarts runs what it prints).
func TestREADMELabBanner(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, tour, _ := strings.Cut(string(b), "## A five-minute tour")
	tour, _, _ = strings.Cut(tour, "\n## ")
	_, banner, _ := strings.Cut(tour, "```text")
	banner, _, _ = strings.Cut(banner, "```")
	var shown []string
	for _, l := range strings.Split(banner, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "gnmic ") {
			shown = append(shown, l)
		}
	}
	f, _, err := loadSwitchFile("../../examples/lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a := lab.Addresses{Switches: map[string]string{}, Northbound: lab.DefaultNorthboundAddr}
	for _, s := range f.Switches {
		a.Switches[s.Name] = s.Listen
	}
	if diff := cmp.Diff(labGnmicCommands(a), shown); diff != "" {
		t.Errorf("README's tour and the lab's banner differ (-banner +README):\n%s", diff)
	}
}

// TestLabBannerAsDocumented: every line of the banner README's tour and
// docs/lab.md show is a line the lab prints with the default addresses of
// examples/lab.yaml and the default state directory, its paths under the
// state directory as the user named it (.lhcnp-lab). The private cluster's
// and the startup configurations' were absolute, the log's relative.
func TestLabBannerAsDocumented(t *testing.T) {
	f, _, err := loadSwitchFile("../../examples/lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	named := defaultLabFile().StateDir
	abs, err := filepath.Abs(named)
	if err != nil {
		t.Fatal(err)
	}
	metrics := "http://" + lab.DefaultMetricsAddr + "/metrics"
	a := lab.Addresses{Dashboard: "http://" + lab.DefaultHTTPAddr + "/", Switches: map[string]string{}, Metrics: metrics, TunerMetrics: metrics,
		PostgresDSN: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/lhcnp?sslmode=disable", lab.DefaultPostgresPort), PrivatePG: true,
		Northbound: lab.DefaultNorthboundAddr, StateDir: abs, StartupDir: lab.StartupDir(abs)}
	for _, s := range f.Switches {
		a.Switches[s.Name] = s.Listen
		a.Names = append(a.Names, s.Name)
	}
	var b bytes.Buffer
	printLab(&b, a, named, filepath.Join(named, "lab.log"), lab.DefaultSpeed)
	printed := map[string]bool{}
	for _, l := range strings.Split(b.String(), "\n") {
		printed[strings.TrimSpace(l)] = true
	}
	for _, doc := range []struct{ file, after string }{
		{"../../README.md", "## A five-minute tour"},
		{"../../docs/lab.md", "It prints where everything is"},
	} {
		text, err := os.ReadFile(doc.file)
		if err != nil {
			t.Fatal(err)
		}
		_, banner, ok := strings.Cut(string(text), doc.after)
		if _, banner, ok = strings.Cut(banner, "```text"); !ok {
			t.Fatalf("%s: no banner after %q", doc.file, doc.after)
		}
		banner, _, _ = strings.Cut(banner, "```")
		for _, l := range strings.Split(banner, "\n") {
			if l = strings.TrimSpace(l); l != "" && l != "..." && !printed[l] {
				t.Errorf("%s shows a banner line the lab does not print:\n%s\nthe lab prints:\n%s", doc.file, l, b.String())
			}
		}
	}
}

// TestLabBannerTunerMetrics: the banner (and lhcnp lab status) names
// where the lab's tuner's metrics are, the collector's /metrics, on a line
// of its own; a lab without its tuner prints none.
func TestLabBannerTunerMetrics(t *testing.T) {
	const u = "http://127.0.0.1:9273/metrics"
	for _, tt := range []struct {
		desc  string
		tuner string
		want  bool
	}{{"the tuner", u, true}, {"no tuner", "", false}} {
		t.Run(tt.desc, func(t *testing.T) {
			var b bytes.Buffer
			printAddresses(&b, lab.Addresses{Metrics: u, TunerMetrics: tt.tuner}, ".lhcnp-lab")
			line := "  tuner       " + u + " (lhcnp_tuner_, on the collector's endpoint)\n"
			if got := strings.Contains(b.String(), line); got != tt.want || !strings.Contains(b.String(), "  collector   "+u+"\n") {
				t.Errorf("banner:\n%s\nwant the collector's line and the tuner's %v", b.String(), tt.want)
			}
		})
	}
}

// FuzzConfiguredInterfaces: any bytes give interface names or an error,
// never a panic.
func FuzzConfiguredInterfaces(f *testing.F) {
	for _, name := range []string{"../../examples/lab-n1.json", "../../examples/lab-n2.json"} {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"lhcnp:lhcnp": {"interfaces": {"interface": [{"name": "x", "queues": null}]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		names, err := configuredInterfaces(data)
		if err != nil && names != nil {
			t.Errorf("error %v with names %v", err, names)
		}
	})
}

// TestConfiguredInterfaces: the tuner gets the interfaces whose queues a
// switch's configuration sets.
func TestConfiguredInterfaces(t *testing.T) {
	for _, tt := range []struct {
		desc, file string
		want       []string
	}{
		{"n1", "../../examples/lab-n1.json", []string{"wan"}},
		{"n2", "../../examples/lab-n2.json", []string{"to-dest"}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			b, err := os.ReadFile(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			got, err := configuredInterfaces(b)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := configuredInterfaces([]byte(`{"lhcnp:lhcnp": 3}`)); err == nil {
		t.Error("a configuration that is not an object: no error")
	}
}

// TestLabTunerConfig: --tuner-config gives the lab's tuner the file's
// period and policy keys, on the lab's switches; a file that names a
// database or switches, an unknown key or a bad value is refused with the
// file and key named, and a lab without the tuner refuses the flag.
func TestLabTunerConfig(t *testing.T) {
	dir := t.TempDir()
	write := fileWriter(t, dir)
	config := func(extra ...string) (lab.Config, error) {
		lf, err := parseLab(append([]string{"--fabric", "../../examples/lab.yaml"}, extra...), func() []string { return nil }, io.Discard)
		if err != nil {
			return lab.Config{}, err
		}
		return labConfig(context.Background(), *lf, io.Discard)
	}

	def, err := config()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tuner.DefaultConfig().Policy, def.Tuner.Policy); diff != "" {
		t.Errorf("without a file, the policy is not the default (-want +got):\n%s", diff)
	}

	good := write("tuner.yaml", "period: 2s\nwindow: 4s\njudge_window: 4s\ndry_run: true\npolicy:\n  alpha_start: 0.25\n  rules_off: [overrun]\n")
	lc, err := config("--tuner-config", good)
	if err != nil {
		t.Fatal(err)
	}
	want := tuner.DefaultConfig()
	want.Period, want.Window, want.JudgeWindow, want.DryRun = 2*time.Second, 4*time.Second, 4*time.Second, true
	want.Policy.AlphaStart = 0.25
	want.Policy.RulesOff = []policy.Rule{policy.RuleOverrun}
	want.Switches = def.Tuner.Switches
	if diff := cmp.Diff(want, lc.Tuner); diff != "" {
		t.Errorf("the lab's tuner (-want +got):\n%s", diff)
	}
	if len(lc.Tuner.Switches) == 0 {
		t.Error("the lab's tuner tunes no switch")
	}

	for _, tt := range []struct {
		desc, body string
		args       []string
		want       []string
	}{
		{"a database", "db: postgres://x@y/z\n", nil, []string{"db.yaml:1:5: db:", "the lab's database"}},
		{"switches", "switches:\n  - {name: n1, address: 127.0.0.1:1}\n", nil, []string{"switches.yaml:1:1: switches:"}},
		{"an unknown key", "period: 2s\nperiode: 3s\n", nil, []string{"unknown.yaml:2", "periode"}},
		{"metrics", "period: 2s\nmetrics: {listen: 127.0.0.1:9274}\n", nil, []string{"metrics.yaml:2", "metrics.listen: the lab serves its tuner's metrics on its collector's /metrics (--metrics)"}},
		{"a bad value", "period: 5s\nrollback_duration: 1s\n", nil, []string{"value.yaml:2:20: rollback_duration"}},
		{"the tuner off", "period: 2s\n", []string{"--tuner=false"}, []string{"tuner_config (--tuner-config), tuner (--tuner): a tuner configuration with the tuner off"}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			name := map[string]string{"a database": "db.yaml", "switches": "switches.yaml", "an unknown key": "unknown.yaml",
				"a bad value": "value.yaml", "the tuner off": "off.yaml", "metrics": "metrics.yaml"}[tt.desc]
			_, err := config(append([]string{"--tuner-config", write(name, tt.body)}, tt.args...)...)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

// TestLabBadValues: a bad value of lhcnp lab's --config file is named at
// its line and column, as the tuner's, the collector's and lhcnp switch's
// are (it was named as the flag, the file not at all); of a flag or a
// variable, by it. Each exits with status 2 (the file's exited 1).
func TestLabBadValues(t *testing.T) {
	write := fileWriter(t, t.TempDir())
	for _, tt := range []struct {
		desc, body string
		args, env  []string
		want       string
	}{
		{desc: "retention in the file", body: "speed: 0.1\nretention: 30s\n", want: "FILE:2:12: retention: 30s: want at least 1m, or 0 to keep everything"},
		{desc: "citus workers in the file", body: "citus_workers: 20\n", want: "FILE:1:16: citus_workers: 20: want 0-16"},
		{desc: "a load in the file", body: "websearch_load: 1.5\n", want: "FILE:1:17: websearch_load: 1.5: want 0..1"},
		{desc: "citus over a database", body: "postgres: postgres://x/y\ncitus_workers: 2\n",
			want: "citus_workers (FILE:2:16), postgres (FILE:1:11): citus_workers runs a private Citus cluster; with postgres the lab uses that database as it is"},
		{desc: "citus over a database of a variable", body: "citus_workers: 2\n", env: []string{"LHCNP_LAB_POSTGRES=postgres://u:secret@x/y"},
			want: "citus_workers (FILE:1:16), postgres (LHCNP_LAB_POSTGRES): citus_workers runs a private Citus cluster; with postgres the lab uses that database as it is"},
		{desc: "a tuner configuration with the tuner off", body: "tuner: false\n", args: []string{"--tuner-config", "t.yaml"},
			want: "tuner_config (--tuner-config), tuner (FILE:1:8): a tuner configuration with the tuner off"},
		{desc: "retention of a flag", args: []string{"--retention", "30s"}, want: "--retention: retention: 30s: want at least 1m, or 0 to keep everything"},
		{desc: "a period of a variable", env: []string{"LHCNP_LAB_PERIOD=-1s"}, want: "LHCNP_LAB_PERIOD: period: -1s: must not be negative"},
		// Period 0 has no windows to draw the web-search mix in: the lab
		// ran the scenario's flows once and dropped the load unsaid.
		{desc: "period 0 with the default web-search mix", args: []string{"--period", "0"},
			want: "period (--period), websearch_load (default): period 0 runs the scenario's flows once, with no windows to draw a web-search mix in: give websearch_load 0 too, or a period"},
		{desc: "period 0 in the file with a web-search mix of a variable", body: "period: 0s\n", env: []string{"LHCNP_LAB_WEBSEARCH_LOAD=0.1"},
			want: "period (FILE:1:9), websearch_load (LHCNP_LAB_WEBSEARCH_LOAD): period 0 runs the scenario's flows once, with no windows to draw a web-search mix in: give websearch_load 0 too, or a period"},
		// Nor windows for the horizon to stop: it had no effect, unsaid.
		{desc: "period 0 with a horizon", args: []string{"--period", "0", "--websearch-load", "0", "--horizon", "1m"},
			want: "period (--period), horizon (--horizon): period 0 runs the scenario's flows once, with no windows for a horizon to stop: give horizon 0, or a period"},
		{desc: "period 0 in the file with a horizon of a variable", body: "period: 0s\nwebsearch_load: 0\n", env: []string{"LHCNP_LAB_HORIZON=10s"},
			want: "period (FILE:1:9), horizon (LHCNP_LAB_HORIZON): period 0 runs the scenario's flows once, with no windows for a horizon to stop: give horizon 0, or a period"},
		// Not host:port: refused before anything starts, at the key, where
		// net.Listen's error came after "starting", exit status 1.
		{desc: "a dashboard address of a flag", args: []string{"--http", "nonsense"}, want: `--http: http: "nonsense": missing port in address (want host:port)`},
		{desc: "a metrics address in the file", body: "metrics: 127.0.0.1:99999\n", want: `FILE:1:10: metrics: "127.0.0.1:99999": invalid port "99999"`},
		{desc: "a northbound address of a variable", env: []string{"LHCNP_LAB_NORTHBOUND=9350"}, want: `LHCNP_LAB_NORTHBOUND: northbound: "9350": missing port in address (want host:port)`},
		{desc: "the switches' address", args: []string{"--listen", "localhost"}, want: `--listen: listen: "localhost": missing port in address (want host:port)`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			args := tt.args
			path := ""
			if tt.body != "" {
				path = write("lab.yaml", tt.body)
				args = append([]string{"--config", path}, args...)
			}
			_, err := parseLab(args, func() []string { return tt.env }, io.Discard)
			want := strings.ReplaceAll(tt.want, "FILE", path)
			if err == nil || err.Error() != want {
				t.Fatalf("parseLab(%q) = %v, want %q", args, err, want)
			}
			if code := exitStatus(err); code != 2 {
				t.Errorf("exit status %d, want 2 (a bad value, wherever it came from)", code)
			}
		})
	}
}

// TestLabListenOneAddress: --listen is one gNMI address for every switch
// of the fabric, so a port other than 0 is for a fabric of one switch, as
// lhcnp switch --listen has it. The lab took it for the three switches of
// examples/lab.yaml, said "starting", bound t1 and failed on n1 with
// "address already in use", exit status 1: now the value is refused where
// it came from before anything starts, exit status 2, stdout empty.
func TestLabListenOneAddress(t *testing.T) {
	withoutLabEnv(t)
	sc := labScenarioPath(t)
	write := fileWriter(t, t.TempDir())
	oneSwitch := write("n1.yaml", "scenario: "+sc+"\nswitches:\n  - name: n1\n")
	const three = "one address for the 3 switches of ../../examples/lab.yaml (t1, n1, n2): give port 0 (a free port each, kept), or leave each switch its listen of the file"
	for _, tt := range []struct {
		desc string
		args []string
		env  string // NAME=VALUE, if any
		want string // the one line on stderr, exit status 2; "" for a configuration taken
	}{
		{desc: "a port for three switches", args: []string{"--listen", "127.0.0.1:9400"}, want: `--listen: listen: "127.0.0.1:9400": ` + three},
		{desc: "a port of a variable", env: "LHCNP_LAB_LISTEN=127.0.0.1:9400", want: `LHCNP_LAB_LISTEN: listen: "127.0.0.1:9400": ` + three},
		{desc: "port 0 for three switches", args: []string{"--listen", "127.0.0.1:0"}},
		{desc: "the file's addresses", args: nil},
		{desc: "a port for one switch", args: []string{"--fabric", oneSwitch, "--listen", "127.0.0.1:9400"}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			args := append([]string{"--state-dir", t.TempDir(), "--postgres", "postgres://127.0.0.1:1/lhcnp", "--fabric", "../../examples/lab.yaml"}, tt.args...)
			checkLabConfig(t, args, tt.env, tt.want)
		})
	}
	// The command as a user runs it: the one line, nothing on stdout.
	var stdout, stderr bytes.Buffer
	code := run([]string{"lab", "--state-dir", t.TempDir(), "--postgres", "postgres://127.0.0.1:1/lhcnp", "--fabric", "../../examples/lab.yaml",
		"--listen", "127.0.0.1:9400"}, &stdout, &stderr)
	if want := `lhcnp lab: --listen: listen: "127.0.0.1:9400": ` + three + "\n"; code != 2 || stderr.String() != want || stdout.Len() != 0 {
		t.Errorf("exit status %d, stdout %q, stderr\n%s\nwant exit status 2, nothing on stdout and\n%s", code, stdout.String(), stderr.String(), want)
	}
}

// labScenarioPath is scenarios/lab.yaml's absolute path, for the fabric
// files a test writes in its own directory.
func labScenarioPath(t *testing.T) string {
	t.Helper()
	sc, err := filepath.Abs("../../scenarios/lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// checkLabConfig parses args and env (NAME=VALUE, if any) as lhcnp lab
// does and builds the lab's configuration from them (labConfig: nothing
// starts), which must be refused with want and exit status 2, or taken
// for want "".
func checkLabConfig(t *testing.T, args []string, env, want string) {
	t.Helper()
	var environ []string
	if env != "" {
		environ = []string{env}
	}
	lf, err := parseLab(args, func() []string { return environ }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	_, err = labConfig(context.Background(), *lf, io.Discard)
	if want == "" {
		if err != nil {
			t.Errorf("labConfig(%q) = %v, want it taken", args, err)
		}
		return
	}
	if err == nil || err.Error() != want || exitStatus(err) != 2 {
		t.Errorf("labConfig(%q) = %v (exit status %d), want exit status 2 and\n%s", args, err, exitStatus(err), want)
	}
}

// TestLabAddressesApart: two of the lab's listeners on one address (the
// dashboard, the collector's metrics and northbound, the private
// PostgreSQL, a switch) are refused before anything starts, each named at
// its key and where its value came from, exit status 2. The second of the
// two failed the start as an address "in use by another lhcnp lab (or
// another program)", naming its own flag only, when the lab held it.
func TestLabAddressesApart(t *testing.T) {
	withoutLabEnv(t)
	sc := labScenarioPath(t)
	write := fileWriter(t, t.TempDir())
	fabric := write("fabric.yaml", "scenario: "+sc+"\nswitches:\n  - name: t1\n    listen: 127.0.0.1:9341\n"+
		"  - name: n1\n    listen: 127.0.0.1:9339\n  - name: n2\n    listen: 127.0.0.1:9340\n")
	const apart = ": each of the lab's listeners needs an address of its own (port 0: a free one each)"
	for _, tt := range []struct {
		desc, body string // body: the --config file's, if any
		args       []string
		env        string // NAME=VALUE, if any
		want       string // FILE for the --config file, FABRIC for the fabric's; "" for a configuration taken
	}{
		{desc: "the dashboard on the metrics' default", args: []string{"--http", "127.0.0.1:9273"},
			want: "http (--http), metrics (default): both 127.0.0.1:9273" + apart},
		{desc: "the northbound of a variable on a switch's", env: "LHCNP_LAB_NORTHBOUND=127.0.0.1:9339",
			want: "northbound (LHCNP_LAB_NORTHBOUND), switches[1].listen (FABRIC:6:13): both 127.0.0.1:9339" + apart},
		{desc: "every interface in the file over the northbound's loopback", body: "http: 0.0.0.0:9350\n",
			want: "http (FILE:1:7), northbound (default): 0.0.0.0:9350 and 127.0.0.1:9350 take one port" + apart},
		{desc: "the metrics on the private PostgreSQL's", args: []string{"--metrics", "127.0.0.1:15432"},
			want: "metrics (--metrics), postgres_port (default): both 127.0.0.1:15432" + apart},
		{desc: "the private PostgreSQL on a switch's", args: []string{"--postgres-port", "9340"},
			want: "postgres_port (--postgres-port), switches[2].listen (FABRIC:8:13): both 127.0.0.1:9340" + apart},
		{desc: "one switch's address for the dashboard", args: []string{"--fabric", write("t1.yaml", "scenario: "+sc+"\nswitches:\n  - name: t1\n"), "--listen", "127.0.0.1:8080"},
			want: "http (default), listen (--listen): both 127.0.0.1:8080" + apart},
		{desc: "the defaults"},
		{desc: "free ports", args: []string{"--http", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--northbound", "127.0.0.1:0", "--postgres-port", "0", "--listen", "127.0.0.1:0"}},
		{desc: "no private PostgreSQL", args: []string{"--postgres", "postgres://127.0.0.1:1/lhcnp", "--metrics", "127.0.0.1:15432"}},
		{desc: "no northbound", args: []string{"--northbound", "", "--http", "127.0.0.1:9350"}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			args := append([]string{"--state-dir", t.TempDir(), "--fabric", fabric}, tt.args...)
			config := ""
			if tt.body != "" {
				config = write("lab.yaml", tt.body)
				args = append([]string{"--config", config}, args...)
			}
			checkLabConfig(t, args, tt.env, strings.NewReplacer("FILE", config, "FABRIC", fabric).Replace(tt.want))
		})
	}
	// The command as a user runs it: the one line, nothing on stdout.
	var stdout, stderr bytes.Buffer
	code := run([]string{"lab", "--state-dir", t.TempDir(), "--postgres", "postgres://127.0.0.1:1/lhcnp", "--fabric", fabric, "--http", "127.0.0.1:9273"}, &stdout, &stderr)
	if want := "lhcnp lab: http (--http), metrics (default): both 127.0.0.1:9273" + apart + "\n"; code != 2 || stderr.String() != want || stdout.Len() != 0 {
		t.Errorf("exit status %d, stdout %q, stderr\n%s\nwant exit status 2, nothing on stdout and\n%s", code, stdout.String(), stderr.String(), want)
	}
}

// TestLabBuildsNoWires: lhcnp lab runs every switch of its fabric file in
// its one process and builds none of the file's wires, so their UDP ends
// cannot clash with each other or its listeners (lhcnp switch checks them,
// TestSwitchWiresApart): a fabric file whose wires would have one process
// bind a port twice, on a switch's gNMI port too, is taken, no wire built.
func TestLabBuildsNoWires(t *testing.T) {
	withoutLabEnv(t)
	fabric := fileWriter(t, t.TempDir())("fabric.yaml", "scenario: "+labScenarioPath(t)+
		"\nswitches:\n  - {name: t1, listen: 127.0.0.1:9341}\n  - {name: n1, listen: 127.0.0.1:9339}\n  - name: n2\n"+
		"wires:\n  - {link: t1-n1, a: 127.0.0.1:9339, b: 127.0.0.1:9339}\n  - {link: wan, a: 127.0.0.1:9339, b: 127.0.0.1:9339}\n")
	lf, err := parseLab([]string{"--state-dir", t.TempDir(), "--fabric", fabric, "--tuner=false"}, func() []string { return nil }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	lc, err := labConfig(context.Background(), *lf, io.Discard)
	if err != nil {
		t.Fatalf("labConfig: %v, want the fabric file taken", err)
	}
	if len(lc.Fabric.Switches) != 3 || len(lc.Fabric.Wires) != 0 {
		t.Errorf("the lab's fabric: %d switches, wires %+v; want the 3 switches and no wire", len(lc.Fabric.Switches), lc.Fabric.Wires)
	}
}

// withoutLabEnv clears the LHCNP_LAB_ variables of the test's environment
// for the test, and GRPC_BINARY_LOG_FILTER (withoutEnv).
func withoutLabEnv(t *testing.T) { withoutEnv(t, labEnvPrefix) }

// withoutEnv clears the variables of the test's environment whose names
// start with prefix (a command's, LHCNP_SWITCH_) for the test, and
// GRPC_BINARY_LOG_FILTER (whose warning would be on stderr).
func withoutEnv(t *testing.T, prefix string) {
	t.Helper()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, prefix) {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
	t.Setenv(grpcBinaryLogVar, "")
}

// takenAddr returns a loopback address the test listens on until it ends.
func takenAddr(t *testing.T) string {
	t.Helper()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	return busy.Addr().String()
}

// TestLabNorthboundBusy: `lhcnp lab --northbound ADDR` on a port another
// program holds is refused before anything starts with the one line a
// user sees, naming the address and the flag, and exit status 1: a port
// in use is a failure of the start, not a mistake of the configuration
// (docs/collector.md, "Exit status"). lab.TestStartRefusesBusyAddress
// checks lab.Start's error; this, the flag reaching it and what the
// command makes of it.
func TestLabNorthboundBusy(t *testing.T) {
	taken := takenAddr(t)
	withoutLabEnv(t)
	state := t.TempDir()
	// A database of the user's own (none is reached): the lab starts no
	// PostgreSQL, whose binaries the test needs not.
	var stdout, stderr bytes.Buffer
	code := run([]string{"lab", "--state-dir", state, "--postgres", "postgres://127.0.0.1:1/lhcnp", "--fabric", "../../examples/lab.yaml",
		"--http", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--northbound", taken}, &stdout, &stderr)
	want := "lhcnp lab: collector northbound address " + taken + " is in use by another lhcnp lab (or another program): choose another with --northbound\n"
	if code != 1 || stderr.String() != want {
		t.Errorf("exit status %d, stderr\n%s\nwant exit status 1 and\n%s(stdout:\n%s)", code, stderr.String(), want, stdout.String())
	}
}

// TestLabRefusesBeforeStarting: a state directory another lab holds and
// an address in use (the dashboard's, a switch's) are refused with stdout
// empty: the refusal is all a user sees. "lhcnp lab: starting (...)..."
// came first, then the error (a busy switch address only after the
// database was reached). Once the checks pass the line is said, before
// the start fails on a database that does not answer.
func TestLabRefusesBeforeStarting(t *testing.T) {
	taken := takenAddr(t)
	withoutLabEnv(t)
	// A fabric of one switch, the one a single --listen address is for.
	sc := labScenarioPath(t)
	oneSwitch := fileWriter(t, t.TempDir())("t1.yaml", "scenario: "+sc+"\nswitches:\n  - name: t1\n")
	for _, tt := range []struct {
		desc   string
		held   bool     // the state directory's lock taken first
		args   []string // over free addresses
		stderr string   // what stderr contains
		stdout string
	}{
		{desc: "state directory held", held: true, stderr: "is in use by another lhcnp lab"},
		{desc: "dashboard address in use", args: []string{"--http", taken}, stderr: "dashboard address " + taken + " is in use"},
		{desc: "switch address in use", args: []string{"--fabric", oneSwitch, "--listen", taken}, stderr: "switch t1 gNMI address " + taken + " is in use"},
		{desc: "the checks pass", stderr: "127.0.0.1:1", stdout: "lhcnp lab: starting (switches, collector, tuner, dashboard)...\n"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			state := t.TempDir()
			if tt.held {
				l, err := pidlock.Acquire(filepath.Join(state, "lock"))
				if err != nil {
					t.Fatal(err)
				}
				defer l.Release()
			}
			// A database of the user's own that does not answer: the
			// lab starts no PostgreSQL.
			args := append([]string{"lab", "--state-dir", state, "--postgres", "postgres://127.0.0.1:1/lhcnp", "--fabric", "../../examples/lab.yaml",
				"--http", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--northbound", "127.0.0.1:0", "--listen", "127.0.0.1:0"}, tt.args...)
			var stdout, stderr bytes.Buffer
			code := run(args, &stdout, &stderr)
			if code != 1 || !strings.Contains(stderr.String(), tt.stderr) || strings.Count(stderr.String(), "\n") != 1 || stdout.String() != tt.stdout {
				t.Errorf("exit status %d, stdout\n%s\nstderr\n%s\nwant exit status 1, stdout %q, one line on stderr naming %q",
					code, stdout.String(), stderr.String(), tt.stdout, tt.stderr)
			}
		})
	}
}

// TestLabStateDirAsNamed: a refused start names the state directory and
// its files as --state-dir named it, as the banner and lhcnp lab status
// do: a relative one stays relative. The lock's and the kept address's
// messages gave the absolute path.
func TestLabStateDirAsNamed(t *testing.T) {
	taken := takenAddr(t)
	withoutLabEnv(t)
	fabric, err := filepath.Abs("../../examples/lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	for _, dir := range []string{"held", "kept"} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	held, err := pidlock.Acquire(filepath.Join("held", "lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	fileWriter(t, "kept")(lab.AddressesFile, `{"dashboard": "http://`+taken+`/"}`)
	for _, tt := range []struct {
		desc, stateDir, want string
	}{
		{"held", "held", fmt.Sprintf("lhcnp lab: state directory held is in use by another lhcnp lab (held by pid %d): stop it, or give this one another --state-dir\n", os.Getpid())},
		{"a kept address in use", "kept", "lhcnp lab: dashboard address " + taken + " is in use by another lhcnp lab (or another program): it was kept from an earlier start in kept/" +
			lab.AddressesFile + "; choose another with --http, or remove that file for a free one\n"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run([]string{"lab", "--state-dir", tt.stateDir, "--postgres", "postgres://127.0.0.1:1/lhcnp", "--fabric", fabric,
				"--http", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--northbound", "127.0.0.1:0", "--listen", "127.0.0.1:0"}, &stdout, &stderr)
			if code != 1 || stderr.String() != tt.want || stdout.Len() != 0 {
				t.Errorf("exit status %d, stdout %q, stderr\n%s\nwant exit status 1, nothing on stdout and\n%s", code, stdout.String(), stderr.String(), tt.want)
			}
		})
	}
}

// TestLabNorthboundNotice: a lab whose northbound (insecure, without
// users) listens on more than loopback warns on stderr before it starts,
// as lhcnp collector warns of its own. The lab passed its northbound's
// notices to io.Discard: nothing was said. A busy --http stops the start
// right after, before any database is reached; on loopback (the default)
// nothing is said but the busy address.
func TestLabNorthboundNotice(t *testing.T) {
	for _, tt := range []struct {
		desc, northbound string
		warned           bool
	}{
		{"every interface", "0.0.0.0:0", true},
		{"loopback", "127.0.0.1:0", false},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			taken := takenAddr(t)
			withoutLabEnv(t)
			var stdout, stderr bytes.Buffer
			code := run([]string{"lab", "--state-dir", t.TempDir(), "--postgres", "postgres://127.0.0.1:1/lhcnp", "--fabric", "../../examples/lab.yaml",
				"--http", taken, "--metrics", "127.0.0.1:0", "--northbound", tt.northbound}, &stdout, &stderr)
			warning := "lhcnp lab: warning: the collector northbound has no users and no TLS: anyone who reaches gNMI on " + tt.northbound +
				" can read every switch and Set it as the anonymous read-write user; give --northbound a loopback address\n"
			if code != 1 || strings.HasPrefix(stderr.String(), warning) != tt.warned || !strings.Contains(stderr.String(), taken) ||
				strings.Count(stderr.String(), "\n") != 1+btoi(tt.warned) {
				t.Errorf("exit status %d, stderr\n%s\nwant exit status 1, the busy --http and the warning %v:\n%s", code, stderr.String(), tt.warned, warning)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestLabPostgresParsedOnce: the lab opens its database with the parse
// parseLab checked (parseDSN), not with a second parse of the string: the
// pool configuration lab.Start gets is that one, its ConnString the DSN.
func TestLabPostgresParsedOnce(t *testing.T) {
	const dsn = "postgres://lhcnp@127.0.0.1:1/lhcnp?pool_max_conns=3"
	lf, err := parseLab([]string{"--fabric", "../../examples/lab.yaml", "--postgres", dsn}, func() []string { return nil }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	lc, err := labConfig(context.Background(), *lf, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if lc.Postgres == nil || lc.Postgres != lf.postgres {
		t.Fatalf("lab.Config.Postgres %p, want parseLab's parse %p", lc.Postgres, lf.postgres)
	}
	if got := lc.Postgres.ConnString(); got != dsn || lc.Postgres.MaxConns != 3 {
		t.Errorf("ConnString %q, MaxConns %d; want %q, 3", got, lc.Postgres.MaxConns, dsn)
	}

	lf, err = parseLab([]string{"--fabric", "../../examples/lab.yaml"}, func() []string { return nil }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if lc, err = labConfig(context.Background(), *lf, io.Discard); err != nil || lc.Postgres != nil {
		t.Errorf("without --postgres: Postgres %v, err %v; want nil (a private cluster)", lc.Postgres, err)
	}
}

// TestLabStartingLine: the lab's first line names what it starts. It said
// "PostgreSQL" with --postgres (another server, none started) and "tuner"
// with --tuner=false.
func TestLabStartingLine(t *testing.T) {
	for _, tt := range []struct {
		desc string
		args []string
		want string
	}{
		{"the defaults", nil, "PostgreSQL, switches, collector, tuner, dashboard"},
		{"another server", []string{"--postgres", "postgres://u@db.example/lhcnp"}, "switches, collector, tuner, dashboard"},
		{"Citus", []string{"--citus-workers", "2"}, "Citus, switches, collector, tuner, dashboard"},
		{"no tuner", []string{"--tuner=false"}, "PostgreSQL, switches, collector, dashboard"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			cfg, err := parseLab(tt.args, func() []string { return nil }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(labParts(*cfg), ", "); got != tt.want {
				t.Errorf("starting (%s), want (%s)", got, tt.want)
			}
		})
	}
}
