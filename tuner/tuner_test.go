package tuner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/gen/oc/ocpath"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/lhcnp/lhcnp/tuner/policy"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/ygnmi/ygnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// memRecorder keeps the audit trail in memory, for the loop's tests (the
// PostgreSQL recorder has its own test).
type memRecorder struct {
	mu      sync.Mutex
	actions []Action
	fail    error
}

func (r *memRecorder) Record(_ context.Context, a Action) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return 0, r.fail
	}
	for i, b := range r.actions {
		if a.Key != "" && b.Key == a.Key { // as the unique action_key: that row
			return int64(i + 1), nil
		}
	}
	r.actions = append(r.actions, a)
	return int64(len(r.actions)), nil
}

// Forget marks the row of key deleted (ids are indices: the row stays,
// with outcome "forgotten", which no real row has).
func (r *memRecorder) Forget(_ context.Context, key string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	for i := range r.actions {
		if r.actions[i].Key == key {
			r.actions[i].Outcome = "forgotten"
		}
	}
	return nil
}

func (r *memRecorder) SetOutcome(ctx context.Context, id int64, o Outcome, reason, errText string, j *Judgement) error {
	if err := ctx.Err(); err != nil {
		return err // as a database would: nothing recorded on an expired context
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	a := &r.actions[id-1]
	a.Error = errText
	if j != nil {
		a.Inputs.Judgement = j
	}
	if reason != "" && !(a.Outcome == o && strings.HasSuffix(a.Reason, "; "+reason)) { // once, as PGRecorder
		a.Reason += "; " + reason
	}
	a.Outcome = o
	return nil
}

// OperatorHolds implements HoldReader as PGRecorder does: per queue, the
// newest operator row at or before now, if it holds past now.
func (r *memRecorder) OperatorHolds(_ context.Context, target string, now time.Time) (map[QueueID]OperatorHold, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	newest := map[QueueID]int{}
	for i, a := range r.actions {
		if a.Target == target && a.Outcome == OutcomeOperator && !a.Time.After(now) {
			q := QueueID{a.Interface, a.Queue}
			if j, ok := newest[q]; !ok || !a.Time.Before(r.actions[j].Time) {
				newest[q] = i
			}
		}
	}
	out := map[QueueID]OperatorHold{}
	for q, i := range newest {
		if a := r.actions[i]; a.HoldUntil.After(now) {
			out[q] = OperatorHold{Until: a.HoldUntil, ID: int64(i + 1), Reason: string(a.Rule) + ": " + a.Reason}
		}
	}
	return out, nil
}

// row is what the tests compare of an action.
type row struct {
	Target  string
	Rule    policy.Rule
	Outcome Outcome
	After   policy.Settings
}

func (r *memRecorder) rows() []row {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []row
	for _, a := range r.actions {
		out = append(out, row{a.Target, a.Rule, a.Outcome, a.After})
	}
	return out
}

// traffic is the telemetry of the switch's one queue the scriptSource
// makes up: the queue's depth in RTT_est (every sample at delayRTT, the
// last at lastRTT when set), the share of the port used and the share of
// the packets dropped.
type traffic struct{ delayRTT, lastRTT, util, loss float64 }

// scriptSource reads each switch's real settings over gNMI (alpha,
// v-growth, kmax-mode, k-base, effective-kmax of wan0 queue 0) and makes
// up its traffic from a script, so the loop's decisions and judgements are
// chosen by the test while the pushes and their effect are real.
type scriptSource struct {
	clients map[string]*ygnmi.Client
	traffic func(target string, settings policy.Settings) traffic
	fail    map[string]error
	// gaps drops the window's middle samples.
	gaps bool
	// stale, if set, are the settings the window shows instead of the
	// switch's (telemetry behind the switch).
	stale *policy.Settings
	// bufferBytes is the port's buffer the windows report (0: none), and
	// with it overload-cut as the switch runs it (OverloadCutSupported:
	// the switch publishes it, as the PG source finds it).
	bufferBytes int64
}

// constSource is a source of switch n1 (yc) whose traffic is tr whatever
// its settings.
func constSource(yc *ygnmi.Client, tr traffic) *scriptSource {
	return &scriptSource{clients: map[string]*ygnmi.Client{"n1": yc},
		traffic: func(string, policy.Settings) traffic { return tr }}
}

const (
	srcRTT  = 10 * time.Millisecond
	srcRate = 10_000_000_000
)

func (s *scriptSource) Windows(ctx context.Context, target string, start, end time.Time) ([]QueueWindow, error) {
	if err := s.fail[target]; err != nil {
		return nil, err
	}
	c := s.clients[target]
	q := ocpath.Root().Lhcnp().Interfaces().Interface("wan0").Queues().Queue(0).State()
	st, err := ygnmi.Get(ctx, c, q, ygnmi.WithUseGet())
	if err != nil {
		return nil, err
	}
	cfg := policy.Settings{KMaxMode: policy.KMaxBDP, Alpha: st.GetAlpha(), VGrowthBytesPerSec: int64(st.GetVGrowth())}
	if st.GetKmaxMode() == oc.LhcnpTypes_KmaxMode_EXPLICIT {
		cfg.KMaxMode, cfg.KMaxBytes = policy.KMaxExplicit, int64(st.GetKmax())
	}
	if s.bufferBytes > 0 {
		cfg.OverloadCut = st.GetOverloadCut()
	}
	if s.stale != nil {
		cfg = *s.stale
	}
	tr := s.traffic(target, cfg)
	w := policy.Window{Start: start, End: end, Config: cfg, KBaseBytes: int64(st.GetKBase()),
		EffectiveKMaxBytes: int64(st.GetEffectiveKmax()), RTTEst: srcRTT, PortRateBitsPerSec: srcRate,
		BufferBytes: s.bufferBytes, OverloadCutSupported: s.bufferBytes > 0}
	w.Samples = trafficSamples(tr, start, end)
	if s.gaps {
		w.Samples = append(w.Samples[:2], w.Samples[4])
	}
	return []QueueWindow{{Interface: "wan0", Queue: 0, Window: w}}, nil
}

// trafficSamples are five samples of [start, end] with traffic tr on a
// port of srcRate and an RTT_est of srcRTT.
func trafficSamples(tr traffic, start, end time.Time) []policy.Sample {
	var out []policy.Sample
	step := end.Sub(start) / 4
	for i := range 5 {
		tx := int64(tr.util * srcRate / 8 * step.Seconds())
		d := tr.delayRTT
		if i == 4 && tr.lastRTT > 0 {
			d = tr.lastRTT
		}
		out = append(out, policy.Sample{Time: start.Add(time.Duration(i) * step),
			QueueDepthBytes: int64(d * srcRate / 8 * srcRTT.Seconds()), TxBytes: tx, Packets: tx / 1000,
			Drops:         int64(tr.loss * float64(tx/1000)),
			Notifications: policy.Notifications{RateReduce: 10}, ECNMarkingPercent: 5})
	}
	return out
}

func testConfig(switches ...SwitchConfig) Config {
	cfg := DefaultConfig()
	cfg.DB = "postgres://unused"
	cfg.Switches = switches
	cfg.StateDir = "" // none in the package's directory: TestTunerStateKeptAcrossStop sets its own
	cfg.Policy.TuneVGrowth = false
	// Every rule on, under-use as written (the window's own throttling, the
	// guard at one BDP) and the switch's K_max kept at the first decision:
	// the service's tests watch the rules' decisions from the switch's
	// configuration (the defaults' start, rules_off and under-use: policy's
	// tests).
	cfg.Policy.AlphaStart, cfg.Policy.RulesOff = 0, nil
	cfg.Policy.UnderUseAfterRTT, cfg.Policy.UnderUseCeilingBDP = 0, 1
	return cfg
}

// refuseSet is a target interceptor that refuses every Set.
func refuseSet(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if strings.HasSuffix(info.FullMethod, "/Set") {
		return nil, status.Error(codes.PermissionDenied, "set refused by test")
	}
	return h(ctx, req)
}

var (
	// A queue the window catches rising through delay_high_rtt (0.5):
	// mean 0.48, last 0.6 RTT_est. With V_growth not tuned the delay rule
	// takes K_max down to where the queue will be one window ahead (0.75
	// RTT_est); a standing queue would keep alpha (twice it is above K_max).
	congested = traffic{delayRTT: 0.45, lastRTT: 0.6, util: 0.99}
	// congestedAlpha is the alpha the delay rule gives congested from 1.
	congestedAlpha = 0.75
	better         = traffic{delayRTT: 0.3, util: 0.98}
	worse          = traffic{delayRTT: 3, util: 0.5}
	t1             = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
)

func bdpSettings(alpha float64) policy.Settings {
	return policy.Settings{KMaxMode: policy.KMaxBDP, Alpha: alpha, VGrowthBytesPerSec: 1_250_000_000}
}

func newLoop(t *testing.T, cfg Config, src Source, rec Recorder) (*Tuner, *GNMIPusher) {
	t.Helper()
	p := NewGNMIPusher(cfg.Switches)
	t.Cleanup(func() { p.Close() })
	var push Pusher = p
	if cfg.DryRun {
		push = nil
	}
	return newTuner(t, cfg, src, push, rec), p
}

// newTuner is New, quiet, failing the test on an error.
func newTuner(t *testing.T, cfg Config, src Source, push Pusher, rec Recorder) *Tuner {
	t.Helper()
	tu, err := New(cfg, src, push, rec, WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	return tu
}

// TestTunerConfirms: a congested queue gets a smaller alpha; once the
// judge window shows it applied and better, the commit is confirmed.
func TestTunerConfirms(t *testing.T) {
	ctx := context.Background()
	addr, pub := testSwitch(t)
	cfg := testConfig(SwitchConfig{Name: "n1", Address: addr, Insecure: true})
	src := &scriptSource{clients: map[string]*ygnmi.Client{"n1": ygnmiClient(t, addr)},
		traffic: func(_ string, s policy.Settings) traffic {
			if s.Alpha < 1 {
				return better
			}
			return congested
		}}
	rec := &memRecorder{}
	tu, _ := newLoop(t, cfg, src, rec)
	if err := tu.Cycle(ctx, t1); err != nil {
		t.Fatal(err)
	}
	if !tu.Pending("n1") {
		t.Fatal("no commit pending after a change")
	}
	if err := pub.PublishNow(ctx); err != nil {
		t.Fatal(err)
	}
	// Before the judge window is complete: still pending.
	if err := tu.Cycle(ctx, t1.Add(cfg.Period)); err != nil {
		t.Fatal(err)
	}
	if !tu.Pending("n1") {
		t.Fatal("confirmed before the judge window was complete")
	}
	if err := tu.Cycle(ctx, t1.Add(cfg.JudgeWindow)); err != nil {
		t.Fatal(err)
	}
	if tu.Pending("n1") {
		t.Fatal("still pending after a complete, better judge window")
	}
	want := []row{{"n1", policy.RuleDelay, OutcomeConfirmed, bdpSettings(congestedAlpha)}}
	if diff := cmp.Diff(want, rec.rows()); diff != "" {
		t.Errorf("tuner_actions (-want +got):\n%s", diff)
	}
}

// TestTunerLetsWorseRollBack: a change after which the objective is worse
// is not confirmed but cancelled as soon as it is judged (not left pending
// until the switch's deadline, refusing every other Set meanwhile): the
// old alpha is back, the row rolled back, and the direction is held.
func TestTunerLetsWorseRollBack(t *testing.T) {
	ctx := context.Background()
	addr, pub := testSwitch(t)
	cfg := testConfig(SwitchConfig{Name: "n1", Address: addr, Insecure: true})
	yc := ygnmiClient(t, addr)
	src := &scriptSource{clients: map[string]*ygnmi.Client{"n1": yc},
		traffic: func(_ string, s policy.Settings) traffic {
			if s.Alpha < 1 {
				return worse
			}
			return congested
		}}
	rec := &memRecorder{}
	tu, _ := newLoop(t, cfg, src, rec)
	for _, at := range []time.Duration{0, cfg.JudgeWindow} {
		if err := tu.Cycle(ctx, t1.Add(at)); err != nil {
			t.Fatal(err)
		}
		if err := pub.PublishNow(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if tu.Pending("n1") {
		t.Fatal("still pending after it was judged worse")
	}
	if a := switchAlpha(t, yc); a != 1 {
		t.Errorf("alpha %v after a change judged worse, want 1 (cancelled)", a)
	}
	noCommitPending(t, yc)
	want := []row{{"n1", policy.RuleDelay, OutcomeRolledBack, bdpSettings(congestedAlpha)}}
	if diff := cmp.Diff(want, rec.rows()); diff != "" {
		t.Errorf("tuner_actions (-want +got):\n%s", diff)
	}
	if r := rec.actions[0].Reason; !strings.Contains(r, "worse") || !strings.HasSuffix(r, "; cancelled") {
		t.Errorf("reason %q does not say the change made things worse and was cancelled", r)
	}
}

// TestTunerRowsJudgedByTheirQueue: a commit of several queues' changes
// (one Set per switch and period) is judged queue by queue, and each row
// gives its own queue's judgement, not every queue's of the commit (a
// start on the eight queues of an interface repeated eight judgements on
// every row); a queue judged not worse whose commit another queue's worse
// judgement undid says which.
func TestTunerRowsJudgedByTheirQueue(t *testing.T) {
	for _, tt := range []struct {
		desc string
		// q1 is queue 1's traffic after the change (queue 0's is better).
		q1      traffic
		outcome Outcome
	}{
		{"both kept", better, OutcomeConfirmed},
		{"queue 1 worse", worse, OutcomeRolledBack},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			ctx := context.Background()
			sw := &queuesSwitch{runs: []policy.Settings{bdpSettings(1), bdpSettings(1)},
				traffic: func(q uint8, s policy.Settings) traffic {
					switch {
					case s.Alpha == 1:
						return congested
					case q == 1:
						return tt.q1
					}
					return better
				}}
			rec := &memRecorder{}
			cfg := testConfig(SwitchConfig{Name: "n1", Address: "127.0.0.1:1", Insecure: true})
			tu := newTuner(t, cfg, sw, sw, rec)
			for _, at := range []time.Duration{0, cfg.JudgeWindow} {
				if err := tu.Cycle(ctx, t1.Add(at)); err != nil {
					t.Fatal(err)
				}
			}
			if tu.Pending("n1") {
				t.Fatal("still pending after its judge window")
			}
			want := []row{{"n1", policy.RuleDelay, tt.outcome, bdpSettings(congestedAlpha)}, {"n1", policy.RuleDelay, tt.outcome, bdpSettings(congestedAlpha)}}
			if diff := cmp.Diff(want, rec.rows()); diff != "" {
				t.Fatalf("tuner_actions (-want +got):\n%s", diff)
			}
			for q, a := range rec.actions {
				j := a.Inputs.Judgement
				if j == nil {
					t.Fatalf("queue %d: no judgement recorded", q)
				}
				_, judged, _ := strings.Cut(a.Reason, "; ")
				own := fmt.Sprintf("objective %.4g after, %.4g", j.ObjectiveAfter, j.ObjectiveBefore)
				var wantPrefix string
				switch {
				case tt.outcome == OutcomeConfirmed:
					wantPrefix = "applied and " + own
				default:
					wantPrefix = "not confirmed: " + own
				}
				if !strings.HasPrefix(judged, wantPrefix) || !strings.HasSuffix(judged, "cancelled") && tt.outcome == OutcomeRolledBack {
					t.Errorf("queue %d's row: judged %q, want its own judgement %q…", q, judged, wantPrefix)
				}
				// Its own queue is never named; the other only as the one
				// that undid the commit.
				if strings.Contains(judged, fmt.Sprintf("wan0 queue %d", q)) {
					t.Errorf("queue %d's row names its own queue's judgement as another's: %q", q, judged)
				}
				other := "; but the same commit changed wan0 queue 1 for the worse (objective "
				if wantOther := q == 0 && tt.outcome == OutcomeRolledBack; strings.Contains(judged, other) != wantOther {
					t.Errorf("queue %d's row %q: names queue 1's worse judgement %v, want %v", q, judged, !wantOther, wantOther)
				}
				if n := strings.Count(judged, "objective "); n != 1+btoi(q == 0 && tt.outcome == OutcomeRolledBack) {
					t.Errorf("queue %d's row gives %d judgements: %q", q, n, judged)
				}
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

// TestTunerStartRecordedNotCompared: rule start's change is kept on its
// judge window without comparing the objectives (policy.Commit.Start), and
// its row's judgement says so (not_compared), so that a reader does not
// take the objectives it carries for a comparison ("better: J 1.00 →
// 1.00" on the lab's page); a change the judge window weighed does not.
func TestTunerStartRecordedNotCompared(t *testing.T) {
	var got []string
	for _, alphaStart := range []float64{0.5, 0} {
		ctx := context.Background()
		sw := newFakeSwitch(1, func(s policy.Settings) traffic {
			if s.Alpha < 1 {
				return better
			}
			return congested
		})
		rec := &memRecorder{}
		tu, cfg := newFakeLoop(t, sw, rec)
		// With alpha_start, rule start's change from the draft's alpha 1;
		// without, rule delay's.
		tu.cfg.Policy.AlphaStart = alphaStart
		for _, at := range []time.Duration{0, cfg.JudgeWindow} {
			if err := tu.Cycle(ctx, t1.Add(at)); err != nil {
				t.Fatal(err)
			}
		}
		for _, a := range rec.actions {
			in, err := json.Marshal(a.Inputs)
			if err != nil {
				t.Fatal(err)
			}
			var row struct {
				Judgement map[string]any `json:"judgement"`
			}
			if err := json.Unmarshal(in, &row); err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%s %s: keep %v, not_compared %v", a.Rule, a.Outcome, row.Judgement["keep"], row.Judgement["not_compared"]))
		}
	}
	want := []string{"start confirmed: keep true, not_compared true", "delay confirmed: keep true, not_compared <nil>"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows' judgements (-want +got):\n%s", diff)
	}
}

// TestTunerPendingBound: a commit the telemetry never shows applied (the
// collector stopped, say) is not left pending until the switch's
// deadline: at judge_window + 2 periods after the push the tuner cancels
// it and says why.
func TestTunerPendingBound(t *testing.T) {
	ctx := context.Background()
	addr, _ := testSwitch(t)
	cfg := testConfig(SwitchConfig{Name: "n1", Address: addr, Insecure: true})
	yc := ygnmiClient(t, addr)
	src := constSource(yc, congested)
	stale := bdpSettings(1) // telemetry frozen at the settings of before
	src.stale = &stale
	rec := &memRecorder{}
	tu, _ := newLoop(t, cfg, src, rec)
	if err := tu.Cycle(ctx, t1); err != nil {
		t.Fatal(err)
	}
	// Pending while the judgement may still come.
	for at := cfg.Period; at < cfg.JudgeBound(); at += cfg.Period {
		if err := tu.Cycle(ctx, t1.Add(at)); err != nil {
			t.Fatal(err)
		}
		if !tu.Pending("n1") {
			t.Fatalf("not pending %v after the push, before judge_window + 2 periods (%v)", at, cfg.JudgeBound())
		}
	}
	if err := tu.Cycle(ctx, t1.Add(cfg.JudgeBound())); err != nil {
		t.Fatal(err)
	}
	if tu.Pending("n1") {
		t.Fatal("still pending at judge_window + 2 periods")
	}
	if a := switchAlpha(t, yc); a != 1 {
		t.Errorf("alpha %v, want 1: the unjudged commit cancelled", a)
	}
	noCommitPending(t, yc)
	if r := rec.actions[0].Reason; rec.actions[0].Outcome != OutcomeRolledBack ||
		!strings.Contains(r, "not judged within judge_window + 2 periods (20s)") || !strings.HasSuffix(r, "; cancelled") {
		t.Errorf("row %s: %q; want rolled-back, not judged within the bound, cancelled", rec.actions[0].Outcome, r)
	}
}

// TestTunerServesOthers: one switch refusing Set and one whose telemetry
// cannot be read do not stop the third from being tuned.
func TestTunerServesOthers(t *testing.T) {
	ctx := context.Background()
	good, _ := testSwitch(t)
	refusing, _ := testSwitch(t, service.WithInterceptors([]grpc.UnaryServerInterceptor{refuseSet}, nil))
	unread, _ := testSwitch(t)
	cfg := testConfig(SwitchConfig{Name: "refusing", Address: refusing, Insecure: true},
		SwitchConfig{Name: "unread", Address: unread, Insecure: true},
		SwitchConfig{Name: "good", Address: good, Insecure: true})
	src := &scriptSource{
		clients: map[string]*ygnmi.Client{"good": ygnmiClient(t, good), "refusing": ygnmiClient(t, refusing),
			"unread": ygnmiClient(t, unread)},
		traffic: func(string, policy.Settings) traffic { return congested },
		fail:    map[string]error{"unread": errors.New("connection refused")},
	}
	rec := &memRecorder{}
	tu, _ := newLoop(t, cfg, src, rec)
	err := tu.Cycle(ctx, t1)
	for _, want := range []string{`switch "refusing": set:`, "set refused by test", `switch "unread": reading telemetry: connection refused`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Cycle error %v does not say %q", err, want)
		}
	}
	want := []row{
		{"refusing", policy.RuleDelay, OutcomeRefused, bdpSettings(congestedAlpha)},
		{"good", policy.RuleDelay, OutcomePushed, bdpSettings(congestedAlpha)},
	}
	if diff := cmp.Diff(want, rec.rows()); diff != "" {
		t.Errorf("tuner_actions (-want +got):\n%s", diff)
	}
	if !tu.Pending("good") || tu.Pending("refusing") {
		t.Errorf("pending: good %v refusing %v; want true, false", tu.Pending("good"), tu.Pending("refusing"))
	}
}

// TestTunerDryRun records the decision and pushes nothing.
func TestTunerDryRun(t *testing.T) {
	ctx := context.Background()
	addr, _ := testSwitch(t)
	cfg := testConfig(SwitchConfig{Name: "n1", Address: addr, Insecure: true})
	cfg.DryRun = true
	yc := ygnmiClient(t, addr)
	src := constSource(yc, congested)
	rec := &memRecorder{}
	tu, _ := newLoop(t, cfg, src, rec)
	for i := range 3 { // a cool-down apart: three decisions, nothing pushed
		if err := tu.Cycle(ctx, t1.Add(time.Duration(i)*cfg.Policy.Cooldown)); err != nil {
			t.Fatal(err)
		}
	}
	alpha, err := ygnmi.Get(ctx, yc, ocpath.Root().Lhcnp().Interfaces().Interface("wan0").Queues().Queue(0).State().Alpha(), ygnmi.WithUseGet())
	if err != nil {
		t.Fatal(err)
	}
	if alpha != 1 {
		t.Errorf("alpha on the switch %v after a dry run, want 1 (untouched)", alpha)
	}
	want := []row{
		{"n1", policy.RuleDelay, OutcomeDryRun, bdpSettings(congestedAlpha)},
		{"n1", policy.RuleDelay, OutcomeDryRun, bdpSettings(congestedAlpha)},
		{"n1", policy.RuleDelay, OutcomeDryRun, bdpSettings(congestedAlpha)},
	}
	if diff := cmp.Diff(want, rec.rows()); diff != "" {
		t.Errorf("tuner_actions (-want +got):\n%s", diff)
	}
}

// gapRows runs periods cycles of a steady queue whose telemetry has gaps
// for the first gapPeriods, and returns what was recorded.
func gapRows(t *testing.T, gapPeriods, periods int) (*memRecorder, Config) {
	t.Helper()
	ctx := context.Background()
	addr, _ := testSwitch(t)
	cfg := testConfig(SwitchConfig{Name: "n1", Address: addr, Insecure: true})
	src := constSource(ygnmiClient(t, addr), traffic{delayRTT: 0.3, util: 0.95})
	rec := &memRecorder{}
	tu, _ := newLoop(t, cfg, src, rec)
	for i := range periods {
		src.gaps = i < gapPeriods
		if err := tu.Cycle(ctx, t1.Add(time.Duration(i)*cfg.Period)); err != nil {
			t.Fatal(err)
		}
	}
	return rec, cfg
}

// TestTunerGapsRecordedOnce: telemetry with gaps is recorded as a hold
// when the gap starts, not every period (a gap shorter than filling a
// window takes is normal life: a start, a collector restarting), and as a
// hold when it ends; the steady queue after it once.
func TestTunerGapsRecordedOnce(t *testing.T) {
	rec, cfg := gapRows(t, 3, 6)
	// The gap when it starts (an error: nothing can be decided) and when
	// it ends; then the steady queue's hold, once for its three periods.
	want := []row{
		{"n1", policy.RuleGap, OutcomeHold, bdpSettings(1)},
		{"n1", policy.RuleGap, OutcomeHold, bdpSettings(1)},
		{"n1", policy.RuleSteady, OutcomeHold, bdpSettings(1)},
	}
	if diff := cmp.Diff(want, rec.rows()); diff != "" {
		t.Errorf("tuner_actions (-want +got):\n%s", diff)
	}
	if got, want := rec.actions[1].Reason, fmt.Sprintf("ended after %v (3 periods)", 3*cfg.Period); !strings.Contains(got, want) {
		t.Errorf("the gap's end: reason %q, want %q", got, want)
	}
}

// TestTunerGapEndChangesNothing: the row that ends a telemetry episode
// when the window is complete again, and the queue's next decision is a
// change, is a hold that changed nothing: its settings are the queue's
// before the change, and its direction hold (rule gap holds for no
// direction), not the change's (it showed "tighten" and alpha 1 → 0.75).
func TestTunerGapEndChangesNothing(t *testing.T) {
	ctx := context.Background()
	addr, _ := testSwitch(t)
	cfg := testConfig(SwitchConfig{Name: "n1", Address: addr, Insecure: true})
	src := constSource(ygnmiClient(t, addr), congested)
	rec := &memRecorder{}
	tu, _ := newLoop(t, cfg, src, rec)
	for i := range 3 {
		src.gaps = i < 2
		if err := tu.Cycle(ctx, t1.Add(time.Duration(i)*cfg.Period)); err != nil {
			t.Fatal(err)
		}
	}
	want := []row{
		{"n1", policy.RuleGap, OutcomeHold, bdpSettings(1)},
		{"n1", policy.RuleGap, OutcomeHold, bdpSettings(1)},
		{"n1", policy.RuleDelay, OutcomePushed, bdpSettings(congestedAlpha)},
	}
	if diff := cmp.Diff(want, rec.rows()); diff != "" {
		t.Fatalf("tuner_actions (-want +got):\n%s", diff)
	}
	end := rec.actions[1]
	if end.Before != end.After || end.Inputs.Direction != "hold" || end.Inputs.Rule != policy.RuleGap || end.Inputs.Step != 0 {
		t.Errorf("the gap's end: before %+v, after %+v, inputs' rule %q, direction %q, step %v; want no change, rule gap, direction hold, no step",
			end.Before, end.After, end.Inputs.Rule, end.Inputs.Direction, end.Inputs.Step)
	}
	if !strings.Contains(end.Reason, "now a change") {
		t.Errorf("the gap's end: reason %q does not say a change comes next", end.Reason)
	}
}

// TestTunerGapOfOnePeriod: a gap of one period ends "after 5s (1
// period)", not "(1 periods)".
func TestTunerGapOfOnePeriod(t *testing.T) {
	rec, cfg := gapRows(t, 1, 2)
	if len(rec.actions) < 2 {
		t.Fatalf("%d rows, want the gap and its end", len(rec.actions))
	}
	if got, want := rec.actions[1].Reason, fmt.Sprintf("ended after %v (1 period):", cfg.Period); !strings.Contains(got, want) {
		t.Errorf("the gap's end: reason %q, want %q", got, want)
	}
}

// TestTunerTelemetryMissingIsAnError: a gap that lasts longer than filling
// a window takes (window + period) is no longer the normal life of a start:
// one error row, once, saying what to look at; its end a hold.
func TestTunerTelemetryMissingIsAnError(t *testing.T) {
	rec, _ := gapRows(t, 7, 8)
	want := []row{
		{"n1", policy.RuleGap, OutcomeHold, bdpSettings(1)},
		{"n1", policy.RuleGap, OutcomeError, bdpSettings(1)},
		{"n1", policy.RuleGap, OutcomeHold, bdpSettings(1)},
		{"n1", policy.RuleSteady, OutcomeHold, bdpSettings(1)},
	}
	if diff := cmp.Diff(want, rec.rows()); diff != "" {
		t.Errorf("tuner_actions (-want +got):\n%s", diff)
	}
	if e := rec.actions[1].Error; !strings.Contains(e, "telemetry: no window to decide on for 20s (5 periods; a window fills within 15s)") {
		t.Errorf("the error row's error %q", e)
	}
}

// TestTunerIdleQueueIsNoError: the collector stores a leaf when it
// changes, so an idle queue and a standing one have no rows in a window
// while the switch's busy queue has them. Read through PostgreSQL
// (PGSource) their windows are their state, carried: the tuner decides on
// every queue, with no no-data or gap however long they stay unchanged.
// When the switch stops reporting (nothing in the collector's ingest
// ledger), every queue's window has a gap, then too few samples: one
// telemetry episode, a hold, then, once it outlasts a window and a period,
// one error per queue.
func TestTunerIdleQueueIsNoError(t *testing.T) {
	ctx := context.Background()
	pool, _ := pgtest.New(t)
	c := newCollectorRows(t, pool)
	steadyPort(c, t1.Add(-time.Hour)) // queue 2 busy for 40 s
	const reporting = 40
	for i := 1; i <= reporting; i++ {
		c.leaf("wan0", 2, "counters/bytes", t1.Add(time.Duration(i)*time.Second), 5_000_000+i*1_000_000)
	}
	cfg := testConfig(SwitchConfig{Name: "n1", Address: "localhost:1", Insecure: true})
	cfg.DryRun = true
	rec := &memRecorder{}
	tu, err := New(cfg, NewPGSource(pool), nil, rec)
	if err != nil {
		t.Fatal(err)
	}
	stop := t1.Add(reporting * time.Second)
	for now := t1.Add(cfg.Window); !now.After(stop.Add(cfg.Window + 4*cfg.Period)); now = now.Add(cfg.Period) {
		if err := tu.Cycle(ctx, now); err != nil {
			t.Fatal(err)
		}
	}
	errs := map[uint8]int{}
	for _, a := range rec.actions {
		if telemetryRule(a.Rule) && !a.Time.After(stop.Add(cfg.Policy.MaxGap)) {
			t.Errorf("%s queue %d at +%v, while the switch reports: %s %s: %s", a.Interface, a.Queue, a.Time.Sub(t1), a.Outcome, a.Rule, a.Reason)
		}
		if a.Outcome == OutcomeError {
			errs[a.Queue]++
			if !telemetryRule(a.Rule) {
				t.Errorf("queue %d: error for rule %s, want gap or no-data: %s", a.Queue, a.Rule, a.Error)
			}
		}
	}
	if want := map[uint8]int{0: 1, 1: 1, 2: 1}; !maps.Equal(errs, want) {
		t.Errorf("error rows by queue %v after the switch stopped reporting, want %v:\n%+v", errs, want, rec.rows())
	}
}

// TestTunerHoldsRecordedOnce: a hold is recorded when the queue's rule
// becomes it, not every period: a steady queue for five periods is one
// row; then the congested queue's changes.
func TestTunerHoldsRecordedOnce(t *testing.T) {
	ctx := context.Background()
	addr, _ := testSwitch(t)
	cfg := testConfig(SwitchConfig{Name: "n1", Address: addr, Insecure: true})
	cfg.DryRun = true
	tr := traffic{delayRTT: 0.3, util: 0.95}
	// The closure reads tr, which changes at period 5.
	src := &scriptSource{clients: map[string]*ygnmi.Client{"n1": ygnmiClient(t, addr)},
		traffic: func(string, policy.Settings) traffic { return tr }}
	rec := &memRecorder{}
	tu, _ := newLoop(t, cfg, src, rec)
	for i := range 8 {
		if i == 5 {
			tr = congested
		}
		if err := tu.Cycle(ctx, t1.Add(time.Duration(i)*cfg.Period)); err != nil {
			t.Fatal(err)
		}
	}
	// Dry-run: the switch keeps alpha 1, so the congested queue is decided
	// on again every period (TestTunerDryRun).
	want := []row{
		{"n1", policy.RuleSteady, OutcomeHold, bdpSettings(1)},
		{"n1", policy.RuleDelay, OutcomeDryRun, bdpSettings(congestedAlpha)},
		{"n1", policy.RuleDelay, OutcomeDryRun, bdpSettings(congestedAlpha)},
		{"n1", policy.RuleDelay, OutcomeDryRun, bdpSettings(congestedAlpha)},
	}
	if diff := cmp.Diff(want, rec.rows()); diff != "" {
		t.Errorf("tuner_actions (-want +got):\n%s", diff)
	}
}

// switchAlpha reads the alpha wan0 queue 0 runs.
func switchAlpha(t *testing.T, yc *ygnmi.Client) float64 {
	t.Helper()
	a, err := ygnmi.Get(context.Background(), yc, ocpath.Root().Lhcnp().Interfaces().Interface("wan0").Queues().Queue(0).State().Alpha(), ygnmi.WithUseGet())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// noCommitPending fails the test unless the switch takes a plain Set
// (which it refuses while a commit waits for confirmation).
func noCommitPending(t *testing.T, yc *ygnmi.Client) {
	t.Helper()
	noCommitPendingAt(t, yc, 1)
}

// noCommitPendingAt is noCommitPending setting alpha (the value the queue
// should keep).
func noCommitPendingAt(t *testing.T, yc *ygnmi.Client, alpha float64) {
	t.Helper()
	q := ocpath.Root().Lhcnp().Interfaces().Interface("wan0").Queues().Queue(0).Config().Alpha()
	if _, err := ygnmi.Replace(context.Background(), yc, q, alpha); err != nil {
		t.Errorf("a plain Set: %v; want none pending", err)
	}
}

// TestTunerReleasesPendingOnStop: when Run's context ends with a commit
// pending, the tuner cancels it on the switch (the old alpha is back at
// once, nothing stays pending) and records it rolled back; a cancel the
// switch refuses is recorded with its error.
func TestTunerReleasesPendingOnStop(t *testing.T) {
	for _, tt := range []struct {
		desc         string
		refuseCancel bool
		wantAlpha    float64
		wantReason   string
	}{
		{"cancelled", false, 1, "cancelled: the tuner stopped before it could judge the change"},
		{"cancel refused", true, congestedAlpha, "its cancel failed, the switch rolls it back at"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var refusing atomic.Bool
			refuse := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				if refusing.Load() {
					return refuseSet(ctx, req, info, h)
				}
				return h(ctx, req)
			}
			addr, _ := testSwitch(t, service.WithInterceptors([]grpc.UnaryServerInterceptor{refuse}, nil))
			cfg := testConfig(SwitchConfig{Name: "n1", Address: addr, Insecure: true})
			cfg.Period, cfg.RollbackDuration = time.Hour, 3*time.Hour // one cycle: the first, at once
			yc := ygnmiClient(t, addr)
			src := constSource(yc, congested)
			rec := &memRecorder{}
			tu, _ := newLoop(t, cfg, src, rec)
			// The first cycle ends with its Set answered (a commit
			// pending), so stopping Run cannot catch a Set in flight.
			if err := tu.Cycle(context.Background(), time.Now()); err != nil { // Run's clock: the commit's deadline ahead
				t.Fatalf("Cycle: %v", err)
			}
			if !tu.Pending("n1") || switchAlpha(t, yc) != congestedAlpha {
				t.Fatalf("after the first cycle: pending %v, alpha %v; want a commit of alpha %v pending",
					tu.Pending("n1"), switchAlpha(t, yc), congestedAlpha)
			}
			refusing.Store(tt.refuseCancel)
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // Run serves one cycle (it follows the pending commit) and stops
			if err := tu.Run(ctx); err != nil {
				t.Fatalf("Run: %v", err)
			}
			refusing.Store(false)
			if a := switchAlpha(t, yc); a != tt.wantAlpha {
				t.Errorf("alpha %v after Run returned, want %v", a, tt.wantAlpha)
			}
			if !tt.refuseCancel {
				noCommitPending(t, yc)
			}
			want := []row{{"n1", policy.RuleDelay, OutcomeRolledBack, bdpSettings(congestedAlpha)}}
			if diff := cmp.Diff(want, rec.rows()); diff != "" {
				t.Errorf("tuner_actions (-want +got):\n%s", diff)
			}
			if r := rec.actions[0].Reason; !strings.Contains(r, tt.wantReason) {
				t.Errorf("reason %q, want %q", r, tt.wantReason)
			}
			if e := rec.actions[0].Error; tt.refuseCancel != (e != "") {
				t.Errorf("error %q; want one only when the cancel failed", e)
			}
		})
	}
}

// TestTunerCancelsCommitWhoseAnswerWasLost: a Set the switch applied but
// whose answer did not come within switch_timeout is cancelled on the
// switch, not left pending for no one, and recorded rolled back.
func TestTunerCancelsCommitWhoseAnswerWasLost(t *testing.T) {
	// Commit requests are applied, then answered only when the client has
	// given up; confirm and cancel pass.
	slow := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		if s, ok := req.(*gnmi.SetRequest); ok && err == nil {
			for _, e := range s.GetExtension() {
				if e.GetCommit().GetCommit() != nil {
					<-ctx.Done()
					return nil, status.FromContextError(ctx.Err()).Err()
				}
			}
		}
		return resp, err
	}
	addr, _ := testSwitch(t, service.WithInterceptors([]grpc.UnaryServerInterceptor{slow}, nil))
	cfg := testConfig(SwitchConfig{Name: "n1", Address: addr, Insecure: true})
	cfg.SwitchTimeout = 3 * time.Second
	yc := ygnmiClient(t, addr)
	src := constSource(yc, congested)
	rec := &memRecorder{}
	tu, _ := newLoop(t, cfg, src, rec)
	if err := tu.Cycle(context.Background(), t1); err == nil {
		t.Error("Cycle: no error for a Set without an answer")
	}
	if tu.Pending("n1") {
		t.Error("the tuner follows a commit it has no answer for")
	}
	if a := switchAlpha(t, yc); a != 1 {
		t.Errorf("alpha %v, want 1: the applied commit cancelled", a)
	}
	noCommitPending(t, yc)
	want := []row{{"n1", policy.RuleDelay, OutcomeRolledBack, bdpSettings(congestedAlpha)}}
	if diff := cmp.Diff(want, rec.rows()); diff != "" {
		t.Errorf("tuner_actions (-want +got):\n%s", diff)
	}
	if r := rec.actions[0].Reason; !strings.Contains(r, "the Set's answer was lost, but the switch had applied it: cancelled") {
		t.Errorf("reason %q does not say the lost Set was cancelled", r)
	}
}

// TestTunerCheckPastTimeoutIsNotALostAnswer: a commit whose check of the
// switch's settings (a Get) has no answer within switch_timeout was never
// sent: its row is refused with the check's error, and no cancel goes to
// the switch. Before, the Get's DEADLINE_EXCEEDED was taken for a Set
// whose answer was lost: a cancel the switch refused ("no commit is
// waiting for confirmation") and the row rolled back "if the switch
// applied it" (TestTunerEndToEnd under load then waited for an alpha the
// switch never had).
func TestTunerCheckPastTimeoutIsNotALostAnswer(t *testing.T) {
	// The second Get (the source's is the first) is answered only when the
	// client has given up: the tuner's check before its Set.
	var gets, sets, cancels atomic.Int32
	fault := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		switch r := req.(type) {
		case *gnmi.GetRequest:
			if gets.Add(1) == 2 {
				<-ctx.Done()
				return nil, status.FromContextError(ctx.Err()).Err()
			}
		case *gnmi.SetRequest:
			sets.Add(1)
			for _, e := range r.GetExtension() {
				if e.GetCommit().GetCancel() != nil {
					cancels.Add(1)
				}
			}
		}
		return h(ctx, req)
	}
	addr, _ := testSwitch(t, service.WithInterceptors([]grpc.UnaryServerInterceptor{fault}, nil))
	cfg := testConfig(SwitchConfig{Name: "n1", Address: addr, Insecure: true})
	cfg.SwitchTimeout = 2 * time.Second
	yc := ygnmiClient(t, addr)
	rec := &memRecorder{}
	tu, _ := newLoop(t, cfg, constSource(yc, congested), rec)
	if err := tu.Cycle(context.Background(), t1); !errors.Is(err, ErrNotPushed) {
		t.Errorf("Cycle: %v, want ErrNotPushed", err)
	}
	if n := sets.Load(); n != 0 {
		t.Errorf("%d Sets sent (%d cancels), want none: the commit was never sent", n, cancels.Load())
	}
	if tu.Pending("n1") {
		t.Error("the tuner follows a commit it never sent")
	}
	if a := switchAlpha(t, yc); a != 1 {
		t.Errorf("alpha %v, want 1", a)
	}
	want := []row{{"n1", policy.RuleDelay, OutcomeRefused, bdpSettings(congestedAlpha)}}
	if diff := cmp.Diff(want, rec.rows()); diff != "" {
		t.Errorf("tuner_actions (-want +got):\n%s", diff)
	}
	if len(rec.actions) == 1 {
		if e := rec.actions[0].Error; !strings.Contains(e, "not pushed: reading the queues' settings") {
			t.Errorf("error %q, want the check's", e)
		}
		if r := rec.actions[0].Reason; strings.Contains(r, "lost") {
			t.Errorf("reason %q: no answer was lost", r)
		}
	}
}

// TestTunerRefusesStaleDecision: a decision taken on telemetry behind the
// switch (it shows alpha 0.978, the switch runs 1) is not pushed: refused,
// with an error naming what the switch runs, and the switch untouched.
func TestTunerRefusesStaleDecision(t *testing.T) {
	addr, _ := testSwitch(t)
	cfg := testConfig(SwitchConfig{Name: "n1", Address: addr, Insecure: true})
	yc := ygnmiClient(t, addr)
	src := constSource(yc, congested)
	stale := bdpSettings(0.978)
	src.stale = &stale
	rec := &memRecorder{}
	tu, _ := newLoop(t, cfg, src, rec)
	err := tu.Cycle(context.Background(), t1)
	if !errors.Is(err, ErrNotBefore) {
		t.Errorf("Cycle: %v, want ErrNotBefore", err)
	}
	if tu.Pending("n1") {
		t.Error("a stale decision is pending")
	}
	if a := switchAlpha(t, yc); a != 1 {
		t.Errorf("alpha %v after a stale decision, want 1 (untouched)", a)
	}
	if len(rec.actions) != 1 || rec.actions[0].Outcome != OutcomeRefused || !strings.Contains(rec.actions[0].Error, "it runs alpha 1, decided on 0.978") {
		t.Errorf("tuner_actions %+v, want one refused row naming alpha 1 and 0.978", rec.actions)
	}
}

// TestTunerNothingPushedUnrecorded: when the audit trail cannot be
// written, nothing is pushed.
func TestTunerNothingPushedUnrecorded(t *testing.T) {
	ctx := context.Background()
	addr, _ := testSwitch(t)
	cfg := testConfig(SwitchConfig{Name: "n1", Address: addr, Insecure: true})
	src := constSource(ygnmiClient(t, addr), congested)
	rec := &memRecorder{fail: fmt.Errorf("database down")}
	tu, _ := newLoop(t, cfg, src, rec)
	if err := tu.Cycle(ctx, t1); err == nil || !strings.Contains(err.Error(), "database down") {
		t.Errorf("Cycle: %v, want the recording error", err)
	}
	if tu.Pending("n1") {
		t.Error("a change was pushed without its tuner_actions row")
	}
}

func TestConfigValidate(t *testing.T) {
	const insecureWithTLS = "switches[0].insecure: set together with TLS keys (ca_file, cert_file, key_file, server_name, skip_verify)"
	tests := []struct {
		desc string
		edit func(*Config)
		want string
	}{
		{"valid", func(*Config) {}, ""},
		{"no db", func(c *Config) { c.DB = "" }, "db: missing"},
		{"no switches", func(c *Config) { c.Switches = nil }, "switches: none"},
		{"switch without address", func(c *Config) { c.Switches[0].Address = "" }, "switches[0].address: missing"},
		{"switch address without port", func(c *Config) { c.Switches[0].Address = "n1.example" },
			`switches[0].address: "n1.example": missing port in address (want host:port)`},
		{"switch address port out of range", func(c *Config) { c.Switches[0].Address = "127.0.0.1:99999" },
			`switches[0].address: "127.0.0.1:99999": invalid port "99999"`},
		{"switch twice", func(c *Config) { c.Switches = append(c.Switches, c.Switches[0]) }, `switches[1].name: "n1" listed twice`},
		{"TLS without CA", func(c *Config) { c.Switches[0].Insecure = false }, "switches[0].ca_file: missing"},
		// Read at the first connection, every push failing then.
		{"CA file missing", func(c *Config) { c.Switches[0].Insecure, c.Switches[0].CAFile = false, "/nonexistent/ca.pem" },
			"switches[0].ca_file: stat /nonexistent/ca.pem: no such file or directory"},
		{"skip_verify with a CA", func(c *Config) {
			c.Switches[0].Insecure, c.Switches[0].SkipVerify, c.Switches[0].CAFile = false, true, os.DevNull
		}, "switches[0].skip_verify: set together with ca_file: the certificate would not be verified, the CA ignored; give one of them"},
		// Plain gRPC reads none of them: before, each was ignored without a word.
		{"insecure with ca_file", func(c *Config) { c.Switches[0].CAFile = os.DevNull }, insecureWithTLS},
		{"insecure with cert_file and key_file", func(c *Config) { c.Switches[0].CertFile, c.Switches[0].KeyFile = os.DevNull, os.DevNull },
			insecureWithTLS},
		{"insecure with server_name", func(c *Config) { c.Switches[0].ServerName = "n1.lab" }, insecureWithTLS},
		{"insecure with skip_verify", func(c *Config) { c.Switches[0].SkipVerify = true }, insecureWithTLS},
		{"key file missing", func(c *Config) { c.Switches[0].KeyFile = "/nonexistent/key.pem" },
			"switches[0].key_file: stat /nonexistent/key.pem: no such file or directory"},
		// As the collector's Target.Check: a client certificate is both.
		{"cert file without key file", func(c *Config) {
			c.Switches[0].Insecure, c.Switches[0].SkipVerify, c.Switches[0].CertFile = false, true, os.DevNull
		}, "switches[0].cert_file: needs key_file (and the other way round)"},
		{"key file without cert file", func(c *Config) {
			c.Switches[0].Insecure, c.Switches[0].SkipVerify, c.Switches[0].KeyFile = false, true, os.DevNull
		}, "switches[0].cert_file: needs key_file (and the other way round)"},
		{"rollback shorter than judging", func(c *Config) { c.RollbackDuration = c.JudgeWindow }, "rollback_duration"},
		{"policy outside the model", func(c *Config) { c.Policy.AlphaMax = 5000 }, "policy.alpha_max: 5000 is outside the YANG range"},
		{"v-growth minimum 0", func(c *Config) { c.Policy.VGrowthMinShare = 0 }, "policy.v_growth_min_share: 0 is not a finite share of R_port > 0"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			c := testConfig(SwitchConfig{Name: "n1", Address: "127.0.0.1:9339", Insecure: true})
			tt.edit(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate: %v, want %q", err, tt.want)
			}
		})
	}
}

// TestTunerAbandonLeavesTheCommitToTheSwitch: what `lhcnp tuner --once`
// does at its end: the pushed commit stays pending on the switch (its
// rollback is the switch's), and the row says so instead of staying
// pushed for ever.
func TestTunerAbandonLeavesTheCommitToTheSwitch(t *testing.T) {
	addr, _ := testSwitch(t)
	cfg := testConfig(SwitchConfig{Name: "n1", Address: addr, Insecure: true})
	yc := ygnmiClient(t, addr)
	src := constSource(yc, congested)
	rec := &memRecorder{}
	tu, _ := newLoop(t, cfg, src, rec)
	if err := tu.Cycle(context.Background(), time.Now()); err != nil {
		t.Fatalf("Cycle: %v", err)
	}
	if err := tu.Abandon(context.Background(), time.Now()); err != nil {
		t.Fatalf("Abandon: %v", err)
	}
	if tu.Pending("n1") {
		t.Error("the tuner still follows the commit it abandoned")
	}
	if a := switchAlpha(t, yc); a != congestedAlpha {
		t.Errorf("alpha %v, want %v: the commit left on the switch", a, congestedAlpha)
	}
	want := []row{{"n1", policy.RuleDelay, OutcomeRolledBack, bdpSettings(congestedAlpha)}}
	if diff := cmp.Diff(want, rec.rows()); diff != "" {
		t.Errorf("tuner_actions (-want +got):\n%s", diff)
	}
	if r := rec.actions[0].Reason; !strings.Contains(r, "the tuner ran once and does not follow it; the switch rolls it back at") {
		t.Errorf("reason %q does not say the commit is left to the switch", r)
	}
}

// refuseCancel is a target interceptor that refuses a commit's cancel
// while refusing is set.
func refuseCancel(refusing *atomic.Bool) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if s, ok := req.(*gnmi.SetRequest); ok && refusing.Load() {
			for _, e := range s.GetExtension() {
				if e.GetCommit().GetCancel() != nil {
					return nil, status.Error(codes.Unavailable, "cancel refused by test")
				}
			}
		}
		return h(ctx, req)
	}
}

// TestTunerReleaseKeepsTheJudgement: a commit judged worse whose cancel
// the switch refused stays pending (the next period tries again); the
// stopping tuner that cancels it keeps the judgement in the row, not
// "before it could judge".
func TestTunerReleaseKeepsTheJudgement(t *testing.T) {
	ctx := context.Background()
	var refusing atomic.Bool
	refusing.Store(true)
	addr, pub := testSwitch(t, service.WithInterceptors([]grpc.UnaryServerInterceptor{refuseCancel(&refusing)}, nil))
	cfg := testConfig(SwitchConfig{Name: "n1", Address: addr, Insecure: true})
	src := &scriptSource{clients: map[string]*ygnmi.Client{"n1": ygnmiClient(t, addr)},
		traffic: func(_ string, s policy.Settings) traffic {
			if s.Alpha < 1 {
				return worse
			}
			return congested
		}}
	rec := &memRecorder{}
	tu, _ := newLoop(t, cfg, src, rec)
	for i, at := range []time.Duration{0, cfg.JudgeWindow, cfg.JudgeWindow + cfg.Period} {
		err := tu.Cycle(ctx, t1.Add(at))
		if i > 0 && (err == nil || !strings.Contains(err.Error(), "cancel refused by test")) {
			t.Errorf("Cycle at %v: %v, want the refused cancel", at, err)
		}
		if err := pub.PublishNow(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !tu.Pending("n1") {
		t.Fatal("not pending although its cancel was refused")
	}
	refusing.Store(false)
	if err := tu.Release(ctx, t1.Add(cfg.JudgeWindow+2*cfg.Period)); err != nil {
		t.Fatalf("Release: %v", err)
	}
	r := rec.actions[0].Reason
	for _, want := range []string{"not confirmed: ", "worse", "; cancelled when the tuner stopped"} {
		if !strings.Contains(r, want) {
			t.Errorf("reason %q does not say %q", r, want)
		}
	}
}

// TestTunerOutcomeWrittenWhenTheDatabaseIsBack: an outcome whose write
// fails (here a confirm's, the database away as the judgement comes) is
// kept and written again at the start of each period until it is, and
// once: the row's reason gets the outcome's once. It failed before: the
// outcome was never written again, and the row stayed `pushed` for good
// though the switch ran the change confirmed.
func TestTunerOutcomeWrittenWhenTheDatabaseIsBack(t *testing.T) {
	ctx := context.Background()
	sw := newFakeSwitch(1, func(s policy.Settings) traffic {
		if s.Alpha < 1 {
			return better
		}
		return congested
	})
	rec := &outageRecorder{}
	tu, cfg := newFakeLoop(t, sw, rec)
	if err := tu.Cycle(ctx, t1); err != nil {
		t.Fatal(err)
	}
	if sw.pending == nil {
		t.Fatal("no commit after a congested window")
	}
	rec.down = true // the database goes away as the judgement comes
	if err := tu.Cycle(ctx, t1.Add(cfg.JudgeWindow)); err == nil {
		t.Error("no error for an outcome that could not be written")
	}
	if sw.pending != nil {
		t.Fatal("not confirmed on the switch")
	}
	_ = tu.Cycle(ctx, t1.Add(cfg.JudgeWindow+cfg.Period)) // still away: kept
	rec.down = false
	for i := 2; i <= 5; i++ {
		_ = tu.Cycle(ctx, t1.Add(cfg.JudgeWindow+time.Duration(i)*cfg.Period))
	}
	a := rec.actions[0]
	if a.Outcome != OutcomeConfirmed || strings.Count(a.Reason, "; applied and") != 1 || a.Inputs.Judgement == nil {
		t.Errorf("row 1 (%s → alpha %v) outcome %s, reason %q, judgement %v with the database back; the switch runs alpha %v, confirmed: want %s, its reason and judgement once",
			a.Rule, a.After.Alpha, a.Outcome, a.Reason, a.Inputs.Judgement, sw.runs.Alpha, OutcomeConfirmed)
	}
}

// TestTunerRowsWrittenOnceThroughLostAnswers: every write of the audit
// trail whose answer is lost after the database committed it (the
// connection gone between the two) ends as one row saying what happened.
// A decision whose Record "failed" was not pushed, and the row its write
// left is deleted the next period, before the tuner decides and pushes
// again; an outcome written twice appends its reason once; an operator's
// row recorded again is the same row (its key). A hold whose Record
// failed while the database was away is recorded once it is back. Each
// failed before: the phantom row said `pushed` for good beside the real
// one, a second operator row was added, and the hold was never recorded.
func TestTunerRowsWrittenOnceThroughLostAnswers(t *testing.T) {
	ctx := context.Background()
	t.Run("decision", func(t *testing.T) {
		sw := newFakeSwitch(1, func(s policy.Settings) traffic {
			if s.Alpha < 1 {
				return better
			}
			return congested
		})
		rec := &outageRecorder{lostAnswer: true}
		tu, cfg := newFakeLoop(t, sw, rec)
		if err := tu.Cycle(ctx, t1); !errors.Is(err, errAnswerLost) {
			t.Fatalf("Cycle: %v; want the lost answer", err)
		}
		if sw.commits != 0 {
			t.Fatal("pushed a change whose row's write failed")
		}
		rec.lostAnswer = false
		if err := tu.Cycle(ctx, t1.Add(cfg.Period)); err != nil {
			t.Fatal(err)
		}
		// The outcome's answer lost too: written again, appended once.
		rec.lostAnswer = true
		_ = tu.Cycle(ctx, t1.Add(cfg.Period+cfg.JudgeWindow))
		rec.lostAnswer = false
		for i := 2; i < 5; i++ {
			if err := tu.Cycle(ctx, t1.Add(cfg.Period*time.Duration(i)+cfg.JudgeWindow)); err != nil {
				t.Fatal(err)
			}
		}
		var pushed, confirmed []Action
		for _, a := range rec.actions {
			switch a.Outcome {
			case OutcomePushed:
				pushed = append(pushed, a)
			case OutcomeConfirmed:
				confirmed = append(confirmed, a)
			}
		}
		if len(pushed) != 0 || len(confirmed) != 1 || sw.commits != 1 {
			t.Fatalf("rows %+v after %d commits; want the first decision's row deleted and one confirmed", rec.rows(), sw.commits)
		}
		if r := confirmed[0].Reason; strings.Count(r, "; applied and") != 1 {
			t.Errorf("confirmed row's reason %q: want the outcome's once", r)
		}
	})
	t.Run("operator", func(t *testing.T) {
		sw := newFakeSwitch(1, func(policy.Settings) traffic { return better })
		rec := &outageRecorder{}
		tu, cfg := newFakeLoop(t, sw, rec)
		if err := tu.Cycle(ctx, t1); err != nil {
			t.Fatal(err)
		}
		sw.runs = bdpSettings(2) // another client's Set
		rec.lostAnswer = true
		if err := tu.Cycle(ctx, t1.Add(cfg.Period)); err == nil {
			t.Fatal("no error for an operator row whose answer was lost")
		}
		rec.lostAnswer = false
		for i := 2; i < 5; i++ {
			if err := tu.Cycle(ctx, t1.Add(time.Duration(i)*cfg.Period)); err != nil {
				t.Fatal(err)
			}
		}
		n := 0
		for _, a := range rec.actions {
			if a.Outcome == OutcomeOperator {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d operator rows; want 1: rows %+v", n, rec.rows())
		}
	})
	t.Run("hold", func(t *testing.T) {
		sw := newFakeSwitch(1, func(policy.Settings) traffic { return better })
		rec := &outageRecorder{down: true}
		tu, cfg := newFakeLoop(t, sw, rec)
		if err := tu.Cycle(ctx, t1); err == nil {
			t.Fatal("no error for a hold that could not be recorded")
		}
		rec.down = false
		for i := 1; i < 4; i++ {
			if err := tu.Cycle(ctx, t1.Add(time.Duration(i)*cfg.Period)); err != nil {
				t.Fatal(err)
			}
		}
		want := []row{{"n1", policy.RuleSteady, OutcomeHold, bdpSettings(1)}}
		if diff := cmp.Diff(want, rec.rows()); diff != "" {
			t.Errorf("tuner_actions (-want +got):\n%s", diff)
		}
	})
}

// TestTunerDatabaseOutage: with the database away, a period fails with
// the message docs/tuner.md's Faults table quotes, reading the operators'
// holds (read first: no queue is touched whose hold cannot be read), and
// pushes nothing. It failed before against the table, which said
// "reading telemetry".
func TestTunerDatabaseOutage(t *testing.T) {
	sw := newFakeSwitch(1, func(policy.Settings) traffic { return congested })
	rec := &outageRecorder{holdsDown: true}
	tu, _ := newFakeLoop(t, sw, rec)
	err := tu.Cycle(context.Background(), t1)
	if want := `switch "n1": reading the operators' holds: `; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Cycle with the database away: %v; docs/tuner.md's Faults table says %q", err, want)
	}
	if sw.commits != 0 {
		t.Errorf("%d commits with the database away", sw.commits)
	}
}
