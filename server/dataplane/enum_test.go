package dataplane

import (
	"testing"

	"github.com/openconfig/ygot/ygot"
)

// checkEnumMap: the table covers every value of the generated YANG
// enumeration (UNSET aside), and each pair reads back the same both ways.
func checkEnumMap[Y interface {
	comparable
	ygot.GoEnum
}, D comparable](t *testing.T, name string, m enumMap[Y, D]) {
	t.Helper()
	var zeroY Y
	var zeroD D
	values := zeroY.ΛMap()[name]
	if len(values) == 0 {
		t.Fatalf("%s: no values in the generated ΛMap", name)
	}
	if len(m) != len(values) {
		t.Errorf("%s: the table maps %d values, the model has %d", name, len(m), len(values))
	}
	for _, p := range m {
		if got := m.toNode(p.y, zeroD); got != p.d {
			t.Errorf("%s: toNode(%v) = %v, want %v", name, p.y, got, p.d)
		}
		if got := m.fromNode(p.d, zeroY); got != p.y {
			t.Errorf("%s: fromNode(%v) = %v, want %v", name, p.d, got, p.y)
		}
	}
}

func TestEnumMaps(t *testing.T) {
	checkEnumMap(t, "E_LhcnpTypes_MetricType", metrics)
	checkEnumMap(t, "E_LhcnpTypes_RttSource", rttSources)
}
