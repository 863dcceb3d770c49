package subscribe

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
)

// TestWireForm: the hand-written wire form is byte for byte what
// deterministic proto.Marshal writes for the notifications built as
// messages, and decodes to them.
func TestWireForm(t *testing.T) {
	st := store.New()
	var b store.Batch
	vals := []*gnmi.TypedValue{
		{Value: &gnmi.TypedValue_UintVal{UintVal: 1 << 63}},
		{Value: &gnmi.TypedValue_UintVal{}},
		{Value: &gnmi.TypedValue_IntVal{IntVal: -5}},
		{Value: &gnmi.TypedValue_StringVal{StringVal: "UP ✓"}},
		{Value: &gnmi.TypedValue_StringVal{}},
		{Value: &gnmi.TypedValue_BoolVal{BoolVal: true}},
		{Value: &gnmi.TypedValue_DoubleVal{DoubleVal: -0.5}},
		{Value: &gnmi.TypedValue_JsonVal{JsonVal: []byte(`{"a":1}`)}},
		{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(`"12"`)}},
		{Value: &gnmi.TypedValue_DecimalVal{DecimalVal: &gnmi.Decimal64{Digits: 314, Precision: 2}}},
		{Value: &gnmi.TypedValue_LeaflistVal{LeaflistVal: &gnmi.ScalarArray{Element: []*gnmi.TypedValue{
			{Value: &gnmi.TypedValue_UintVal{UintVal: 1}}, {Value: &gnmi.TypedValue_StringVal{StringVal: "x"}}}}}},
		{Value: &gnmi.TypedValue_BytesVal{BytesVal: []byte{0, 1}}},
	}
	for i, v := range vals {
		b.Update(store.MustPath(fmt.Sprintf("/a/q[id=%d][dir=out]/state/v%d", i%2, i)), v, store.Gauge)
	}
	b.Update(store.MustPath("/top"), vals[0], store.Gauge)
	b.Update(store.MustPath("/a/list[k=x]/leaf[n=1]"), vals[0], store.Gauge)
	if _, err := st.Apply(&b, 1700000000123456789); err != nil {
		t.Fatal(err)
	}
	var items []entry
	st.Walk(store.MustPattern(nil, store.MustPath("/")), func(l *store.Node, v *store.Value, k store.Kind) {
		items = append(items, entry{leaf: l, val: v, ts: v.TS, seq: v.Ver, kind: k, dups: uint32(len(items) % 3)})
	})
	items = append(items, entry{}, entry{leaf: items[0].leaf, ts: 5, seq: 9}, entry{leaf: items[1].leaf, ts: 5, seq: 9}) // sync, deletes
	for _, tt := range []struct {
		desc     string
		bare     *gnmi.Path
		enc      ValueEncoder
		maxBatch int
	}{
		{"proto, target and origin", &gnmi.Path{Target: "sw1", Origin: "openconfig"}, ProtoEncoder, 500},
		{"no target", nil, ProtoEncoder, 500},
		{"json, one update per notification", &gnmi.Path{Target: "sw1"}, JSONEncoder, 1},
		{"json_ietf", nil, IETFEncoder, 3},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			s := &stream{bare: tt.bare, enc: tt.enc, maxBatch: tt.maxBatch}
			var want, decoded []*gnmi.SubscribeResponse
			var wantB, gotB [][]byte
			if err := s.notifications(items, func(n *gnmi.Notification) error {
				r := syncResponse
				if n != nil {
					r = &gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: n}}
				}
				w, err := proto.MarshalOptions{Deterministic: true}.Marshal(r)
				want, wantB = append(want, r), append(wantB, w)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if err := s.wireNotifications(items, func(b []byte, _ int) error {
				r := syncResponse
				if b != nil {
					r = rawResponse(b)
				}
				w, err := proto.Marshal(r) // as gRPC's codec does
				if err != nil {
					return err
				}
				d := &gnmi.SubscribeResponse{}
				decoded, gotB = append(decoded, d), append(gotB, w)
				return proto.Unmarshal(w, d)
			}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantB, gotB); diff != "" {
				t.Errorf("bytes (-want, +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, decoded, protocmp.Transform()); diff != "" {
				t.Errorf("decoded (-want, +got):\n%s", diff)
			}
		})
	}
}

// TestWireFormInvalidUTF8: a string protobuf would refuse fails the stream
// with INTERNAL naming the leaf, in a value, a leaf name or a prefix.
func TestWireFormInvalidUTF8(t *testing.T) {
	// The paths are built by hand: ParsePath refuses invalid UTF-8.
	elem := func(name string, key map[string]string) *gnmi.PathElem { return &gnmi.PathElem{Name: name, Key: key} }
	for _, tt := range []struct {
		desc string
		path *gnmi.Path
		val  string
	}{
		{"value", &gnmi.Path{Elem: []*gnmi.PathElem{elem("a", nil), elem("b", nil)}}, "\xff"},
		{"leaf name", &gnmi.Path{Elem: []*gnmi.PathElem{elem("a", nil), elem("b\xff", nil)}}, "ok"},
		{"key in the prefix", &gnmi.Path{Elem: []*gnmi.PathElem{elem("a", map[string]string{"k": "\xff"}), elem("b", nil)}}, "ok"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			st := store.New()
			if _, err := st.Update(tt.path, &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: tt.val}}, store.Gauge, 1); err != nil {
				t.Fatal(err)
			}
			var items []entry
			st.Walk(store.MustPattern(nil, store.MustPath("/")), func(l *store.Node, v *store.Value, _ store.Kind) {
				items = append(items, entry{leaf: l, val: v, ts: v.TS})
			})
			s := &stream{enc: ProtoEncoder, maxBatch: 500}
			err := s.wireNotifications(items, func([]byte, int) error { return nil })
			if status.Code(err) != codes.Internal {
				t.Errorf("err = %v, want INTERNAL", err)
			}
		})
	}
}
