package dataplane

import (
	"net/netip"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/openconfig/ygot/ygot"
)

// TestSourceRTTState: a flow's learnt round trip to its source is the
// leaf source-rtt in nanoseconds, and source-rtt-learned-from says whether
// it came from the flow's CM exchange or from its rate's answer to a cut
// (FlowState.SourceRTTFromRate); a flow without one has neither leaf.
func TestSourceRTTState(t *testing.T) {
	src, dst := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.4")
	other := netip.MustParseAddr("10.0.0.2")
	st := &lhcnp.State{}
	st.FlowTable.Flows = []lhcnp.FlowState{
		{Key: lhcnp.FlowKey{Src: src, Dst: dst, SrcQP: 100, DstQP: 200}, SourceRTT: 10*engine.Millisecond + 2*engine.Microsecond},
		{Key: lhcnp.FlowKey{Src: dst, Dst: src, SrcQP: 200, DstQP: 100}},
		{Key: lhcnp.FlowKey{Src: other, Dst: dst, SrcQP: 300, DstQP: 400}, SourceRTT: 2*engine.Millisecond + 150*engine.Microsecond, SourceRTTFromRate: true},
	}
	cfg := lhcnp.DefaultConfig()
	ports, err := NewPorts(nil)
	if err != nil {
		t.Fatal(err)
	}
	root := StateTree(st, &cfg, ports, func(t engine.Time) uint64 { return uint64(t.Nanos()) })
	flows := root.GetLhcnp().GetFlowTable().GetFlows()
	if got := flows.GetFlow("10.0.0.1", "10.0.0.4", 100, 200).GetState().SourceRtt; got == nil || *got != 10_002_000 {
		t.Errorf("source-rtt %v, want 10002000 ns", got)
	}
	if got := flows.GetFlow("10.0.0.1", "10.0.0.4", 100, 200).GetState().GetSourceRttLearnedFrom(); got != oc.LhcnpTypes_SourceRttOrigin_CM_EXCHANGE {
		t.Errorf("source-rtt-learned-from %v for a round trip from the CM exchange, want CM_EXCHANGE", got)
	}
	if got := flows.GetFlow("10.0.0.4", "10.0.0.1", 200, 100).GetState().SourceRtt; got != nil {
		t.Errorf("source-rtt %d for a flow without one, want no leaf", *got)
	}
	if got := flows.GetFlow("10.0.0.4", "10.0.0.1", 200, 100).GetState().GetSourceRttLearnedFrom(); got != oc.LhcnpTypes_SourceRttOrigin_UNSET {
		t.Errorf("source-rtt-learned-from %v for a flow without a round trip, want no leaf", got)
	}
	fs := flows.GetFlow("10.0.0.2", "10.0.0.4", 300, 400).GetState()
	if got := fs.SourceRtt; got == nil || *got != 2_150_000 {
		t.Errorf("source-rtt %v for a round trip from the rate's answer, want 2150000 ns", got)
	}
	if got := fs.GetSourceRttLearnedFrom(); got != oc.LhcnpTypes_SourceRttOrigin_RATE_RESPONSE {
		t.Errorf("source-rtt-learned-from %v for a round trip from the rate's answer, want RATE_RESPONSE", got)
	}
}

// TestOptionsTranslate: the queue leaves one-cut-per-episode, per-flow-rtt,
// overload-cut, overload-cut-growth, repeat-resume and resume-on-drain
// reach the node's queue configuration, collaborative-suppression
// upstream-first-marked the node's, and an unset leaf keeps the draft's
// behaviour (off).
func TestOptionsTranslate(t *testing.T) {
	ports, err := NewPorts(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, on := range []bool{false, true} {
		q := &oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue{Id: ygot.Uint8(3)}
		l := &oc.Lhcnp_Lhcnp{}
		if on {
			c := q.GetOrCreateConfig()
			c.OneCutPerEpisode, c.PerFlowRtt, c.OverloadCut, c.OverloadCutGrowth = ygot.Bool(true), ygot.Bool(true), ygot.Bool(true), ygot.Bool(true)
			ac := q.GetOrCreateActionPolicy().GetOrCreateConfig()
			ac.RepeatResume, ac.ResumeOnDrain = ygot.Bool(true), ygot.Bool(true)
			l.GetOrCreateCollaborativeSuppression().GetOrCreateConfig().UpstreamFirstMarked = ygot.Bool(true)
		}
		qc := queueConfig(q)
		if qc.OneCutPerEpisode != on || qc.PerFlowRTT != on || qc.OverloadCut != on || qc.OverloadCutGrowth != on ||
			qc.Action.RepeatResume != on || qc.Action.ResumeOnDrain != on {
			t.Errorf("set %v: one-cut %v, per-flow-rtt %v, overload-cut %v, overload-cut-growth %v, repeat-resume %v, resume-on-drain %v",
				on, qc.OneCutPerEpisode, qc.PerFlowRTT, qc.OverloadCut, qc.OverloadCutGrowth, qc.Action.RepeatResume, qc.Action.ResumeOnDrain)
		}
		c, err := ToConfig(l, ports)
		if err != nil {
			t.Fatalf("set %v: %v", on, err)
		}
		if c.Collaborative.UpstreamFirstMarked != on {
			t.Errorf("set %v: upstream-first-marked %v", on, c.Collaborative.UpstreamFirstMarked)
		}
	}
}

// TestNodeTotalsCountEveryPort: the node's notifications-sent and
// notifications-suppressed count every port's, a port the model names no
// interface for too (its interface is not in the tree); they counted the
// named ports' only.
func TestNodeTotalsCountEveryPort(t *testing.T) {
	st := &lhcnp.State{Ports: []lhcnp.PortState{{Name: "n1:0"}, {Name: "n1:1"}}}
	st.Ports[0].Counters.NotificationsSent = 5
	st.Ports[1].Counters.NotificationsSent = 7
	st.Ports[0].Queues[0].Counters.SuppressedFlowInterval = 2
	st.Ports[1].Queues[3].Counters.SuppressedPortLimit = 3
	cfg := lhcnp.DefaultConfig()
	ports, err := NewPorts([][2]string{{"wan", "n1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	root := StateTree(st, &cfg, ports, func(t engine.Time) uint64 { return uint64(t.Nanos()) })
	c := root.GetLhcnp().GetGlobal().GetState().GetCounters()
	if c.GetNotificationsSent() != 12 || c.GetNotificationsSuppressed() != 5 {
		t.Errorf("node totals sent %d, suppressed %d; want 12 and 5 (both ports')", c.GetNotificationsSent(), c.GetNotificationsSuppressed())
	}
	if got := root.GetLhcnp().GetInterfaces().GetInterface("wan").GetState().GetCounters().GetNotificationsSent(); got != 5 {
		t.Errorf("wan's notifications-sent %d, want 5", got)
	}
}
