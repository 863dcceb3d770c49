package service_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lhcnp/lhcnp/gnmi/clock"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmi/proto/gnmi_ext"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// maxFuzzMessageBytes bounds the message of a refused request, called on
// the Handler itself (before service.MaxStatusMessageBytes cuts it): an
// error names an operation's path, a node below it and a value, each cut
// at store.MaxErrorPathBytes, and a reason, as TestHugePathInErrors and
// TestHugeValueInErrors bound them.
const maxFuzzMessageBytes = 2048

// fuzzCodes are the codes a Set or a Get may answer a request with (set.go,
// get.go, commit.go): every fault of the request is one of them. INTERNAL
// and UNKNOWN would be the target's own fault, which the fakes here (a
// dataplane that takes everything, no persister) leave no room for.
var fuzzCodes = []codes.Code{codes.OK, codes.InvalidArgument, codes.NotFound, codes.Aborted,
	codes.FailedPrecondition, codes.Unimplemented, codes.ResourceExhausted}

// newFuzzHandler is newEnv's Handler without the gRPC server: the fuzz
// targets call it directly, thousands of times.
func newFuzzHandler(t *testing.T) *service.Handler {
	t.Helper()
	clk := clock.NewFake(epoch)
	st := store.New(store.WithClock(clk))
	h := service.NewHandler(testSchema, st, &fakeDP{}, service.WithHandlerClock(clk))
	if err := h.LoadJSON(context.Background(), []byte(initialConfig)); err != nil {
		t.Fatalf("LoadJSON: %v", err)
	}
	publishState(t, st)
	return h
}

// configOf is the configuration as a Get of the root (CONFIG, PROTO) reads
// it: "path = value" lines, timestamps left out (a Set that changes nothing
// still publishes anew).
func configOf(t *testing.T, h *service.Handler) []string {
	t.Helper()
	resp, err := h.Get(context.Background(), &gnmi.GetRequest{Type: gnmi.GetRequest_CONFIG, Encoding: gnmi.Encoding_PROTO})
	if err != nil {
		t.Fatalf("Get of the configuration: %v", err)
	}
	var lines []string
	for _, n := range resp.GetNotification() {
		lines = append(lines, render(n)...)
	}
	slices.Sort(lines)
	return lines
}

// checkStatus checks an RPC's error: a code of fuzzCodes and a message of
// one line of valid UTF-8, at most maxFuzzMessageBytes.
func checkStatus(t *testing.T, rpc string, err error) codes.Code {
	t.Helper()
	st := status.Convert(err)
	if !slices.Contains(fuzzCodes, st.Code()) {
		t.Errorf("%s: code %v (%.300q), want one of %v", rpc, st.Code(), st.Message(), fuzzCodes)
	}
	msg := st.Message()
	switch {
	case !utf8.ValidString(msg):
		t.Errorf("%s: message is not valid UTF-8: %.300q", rpc, msg)
	case strings.ContainsAny(msg, "\n\r"):
		t.Errorf("%s: message of several lines: %.300q", rpc, msg)
	case len(msg) > maxFuzzMessageBytes:
		t.Errorf("%s: message of %d bytes, want at most %d: %.300q", rpc, len(msg), maxFuzzMessageBytes, msg)
	}
	return st.Code()
}

// fuzzSetSeeds are SetRequests the package's tests send: updates,
// replaces, deletes, several operations, keys, the deprecated element
// field, union and leafref values, a wrong type, a commit.
func fuzzSetSeeds() []*gnmi.SetRequest {
	const receiver = "/lhcnp/global/rocev2-receivers/receiver"
	commit := func(id string, ups ...*gnmi.Update) *gnmi.SetRequest {
		return &gnmi.SetRequest{Update: ups, Extension: []*gnmi_ext.Extension{{Ext: &gnmi_ext.Extension_Commit{
			Commit: &gnmi_ext.Commit{Id: id, Action: &gnmi_ext.Commit_Commit{Commit: &gnmi_ext.CommitRequest{}}}}}}}
	}
	return []*gnmi.SetRequest{
		{Update: []*gnmi.Update{upd(q3+"/config/v-growth", uintVal(5000))}},
		{Update: []*gnmi.Update{upd(q3+"/config/alpha", jsonv(`0.5`))}},
		{Update: []*gnmi.Update{upd(q3+"/config/v-growth", ietf(`"6000"`))}},
		{Replace: []*gnmi.Update{upd(q3+"/config", jsonv(`{"id":3,"alpha":0.25,"kmax-mode":"EXPLICIT","kmax":2000000}`))}},
		{Replace: []*gnmi.Update{upd(q3+"/config", ietf(`{"lhcnp:id":3,"lhcnp:alpha":"2.5"}`))}},
		{Update: []*gnmi.Update{upd("/lhcnp/interfaces/interface[name=wan1]/queues/queue[id=5]/config/alpha", dbl(0.5))}},
		{Delete: []*gnmi.Path{mustPath("/lhcnp/interfaces/interface[name=*]/queues/queue[id=*]/config/alpha")}},
		{Delete: []*gnmi.Path{mustPath("/lhcnp/interfaces/interface/queues/queue[id=3]")}},
		{Delete: []*gnmi.Path{mustPath("/lhcnp/.../kmax-mode")}},
		{Delete: []*gnmi.Path{mustPath("/lhcnp/interfaces/interface[name=wan0]/config/name")}},
		{
			Update:  []*gnmi.Update{upd(q3+"/config/alpha", dbl(3))},
			Replace: []*gnmi.Update{upd(q3+"/config/alpha", dbl(2))},
			Delete:  []*gnmi.Path{mustPath(q3 + "/config/alpha")},
		},
		{Prefix: &gnmi.Path{Target: "sw1", Elem: mustPath(q3).Elem}, Update: []*gnmi.Update{upd("/config/k-base", uintVal(100000))}},
		{Update: []*gnmi.Update{
			upd(q3+"/config/kmax-mode", strVal("EXPLICIT")), upd(q3+"/config/kmax", uintVal(100000)),
			upd(q3+"/config/kmin-mode", strVal("EXPLICIT")), upd(q3+"/config/kmin", uintVal(200000)),
		}},
		{Update: []*gnmi.Update{upd(q3+"/config/v-growth", strVal("fast"))}},
		{Update: []*gnmi.Update{upd(q3, jsonv(`{"config":{"alpha":"fast"}}`))}},
		{Update: []*gnmi.Update{upd(q3+"/state/alpha", dbl(2))}},
		{Update: []*gnmi.Update{upd("/lhcnp/interfaces/interface[name=wan0]/config/name", strVal("other"))}},
		{Update: []*gnmi.Update{upd(q3+"/action-policy/config/default-action", strVal("RESUME"))}},
		{Update: []*gnmi.Update{upd(receiver+"[prefix=10.0.0.0/8]/config", ietf(`{"prefix":"10.0.0.0/8"}`))}},
		{Update: []*gnmi.Update{upd(receiver+"[prefix=bogus]/config", ietf(`{}`))}},
		{Replace: []*gnmi.Update{upd("/lhcnp/interfaces/interface[name=wan0]", ietf(`{"config":{"name":"wan0"}}`))}},
		{Delete: []*gnmi.Path{{Element: []string{"lhcnp", "global"}}}},
		{UnionReplace: []*gnmi.Update{upd(q3+"/config/v-growth", uintVal(1))}},
		commit("c1", upd(q3+"/config/v-growth", uintVal(7))),
	}
}

// FuzzSet: any SetRequest, applied to the Handler newEnv builds: no panic;
// a code of fuzzCodes and a message of one bounded line; a refused Set
// leaves the configuration (a Get of the root) exactly as before; an
// accepted one is idempotent: sent again it succeeds and changes nothing
// (a commit waiting for confirmation refuses a second commit instead, and
// its cancel restores the configuration before it).
func FuzzSet(f *testing.F) {
	for _, req := range fuzzSetSeeds() {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		req := &gnmi.SetRequest{}
		if proto.Unmarshal(in, req) != nil {
			return
		}
		h := newFuzzHandler(t)
		before := configOf(t, h)
		_, err := h.Set(context.Background(), req)
		if checkStatus(t, "set", err) != codes.OK {
			if after := configOf(t, h); !slices.Equal(before, after) {
				t.Fatalf("refused Set (%v) changed the configuration:\nbefore %q\nafter  %q", err, before, after)
			}
			return
		}
		after := configOf(t, h)
		if id, deadline, pending := h.PendingCommit(); pending {
			_, err := h.Set(context.Background(), req)
			if status.Code(err) != codes.FailedPrecondition {
				t.Fatalf("the same commit again while %q waits until %v: %v, want FAILED_PRECONDITION", id, deadline, err)
			}
			cancel := &gnmi.SetRequest{Extension: []*gnmi_ext.Extension{{Ext: &gnmi_ext.Extension_Commit{
				Commit: &gnmi_ext.Commit{Id: id, Action: &gnmi_ext.Commit_Cancel{Cancel: &gnmi_ext.CommitCancel{}}}}}}}
			if _, err := h.Set(context.Background(), cancel); err != nil {
				t.Fatalf("cancel of %q: %v", id, err)
			}
			if got := configOf(t, h); !slices.Equal(before, got) {
				t.Fatalf("cancelled commit left the configuration changed:\nbefore %q\nafter  %q", before, got)
			}
			return
		}
		if _, err := h.Set(context.Background(), req); err != nil {
			t.Fatalf("accepted Set refused the second time: %v", err)
		}
		if again := configOf(t, h); !slices.Equal(after, again) {
			t.Fatalf("accepted Set changed the configuration the second time:\nonce  %q\ntwice %q", after, again)
		}
	})
}

// FuzzGet: any GetRequest, to the Handler newEnv builds: no panic; a code
// of fuzzCodes and a message of one bounded line.
func FuzzGet(f *testing.F) {
	for _, req := range []*gnmi.GetRequest{
		{Type: gnmi.GetRequest_CONFIG, Encoding: gnmi.Encoding_PROTO},
		{Path: []*gnmi.Path{mustPath(q3 + "/config")}, Encoding: gnmi.Encoding_JSON_IETF},
		{Path: []*gnmi.Path{mustPath(q3 + "/state")}, Type: gnmi.GetRequest_STATE, Encoding: gnmi.Encoding_JSON},
		{Prefix: mustPath(q3), Path: []*gnmi.Path{mustPath("/config/alpha"), mustPath("/state/alpha")}, Encoding: gnmi.Encoding_PROTO},
		{Path: []*gnmi.Path{mustPath("/lhcnp/interfaces/interface[name=*]/queues/queue[id=*]/state/queue-depth")}, Encoding: gnmi.Encoding_JSON_IETF},
		{Path: []*gnmi.Path{mustPath("/lhcnp/.../alpha")}, Encoding: gnmi.Encoding_JSON_IETF},
		{Path: []*gnmi.Path{mustPath("/lhcnp/interfaces/interface/queues/queue[id=3]")}, Type: gnmi.GetRequest_OPERATIONAL, Encoding: gnmi.Encoding_JSON},
		{Path: []*gnmi.Path{mustPath("/lhcnp/global/rocev2-receivers/receiver[prefix=bogus]/config")}, Encoding: gnmi.Encoding_JSON_IETF},
		{Path: []*gnmi.Path{mustPath("/lhcnp/nope")}, Encoding: gnmi.Encoding_JSON_IETF},
		{Path: []*gnmi.Path{{Element: []string{"lhcnp", "global"}}}, Encoding: gnmi.Encoding_JSON_IETF},
		{Path: []*gnmi.Path{{Origin: "openconfig", Elem: mustPath("/lhcnp/global").Elem}}, Encoding: gnmi.Encoding_JSON_IETF},
		{UseModels: []*gnmi.ModelData{{Name: "nope"}}, Encoding: gnmi.Encoding_JSON_IETF},
		{Encoding: gnmi.Encoding_ASCII},
		{Type: gnmi.GetRequest_DataType(9), Encoding: gnmi.Encoding_JSON},
	} {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	var h *service.Handler
	f.Fuzz(func(t *testing.T, in []byte) {
		req := &gnmi.GetRequest{}
		if proto.Unmarshal(in, req) != nil {
			return
		}
		if h == nil {
			h = newFuzzHandler(t) // Get changes nothing: one Handler serves every input
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := h.Get(ctx, req)
		checkStatus(t, "get", err)
	})
}

// TestLineBreakInPathErrors: a path's element or key value may hold a line
// break (proto strings are any UTF-8), which an error naming the path
// wrote as it was: a message of two lines, to the client and into logs
// (FuzzSet's testdata/fuzz/FuzzSet/68bb688a9b58275f: "update[0]
// /000…\n000: not in the schema"). It is written escaped, "\n".
func TestLineBreakInPathErrors(t *testing.T) {
	h := newFuzzHandler(t)
	elem := &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "lhcnp"}, {Name: "a\nb"}}}
	key := &gnmi.Path{Elem: []*gnmi.PathElem{{Name: "lhcnp"}, {Name: "interfaces"},
		{Name: "interface", Key: map[string]string{"name": "wan0\r\n\u2028"}}, {Name: "bogus"}}}
	for _, tt := range []struct {
		desc string
		call func() error
		want string
	}{
		{"set update, element", func() error {
			_, err := h.Set(context.Background(), &gnmi.SetRequest{Update: []*gnmi.Update{{Path: elem, Val: uintVal(1)}}})
			return err
		}, `update[0] /lhcnp/a\nb: not in the schema`},
		{"set delete, key", func() error {
			_, err := h.Set(context.Background(), &gnmi.SetRequest{Delete: []*gnmi.Path{key}})
			return err
		}, `delete[0] /lhcnp/interfaces/interface[name=wan0\r\n\u2028]/bogus: not in the schema`},
		{"get, element", func() error {
			_, err := h.Get(context.Background(), &gnmi.GetRequest{Path: []*gnmi.Path{elem}, Encoding: gnmi.Encoding_JSON_IETF})
			return err
		}, `path /lhcnp/a\nb: not in the schema`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			msg := status.Convert(tt.call()).Message()
			if strings.ContainsAny(msg, "\n\r\u2028") || !strings.Contains(msg, tt.want) {
				t.Errorf("message %q, want one line with %q", msg, tt.want)
			}
		})
	}
}
