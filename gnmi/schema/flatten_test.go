package schema

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/ygot/ygot"
	"google.golang.org/protobuf/testing/protocmp"
)

// valuesYgot is Values done by ygot, the oracle of flatten.
func valuesYgot(t *testing.T, root *oc.Root) map[string]*gnmi.TypedValue {
	t.Helper()
	ns, err := ygot.TogNMINotifications(root, 0, ygot.GNMINotificationsConfig{UsePathElem: true})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*gnmi.TypedValue{}
	for _, n := range ns {
		for _, u := range n.GetUpdate() {
			out[PathString(Join(n.GetPrefix(), u.GetPath()))] = u.GetVal()
		}
	}
	return out
}

func TestFlattenMatchesYgot(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	root := &oc.Root{}
	l := root.GetOrCreateLhcnp()
	g := l.GetOrCreateGlobal()
	g.GetOrCreateConfig().Enabled = ygot.Bool(true)
	g.GetOrCreateConfig().MetricType = oc.LhcnpTypes_MetricType_RTT
	g.GetOrCreateState().CnpDscp = ygot.Uint8(48)
	g.GetOrCreateRocev2Receivers().GetOrCreateReceiver("10.0.0.0/8").GetOrCreateConfig().Prefix = ygot.String("10.0.0.0/8")
	q := l.GetOrCreateInterfaces().GetOrCreateInterface("wan0").GetOrCreateQueues().GetOrCreateQueue(3)
	q.GetOrCreateConfig().Alpha = ygot.Float64(1.5)
	q.GetOrCreateState().QueueGrowthRate = ygot.Int64(-5)
	q.GetOrCreateState().GetOrCreateCounters().CnpPauseSent = ygot.Uint64(9)
	q.GetOrCreateActionPolicy().GetOrCreateState().DefaultAction = oc.LhcnpTypes_CnpAction_PAUSE
	f := l.GetOrCreateFlowTable().GetOrCreateFlows().GetOrCreateFlow("10.0.0.1", "10.0.0.4", 100, 200)
	f.GetOrCreateState().LearnedFrom = oc.LhcnpTypes_FlowLearningSource_CM_MESSAGE
	f.GetOrCreateState().GetOrCreateCounters().Bytes = ygot.Uint64(1)

	vals, err := s.Values(root)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*gnmi.TypedValue{}
	for _, v := range vals {
		got[PathString(v.Path)] = v.Val
	}
	if diff := cmp.Diff(valuesYgot(t, root), got, protocmp.Transform()); diff != "" {
		t.Errorf("flatten (-ygot, +ours):\n%s", diff)
	}
}
