package dataplane_test

import (
	"strings"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
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
	}{
		{"overload-cut", q0 + "/config/overload-cut", func(c lhcnp.QueueConfig) bool { return c.OverloadCut }},
		{"one-cut-per-episode", q0 + "/config/one-cut-per-episode", func(c lhcnp.QueueConfig) bool { return c.OneCutPerEpisode }},
		{"per-flow-rtt", q0 + "/config/per-flow-rtt", func(c lhcnp.QueueConfig) bool { return c.PerFlowRTT }},
		{"repeat-resume", ap + "/config/repeat-resume", func(c lhcnp.QueueConfig) bool { return c.Action.RepeatResume }},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			r := newRig(t)
			r.run(t, engine.Millisecond)
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
