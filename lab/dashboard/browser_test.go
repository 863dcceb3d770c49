package dashboard_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

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
    out[name] = { x: c.data[0].length, series: c.data.slice(1).map((s) => s.filter((v) => v !== null && v !== undefined).length) };
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
// appears without a reload, that the queue's overload-cut and a rule
// pinned decision are marked, that the table of changes lists every tuned
// leaf's changes and who made them, and saves a screenshot.
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
			if n == 0 && (name != "tuner" || i != 2) { // no operator's change yet
				t.Errorf("chart %s: series %d has no points", name, i+1)
			}
		}
	}
	if p := got["tuner"]; len(p.Series) != 3 || p.Series[1] != 1 || p.Series[2] != 0 {
		t.Errorf("tuner chart: %+v, want one decision point and no operator's change", p)
	}
	checkReadable(ctx, t)

	// The selected queue's row shows its port's buffer under "buffer".
	buffer, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
	  const col = [...document.querySelectorAll("#queues thead th")].findIndex((th) => th.textContent === "buffer");
	  return [String(col), document.querySelector("#queues tbody tr.selected").children[col].textContent];
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"4", "32.0 MB"}; !slices.Equal(buffer, want) {
		t.Errorf("queues table: buffer column and the selected queue's cell %q, want %q", buffer, want)
	}

	row, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#tuner tbody tr.decision")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fx.DecisionReason, "confirmed", "alpha 0.5 → 0.25", "2" /* ISO date */, "tighten", "better: J 1.84 → 1.21"} {
		if !strings.Contains(row, want) {
			t.Errorf("tuner table row %q lacks %q", row, want)
		}
	}

	// Live: a decision recorded now shows up without a reload.
	// Its reason is in words: the duration rounded with its unit, the
	// tuner's key named.
	exec(`INSERT INTO tuner_actions (target, interface, queue, reason, before, after, outcome, dry_run)
		VALUES ('n1', 'n1-wan', 3, 'live: last change 1m3.2843s ago, queue 1250000 B above delay_high_rtt', '{"alpha": 0.25}', '{"alpha": 0.125}', 'dry-run', true)`)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](
		`[...document.querySelectorAll("#tuner tbody tr")].some((r) => r.textContent.includes("live: last change 63 s ago, queue 1.25 MB above the high-delay limit")) &&
		window.lhcnpDashboard.charts.tuner.data[2].filter((v) => v !== null && v !== undefined).length === 2`,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("the decision recorded after the page loaded did not appear in words: %v", err)
	}

	// An operator sets alpha to 0.75 for a moment: no decision of the tuner
	// did, so the page marks it as an operator's change.
	exec(`INSERT INTO samples (ts, series_id, v_num, flags, batch_id)
		SELECT $1, id, 0.75, 0, 1 FROM series
		WHERE target = 'n1' AND schema_path = '/lhcnp/interfaces/interface/queues/queue/state/alpha'
		  AND keys = '{"name": "n1-wan", "id": "3"}'`, fx.End.Add(-2500*time.Millisecond))
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](
		`[...document.querySelectorAll("#changes tbody tr.by-operator")].some((r) => r.textContent.includes("alpha 0.25 → 0.75")) &&
		[...document.querySelectorAll("#changes tbody tr.by-tuner")].some((r) => r.textContent.includes("alpha 0.5 → 0.25")) &&
		window.lhcnpDashboard.charts.tuner.data[3].filter((v) => v !== null && v !== undefined).length >= 1`,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("the operator's change is not marked apart from the tuner's: %v", err)
	}
	// The tuner sees it: its operator row for alpha 0.75 says until when it
	// leaves the queue alone, and is that change's mark (two operator's
	// marks: to 0.75 and back), not a decision.
	exec(`INSERT INTO tuner_actions (ts, target, interface, queue, reason, before, after, outcome, hold_until)
		VALUES ($1, 'n1', 'n1-wan', 3, 'operator: alpha 0.25 → 0.75 set by another client (seen in telemetry)',
		        '{"alpha": 0.25}', '{"alpha": 0.75}', 'operator', $1::timestamptz + interval '15 minutes')`, fx.End.Add(-time.Second))
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](
		`[...document.querySelectorAll("#changes tbody tr.by-operator")].some((r) => r.textContent.includes("tuning held until")) &&
		window.lhcnpDashboard.charts.tuner.data[2].filter((v) => v !== null && v !== undefined).length === 2 &&
		window.lhcnpDashboard.charts.tuner.data[3].filter((v) => v !== null && v !== undefined).length === 2`,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify({rows: [...document.querySelectorAll("#changes tbody tr")].map((r) => r.className + ": " + r.textContent),
			d2: window.lhcnpDashboard.charts.tuner.data[2], d3: window.lhcnpDashboard.charts.tuner.data[3]})`))
		t.Fatalf("the tuner's operator row is not shown as the operator's change and its hold: %v\n%s", err, got)
	}

	// A switch reports alpha when it changes (the fixture every second):
	// with only its changes stored (0.5, 0.25, the operator's 0.75 and
	// back), its line holds its last value to the window's end (the
	// depth's newest sample), where it stopped at its last change (a lone
	// point at the window's start when it had not changed in the window).
	exec(`DELETE FROM samples s USING (
		    SELECT series_id, ts, v_num, lag(v_num) OVER (ORDER BY ts) AS prev FROM samples
		    WHERE series_id = (SELECT id FROM series WHERE target = 'n1' AND keys = '{"name": "n1-wan", "id": "3"}'
		                         AND schema_path = '/lhcnp/interfaces/interface/queues/queue/state/alpha')) p
		WHERE s.series_id = p.series_id AND s.ts = p.ts AND p.v_num = p.prev`)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`(() => {
	  const c = window.lhcnpDashboard.charts, lastX = (u, s) => {
	    for (let i = u.data[s].length - 1; i >= 0; i--) if (u.data[s][i] !== null && u.data[s][i] !== undefined) return u.data[0][i];
	    return null;
	  };
	  return c.tuner.data[1].filter((v) => v !== null && v !== undefined).length <= 5 && lastX(c.tuner, 1) >= lastX(c.depth, 1);
	})()`, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Errorf("alpha reported at its changes only: its line does not reach the window's end: %v", err)
	}

	// The queue's switch publishes overload-cut (on), and the tuner's rule
	// pinned switched it on: the queues table shows the option, the
	// decision is marked as pinned's and names the option off → on.
	exec(`INSERT INTO series (id, target, path, schema_path, keys) VALUES (990001, 'n1',
		'/lhcnp/interfaces/interface[name=n1-wan]/queues/queue[id=3]/state/overload-cut',
		'/lhcnp/interfaces/interface/queues/queue/state/overload-cut', '{"name": "n1-wan", "id": "3"}')`)
	exec(`INSERT INTO latest (series_id, ts, v_bool) VALUES (990001, $1, true)`, fx.End)
	exec(`INSERT INTO tuner_actions (ts, target, interface, queue, reason, before, after, outcome, dry_run)
		VALUES ($1, 'n1', 'n1-wan', 3, 'pinned: 0.05 of packets dropped or paused (loss_high 0.0001); loss persists with the queue pinned at the buffer (30400000 B, 0.95 of its 32000000 B: pinned_buffer_share 0.75) after the last decision''s loss: K_max and V_growth are out of reach there, overload_cut on',
		        '{"kmax_mode": "BDP_ADAPTIVE", "alpha": 0.25, "v_growth_bytes_per_second": 1000000}',
		        '{"kmax_mode": "BDP_ADAPTIVE", "alpha": 0.25, "v_growth_bytes_per_second": 1000000, "overload_cut": true}', 'confirmed', false)`,
		fx.End.Add(-500*time.Millisecond))
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`(() => {
		const col = [...document.querySelectorAll("#queues thead th")].findIndex((th) => th.textContent === "overload-cut");
		const cell = document.querySelector("#queues tbody tr.selected").children[col];
		const pinned = [...document.querySelectorAll("#tuner tbody tr.rule-pinned")];
		return cell.textContent === "on" && cell.classList.contains("cut-on") && pinned.length === 1 &&
			pinned[0].textContent.includes("overload-cut off → on") && pinned[0].textContent.includes("the pinned share of the buffer");
	})()`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify({queues: [...document.querySelectorAll("#queues tbody tr")].map((r) => r.className + ": " + r.textContent),
			tuner: [...document.querySelectorAll("#tuner tbody tr")].map((r) => r.className + ": " + r.textContent)})`))
		t.Fatalf("the queue's overload-cut and rule pinned's change are not marked: %v\n%s", err, got)
	}
	// A decision of another rule is not marked as pinned's.
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#tuner tbody tr.decision:not(.rule-pinned)").length`)); err != nil || n < 2 {
		t.Errorf("%d unmarked decisions (%v), want the fixture's and the live one", n, err)
	}

	// Every tuned leaf's changes are in the table, not alpha's only: the
	// tuner's V_growth (rule growth) and an operator's, rule pinned's
	// overload-cut on and an operator's off, and an operator's hold; the
	// operators' rows marked as operators'.
	exec(`DELETE FROM samples WHERE ts > $1 AND series_id = (SELECT id FROM series WHERE target = 'n1'
		AND schema_path = '/lhcnp/interfaces/interface/queues/queue/state/v-growth' AND keys = '{"name": "n1-wan", "id": "3"}')`,
		fx.End.Add(-21*time.Second))
	exec(`INSERT INTO samples (ts, series_id, v_int, batch_id)
		SELECT ts, id, v, 1 FROM series, (VALUES ($1::timestamptz, 500000), ($2::timestamptz, 2000000)) AS x(ts, v)
		WHERE target = 'n1' AND schema_path = '/lhcnp/interfaces/interface/queues/queue/state/v-growth'
		  AND keys = '{"name": "n1-wan", "id": "3"}'`, fx.End.Add(-20*time.Second), fx.End.Add(-12*time.Second))
	exec(`INSERT INTO samples (ts, series_id, v_bool, batch_id) VALUES ($1, 990001, false, 1), ($2, 990001, true, 1), ($3, 990001, false, 1)`,
		fx.Start, fx.End.Add(-time.Second), fx.End.Add(-200*time.Millisecond))
	exec(`INSERT INTO tuner_actions (ts, target, interface, queue, reason, before, after, outcome, dry_run) VALUES
		($1, 'n1', 'n1-wan', 3, 'growth: the queue grows towards delay_high_rtt',
		 '{"kmax_mode": "BDP_ADAPTIVE", "alpha": 0.25, "v_growth_bytes_per_second": 1000000}',
		 '{"kmax_mode": "BDP_ADAPTIVE", "alpha": 0.25, "v_growth_bytes_per_second": 500000}', 'confirmed', false)`,
		fx.End.Add(-20500*time.Millisecond))
	exec(`INSERT INTO tuner_actions (ts, target, interface, queue, reason, outcome, hold_until)
		VALUES ($1, 'n1', 'n1-wan', 3, 'operator-hold: held by an operator until later', 'operator', $1::timestamptz + interval '1 hour')`,
		fx.End.Add(-8*time.Second))
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`(() => {
		const rows = [...document.querySelectorAll("#changes tbody tr")];
		const has = (sel, ...parts) => rows.some((r) => r.matches(sel) && parts.every((p) => r.textContent.includes(p)));
		return has(".by-tuner", "tuner (rule growth)", "V_growth 1 MB/s → 500 kB/s") &&
			has(".by-operator", "V_growth 500 kB/s → 2 MB/s") &&
			has(".by-tuner", "tuner (rule pinned)", "overload-cut off → on") &&
			has(".by-operator", "operator", "overload-cut on → off") &&
			has(".by-hold.by-operator", "operator's hold of the queue; tuning held until", "tuning of the queue") &&
			has(".by-tuner", "tuner (rule kmax)", "alpha 0.5 → 0.25");
	})()`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify([...document.querySelectorAll("#changes tbody tr")].map((r) => r.className + ": " + r.textContent))`))
		t.Fatalf("the table of changes does not list every tuned leaf's changes and who made them: %v\n%s", err, got)
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

	// Simulated time on the x axis: the window's span times the speed,
	// from 0, in units.
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#x-select"), "sim")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#x-select").dispatchEvent(new Event("change"))`)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`(() => { const u = window.lhcnpDashboard.charts.depth;
			return !u.scales.x.time && u.scales.x.min === 0 && u.data[0].length > 0; })()`,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("switching the x axis to simulated time: %v", err)
	}
	labels, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.lhcnpDashboard.charts.depth.axes[0]._values`))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range labels {
		if !regexp.MustCompile(`^-?[\d.]+ (µs|ms|s|min)$`).MatchString(l) {
			t.Errorf("simulated x label %q is not a duration with a unit", l)
		}
	}
	shot, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(outputDir(t), "dashboard-simulated-time.png")
	if err := os.WriteFile(file, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", file, len(shot))
}

// readable is what checkReadable measures on the page.
type readable struct {
	// Overlaps lists x axis labels closer than their widths, per chart.
	Overlaps []string `json:"overlaps"`
	// FirstLabel is the depth chart's first x label.
	FirstLabel string `json:"first_label"`
	// Labels are all the depth chart's x labels.
	Labels []string `json:"labels"`
	// Legend holds each chart's legend values with the cursor off the
	// chart, of the series it draws.
	Legend map[string][]string `json:"legend"`
	// Undrawn lists legend entries shown for series not drawn.
	Undrawn []string `json:"undrawn"`
	// RowGaps lists rows of charts that leave room on the right (px).
	RowGaps []float64 `json:"row_gaps"`
	// Narrow lists charts narrower than their figure.
	Narrow []string `json:"narrow"`
	// LevelNote is the note under the queues table.
	LevelNote string `json:"level_note"`
	// Gaps: restarts found in [0 1 2 3 20 21], and a step series with
	// those gaps applied.
	Gaps    [][]float64 `json:"gaps"`
	GapData [][]any     `json:"gap_data"`
	Stepped []string    `json:"stepped"`
}

const measureReadable = `(() => {
  const d = window.lhcnpDashboard;
  const out = { overlaps: [], legend: {}, undrawn: [], row_gaps: [], narrow: [] };
  for (const [name, u] of Object.entries(d.charts)) {
    const a = u.axes[0];
    const ctx = u.ctx;
    ctx.save();
    ctx.font = a.font[0];
    const w = (l) => Math.max(...String(l).split("\n").map((s) => ctx.measureText(s).width)) / devicePixelRatio;
    ctx.restore();
    const pos = a._splits.map((v) => u.valToPos(v, "x"));
    const vals = a._values;
    for (let i = 1; i < vals.length; i++) {
      if (pos[i] - pos[i - 1] < (w(vals[i]) + w(vals[i - 1])) / 2 + 4) out.overlaps.push(name + ": " + vals[i - 1] + " | " + vals[i]);
    }
    const rows = u.root.querySelectorAll(".u-legend .u-series");
    out.legend[name] = [];
    u.series.forEach((s, i) => {
      if (i === 0 || !rows[i] || rows[i].style.display === "none") return;
      if (!s.show) out.undrawn.push(name + ": " + s.label);
      out.legend[name].push(s.label + "=" + rows[i].querySelector(".u-value").textContent);
    });
    if (u.width < u.root.parentElement.clientWidth - 2) out.narrow.push(name + ": " + u.width + " < " + u.root.parentElement.clientWidth);
  }
  const box = document.querySelector(".charts").getBoundingClientRect();
  const rows = {};
  for (const f of document.querySelectorAll(".charts figure")) {
    const r = f.getBoundingClientRect();
    rows[Math.round(r.top)] = Math.max(rows[Math.round(r.top)] || 0, r.right);
  }
  for (const right of Object.values(rows)) if (box.right - right > 2) out.row_gaps.push(box.right - right);
  out.first_label = d.charts.depth.axes[0]._values[0];
  out.labels = d.charts.depth.axes[0]._values;
  out.level_note = document.querySelector("#level-note").textContent;
  out.gaps = d.restarts([0, 1, 2, 3, 20, 21]);
  out.gap_data = d.withGaps(out.gaps, [[0, 1, 2, 3, 20, 21], [5, 5, 5, 5, 5, 5], [0.5, null, undefined, 0.5, 0.25, 0.25]], [2])
    .map((col) => col.map((v) => (v === undefined ? "undefined" : v)));
  out.stepped = ["K_min", "K_max", "alpha"].filter((l) => Object.values(d.charts).some((u) => u.series.some((s) => s.label === l)));
  return out;
})()`

// checkReadable checks the page reads at a glance: x labels that do not
// overlap, an ISO date and 24-hour times, the legend's values without a
// hover, every series in a legend drawn, the charts filling their rows,
// the level column explained, and configuration values broken at a
// restart.
func checkReadable(ctx context.Context, t *testing.T) {
	t.Helper()
	r, err := chromedp.Run(ctx, chromedp.Evaluate[readable](measureReadable))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Overlaps) > 0 {
		t.Errorf("x labels overlap: %q", r.Overlaps)
	}
	if !regexp.MustCompile(`^\d\d:\d\d:\d\d\n\d{4}-\d\d-\d\d$`).MatchString(r.FirstLabel) {
		t.Errorf("first x label %q, want HH:MM:SS and an ISO date", r.FirstLabel)
	}
	for _, l := range r.Labels[1:] {
		if !regexp.MustCompile(`^([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\n\d{4}-\d\d-\d\d)?$`).MatchString(l) {
			t.Errorf("x label %q is not a 24-hour time", l)
		}
	}
	for name, vals := range r.Legend {
		for _, v := range vals {
			if strings.HasSuffix(v, "=–") || strings.HasSuffix(v, "=--") || strings.HasSuffix(v, "=") {
				t.Errorf("chart %s: legend %q shows no value without a hover", name, v)
			}
		}
	}
	if len(r.Undrawn) > 0 {
		t.Errorf("legend lists series that are not drawn: %q", r.Undrawn)
	}
	if len(r.RowGaps) > 0 || len(r.Narrow) > 0 {
		t.Errorf("charts do not fill their rows: gaps %v px, narrow %q", r.RowGaps, r.Narrow)
	}
	if !strings.Contains(r.LevelNote, "170 at Kmax") || !strings.Contains(r.LevelNote, "0–255") {
		t.Errorf("level note %q does not explain the level", r.LevelNote)
	}
	wantGapData := [][]any{
		{0.0, 1.0, 2.0, 3.0, 3.001, 3.002, 20.0, 21.0},
		{5.0, 5.0, 5.0, 5.0, "undefined", nil, 5.0, 5.0},
		{0.5, nil, "undefined", 0.5, 0.5, nil, 0.25, 0.25},
	}
	if diff := cmp.Diff([][]float64{{3, 20}}, r.Gaps); diff != "" {
		t.Errorf("restarts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantGapData, r.GapData, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("data across a restart (-want +got):\n%s", diff)
	}
}

// decisionCells is the cells of the tuner decisions' row whose reason
// includes the marker, by column (empty when there is none yet).
const decisionCells = `((marker) => {
  const r = [...document.querySelectorAll("#tuner tbody tr")].find((tr) => tr.lastChild.textContent.includes(marker));
  return r ? [...r.children].map((td) => td.textContent + (td.className.includes("judged") ? " |" + td.className : "")) : [];
})`

// waitDecision polls the page until the decision whose reason includes
// marker is in the table, and returns its cells: time, switch, queue,
// outcome, direction, change, judged (with its class after " |"), reason.
func waitDecision(ctx context.Context, t *testing.T, marker string) []string {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](decisionCells+`(`+strconv.Quote(marker)+`).length > 0`,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("the decision %q is not in the table: %v", marker, err)
	}
	cells, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](decisionCells+`(`+strconv.Quote(marker)+`)`))
	if err != nil {
		t.Fatal(err)
	}
	return cells
}

// TestBrowserDecisionsInWords: the tuner decisions' table says what each
// row is: a start kept on its judge window without comparing the
// objectives is "kept, not compared", not "better" (its reason says "not
// compared"); a change kept with a higher J is "not worse"; a change is in
// the table of changes' words, V_growth with its unit (B/s), as the
// reason gives it; a hold changed nothing and holds, "hold (would
// tighten)" for the rule it held back.
func TestBrowserDecisionsInWords(t *testing.T) {
	ctx := browser(t)
	srv, fx, exec := filled(t, dashboard.WithRefresh(300*time.Millisecond))
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	const settings = `{"kmax_mode": "BDP_ADAPTIVE", "alpha": %v, "v_growth_bytes_per_second": %d}`
	row := func(at time.Duration, rule, reason, before, after, outcome, inputs string) {
		exec(`INSERT INTO tuner_actions (ts, target, interface, queue, reason, before, after, outcome, inputs)
			VALUES ($1, 'n1', 'n1-wan', $2, $3, $4, $5, $6, $7)`, fx.End.Add(-at), 4, rule+": "+reason, before, after, outcome, inputs)
	}
	row(3*time.Second, "start", "V_growth from the switch's 1250000000 B/s (0.1 of R_port) to 125000000 B/s (v_growth_start_share 0.1), alpha from the draft's default 1 to 0.5 (alpha_start); applied and the policy's starting point (rule start), kept: objective 1 after, 1 before, not compared (a queue's first windows are its start-up's)",
		fmt.Sprintf(settings, 1, 1250000000), fmt.Sprintf(settings, 0.5, 125000000), "confirmed",
		`{"rule": "start", "direction": "tighten", "judgement": {"keep": true, "objective_before": 1, "objective_after": 1, "not_compared": true}}`)
	row(2*time.Second, "delay", "notkept-marker; applied and objective 1.02 after, 1 before: not worse",
		fmt.Sprintf(settings, 0.5, 125000000), fmt.Sprintf(settings, 0.354, 125000000), "confirmed",
		`{"rule": "delay", "direction": "tighten", "judgement": {"keep": true, "objective_before": 1, "objective_after": 1.02}}`)

	// A hold as rule firing writes it (the settings unchanged, the held
	// rule's direction), and one carrying a change it did not apply (the
	// end of a gap, as the tuner wrote it before).
	row(1500*time.Millisecond, "firing", "firing-marker; but the QGR trigger fires: the node is cutting already",
		fmt.Sprintf(settings, 0.5, 125000000), fmt.Sprintf(settings, 0.5, 125000000), "hold", `{"rule": "firing", "direction": "tighten"}`)
	row(time.Second, "gap", "ended after 5s (1 period): the window is complete again, now a change",
		fmt.Sprintf(settings, 1, 1250000000), fmt.Sprintf(settings, 0.5, 1250000000), "hold", `{"rule": "gap", "direction": "hold"}`)

	for _, tt := range []struct{ marker, direction, change, judged string }{
		{"not compared (a queue", "tighten", "alpha 1 → 0.5, V_growth 1.25 GB/s → 125 MB/s", "kept, not compared: J 1.00 → 1.00 |text judged judged-kept"},
		{"notkept-marker", "tighten", "alpha 0.5 → 0.354", "not worse: J 1.00 → 1.02 |text judged judged-kept"},
		{"firing-marker", "hold (would tighten)", "–", "– |text judged "},
		{"now a change", "hold", "–", "– |text judged "},
	} {
		cells := waitDecision(ctx, t, tt.marker)
		if len(cells) != 8 || cells[4] != tt.direction || cells[5] != tt.change || cells[6] != tt.judged {
			t.Errorf("decision %q: cells %q, want direction %q, change %q, judged %q", tt.marker, cells, tt.direction, tt.change, tt.judged)
		}
	}
	// The start's reason gives V_growth as its change does.
	if cells := waitDecision(ctx, t, "not compared (a queue"); len(cells) == 8 && !strings.Contains(cells[7], "from the switch's 1.25 GB/s (0.1 of R_port) to 125 MB/s") {
		t.Errorf("the start's reason %q does not give V_growth as its change does", cells[7])
	}
	// The fixture's decision, kept with a lower J, is better.
	if cells := waitDecision(ctx, t, fx.DecisionReason); len(cells) != 8 || cells[6] != "better: J 1.84 → 1.21 |text judged judged-better" {
		t.Errorf("the fixture's decision: cells %q, want judged better", cells)
	}
}

// TestBrowserHeldOutsideTheWindow: an operator's change older than the
// window (5 minutes) holds the queue for operator_hold (15): the page
// says so for the selected queue, and in the queues table, whatever the
// window; a queue with no change in the window shows no table of changes,
// not its header alone, and no hold.
func TestBrowserHeldOutsideTheWindow(t *testing.T) {
	ctx := browser(t)
	srv, fx, exec := filled(t, dashboard.WithRefresh(300*time.Millisecond))
	until := fx.End.Add(5 * time.Minute)
	exec(`INSERT INTO tuner_actions (ts, target, interface, queue, reason, before, after, outcome, hold_until)
		VALUES ($1, 'n1', 'n1-wan', 3, 'operator: alpha 0.5 → 0.75 set by another client (seen in telemetry)',
		        '{"alpha": 0.5}', '{"alpha": 0.75}', 'operator', $2)`, fx.End.Add(-10*time.Minute), until)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	type held struct {
		Selected string  `json:"selected"`
		Status   string  `json:"status"`
		Shown    bool    `json:"shown"`
		Cell     string  `json:"cell"`
		Until    float64 `json:"until"`
		Table    bool    `json:"table"`
		Empty    bool    `json:"empty"`
	}
	const read = `(() => {
	  const d = window.lhcnpDashboard, shown = (sel) => document.querySelector(sel).offsetParent !== null;
	  const col = [...document.querySelectorAll("#queues thead th")].findIndex((th) => th.textContent === "tuning");
	  const row = document.querySelector("#queues tbody tr.selected");
	  return { selected: d.queue ? d.queue.target + " " + d.queue.interface + " " + d.queue.queue : "",
	    status: document.querySelector("#hold-status").textContent, shown: shown("#hold-status"),
	    cell: row && col >= 0 ? row.children[col].textContent : "", until: d.queue && d.queue.held ? d.queue.held.until : 0,
	    table: shown("#changes"), empty: shown("#changes-empty") };
	})()`
	wait := func(selected string) held {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`(() => { const d = window.lhcnpDashboard;
			return d && d.queue !== null && d.queue.target + " " + d.queue.interface + " " + d.queue.queue === `+strconv.Quote(selected)+`; })()`,
			chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			t.Fatalf("waiting for queue %s: %v", selected, err)
		}
		h, err := chromedp.Run(ctx, chromedp.Evaluate[held](read))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	h := wait("n1 n1-wan 3")
	wantUntil := float64(until.UnixMicro()) / 1e6
	if !h.Shown || !strings.HasPrefix(h.Status, "Tuning of this queue is held until ") || !strings.Contains(h.Status, "an operator's change the tuner saw") ||
		h.Until != wantUntil || !strings.HasPrefix(h.Cell, "held until ") {
		t.Errorf("a queue held by an operator's change older than the window: %+v; want the hold until %v said", h, wantUntil)
	}
	if !h.Table || h.Empty {
		t.Errorf("the held queue's changes in the window (the fixture's decision): %+v, want the table", h)
	}
	// The quiet queue: no change in the window, no hold.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const s = document.querySelector("#queue-select");
		s.value = "n2|n2-d0|3"; return s.dispatchEvent(new Event("change")); })()`)); err != nil {
		t.Fatal(err)
	}
	h = wait("n2 n2-d0 3")
	if h.Shown || h.Table || !h.Empty || h.Until != 0 || h.Cell != "–" {
		t.Errorf("a queue with no change and no hold: %+v; want neither the table nor a hold, and \"No change in this window.\"", h)
	}
}
