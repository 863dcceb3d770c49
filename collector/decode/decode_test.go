package decode_test

import (
	"context"
	"net"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmi/proto/gnmi_ext"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/lhcnp/lhcnp/collector/decode"
)

func elem(name string, kv ...string) *gnmi.PathElem {
	e := &gnmi.PathElem{Name: name}
	if len(kv) > 0 {
		e.Key = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			e.Key[kv[i]] = kv[i+1]
		}
	}
	return e
}

func notification(n *gnmi.Notification) *gnmi.SubscribeResponse {
	return &gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: n}}
}

// queueNote is a notification as a switch sends it: the queue's container
// as the prefix, leaves as paths.
func queueNote(ts int64, iface string, depth uint64) *gnmi.SubscribeResponse {
	pre := &gnmi.Path{Origin: "lhcnp", Target: "sw1", Elem: []*gnmi.PathElem{elem("lhcnp"), elem("interfaces"),
		elem("interface", "name", iface), elem("queues"), elem("queue", "id", "3"), elem("state")}}
	return notification(&gnmi.Notification{Timestamp: ts, Prefix: pre, Update: []*gnmi.Update{
		{Path: &gnmi.Path{Elem: []*gnmi.PathElem{elem("queue-depth")}}, Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: depth}}},
		{Path: &gnmi.Path{Elem: []*gnmi.PathElem{elem("k-max")}}, Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_IntVal{IntVal: -7}}},
		{Path: &gnmi.Path{Elem: []*gnmi.PathElem{elem("ratio")}}, Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_DoubleVal{DoubleVal: 0.25}}},
		{Path: &gnmi.Path{Elem: []*gnmi.PathElem{elem("f")}}, Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_FloatVal{FloatVal: 1.5}}}, //nolint:staticcheck // deprecated, still sent
		{Path: &gnmi.Path{Elem: []*gnmi.PathElem{elem("enabled")}}, Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_BoolVal{BoolVal: true}}, Duplicates: 2},
		{Path: &gnmi.Path{Elem: []*gnmi.PathElem{elem("action")}}, Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: "RATE_REDUCE"}}},
		{Path: &gnmi.Path{Elem: []*gnmi.PathElem{elem("name")}}, Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_AsciiVal{AsciiVal: "q"}}},
		{Path: &gnmi.Path{Elem: []*gnmi.PathElem{elem("j")}}, Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(`"12"`)}}},
		{Path: &gnmi.Path{Elem: []*gnmi.PathElem{elem("k")}}, Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonVal{JsonVal: []byte(`13`)}}},
		{Path: &gnmi.Path{Elem: []*gnmi.PathElem{elem("b")}}, Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_BytesVal{BytesVal: []byte{0, 1}}}},
		{Path: &gnmi.Path{Elem: []*gnmi.PathElem{elem("p")}}, Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_ProtoBytes{ProtoBytes: []byte{2}}}},
	}, Delete: []*gnmi.Path{{Elem: []*gnmi.PathElem{elem("gone", "a", "1", "b", "x]y")}}}, Atomic: true})
}

// cases are responses of every shape the tests and the fuzz seeds use:
// the ones the fast path takes and the ones it leaves to proto.Unmarshal.
func cases() []struct {
	desc string
	r    *gnmi.SubscribeResponse
} {
	return []struct {
		desc string
		r    *gnmi.SubscribeResponse
	}{
		{"queue notification", queueNote(1_700_000_000_000_000_000, "eth0", 4096)},
		{"another queue", queueNote(1_700_000_000_001_000_000, "eth12", 0)},
		{"sync_response", &gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_SyncResponse{SyncResponse: true}}},
		{"empty notification", notification(&gnmi.Notification{})},
		{"empty response", &gnmi.SubscribeResponse{}},
		{"update without value", notification(&gnmi.Notification{Timestamp: 5, Update: []*gnmi.Update{{Path: &gnmi.Path{}}}})},
		{"empty typed value", notification(&gnmi.Notification{Update: []*gnmi.Update{{Val: &gnmi.TypedValue{}}}})},
		{"decimal (proto.Unmarshal)", notification(&gnmi.Notification{Update: []*gnmi.Update{{Val: &gnmi.TypedValue{
			Value: &gnmi.TypedValue_DecimalVal{DecimalVal: &gnmi.Decimal64{Digits: 125, Precision: 2}}}}}})}, //nolint:staticcheck // deprecated, still sent
		{"leaf-list (proto.Unmarshal)", notification(&gnmi.Notification{Update: []*gnmi.Update{{Val: &gnmi.TypedValue{
			Value: &gnmi.TypedValue_LeaflistVal{LeaflistVal: &gnmi.ScalarArray{Element: []*gnmi.TypedValue{{Value: &gnmi.TypedValue_IntVal{IntVal: 1}}}}}}}}})},
		{"element (proto.Unmarshal)", notification(&gnmi.Notification{Prefix: &gnmi.Path{Element: []string{"a", "b"}}})}, //nolint:staticcheck // deprecated, still sent
		{"extension (proto.Unmarshal)", &gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_SyncResponse{SyncResponse: true},
			Extension: []*gnmi_ext.Extension{{Ext: &gnmi_ext.Extension_History{History: &gnmi_ext.History{}}}}}},
		{"long string", notification(&gnmi.Notification{Update: []*gnmi.Update{{Val: &gnmi.TypedValue{
			Value: &gnmi.TypedValue_StringVal{StringVal: string(make([]byte, 300))}}}}})},
	}
}

func TestDecodeMatchesProto(t *testing.T) {
	d := decode.New()
	// Twice over: the second pass decodes into storage the first filled.
	for range 2 {
		for _, tt := range cases() {
			t.Run(tt.desc, func(t *testing.T) {
				data, err := proto.Marshal(tt.r)
				if err != nil {
					t.Fatal(err)
				}
				got, err := d.Decode(data)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.r, got, protocmp.Transform()); diff != "" {
					t.Errorf("Decode (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	good, _ := proto.Marshal(queueNote(1, "eth0", 1))
	for _, tt := range []struct {
		desc string
		data []byte
	}{
		{"truncated", good[:len(good)-3]},
		{"bad tag", []byte{0}},
		{"invalid utf-8", func() []byte {
			b, _ := proto.Marshal(notification(&gnmi.Notification{Prefix: &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "ok"}}}}))
			return append(b[:len(b)-2], 0xff, 0xfe)
		}()},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			want := proto.Unmarshal(tt.data, new(gnmi.SubscribeResponse))
			if want == nil {
				t.Fatal("proto.Unmarshal took it: not a bad input")
			}
			if _, err := decode.New().Decode(tt.data); err == nil || err.Error() != want.Error() {
				t.Errorf("Decode error %v, want %v", err, want)
			}
		})
	}
}

// FuzzDecode: whatever the input, Decode gives exactly what
// proto.Unmarshal gives (message or error), also into storage a previous
// response filled.
func FuzzDecode(f *testing.F) {
	for _, tt := range cases() {
		data, err := proto.Marshal(tt.r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	prev, _ := proto.Marshal(queueNote(9, "eth3", 77))
	d := decode.New()
	f.Fuzz(func(t *testing.T, data []byte) {
		want := new(gnmi.SubscribeResponse)
		werr := proto.Unmarshal(data, want)
		if _, err := d.Decode(prev); err != nil {
			t.Fatal(err)
		}
		got, err := d.Decode(data)
		if (err == nil) != (werr == nil) {
			t.Fatalf("Decode error %v, proto.Unmarshal error %v", err, werr)
		}
		if err != nil {
			return
		}
		if !proto.Equal(want, got) {
			t.Fatalf("Decode differs from proto.Unmarshal:\n%s", cmp.Diff(want, got, protocmp.Transform()))
		}
	})
}

// replay is a Subscribe server sending prepared responses.
type replay struct {
	gnmi.UnimplementedGNMIServer
	rs []*gnmi.SubscribeResponse
}

func (r *replay) Subscribe(st gnmi.GNMI_SubscribeServer) error {
	if _, err := st.Recv(); err != nil {
		return err
	}
	for _, m := range r.rs {
		if err := st.Send(m); err != nil {
			return err
		}
	}
	return nil
}

// TestCallOption receives a real Subscribe stream over gRPC into a
// Decoder: every response as sent.
func TestCallOption(t *testing.T) {
	var want []*gnmi.SubscribeResponse
	for _, tt := range cases() {
		want = append(want, tt.r)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	gnmi.RegisterGNMIServer(srv, &replay{rs: want})
	go srv.Serve(lis)
	defer srv.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	st, err := gnmi.NewGNMIClient(conn).Subscribe(context.Background(), decode.CallOption())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&gnmi.SubscribeRequest{}); err != nil {
		t.Fatal(err)
	}
	d := decode.New()
	for i, w := range want {
		if err := st.RecvMsg(d); err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if diff := cmp.Diff(w, d.Response(), protocmp.Transform()); diff != "" {
			t.Errorf("response %d (-want +got):\n%s", i, diff)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	data, _ := proto.Marshal(queueNote(1, "eth0", 1))
	b.Run("proto.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if err := proto.Unmarshal(data, new(gnmi.SubscribeResponse)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Decoder", func(b *testing.B) {
		d := decode.New()
		b.ReportAllocs()
		for range b.N {
			if _, err := d.Decode(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
