package subscribe

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
)

// TestWireForm: the hand-written wire form decodes to the same response as
// protobuf's own, and is byte for byte what deterministic marshalling writes.
func TestWireForm(t *testing.T) {
	prefix := &gnmi.Path{Target: "sw1", Origin: "openconfig", Elem: []*gnmi.PathElem{
		{Name: "interfaces"}, {Name: "interface", Key: map[string]string{"name": "eth0"}},
		{Name: "queue", Key: map[string]string{"id": "3", "dir": "out", "": ""}}}}
	leaf := func(name string) *gnmi.Path { return &gnmi.Path{Elem: []*gnmi.PathElem{{Name: name}}} }
	tests := []struct {
		desc string
		n    *gnmi.Notification
	}{
		{"empty", &gnmi.Notification{}},
		{"scalars", &gnmi.Notification{Timestamp: 1700000000123456789, Prefix: prefix, Update: []*gnmi.Update{
			{Path: leaf("u"), Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: 1 << 63}}, Duplicates: 7},
			{Path: leaf("u0"), Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{}}},
			{Path: leaf("i"), Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_IntVal{IntVal: -5}}},
			{Path: leaf("s"), Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: "UP ✓"}}},
			{Path: leaf("s0"), Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{}}},
			{Path: leaf("b"), Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_BoolVal{BoolVal: true}}},
			{Path: leaf("d"), Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_DoubleVal{DoubleVal: -0.5}}},
			{Path: leaf("j"), Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonVal{JsonVal: []byte(`{"a":1}`)}}},
			{Path: leaf("ji"), Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(`"12"`)}}},
		}}},
		{"other values go through protobuf", &gnmi.Notification{Timestamp: 1, Update: []*gnmi.Update{
			{Path: leaf("dec"), Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_DecimalVal{DecimalVal: &gnmi.Decimal64{Digits: 314, Precision: 2}}}},
			{Path: leaf("ll"), Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_LeaflistVal{LeaflistVal: &gnmi.ScalarArray{Element: []*gnmi.TypedValue{
				{Value: &gnmi.TypedValue_UintVal{UintVal: 1}}, {Value: &gnmi.TypedValue_StringVal{StringVal: "x"}}}}}}},
			{Path: leaf("bytes"), Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_BytesVal{BytesVal: []byte{0, 1}}}},
			{Path: leaf("nil")},
		}}},
		{"deletes, atomic, deprecated element", &gnmi.Notification{Timestamp: 2, Prefix: &gnmi.Path{Target: "t"}, Atomic: true,
			Delete: []*gnmi.Path{leaf("a"), {Element: []string{"x", "y"}}, {}}}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			want := &gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: tt.n}}
			wantB, err := proto.MarshalOptions{Deterministic: true}.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			gotB, err := appendResponse(nil, tt.n)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantB, gotB); diff != "" {
				t.Errorf("bytes (-want, +got):\n%s", diff)
			}
			// Through the message gRPC's codec marshals.
			viaMsg, err := proto.Marshal(response(tt.n, true))
			if err != nil {
				t.Fatal(err)
			}
			got := &gnmi.SubscribeResponse{}
			if err := proto.Unmarshal(viaMsg, got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("decoded (-want, +got):\n%s", diff)
			}
		})
	}
}

// TestWireFormInvalidUTF8: a string protobuf refuses falls back to the
// ordinary message, so the send fails as it always did.
func TestWireFormInvalidUTF8(t *testing.T) {
	n := &gnmi.Notification{Update: []*gnmi.Update{{Path: &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "a"}}},
		Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: "\xff"}}}}}
	if _, err := appendResponse(nil, n); err == nil {
		t.Error("appendResponse accepted invalid UTF-8")
	}
	if r := response(n, true); r.GetUpdate() != n {
		t.Errorf("response = %v, want the ordinary message", r)
	}
}
