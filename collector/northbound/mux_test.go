package northbound_test

import (
	"context"
	"io"
	"net"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmi/proto/gnmi_ext"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/lhcnp/lhcnp/collector/northbound"
	"github.com/lhcnp/lhcnp/gnmi/auth"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/service/servicetest"
	"github.com/lhcnp/lhcnp/gnmi/store"
)

// kmaxNotification is what a switch sends for its queue 0's effective-kmax.
func kmaxNotification(ts int64, v uint64) *gnmi.SubscribeResponse {
	return &gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: &gnmi.Notification{
		Timestamp: ts, Prefix: store.MustPath(wanQ0 + "/state"),
		Update: []*gnmi.Update{{Path: store.MustPath("/effective-kmax"), Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: v}}}},
	}}}
}

// startNB serves a northbound without database or switches: targets come
// from Observe, as the collector's loops feed it.
func startNB(t *testing.T, opts ...northbound.Option) (*northbound.Server, gnmi.GNMIClient) {
	t.Helper()
	return startNBServing(t, nil, opts...)
}

// startNBServing is startNB with more options for the gRPC service (the
// metrics' interceptors, as lhcnp collector installs them).
func startNBServing(t *testing.T, svc []service.Option, opts ...northbound.Option) (*northbound.Server, gnmi.GNMIClient) {
	t.Helper()
	sch, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	nb := northbound.New(sch, opts...)
	srv, err := service.New(append([]service.Option{service.WithInsecure(), service.WithCapabilities(nb), service.WithGet(nb),
		service.WithSet(nb), service.WithSubscribe(nb)}, svc...)...)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis) //nolint:errcheck // ends with Stop
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return nb, gnmi.NewGNMIClient(conn)
}

// event is one response as a test reads it: "n1=7" or "sync".
func event(r *gnmi.SubscribeResponse) string {
	if r.GetSyncResponse() {
		return "sync"
	}
	n := r.GetUpdate()
	return n.GetPrefix().GetTarget() + "=" + strings.TrimPrefix(n.GetUpdate()[0].GetVal().String(), "uint_val:")
}

// read reads n responses.
func read(t *testing.T, sc gnmi.GNMI_SubscribeClient, n int) []string {
	t.Helper()
	var out []string
	for range n {
		r, err := sc.Recv()
		if err != nil {
			t.Fatalf("after %v: %v", out, err)
		}
		out = append(out, event(r))
	}
	return out
}

func subscribeTo(t *testing.T, ctx context.Context, c gnmi.GNMIClient, mode gnmi.SubscriptionList_Mode, tgt string) gnmi.GNMI_SubscribeClient {
	t.Helper()
	sc, err := c.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sub := &gnmi.Subscription{Path: store.MustPath(wanQ0 + "/state/effective-kmax")}
	if mode == gnmi.SubscriptionList_STREAM {
		sub.Mode = gnmi.SubscriptionMode_ON_CHANGE
	}
	if err := sc.Send(&gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
		Mode: mode, Prefix: &gnmi.Path{Target: tgt}, Encoding: gnmi.Encoding_PROTO, Subscription: []*gnmi.Subscription{sub}}}}); err != nil {
		t.Fatal(err)
	}
	return sc
}

// sorted sorts the updates between syncs, whose order across switches is
// not defined.
func sorted(evs []string) []string {
	out := append([]string(nil), evs...)
	start := 0
	for i := 0; i <= len(out); i++ {
		if i == len(out) || out[i] == "sync" {
			sort.Strings(out[start:i])
			start = i + 1
		}
	}
	return out
}

// twoSwitches starts a northbound holding n1 (effective-kmax 1) and n2 (2)
// at ts, with a client and a context for the test.
func twoSwitches(t *testing.T) (*northbound.Server, gnmi.GNMIClient, int64, context.Context) {
	nb, c := startNB(t)
	ts := time.Now().UnixNano()
	nb.Observe("n1", kmaxNotification(ts, 1))
	nb.Observe("n2", kmaxNotification(ts, 2))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return nb, c, ts, ctx
}

// TestMux: several switches in one Subscribe (target * or none): one
// sync_response for all in ONCE, STREAM and per poll; a switch that
// appears later joins a STREAM with its initial data; a switch by name;
// an unknown one.
func TestMux(t *testing.T) {
	nb, c, ts, ctx := twoSwitches(t)

	t.Run("once", func(t *testing.T) {
		for _, tgt := range []string{"*", ""} {
			sc := subscribeTo(t, ctx, c, gnmi.SubscriptionList_ONCE, tgt)
			got := read(t, sc, 3)
			if _, err := sc.Recv(); err != io.EOF {
				t.Errorf("target %q: after the sync_response: %v, want the end of the RPC", tgt, err)
			}
			if diff := cmp.Diff([]string{"n1=1", "n2=2", "sync"}, sorted(got)); diff != "" {
				t.Errorf("target %q (-want +got):\n%s", tgt, diff)
			}
		}
	})

	t.Run("poll", func(t *testing.T) {
		sc := subscribeTo(t, ctx, c, gnmi.SubscriptionList_POLL, "*")
		got := read(t, sc, 3)
		nb.Observe("n2", kmaxNotification(ts+1, 22))
		if err := sc.Send(&gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Poll{Poll: &gnmi.Poll{}}}); err != nil {
			t.Fatal(err)
		}
		got = append(got, read(t, sc, 3)...)
		if diff := cmp.Diff([]string{"n1=1", "n2=2", "sync", "n1=1", "n2=22", "sync"}, sorted(got)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})

	t.Run("stream, a switch joins", func(t *testing.T) {
		sc := subscribeTo(t, ctx, c, gnmi.SubscriptionList_STREAM, "*")
		got := sorted(read(t, sc, 3))
		nb.Observe("n1", kmaxNotification(ts+2, 11))
		got = append(got, read(t, sc, 1)...)
		nb.Observe("n3", kmaxNotification(ts+2, 3)) // a new switch: its initial data, no second sync
		got = append(got, read(t, sc, 1)...)
		nb.Observe("n3", kmaxNotification(ts+3, 33))
		got = append(got, read(t, sc, 1)...)
		if diff := cmp.Diff([]string{"n1=1", "n2=22", "sync", "n1=11", "n3=3", "n3=33"}, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})

	t.Run("one switch", func(t *testing.T) {
		sc := subscribeTo(t, ctx, c, gnmi.SubscriptionList_ONCE, "n2")
		if diff := cmp.Diff([]string{"n2=22", "sync"}, read(t, sc, 2)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})

	t.Run("errors", func(t *testing.T) {
		_, err := subscribeTo(t, ctx, c, gnmi.SubscriptionList_ONCE, "n9").Recv()
		if status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), `target "n9": not a switch of this collector (known: [n1 n2 n3])`) {
			t.Errorf("unknown target: %v", err)
		}
		sc, err := c.Subscribe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sc.Send(&gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
			Prefix: &gnmi.Path{Target: "*"}, Subscription: []*gnmi.Subscription{{Path: store.MustPath("/lhcnp/nothing")}}}}})
		if _, err := sc.Recv(); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "/lhcnp/nothing") {
			t.Errorf("path outside the schema: %v", err)
		}
		_, err = c.Set(ctx, &gnmi.SetRequest{Prefix: &gnmi.Path{Target: "n1"}})
		if status.Code(err) != codes.Unimplemented {
			t.Errorf("set without a dialer: %v", err)
		}
	})

	t.Run("get", func(t *testing.T) {
		p := store.MustPath(wanQ0 + "/state/effective-kmax")
		resp, err := c.Get(ctx, &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "*"}, Path: []*gnmi.Path{p}, Encoding: gnmi.Encoding_PROTO})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range resp.GetNotification() {
			got = append(got, n.GetPrefix().GetTarget()+"="+strings.TrimPrefix(n.GetUpdate()[0].GetVal().String(), "uint_val:"))
		}
		if diff := cmp.Diff([]string{"n1=11", "n2=22", "n3=33"}, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		// A leaf no switch has: NOT_FOUND, as from a switch.
		_, err = c.Get(ctx, &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "*"}, Encoding: gnmi.Encoding_PROTO,
			Path: []*gnmi.Path{store.MustPath(wanQ0 + "/state/queue-depth")}})
		if status.Code(err) != codes.NotFound {
			t.Errorf("get of a leaf no switch has: %v, want NOT_FOUND", err)
		}
	})
}

// TestRemoveTarget: a switch the collector stopped collecting leaves the
// northbound: its subscribers get a delete of its data, Get and Subscribe
// naming it answer NOT_FOUND, the other switches are untouched, and it
// comes back when it is observed again.
func TestRemoveTarget(t *testing.T) {
	nb, c, ts, ctx := twoSwitches(t)
	sc := subscribeTo(t, ctx, c, gnmi.SubscriptionList_STREAM, "*")
	if diff := cmp.Diff([]string{"n1=1", "n2=2", "sync"}, sorted(read(t, sc, 3))); diff != "" {
		t.Fatalf("initial (-want +got):\n%s", diff)
	}

	nb.RemoveTarget("n2")
	r, err := sc.Recv()
	if err != nil {
		t.Fatal(err)
	}
	n := r.GetUpdate()
	var deleted []string
	for _, d := range n.GetDelete() {
		deleted = append(deleted, store.PathString(&gnmi.Path{Elem: append(append([]*gnmi.PathElem(nil), n.GetPrefix().GetElem()...), d.GetElem()...)}))
	}
	if diff := cmp.Diff([]string{wanQ0 + "/state/effective-kmax"}, deleted); n.GetPrefix().GetTarget() != "n2" || len(n.GetUpdate()) != 0 || diff != "" {
		t.Errorf("after RemoveTarget(n2): %v, want a delete of n2's effective-kmax (-want +got):\n%s", r, diff)
	}
	if diff := cmp.Diff([]string{"n1"}, nb.Targets()); diff != "" {
		t.Errorf("Targets (-want +got):\n%s", diff)
	}
	p := store.MustPath(wanQ0 + "/state/effective-kmax")
	if _, err := c.Get(ctx, &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "n2"}, Path: []*gnmi.Path{p}, Encoding: gnmi.Encoding_PROTO}); status.Code(err) != codes.NotFound {
		t.Errorf("get of the removed switch: %v, want NOT_FOUND", err)
	}
	if _, err := subscribeTo(t, ctx, c, gnmi.SubscriptionList_ONCE, "n2").Recv(); status.Code(err) != codes.NotFound {
		t.Errorf("subscribe to the removed switch: %v, want NOT_FOUND", err)
	}
	nb.Observe("n1", kmaxNotification(ts+1, 11))
	if diff := cmp.Diff([]string{"n1=11"}, read(t, sc, 1)); diff != "" {
		t.Errorf("the other switch (-want +got):\n%s", diff)
	}
	nb.Observe("n2", kmaxNotification(ts+2, 222))
	if diff := cmp.Diff([]string{"n2=222", "sync"}, read(t, subscribeTo(t, ctx, c, gnmi.SubscriptionList_ONCE, "n2"), 2)); diff != "" {
		t.Errorf("observed again (-want +got):\n%s", diff)
	}
}

// TestNorthboundUsers: the northbound's users are a switch's: a read-only
// user reads, and its Set is refused before it is forwarded.
func TestNorthboundUsers(t *testing.T) {
	sch, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	hash := func(pw string) []byte {
		h, err := auth.HashPassword(pw, 4)
		if err != nil {
			t.Fatal(err)
		}
		return []byte(h)
	}
	users := auth.NewUsers(auth.User{Name: "noc", Role: auth.ReadOnly, Hash: hash("ro-secret")})
	forwarded := false
	nb := northbound.New(sch, northbound.WithDialer(func(ctx context.Context, name string) (*grpc.ClientConn, context.Context, bool, error) {
		forwarded = true
		return nil, nil, false, nil
	}))
	nb.Observe("n1", kmaxNotification(time.Now().UnixNano(), 1))
	srv, err := service.New(service.WithInsecure(), service.WithAuth(auth.New(users)), service.WithCapabilities(nb),
		service.WithGet(nb), service.WithSet(nb), service.WithSubscribe(nb))
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis) //nolint:errcheck // ends with Stop
	defer srv.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := gnmi.NewGNMIClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	get := &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "n1"}, Encoding: gnmi.Encoding_PROTO,
		Path: []*gnmi.Path{store.MustPath(wanQ0 + "/state/effective-kmax")}}
	if _, err := c.Get(ctx, get); status.Code(err) != codes.Unauthenticated {
		t.Errorf("get without credentials: %v, want UNAUTHENTICATED", err)
	}
	ctx = metadata.AppendToOutgoingContext(ctx, auth.MetadataUsername, "noc", auth.MetadataPassword, "ro-secret")
	if _, err := c.Get(ctx, get); err != nil {
		t.Errorf("read-only get: %v", err)
	}
	_, err = c.Set(ctx, &gnmi.SetRequest{Prefix: &gnmi.Path{Target: "n1"}})
	if status.Code(err) != codes.PermissionDenied || forwarded {
		t.Errorf("read-only set: %v (forwarded: %v), want PERMISSION_DENIED, not forwarded", err, forwarded)
	}
}

// TestNorthboundRefusesBadCredentials: the northbound, wired as lhcnp
// collector wires it (users, its metrics outside authentication), refuses
// every RPC without valid credentials, History requests included, and
// checks them before it reads a unary request; the metrics count the
// refused calls.
func TestNorthboundRefusesBadCredentials(t *testing.T) {
	sch, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	h, err := auth.HashPassword("noc-secret", 4)
	if err != nil {
		t.Fatal(err)
	}
	users := auth.NewUsers(auth.User{Name: "noc", Role: auth.ReadWrite, Hash: []byte(h)})
	reg := prometheus.NewRegistry()
	m := northbound.NewMetrics(reg)
	nb := northbound.New(sch, northbound.WithMetrics(m))
	nb.Observe("n1", kmaxNotification(time.Now().UnixNano(), 1))
	srv, err := service.New(service.WithInsecure(), service.WithAuth(auth.New(users)), service.WithCapabilities(nb),
		service.WithGet(nb), service.WithSet(nb), service.WithSubscribe(nb),
		service.WithOuterInterceptors([]grpc.UnaryServerInterceptor{m.UnaryInterceptor()}, []grpc.StreamServerInterceptor{m.StreamInterceptor()}))
	if err != nil {
		t.Fatal(err)
	}
	history := func(h *gnmi_ext.History) *gnmi.SubscribeRequest {
		return &gnmi.SubscribeRequest{
			Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{Prefix: &gnmi.Path{Target: "n1"},
				Mode: gnmi.SubscriptionList_STREAM, Subscription: []*gnmi.Subscription{{Path: store.MustPath(wanQ0)}}}},
			Extension: []*gnmi_ext.Extension{{Ext: &gnmi_ext.Extension_History{History: h}}}}
	}
	servicetest.CheckRefusals(t, servicetest.Serve(t, srv), "noc", map[string]*gnmi.SubscribeRequest{
		"History range":    history(&gnmi_ext.History{Request: &gnmi_ext.History_Range{Range: &gnmi_ext.TimeRange{Start: 1, End: 2}}}),
		"History snapshot": history(&gnmi_ext.History{Request: &gnmi_ext.History_SnapshotTime{SnapshotTime: 1}}),
	})
	refused := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != northbound.MetricsPrefix+"rpcs_total" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range mt.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["code"] == codes.Unauthenticated.String() {
				refused[labels["method"]] += mt.GetCounter().GetValue()
			}
		}
	}
	for _, method := range []string{"Capabilities", "Get", "Set", "Subscribe"} {
		if refused[method] == 0 {
			t.Errorf("rpcs_total counts no refused %s (%v)", method, refused)
		}
	}
}

// TestObserveCopiesValues: the collector's loop decodes into messages it
// reuses, so what Observe keeps must be its own: changing the observed
// message afterwards (as the next decode does) changes nothing served.
func TestObserveCopiesValues(t *testing.T) {
	nb, c := startNB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tt := range []struct {
		desc  string
		val   *gnmi.TypedValue
		reuse func(*gnmi.TypedValue)
	}{
		{"uint", &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: 7}},
			func(tv *gnmi.TypedValue) { tv.Value.(*gnmi.TypedValue_UintVal).UintVal = 99 }},
		{"json bytes", &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte("7")}},
			func(tv *gnmi.TypedValue) { tv.Value.(*gnmi.TypedValue_JsonIetfVal).JsonIetfVal[0] = '9' }},
		{"the message's oneof replaced", &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: 7}},
			func(tv *gnmi.TypedValue) { tv.Value = &gnmi.TypedValue_StringVal{StringVal: "x"} }},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			want := proto.Clone(tt.val).(*gnmi.TypedValue)
			r := kmaxNotification(time.Now().UnixNano(), 0)
			r.GetUpdate().Update[0].Val = tt.val
			nb.Observe("n1", r)
			tt.reuse(tt.val)
			resp, err := c.Get(ctx, &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "n1"},
				Path: []*gnmi.Path{store.MustPath(wanQ0 + "/state/effective-kmax")}, Encoding: gnmi.Encoding_PROTO})
			if err != nil {
				t.Fatal(err)
			}
			got := resp.GetNotification()[0].GetUpdate()[0].GetVal()
			if d := cmp.Diff(want, got, protocmp.Transform()); d != "" {
				t.Errorf("served after the message was reused (-want +got):\n%s", d)
			}
		})
	}
}
