package dataplane_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/gnmi/store"
)

// TestSetOptionReachesNode: each option leaf of a queue or of
// collaborative suppression (a deviation, off by default:
// docs/conformance.md) set true through gNMI reaches the running node's
// configuration, is returned by a Get of its config leaf and mirrored in
// its state leaf, and set false again turns the node's option off. Before
// any Set the node runs the draft's behaviour and the state says so.
func TestSetOptionReachesNode(t *testing.T) {
	const ap = q0 + "/action-policy"
	queue := func(c lhcnp.Config) lhcnp.QueueConfig { return c.Interfaces["n1:2"].Queues[0] }
	for _, tt := range []struct {
		desc   string
		config string // the config leaf; its state leaf is the same under state/
		node   func(lhcnp.Config) bool
		// needs are the leaves set true first, that the option needs
		// (refused without them: TestSetResumeOnDrain, TestSetOptionNeeds).
		needs []string
	}{
		{"overload-cut", q0 + "/config/overload-cut", func(c lhcnp.Config) bool { return queue(c).OverloadCut }, nil},
		{"overload-cut-growth", q0 + "/config/overload-cut-growth", func(c lhcnp.Config) bool { return queue(c).OverloadCutGrowth },
			[]string{q0 + "/config/overload-cut"}},
		{"one-cut-per-episode", q0 + "/config/one-cut-per-episode", func(c lhcnp.Config) bool { return queue(c).OneCutPerEpisode }, nil},
		{"per-flow-rtt", q0 + "/config/per-flow-rtt", func(c lhcnp.Config) bool { return queue(c).PerFlowRTT }, nil},
		{"repeat-resume", ap + "/config/repeat-resume", func(c lhcnp.Config) bool { return queue(c).Action.RepeatResume }, nil},
		{"resume-on-drain", ap + "/config/resume-on-drain", func(c lhcnp.Config) bool { return queue(c).Action.ResumeOnDrain },
			[]string{q0 + "/config/per-flow-rtt", ap + "/config/repeat-resume"}},
		// upstream-first, which it needs, is on by default: nothing to
		// set first.
		{"upstream-first-marked", collab + "/config/upstream-first-marked",
			func(c lhcnp.Config) bool { return c.Collaborative.UpstreamFirstMarked }, nil},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			r := newRig(t)
			r.run(t, engine.Millisecond)
			for _, p := range tt.needs {
				if err := r.setJSON(t, p, "true"); err != nil {
					t.Fatalf("set %s true: %v", p, err)
				}
			}
			state := stateOf(tt.config)
			node := func() bool { return tt.node(r.sw.Node.Config()) }
			if node() {
				t.Fatalf("before Set: the node's %s is on, want the draft's default (off)", tt.desc)
			}
			if got := r.getJSON(t, state); got != "false" {
				t.Errorf("before Set: %s = %s, want false", state, got)
			}
			for _, on := range []string{"true", "false"} {
				if err := r.setJSON(t, tt.config, on); err != nil {
					t.Fatalf("set %s %s: %v", tt.config, on, err)
				}
				if got, want := node(), on == "true"; got != want {
					t.Errorf("after Set %s: the node's %s = %v, want %v", on, tt.desc, got, want)
				}
				if got := r.getJSON(t, tt.config); got != on {
					t.Errorf("after Set %s: %s = %s", on, tt.config, got)
				}
				if got := r.getJSON(t, state); got != on {
					t.Errorf("after Set %s: %s = %s", on, state, got)
				}
			}
		})
	}
}

// stateOf is the state leaf that mirrors the config leaf path.
func stateOf(config string) string {
	i := strings.LastIndex(config, "/config/")
	return config[:i] + "/state/" + config[i+len("/config/"):]
}

// TestSetResumeOnDrain: resume-on-drain works only with per-flow-rtt and
// repeat-resume (it sizes its Resumes by them; alone it would do nothing),
// as the scenario loader says (resume_on_drain). Set alone, or with one
// of the two, it is INVALID_ARGUMENT naming its path and the reason, and
// the node, config and state keep it off; set with both in one
// SetRequest it reaches the node, its config leaf and its state leaf;
// set false again it is off, the other two still on.
func TestSetResumeOnDrain(t *testing.T) {
	const (
		ap    = q0 + "/action-policy"
		drain = ap + "/config/resume-on-drain"
		rtt   = q0 + "/config/per-flow-rtt"
		rep   = ap + "/config/repeat-resume"
	)
	r := newRig(t)
	r.run(t, engine.Millisecond)
	queue := func() lhcnp.QueueConfig { return r.sw.Node.Config().Interfaces["n1:2"].Queues[0] }
	for _, tt := range []struct {
		desc    string
		updates [][2]string // path, JSON value, in this order
	}{
		{"alone", [][2]string{{drain, "true"}}},
		{"with per-flow-rtt only", [][2]string{{rtt, "true"}, {drain, "true"}}},
		{"with repeat-resume only", [][2]string{{rep, "true"}, {drain, "true"}}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			err := r.setMany(tt.updates)
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), drain) ||
				!strings.Contains(err.Error(), "needs per-flow-rtt and repeat-resume") {
				t.Fatalf("set %v: %v, want InvalidArgument naming %s and what it needs", tt.updates, err, drain)
			}
			if queue().Action.ResumeOnDrain || queue().PerFlowRTT || queue().Action.RepeatResume {
				t.Errorf("the refused Set reached the node: %+v", queue())
			}
			// The config leaves were never set (a Get finds no data).
			for _, p := range []string{stateOf(drain), stateOf(rtt), stateOf(rep)} {
				if got := r.getJSON(t, p); got != "false" {
					t.Errorf("after the refused Set: %s = %s, want false", p, got)
				}
			}
		})
	}
	if err := r.setMany([][2]string{{rtt, "true"}, {rep, "true"}, {drain, "true"}}); err != nil {
		t.Fatalf("set resume-on-drain with per-flow-rtt and repeat-resume: %v", err)
	}
	if c := queue(); !c.Action.ResumeOnDrain || !c.PerFlowRTT || !c.Action.RepeatResume {
		t.Errorf("after the combined Set: the node's resume-on-drain %v, per-flow-rtt %v, repeat-resume %v, want all on",
			c.Action.ResumeOnDrain, c.PerFlowRTT, c.Action.RepeatResume)
	}
	for _, p := range []string{drain, stateOf(drain), stateOf(rtt), stateOf(rep)} {
		if got := r.getJSON(t, p); got != "true" {
			t.Errorf("after the combined Set: %s = %s, want true", p, got)
		}
	}
	if err := r.setJSON(t, drain, "false"); err != nil {
		t.Fatalf("set resume-on-drain false: %v", err)
	}
	if c := queue(); c.Action.ResumeOnDrain || !c.PerFlowRTT || !c.Action.RepeatResume {
		t.Errorf("after setting it false: the node's resume-on-drain %v, per-flow-rtt %v, repeat-resume %v, want off, on, on",
			c.Action.ResumeOnDrain, c.PerFlowRTT, c.Action.RepeatResume)
	}
	if got := r.getJSON(t, stateOf(drain)); got != "false" {
		t.Errorf("after setting it false: %s = %s", stateOf(drain), got)
	}
}

// TestSetOptionNeeds: overload-cut-growth works only with overload-cut
// (it sizes the growth trigger's cut as that option sizes a severe
// queue's) and upstream-first-marked only with upstream-first (it narrows
// that wait), as the scenario loader says (overload_cut_growth,
// upstream_first_marked). A Set that would leave either on without what
// it needs, by setting it or by turning the other off, is
// INVALID_ARGUMENT naming the option's path and what it needs, and the
// node and the state keep what they ran before it. upstream-first is on
// when not set (its default), so upstream-first-marked alone is taken.
func TestSetOptionNeeds(t *testing.T) {
	const (
		cut    = q0 + "/config/overload-cut"
		growth = q0 + "/config/overload-cut-growth"
		first  = collab + "/config/upstream-first"
		marked = collab + "/config/upstream-first-marked"
	)
	type options struct{ cut, growth, first, marked bool }
	for _, tt := range []struct {
		desc    string
		before  [][2]string // path, JSON value: a Set taken first
		updates [][2]string // the refused Set
		option  string      // the leaf the refusal names
		needs   string      // and what it says the leaf needs
	}{
		{"overload-cut-growth alone", nil, [][2]string{{growth, "true"}}, growth, "needs overload-cut"},
		{"overload-cut-growth with overload-cut false", nil, [][2]string{{cut, "false"}, {growth, "true"}}, growth, "needs overload-cut"},
		{"overload-cut off under overload-cut-growth", [][2]string{{cut, "true"}, {growth, "true"}}, [][2]string{{cut, "false"}},
			growth, "needs overload-cut"},
		{"upstream-first-marked with upstream-first false", nil, [][2]string{{first, "false"}, {marked, "true"}}, marked, "needs upstream-first"},
		{"upstream-first off under upstream-first-marked", [][2]string{{marked, "true"}}, [][2]string{{first, "false"}},
			marked, "needs upstream-first"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			r := newRig(t)
			r.run(t, engine.Millisecond)
			node := func() options {
				c := r.sw.Node.Config()
				q := c.Interfaces["n1:2"].Queues[0]
				return options{q.OverloadCut, q.OverloadCutGrowth, c.Collaborative.UpstreamFirst, c.Collaborative.UpstreamFirstMarked}
			}
			state := func() []string {
				var s []string
				for _, p := range []string{cut, growth, first, marked} {
					s = append(s, r.getJSON(t, stateOf(p)))
				}
				return s
			}
			if tt.before != nil {
				if err := r.setMany(tt.before); err != nil {
					t.Fatalf("set %v: %v", tt.before, err)
				}
			}
			wantNode, wantState := node(), state()
			err := r.setMany(tt.updates)
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tt.option) || !strings.Contains(err.Error(), tt.needs) {
				t.Fatalf("set %v: %v, want InvalidArgument naming %s and saying %q", tt.updates, err, tt.option, tt.needs)
			}
			if got := node(); got != wantNode {
				t.Errorf("the refused Set reached the node: %+v, want %+v", got, wantNode)
			}
			if diff := cmp.Diff(wantState, state()); diff != "" {
				t.Errorf("state of overload-cut, overload-cut-growth, upstream-first, upstream-first-marked after the refused Set (-want, +got):\n%s", diff)
			}
		})
	}
}

// setMany sends JSON_IETF values as the updates of one SetRequest, in
// order.
func (r *rig) setMany(updates [][2]string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var u []*gnmi.Update
	for _, pv := range updates {
		u = append(u, &gnmi.Update{Path: store.MustPath(pv[0]),
			Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(pv[1])}}})
	}
	_, err := r.c.Set(ctx, &gnmi.SetRequest{Update: u})
	return err
}

// TestSetDeviationReachesNode: leaves whose values depart from the draft
// (docs/conformance.md, Deviations) reach the running node through a gNMI
// Set and are in force there: pause-congestion-level 180 (the default 224),
// resume-enabled false, kmin-mode EXPLICIT with kmin 1 MB (K_min 1 MB, not
// the explicit 50 MB K_max's half), k-base 4000 below one maximum-sized
// frame (with a BDP K_max at a 1 Mb/s port rate: K_max 4000 bytes, not the
// default 64 KB) and learn-from-data-packets false. Before the Set the node
// runs the draft's value.
func TestSetDeviationReachesNode(t *testing.T) {
	const ap = q0 + "/action-policy"
	wan := func(n *lhcnp.Node) lhcnp.QueueState {
		for _, ps := range n.State(false).Ports {
			if ps.Name == "n1:2" {
				return ps.Queues[0]
			}
		}
		t.Fatal("no port n1:2")
		return lhcnp.QueueState{}
	}
	for _, tt := range []struct {
		desc string
		set  [][2]string
		// node reads the value in force at the node, in the node's terms.
		node               func(n *lhcnp.Node) any
		wantDraft, wantSet any
	}{
		{"pause-congestion-level", [][2]string{{ap + "/config/pause-congestion-level", "180"}},
			func(n *lhcnp.Node) any { return n.Config().Interfaces["n1:2"].Queues[0].Action.PauseLevel }, 224, 180},
		{"resume-enabled", [][2]string{{ap + "/config/resume-enabled", "false"}},
			func(n *lhcnp.Node) any { return n.Config().Interfaces["n1:2"].Queues[0].Action.ResumeEnabled }, true, false},
		{"kmin-mode explicit", [][2]string{{q0 + "/config/kmin-mode", `"EXPLICIT"`}, {q0 + "/config/kmin", `"1000000"`}},
			func(n *lhcnp.Node) any { return wan(n).KMinBytes }, int64(25_000_000), int64(1_000_000)},
		{"k-base below one frame", [][2]string{{q0 + "/config/kmax-mode", `"BDP_ADAPTIVE"`},
			{"/lhcnp/interfaces/interface[name=wan]/config/port-rate", `"1000000"`}, {q0 + "/config/k-base", `"4000"`}},
			func(n *lhcnp.Node) any { return wan(n).KMaxBytes }, int64(50_000_000), int64(4000)},
		{"learn-from-data-packets", [][2]string{{"/lhcnp/flow-table/config/learn-from-data-packets", "false"}},
			func(n *lhcnp.Node) any { return n.Config().FlowTable.LearnFromData }, true, false},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			r := newRig(t)
			r.run(t, engine.Millisecond)
			if got := tt.node(r.sw.Node); got != tt.wantDraft {
				t.Errorf("before Set: the node's %s is %v, want %v", tt.desc, got, tt.wantDraft)
			}
			if err := r.setMany(tt.set); err != nil {
				t.Fatalf("set %v: %v", tt.set, err)
			}
			if got := tt.node(r.sw.Node); got != tt.wantSet {
				t.Errorf("after Set %v: the node's %s is %v, want %v", tt.set, tt.desc, got, tt.wantSet)
			}
		})
	}
}
