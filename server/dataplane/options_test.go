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
