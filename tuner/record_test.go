package tuner

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/tuner/policy"
)

// TestPGRecorder writes a decision and its outcome into tuner_actions of a
// real PostgreSQL (the collector's schema) and reads them back.
func TestPGRecorder(t *testing.T) {
	ctx := context.Background()
	pool, _ := pgtest.New(t)
	rec := NewPGRecorder(pool)
	a := Action{Time: t1, Target: "n1", Interface: "wan0", Queue: 3, Rule: policy.RuleDelay,
		Reason: "queueing delay 2 RTT_est", Before: bdpSettings(1), After: bdpSettings(0.5), Outcome: OutcomePushed,
		Inputs: Inputs{Samples: 5, Rule: policy.RuleDelay, Objective: 1.25, Metrics: policy.Metrics{Utilisation: 0.99, DelayRTT: 2}}}
	id, err := rec.Record(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.SetOutcome(ctx, id, OutcomeRolledBack, "objective worse", ""); err != nil {
		t.Fatal(err)
	}
	if err := rec.SetOutcome(ctx, id+1000, OutcomeConfirmed, "", ""); err == nil {
		t.Error("SetOutcome of a missing row succeeded")
	}
	type got struct {
		Target, Interface, Reason, Outcome string
		Queue                              int
		DryRun                             bool
		Before, After                      policy.Settings
		Objective                          float64
		Utilisation                        float64
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
	g.Objective, g.Utilisation = in.Objective, in.Metrics.Utilisation
	want := got{Target: "n1", Interface: "wan0", Queue: 3, Reason: "delay: queueing delay 2 RTT_est; objective worse",
		Outcome: "rolled-back", Before: bdpSettings(1), After: bdpSettings(0.5), Objective: 1.25, Utilisation: 0.99}
	if diff := cmp.Diff(want, g); diff != "" {
		t.Errorf("tuner_actions row (-want +got):\n%s", diff)
	}
}
