package modeltest

import (
	"testing"

	"github.com/openconfig/ygnmi/ygnmi"
	"github.com/openconfig/ygot/ygot"

	"github.com/lhcnp/lhcnp/gen/oc/ocpath"
)

// TestPaths pins the gNMI paths the ygnmi path structs produce for the leaves
// other components depend on: the tuner's Set targets and the collector's
// subscriptions.
func TestPaths(t *testing.T) {
	q := ocpath.Root().Lhcnp().Interfaces().Interface("wan0").Queues().Queue(3)
	for _, tt := range []struct {
		desc   string
		ps     ygnmi.PathStruct
		want   string
		config bool
	}{
		{"tuner alpha", q.Config().Alpha().PathStruct(), "/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=3]/config/alpha", true},
		{"tuner kmax mode", q.Config().KmaxMode().PathStruct(), "/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=3]/config/kmax-mode", true},
		{"tuner kmax", q.Config().Kmax().PathStruct(), "/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=3]/config/kmax", true},
		{"tuner v-growth", q.Config().VGrowth().PathStruct(), "/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=3]/config/v-growth", true},
		{"effective kmax", q.State().EffectiveKmax().PathStruct(), "/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=3]/state/effective-kmax", false},
		{"queue counters", q.State().Counters().PathStruct(), "/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=3]/state/counters", false},
		{"flow", ocpath.Root().Lhcnp().FlowTable().Flows().Flow("10.0.0.1", "10.0.0.4", 100, 200).State().LastSeen().PathStruct(),
			"/lhcnp/flow-table/flows/flow[destination-address=10.0.0.4][destination-qp=200][source-address=10.0.0.1][source-qp=100]/state/last-seen", false},
		{"fcn mapping", ocpath.Root().Lhcnp().Fcn().Mappings().Mapping(74565).State().PathStruct(),
			"/lhcnp/fcn/mappings/mapping[flow-label=74565]/state", false},
		{"global", ocpath.Root().Lhcnp().Global().Config().Enabled().PathStruct(), "/lhcnp/global/config/enabled", true},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			p, _, err := ygnmi.ResolvePath(tt.ps)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ygot.PathToString(p)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("path = %s, want %s", got, tt.want)
			}
			if p.GetOrigin() != "" {
				t.Errorf("origin = %q, want none", p.GetOrigin())
			}
		})
	}
	// Config leaves are ConfigQueries (usable with ygnmi.Replace), state
	// leaves only SingletonQueries.
	var _ ygnmi.ConfigQuery[float64] = q.Config().Alpha()
	var _ ygnmi.SingletonQuery[uint64] = q.State().EffectiveKmax()
}
