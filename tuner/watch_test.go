package tuner

import (
	"io"
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

// scriptedStream is a Subscribe stream that hands out its responses in
// order, then io.EOF.
type scriptedStream struct {
	gnmi.GNMI_SubscribeClient
	rs []*gnmi.SubscribeResponse
}

func (s *scriptedStream) Recv() (*gnmi.SubscribeResponse, error) {
	if len(s.rs) == 0 {
		return nil, io.EOF
	}
	r := s.rs[0]
	s.rs = s.rs[1:]
	return r, nil
}

// TestForeignCoalescedValue: the switch's ON_CHANGE queue keeps one value
// per leaf, so another client's Set just before the tuner's can reach the
// watch only as the update carrying the tuner's own value with duplicates
// > 0 (gnmi/subscribe's queue; gNMI's Update.duplicates). foreign names the
// leaf then: before, it saw its own value and found nothing, and the commit
// overwrote the other client's Set (TestGNMIPusherWatchesEveryQueue failed
// about one run in twenty that way).
func TestForeignCoalescedValue(t *testing.T) {
	before := policy.Settings{KMaxMode: policy.KMaxBDP, Alpha: 1, VGrowthBytesPerSec: 1_250_000_000}
	after := before
	after.Alpha = 0.5
	changes := []Change{{Interface: "wan0", Queue: 1, Before: before, After: after}}
	update := func(dups uint32, alpha float64) *gnmi.SubscribeResponse {
		return &gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: &gnmi.Notification{
			Prefix: &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "lhcnp"}, {Name: "interfaces"},
				{Name: "interface", Key: map[string]string{"name": "wan0"}}, {Name: "queues"},
				{Name: "queue", Key: map[string]string{"id": "1"}}, {Name: "config"}}},
			Update: []*gnmi.Update{{Path: &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "alpha"}}},
				Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_DoubleVal{DoubleVal: alpha}}, Duplicates: dups}},
		}}}
	}
	for _, tt := range []struct {
		desc string
		rs   []*gnmi.SubscribeResponse
		want string
	}{
		{"the tuner's value alone", []*gnmi.SubscribeResponse{update(0, 0.5)}, ""},
		{"another value, then the tuner's", []*gnmi.SubscribeResponse{update(0, 0.75), update(0, 0.5)}, "interface wan0 queue 1: alpha 0.75"},
		{"another value coalesced into the tuner's", []*gnmi.SubscribeResponse{update(1, 0.5)},
			"interface wan0 queue 1: alpha (1 value replaced by a later value before the switch sent it)"},
		{"two coalesced", []*gnmi.SubscribeResponse{update(2, 0.5)},
			"interface wan0 queue 1: alpha (2 values replaced by a later value before the switch sent it)"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			w := &configWatch{stream: &scriptedStream{rs: tt.rs}, cancel: func() {}}
			if got := w.foreign(changes); got != tt.want {
				t.Errorf("foreign = %q, want %q", got, tt.want)
			}
		})
	}
}
