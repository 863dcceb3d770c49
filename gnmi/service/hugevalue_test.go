package service_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lhcnp/lhcnp/gnmi/service"
)

// TestHugeValueInErrors: a Set's value is quoted in its error cut
// (store.ErrorText), whatever its size: a string of a megabyte given for a
// boolean, as a JSON member or as a leaf's string_val, and an unknown
// member's name of a megabyte. Each error was the megabyte and more
// before, to the client and into whatever logged it.
func TestHugeValueInErrors(t *testing.T) {
	e := newEnv(t)
	big := strings.Repeat("x", 1<<20)
	cfg := []*gnmi.PathElem{{Name: "lhcnp"}, {Name: "global"}, {Name: "config"}}
	leaf := &gnmi.Path{Elem: append(append([]*gnmi.PathElem{}, cfg...), &gnmi.PathElem{Name: "enabled"})}
	for _, tt := range []struct {
		desc string
		path *gnmi.Path
		val  *gnmi.TypedValue
	}{
		{"a string for a boolean", &gnmi.Path{Elem: cfg}, &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(`{"enabled": "` + big + `"}`)}}},
		{"an unknown member", &gnmi.Path{Elem: cfg}, &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(`{"` + big + `": 1}`)}}},
		{"a leaf's string", leaf, &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: big}}},
		{"a leaf's JSON string", leaf, &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonVal{JsonVal: []byte(`"` + big + `"`)}}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			_, err := e.c.Set(ctx(t), &gnmi.SetRequest{Update: []*gnmi.Update{{Path: tt.path, Val: tt.val}}})
			msg := status.Convert(err).Message()
			if status.Code(err) != codes.InvalidArgument || len(msg) > 2048 || !strings.Contains(msg, " bytes)") {
				t.Errorf("%v, %d bytes (%.200s…), want INVALID_ARGUMENT of at most 2 KiB with the value cut", status.Code(err), len(msg), msg)
			}
		})
	}
}

// TestCapStatus: an error message above MaxStatusMessageBytes is cut there,
// at a character's start, saying how long it was, its code and details
// kept; a shorter one, and an error that is not a status, pass as they are.
func TestCapStatus(t *testing.T) {
	long := strings.Repeat("é", service.MaxStatusMessageBytes) // two bytes each
	st, err := status.New(codes.InvalidArgument, long).WithDetails(&errdetails.ErrorInfo{Reason: "R"})
	if err != nil {
		t.Fatal(err)
	}
	got := status.Convert(service.CapStatus(st.Err()))
	wantMsg := strings.Repeat("é", service.MaxStatusMessageBytes/2) + "… (16384 bytes)"
	if got.Code() != codes.InvalidArgument || got.Message() != wantMsg || len(got.Details()) != 1 {
		t.Errorf("capped: %v, %d bytes ending %q, %d details; want INVALID_ARGUMENT, %q's %d bytes, 1 detail",
			got.Code(), len(got.Message()), got.Message()[max(0, len(got.Message())-20):], len(got.Details()), "… (16384 bytes)", len(wantMsg))
	}
	short := status.Error(codes.NotFound, "short")
	if service.CapStatus(short) != short {
		t.Error("a short message was rewritten")
	}
	plain := errors.New(long)
	if service.CapStatus(plain) != plain {
		t.Error("an error that is not a status was rewritten")
	}
	if service.CapStatus(nil) != nil {
		t.Error("nil is not nil")
	}
}
