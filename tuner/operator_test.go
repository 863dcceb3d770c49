package tuner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/ygnmi/ygnmi"
	"google.golang.org/grpc"

	"github.com/lhcnp/lhcnp/gen/oc/ocpath"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/internal/gnmicbin"
	"github.com/lhcnp/lhcnp/internal/oracle"
	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/tuner/policy"
)

// operatorGnmic runs gnmic, the operator's client, against a switch;
// without gnmic the test is skipped (failed under LHCNP_ORACLES=required).
var gnmicPath = sync.OnceValues(func() (string, error) { return gnmicbin.Path("..") })

func operatorSet(t *testing.T, addr string, alpha string) (string, error) {
	t.Helper()
	return operatorSetLeaf(t, addr, "alpha", alpha)
}

// operatorSetLeaf sets a config leaf of wan0's queue 0 with gnmic.
func operatorSetLeaf(t *testing.T, addr, leaf, value string) (string, error) {
	t.Helper()
	p, err := gnmicPath()
	if err != nil {
		oracle.Missing(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, p, "-a", addr, "--insecure", "set", "--update-path",
		"/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=0]/config/"+leaf, "--update-value", value).CombinedOutput()
	return string(out), err
}

// dbRow is what TestOperatorWins compares of a tuner_actions row.
type dbRow struct {
	Rule, Outcome string
	Before, After float64 // alpha
	Held          bool    // hold_until set
}

func dbRows(t *testing.T, ctx context.Context, rec *PGRecorder, target string) []dbRow {
	t.Helper()
	rows, err := rec.pool.Query(ctx, `SELECT split_part(reason, ':', 1), outcome, before, after, hold_until IS NOT NULL
		FROM tuner_actions WHERE target = $1 AND outcome <> 'hold' ORDER BY id`, target)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []dbRow
	for rows.Next() {
		var r dbRow
		var before, after []byte
		if err := rows.Scan(&r.Rule, &r.Outcome, &before, &after, &r.Held); err != nil {
			t.Fatal(err)
		}
		var b, a policy.Settings
		if before != nil {
			json.Unmarshal(before, &b)
		}
		if after != nil {
			json.Unmarshal(after, &a)
		}
		r.Before, r.After = b.Alpha, a.Alpha
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// operatorRig is the operator tests' real parts: a private PostgreSQL
// (tuner_actions, migration 013), two switch targets on loopback (sw-a,
// sw-b) with their ygnmi clients, and the tuner's configuration of both.
type operatorRig struct {
	t            *testing.T
	pool         *pgxpool.Pool
	rec          *PGRecorder
	addrA, addrB string
	ycA, ycB     *ygnmi.Client
	pubs         []interface{ PublishNow(context.Context) error }
	cfg          Config
}

func newOperatorRig(t *testing.T) *operatorRig {
	t.Helper()
	pool, _ := pgtest.New(t)
	addrA, pubA := testSwitch(t)
	addrB, pubB := testSwitch(t)
	return &operatorRig{t: t, pool: pool, rec: NewPGRecorder(pool), addrA: addrA, addrB: addrB,
		ycA: ygnmiClient(t, addrA), ycB: ygnmiClient(t, addrB),
		pubs: []interface{ PublishNow(context.Context) error }{pubA, pubB},
		cfg: testConfig(SwitchConfig{Name: "sw-a", Address: addrA, Insecure: true},
			SwitchConfig{Name: "sw-b", Address: addrB, Insecure: true})}
}

// cycle runs one period of tu at at, then has both switches publish.
func (r *operatorRig) cycle(tu *Tuner, at time.Time) {
	r.t.Helper()
	ctx := context.Background()
	if err := tu.Cycle(ctx, at); err != nil {
		r.t.Fatalf("Cycle at %v: %v", at.Sub(t1), err)
	}
	for _, p := range r.pubs {
		if err := p.PublishNow(ctx); err != nil {
			r.t.Fatal(err)
		}
	}
}

// TestOperatorWins: the operator's path end to end with real parts — a
// private PostgreSQL (tuner_actions, migration 013), two switch targets on
// loopback, the tuner (its clock the test's), gnmic as the operator:
//
//   - a Set while the tuner's commit is pending is refused with an answer
//     naming the tuner's commit and when it ends at the latest;
//   - a Set once it is confirmed is the operator's: the tuner records it
//     (outcome operator, the alpha set, hold_until), leaves that queue
//     alone for operator_hold while the other switch is still tuned, and
//     tunes it again from the operator's value after the hold;
//   - an operator's hold and release (lhcnp tuner hold/release) of the
//     other switch's queue stop and resume its tuning.
func TestOperatorWins(t *testing.T) {
	ctx := context.Background()
	r := newOperatorRig(t)
	pool, rec, addrA, cfg, ycA, ycB := r.pool, r.rec, r.addrA, r.cfg, r.ycA, r.ycB
	// The queue is congested at alpha 1 and above, fine below, except on
	// sw-b once throttled is set: its senders held by the node's cuts on
	// an under-used link, which the tuner answers by loosening.
	throttled := map[string]bool{}
	src := &scriptSource{clients: map[string]*ygnmi.Client{"sw-a": ycA, "sw-b": ycB},
		traffic: func(target string, s policy.Settings) traffic {
			switch {
			case throttled[target]:
				return traffic{delayRTT: 0.05, util: 0.5}
			case s.Alpha >= 1:
				return congested
			}
			return better
		}}
	tu, _ := newLoop(t, cfg, src, rec)
	cycle := func(at time.Time) { t.Helper(); r.cycle(tu, at) }

	// Both switches get the tuner's commit; the operator's Set meanwhile
	// is refused, and the answer names the commit and its deadline.
	cycle(t1)
	if !tu.Pending("sw-a") || !tu.Pending("sw-b") {
		t.Fatal("no commit pending after the first cycle")
	}
	out, err := operatorSet(t, addrA, "2")
	commit := fmt.Sprintf("lhcnp-tuner-sw-a-%d", t1.UnixNano())
	m := regexp.MustCompile(`commit "` + commit + `" is waiting for confirmation until (\S+): confirm or cancel it before another Set`).FindStringSubmatch(out)
	if err == nil || m == nil {
		t.Fatalf("gnmic set during the tuner's commit: %v\n%s\nwant a refusal naming commit %s and its deadline", err, out, commit)
	}
	if deadline, err := time.Parse(time.RFC3339, m[1]); err != nil || deadline.After(time.Now().Add(cfg.RollbackDuration)) {
		t.Errorf("deadline %q (%v): want a time at most rollback_duration (%v) ahead", m[1], err, cfg.RollbackDuration)
	}
	if a := switchAlpha(t, ycA); a != congestedAlpha {
		t.Errorf("alpha %v after the refused Set, want the tuner's %v", a, congestedAlpha)
	}

	cycle(t1.Add(cfg.JudgeWindow)) // judged better: confirmed
	if tu.Pending("sw-a") || tu.Pending("sw-b") {
		t.Fatal("still pending after a better judge window")
	}

	// The operator sets alpha 2 on sw-a: congested again, and the tuner
	// would tighten it, but leaves it to the operator.
	if out, err := operatorSet(t, addrA, "2"); err != nil {
		t.Fatalf("gnmic set with nothing pending: %v\n%s", err, out)
	}
	t2 := t1.Add(cfg.JudgeWindow + cfg.Period)
	cycle(t2)
	hold := []dbRow{
		{Rule: "delay", Outcome: "confirmed", Before: 1, After: congestedAlpha},
		{Rule: "operator", Outcome: "operator", Before: congestedAlpha, After: 2, Held: true},
	}
	if d := cmp.Diff(hold, dbRows(t, ctx, rec, "sw-a")); d != "" {
		t.Fatalf("sw-a's tuner_actions after the operator's Set (-want +got):\n%s", d)
	}
	var until time.Time
	var reason string
	if err := pool.QueryRow(ctx, `SELECT hold_until, reason FROM tuner_actions WHERE target = 'sw-a' AND outcome = 'operator'`).Scan(&until, &reason); err != nil {
		t.Fatal(err)
	}
	if !until.Equal(t2.Add(cfg.OperatorHold)) || !strings.Contains(reason, "alpha 0.75 → 2 set by another client") {
		t.Errorf("operator row: hold_until %v, reason %q; want %v and the change", until, reason, t2.Add(cfg.OperatorHold))
	}
	// Held for the whole hold, a cool-down and more apart each time; the
	// other switch is tuned meanwhile.
	throttled["sw-b"] = true
	for at := t2.Add(cfg.Period); at.Before(t2.Add(cfg.OperatorHold)); at = at.Add(cfg.OperatorHold / 4) {
		cycle(at)
		if tu.Pending("sw-a") || switchAlpha(t, ycA) != 2 {
			t.Fatalf("%v into the hold: sw-a pending %v, alpha %v; want the operator's 2 untouched",
				at.Sub(t2), tu.Pending("sw-a"), switchAlpha(t, ycA))
		}
	}
	if d := cmp.Diff(hold, dbRows(t, ctx, rec, "sw-a")); d != "" {
		t.Errorf("sw-a's tuner_actions during the hold (-want +got):\n%s", d)
	}
	if got := dbRows(t, ctx, rec, "sw-b"); len(got) < 2 || got[1].Outcome == "operator" {
		t.Errorf("sw-b's tuner_actions %+v: want it tuned during sw-a's hold", got)
	}
	// The hold over, sw-a is tuned again, from the operator's alpha.
	cycle(t2.Add(cfg.OperatorHold))
	if !tu.Pending("sw-a") || switchAlpha(t, ycA) >= 2 {
		t.Errorf("after the hold: sw-a pending %v, alpha %v; want a tightening of the operator's 2", tu.Pending("sw-a"), switchAlpha(t, ycA))
	}
	if got := dbRows(t, ctx, rec, "sw-a"); len(got) != 3 || got[2].Outcome != "pushed" || got[2].Before != 2 {
		t.Errorf("sw-a's tuner_actions after the hold: %+v; want a third row, pushed from alpha 2", got)
	}

	// An operator's hold of sw-b's queue (lhcnp tuner hold), then its
	// release (lhcnp tuner release): no decision between, tuned after.
	t3 := t2.Add(cfg.OperatorHold + cfg.Period)
	if err := tu.Release(ctx, t3); err != nil { // whatever is pending, cancelled
		t.Fatal(err)
	}
	q := QueueID{"wan0", 0}
	if _, _, err := rec.Hold(ctx, "sw-b", q, t3, t3.Add(time.Hour), "maintenance"); err != nil {
		t.Fatal(err)
	}
	before := len(dbRows(t, ctx, rec, "sw-b"))
	for i := 1; i <= 3; i++ {
		cycle(t3.Add(time.Duration(i) * cfg.Policy.Cooldown))
		if tu.Pending("sw-b") {
			t.Fatal("sw-b tuned while an operator holds it")
		}
	}
	if got := dbRows(t, ctx, rec, "sw-b"); len(got) != before {
		t.Errorf("sw-b's tuner_actions while held: %+v; want no row after the hold's", got[before-1:])
	}
	t4 := t3.Add(5 * cfg.Policy.Cooldown) // past a rolled-back direction's hold (4 cool-downs)
	if _, _, err := rec.Release(ctx, "sw-b", q, t4, ""); err != nil {
		t.Fatal(err)
	}
	cycle(t4)
	if !tu.Pending("sw-b") {
		t.Error("sw-b not tuned after the operator's release")
	}
	held, err := rec.OperatorHolds(ctx, "sw-b", t4)
	if err != nil || len(held) != 0 {
		t.Errorf("OperatorHolds after the release: %v, %v; want none", held, err)
	}
}

// TestObserve: what the tuner takes for an operator's change of a queue's
// settings, and what it explains itself.
func TestObserve(t *testing.T) {
	a := func(alpha float64, vg int64) policy.Settings {
		return policy.Settings{KMaxMode: policy.KMaxBDP, Alpha: alpha, VGrowthBytesPerSec: vg}
	}
	explicit := policy.Settings{KMaxMode: policy.KMaxExplicit, KMaxBytes: 1 << 20, VGrowthBytesPerSec: 100}
	cut := func(s policy.Settings) policy.Settings { s.OverloadCut = true; return s }
	type step struct {
		runs       policy.Settings
		wantChange string
	}
	for _, tt := range []struct {
		desc        string
		tuneVGrowth bool
		noPinned    bool                // pinned_buffer_share 0: overload-cut not tuned
		commit      *[2]policy.Settings // the tuner's commit (from, to) after the first step
		steps       []step
	}{
		{desc: "the first settings are the baseline", tuneVGrowth: true,
			steps: []step{{a(2, 100), ""}, {a(2, 100), ""}}},
		{desc: "another client's alpha", tuneVGrowth: true,
			steps: []step{{a(1, 100), ""}, {a(0.5, 100), "alpha 1 → 0.5"}, {a(0.5, 100), ""}}},
		{desc: "another client's mode", tuneVGrowth: true,
			steps: []step{{a(1, 100), ""}, {explicit, "kmax-mode BDP_ADAPTIVE → EXPLICIT"}}},
		{desc: "v-growth not tuned: its change is not the tuner's business", tuneVGrowth: false,
			steps: []step{{a(1, 100), ""}, {a(1, 200), ""}}},
		{desc: "v-growth tuned", tuneVGrowth: true,
			steps: []step{{a(1, 100), ""}, {a(1, 200), "v-growth 100 → 200"}}},
		{desc: "the tuner's commit, the telemetry catching up leaf by leaf", tuneVGrowth: true,
			commit: &[2]policy.Settings{a(1, 100), a(0.5, 50)},
			steps:  []step{{a(1, 100), ""}, {a(1, 100), ""}, {a(0.5, 100), ""}, {a(0.5, 50), ""}, {a(1, 100), "alpha 0.5 → 1, v-growth 50 → 100"}}},
		{desc: "during the tuner's commit, a value neither had", tuneVGrowth: true,
			commit: &[2]policy.Settings{a(1, 100), a(0.5, 100)},
			steps:  []step{{a(1, 100), ""}, {a(2, 100), "alpha 0.5 → 2"}}},
		{desc: "another client's overload-cut", tuneVGrowth: true,
			steps: []step{{a(1, 100), ""}, {cut(a(1, 100)), "overload-cut false → true"}, {a(1, 100), "overload-cut true → false"}}},
		{desc: "overload-cut not tuned (pinned_buffer_share 0): not the tuner's business", tuneVGrowth: true, noPinned: true,
			steps: []step{{a(1, 100), ""}, {cut(a(1, 100)), ""}}},
		{desc: "rule pinned's commit, the telemetry catching up leaf by leaf", tuneVGrowth: true,
			commit: &[2]policy.Settings{a(1, 100), cut(a(0.5, 100))},
			steps:  []step{{a(1, 100), ""}, {cut(a(1, 100)), ""}, {cut(a(0.5, 100)), ""}, {a(0.5, 100), "overload-cut true → false"}}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := testConfig(SwitchConfig{Name: "n1", Address: "127.0.0.1:1", Insecure: true})
			cfg.Policy.TuneVGrowth = tt.tuneVGrowth
			if tt.noPinned {
				cfg.Policy.PinnedBufferShare = 0
			}
			tu := &Tuner{cfg: cfg, seen: map[queueKey]seenSettings{}}
			k := queueKey{"n1", "wan0", 0}
			for i, st := range tt.steps {
				if got, _, _ := tu.observe(k, st.runs); got != st.wantChange {
					t.Errorf("step %d (%+v): change %q, want %q", i, st.runs, got, st.wantChange)
				}
				if i == 0 && tt.commit != nil {
					tu.expect(k, tt.commit[1], tt.commit[0])
				}
			}
		})
	}
}

// TestOperatorSetDuringTheTunersSet: gnmic's Set lands after the tuner
// checked the queue's settings and before its own Set arrives (the switch
// lets it through first): gNMI has no conditional Set, so the commit
// overwrites it, and the tuner, watching the queue's configuration around
// its Set, sees a value that is neither its before nor its after: it
// cancels its commit at once, the switch runs the operator's alpha again,
// the row says why, and the next period records the operator's change and
// holds the queue.
func TestOperatorSetDuringTheTunersSet(t *testing.T) {
	ctx := context.Background()
	var addr string
	var once sync.Once
	var operatorErr error
	operatorFirst := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if s, ok := req.(*gnmi.SetRequest); ok {
			for _, e := range s.GetExtension() {
				if e.GetCommit().GetCommit() != nil {
					once.Do(func() {
						if out, err := operatorSet(t, addr, "2"); err != nil {
							operatorErr = fmt.Errorf("%v: %s", err, out)
						}
					})
				}
			}
		}
		return h(ctx, req)
	}
	addr, _ = testSwitch(t, service.WithInterceptors([]grpc.UnaryServerInterceptor{operatorFirst}, nil))
	cfg := testConfig(SwitchConfig{Name: "n1", Address: addr, Insecure: true})
	yc := ygnmiClient(t, addr)
	src := constSource(yc, congested)
	rec := &memRecorder{}
	tu, _ := newLoop(t, cfg, src, rec)
	err := tu.Cycle(ctx, t1)
	if operatorErr != nil {
		t.Fatalf("the operator's Set: %v", operatorErr)
	}
	if !errors.Is(err, ErrOperatorSet) || !strings.Contains(err.Error(), "interface wan0 queue 0: alpha 2") {
		t.Errorf("Cycle: %v; want ErrOperatorSet naming alpha 2", err)
	}
	if tu.Pending("n1") {
		t.Error("the tuner follows a commit that overwrote an operator's Set")
	}
	if a := switchAlpha(t, yc); a != 2 {
		t.Errorf("alpha %v, want the operator's 2 back", a)
	}
	noCommitPendingAt(t, yc, 2)
	if len(rec.actions) != 1 || rec.actions[0].Outcome != OutcomeRolledBack ||
		!strings.Contains(rec.actions[0].Reason, "another client set the queue between the tuner's check and its Set: cancelled") {
		t.Fatalf("tuner_actions %+v; want the decision rolled back, saying why", rec.actions)
	}
	if err := tu.Cycle(ctx, t1.Add(cfg.Period)); err != nil {
		t.Fatal(err)
	}
	if a := rec.actions[len(rec.actions)-1]; a.Outcome != OutcomeOperator || a.After.Alpha != 2 || !a.HoldUntil.Equal(t1.Add(cfg.Period+cfg.OperatorHold)) {
		t.Errorf("the next period's row %+v; want the operator's alpha 2, held for operator_hold", a)
	}
}

// vgRow is what TestOperatorWhileTheTunerIsDown compares of a
// tuner_actions row: its rule, outcome and V_growth before and after.
type vgRow struct {
	Rule, Outcome string
	Before, After int64 // V_growth, B/s
}

func vgRows(t *testing.T, ctx context.Context, rec *PGRecorder, target string) []vgRow {
	t.Helper()
	rows, err := rec.pool.Query(ctx, `SELECT split_part(reason, ':', 1), outcome,
			coalesce((before ->> 'v_growth_bytes_per_second')::bigint, 0), coalesce((after ->> 'v_growth_bytes_per_second')::bigint, 0)
		FROM tuner_actions WHERE target = $1 AND outcome <> 'hold' ORDER BY id`, target)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[vgRow])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func switchVGrowth(t *testing.T, yc *ygnmi.Client) int64 {
	t.Helper()
	v, err := ygnmi.Get(context.Background(), yc, ocpath.Root().Lhcnp().Interfaces().Interface("wan0").Queues().Queue(0).State().VGrowth(), ygnmi.WithUseGet())
	if err != nil {
		t.Fatal(err)
	}
	return int64(v)
}

// TestOperatorWhileTheTunerIsDown: a tuner started anew knows from the
// audit trail what its queues ran (PGRecorder.LastSettings), with real
// parts — a private PostgreSQL, two switch targets, gnmic as the operator,
// the policy's default start (alpha 0.5, V_growth a tenth of R_port):
//
//   - sw-a: a V_growth the operator set while no tuner ran is recorded as
//     an operator's change at the next tuner's first window (the row says
//     so and names the trail's row), held for operator_hold, and neither
//     the hold nor its end brings rule start back to move it;
//   - sw-b: a V_growth the operator set while the first tuner ran, its hold
//     over before the second starts, is not an operator's change again and
//     is not moved by rule start either;
//   - a tuner without the trail (a Recorder that is not a TrailReader) does
//     what every tuner did before: it starts both queues again, V_growth
//     back to the policy's starting point over the operator's value.
func TestOperatorWhileTheTunerIsDown(t *testing.T) {
	ctx := context.Background()
	r := newOperatorRig(t)
	pool, rec, addrA, addrB, ycA, ycB, cycle := r.pool, r.rec, r.addrA, r.addrB, r.ycA, r.ycB, r.cycle
	cfg := r.cfg
	def := DefaultConfig().Policy
	cfg.Policy.TuneVGrowth, cfg.Policy.AlphaStart, cfg.Policy.RulesOff = true, def.AlphaStart, def.RulesOff
	src := &scriptSource{clients: map[string]*ygnmi.Client{"sw-a": ycA, "sw-b": ycB},
		traffic: func(string, policy.Settings) traffic { return better }}
	const (
		draftVG    = 1_250_000_000 // the YANG default, 10 Gbit/s: as good as off on the 10 Gbit/s port
		startVG    = srcRate / 8 / 10
		operatorVG = 500_000_000 // 0.4 of R_port, the operator's
	)
	started := []vgRow{{Rule: "start", Outcome: "confirmed", Before: draftVG, After: startVG}}

	// The first tuner starts both queues.
	tu1, _ := newLoop(t, cfg, src, rec)
	cycle(tu1, t1)
	cycle(tu1, t1.Add(cfg.JudgeWindow))
	for name, yc := range map[string]*ygnmi.Client{"sw-a": ycA, "sw-b": ycB} {
		if d := cmp.Diff(started, vgRows(t, ctx, rec, name)); d != "" || switchVGrowth(t, yc) != startVG || tu1.Pending(name) {
			t.Fatalf("%s after the first tuner's start: V_growth %d, pending %v, rows (-want +got):\n%s", name, switchVGrowth(t, yc), tu1.Pending(name), d)
		}
	}
	// sw-b: the operator's V_growth while the first tuner runs.
	if out, err := operatorSetLeaf(t, addrB, "v-growth", fmt.Sprint(operatorVG)); err != nil {
		t.Fatalf("gnmic set: %v\n%s", err, out)
	}
	t2 := t1.Add(cfg.JudgeWindow + cfg.Period)
	cycle(tu1, t2)
	wantB := append(slices.Clone(started), vgRow{Rule: "operator", Outcome: "operator", Before: startVG, After: operatorVG})
	if d := cmp.Diff(wantB, vgRows(t, ctx, rec, "sw-b")); d != "" {
		t.Fatalf("sw-b after the operator's Set (-want +got):\n%s", d)
	}
	if err := tu1.Release(ctx, t2); err != nil { // the first tuner stops
		t.Fatal(err)
	}
	// sw-a: the operator's V_growth while no tuner runs.
	if out, err := operatorSetLeaf(t, addrA, "v-growth", fmt.Sprint(operatorVG)); err != nil {
		t.Fatalf("gnmic set: %v\n%s", err, out)
	}

	// The second tuner starts after sw-b's hold.
	tu2, _ := newLoop(t, cfg, src, rec)
	t3 := t2.Add(cfg.OperatorHold + cfg.Period)
	cycle(tu2, t3)
	wantA := append(slices.Clone(started), vgRow{Rule: "operator", Outcome: "operator", Before: startVG, After: operatorVG})
	if d := cmp.Diff(wantA, vgRows(t, ctx, rec, "sw-a")); d != "" {
		t.Fatalf("sw-a at the second tuner's first window (-want +got):\n%s", d)
	}
	var until time.Time
	var reason string
	if err := pool.QueryRow(ctx, `SELECT hold_until, reason FROM tuner_actions WHERE target = 'sw-a' AND outcome = 'operator'`).Scan(&until, &reason); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`^operator: v-growth 125000000 → 500000000 set by another client \(while no tuner ran: seen at the tuner's start against tuner_actions row (\d+) of (\S+)\)`).FindStringSubmatch(reason)
	if !until.Equal(t3.Add(cfg.OperatorHold)) || m == nil {
		t.Fatalf("sw-a's operator row: hold_until %v, reason %q; want %v, the change and the trail's row", until, reason, t3.Add(cfg.OperatorHold))
	}
	// The row named is the first tuner's last of sw-a.
	var lastID int64
	var lastTS time.Time
	if err := pool.QueryRow(ctx, `SELECT id, ts FROM tuner_actions WHERE target = 'sw-a' AND ts <= $1 ORDER BY ts DESC, id DESC LIMIT 1`, t2).Scan(&lastID, &lastTS); err != nil {
		t.Fatal(err)
	}
	if m[1] != fmt.Sprint(lastID) || m[2] != lastTS.UTC().Format(time.RFC3339) {
		t.Errorf("the operator row names row %s of %s; want the first tuner's last row of sw-a, %d of %s", m[1], m[2], lastID, lastTS.UTC().Format(time.RFC3339))
	}
	// Through sw-a's hold and past it: nothing moves either V_growth.
	for at := t3.Add(cfg.Period); !at.After(t3.Add(cfg.OperatorHold + 4*cfg.Policy.Cooldown)); at = at.Add(cfg.OperatorHold / 4) {
		cycle(tu2, at)
		for name, yc := range map[string]*ygnmi.Client{"sw-a": ycA, "sw-b": ycB} {
			if tu2.Pending(name) || switchVGrowth(t, yc) != operatorVG {
				t.Fatalf("%v after the second tuner's start: %s pending %v, V_growth %d; want the operator's %d untouched",
					at.Sub(t3), name, tu2.Pending(name), switchVGrowth(t, yc), operatorVG)
			}
		}
	}
	if d := cmp.Diff(wantA, vgRows(t, ctx, rec, "sw-a")); d != "" {
		t.Errorf("sw-a's rows after its hold (-want +got):\n%s", d)
	}
	if d := cmp.Diff(wantB, vgRows(t, ctx, rec, "sw-b")); d != "" {
		t.Errorf("sw-b's rows under the second tuner (-want +got):\n%s", d)
	}

	// Without the trail, a tuner started anew starts both queues again.
	tu3, _ := newLoop(t, cfg, src, struct{ Recorder }{rec})
	cycle(tu3, t3.Add(cfg.OperatorHold+5*cfg.Policy.Cooldown))
	for name := range map[string]bool{"sw-a": true, "sw-b": true} {
		got := vgRows(t, ctx, rec, name)
		if last := got[len(got)-1]; !tu3.Pending(name) || last != (vgRow{Rule: "start", Outcome: "pushed", Before: operatorVG, After: startVG}) {
			t.Errorf("%s under a tuner without the trail: pending %v, last row %+v; want rule start pushed over the operator's V_growth", name, tu3.Pending(name), last)
		}
	}
	if err := tu3.Release(ctx, t3.Add(cfg.OperatorHold+5*cfg.Policy.Cooldown)); err != nil {
		t.Fatal(err)
	}
}

// TestCommitLeftByACrash: a tuner that stops without ending its commit (a
// crash: no Release) leaves its row `pushed`; the switch rolls the commit
// back at its deadline (here the same cancel the deadline does, at once).
// The tuner started next sees the settings of before, records the row
// rolled back with why, takes no operator's change for it, and starts the
// queue again (a start never judged is not one the trail counts).
func TestCommitLeftByACrash(t *testing.T) {
	ctx := context.Background()
	r := newOperatorRig(t)
	cfg := r.cfg
	cfg.Switches = cfg.Switches[:1] // sw-a
	def := DefaultConfig().Policy
	cfg.Policy.TuneVGrowth, cfg.Policy.AlphaStart, cfg.Policy.RulesOff = true, def.AlphaStart, def.RulesOff
	src := &scriptSource{clients: map[string]*ygnmi.Client{"sw-a": r.ycA},
		traffic: func(string, policy.Settings) traffic { return better }}
	const draftVG, startVG = 1_250_000_000, srcRate / 8 / 10

	tu1, p1 := newLoop(t, cfg, src, r.rec)
	r.cycle(tu1, t1)
	if !tu1.Pending("sw-a") || switchVGrowth(t, r.ycA) != startVG {
		t.Fatalf("the first tuner's start: pending %v, V_growth %d", tu1.Pending("sw-a"), switchVGrowth(t, r.ycA))
	}
	// The crash: tu1 is gone with its commit pending. The deadline's
	// rollback.
	if err := p1.Cancel(ctx, "sw-a", tu1.pending["sw-a"].id); err != nil {
		t.Fatal(err)
	}
	if err := r.pubs[0].PublishNow(ctx); err != nil {
		t.Fatal(err)
	}
	if v := switchVGrowth(t, r.ycA); v != draftVG {
		t.Fatalf("V_growth %d after the rollback, want the draft's %d", v, draftVG)
	}

	tu2, _ := newLoop(t, cfg, src, r.rec)
	t2 := t1.Add(cfg.RollbackDuration + cfg.Period)
	r.cycle(tu2, t2)
	want := []vgRow{
		{Rule: "start", Outcome: "rolled-back", Before: draftVG, After: startVG},
		{Rule: "start", Outcome: "pushed", Before: draftVG, After: startVG},
	}
	if d := cmp.Diff(want, vgRows(t, ctx, r.rec, "sw-a")); d != "" {
		t.Errorf("sw-a's rows after the second tuner's first cycle (-want +got):\n%s", d)
	}
	var reason string
	if err := r.pool.QueryRow(ctx, `SELECT reason FROM tuner_actions WHERE target = 'sw-a' ORDER BY id LIMIT 1`).Scan(&reason); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(reason, "; the tuner stopped without ending the commit; the switch rolled it back (the settings of before seen at "+t2.UTC().Format(time.RFC3339)) {
		t.Errorf("the crashed commit's reason %q: want it to say the switch rolled it back", reason)
	}
	if err := tu2.Release(ctx, t2); err != nil {
		t.Fatal(err)
	}
}

// TestOperatorChangeUnrecordedStillHolds: an operator's change whose
// operator row cannot be written (the database away for a moment, its
// reads working) still holds the queue: the hold is kept in the process
// and the row recorded again each period until it is. It failed before:
// the hold lasted that one period, the change was the queue's baseline
// already, and the next period pushed over the operator's alpha inside
// operator_hold.
func TestOperatorChangeUnrecordedStillHolds(t *testing.T) {
	ctx := context.Background()
	sw := newFakeSwitch(1, func(policy.Settings) traffic { return better })
	rec := &outageRecorder{}
	tu, cfg := newFakeLoop(t, sw, rec)
	if err := tu.Cycle(ctx, t1); err != nil { // the baseline: alpha 1, a calm queue
		t.Fatal(err)
	}
	if sw.commits != 0 {
		t.Fatalf("%d commits on a calm queue", sw.commits)
	}
	// The operator sets alpha 2; the queue then congests.
	sw.runs = bdpSettings(2)
	sw.traffic = func(policy.Settings) traffic { return congested }
	rec.down = true
	if err := tu.Cycle(ctx, t1.Add(cfg.Period)); err == nil {
		t.Fatal("no error for an operator row that could not be recorded")
	}
	if err := tu.Cycle(ctx, t1.Add(2*cfg.Period)); err == nil { // still down: held, tried again
		t.Fatal("no error for an operator row that could not be recorded again")
	}
	rec.down = false
	for i := 3; i < 8; i++ { // well inside operator_hold (15 min)
		at := t1.Add(time.Duration(i) * cfg.Period)
		if err := tu.Cycle(ctx, at); err != nil {
			t.Fatalf("at +%v, the database back: %v", at.Sub(t1), err)
		}
		if sw.commits > 0 {
			t.Fatalf("at +%v (operator_hold %v): the tuner pushed over the operator's alpha 2 (switch now runs alpha %v); rows %+v",
				at.Sub(t1.Add(cfg.Period)), cfg.OperatorHold, sw.runs.Alpha, rec.rows())
		}
	}
	// The row, once: recorded at its own time, with its hold.
	var ops []Action
	for _, a := range rec.actions {
		if a.Outcome == OutcomeOperator {
			ops = append(ops, a)
		}
	}
	if want := t1.Add(cfg.Period); len(ops) != 1 || ops[0].After.Alpha != 2 || !ops[0].Time.Equal(want) ||
		!ops[0].HoldUntil.Equal(want.Add(cfg.OperatorHold)) {
		t.Errorf("operator rows %+v; want one, alpha 2 at %v held until %v", ops, want, want.Add(cfg.OperatorHold))
	}
}

// TestOperatorSetCancelRetried: a commit that overwrote another client's
// Set and whose cancel failed (GNMIPusher.Commit's ErrOperatorSet with
// ErrCancelFailed) stays pending, its row pushed, and the cancel is tried
// again the next period, as the bound's is; only then is the row
// rolled-back. It failed before: the row said rolled-back, "the other
// client's value stands", at once, and the commit was forgotten, pending on
// the switch (other clients' Sets refused, the other client's value
// overwritten) to rollback_duration.
func TestOperatorSetCancelRetried(t *testing.T) {
	ctx := context.Background()
	sw := newFakeSwitch(1, func(policy.Settings) traffic { return congested })
	sw.raced = true
	rec := &outageRecorder{}
	tu, cfg := newFakeLoop(t, sw, rec)
	if err := tu.Cycle(ctx, t1); !errors.Is(err, ErrOperatorSet) || !errors.Is(err, ErrCancelFailed) {
		t.Fatalf("Cycle: %v; want ErrOperatorSet and ErrCancelFailed", err)
	}
	if sw.commits != 1 || !tu.Pending("n1") {
		t.Fatalf("%d commits, pending %v: want 1, pending", sw.commits, tu.Pending("n1"))
	}
	if a := rec.actions[0]; a.Outcome != OutcomePushed {
		t.Errorf("row before the cancel succeeded: %s %q; want %s", a.Outcome, a.Reason, OutcomePushed)
	}
	if err := tu.Cycle(ctx, t1.Add(cfg.Period)); err != nil {
		t.Fatal(err)
	}
	if sw.pending != nil || tu.Pending("n1") {
		t.Errorf("the commit that overwrote another client's Set still pending a period after its cancel failed")
	}
	if a := rec.actions[0]; a.Outcome != OutcomeRolledBack || !strings.Contains(a.Reason, "the tuner's cancel failed") ||
		!strings.HasSuffix(a.Reason, "; cancelled") {
		t.Errorf("row after the cancel: %s %q; want %s, the failed cancel and the cancel", a.Outcome, a.Reason, OutcomeRolledBack)
	}
	if sw.commits != 1 {
		t.Errorf("%d commits, want 1", sw.commits)
	}
}

// TestOperatorRowRecordedAtRelease: an operator's row a database blip left
// unrecorded is tried once more when the tuner stops (Release), as its
// outcomes are: its hold would otherwise be lost with the process, and a
// tuner started next would see no hold. It failed before: Release retried
// the outcomes only.
func TestOperatorRowRecordedAtRelease(t *testing.T) {
	ctx := context.Background()
	sw := newFakeSwitch(1, func(policy.Settings) traffic { return better })
	rec := &outageRecorder{}
	tu, cfg := newFakeLoop(t, sw, rec)
	if err := tu.Cycle(ctx, t1); err != nil {
		t.Fatal(err)
	}
	sw.runs = bdpSettings(2) // the operator's alpha
	rec.down = true
	if err := tu.Cycle(ctx, t1.Add(cfg.Period)); err == nil {
		t.Fatal("no error for an operator row that could not be recorded")
	}
	rec.down = false
	if err := tu.Release(ctx, t1.Add(cfg.Period+time.Second)); err != nil {
		t.Fatalf("Release: %v", err)
	}
	var ops int
	for _, a := range rec.actions {
		if a.Outcome == OutcomeOperator && a.After.Alpha == 2 {
			ops++
		}
	}
	if ops != 1 {
		t.Errorf("%d operator rows after Release, want the unrecorded one, once (rows %+v)", ops, rec.rows())
	}
}

// TestTunerStateKeptAcrossStop: what the database does not take before the
// tuner stops (away as it stops) is kept in state_dir and written by the
// tuner started next: an operator's row, whose hold that tuner keeps from
// the file until the row is recorded (it pushes nothing over the
// operator's alpha), and a hold's row; once written, the file goes at the
// next stop. It failed before: both rows were lost with the process, and
// the tuner started next pushed over the operator's value.
func TestTunerStateKeptAcrossStop(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sw := newFakeSwitch(1, func(policy.Settings) traffic { return better })
	rec := &outageRecorder{down: true}
	cfg := testConfig(SwitchConfig{Name: "n1", Address: "127.0.0.1:1", Insecure: true})
	cfg.StateDir = dir
	tu := newTuner(t, cfg, sw, sw, rec)
	if err := tu.Cycle(ctx, t1); err == nil { // the hold's row: not recorded
		t.Fatal("no error for a hold that could not be recorded")
	}
	sw.runs = bdpSettings(2) // the operator's alpha, its row not recorded either
	sw.traffic = func(policy.Settings) traffic { return congested }
	if err := tu.Cycle(ctx, t1.Add(cfg.Period)); err == nil {
		t.Fatal("no error for an operator row that could not be recorded")
	}
	if err := tu.Release(ctx, t1.Add(cfg.Period+time.Second)); err == nil {
		t.Fatal("Release with the database away: no error")
	}
	if _, err := os.Stat(filepath.Join(dir, StateFile)); err != nil {
		t.Fatalf("nothing kept for the next tuner: %v", err)
	}

	rec.down = false
	next := newTuner(t, cfg, sw, sw, rec)
	for i := 2; i < 8; i++ { // inside operator_hold
		if err := next.Cycle(ctx, t1.Add(time.Duration(i)*cfg.Period)); err != nil {
			t.Fatal(err)
		}
	}
	if sw.commits != 0 {
		t.Errorf("the tuner started next pushed over the operator's alpha 2 (now %v); rows %+v", sw.runs.Alpha, rec.rows())
	}
	var ops, holds int
	for _, a := range rec.actions {
		switch {
		case a.Outcome == OutcomeOperator && a.After.Alpha == 2 && a.Time.Equal(t1.Add(cfg.Period)):
			ops++
		case a.Outcome == OutcomeHold && a.Time.Equal(t1):
			holds++
		}
	}
	if ops != 1 || holds != 1 {
		t.Errorf("%d operator rows, %d holds of the first tuner; want 1 each, at their own times: rows %+v", ops, holds, rec.rows())
	}
	if err := next.Release(ctx, t1.Add(8*cfg.Period)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, StateFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state file after a stop that owes nothing: %v; want it gone", err)
	}
}

// TestTunerStateBadFile: a state file the tuner cannot read stops New with
// its path, not a tuner that drops it.
func TestTunerStateBadFile(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(SwitchConfig{Name: "n1", Address: "127.0.0.1:1", Insecure: true})
	cfg.StateDir, cfg.DryRun = dir, true
	for _, tt := range []struct{ content, want string }{
		{"{", "unexpected end of JSON input"},
		{`{"version": 7}`, "version 7, this tuner reads 1"},
	} {
		if err := os.WriteFile(filepath.Join(dir, StateFile), []byte(tt.content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := New(cfg, nil, nil, &memRecorder{}, WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, StateFile)) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New with %q: %v; want the path and %q", tt.content, err, tt.want)
		}
	}
}

// TestDeadlineAfterFailedCancels: a commit judged worse whose cancels all
// fail (the switch unreachable for them) is rolled back by the switch at its
// deadline; the row says so, with the last cancel's error, where it read
// "not confirmed within the rollback duration: telemetry did not show the
// change applied", which was not what happened. It failed before.
func TestDeadlineAfterFailedCancels(t *testing.T) {
	ctx := context.Background()
	sw := newFakeSwitch(1, func(s policy.Settings) traffic {
		if s.Alpha < 1 {
			return worse
		}
		return congested
	})
	rec := &outageRecorder{}
	tu, cfg := newFakeLoop(t, sw, rec)
	if err := tu.Cycle(ctx, t1); err != nil {
		t.Fatal(err)
	}
	if sw.commits != 1 {
		t.Fatalf("%d commits under congestion, want 1", sw.commits)
	}
	sw.cancelDown = true
	at := t1
	for tu.Pending("n1") && at.Sub(t1) <= cfg.RollbackDuration+cfg.Period {
		at = at.Add(cfg.Period)
		_ = tu.Cycle(ctx, at) // the failed cancels are errors
	}
	if tu.Pending("n1") {
		t.Fatalf("still pending %v after the push (rollback_duration %v)", at.Sub(t1), cfg.RollbackDuration)
	}
	var got Action
	for _, a := range rec.actions {
		if a.Outcome == OutcomeRolledBack {
			got = a
		}
	}
	if !strings.Contains(got.Reason, "the tuner's cancels failed: rolled back by the switch at its rollback duration") ||
		!strings.Contains(got.Error, "Unavailable") {
		t.Errorf("row %s: reason %q, error %q; want the failed cancels named, with the last one's error", got.Outcome, got.Reason, got.Error)
	}
}
