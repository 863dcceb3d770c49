package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/tuner"
	"github.com/lhcnp/lhcnp/tuner/policy"
)

// labStepAt is when the load step of TestLabLoadStepAnswered comes, in
// the lab's simulated time: after the tuner's first decisions on a start
// (the start rule's commits judged and confirmed), so that no commit of
// the tuner is pending when it comes.
const labStepAt = 14 * time.Second

// labStepFiles writes the lab's fabric file (examples/lab.yaml) and a
// scenario that is the lab's topology (scenarios/lab.yaml) with a load
// step for traffic: the main flow from source to dest across n1's WAN
// alone, then, at labStepAt, a second long-lived flow from a1 to b1 across
// the same WAN (a 2:1 overload of n1's WAN egress from then on).
func labStepFiles(t *testing.T) (fabric string) {
	t.Helper()
	dir := t.TempDir()
	sc, err := os.ReadFile("../../scenarios/lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	topo, _, ok := strings.Cut(string(sc), "\ntraffic:")
	if !ok {
		t.Fatal("scenarios/lab.yaml: no traffic section")
	}
	scenario := topo + fmt.Sprintf(`
traffic:
  flows:
    - {name: main, src: source, dst: dest, src_qp: 100, dst_qp: 200, start: 0s}
    - {name: step, src: a1, dst: b1, src_qp: 101, dst_qp: 201, start: %v}
`, labStepAt)
	scPath := filepath.Join(dir, "lab-step.yaml")
	if err := os.WriteFile(scPath, []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	fab, err := os.ReadFile("../../examples/lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Replace(string(fab), "scenario: ../scenarios/lab.yaml", "scenario: "+scPath, 1)
	f = strings.ReplaceAll(f, "config: lab-", "config: "+examples+"/lab-")
	if f == string(fab) {
		t.Fatal("examples/lab.yaml: no scenario line to replace")
	}
	fabric = filepath.Join(dir, "lab-step-fabric.yaml")
	if err := os.WriteFile(fabric, []byte(f), 0o644); err != nil {
		t.Fatal(err)
	}
	return fabric
}

// TestLabLoadStepAnswered measures issue 24's lab bar, "a load step in the
// lab's traffic is answered within 10 tuner periods": `lhcnp lab` with its
// real parts (PostgreSQL, the switches at the lab's speed, the collector,
// the tuner pushing), its traffic one long-lived flow across n1's WAN and,
// at labStepAt, a second one (labStepFiles). The step's instant is the
// collector's first sample of n1's WAN queue at a tenth of the port's BDP
// or more (R_port · RTT_est, as the queue shows it; before the step the
// one flow leaves no queue); the answer is the tuner's first tightening
// decision on that queue after it (rule loss, growth, delay or settle,
// tuner_actions), or the first period whose window shows the queue back
// in the policy's target (absorbedIn: the setting in force answered it,
// no change needed), whichever comes first; both are reported. The
// figures are tuner periods, counted from the rows' timestamps and the
// windows' ends (the tuner decides once a period), not wall time;
// docs/tuner.md reports them. The test fails only when neither comes
// within 30 periods.
func TestLabLoadStepAnswered(t *testing.T) {
	pgtest.Require(t)
	if os.Getenv("LHCNP_MEASURE_LAB_STEP") == "" {
		t.Skip("a measurement of minutes in wall time, not part of make test: make tuner-lab-step (LHCNP_MEASURE_LAB_STEP=1)")
	}
	period := tuner.DefaultConfig().Period
	l := startLab(t, labStateDir(t), "--fabric", labStepFiles(t), "--period", "0", "--websearch-load", "0")
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, l.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	// The step, as the collector stored it. Polled at the tuner's pace:
	// the lab runs in wall time; the deadline is generous (a loaded
	// machine slows the lab's engine).
	var step time.Time
	waitFor(t, "the load step in n1's WAN queue", 10*time.Minute, func() (bool, string) {
		err := pool.QueryRow(ctx, `
			SELECT min(c.ts) FROM queue_congestion c
			JOIN queue_latest l ON l.target = c.target AND l.interface = c.interface AND l.queue = c.queue
			WHERE c.target = 'n1' AND c.interface = 'wan' AND c.queue = 0
			  AND greatest(c.queue_depth_bytes, c.peak_queue_depth_bytes) >= 0.1 * l.port_rate_bps / 8.0 * l.rtt_est_us / 1e6`).Scan(&step)
		return err == nil && !step.IsZero(), fmt.Sprintf("no sample at a tenth of the BDP (%v)", err)
	})

	type row struct {
		ts                    time.Time
		rule, outcome, reason string
	}
	var rows []row
	// answer is the first tightening; seen the first decision whose rule
	// shows the step's queue (the node's trigger firing and the tuner
	// holding for it, a tightening held at its bound, a growth or delay).
	var answer, seen *row
	// absorbed is the first period after the step whose window (the
	// tuner's own, through its source, starting at the step at the
	// earliest) shows the queue back in the policy's target: the link used
	// at least utilisation_low, the queue (mean and last sample) under
	// delay_high_rtt, no loss above loss_high. A step the setting in force
	// holds there needs no change: the node answered it (0: not yet).
	absorbed, why, next := 0, "no window yet", 1 // next: the first period not yet read
	// horizon is how long after the step the test waits for a tightening;
	// the rows of the periods before it are logged too (what the tuner
	// was doing when the step came: a pending commit, a steady queue).
	const horizon, before = 30, 5
	waitFor(t, "the tuner's first tightening after the step", 15*time.Minute, func() (bool, string) {
		rs, err := pool.Query(ctx, `SELECT ts, coalesce(inputs ->> 'rule', ''), outcome, coalesce(reason, '') FROM tuner_actions
			WHERE target = 'n1' AND interface = 'wan' AND queue = 0 AND ts >= $1 ORDER BY ts, id`, step.Add(-before*period))
		if err != nil {
			return false, err.Error()
		}
		defer rs.Close()
		rows, answer, seen = rows[:0], nil, nil
		for rs.Next() {
			var r row
			if err := rs.Scan(&r.ts, &r.rule, &r.outcome, &r.reason); err != nil {
				return false, err.Error()
			}
			rows = append(rows, r)
		}
		if absorbed == 0 {
			var w string
			if absorbed, next, w = absorbedIn(ctx, pool, step, next, horizon); w != "" {
				why = w
			}
		}
		for i, r := range rows {
			if r.ts.Before(step) {
				continue
			}
			switch r.rule {
			case "loss", "growth", "delay", "settle":
				if seen == nil {
					seen = &rows[i]
				}
				if answer == nil {
					answer = &rows[i]
				}
			case "firing", "bound", "overrun", "draining":
				if seen == nil {
					seen = &rows[i]
				}
			}
		}
		if answer != nil && absorbed > 0 {
			return true, "" // both figures
		}
		var now time.Time
		if err := pool.QueryRow(ctx, `SELECT now()`).Scan(&now); err == nil && now.Sub(step) > horizon*period {
			return true, ""
		}
		return false, fmt.Sprintf("rows since the step: %+v", rows)
	})
	periods := func(r *row) int { return int(math.Ceil(float64(r.ts.Sub(step)) / float64(period))) }
	for _, r := range rows {
		t.Logf("+%.1f periods: %s %s: %s", float64(r.ts.Sub(step))/float64(period), r.rule, r.outcome, r.reason)
	}
	if answer == nil && absorbed == 0 {
		t.Fatalf("neither a tightening of n1's WAN queue nor its window back in the policy's target within %d periods of the load step at %v (%s)", horizon, step, why)
	}
	// The figures, for docs/tuner.md: the bar (10 periods) is reported,
	// not asserted, as the lab runs in wall time on a shared machine (an
	// engine that lags behind its pace spreads the same simulated time
	// over more periods). Answered: the first of the two.
	tightened, absorbedAt := "no tightening", "not back in the target"
	if answer != nil {
		tightened = fmt.Sprintf("tightened in %d (%s %s; seen in %d, %s %s)", periods(answer), answer.rule, answer.outcome, periods(seen), seen.rule, seen.outcome)
	}
	if absorbed > 0 {
		absorbedAt = fmt.Sprintf("back in the policy's target in %d (%s)", absorbed, why)
	}
	t.Logf("load step at %v: %s, %s within %d tuner periods; issue 24's bar: 10", step.Format(time.RFC3339Nano), tightened, absorbedAt, horizon)
}

// absorbedIn is the first of the periods after step (from … horizon, each
// as far as the database's clock has come; next is the first it did not
// read, for the next call) whose window, read as the tuner
// reads it (tuner.PGSource, its window but never before step), passes the
// policy's checks and shows n1's WAN queue in the policy's target: the link
// used at least utilisation_low, the queue under delay_high_rtt (mean and
// last sample), loss under loss_high; 0 when none, with the last window's
// figures ("" when it read none).
func absorbedIn(ctx context.Context, pool *pgxpool.Pool, step time.Time, from, horizon int) (found, next int, why string) {
	cfg := tuner.DefaultConfig()
	var now time.Time
	if err := pool.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		return 0, from, err.Error()
	}
	src := tuner.NewPGSource(pool)
	for k := from; k <= horizon; k++ {
		end := step.Add(time.Duration(k) * cfg.Period)
		if end.After(now) {
			return 0, k, why
		}
		wins, err := src.Windows(ctx, "n1", maxTime(step, end.Add(-cfg.Window)), end)
		if err != nil {
			return 0, k, err.Error()
		}
		for _, qw := range wins {
			if qw.Interface != "wan" || qw.Queue != 0 {
				continue
			}
			if rule, r := policy.Check(cfg.Policy, qw.Window); rule != "" {
				why = fmt.Sprintf("period %d: %s (%s)", k, rule, r)
				continue
			}
			m := policy.Measure(qw.Window)
			why = fmt.Sprintf("period %d: link %.1f%% used, queue %.3g RTT_est (last %.3g), loss %.3g", k, 100*m.Utilisation, m.DelayRTT, m.LastDelayRTT, m.Loss)
			if m.Utilisation >= cfg.Policy.UtilisationLow && max(m.DelayRTT, m.LastDelayRTT) <= cfg.Policy.DelayHighRTT && m.Loss <= cfg.Policy.LossHigh {
				return k, k + 1, why
			}
		}
	}
	return 0, horizon + 1, why
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// TestMakeGatesOutsideCLIPrefixes keeps the variables the Makefile sets to
// switch a test on (LHCNP_MEASURE_LAB_STEP, …) out of the prefixes the
// subcommands read their configuration from: `lhcnp lab` refuses an unknown
// LHCNP_LAB_ variable, so a gate named LHCNP_LAB_STEP, inherited by the lab
// the test starts, stopped make tuner-lab-step before its banner.
func TestMakeGatesOutsideCLIPrefixes(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	prefixes := []string{"LHCNP_LAB_", "LHCNP_COLLECTOR_", "LHCNP_TUNER_", switchEnvPrefix, "LHCNP_MIGRATE_"}
	re := regexp.MustCompile(`\b(LHCNP_[A-Z0-9_]+)=`)
	found := 0
	for i, line := range strings.Split(string(mk), "\n") {
		for _, m := range re.FindAllStringSubmatch(line, -1) {
			found++
			for _, p := range prefixes {
				if strings.HasPrefix(m[1], p) {
					t.Errorf("Makefile:%d: %s is under %s, which a subcommand reads its configuration from (and refuses unknown names)", i+1, m[1], p)
				}
			}
		}
	}
	if found == 0 {
		t.Error("Makefile: no LHCNP_ variable set: the check reads nothing (the make tuner-lab-step gate is gone?)")
	}
}
