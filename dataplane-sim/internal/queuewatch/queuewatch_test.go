package queuewatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/internal/queuewatch"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/dataplane-sim/sim"
)

// TestOneRegistration: the kind registered by the package's one
// install.Register call is named by a scenario file, read with its params,
// run by the batch runner, and its counters and notifications are in
// summary.json.
func TestOneRegistration(t *testing.T) {
	if !slices.Contains(scenario.MechanismKinds(), queuewatch.Kind) {
		t.Fatalf("scenario kinds %v lack %s", scenario.MechanismKinds(), queuewatch.Kind)
	}
	sc, err := scenario.LoadFile("testdata/queue-watch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := queuewatch.Params{Threshold: 50 * scenario.KB, Hysteresis: 10 * scenario.KB}
	if got := scenario.ParamsOf[queuewatch.Params](sc.Mechanism); got != want {
		t.Errorf("params %+v, want %+v", got, want)
	}
	if got := scenario.DefaultParams(queuewatch.Kind, []string{"tor"}); got != queuewatch.DefaultParams() {
		t.Errorf("DefaultParams = %+v, want %+v", got, queuewatch.DefaultParams())
	}
	dir := t.TempDir()
	if _, err := sim.Run(context.Background(), sc, dir, sim.WithoutPlots(), sim.WithoutSeries()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, sim.SummaryJSON))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Mechanism         string           `json:"mechanism"`
		Notifications     map[string]int64 `json:"notifications"`
		MechanismCounters map[string]int64 `json:"mechanism_counters"`
	}
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	c := sum.MechanismCounters
	t.Logf("mechanism_counters %v, notifications %v", c, sum.Notifications)
	if sum.Mechanism != string(queuewatch.Kind) || c["queue_watch_crossings"] == 0 || c["max_queue_watch_bytes"] <= 50_000 {
		t.Errorf("summary.json: mechanism %q, mechanism_counters %v; want queue-watch, crossings and a queue above 50 KB",
			sum.Mechanism, c)
	}
	if n := sum.Notifications[string(queuewatch.Kind)]; n != c["queue_watch_crossings"] {
		t.Errorf("notifications %v: %d queue-watch, want the %d crossings", sum.Notifications, n, c["queue_watch_crossings"])
	}
}

// TestBadParams: the kind's reader reports with the loader's file, line
// and key.
func TestBadParams(t *testing.T) {
	base, err := os.ReadFile("testdata/queue-watch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	line := 1 + strings.Count(string(base[:strings.Index(string(base), "    threshold:")]), "\n")
	for _, tt := range []struct {
		desc, old, new string
		line           int
		field, reason  string
	}{
		{"zero size", "threshold: 50KB", "threshold: 0KB", line, "mechanism.params.threshold", "must be greater than zero"},
		{"negative size", "threshold: 50KB", "threshold: -50KB", line, "mechanism.params.threshold", "negative value"},
		{"not a size", "threshold: 50KB", "threshold: 50 apples", line, "mechanism.params.threshold", "unit"},
		{"unknown key", "threshold: 50KB", "thresh: 50KB", line, "mechanism.params.thresh", "unknown field (want one of: threshold, hysteresis)"},
		{"cross-key check", "hysteresis: 10KB", "hysteresis: 60KB", line + 1, "mechanism.params.hysteresis", "60KB must be below the threshold 50KB"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			_, err := scenario.Parse("queue-watch.yaml", []byte(strings.Replace(string(base), tt.old, tt.new, 1)))
			errs := scenario.Errors(err)
			if len(errs) != 1 {
				t.Fatalf("Parse = %v, want one error", err)
			}
			e := errs[0]
			if e.File != "queue-watch.yaml" || e.Line != tt.line || e.Field != tt.field || !strings.Contains(e.Reason, tt.reason) {
				t.Errorf("error %q, want queue-watch.yaml:%d: %s: ...%s...", e, tt.line, tt.field, tt.reason)
			}
		})
	}
}

// TestCutRefused: a kind registered without install.Kind.Cut (this toy
// does not declare itself cut-safe) is refused on a scenario cut into
// partitions.
func TestCutRefused(t *testing.T) {
	sc, err := scenario.LoadFile(filepath.Join("..", "..", "..", "scenarios", "two-dc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ns := []string{"dci-a", "dci-b"}
	sc.Mechanism = scenario.Mechanism{Kind: queuewatch.Kind, Nodes: ns, Params: scenario.DefaultParams(queuewatch.Kind, ns)}
	_, err = sim.Run(context.Background(), sc, t.TempDir(), sim.WithoutPlots(), sim.WithoutSeries())
	if !errors.Is(err, sim.ErrNotPartitioned) {
		t.Errorf("queue-watch on two-dc: %v, want ErrNotPartitioned", err)
	}
}
