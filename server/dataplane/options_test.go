package dataplane_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/gnmi/store"
)

// TestSetOptionReachesNode: each queue option leaf (a deviation, off by
// default: docs/conformance.md) set true through gNMI reaches the running
// node's queue configuration, is returned by a Get of its config leaf and
// mirrored in its state leaf, and set false again turns the node's option
// off. Before any Set the node runs the draft's behaviour and the state
// says so.
func TestSetOptionReachesNode(t *testing.T) {
	const ap = q0 + "/action-policy"
	for _, tt := range []struct {
		desc   string
		config string // the config leaf; its state leaf is the same under state/
		node   func(lhcnp.QueueConfig) bool
		// needs are the leaves set true first, that the option needs
		// (refused without them: TestSetResumeOnDrain).
		needs []string
	}{
		{"overload-cut", q0 + "/config/overload-cut", func(c lhcnp.QueueConfig) bool { return c.OverloadCut }, nil},
		{"one-cut-per-episode", q0 + "/config/one-cut-per-episode", func(c lhcnp.QueueConfig) bool { return c.OneCutPerEpisode }, nil},
		{"per-flow-rtt", q0 + "/config/per-flow-rtt", func(c lhcnp.QueueConfig) bool { return c.PerFlowRTT }, nil},
		{"repeat-resume", ap + "/config/repeat-resume", func(c lhcnp.QueueConfig) bool { return c.Action.RepeatResume }, nil},
		{"resume-on-drain", ap + "/config/resume-on-drain", func(c lhcnp.QueueConfig) bool { return c.Action.ResumeOnDrain },
			[]string{q0 + "/config/per-flow-rtt", ap + "/config/repeat-resume"}},
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
			node := func() bool { return tt.node(r.sw.Node.Config().Interfaces["n1:2"].Queues[0]) }
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
