package dashboard_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lhcnp/lhcnp/lab/dashboard"
)

// chromium returns the path of Debian's chromium (or $LHCNP_CHROMIUM); it
// skips t when there is none, or fails it under CI=true or
// LHCNP_ORACLES=required.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("LHCNP_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" || os.Getenv("LHCNP_ORACLES") == "required" {
		t.Fatal("chromium not found (required: CI=true or LHCNP_ORACLES=required); install it with scripts/deps.sh")
	}
	t.Skip("skipping: chromium not found; install it with scripts/deps.sh (Debian package chromium)")
	return ""
}

// outputDir is where the screenshot goes: $TEST_OUTPUT, else the test's
// artifact directory (kept with go test -artifacts).
func outputDir(t *testing.T) string {
	if d := os.Getenv("TEST_OUTPUT"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.ArtifactDir()
}

// browser starts a headless chromium with this machine's flags and a fresh
// profile.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1500),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	return ctx
}

// chartPoints counts, per chart, the x values and the non-null values of
// every series the page drew.
const chartPoints = `(() => {
  const out = {};
  for (const [name, c] of Object.entries(window.lhcnpDashboard.charts)) {
    out[name] = { x: c.data[0].length, series: c.data.slice(1).map((s) => s.filter((v) => v !== null).length) };
  }
  return out;
})()`

type points struct {
	X      int   `json:"x"`
	Series []int `json:"series"`
}

// TestBrowser loads the page in headless Chromium: it waits for data, checks
// that every chart has points, that the tuner's decision is in the table
// and on the tuner chart, that a decision recorded after the page loaded
// appears without a reload, and saves a screenshot.
func TestBrowser(t *testing.T) {
	ctx := browser(t)
	srv, fx, exec := filled(t, dashboard.WithRefresh(300*time.Millisecond))

	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`window.lhcnpDashboard && window.lhcnpDashboard.queue !== null &&
		window.lhcnpDashboard.charts.depth.data[0].length > 0`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("waiting for the page's first data: %v", err)
	}

	got, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]points](chartPoints))
	if err != nil {
		t.Fatal(err)
	}
	selected, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#charts-title")))
	if err != nil {
		t.Fatal(err)
	}
	// The busiest queue is shown first.
	if want := "Queue 3 of n1-wan on n1"; selected != want {
		t.Errorf("charts show %q, want %q", selected, want)
	}
	for _, name := range []string{"depth", "growth", "rates", "notifications", "tuner"} {
		p, ok := got[name]
		if !ok {
			t.Errorf("chart %s missing", name)
			continue
		}
		if p.X == 0 {
			t.Errorf("chart %s: no points", name)
		}
		for i, n := range p.Series {
			if n == 0 {
				t.Errorf("chart %s: series %d has no points", name, i+1)
			}
		}
	}
	if p := got["tuner"]; len(p.Series) != 2 || p.Series[1] != 1 {
		t.Errorf("tuner chart: %+v, want one decision point", p)
	}

	row, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#tuner tbody tr.decision")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fx.DecisionReason, "confirmed", "alpha 0.5 → 0.25"} {
		if !strings.Contains(row, want) {
			t.Errorf("tuner table row %q lacks %q", row, want)
		}
	}

	// Live: a decision recorded now shows up without a reload.
	exec(`INSERT INTO tuner_actions (target, interface, queue, reason, before, after, outcome, dry_run)
		VALUES ('n1', 'n1-wan', 3, 'live: a second decision', '{"alpha": 0.25}', '{"alpha": 0.125}', 'dry-run', true)`)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](
		`[...document.querySelectorAll("#tuner tbody tr")].some((r) => r.textContent.includes("live: a second decision")) &&
		window.lhcnpDashboard.charts.tuner.data[2].filter((v) => v !== null).length === 2`,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("the decision recorded after the page loaded did not appear: %v", err)
	}

	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(outputDir(t), "dashboard.png")
	if err := os.WriteFile(file, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", file, len(shot))
}
