package sim

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// TestDefaultsAreTheNodes: a scenario that sets no Long-haul CNP parameter
// (section7-unstaged.yaml sets only k_base, the default value) configures
// every port and queue of its nodes with the values a real node starts with
// (lhcnp.DefaultInterfaceConfig and DefaultQueueConfig, which
// dataplane.TestQueueDefaultsAreTheDrafts and modeltest.TestDefaults tie
// to the YANG model): "the draft's defaults" are the same in the
// simulator, the switch and the tuner's starting point.
// The §7 scenario states its departure (QD trigger alone) in its YAML.
func TestDefaultsAreTheNodes(t *testing.T) {
	type thresholds struct {
		KBaseBytes          int64
		Alpha               float64
		KMaxMode            lhcnp.KMaxMode
		KMinMode            lhcnp.KMinMode
		VECNPercent         float64
		VGrowthBytesPerSec  int64
		MeasurementInterval engine.Time
		TriggerPersistence  engine.Time
		PMax                float64
		DefaultAction       wire.Action
		RateReducePercent   uint16
		ResumeEnabled       bool
		ResumePercent       uint16
		// The port's bucket: port_cnp_interval 0 keeps the node's (§9).
		CNPRatePerSec, CNPBurst int64
	}
	pick := func(ic lhcnp.InterfaceConfig) thresholds {
		q := ic.Queue
		return thresholds{q.KBaseBytes, q.Alpha, q.KMaxMode, q.KMinMode, q.VECNPercent, q.VGrowthBytesPerSec,
			q.MeasurementInterval, q.TriggerPersistence, q.PMax, q.Action.DefaultAction, q.Action.RateReducePercent,
			q.Action.ResumeEnabled, q.Action.ResumePercent, ic.CNPRatePerSec, ic.CNPBurst}
	}
	run := func(sc *scenario.Scenario) map[string]thresholds {
		var m *LongHaulCNP
		if _, err := Run(context.Background(), sc, t.TempDir(), WithDuration(time.Microsecond), WithoutPlots(),
			WithLongHaulCNP(func(x *LongHaulCNP, _ *Env) { m = x })); err != nil {
			t.Fatal(err)
		}
		got := map[string]thresholds{}
		for _, n := range m.Nodes {
			c := n.Config()
			got[n.Switch().Name()] = pick(c.Interface)
			for port, ic := range c.Interfaces {
				got[n.Switch().Name()+":"+port] = pick(ic)
			}
		}
		return got
	}
	node := pick(lhcnp.DefaultInterfaceConfig())
	section7 := node
	section7.VECNPercent, section7.VGrowthBytesPerSec = 0, 0
	section7.TriggerPersistence = engine.FromDuration(100 * time.Microsecond)
	for _, tt := range []struct {
		desc, file string
		want       thresholds
	}{
		{"every parameter at its default", "section7-unstaged.yaml", node},
		{"§7: the QD trigger alone, stated in the file", "section7.yaml", section7},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			got := run(load(t, tt.file))
			if len(got) == 0 {
				t.Fatal("no congestion-aware node")
			}
			want := map[string]thresholds{}
			for k := range got {
				want[k] = tt.want
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("queue thresholds (-want +got):\n%s", diff)
			}
		})
	}
}
