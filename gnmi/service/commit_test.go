package service_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmi/proto/gnmi_ext"
	"github.com/openconfig/ygot/ygot"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// commitEnv is an env whose commit-confirmed events arrive on a channel.
type commitEnv struct {
	*env
	events chan service.CommitEvent
}

func newCommitEnv(t *testing.T) *commitEnv {
	t.Helper()
	ev := make(chan service.CommitEvent, 16)
	e := newEnv(t, service.WithCommitObserver(func(c service.CommitEvent) { ev <- c }))
	return &commitEnv{env: e, events: ev}
}

// next returns the next commit event (it waits on the channel; the fake
// clock decides when a rollback happens).
func (e *commitEnv) next(t *testing.T) service.CommitEvent {
	t.Helper()
	select {
	case ev := <-e.events:
		return ev
	case <-time.After(20 * time.Second):
		t.Fatal("no commit event")
	}
	return service.CommitEvent{}
}

func (e *commitEnv) none(t *testing.T) {
	t.Helper()
	select {
	case ev := <-e.events:
		t.Fatalf("unexpected commit event %+v", ev)
	default:
	}
}

func ext(c *gnmi_ext.Commit) []*gnmi_ext.Extension {
	return []*gnmi_ext.Extension{{Ext: &gnmi_ext.Extension_Commit{Commit: c}}}
}

func commitReq(id string, d time.Duration, ups ...*gnmi.Update) *gnmi.SetRequest {
	cr := &gnmi_ext.CommitRequest{}
	if d != 0 {
		cr.RollbackDuration = durationpb.New(d)
	}
	return &gnmi.SetRequest{Update: ups, Extension: ext(&gnmi_ext.Commit{Id: id, Action: &gnmi_ext.Commit_Commit{Commit: cr}})}
}

func confirmReq(id string) *gnmi.SetRequest {
	return &gnmi.SetRequest{Extension: ext(&gnmi_ext.Commit{Id: id, Action: &gnmi_ext.Commit_Confirm{Confirm: &gnmi_ext.CommitConfirm{}}})}
}

func cancelReq(id string) *gnmi.SetRequest {
	return &gnmi.SetRequest{Extension: ext(&gnmi_ext.Commit{Id: id, Action: &gnmi_ext.Commit_Cancel{Cancel: &gnmi_ext.CommitCancel{}}})}
}

func durationReq(id string, d time.Duration) *gnmi.SetRequest {
	return &gnmi.SetRequest{Extension: ext(&gnmi_ext.Commit{Id: id, Action: &gnmi_ext.Commit_SetRollbackDuration{
		SetRollbackDuration: &gnmi_ext.CommitSetRollbackDuration{RollbackDuration: durationpb.New(d)}}})}
}

// dpJSON is the configuration the dataplane last applied, as JSON.
func dpJSON(t *testing.T, e *env) string {
	t.Helper()
	s, err := ygot.EmitJSON(e.dp.last(), &ygot.EmitJSONConfig{Format: ygot.RFC7951})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var alphaHalf = upd(q3+"/config/alpha", jsonv(`0.5`))

// TestCommitConfirmedRollsBack: a commit applies at once, Get shows it, and
// when no confirmation comes within the rollback duration the config, the
// store and the dataplane are exactly as before.
func TestCommitConfirmedRollsBack(t *testing.T) {
	e := newCommitEnv(t)
	before, dpBefore := configLeaves(t, e.env), dpJSON(t, e.env)

	if _, err := e.c.Set(ctx(t), commitReq("c1", time.Minute, alphaHalf)); err != nil {
		t.Fatal(err)
	}
	if ev := e.next(t); ev.Kind != "commit" || ev.ID != "c1" || !ev.Deadline.Equal(epoch.Add(time.Minute)) {
		t.Errorf("event %+v, want commit c1 with a deadline a minute on", ev)
	}
	if got := configLeaves(t, e.env); !has(got, q3+"/config/alpha = double 0.5") {
		t.Errorf("commit not applied: %q", got)
	}
	if e.dp.last().GetInterfaces().GetInterface("wan0").GetQueues().GetQueue(3).GetConfig().GetAlpha() != 0.5 {
		t.Error("dataplane does not run the commit")
	}
	if id, dl, ok := e.h.PendingCommit(); !ok || id != "c1" || !dl.Equal(epoch.Add(time.Minute)) {
		t.Errorf("PendingCommit = %q %v %v", id, dl, ok)
	}

	e.clk.Advance(59 * time.Second)
	e.none(t)
	e.clk.Advance(time.Second)
	if ev := e.next(t); ev.Kind != "rollback" || ev.ID != "c1" {
		t.Fatalf("event %+v, want rollback of c1", ev)
	}
	if diff := cmp.Diff(before, configLeaves(t, e.env)); diff != "" {
		t.Errorf("config after rollback (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(dpBefore, dpJSON(t, e.env)); diff != "" {
		t.Errorf("dataplane after rollback (-before +after):\n%s", diff)
	}
	if _, _, ok := e.h.PendingCommit(); ok {
		t.Error("still pending after the rollback")
	}
	// A confirmation that comes too late says what happened.
	_, err := e.c.Set(ctx(t), confirmReq("c1"))
	if st := status.Convert(err); st.Code() != codes.FailedPrecondition || !strings.Contains(st.Message(), "rolled back at") {
		t.Errorf("late confirm: %v, want FailedPrecondition saying it was rolled back", err)
	}
	// The server takes a new commit (and a plain Set) again.
	if _, err := e.c.Set(ctx(t), &gnmi.SetRequest{Update: []*gnmi.Update{alphaHalf}}); err != nil {
		t.Errorf("Set after rollback: %v", err)
	}
}

// TestCommitConfirmedRollsBackToTheStateBeforeIt: whatever came before a
// commit (a confirmed commit, a plain Set, a cancelled or a rolled-back
// commit), its rollback restores the configuration in force when it was
// made, in the store and the dataplane: never the initial one, never an
// older one. (TestTunerEndToEnd once saw a switch end at the initial alpha
// after a rollback; the switch was right, see docs/tuner.md "Tests".)
func TestCommitConfirmedRollsBackToTheStateBeforeIt(t *testing.T) {
	alpha := func(v string) *gnmi.Update { return upd(q3+"/config/alpha", jsonv(v)) }
	for _, tt := range []struct {
		desc string
		// history runs before the commit under test; it leaves alpha at
		// want.
		history func(t *testing.T, e *commitEnv)
		want    string
	}{{
		desc: "after a confirmed commit",
		history: func(t *testing.T, e *commitEnv) {
			mustSet(t, e, commitReq("c0", time.Minute, alpha(`0.978`)))
			mustSet(t, e, confirmReq("c0"))
		},
		want: q3 + "/config/alpha = double 0.978",
	}, {
		desc: "after two confirmed commits",
		history: func(t *testing.T, e *commitEnv) {
			mustSet(t, e, commitReq("c0", time.Minute, alpha(`0.978`)))
			mustSet(t, e, confirmReq("c0"))
			mustSet(t, e, commitReq("c1", time.Minute, alpha(`0.9`)))
			mustSet(t, e, confirmReq("c1"))
		},
		want: q3 + "/config/alpha = double 0.9",
	}, {
		desc: "after a plain Set",
		history: func(t *testing.T, e *commitEnv) {
			mustSet(t, e, &gnmi.SetRequest{Update: []*gnmi.Update{alpha(`0.7`)}})
		},
		want: q3 + "/config/alpha = double 0.7",
	}, {
		desc: "after a cancelled commit on a confirmed one",
		history: func(t *testing.T, e *commitEnv) {
			mustSet(t, e, commitReq("c0", time.Minute, alpha(`0.978`)))
			mustSet(t, e, confirmReq("c0"))
			mustSet(t, e, commitReq("c1", time.Minute, alpha(`0.5`)))
			mustSet(t, e, cancelReq("c1"))
		},
		want: q3 + "/config/alpha = double 0.978",
	}, {
		desc: "after a rolled-back commit on a confirmed one",
		history: func(t *testing.T, e *commitEnv) {
			mustSet(t, e, commitReq("c0", time.Minute, alpha(`0.978`)))
			mustSet(t, e, confirmReq("c0"))
			mustSet(t, e, commitReq("c1", time.Minute, alpha(`0.5`)))
			e.clk.Advance(time.Minute)
			for ev := e.next(t); ev.Kind != "rollback"; ev = e.next(t) {
			}
		},
		want: q3 + "/config/alpha = double 0.978",
	}} {
		t.Run(tt.desc, func(t *testing.T) {
			e := newCommitEnv(t)
			tt.history(t, e)
			before, dpBefore := configLeaves(t, e.env), dpJSON(t, e.env)
			if !has(before, tt.want) {
				t.Fatalf("history left %q, want %s", before, tt.want)
			}
			mustSet(t, e, commitReq("pushed", 8*time.Second, alpha(`0.25`)))
			if got := configLeaves(t, e.env); !has(got, q3+"/config/alpha = double 0.25") {
				t.Fatalf("commit not applied: %q", got)
			}
			e.clk.Advance(8 * time.Second)
			for ev := e.next(t); ev.ID != "pushed" || ev.Kind != "rollback"; ev = e.next(t) {
			}
			if diff := cmp.Diff(before, configLeaves(t, e.env)); diff != "" {
				t.Errorf("config after rollback (-before the commit +after the rollback):\n%s", diff)
			}
			if diff := cmp.Diff(dpBefore, dpJSON(t, e.env)); diff != "" {
				t.Errorf("dataplane after rollback (-before the commit +after the rollback):\n%s", diff)
			}
		})
	}
}

// mustSet sends req and fails the test on an error.
func mustSet(t *testing.T, e *commitEnv, req *gnmi.SetRequest) {
	t.Helper()
	if _, err := e.c.Set(ctx(t), req); err != nil {
		t.Fatalf("Set: %v", err)
	}
}

func TestCommitConfirmedConfirm(t *testing.T) {
	e := newCommitEnv(t)
	if _, err := e.c.Set(ctx(t), commitReq("c1", time.Minute, alphaHalf)); err != nil {
		t.Fatal(err)
	}
	e.next(t)
	if _, err := e.c.Set(ctx(t), confirmReq("c1")); err != nil {
		t.Fatal(err)
	}
	if ev := e.next(t); ev.Kind != "confirm" {
		t.Errorf("event %+v, want confirm", ev)
	}
	e.clk.Advance(time.Hour)
	e.none(t)
	if got := configLeaves(t, e.env); !has(got, q3+"/config/alpha = double 0.5") {
		t.Errorf("confirmed commit gone: %q", got)
	}
	if _, err := e.c.Set(ctx(t), &gnmi.SetRequest{Update: []*gnmi.Update{upd(q3+"/config/alpha", jsonv(`2`))}}); err != nil {
		t.Errorf("Set after confirm: %v", err)
	}
}

func TestCommitConfirmedCancel(t *testing.T) {
	e := newCommitEnv(t)
	before, dpBefore := configLeaves(t, e.env), dpJSON(t, e.env)
	if _, err := e.c.Set(ctx(t), commitReq("c1", 0, alphaHalf)); err != nil {
		t.Fatal(err)
	}
	if ev := e.next(t); !ev.Deadline.Equal(epoch.Add(service.DefaultRollbackDuration)) {
		t.Errorf("deadline %v without rollback_duration, want the 10 minute default", ev.Deadline)
	}
	if _, err := e.c.Set(ctx(t), cancelReq("c1")); err != nil {
		t.Fatal(err)
	}
	if ev := e.next(t); ev.Kind != "cancel" {
		t.Errorf("event %+v, want cancel", ev)
	}
	if diff := cmp.Diff(before, configLeaves(t, e.env)); diff != "" {
		t.Errorf("config after cancel (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(dpBefore, dpJSON(t, e.env)); diff != "" {
		t.Errorf("dataplane after cancel (-before +after):\n%s", diff)
	}
	e.clk.Advance(time.Hour)
	e.none(t)
}

func TestCommitConfirmedSetRollbackDuration(t *testing.T) {
	e := newCommitEnv(t)
	if _, err := e.c.Set(ctx(t), commitReq("c1", time.Minute, alphaHalf)); err != nil {
		t.Fatal(err)
	}
	e.next(t)
	e.clk.Advance(30 * time.Second)
	if _, err := e.c.Set(ctx(t), durationReq("c1", 5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if ev := e.next(t); ev.Kind != "set-rollback-duration" || !ev.Deadline.Equal(epoch.Add(30*time.Second+5*time.Minute)) {
		t.Errorf("event %+v, want the deadline 5 min from now", ev)
	}
	e.clk.Advance(time.Minute) // past the first deadline
	e.none(t)
	e.clk.Advance(4 * time.Minute)
	if ev := e.next(t); ev.Kind != "rollback" {
		t.Errorf("event %+v, want rollback at the new deadline", ev)
	}
}

// TestCommitConfirmedErrors: the codes of gnmi-commit-confirmed.md 3.2;
// a refused request changes nothing.
func TestCommitConfirmedErrors(t *testing.T) {
	for _, tt := range []struct {
		desc    string
		pending bool // a commit "c1" is pending first
		req     *gnmi.SetRequest
		code    codes.Code
		msg     string
	}{
		{"second commit while one is pending", true, commitReq("c2", time.Minute, alphaHalf), codes.FailedPrecondition, `commit "c1" is waiting for confirmation`},
		{"plain Set while a commit is pending", true, &gnmi.SetRequest{Update: []*gnmi.Update{alphaHalf}}, codes.FailedPrecondition, `commit "c1" is waiting for confirmation`},
		{"confirm with nothing pending", false, confirmReq("c1"), codes.FailedPrecondition, "no commit is waiting"},
		{"cancel with nothing pending", false, cancelReq("c1"), codes.FailedPrecondition, "no commit is waiting"},
		{"new duration with nothing pending", false, durationReq("c1", time.Minute), codes.FailedPrecondition, "no commit is waiting"},
		{"confirm of another id", true, confirmReq("c9"), codes.InvalidArgument, `the commit waiting for confirmation is "c1"`},
		{"cancel of another id", true, cancelReq("c9"), codes.InvalidArgument, `the commit waiting for confirmation is "c1"`},
		{"no id", false, commitReq("", time.Minute, alphaHalf), codes.InvalidArgument, "id is required"},
		{"no action", false, &gnmi.SetRequest{Extension: ext(&gnmi_ext.Commit{Id: "c1"})}, codes.InvalidArgument, "no action"},
		{"negative duration", false, commitReq("c1", -time.Second, alphaHalf), codes.InvalidArgument, "not a positive duration"},
		{"zero new duration", true, durationReq("c1", 0), codes.InvalidArgument, "positive rollback_duration"},
		{"confirm with updates", true, func() *gnmi.SetRequest { r := confirmReq("c1"); r.Update = []*gnmi.Update{alphaHalf}; return r }(),
			codes.InvalidArgument, "confirm takes no update"},
		{"commit whose update fails", false, commitReq("c1", time.Minute, upd(q3+"/config/alpha", jsonv(`"x"`))), codes.InvalidArgument, "invalid value"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			e := newCommitEnv(t)
			if tt.pending {
				if _, err := e.c.Set(ctx(t), commitReq("c1", time.Minute, upd(q3+"/config/v-growth", jsonv(`7`)))); err != nil {
					t.Fatal(err)
				}
				e.next(t)
			}
			before, applied := configLeaves(t, e.env), e.dp.count()
			_, err := e.c.Set(ctx(t), tt.req)
			if st := status.Convert(err); st.Code() != tt.code || !strings.Contains(st.Message(), tt.msg) {
				t.Errorf("Set: %v, want %v with %q", err, tt.code, tt.msg)
			}
			if diff := cmp.Diff(before, configLeaves(t, e.env)); diff != "" {
				t.Errorf("config changed (-before +after):\n%s", diff)
			}
			if e.dp.count() != applied {
				t.Errorf("dataplane applied %d more times", e.dp.count()-applied)
			}
			id, _, ok := e.h.PendingCommit()
			if ok != tt.pending || (ok && id != "c1") {
				t.Errorf("PendingCommit = %q %v, want pending %v", id, ok, tt.pending)
			}
			e.none(t)
		})
	}
}

// TestSetOfACallerThatGaveUpIsNotApplied: a Set (a commit or a plain one)
// whose caller gave up before it got the lock is refused with the
// context's status and changes nothing: a tuner whose Set timed out
// cancels it, and the Set must not land after that cancel and stay
// pending for no one.
func TestSetOfACallerThatGaveUpIsNotApplied(t *testing.T) {
	e := newCommitEnv(t)
	before := configLeaves(t, e.env)
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for _, req := range []*gnmi.SetRequest{commitReq("late", time.Minute, alphaHalf), {Update: []*gnmi.Update{alphaHalf}}} {
		_, err := e.h.Set(gone, req)
		if status.Code(err) != codes.Canceled {
			t.Errorf("Set with a cancelled context: %v, want Canceled", err)
		}
	}
	e.none(t)
	if diff := cmp.Diff(before, configLeaves(t, e.env)); diff != "" {
		t.Errorf("config changed (-before +after):\n%s", diff)
	}
}
