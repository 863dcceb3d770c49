package dashboard_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/lab/dashboard"
	"github.com/lhcnp/lhcnp/lab/labtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const fixtureSeconds = 60

// filled returns a dashboard server on a database holding labtest's fixture.
func filled(t *testing.T, opts ...dashboard.Option) (*httptest.Server, labtest.Fixture, func(sql string, args ...any)) {
	srv, fx, exec, _ := filledPool(t, opts...)
	return srv, fx, exec
}

func filledPool(t *testing.T, opts ...dashboard.Option) (*httptest.Server, labtest.Fixture, func(sql string, args ...any), *pgxpool.Pool) {
	t.Helper()
	pool, _ := pgtest.New(t)
	ctx := context.Background()
	fx, err := labtest.Fill(ctx, pool, time.Now().Add(-fixtureSeconds*time.Second), fixtureSeconds)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(dashboard.New(pool, opts...))
	t.Cleanup(srv.Close)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	return srv, fx, exec, pool
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

func nonNull(col []*float64) int {
	n := 0
	for _, v := range col {
		if v != nil {
			n++
		}
	}
	return n
}

// TestAPI reads the fixture back through the API: every queue, every series
// of the congested one over the window, and the tuner's decision with the
// K_max it caused.
func TestAPI(t *testing.T) {
	srv, fx, _, pool := filledPool(t)

	var qs dashboard.QueuesResponse
	getJSON(t, srv.URL+"/api/queues", &qs)
	var got []string
	for _, q := range qs.Queues {
		got = append(got, q.Target+" "+q.Interface)
	}
	if diff := cmp.Diff([]string{"n1 n1-wan", "n2 n2-d0"}, got); diff != "" {
		t.Errorf("queues (-want +got):\n%s", diff)
	}
	// The congested port reports its buffer, the quiet one none.
	if len(qs.Queues) == 2 {
		if b := qs.Queues[0].BufferBytes; b == nil || *b != labtest.BufferBytes {
			t.Errorf("%s's buffer %v, want %d", got[0], b, labtest.BufferBytes)
		}
		if b := qs.Queues[1].BufferBytes; b != nil {
			t.Errorf("%s's buffer %v, want none (null)", got[1], *b)
		}
	}
	// Neither switch publishes overload-cut: none known (TestBrowser adds
	// one).
	for _, q := range qs.Queues {
		if q.OverloadCut != nil {
			t.Errorf("%s %s: overload-cut %v, want none (null)", q.Target, q.Interface, *q.OverloadCut)
		}
	}
	if len(qs.Tuner) != 1 || qs.Tuner[0].Reason == nil || *qs.Tuner[0].Reason != fx.DecisionReason || qs.Tuner[0].Rule != "kmax" {
		t.Errorf("tuner decisions = %+v, want the fixture's one (rule kmax)", qs.Tuner)
	} else {
		// Its direction and judgement, read from the inputs the tuner
		// recorded (tuner.Inputs's JSON keys).
		a, in := qs.Tuner[0], fx.DecisionInputs
		want := dashboard.Judgement{Keep: in.Judgement.Keep, ObjectiveBefore: in.Judgement.ObjectiveBefore, ObjectiveAfter: in.Judgement.ObjectiveAfter}
		if a.Direction != in.Direction || a.Judgement == nil || *a.Judgement != want {
			t.Errorf("decision's direction %q, judgement %+v; want %q, %+v", a.Direction, a.Judgement, in.Direction, want)
		}
	}

	var q dashboard.QueueResponse
	c := labtest.Congested
	getJSON(t, srv.URL+"/api/queue?target=n1&interface=n1-wan&queue=3&window=10m", &q)
	if q.To != float64(fx.End.UnixMicro())/1e6 {
		t.Errorf("window ends at %v, want the newest sample %v", q.To, fx.End)
	}
	if len(q.Congestion.T) != fixtureSeconds {
		t.Errorf("congestion: %d rows, want %d", len(q.Congestion.T), fixtureSeconds)
	}
	for _, name := range []string{"depth", "kmin", "kmax", "growth", "emr"} {
		if n := nonNull(q.Congestion.Values[name]); n != fixtureSeconds {
			t.Errorf("congestion %s: %d values, want %d", name, n, fixtureSeconds)
		}
	}
	// K_max halves after the decision.
	kmax := q.Congestion.Values["kmax"]
	if first, last := *kmax[0], *kmax[len(kmax)-1]; first != 2*last {
		t.Errorf("K_max %v at the start, %v at the end; want it halved by the decision", first, last)
	}
	// The first sample of a counter has no increase.
	if n := nonNull(q.Rates.Values["queue_bps"]); n != fixtureSeconds-1 {
		t.Errorf("rates: %d queue rates, want %d", n, fixtureSeconds-1)
	}
	if v := q.Rates.Values["port_bps"][0]; v == nil || *v != 100e9 {
		t.Errorf("port rate %v, want 100e9", v)
	}
	if n := nonNull(q.Flows.Values["arrival_bps"]); n != fixtureSeconds {
		t.Errorf("flows: %d arrival rates, want %d", n, fixtureSeconds)
	} else if v := *q.Flows.Values["arrival_bps"][0]; v != 85e9 {
		t.Errorf("flows' arrival rate %v, want 85e9 (two flows)", v)
	}
	var notify float64
	for _, v := range q.Notifications.Values["NOTIFY"] {
		notify += *v
	}
	if notify == 0 || len(q.Notifications.T) == 0 {
		t.Errorf("notifications: no NOTIFY in %d seconds", len(q.Notifications.T))
	}
	if n := nonNull(q.Alpha.Values["alpha"]); n != fixtureSeconds {
		t.Errorf("alpha: %d values, want %d", n, fixtureSeconds)
	}
	if len(q.Tuner) != 1 || q.Tuner[0].Outcome != "confirmed" || *q.Tuner[0].Interface != c.Interface {
		t.Errorf("queue's tuner decisions = %+v", q.Tuner)
	}

	// At another speed (the switch's engine-speed leaf, as the collector
	// stores it), rates over wall-clock time become rates per simulated
	// second; the switch's own values stay.
	const speedLeaf = "/lhcnp/global/state/engine-speed"
	speedID := rows.SeriesID("n1", speedLeaf)
	if _, err := pool.Exec(context.Background(), `INSERT INTO series (id, target, path, schema_path, keys) VALUES ($1, 'n1', $2, $2, '{}')`,
		speedID, speedLeaf); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(context.Background(), `INSERT INTO samples (ts, series_id, v_float, batch_id) VALUES ($1, $2, 0.5, 1)`,
		fx.Start.Add(-time.Hour), speedID); err != nil {
		t.Fatal(err)
	}
	defer pool.Exec(context.Background(), `DELETE FROM samples WHERE series_id = $1`, speedID)
	var sq dashboard.QueueResponse
	getJSON(t, srv.URL+"/api/queue?target=n1&interface=n1-wan&queue=3&window=10m", &sq)
	if got, want := *sq.Rates.Values["queue_bps"][1], 2**q.Rates.Values["queue_bps"][1]; got != want {
		t.Errorf("speed 0.5: queue rate %v, want %v", got, want)
	}
	if got, want := *sq.Notifications.Values["NOTIFY"][0], 2**q.Notifications.Values["NOTIFY"][0]; got != want {
		t.Errorf("speed 0.5: NOTIFY rate %v, want %v", got, want)
	}
	if got, want := *sq.Flows.Values["arrival_bps"][0], *q.Flows.Values["arrival_bps"][0]; got != want {
		t.Errorf("speed 0.5: flows' arrival rate %v, want %v (a switch value, not scaled)", got, want)
	}

	// A short window keeps only its end.
	getJSON(t, srv.URL+"/api/queue?target=n1&interface=n1-wan&queue=3&window=10", &q)
	if len(q.Congestion.T) != 10 {
		t.Errorf("10 s window: %d rows, want 10", len(q.Congestion.T))
	}
	if len(q.Tuner) != 0 {
		t.Errorf("10 s window: %d tuner decisions, want none (it was half-way)", len(q.Tuner))
	}

	// The other switch's queue has no decision.
	getJSON(t, srv.URL+"/api/queue?target=n2&interface=n2-d0&queue=3", &q)
	if len(q.Congestion.T) != fixtureSeconds || len(q.Tuner) != 0 {
		t.Errorf("quiet queue: %d rows, %d decisions; want %d, 0", len(q.Congestion.T), len(q.Tuner), fixtureSeconds)
	}
}

// TestBadRequests: a bad query string is a 400 naming the parameter.
func TestBadRequests(t *testing.T) {
	srv := httptest.NewServer(dashboard.New(nil))
	defer srv.Close()
	for _, tt := range []struct {
		desc, query, want string
	}{
		{"no target", "interface=x&queue=0", "target and interface are required"},
		{"no interface", "target=x&queue=0", "target and interface are required"},
		{"queue not a number", "target=x&interface=y&queue=a", `queue "a"`},
		{"queue too big", "target=x&interface=y&queue=256", `queue "256"`},
		{"queue outside the model's 0..15", "target=x&interface=y&queue=16", `queue "16": want a queue id 0-15`},
		{"negative window", "target=x&interface=y&queue=1&window=-5", `window "-5"`},
		{"window not a duration", "target=x&interface=y&queue=1&window=soon", `window "soon"`},
		{"window too long", "target=x&interface=y&queue=1&window=48h", `window "48h"`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			resp, err := http.Get(srv.URL + "/api/queue?" + tt.query)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), tt.want) {
				t.Errorf("got %s %q, want 400 containing %q", resp.Status, body, tt.want)
			}
		})
	}
}

// TestHealth: /healthz answers ok while the database does.
func TestHealth(t *testing.T) {
	srv, _, _ := filled(t)
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "ok" {
		t.Errorf("healthz: %s %q", resp.Status, body)
	}
}

// TestVendoredFiles: the vendored uPlot files are the ones the README names
// (version, licence and checksum), and the page loads them.
func TestVendoredFiles(t *testing.T) {
	readme, err := os.ReadFile("static/vendor/README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|.*\\| `([0-9a-f]{64})` \\|$")
	rows := row.FindAllStringSubmatch(string(readme), -1)
	if len(rows) != 2 {
		t.Fatalf("README names %d files with a checksum, want 2", len(rows))
	}
	for _, r := range rows {
		b, err := fs.ReadFile(os.DirFS("static/vendor"), r[1])
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != r[2] {
			t.Errorf("%s: sha256 %s, README says %s", r[1], got, r[2])
		}
	}
	if !strings.Contains(string(readme), "1.6.32") || !strings.Contains(string(readme), "MIT") {
		t.Error("README does not give uPlot's version and licence")
	}
	srv := httptest.NewServer(dashboard.New(nil))
	defer srv.Close()
	for _, path := range []string{"/", "/app.js", "/style.css", "/vendor/uPlot.iife.min.js", "/vendor/uPlot.min.css", "/vendor/LICENSE"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", path, resp.Status)
		}
	}
}

// TestAPIChanges: the table of configuration changes lists every tuned
// leaf, not alpha only: a V_growth change by the tuner's rule growth and
// one by an operator the tuner saw, rule pinned's overload-cut on and an
// operator's off, and an operator's hold and release of the queue, each
// with who made it, the values before and after, and when (real
// PostgreSQL, through the API).
func TestAPIChanges(t *testing.T) {
	srv, fx, exec, pool := filledPool(t)
	ctx := context.Background()
	c := labtest.Congested
	keys := `{"name": "` + c.Interface + `", "id": "3"}`
	at := func(before time.Duration) time.Time { return fx.End.Add(-before) }

	// V_growth: 1 MB/s until 35 s before the end, then the tuner's 0.5 MB/s,
	// then an operator's 2 MB/s 15 s before the end.
	const vgPath = "/lhcnp/interfaces/interface/queues/queue/state/v-growth"
	var vgID int64
	if err := pool.QueryRow(ctx, `SELECT id FROM series WHERE target = $1 AND schema_path = $2 AND keys = $3::jsonb`,
		c.Target, vgPath, keys).Scan(&vgID); err != nil {
		t.Fatalf("the fixture's v-growth series: %v", err)
	}
	exec(`DELETE FROM samples WHERE series_id = $1 AND ts > $2`, vgID, at(36*time.Second))
	exec(`INSERT INTO samples (ts, series_id, v_int, batch_id) VALUES ($1, $3, 500000, 1), ($2, $3, 2000000, 1)`,
		at(35*time.Second), at(15*time.Second), vgID)
	exec(`INSERT INTO tuner_actions (ts, target, interface, queue, reason, before, after, outcome, dry_run) VALUES
		($1, 'n1', $3, 3, 'growth: the queue grows towards delay_high_rtt',
		 '{"kmax_mode": "BDP_ADAPTIVE", "alpha": 0.25, "v_growth_bytes_per_second": 1000000}',
		 '{"kmax_mode": "BDP_ADAPTIVE", "alpha": 0.25, "v_growth_bytes_per_second": 500000}', 'confirmed', false),
		($2, 'n1', $3, 3, 'operator: v-growth 500000 → 2000000 B/s set by another client (seen in telemetry)',
		 '{"kmax_mode": "BDP_ADAPTIVE", "alpha": 0.25, "v_growth_bytes_per_second": 500000}',
		 '{"kmax_mode": "BDP_ADAPTIVE", "alpha": 0.25, "v_growth_bytes_per_second": 2000000}', 'operator', false)`,
		at(35500*time.Millisecond), at(14*time.Second), c.Interface)
	exec(`UPDATE tuner_actions SET hold_until = ts + interval '15 minutes' WHERE outcome = 'operator'`)

	// overload-cut: off from the start, rule pinned's on 25 s before the
	// end, an operator's off 5 s before it (no row: the tuner has not
	// seen it yet).
	const cutPath = "/lhcnp/interfaces/interface/queues/queue/state/overload-cut"
	cutID := rows.SeriesID(c.Target, "/lhcnp/interfaces/interface[name=n1-wan]/queues/queue[id=3]/state/overload-cut")
	exec(`INSERT INTO series (id, target, path, schema_path, keys) VALUES ($1, $2,
		'/lhcnp/interfaces/interface[name=n1-wan]/queues/queue[id=3]/state/overload-cut', $3, $4::jsonb)`, cutID, c.Target, cutPath, keys)
	exec(`INSERT INTO samples (ts, series_id, v_bool, batch_id) VALUES ($1, $4, false, 1), ($2, $4, true, 1), ($3, $4, false, 1)`,
		fx.Start, at(25*time.Second), at(5*time.Second), cutID)
	exec(`INSERT INTO tuner_actions (ts, target, interface, queue, reason, before, after, outcome, dry_run) VALUES
		($1, 'n1', $2, 3, 'pinned: loss persists with the queue pinned at the buffer: overload_cut on',
		 '{"kmax_mode": "BDP_ADAPTIVE", "alpha": 0.25, "v_growth_bytes_per_second": 500000}',
		 '{"kmax_mode": "BDP_ADAPTIVE", "alpha": 0.25, "v_growth_bytes_per_second": 500000, "overload_cut": true}', 'confirmed', false)`,
		at(25500*time.Millisecond), c.Interface)
	// An operator's hold and release (lhcnp tuner hold / release).
	exec(`INSERT INTO tuner_actions (ts, target, interface, queue, reason, outcome, hold_until) VALUES
		($1, 'n1', $3, 3, 'operator-hold: held by an operator until later', 'operator', $1::timestamptz + interval '1 hour'),
		($2, 'n1', $3, 3, 'operator-release: released by an operator', 'operator', $2)`,
		at(20*time.Second), at(10*time.Second), c.Interface)

	var q dashboard.QueueResponse
	getJSON(t, srv.URL+"/api/queue?target=n1&interface=n1-wan&queue=3&window=10m", &q)
	show := func(v *float64) string {
		if v == nil {
			return "–"
		}
		return fmt.Sprint(*v)
	}
	var got []string
	for _, ch := range q.Changes {
		row := fmt.Sprintf("%s %s %s → %s by %s (%s)", time.UnixMicro(int64(ch.Time*1e6)).Sub(fx.End).Round(100*time.Millisecond),
			ch.Setting, show(ch.Before), show(ch.After), ch.By, ch.Rule)
		if ch.HoldUntil != nil {
			row += fmt.Sprintf(" held %s", time.UnixMicro(int64(*ch.HoldUntil*1e6)).Sub(fx.End).Round(time.Second))
		}
		got = append(got, row)
	}
	decided := fx.Decision.Truncate(time.Second).Add(time.Second).Sub(fx.End) // the fixture's alpha change: the next second's sample
	want := []string{
		"-35s v_growth 1e+06 → 500000 by tuner (growth)",
		fmt.Sprintf("%s alpha 0.5 → 0.25 by tuner (kmax)", decided.Round(100*time.Millisecond)),
		"-25s overload_cut 0 → 1 by tuner (pinned)",
		"-20s  – → – by hold (operator-hold) held 59m40s",
		"-15s v_growth 500000 → 2e+06 by operator (operator) held 14m46s",
		"-10s  – → – by release (operator-release)",
		"-5s overload_cut 1 → 0 by operator ()",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}
