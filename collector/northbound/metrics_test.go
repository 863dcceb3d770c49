package northbound_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lhcnp/lhcnp/collector/northbound"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/internal/promcheck"
)

// TestUpdatesSentCounter: updates_sent_total counts what the switches'
// subscribe servers send to northbound clients, and never goes back when a
// switch is removed (its server's count is kept while a stream still uses
// it, then folded into the total).
func TestUpdatesSentCounter(t *testing.T) {
	reg := prometheus.NewRegistry()
	nb, c := startNB(t, northbound.WithMetrics(northbound.NewMetrics(reg)))
	ts := time.Now().UnixNano()
	nb.Observe("n1", kmaxNotification(ts, 1))
	nb.Observe("n2", kmaxNotification(ts, 2))
	sent := func() float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == northbound.MetricsPrefix+"updates_sent_total" {
				return mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		t.Fatal("no updates_sent_total")
		return 0
	}
	// The count follows the send: poll it.
	waitSent := func(want float64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for sent() != want {
			if time.Now().After(deadline) {
				t.Fatalf("updates_sent_total %v, want %v", sent(), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sc := subscribeTo(t, ctx, c, gnmi.SubscriptionList_STREAM, "*")
	if d := cmp.Diff([]string{"n1=1", "n2=2", "sync"}, sorted(read(t, sc, 3))); d != "" {
		t.Fatalf("initial (-want +got):\n%s", d)
	}
	waitSent(2)
	nb.RemoveTarget("n2") // its subscribers get the delete: one more
	if _, err := sc.Recv(); err != nil {
		t.Fatal(err)
	}
	waitSent(3)
	nb.Observe("n1", kmaxNotification(ts+1, 11))
	read(t, sc, 1)
	waitSent(4)
	// While the stream ends on the server (and the removed switch's count
	// is folded into the total) the counter never goes back.
	cancel()
	prev := sent()
	for range 200 {
		got := sent()
		if got < prev {
			t.Fatalf("updates_sent_total went back from %v to %v", prev, got)
		}
		prev = got
		time.Sleep(time.Millisecond)
	}
}

// TestLintMetrics: the northbound's metrics, each with a sample after a
// Capabilities, a Get, a ONCE subscription and a Set naming no switch
// (through the interceptors, as lhcnp collector installs them), pass
// promlint, the naming rules `promtool check metrics` applies.
func TestLintMetrics(t *testing.T) {
	reg := promcheck.NewRegistry()
	m := northbound.NewMetrics(reg)
	nb, c := startNBServing(t, []service.Option{service.WithOuterInterceptors(
		[]grpc.UnaryServerInterceptor{m.UnaryInterceptor()}, []grpc.StreamServerInterceptor{m.StreamInterceptor()})},
		northbound.WithMetrics(m), northbound.WithDialer(func(context.Context, string) (*grpc.ClientConn, context.Context, bool, error) {
			return nil, nil, false, nil
		}))
	nb.Observe("n1", kmaxNotification(time.Now().UnixNano(), 1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Capabilities(ctx, &gnmi.CapabilityRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "n1"}, Encoding: gnmi.Encoding_PROTO,
		Path: []*gnmi.Path{store.MustPath(wanQ0 + "/state/effective-kmax")}}); err != nil {
		t.Fatal(err)
	}
	sc := subscribeTo(t, ctx, c, gnmi.SubscriptionList_ONCE, "n1")
	if d := cmp.Diff([]string{"n1=1", "sync"}, read(t, sc, 2)); d != "" {
		t.Fatalf("ONCE (-want +got):\n%s", d)
	}
	if _, err := c.Set(ctx, &gnmi.SetRequest{}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("Set naming no switch: %v, want INVALID_ARGUMENT", err)
	}
	promcheck.Lint(t, reg, northbound.MetricsPrefix, reg.Collectors...)
}

// TestSetsCounterStartsAtZero: sets_total is served at 0 for the outcomes
// whose labels are known before the first Set: no_target (target "") from
// the start, unknown_target too when Sets are forwarded (a dialer), and
// applied, refused and unreachable for each switch the northbound holds
// once it holds it; nothing per switch without a dialer (Set is
// unimplemented, not counted). Before, each appeared with its first Set,
// which increase() does not count.
func TestSetsCounterStartsAtZero(t *testing.T) {
	dialer := northbound.WithDialer(func(context.Context, string) (*grpc.ClientConn, context.Context, bool, error) {
		return nil, nil, false, nil
	})
	pre := northbound.MetricsPrefix + "sets_total"
	for _, tt := range []struct {
		desc string
		opts []northbound.Option
		want []string
	}{
		{"forwarding", []northbound.Option{dialer}, []string{
			pre + "{target=,outcome=no_target}", pre + "{target=,outcome=unknown_target}",
			pre + "{target=n1,outcome=applied}", pre + "{target=n1,outcome=refused}", pre + "{target=n1,outcome=unreachable}"}},
		{"not forwarding", nil, []string{pre + "{target=,outcome=no_target}"}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			nb, _ := startNB(t, append(tt.opts, northbound.WithMetrics(northbound.NewMetrics(reg)))...)
			nb.AddTarget("n1")
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, mf := range mfs {
				if mf.GetName() != pre {
					continue
				}
				for _, m := range mf.GetMetric() {
					if v := m.GetCounter().GetValue(); v != 0 {
						t.Errorf("%v: %v before any Set", m.GetLabel(), v)
					}
					l := map[string]string{}
					for _, lp := range m.GetLabel() {
						l[lp.GetName()] = lp.GetValue()
					}
					got = append(got, pre+"{target="+l["target"]+",outcome="+l["outcome"]+"}")
				}
			}
			if d := cmp.Diff(tt.want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); d != "" {
				t.Errorf("series served before any Set (-want +got):\n%s", d)
			}
		})
	}
}
