package tuner

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openconfig/ygnmi/ygnmi"
	"google.golang.org/grpc"

	"github.com/lhcnp/lhcnp/gen/client/oc/ocpath"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/tuner/policy"
)

// cutRow is what the pinned tests compare of a tuner_actions row: the
// rule, the outcome, alpha and overload_cut in before and after as the
// JSON carries them (overload_cut omitted when off), and whether the reason
// speaks of the option, and the decision's direction (inputs' direction).
type cutRow struct {
	Rule, Outcome       string
	CutBefore, CutAfter bool
	AlphaBefore, Alpha  float64
	Held                bool
	ReasonNamesCut      bool
	Direction           string
}

func cutRows(t *testing.T, ctx context.Context, rec *PGRecorder, target string) []cutRow {
	t.Helper()
	rows, err := rec.pool.Query(ctx, `
		SELECT split_part(reason, ':', 1), outcome,
		       coalesce((before ->> 'overload_cut')::boolean, false), coalesce((after ->> 'overload_cut')::boolean, false),
		       coalesce((before ->> 'alpha')::float8, 0), coalesce((after ->> 'alpha')::float8, 0),
		       hold_until IS NOT NULL, reason ~ 'overload[-_]cut', coalesce(inputs ->> 'direction', '')
		FROM tuner_actions WHERE target = $1 ORDER BY id`, target)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []cutRow
	for rows.Next() {
		var r cutRow
		if err := rows.Scan(&r.Rule, &r.Outcome, &r.CutBefore, &r.CutAfter, &r.AlphaBefore, &r.Alpha, &r.Held, &r.ReasonNamesCut, &r.Direction); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// switchCut is the overload-cut the switch's node runs (its state).
func switchCut(t *testing.T, yc *ygnmi.Client) bool {
	t.Helper()
	c, err := ygnmi.Get(context.Background(), yc, ocpath.Root().Lhcnp().Interface("wan0").Queue(0).OverloadCut().State(), ygnmi.WithUseGet())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// pinnedTraffic is a queue standing at 1.9 RTT_est, 95 % of a 2 RTT_est
// buffer, dropping 5 % of its packets, until the node runs overload-cut:
// then it is at 0.1 RTT_est and loses none.
func pinnedTraffic(_ string, s policy.Settings) traffic {
	if s.OverloadCut {
		return traffic{delayRTT: 0.1, util: 0.95}
	}
	return traffic{delayRTT: 1.9, util: 0.99, loss: 0.05}
}

// pinnedBufferBytes is pinnedTraffic's buffer: 2 RTT_est at the script's
// port rate.
const pinnedBufferBytes = 2 * srcRate / 8 * int64(srcRTT/time.Millisecond) / 1000

// pinnedLoop is the service's loop over one switch whose queue pins at
// the buffer until it runs overload-cut (pinnedTraffic), with a private
// PostgreSQL for tuner_actions, on the test's clock. opts are the switch's
// (interceptors that make it misbehave).
type pinnedLoop struct {
	t    *testing.T
	cfg  Config
	tu   *Tuner
	rec  *PGRecorder
	pub  interface{ PublishNow(context.Context) error }
	addr string
	yc   *ygnmi.Client
	src  Source
	at   time.Time
}

func newPinnedLoop(t *testing.T, opts ...service.Option) *pinnedLoop {
	pool, _ := pgtest.New(t)
	addr, pub := testSwitch(t, opts...)
	l := &pinnedLoop{t: t, rec: NewPGRecorder(pool), pub: pub, addr: addr, yc: ygnmiClient(t, addr), at: t1}
	l.cfg = testConfig(SwitchConfig{Name: "n1", Address: addr, Insecure: true})
	l.src = &scriptSource{clients: map[string]*ygnmi.Client{"n1": l.yc}, traffic: pinnedTraffic, bufferBytes: pinnedBufferBytes}
	l.tu, _ = newLoop(t, l.cfg, l.src, l.rec)
	return l
}

// restart replaces the tuner by a new one (the service started anew: no
// memory but the audit trail's).
func (l *pinnedLoop) restart() {
	l.t.Helper()
	if err := l.tu.Release(context.Background(), l.at); err != nil {
		l.t.Fatal(err)
	}
	l.tu, _ = newLoop(l.t, l.cfg, l.src, l.rec)
}

// cycle runs the loop at l.at and moves the clock on by a period.
func (l *pinnedLoop) cycle() {
	l.t.Helper()
	if err := l.step(); err != nil {
		l.t.Fatalf("Cycle at %v: %v", l.at.Add(-l.cfg.Period).Sub(t1), err)
	}
}

// step is cycle returning the cycle's error.
func (l *pinnedLoop) step() error {
	l.t.Helper()
	ctx := context.Background()
	err := l.tu.Cycle(ctx, l.at)
	if err := l.pub.PublishNow(ctx); err != nil {
		l.t.Fatal(err)
	}
	l.at = l.at.Add(l.cfg.Period)
	return err
}

func (l *pinnedLoop) rows() []cutRow { return cutRows(l.t, context.Background(), l.rec, "n1") }

// pinnedPeriods bounds the periods the tests wait for the loop to act.
const pinnedPeriods = 20

// escalate runs the loop until the tuner has switched overload-cut on and
// kept it: a bound hold (rule loss cannot lower alpha under the queue),
// then rule pinned.
func (l *pinnedLoop) escalate() {
	l.t.Helper()
	for range pinnedPeriods {
		l.cycle()
		if switchCut(l.t, l.yc) && !l.tu.Pending("n1") {
			break
		}
	}
	if !switchCut(l.t, l.yc) || l.tu.Pending("n1") {
		l.t.Fatalf("overload-cut %v, pending %v after %d periods; tuner_actions %+v", switchCut(l.t, l.yc), l.tu.Pending("n1"), pinnedPeriods, l.rows())
	}
	if diff := cmp.Diff([]cutRow{pinnedBound, pinnedOn}, l.rows()); diff != "" {
		l.t.Fatalf("tuner_actions up to the escalation (-want +got):\n%s", diff)
	}
}

// untilJudged runs the loop until the newest row after the escalation's
// is judged (or pinnedPeriods have passed).
func (l *pinnedLoop) untilJudged() {
	l.t.Helper()
	for range pinnedPeriods {
		l.cycle()
		if rows := l.rows(); len(rows) > 2 && rows[len(rows)-1].Outcome != string(OutcomePushed) {
			return
		}
	}
}

// The rows of an escalation (alpha stays 1: the example switch's; the
// bound hold is loss's, a tightening held back; the on a tightening), and of
// the off that follows once the queue is calm (a loosening), rolled back
// when it pins again.
var (
	pinnedBound = cutRow{Rule: string(policy.RuleBound), Outcome: string(OutcomeHold), AlphaBefore: 1, Alpha: 1,
		Direction: policy.Tighten.String()}
	pinnedOn = cutRow{Rule: string(policy.RulePinned), Outcome: string(OutcomeConfirmed), CutAfter: true, AlphaBefore: 1, Alpha: 1, ReasonNamesCut: true,
		Direction: policy.Tighten.String()}
	pinnedOffRolledBack = cutRow{Rule: string(policy.RulePinned), Outcome: string(OutcomeRolledBack), CutBefore: true, AlphaBefore: 1, Alpha: 1, ReasonNamesCut: true,
		Direction: policy.Loosen.String()}
)

// TestTunerPinned: rule pinned in the service, end to end with real parts
// but the traffic (a private PostgreSQL for tuner_actions, the switch
// target on loopback with its dataplane binding, the tuner's loop on the
// test's clock; the scriptSource makes up the queue's samples from the
// settings the switch runs, overload-cut included). A queue pinned at the
// buffer loses packets: rule loss cannot lower alpha under a queue that
// stands above the K_max it would give (a bound hold, the loss streak's
// first); the loss persists, and rule pinned switches overload-cut on; the
// switch's node runs it, the queue leaves the buffer, the commit is
// confirmed. In the first decided window past the cool-down the queue has
// ended below K_min for the whole window, far more than pinned_off_rtt
// RTT_est (a window of the service is 1000 of the script's RTT_est): rule
// pinned switches the option off; the queue pins again, the judge window
// is worse, and the rollback brings the option back on at the switch;
// rule loss answers the drops of that judge window, and the next off-try
// needs twice the calm (met again by the next calm window) and is rolled
// back too, doubling it once more.
// tuner_actions' before/after carry it. The hold's memory matters: without
// it the bound hold's loss streak is lost and the rule never fires.
func TestTunerPinned(t *testing.T) {
	l := newPinnedLoop(t)
	l.escalate()
	escalated := l.at
	l.untilJudged()
	if diff := cmp.Diff([]cutRow{pinnedBound, pinnedOn, pinnedOffRolledBack}, l.rows()); diff != "" {
		t.Errorf("tuner_actions after the escalation (-want +got):\n%s", diff)
	}
	if !switchCut(t, l.yc) || switchAlpha(t, l.yc) != 1 {
		t.Errorf("after the rollback the switch runs overload-cut %v, alpha %v; want on, 1", switchCut(t, l.yc), switchAlpha(t, l.yc))
	}
	t.Logf("overload-cut on %v after the first window, off tried and rolled back %v after that", escalated.Sub(t1), l.at.Sub(escalated))
	// The service's rollback (the tuner's cancel) is the policy's Reverted:
	// the next off-try needs twice the calm (pinned_off_rtt × 2), met
	// again by the service's first calm window (1000 RTT_est) past the
	// cool-down, and its rollback doubles it once more.
	k := queueKey{target: "n1", iface: "wan0", queue: 0}
	if m := l.tu.mem[k]; !m.CutOn || m.CutOffRollbacks != 1 || m.CutOffTrying {
		t.Errorf("memory after the rolled-back off-try: %+v; want the claim kept and one off-try rolled back", m)
	}
	for range pinnedPeriods {
		l.cycle()
		if rows := l.rows(); len(rows) > 4 && rows[len(rows)-1].Outcome != string(OutcomePushed) {
			break
		}
	}
	// Between the two: the drops of the off-try's judge window, answered
	// by rule loss (alpha 1 → 0.667, the step halved by the rollback).
	lossKept := cutRow{Rule: string(policy.RuleLoss), Outcome: string(OutcomeConfirmed), CutBefore: true, CutAfter: true, AlphaBefore: 1, Alpha: 0.667,
		Direction: policy.Tighten.String()}
	offAgain := pinnedOffRolledBack
	offAgain.AlphaBefore, offAgain.Alpha = 0.667, 0.667
	if diff := cmp.Diff([]cutRow{pinnedBound, pinnedOn, pinnedOffRolledBack, lossKept, offAgain}, l.rows()); diff != "" {
		t.Errorf("tuner_actions after the second off-try (-want +got):\n%s", diff)
	}
	var reason string
	if err := l.rec.pool.QueryRow(context.Background(), `SELECT reason FROM tuner_actions ORDER BY id DESC LIMIT 1`).Scan(&reason); err != nil {
		t.Fatal(err)
	}
	if want := "(pinned_off_rtt 16 × 2^1 after 1 rolled-back off-try)"; !strings.Contains(reason, want) {
		t.Errorf("the second off-try's reason %q does not say %q", reason, want)
	}
	if m := l.tu.mem[k]; !m.CutOn || m.CutOffRollbacks != 2 {
		t.Errorf("memory after the second rolled-back off-try: %+v; want two", m)
	}
}

// TestOperatorOverloadCut: the operator's overload-cut (gnmic's Set of
// queues/queue/config/overload-cut), seen in telemetry, is recorded as
// outcome operator with the value and holds the queue as any tuned leaf;
// and the tuner never switches off a leaf it did not switch on. After the
// tuner's escalation (TestTunerPinned) the operator switches the option off:
// recorded, the queue held although it pins again and loses packets; then on
// again: recorded, held anew. Past the hold the queue is calm for many
// cool-downs, where the tuner switched its own leaf off at once
// (TestTunerPinned), but this one is the operator's: it stays on.
func TestOperatorOverloadCut(t *testing.T) {
	l := newPinnedLoop(t)
	l.escalate()
	set := func(v string) {
		t.Helper()
		if out, err := operatorSetLeaf(t, l.addr, "overload-cut", v); err != nil {
			t.Fatalf("gnmic set overload-cut %s: %v\n%s", v, err, out)
		}
		if err := l.pub.PublishNow(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := switchCut(t, l.yc); got != (v == "true") {
			t.Fatalf("the switch runs overload-cut %v after gnmic set it %s", got, v)
		}
	}
	set("false")
	l.cycle()
	heldOff := l.at
	offRow := cutRow{Rule: string(RuleOperator), Outcome: string(OutcomeOperator), CutBefore: true, AlphaBefore: 1, Alpha: 1, Held: true, ReasonNamesCut: true}
	if diff := cmp.Diff([]cutRow{pinnedBound, pinnedOn, offRow}, l.rows()); diff != "" {
		t.Fatalf("tuner_actions after the operator's off (-want +got):\n%s", diff)
	}
	var reason string
	if err := l.rec.pool.QueryRow(context.Background(), `SELECT reason FROM tuner_actions WHERE outcome = 'operator'`).Scan(&reason); err != nil {
		t.Fatal(err)
	}
	if want := "overload-cut true → false set by another client"; !strings.Contains(reason, want) {
		t.Errorf("the operator's row says %q; want %q", reason, want)
	}
	// Held: the queue pins and drops, and the tuner does nothing.
	for range 3 {
		l.cycle()
	}
	if got := l.rows(); len(got) != 3 || switchCut(t, l.yc) || l.tu.Pending("n1") {
		t.Fatalf("during the operator's hold: tuner_actions %+v, overload-cut %v, pending %v; want the operator's off untouched",
			got[3:], switchCut(t, l.yc), l.tu.Pending("n1"))
	}
	set("true")
	l.cycle()
	onRow := offRow
	onRow.CutBefore, onRow.CutAfter = false, true
	if diff := cmp.Diff([]cutRow{pinnedBound, pinnedOn, offRow, onRow}, l.rows()); diff != "" {
		t.Fatalf("tuner_actions after the operator's on (-want +got):\n%s", diff)
	}
	// Past the hold, calm for ten cool-downs: decided on, never switched.
	l.at = heldOff.Add(l.cfg.OperatorHold + l.cfg.Period)
	for range 10 * int(l.cfg.Policy.Cooldown/l.cfg.Period) {
		l.cycle()
	}
	got := l.rows()
	for _, r := range got[4:] {
		if r.Outcome != string(OutcomeHold) || r.CutAfter != r.CutBefore {
			t.Errorf("after the hold: %+v; want holds only", r)
		}
	}
	if len(got) == 4 || !switchCut(t, l.yc) {
		t.Errorf("after the hold: rows %+v, overload-cut %v; want the queue decided on (a hold) and the operator's on kept", got[4:], switchCut(t, l.yc))
	}
}

// TestTunerPinnedRestart: the tuner's claim on the overload-cut it switched
// on survives a restart of the service through tuner_actions
// (PGRecorder.TunersCuts): a tuner started anew finds the leaf on, takes
// it for its own and switches it off once the queue is calm, as the one
// that switched it on would have (TestTunerPinned). A leaf the operator set
// last is not the tuner's after a restart either: left on.
func TestTunerPinnedRestart(t *testing.T) {
	t.Run("the tuner's", func(t *testing.T) {
		l := newPinnedLoop(t)
		l.escalate()
		l.restart()
		l.at = l.at.Add(l.cfg.Policy.Cooldown)
		l.untilJudged()
		if diff := cmp.Diff([]cutRow{pinnedBound, pinnedOn, pinnedOffRolledBack}, l.rows()); diff != "" {
			t.Errorf("tuner_actions after the restart (-want +got):\n%s", diff)
		}
	})
	t.Run("the operator's", func(t *testing.T) {
		l := newPinnedLoop(t)
		l.escalate()
		for _, v := range []string{"false", "true"} {
			if out, err := operatorSetLeaf(t, l.addr, "overload-cut", v); err != nil {
				t.Fatalf("gnmic set overload-cut %s: %v\n%s", v, err, out)
			}
			if err := l.pub.PublishNow(context.Background()); err != nil {
				t.Fatal(err)
			}
			l.cycle() // seen and recorded: the operator's
		}
		n := len(l.rows())
		l.restart()
		l.at = l.at.Add(l.cfg.OperatorHold)
		for range 10 * int(l.cfg.Policy.Cooldown/l.cfg.Period) {
			l.cycle()
		}
		got := l.rows()
		for _, r := range got[n:] {
			if r.Outcome != string(OutcomeHold) || r.CutAfter != r.CutBefore {
				t.Errorf("after the restart: %+v; want holds only", r)
			}
		}
		if len(got) == n || !switchCut(t, l.yc) {
			t.Errorf("after the restart: rows %+v, overload-cut %v; want the queue decided on and the operator's on kept", got[n:], switchCut(t, l.yc))
		}
	})
}

// tunersCuts is what PGRecorder.TunersCuts restores of switch n1.
func (l *pinnedLoop) tunersCuts() map[QueueID]CutClaim {
	l.t.Helper()
	c, err := l.rec.TunersCuts(context.Background(), "n1")
	if err != nil {
		l.t.Fatal(err)
	}
	return c
}

// untilOffTried runs the loop until rule pinned's next off-try is done
// with (judged, refused or undone; at most pinnedPeriods), and returns its
// row's reason and judgement.
func (l *pinnedLoop) untilOffTried() (reason string, j *Judgement) {
	l.t.Helper()
	n := len(l.rows())
	for range pinnedPeriods {
		l.cycle()
		rows := l.rows()
		for i := n; i < len(rows); i++ {
			if r := rows[i]; r.Rule == string(policy.RulePinned) && r.CutBefore && !r.CutAfter && r.Outcome != string(OutcomePushed) {
				var inputs []byte
				if err := l.rec.pool.QueryRow(context.Background(), `SELECT reason, inputs FROM tuner_actions WHERE target = 'n1' ORDER BY id OFFSET $1 LIMIT 1`, i).
					Scan(&reason, &inputs); err != nil {
					l.t.Fatal(err)
				}
				var in Inputs
				if err := json.Unmarshal(inputs, &in); err != nil {
					l.t.Fatal(err)
				}
				return reason, in.Judgement
			}
		}
	}
	l.t.Fatalf("no off-try done in %d periods; tuner_actions %+v", pinnedPeriods, l.rows()[n:])
	return "", nil
}

// wan0 is the pinned loop's queue.
var wan0 = QueueID{Interface: "wan0", Queue: 0}

// TestTunerPinnedRestartBackoff: the off-tries' back-off survives a restart
// of the service as the claim does (issue #24): PGRecorder.TunersCuts counts
// the off-tries of rule pinned judged worse and rolled back since the
// tuner switched the leaf on (the judgement is in each row's inputs), and a
// tuner started anew waits the doubled calm, as the one that counted them
// would have (TestTunerPinned); before, it started again from
// pinned_off_rtt. The restored count goes on: the next rollback makes it 2,
// restored as 2 by the next restart.
func TestTunerPinnedRestartBackoff(t *testing.T) {
	l := newPinnedLoop(t)
	l.escalate()
	if diff := cmp.Diff(map[QueueID]CutClaim{wan0: {}}, l.tunersCuts()); diff != "" {
		t.Errorf("TunersCuts after the escalation (-want +got):\n%s", diff)
	}
	reason, j := l.untilOffTried()
	if j == nil || j.Keep || strings.Contains(reason, "× 2^") {
		t.Fatalf("the first off-try: judgement %+v, reason %q; want judged worse after pinned_off_rtt", j, reason)
	}
	if diff := cmp.Diff(map[QueueID]CutClaim{wan0: {OffRollbacks: 1}}, l.tunersCuts()); diff != "" {
		t.Errorf("TunersCuts after one off-try judged worse (-want +got):\n%s", diff)
	}
	k := queueKey{target: "n1", iface: "wan0", queue: 0}
	for n := 1; n <= 2; n++ {
		l.restart()
		reason, j = l.untilOffTried()
		if m := l.tu.mem[k]; !m.CutOn || m.CutOffRollbacks != n+1 {
			t.Errorf("restart %d: memory after the off-try %+v; want the claim and %d off-tries rolled back", n, m, n+1)
		}
		tries := "off-tries"
		if n == 1 {
			tries = "off-try"
		}
		if want := fmt.Sprintf("(pinned_off_rtt 16 × 2^%d after %d rolled-back %s)", n, n, tries); !strings.Contains(reason, want) {
			t.Errorf("restart %d: the off-try's reason %q does not say %q", n, reason, want)
		}
		if j == nil || j.Keep {
			t.Errorf("restart %d: judgement %+v; want worse", n, j)
		}
		if diff := cmp.Diff(map[QueueID]CutClaim{wan0: {OffRollbacks: n + 1}}, l.tunersCuts()); diff != "" {
			t.Errorf("restart %d: TunersCuts (-want +got):\n%s", n, diff)
		}
	}
}

// TestTunerPinnedOffUnjudged: an off-try of rule pinned that is not judged
// worse is not counted in the back-off (issue #24): the switch refusing the
// Set, or the tuner stopping before the judge window (its Release cancels
// the commit, recorded rolled-back) says nothing of the queue without the
// overload-cut. The next off-try waits pinned_off_rtt, not twice it, and
// a restart restores no back-off either; one judged worse counts, as
// before (TestTunerPinned).
func TestTunerPinnedOffUnjudged(t *testing.T) {
	k := queueKey{target: "n1", iface: "wan0", queue: 0}
	t.Run("refused", func(t *testing.T) {
		var refusing atomic.Bool
		refuse := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if refusing.Load() {
				return refuseSet(ctx, req, info, h)
			}
			return h(ctx, req)
		}
		l := newPinnedLoop(t, service.WithInterceptors([]grpc.UnaryServerInterceptor{refuse}, nil))
		l.escalate()
		refusing.Store(true)
		var err error
		for range pinnedPeriods {
			if err = l.step(); err != nil {
				break
			}
		}
		refusing.Store(false)
		if err == nil || !strings.Contains(err.Error(), "set refused by test") {
			t.Fatalf("the cycles with the Set refused: %v; want the switch's refusal", err)
		}
		refused := pinnedOffRolledBack
		refused.Outcome = string(OutcomeRefused)
		if diff := cmp.Diff([]cutRow{pinnedBound, pinnedOn, refused}, l.rows()); diff != "" {
			t.Fatalf("tuner_actions after the refused off-try (-want +got):\n%s", diff)
		}
		if m := l.tu.mem[k]; !m.CutOn || m.CutOffRollbacks != 0 || m.CutOffTrying {
			t.Errorf("memory after the refused off-try %+v; want the claim, no back-off", m)
		}
		if !switchCut(t, l.yc) {
			t.Error("the switch runs overload-cut off after a refused Set")
		}
		reason, j := l.untilOffTried()
		if strings.Contains(reason, "× 2^") || j == nil || j.Keep {
			t.Errorf("the off-try after the refused one: reason %q, judgement %+v; want pinned_off_rtt, judged worse", reason, j)
		}
		if m := l.tu.mem[k]; m.CutOffRollbacks != 1 {
			t.Errorf("memory after the off-try judged worse %+v; want one off-try counted", m)
		}
		if diff := cmp.Diff(map[QueueID]CutClaim{wan0: {OffRollbacks: 1}}, l.tunersCuts()); diff != "" {
			t.Errorf("TunersCuts: the refused off-try counted (-want +got):\n%s", diff)
		}
	})
	t.Run("the tuner stopped before judging it", func(t *testing.T) {
		l := newPinnedLoop(t)
		l.escalate()
		for range pinnedPeriods {
			l.cycle()
			if l.tu.Pending("n1") {
				break
			}
		}
		if got := l.rows(); !l.tu.Pending("n1") || got[len(got)-1].Rule != string(policy.RulePinned) || got[len(got)-1].CutAfter {
			t.Fatalf("no off-try pending in %d periods: %+v", pinnedPeriods, got)
		}
		l.restart() // the old tuner's Release: cancelled, rolled-back, unjudged
		got := l.rows()
		if last := got[len(got)-1]; last != pinnedOffRolledBack {
			t.Fatalf("the off-try released: %+v; want %+v", last, pinnedOffRolledBack)
		}
		if diff := cmp.Diff(map[QueueID]CutClaim{wan0: {}}, l.tunersCuts()); diff != "" {
			t.Errorf("TunersCuts: the released off-try counted (-want +got):\n%s", diff)
		}
		reason, j := l.untilOffTried()
		if strings.Contains(reason, "× 2^") || j == nil || j.Keep {
			t.Errorf("the off-try after the restart: reason %q, judgement %+v; want pinned_off_rtt, judged worse", reason, j)
		}
	})
}

// TestTunerRollbackCountsOwnJudgement: a commit of two queues judged worse
// on one is rolled back whole, but only the worse queue's rollback counts
// as worse for the policy (issue #24): two off-tries of rule pinned in one
// commit, queue 0 judged keep and queue 1 worse; the commit's end (finish,
// as cancelJudged and the deadline call it) doubles queue 1's back-off
// only, and each row carries its own queue's judgement.
func TestTunerRollbackCountsOwnJudgement(t *testing.T) {
	cfg := testConfig(SwitchConfig{Name: "n1", Address: "unused:1", Insecure: true})
	cfg.DryRun = true // finish pushes nothing; the dry run only spares a pusher
	rec := &memRecorder{}
	tu, _ := newLoop(t, cfg, nil, rec)
	off := policy.Memory{LastChange: t1, Changes: 3, CutOn: true, CutOffTrying: true, CutOffRollbacks: 1}
	judged := map[uint8]*Judgement{0: {Keep: true, ObjectiveBefore: 1, ObjectiveAfter: 1}, 1: {ObjectiveBefore: 1, ObjectiveAfter: 3}}
	p := &pending{id: "c", pushedAt: t1, deadline: t1.Add(time.Minute), worse: "not confirmed: wan0 queue 1: worse"}
	for q := range uint8(2) {
		k := queueKey{target: "n1", iface: "wan0", queue: q}
		tu.mem[k] = off
		id, err := rec.Record(context.Background(), Action{Time: t1, Target: "n1", Interface: "wan0", Queue: q, Rule: policy.RulePinned, Outcome: OutcomePushed})
		if err != nil {
			t.Fatal(err)
		}
		p.changes = append(p.changes, pendingChange{key: k, actionID: id, judged: judged[q]})
	}
	if err := tu.finish(context.Background(), cfg.Switches[0], p, t1.Add(20*time.Second), OutcomeRolledBack, sameReason(p.worse+"; cancelled"), ""); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[uint8]int{0: 1, 1: 2} {
		m := tu.mem[queueKey{target: "n1", iface: "wan0", queue: q}]
		if m.CutOffRollbacks != want || m.CutOffTrying {
			t.Errorf("queue %d (judged keep %v): memory %+v; want %d off-tries counted", q, judged[q].Keep, m, want)
		}
		if a := rec.actions[q]; a.Outcome != OutcomeRolledBack || a.Inputs.Judgement != judged[q] {
			t.Errorf("queue %d: row %s, judgement %+v; want rolled-back with %+v", q, a.Outcome, a.Inputs.Judgement, judged[q])
		}
	}
}
