package policy

import (
	"math"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openconfig/goyang/pkg/yang"

	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/gen/oc"
)

// TestYANGRanges: the YANG ranges written down as constants (the policy
// does not depend on generated code) are the model's, read from the
// generated schema: a change of the model fails here, not at a switch
// refusing the tuner's Set.
func TestYANGRanges(t *testing.T) {
	tree, err := oc.UnzipSchema()
	if err != nil {
		t.Fatal(err)
	}
	cfg := tree["Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue_Config"]
	if cfg == nil {
		t.Fatal("no queue config in the generated schema")
	}
	type bounds struct {
		Min, Max       float64
		FractionDigits int
	}
	leaf := func(name string) bounds {
		e := cfg.Dir[name]
		if e == nil || e.Type == nil || len(e.Type.Range) != 1 {
			t.Fatalf("queue config/%s: no leaf with one range in the generated schema", name)
		}
		r := e.Type.Range[0]
		num := func(n yang.Number) float64 {
			f, err := strconv.ParseFloat(n.String(), 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
		return bounds{Min: num(r.Min), Max: num(r.Max), FractionDigits: int(e.Type.FractionDigits)}
	}
	for _, tt := range []struct {
		desc string
		leaf string
		want bounds
	}{
		{desc: "alpha", leaf: "alpha", want: bounds{Min: YANGAlphaMin, Max: YANGAlphaMax, FractionDigits: YANGAlphaFractionDigit}},
		{desc: "kmax", leaf: "kmax", want: bounds{Min: YANGKMaxMinBytes, Max: math.MaxUint64}},
		{desc: "v-growth", leaf: "v-growth", want: bounds{Min: YANGVGrowthMinBytesPerSec, Max: math.MaxUint64}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, leaf(tt.leaf)); diff != "" {
				t.Errorf("queue config/%s (-want constants +got model):\n%s", tt.leaf, diff)
			}
		})
	}
}

// TestVGrowthStartShareIsTheDefault: the V_growth a tightening gives a
// queue whose QGR trigger is off is, on a 100 Gbit/s port, the node's
// default (lhcnp.DefaultQueueConfig, which server/dataplane's
// TestYANGDefaultsAreTheNodes ties to the YANG default v-growth): the
// share is written as a share, and kept equal to the default here.
func TestVGrowthStartShareIsTheDefault(t *testing.T) {
	const portRateBitsPerSec = 100e9
	got := int64(DefaultConfig().VGrowthStartShare * portRateBitsPerSec / 8)
	if want := lhcnp.DefaultQueueConfig().VGrowthBytesPerSec; got != want {
		t.Errorf("V_growth of the starting share on a 100 Gbit/s port = %d B/s, want the node's default %d B/s", got, want)
	}
}
