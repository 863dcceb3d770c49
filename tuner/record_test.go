package tuner

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/migrations"
	"github.com/lhcnp/lhcnp/tuner/policy"
)

// TestPGRecorder writes a decision and its outcome into tuner_actions of a
// real PostgreSQL (the collector's schema) and reads them back: the
// decision's direction and, added with the outcome, its judgement are in
// inputs; an outcome without a judgement leaves inputs as they were.
func TestPGRecorder(t *testing.T) {
	ctx := context.Background()
	pool, _ := pgtest.New(t)
	rec := NewPGRecorder(pool)
	a := Action{Time: t1, Target: "n1", Interface: "wan0", Queue: 3, Rule: policy.RuleDelay,
		Reason: "queueing delay 2 RTT_est", Before: bdpSettings(1), After: bdpSettings(0.5), Outcome: OutcomePushed,
		Inputs: Inputs{Samples: 5, Rule: policy.RuleDelay, Direction: "tighten", Objective: 1.25, Metrics: policy.Metrics{Utilisation: 0.99, DelayRTT: 2}}}
	id, err := rec.Record(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	judged := &Judgement{ObjectiveBefore: 1.25, ObjectiveAfter: 2.5, Metrics: policy.Metrics{Utilisation: 0.5, DelayRTT: 2}}
	if err := rec.SetOutcome(ctx, id, OutcomeRolledBack, "objective worse", "", judged); err != nil {
		t.Fatal(err)
	}
	other, err := rec.Record(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.SetOutcome(ctx, other, OutcomeRefused, "", "set refused", nil); err != nil {
		t.Fatal(err)
	}
	if err := rec.SetOutcome(ctx, id+1000, OutcomeConfirmed, "", "", nil); err == nil {
		t.Error("SetOutcome of a missing row succeeded")
	}
	type got struct {
		Target, Interface, Reason, Outcome string
		Queue                              int
		DryRun                             bool
		Before, After                      policy.Settings
		Objective                          float64
		Utilisation                        float64
		Direction                          string
		Judgement                          *Judgement
	}
	var g got
	var before, after, inputs []byte
	err = pool.QueryRow(ctx, `SELECT target, interface, queue, reason, outcome, dry_run, before, after, inputs
		FROM tuner_actions WHERE id = $1`, id).Scan(&g.Target, &g.Interface, &g.Queue, &g.Reason, &g.Outcome, &g.DryRun, &before, &after, &inputs)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(before, &g.Before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(after, &g.After); err != nil {
		t.Fatal(err)
	}
	var in Inputs
	if err := json.Unmarshal(inputs, &in); err != nil {
		t.Fatal(err)
	}
	g.Objective, g.Utilisation, g.Direction, g.Judgement = in.Objective, in.Metrics.Utilisation, in.Direction, in.Judgement
	want := got{Target: "n1", Interface: "wan0", Queue: 3, Reason: "delay: queueing delay 2 RTT_est; objective worse",
		Outcome: "rolled-back", Before: bdpSettings(1), After: bdpSettings(0.5), Objective: 1.25, Utilisation: 0.99,
		Direction: "tighten", Judgement: judged}
	if diff := cmp.Diff(want, g); diff != "" {
		t.Errorf("tuner_actions row (-want +got):\n%s", diff)
	}
	var unjudged Inputs
	if err := pool.QueryRow(ctx, `SELECT inputs FROM tuner_actions WHERE id = $1`, other).Scan(&inputs); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(inputs, &unjudged); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a.Inputs, unjudged); diff != "" {
		t.Errorf("inputs of a row refused, unjudged (-want +got):\n%s", diff)
	}
}

// TestPGRecorderHold: migration 005 lets tuner_actions hold the outcome
// "hold" (a decision not to change, recorded once per episode) and still
// refuses an outcome it does not know; taken down to 004, the holds go and
// the old constraint refuses them again; up again, they are accepted.
func TestPGRecorderHold(t *testing.T) {
	ctx := context.Background()
	pool, dsn := pgtest.New(t)
	rec := NewPGRecorder(pool)
	hold := Action{Time: t1, Target: "n1", Interface: "wan0", Queue: 3, Rule: policy.RuleSteady,
		Reason: "inside the dead band", Before: bdpSettings(1), After: bdpSettings(1), Outcome: OutcomeHold}
	id, err := rec.Record(ctx, hold)
	if err != nil {
		t.Fatalf("recording a hold: %v", err)
	}
	var outcome, reason string
	if err := pool.QueryRow(ctx, `SELECT outcome, reason FROM tuner_actions WHERE id = $1`, id).Scan(&outcome, &reason); err != nil {
		t.Fatal(err)
	}
	if outcome != "hold" || reason != "steady: inside the dead band" {
		t.Errorf("row: outcome %q, reason %q", outcome, reason)
	}
	bogus := hold
	bogus.Outcome = "held"
	if _, err := rec.Record(ctx, bogus); err == nil || !strings.Contains(err.Error(), "tuner_actions_outcome_check") {
		t.Errorf("recording outcome %q: %v, want the CHECK constraint's refusal", bogus.Outcome, err)
	}

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := migrations.To(ctx, conn, 4); err != nil {
		t.Fatal(err)
	}
	var holds int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM tuner_actions WHERE outcome = 'hold'`).Scan(&holds); err != nil {
		t.Fatal(err)
	}
	if holds != 0 {
		t.Errorf("%d holds left after migrating down to 004", holds)
	}
	if _, err := rec.Record(ctx, hold); err == nil {
		t.Error("a hold was accepted by the schema of 004")
	}
	if err := migrations.Up(ctx, conn); err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Record(ctx, hold); err != nil {
		t.Errorf("recording a hold after migrating up again: %v", err)
	}
}

// TestPGRecorderWrittenOnce: on a real PostgreSQL (schema 23), a row
// written again with its key (a retry after a write whose answer was lost)
// is the same row, with the same id; an outcome written again appends its
// reason once; Forget deletes the row of a key and accepts a key never
// stored; actions without a key are rows of their own. Migrated down to 22
// the key is gone, and up again it works. It failed before schema 23: the
// second write was a second row, and the reason got the outcome's twice.
func TestPGRecorderWrittenOnce(t *testing.T) {
	ctx := context.Background()
	pool, dsn := pgtest.New(t)
	rec := NewPGRecorder(pool)
	a := Action{Time: t1, Target: "n1", Interface: "wan0", Queue: 3, Rule: policy.RuleDelay, Reason: "queueing delay 2 RTT_est",
		Before: bdpSettings(1), After: bdpSettings(0.5), Outcome: OutcomePushed, Key: "6f1c1d9e-51a1-4d0c-9a57-3f7f5c3b2a10"}
	id, err := rec.Record(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	again, err := rec.Record(ctx, a)
	if err != nil || again != id {
		t.Fatalf("the same key written again: id %d, %v; want %d", again, err, id)
	}
	for range 2 {
		if err := rec.SetOutcome(ctx, id, OutcomeConfirmed, "applied and kept", "", nil); err != nil {
			t.Fatal(err)
		}
	}
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(`SELECT count(*) FROM tuner_actions`); n != 1 {
		t.Errorf("%d rows; want 1", n)
	}
	var reason string
	if err := pool.QueryRow(ctx, `SELECT reason FROM tuner_actions WHERE id = $1`, id).Scan(&reason); err != nil {
		t.Fatal(err)
	}
	if want := "delay: queueing delay 2 RTT_est; applied and kept"; reason != want {
		t.Errorf("reason %q; want %q", reason, want)
	}
	// Another outcome after it still appends (pushed → error → rolled-back).
	if err := rec.SetOutcome(ctx, id, OutcomeRolledBack, "cancelled", "", nil); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT reason FROM tuner_actions WHERE id = $1`, id).Scan(&reason); err != nil {
		t.Fatal(err)
	}
	if want := "delay: queueing delay 2 RTT_est; applied and kept; cancelled"; reason != want {
		t.Errorf("reason %q; want %q", reason, want)
	}
	keyless := a
	keyless.Key = ""
	for range 2 {
		if _, err := rec.Record(ctx, keyless); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(`SELECT count(*) FROM tuner_actions`); n != 3 {
		t.Errorf("%d rows after two actions without a key; want 3", n)
	}
	if err := rec.Forget(ctx, a.Key); err != nil {
		t.Fatal(err)
	}
	if err := rec.Forget(ctx, "00000000-0000-0000-0000-000000000000"); err != nil {
		t.Errorf("Forget of a key never stored: %v", err)
	}
	if n := count(`SELECT count(*) FROM tuner_actions WHERE id = $1`, id); n != 0 {
		t.Errorf("the forgotten row is still there")
	}
	if n := count(`SELECT count(*) FROM tuner_actions`); n != 2 {
		t.Errorf("%d rows after Forget; want 2", n)
	}

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := migrations.To(ctx, conn, 22); err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Record(ctx, a); err == nil {
		t.Error("a keyed row was accepted by the schema of 22")
	}
	if err := migrations.Up(ctx, conn); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := rec.Record(ctx, a); err != nil {
			t.Fatalf("after migrating up again: %v", err)
		}
	}
	if n := count(`SELECT count(*) FROM tuner_actions WHERE action_key = $1`, a.Key); n != 1 {
		t.Errorf("%d rows of the key after migrating up again; want 1", n)
	}
}

// TestPGRecorderLastSettings: what a tuner started anew reads of each
// queue from tuner_actions of a real PostgreSQL — the newest row naming
// settings (a confirmed change's and an operator's after, any other row's
// before; a commit left pending or whose confirm failed may run either),
// and whether the queue was decided (a change confirmed, not a dry run, or
// an operator's change; a change rolled back or left pending, an
// operator's hold, a hold or a dry run is not one).
func TestPGRecorderLastSettings(t *testing.T) {
	ctx := context.Background()
	pool, _ := pgtest.New(t)
	rec := NewPGRecorder(pool)
	one, half, quarter := bdpSettings(1), bdpSettings(0.5), bdpSettings(0.25)
	at := func(i int) time.Time { return t1.Add(time.Duration(i) * time.Second) }
	ids := map[string]int64{}
	for i, r := range []struct {
		name, target, iface string
		outcome             Outcome
		rule                policy.Rule
		before, after       policy.Settings
		dryRun              bool
	}{
		{"q0 confirmed", "n1", "wan0", OutcomeConfirmed, policy.RuleDelay, one, half, false},
		{"q0 hold", "n1", "wan0", OutcomeHold, policy.RuleSteady, half, half, false},
		{"q1 hold", "n1", "wan1", OutcomeHold, policy.RuleSteady, one, one, false},
		{"q1 dry-run", "n1", "wan1", OutcomeDryRun, policy.RuleDelay, one, half, true},
		{"q2 rolled back", "n1", "wan2", OutcomeRolledBack, policy.RuleDelay, one, half, false},
		{"q3 operator", "n1", "wan3", OutcomeOperator, RuleOperator, half, quarter, false},
		{"q3 operator's hold", "n1", "wan3", OutcomeOperator, RuleOperatorHold, policy.Settings{}, policy.Settings{}, false},
		{"q4 pushed", "n1", "wan4", OutcomePushed, policy.RuleDelay, one, half, false},
		{"q5 operator's hold", "n1", "wan5", OutcomeOperator, RuleOperatorHold, policy.Settings{}, policy.Settings{}, false},
		{"q5 hold", "n1", "wan5", OutcomeHold, policy.RuleSteady, one, one, false},
		{"other switch", "n2", "wan0", OutcomeConfirmed, policy.RuleDelay, one, quarter, false},
	} {
		id, err := rec.Record(ctx, Action{Time: at(i), Target: r.target, Interface: r.iface, Rule: r.rule, Reason: r.name,
			Before: r.before, After: r.after, Outcome: r.outcome, DryRun: r.dryRun})
		if err != nil {
			t.Fatal(err)
		}
		ids[r.name] = id
	}
	got, err := rec.LastSettings(ctx, "n1")
	if err != nil {
		t.Fatal(err)
	}
	last := func(name string, i int, o Outcome, runs policy.Settings, or *policy.Settings, decided bool) LastSettings {
		return LastSettings{ID: ids[name], At: at(i), Outcome: o, Runs: runs, Or: or, Decided: decided}
	}
	want := map[QueueID]LastSettings{
		{"wan0", 0}: last("q0 hold", 1, OutcomeHold, half, nil, true),
		{"wan1", 0}: last("q1 dry-run", 3, OutcomeDryRun, one, nil, false),
		{"wan2", 0}: last("q2 rolled back", 4, OutcomeRolledBack, one, nil, false),
		{"wan3", 0}: last("q3 operator", 5, OutcomeOperator, quarter, nil, true),
		{"wan4", 0}: last("q4 pushed", 7, OutcomePushed, one, &half, false),
		{"wan5", 0}: last("q5 hold", 9, OutcomeHold, one, nil, false),
	}
	if d := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); d != "" {
		t.Errorf("LastSettings (-want +got):\n%s", d)
	}
	if got, err := rec.LastSettings(ctx, "n3"); err != nil || len(got) != 0 {
		t.Errorf("LastSettings of a switch with no rows: %v, %v; want none", got, err)
	}
}

// TestPGRecorderOperatorAtOnce: the same `lhcnp tuner hold` (and then
// `release`) run eight times at once, as a retry while the first is still
// under way, writes one row each: the queue's operator lock makes each run
// read the row of the one before it (before: each read no row and wrote
// its own, up to eight).
func TestPGRecorderOperatorAtOnce(t *testing.T) {
	ctx := context.Background()
	pool, _ := pgtest.New(t)
	rec := NewPGRecorder(pool)
	q := QueueID{Interface: "wan0", Queue: 3}
	const runs = 8
	for _, release := range []bool{false, true} {
		now := t1.Add(time.Minute)
		if release {
			now = now.Add(time.Minute)
		}
		var wg sync.WaitGroup
		recorded := make(chan bool, runs)
		for range runs {
			wg.Go(func() {
				var ok bool
				var err error
				if release {
					_, ok, err = rec.Release(ctx, "n1", q, now, "done")
				} else {
					_, ok, err = rec.Hold(ctx, "n1", q, now, now.Add(15*time.Minute), "maintenance")
				}
				if err != nil {
					t.Error(err)
				}
				recorded <- ok
			})
		}
		wg.Wait()
		close(recorded)
		n := 0
		for ok := range recorded {
			if ok {
				n++
			}
		}
		var rows int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM tuner_actions WHERE outcome = 'operator' AND ts = $1`, now).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if n != 1 || rows != 1 {
			t.Errorf("release %v: %d runs recorded, %d rows; want 1 and 1", release, n, rows)
		}
	}
}
