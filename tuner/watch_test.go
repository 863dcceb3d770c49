package tuner

import (
	"math"
	"strconv"
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/lhcnp/lhcnp/tuner/policy"
)

// FuzzValueString: a leaf's value as the switch's stream carries it
// (double, decimal64 with any precision, uint, an enum with or without its
// module) reads as leafValues writes the settings it came from, so the
// configuration watch tells the tuner's own values from another client's.
func FuzzValueString(f *testing.F) {
	f.Add(0.75, int64(75), uint32(2), uint64(1_250_000_000))
	f.Add(1.0, int64(1), uint32(0), uint64(1))
	f.Add(0.001, int64(1), uint32(3), uint64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, alpha float64, digits int64, precision uint32, vg uint64) {
		if math.IsNaN(alpha) || math.IsInf(alpha, 0) || vg > math.MaxInt64 {
			return
		}
		s := policy.Settings{KMaxMode: policy.KMaxBDP, Alpha: alpha, VGrowthBytesPerSec: int64(vg)}
		want := leafValues(s)
		if got := valueString(&gnmi.TypedValue{Value: &gnmi.TypedValue_DoubleVal{DoubleVal: alpha}}); got != want["alpha"] {
			t.Errorf("alpha %v as a double reads %q, leafValues %q", alpha, got, want["alpha"])
		}
		if got := valueString(&gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: vg}}); got != want["v-growth"] {
			t.Errorf("v-growth %d reads %q, leafValues %q", vg, got, want["v-growth"])
		}
		// A decimal64 reads as the float it is.
		precision %= 19
		d := valueString(&gnmi.TypedValue{Value: &gnmi.TypedValue_DecimalVal{DecimalVal: &gnmi.Decimal64{Digits: digits, Precision: precision}}})
		if _, err := strconv.ParseFloat(d, 64); err != nil {
			t.Errorf("decimal %d/10^%d reads %q: not a number", digits, precision, d)
		}
		for _, enum := range []string{"EXPLICIT", "lhcnp-types:EXPLICIT"} {
			if got := valueString(&gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: enum}}); got != string(policy.KMaxExplicit) {
				t.Errorf("kmax-mode %q reads %q", enum, got)
			}
		}
	})
}
