package sim

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// TestDefaultsAreTheNodes: a scenario that sets no Long-haul CNP parameter
// (section7-unstaged.yaml sets only k_base, the default value) configures
// every queue of its nodes with the thresholds a real node starts with
// (lhcnp.DefaultQueueConfig, which dataplane.TestQueueDefaultsAreTheDrafts
// and modeltest.TestDefaults tie to the YANG model): "the draft's defaults"
// are the same in the simulator, the switch and the tuner's starting point.
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
		RateReducePercent   uint16
		ResumePercent       uint16
	}
	pick := func(q lhcnp.QueueConfig) thresholds {
		return thresholds{q.KBaseBytes, q.Alpha, q.KMaxMode, q.KMinMode, q.VECNPercent, q.VGrowthBytesPerSec,
			q.MeasurementInterval, q.TriggerPersistence, q.Action.RateReducePercent, q.Action.ResumePercent}
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
			got[n.Switch().Name()] = pick(c.Interface.Queue)
			for port, ic := range c.Interfaces {
				got[n.Switch().Name()+":"+port] = pick(ic.Queue)
			}
		}
		return got
	}
	node := pick(lhcnp.DefaultQueueConfig())
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
