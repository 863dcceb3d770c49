package subscribe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/gnmi/clock"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

var start = time.Unix(1000, 0)

const (
	in0   = "/interfaces/interface[name=eth0]/state/counters/in-octets"
	in1   = "/interfaces/interface[name=eth1]/state/counters/in-octets"
	oper0 = "/interfaces/interface[name=eth0]/state/oper-status"
	mtu0  = "/interfaces/interface[name=eth0]/config/mtu"
	rate1 = "/flows/flow[id=1]/state/rate"
)

func u(v uint64) *gnmi.TypedValue {
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: v}}
}
func str(v string) *gnmi.TypedValue {
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: v}}
}

type harness struct {
	st     *store.Store
	clk    *clock.Fake
	srv    *Server
	client gnmi.GNMIClient
}

// newHarness serves a Server over real gRPC on a loopback TCP port, with a
// fake clock, and a store holding a few leaves of every kind at ts 100.
func newHarness(t *testing.T, opts ...Option) *harness {
	t.Helper()
	h := &harness{clk: clock.NewFake(start)}
	h.st = store.New(store.WithClock(h.clk))
	var b store.Batch
	b.Update(store.MustPath(in0), u(1), store.Counter)
	b.Update(store.MustPath(in1), u(2), store.Counter)
	b.Update(store.MustPath(oper0), str("UP"), store.DiscreteState)
	b.Update(store.MustPath(mtu0), u(9000), store.Config)
	b.Update(store.MustPath(rate1), u(10), store.Gauge)
	if _, err := h.st.Apply(&b, 100); err != nil {
		t.Fatal(err)
	}
	h.srv = New(h.st, append([]Option{WithClock(h.clk), WithOrigins("openconfig")}, opts...)...)
	g := grpc.NewServer()
	gnmi.RegisterGNMIServer(g, service{srv: h.srv})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	h.client = gnmi.NewGNMIClient(conn)
	return h
}

// service serves Subscribe only, without gnmi/service's assembly.
type service struct {
	gnmi.UnimplementedGNMIServer
	srv *Server
}

func (s service) Subscribe(stream gnmi.GNMI_SubscribeServer) error { return s.srv.Subscribe(stream) }

func (h *harness) subscribe(t *testing.T, sl *gnmi.SubscriptionList) gnmi.GNMI_SubscribeClient {
	// A deadline to fail a stuck test, not a timing bar: under -race on a
	// loaded two-core machine TestStalledSubscriber needs over 20 s.
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	sc, err := h.client.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// io.EOF: the server ended the stream first (a refusal such as the
	// stream limit); its status comes from Recv.
	if err := sc.Send(&gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: sl}}); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return sc
}

func (h *harness) publish(t *testing.T, ts int64, fn func(b *store.Batch)) {
	t.Helper()
	var b store.Batch
	fn(&b)
	if _, err := h.st.Apply(&b, ts); err != nil {
		t.Fatal(err)
	}
}

// lines renders a response as sortable lines: "update @ts path=value",
// "delete @ts path", "sync". Paths are prefix+path.
func lines(r *gnmi.SubscribeResponse) []string {
	if r.GetSyncResponse() {
		return []string{"sync"}
	}
	n := r.GetUpdate()
	var out []string
	for _, up := range n.GetUpdate() {
		out = append(out, fmt.Sprintf("update @%d %s=%s", n.GetTimestamp(), joined(n.GetPrefix(), up.GetPath()), valString(up.GetVal())))
	}
	for _, d := range n.GetDelete() {
		out = append(out, fmt.Sprintf("delete @%d %s", n.GetTimestamp(), joined(n.GetPrefix(), d)))
	}
	return out
}

func valString(v *gnmi.TypedValue) string {
	switch x := v.GetValue().(type) {
	case *gnmi.TypedValue_UintVal:
		return fmt.Sprint(x.UintVal)
	case *gnmi.TypedValue_StringVal:
		return x.StringVal
	case *gnmi.TypedValue_JsonVal:
		return "json:" + string(x.JsonVal)
	case *gnmi.TypedValue_JsonIetfVal:
		return "ietf:" + string(x.JsonIetfVal)
	}
	return fmt.Sprintf("%v", v)
}

// untilSync reads up to and including the next sync_response; the updates
// before it are sorted (walk order is not defined).
func untilSync(t *testing.T, sc gnmi.GNMI_SubscribeClient) []string {
	t.Helper()
	var got []string
	for {
		r, err := sc.Recv()
		if err != nil {
			t.Fatalf("Recv: %v (after %v)", err, got)
		}
		l := lines(r)
		if l[0] == "sync" {
			sort.Strings(got)
			return append(got, "sync")
		}
		got = append(got, l...)
	}
}

// next reads n update/delete lines, sorted.
func next(t *testing.T, sc gnmi.GNMI_SubscribeClient, n int) []string {
	t.Helper()
	var got []string
	for len(got) < n {
		r, err := sc.Recv()
		if err != nil {
			t.Fatalf("Recv: %v (after %v)", err, got)
		}
		got = append(got, lines(r)...)
	}
	sort.Strings(got)
	return got
}

func subOf(path string, mode gnmi.SubscriptionMode, sample, heartbeat time.Duration) *gnmi.Subscription {
	return &gnmi.Subscription{Path: store.MustPath(path), Mode: mode, SampleInterval: uint64(sample), HeartbeatInterval: uint64(heartbeat)}
}

func TestOnce(t *testing.T) {
	tests := []struct {
		desc string
		sl   *gnmi.SubscriptionList
		want []string
	}{
		{"one leaf", &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_ONCE, Encoding: gnmi.Encoding_PROTO,
			Subscription: []*gnmi.Subscription{{Path: store.MustPath(in0)}}},
			[]string{"update @100 " + in0 + "=1", "sync"}},
		{"wildcard key, two subscriptions", &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_ONCE, Encoding: gnmi.Encoding_PROTO,
			Subscription: []*gnmi.Subscription{{Path: store.MustPath("/interfaces/interface[name=*]/state/counters")}, {Path: store.MustPath("/flows")}}},
			[]string{"update @100 " + rate1 + "=10", "update @100 " + in0 + "=1", "update @100 " + in1 + "=2", "sync"}},
		{"prefix with target echoed, paths relative", &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_ONCE, Encoding: gnmi.Encoding_PROTO,
			Prefix:       &gnmi.Path{Target: "sw1", Elem: store.MustPath("/interfaces/interface[name=eth0]").Elem},
			Subscription: []*gnmi.Subscription{{Path: store.MustPath("/config")}}},
			[]string{"update @100 " + mtu0 + "=9000", "sync"}},
		{"absent path: only sync", &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_ONCE,
			Subscription: []*gnmi.Subscription{{Path: store.MustPath("/nothing/here")}}},
			[]string{"sync"}},
		{"updates_only: only sync", &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_ONCE, UpdatesOnly: true,
			Subscription: []*gnmi.Subscription{{Path: store.MustPath("/")}}},
			[]string{"sync"}},
		{"JSON wraps json_val", &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_ONCE, Encoding: gnmi.Encoding_JSON,
			Subscription: []*gnmi.Subscription{{Path: store.MustPath(in0)}, {Path: store.MustPath(oper0)}}},
			[]string{"update @100 " + in0 + "=json:1", "update @100 " + oper0 + `=json:"UP"`, "sync"}},
		{"JSON_IETF wraps json_ietf_val, 64-bit as string", &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_ONCE, Encoding: gnmi.Encoding_JSON_IETF,
			Subscription: []*gnmi.Subscription{{Path: store.MustPath(in0)}}},
			[]string{"update @100 " + in0 + `=ietf:"1"`, "sync"}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			h := newHarness(t)
			sc := h.subscribe(t, tt.sl)
			got := untilSync(t, sc)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("responses (-want, +got):\n%s", diff)
			}
			if _, err := sc.Recv(); err != io.EOF {
				t.Errorf("after sync: %v, want EOF (ONCE closes the RPC)", err)
			}
		})
	}
}

func TestOnceEchoesTarget(t *testing.T) {
	h := newHarness(t)
	sc := h.subscribe(t, &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_ONCE, Prefix: &gnmi.Path{Target: "sw1", Origin: "openconfig"},
		Subscription: []*gnmi.Subscription{{Path: store.MustPath(in0)}}})
	r, err := sc.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if got := r.GetUpdate().GetPrefix(); got.GetTarget() != "sw1" || got.GetOrigin() != "openconfig" {
		t.Errorf("prefix = %v, want target sw1 and origin openconfig", got)
	}
}

func TestStreamOnChange(t *testing.T) {
	h := newHarness(t)
	sc := h.subscribe(t, &gnmi.SubscriptionList{Encoding: gnmi.Encoding_PROTO, Subscription: []*gnmi.Subscription{
		subOf("/interfaces/interface[name=eth0]", gnmi.SubscriptionMode_ON_CHANGE, 0, 0),
		subOf("/flows", gnmi.SubscriptionMode_ON_CHANGE, 0, 0),
	}})
	want := []string{"update @100 " + rate1 + "=10", "update @100 " + mtu0 + "=9000", "update @100 " + in0 + "=1", "update @100 " + oper0 + "=UP", "sync"}
	if diff := cmp.Diff(want, untilSync(t, sc)); diff != "" {
		t.Fatalf("initial data (-want, +got):\n%s", diff)
	}
	steps := []struct {
		desc    string
		ts      int64
		publish func(b *store.Batch)
		want    []string
	}{
		{"a change", 200, func(b *store.Batch) { b.Update(store.MustPath(in0), u(5), store.Counter) }, []string{"update @200 " + in0 + "=5"}},
		{"same value then a change: only the change", 300, func(b *store.Batch) {
			b.Update(store.MustPath(in0), u(5), store.Counter).Update(store.MustPath(oper0), str("DOWN"), store.DiscreteState)
		}, []string{"update @300 " + oper0 + "=DOWN"}},
		{"outside the subscription then inside", 400, func(b *store.Batch) {
			b.Update(store.MustPath(in1), u(7), store.Counter).Update(store.MustPath(mtu0), u(1500), store.Config)
		}, []string{"update @400 " + mtu0 + "=1500"}},
		{"older timestamp is clamped to the leaf's", 50, func(b *store.Batch) { b.Update(store.MustPath(in0), u(6), store.Counter) }, []string{"update @200 " + in0 + "=6"}},
		{"a flow ages out", 500, func(b *store.Batch) { b.Delete(store.MustPath("/flows/flow[id=1]")) }, []string{"delete @500 " + rate1}},
		{"a new flow", 600, func(b *store.Batch) { b.Update(store.MustPath("/flows/flow[id=2]/state/rate"), u(3), store.Gauge) },
			[]string{"update @600 /flows/flow[id=2]/state/rate=3"}},
	}
	for _, s := range steps {
		h.publish(t, s.ts, s.publish)
		if diff := cmp.Diff(s.want, next(t, sc, len(s.want))); diff != "" {
			t.Errorf("%s (-want, +got):\n%s", s.desc, diff)
		}
	}
}

func TestStreamUpdatesOnly(t *testing.T) {
	h := newHarness(t)
	sc := h.subscribe(t, &gnmi.SubscriptionList{UpdatesOnly: true, Encoding: gnmi.Encoding_PROTO,
		Subscription: []*gnmi.Subscription{subOf("/", gnmi.SubscriptionMode_ON_CHANGE, 0, 0)}})
	if diff := cmp.Diff([]string{"sync"}, untilSync(t, sc)); diff != "" {
		t.Fatalf("initial (-want, +got):\n%s", diff)
	}
	h.publish(t, 200, func(b *store.Batch) { b.Update(store.MustPath(in1), u(3), store.Counter) })
	if diff := cmp.Diff([]string{"update @200 " + in1 + "=3"}, next(t, sc, 1)); diff != "" {
		t.Errorf("update (-want, +got):\n%s", diff)
	}
}

// advance waits until the stream has armed its timer, then moves the clock.
func (h *harness) advance(t *testing.T, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	timer := time.AfterFunc(10*time.Second, func() { close(done) })
	defer timer.Stop()
	if !h.clk.WaitArmed(done, 1) {
		t.Fatal("the stream never armed a timer")
	}
	h.clk.Advance(d)
}

func TestSample(t *testing.T) {
	const every = 10 * time.Second
	counters := "/interfaces/interface[name=eth0]/state"
	all := []string{"update @100 " + in0 + "=1", "update @100 " + oper0 + "=UP"}
	tests := []struct {
		desc      string
		suppress  bool
		heartbeat time.Duration
		// per tick: what to publish before it, what the sample sends
		ticks []struct {
			publish func(b *store.Batch)
			want    []string
		}
	}{
		{desc: "every leaf every interval", ticks: []struct {
			publish func(b *store.Batch)
			want    []string
		}{
			{nil, all},
			{func(b *store.Batch) { b.Update(store.MustPath(in0), u(2), store.Counter) }, []string{"update @100 " + oper0 + "=UP", "update @300 " + in0 + "=2"}},
		}},
		{desc: "suppress_redundant sends changed leaves only", suppress: true, ticks: []struct {
			publish func(b *store.Batch)
			want    []string
		}{
			{func(b *store.Batch) { b.Update(store.MustPath(in0), u(2), store.Counter) }, []string{"update @200 " + in0 + "=2"}},
			{func(b *store.Batch) { b.Update(store.MustPath(oper0), str("DOWN"), store.DiscreteState) }, []string{"update @300 " + oper0 + "=DOWN"}},
		}},
		{desc: "heartbeat forces a resend under suppress_redundant", suppress: true, heartbeat: 2 * every, ticks: []struct {
			publish func(b *store.Batch)
			want    []string
		}{
			{func(b *store.Batch) { b.Update(store.MustPath(in0), u(2), store.Counter) }, []string{"update @200 " + in0 + "=2"}},
			{func(b *store.Batch) { b.Update(store.MustPath(in0), u(3), store.Counter) }, []string{"update @100 " + oper0 + "=UP", "update @300 " + in0 + "=3"}},
		}},
		{desc: "nothing changed: nothing sent until the heartbeat is due", suppress: true, heartbeat: 2 * every, ticks: []struct {
			publish func(b *store.Batch)
			want    []string
		}{
			{func(b *store.Batch) { b.Update(store.MustPath(in0), u(1), store.Counter) }, nil}, // same value, published again
			{nil, []string{"update @100 " + in0 + "=1", "update @100 " + oper0 + "=UP"}},       // still stamped when it changed
		}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			h := newHarness(t)
			s := subOf(counters, gnmi.SubscriptionMode_SAMPLE, every, tt.heartbeat)
			s.SuppressRedundant = tt.suppress
			sc := h.subscribe(t, &gnmi.SubscriptionList{Encoding: gnmi.Encoding_PROTO, Subscription: []*gnmi.Subscription{s}})
			if diff := cmp.Diff(append(all, "sync"), untilSync(t, sc)); diff != "" {
				t.Fatalf("initial sample (-want, +got):\n%s", diff)
			}
			for i, tick := range tt.ticks {
				if tick.publish != nil {
					h.publish(t, int64(200+100*i), tick.publish)
				}
				h.advance(t, every)
				if diff := cmp.Diff(tick.want, next(t, sc, len(tick.want))); diff != "" {
					t.Errorf("tick %d (-want, +got):\n%s", i+1, diff)
				}
			}
		})
	}
}

func TestSampleDeletesAndSkipsMissedSlots(t *testing.T) {
	h := newHarness(t)
	sc := h.subscribe(t, &gnmi.SubscriptionList{Encoding: gnmi.Encoding_PROTO,
		Subscription: []*gnmi.Subscription{subOf("/flows", gnmi.SubscriptionMode_SAMPLE, time.Second, 0)}})
	untilSync(t, sc)
	// A vanished leaf is reported at once, not at the next sample.
	h.publish(t, 200, func(b *store.Batch) { b.Delete(store.MustPath("/flows/flow[id=1]")) })
	if diff := cmp.Diff([]string{"delete @200 " + rate1}, next(t, sc, 1)); diff != "" {
		t.Errorf("delete (-want, +got):\n%s", diff)
	}
	h.publish(t, 300, func(b *store.Batch) { b.Update(store.MustPath("/flows/flow[id=2]/state/rate"), u(1), store.Gauge) })
	// 3.5 intervals late: one sample, and the next deadline is back on the grid.
	h.advance(t, 3500*time.Millisecond)
	if diff := cmp.Diff([]string{"update @300 /flows/flow[id=2]/state/rate=1"}, next(t, sc, 1)); diff != "" {
		t.Errorf("late sample (-want, +got):\n%s", diff)
	}
	done := make(chan struct{})
	defer close(done)
	h.clk.WaitArmed(done, 1)
	if d, _ := h.clk.NextDeadline(); !d.Equal(start.Add(4 * time.Second)) {
		t.Errorf("next sample at %v, want %v", d.Sub(start), 4*time.Second)
	}
}

// TestSampleIntervalZeroIsTheMinimum: gNMI 3.5.1.5.2 says sample_interval 0
// (what a client that leaves it unset sends) gets "the lowest interval
// possible for the target", which is the minimum the Server accepts. It
// sampled every 10 s (a default of its own), a thousand times slower than
// the 10 ms the same target accepts when asked; this failed before.
func TestSampleIntervalZeroIsTheMinimum(t *testing.T) {
	for _, tt := range []struct {
		desc string
		opts []Option
		want time.Duration
	}{
		{desc: "default minimum", want: DefaultMinSampleInterval},
		{desc: "a switch's publish interval", opts: []Option{WithMinSampleInterval(100 * time.Millisecond)}, want: 100 * time.Millisecond},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			h := newHarness(t, tt.opts...)
			sc := h.subscribe(t, &gnmi.SubscriptionList{Encoding: gnmi.Encoding_PROTO,
				Subscription: []*gnmi.Subscription{subOf(in0, gnmi.SubscriptionMode_SAMPLE, 0, 0)}})
			untilSync(t, sc)
			done := make(chan struct{})
			defer close(done)
			if !h.clk.WaitArmed(done, 1) {
				t.Fatal("no sample timer")
			}
			if d, _ := h.clk.NextDeadline(); d.Sub(start) != tt.want {
				t.Errorf("sample_interval 0 samples every %v, want %v", d.Sub(start), tt.want)
			}
		})
	}
}

func TestOnChangeHeartbeat(t *testing.T) {
	h := newHarness(t)
	sc := h.subscribe(t, &gnmi.SubscriptionList{Encoding: gnmi.Encoding_PROTO,
		Subscription: []*gnmi.Subscription{subOf(mtu0, gnmi.SubscriptionMode_ON_CHANGE, 0, time.Minute)}})
	untilSync(t, sc)
	h.advance(t, time.Minute)
	if diff := cmp.Diff([]string{"update @100 " + mtu0 + "=9000"}, next(t, sc, 1)); diff != "" {
		t.Errorf("heartbeat (-want, +got):\n%s", diff)
	}
}

func TestTargetDefined(t *testing.T) {
	h := newHarness(t, WithTargetDefinedInterval(5*time.Second))
	sc := h.subscribe(t, &gnmi.SubscriptionList{Encoding: gnmi.Encoding_PROTO,
		Subscription: []*gnmi.Subscription{subOf("/interfaces/interface[name=eth0]", gnmi.SubscriptionMode_TARGET_DEFINED, 0, 0)}})
	untilSync(t, sc)
	// Config and discrete state stream on change...
	h.publish(t, 200, func(b *store.Batch) {
		b.Update(store.MustPath(mtu0), u(1500), store.Config).Update(store.MustPath(in0), u(9), store.Counter)
	})
	if diff := cmp.Diff([]string{"update @200 " + mtu0 + "=1500"}, next(t, sc, 1)); diff != "" {
		t.Errorf("on change (-want, +got):\n%s", diff)
	}
	// ...counters are sampled, and only they.
	h.advance(t, 5*time.Second)
	if diff := cmp.Diff([]string{"update @200 " + in0 + "=9"}, next(t, sc, 1)); diff != "" {
		t.Errorf("sample (-want, +got):\n%s", diff)
	}
}

func TestPoll(t *testing.T) {
	for _, updatesOnly := range []bool{false, true} {
		t.Run(fmt.Sprint("updates_only=", updatesOnly), func(t *testing.T) {
			h := newHarness(t)
			sc := h.subscribe(t, &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_POLL, UpdatesOnly: updatesOnly, Encoding: gnmi.Encoding_PROTO,
				Subscription: []*gnmi.Subscription{{Path: store.MustPath(in0)}}})
			want := []string{"update @100 " + in0 + "=1", "sync"}
			if updatesOnly {
				want = []string{"sync"}
			}
			if diff := cmp.Diff(want, untilSync(t, sc)); diff != "" {
				t.Errorf("initial (-want, +got):\n%s", diff)
			}
			for i, v := range []uint64{5, 6} {
				h.publish(t, int64(200+100*i), func(b *store.Batch) { b.Update(store.MustPath(in0), u(v), store.Counter) })
				if err := sc.Send(&gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Poll{Poll: &gnmi.Poll{}}}); err != nil {
					t.Fatal(err)
				}
				want := []string{fmt.Sprintf("update @%d %s=%d", 200+100*i, in0, v), "sync"}
				if diff := cmp.Diff(want, untilSync(t, sc)); diff != "" {
					t.Errorf("poll %d (-want, +got):\n%s", i+1, diff)
				}
			}
		})
	}
}

// TestPollReportsDeletes: gNMI 3.5.1.5.3 has a poll's answer follow 3.5.2.3,
// which says a node removed from the subscribed paths gets a delete. A leaf
// the last answer sent and that vanished since (an aged flow) is deleted in
// the next answer, stamped when it vanished; it was simply absent, and a
// polling client's cache kept it for ever: this failed before. A leaf that
// came and went between two polls was never sent, so it gets no delete.
func TestPollReportsDeletes(t *testing.T) {
	h := newHarness(t)
	sc := h.subscribe(t, &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_POLL, Encoding: gnmi.Encoding_PROTO,
		Subscription: []*gnmi.Subscription{{Path: store.MustPath("/flows")}}})
	if diff := cmp.Diff([]string{"update @100 " + rate1 + "=10", "sync"}, untilSync(t, sc)); diff != "" {
		t.Fatalf("initial (-want, +got):\n%s", diff)
	}
	rate2 := "/flows/flow[id=2]/state/rate"
	h.publish(t, 200, func(b *store.Batch) { b.Delete(store.MustPath("/flows/flow[id=1]")) })
	h.publish(t, 250, func(b *store.Batch) { b.Update(store.MustPath(rate2), u(7), store.Gauge) })
	h.publish(t, 260, func(b *store.Batch) { b.Delete(store.MustPath("/flows/flow[id=2]")) })
	poll := &gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Poll{Poll: &gnmi.Poll{}}}
	if err := sc.Send(poll); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"delete @200 " + rate1, "sync"}, untilSync(t, sc)); diff != "" {
		t.Errorf("poll after the flow aged out (-want, +got):\n%s", diff)
	}
	// Deleted once: the next poll has nothing to say about it.
	if err := sc.Send(poll); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"sync"}, untilSync(t, sc)); diff != "" {
		t.Errorf("poll after that (-want, +got):\n%s", diff)
	}
}

// TestPollIgnoresIntervals: gNMI 3.5.1.3 lets a POLL subscription carry the
// Subscription's parameters (a client may fill them in whatever the mode);
// they mean nothing to a poll and are ignored. A sample_interval or
// heartbeat_interval was INVALID_ARGUMENT; this failed before.
func TestPollIgnoresIntervals(t *testing.T) {
	for _, tt := range []struct {
		desc string
		sub  *gnmi.Subscription
	}{
		{desc: "sample_interval", sub: subOf(in0, gnmi.SubscriptionMode_SAMPLE, time.Second, 0)},
		{desc: "heartbeat_interval", sub: subOf(in0, gnmi.SubscriptionMode_ON_CHANGE, 0, time.Second)},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			h := newHarness(t)
			sc := h.subscribe(t, &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_POLL, Encoding: gnmi.Encoding_PROTO,
				Subscription: []*gnmi.Subscription{tt.sub}})
			if diff := cmp.Diff([]string{"update @100 " + in0 + "=1", "sync"}, untilSync(t, sc)); diff != "" {
				t.Errorf("initial (-want, +got):\n%s", diff)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	p := store.MustPath(in0)
	tests := []struct {
		desc   string
		req    *gnmi.SubscribeRequest
		second *gnmi.SubscribeRequest
		code   codes.Code
		msg    string
	}{
		{desc: "poll first", req: &gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Poll{Poll: &gnmi.Poll{}}}, code: codes.InvalidArgument, msg: "subscription list"},
		{desc: "unknown list mode", req: list(&gnmi.SubscriptionList{Mode: 7, Subscription: []*gnmi.Subscription{{Path: p}}}), code: codes.InvalidArgument, msg: "mode 7"},
		{desc: "no subscriptions", req: list(&gnmi.SubscriptionList{}), code: codes.InvalidArgument, msg: "no subscriptions"},
		{desc: "unsupported encoding", req: list(&gnmi.SubscriptionList{Encoding: gnmi.Encoding_ASCII, Subscription: []*gnmi.Subscription{{Path: p}}}), code: codes.Unimplemented, msg: "ASCII"},
		{desc: "ONCE with sample_interval", req: list(&gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_ONCE,
			Subscription: []*gnmi.Subscription{{Path: p, SampleInterval: uint64(time.Second)}}}), code: codes.InvalidArgument, msg: "path " + in0 + ": sample_interval"},
		{desc: "sample_interval below the minimum", req: list(&gnmi.SubscriptionList{
			Subscription: []*gnmi.Subscription{{Path: p, Mode: gnmi.SubscriptionMode_SAMPLE, SampleInterval: uint64(time.Millisecond)}}}), code: codes.InvalidArgument, msg: "below the minimum"},
		{desc: "heartbeat below the minimum", req: list(&gnmi.SubscriptionList{
			Subscription: []*gnmi.Subscription{{Path: p, Mode: gnmi.SubscriptionMode_ON_CHANGE, HeartbeatInterval: 5}}}), code: codes.InvalidArgument, msg: "heartbeat_interval"},
		{desc: "unknown subscription mode", req: list(&gnmi.SubscriptionList{
			Subscription: []*gnmi.Subscription{{Path: p, Mode: 9}}}), code: codes.InvalidArgument, msg: "path " + in0 + ": unknown subscription mode 9"},
		{desc: "bad origin", req: list(&gnmi.SubscriptionList{Prefix: &gnmi.Path{Origin: "cli"}, Subscription: []*gnmi.Subscription{{Path: p}}}), code: codes.InvalidArgument, msg: `prefix /: origin "cli" is not served (use "openconfig" or none)`},
		{desc: "deprecated element", req: list(&gnmi.SubscriptionList{Subscription: []*gnmi.Subscription{{Path: &gnmi.Path{Element: []string{"a"}}}}}), code: codes.InvalidArgument, msg: "deprecated"},
		{desc: "second subscription list", req: list(&gnmi.SubscriptionList{Subscription: []*gnmi.Subscription{{Path: p, Mode: gnmi.SubscriptionMode_ON_CHANGE}}}),
			second: list(&gnmi.SubscriptionList{Subscription: []*gnmi.Subscription{{Path: p}}}), code: codes.InvalidArgument, msg: "already received"},
		{desc: "poll on a STREAM list", req: list(&gnmi.SubscriptionList{Subscription: []*gnmi.Subscription{{Path: p, Mode: gnmi.SubscriptionMode_ON_CHANGE}}}),
			second: &gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Poll{Poll: &gnmi.Poll{}}}, code: codes.InvalidArgument, msg: "poll request on a STREAM"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			h := newHarness(t)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			sc, err := h.client.Subscribe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sc.Send(tt.req)
			if tt.second != nil {
				untilSync(t, sc)
				sc.Send(tt.second)
			}
			for {
				_, err = sc.Recv()
				if err != nil {
					break
				}
			}
			if st := status.Convert(err); st.Code() != tt.code || !strings.Contains(st.Message(), tt.msg) {
				t.Errorf("error = %v, want %v containing %q", err, tt.code, tt.msg)
			}
		})
	}
}

func list(sl *gnmi.SubscriptionList) *gnmi.SubscribeRequest {
	return &gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: sl}}
}

// TestStalledSubscriber: a client that stops reading must not slow the
// publisher or another subscriber, and holds at most one value per leaf.
func TestStalledSubscriber(t *testing.T) {
	h := newHarness(t)
	const leaves, rounds = 500, 200
	paths := make([]*gnmi.Path, leaves)
	for i := range paths {
		paths[i] = store.MustPath(fmt.Sprintf("/big/leaf[id=%d]/value", i))
	}
	sl := &gnmi.SubscriptionList{Encoding: gnmi.Encoding_PROTO,
		Subscription: []*gnmi.Subscription{subOf("/big", gnmi.SubscriptionMode_ON_CHANGE, 0, 0)}}
	stalled := h.subscribe(t, sl)
	untilSync(t, stalled)
	live := h.subscribe(t, sl)
	untilSync(t, live)

	liveDone := make(chan error, 1)
	go func() {
		// The live subscriber reads until it sees the last round's value of the last leaf.
		for {
			r, err := live.Recv()
			if err != nil {
				liveDone <- err
				return
			}
			for _, up := range r.GetUpdate().GetUpdate() {
				if joined(r.GetUpdate().GetPrefix(), up.GetPath()) == store.PathString(paths[leaves-1]) && up.GetVal().GetUintVal() == rounds {
					liveDone <- nil
					return
				}
			}
		}
	}()
	var b store.Batch
	for r := 1; r <= rounds; r++ {
		b.Reset()
		for _, p := range paths {
			b.Update(p, u(uint64(r)), store.Counter)
		}
		h.st.Apply(&b, int64(1000+r))
	}
	select {
	case err := <-liveDone:
		if err != nil {
			t.Fatalf("live subscriber: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the live subscriber did not get the last round while another subscriber stalled")
	}
	if c := h.srv.Stats().Coalesced; c == 0 {
		t.Errorf("no update was coalesced although a subscriber stalled through %d rounds", rounds)
	}
	// The stalled subscriber, reading at last, ends with the latest values.
	last := map[string]uint64{}
	for len(last) < leaves || !allEqual(last, rounds) {
		r, err := stalled.Recv()
		if err != nil {
			t.Fatalf("stalled subscriber: %v", err)
		}
		for _, up := range r.GetUpdate().GetUpdate() {
			last[joined(r.GetUpdate().GetPrefix(), up.GetPath())] = up.GetVal().GetUintVal()
		}
	}
}

func joined(prefix, p *gnmi.Path) string {
	return store.PathString(&gnmi.Path{Elem: append(append([]*gnmi.PathElem{}, prefix.GetElem()...), p.GetElem()...)})
}

func allEqual(m map[string]uint64, v uint64) bool {
	for _, x := range m {
		if x != v {
			return false
		}
	}
	return true
}

func TestQueueCoalesces(t *testing.T) {
	st := store.New()
	st.Update(store.MustPath("/a"), u(1), store.Counter, 0)
	st.Update(store.MustPath("/b"), u(1), store.Counter, 0)
	var a, b *store.Node
	st.Walk(store.MustPattern(nil, store.MustPath("/")), func(l *store.Node, _ *store.Value, _ store.Kind) {
		if l.Key() == "/a" {
			a = l
		} else {
			b = l
		}
	})
	q := newQueue()
	q.insert(entry{leaf: a, val: &store.Value{TV: u(1)}, seq: 1})
	q.insert(entry{leaf: b, val: &store.Value{TV: u(1)}, seq: 1})
	q.insert(entry{}) // marker
	q.insert(entry{leaf: a, val: &store.Value{TV: u(2)}, seq: 2})
	q.insert(entry{leaf: a, val: &store.Value{TV: u(0)}, seq: 1}) // older: ignored
	q.insert(entry{leaf: a, seq: 3})                              // delete
	if q.Len() != 3 {
		t.Fatalf("Len() = %d, want 3 (one per leaf plus the marker)", q.Len())
	}
	items, coalesced := q.drain(nil)
	if coalesced != 2 || items[0].val != nil || items[0].dups != 2 || items[0].seq != 3 {
		t.Errorf("a: %+v, coalesced %d; want a delete at seq 3 with 2 dups, 2 coalesced", items[0], coalesced)
	}
	if items[2].leaf != nil {
		t.Errorf("marker moved: %+v", items)
	}
	if q.Len() != 0 {
		t.Errorf("Len() after drain = %d", q.Len())
	}
}

func TestEncoders(t *testing.T) {
	tests := []struct {
		desc string
		enc  ValueEncoder
		in   *gnmi.TypedValue
		want string
	}{
		{"JSON uint", JSONEncoder, u(7), "json:7"},
		{"JSON string", JSONEncoder, str(`a"b`), `json:"a\"b"`},
		{"JSON NaN", JSONEncoder, &gnmi.TypedValue{Value: &gnmi.TypedValue_DoubleVal{DoubleVal: nan()}}, `json:"NaN"`},
		{"JSON bool", JSONEncoder, &gnmi.TypedValue{Value: &gnmi.TypedValue_BoolVal{BoolVal: true}}, "json:true"},
		{"IETF int64 as string", IETFEncoder, &gnmi.TypedValue{Value: &gnmi.TypedValue_IntVal{IntVal: -3}}, `ietf:"-3"`},
		{"IETF leaf-list", IETFEncoder, &gnmi.TypedValue{Value: &gnmi.TypedValue_LeaflistVal{LeaflistVal: &gnmi.ScalarArray{Element: []*gnmi.TypedValue{str("x"), str("y")}}}}, `ietf:["x","y"]`},
		{"PROTO as is", ProtoEncoder, u(7), "7"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			got, err := tt.enc.EncodeValue(nil, tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if s := valString(got); s != tt.want {
				t.Errorf("got %s, want %s", s, tt.want)
			}
		})
	}
}

func nan() float64 { var z float64; return z / z }

// TestPathRewriteAndValidator: a target's rewrite (module qualifiers
// stripped) makes a qualified path match, and its validator turns a path it
// refuses into INVALID_ARGUMENT naming the joined path.
func TestPathRewriteAndValidator(t *testing.T) {
	strip := func(p *gnmi.Path) *gnmi.Path {
		out := &gnmi.Path{Origin: p.GetOrigin(), Target: p.GetTarget()}
		for _, e := range p.GetElem() {
			name := e.GetName()
			if i := strings.IndexByte(name, ':'); i >= 0 {
				name = name[i+1:]
			}
			out.Elem = append(out.Elem, &gnmi.PathElem{Name: name, Key: e.GetKey()})
		}
		return out
	}
	refuse := func(p *gnmi.Path) error {
		if strings.Contains(store.PathString(p), "bogus") {
			return fmt.Errorf("not in the schema")
		}
		return nil
	}
	h := newHarness(t, WithPathRewrite(strip), WithPathValidator(refuse))
	qualified := store.MustPath(mtu0)
	qualified.Elem[0].Name = "mod:" + qualified.Elem[0].Name
	sc := h.subscribe(t, &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_ONCE,
		Encoding: gnmi.Encoding_PROTO, Subscription: []*gnmi.Subscription{{Path: qualified}}})
	if diff := cmp.Diff([]string{"update @100 " + mtu0 + "=9000", "sync"}, untilSync(t, sc)); diff != "" {
		t.Errorf("qualified path (-want +got):\n%s", diff)
	}
	sc = h.subscribe(t, &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_ONCE, Prefix: store.MustPath("/interfaces"),
		Subscription: []*gnmi.Subscription{{Path: store.MustPath("/bogus")}}})
	_, err := sc.Recv()
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || st.Message() != "path /interfaces/bogus: not in the schema" {
		t.Errorf("refused path: %v", err)
	}
}

// TestInitialDataInPathOrder: the initial data of a subscription, and a
// poll's answer, come in path order, a number key by its value
// (queue[id=2] before queue[id=10]), as Get answers: two subscriptions to
// the same data get the same updates in the same order. They came in the
// store's map walk order, a new one each time: this failed before.
func TestInitialDataInPathOrder(t *testing.T) {
	h := newHarness(t)
	var want []string
	h.publish(t, 200, func(b *store.Batch) {
		for _, name := range []string{"eth0", "eth1", "eth10", "eth2"} {
			for id := range 12 {
				for _, leaf := range []string{"state/depth", "state/counters/marked", "state/counters/dropped", "config/id"} {
					p := fmt.Sprintf("/ports/port[name=%s]/queue[id=%d]/%s", name, id, leaf)
					b.Update(store.MustPath(p), u(uint64(id)), store.Gauge)
					want = append(want, fmt.Sprintf("update @200 %s=%d", p, id))
				}
			}
		}
	})
	slices.SortFunc(want, func(a, b string) int { return store.ComparePaths(a, b) })
	if i, j := slices.Index(want, "update @200 /ports/port[name=eth0]/queue[id=2]/config/id=2"),
		slices.Index(want, "update @200 /ports/port[name=eth0]/queue[id=10]/config/id=10"); i > j {
		t.Fatalf("want is not in path order: queue 2 at %d, queue 10 at %d", i, j)
	}
	want = append(want, "sync")
	// inOrder reads up to the sync_response, in the order sent.
	inOrder := func(sc gnmi.GNMI_SubscribeClient) []string {
		var got []string
		for {
			r, err := sc.Recv()
			if err != nil {
				t.Fatalf("Recv: %v (after %d lines)", err, len(got))
			}
			got = append(got, lines(r)...)
			if r.GetSyncResponse() {
				return got
			}
		}
	}
	for _, mode := range []gnmi.SubscriptionList_Mode{gnmi.SubscriptionList_ONCE, gnmi.SubscriptionList_ONCE, gnmi.SubscriptionList_STREAM, gnmi.SubscriptionList_POLL} {
		sl := &gnmi.SubscriptionList{Mode: mode, Encoding: gnmi.Encoding_PROTO, Subscription: []*gnmi.Subscription{{Path: store.MustPath("/ports")}}}
		if mode == gnmi.SubscriptionList_STREAM {
			sl.Subscription[0].Mode = gnmi.SubscriptionMode_ON_CHANGE
		}
		sc := h.subscribe(t, sl)
		if diff := cmp.Diff(want, inOrder(sc)); diff != "" {
			t.Errorf("%v: initial data (-want, +got):\n%s", mode, diff)
		}
		if mode == gnmi.SubscriptionList_POLL {
			if err := sc.Send(&gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Poll{Poll: &gnmi.Poll{}}}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, inOrder(sc)); diff != "" {
				t.Errorf("a poll's answer (-want, +got):\n%s", diff)
			}
		}
	}
}
