package switchmetrics_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/gnmi/auth"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/gnmi/subscribe"
	"github.com/lhcnp/lhcnp/internal/promcheck"
	"github.com/lhcnp/lhcnp/server/switchmetrics"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

type nopDataplane struct{}

func (nopDataplane) ApplyConfig(context.Context, *oc.Lhcnp_Lhcnp) error { return nil }

func user(t *testing.T, name string, r auth.Role) auth.User {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte("pw-"+name), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return auth.User{Name: name, Role: r, Hash: h}
}

func as(ctx context.Context, name string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "username", name, "password", "pw-"+name)
}

// value returns the value of the metric of family name whose labels
// include want (label=value pairs); ok false when there is none.
func value(mf map[string]*dto.MetricFamily, name string, want ...string) (float64, bool) {
	f := mf[name]
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for i := 0; i+1 < len(want); i += 2 {
			if labels[want[i]] != want[i+1] {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue(), true
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue(), true
		case m.GetHistogram() != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// waitFor scrapes until cond holds, up to a deadline.
func waitFor(t *testing.T, url, what string, cond func(map[string]*dto.MetricFamily) bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if cond(promcheck.Scrape(t, url)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20s", what)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
}

func TestMetricsOverHTTP(t *testing.T) {
	sch, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	st := store.New()
	h := service.NewHandler(sch, st, nopDataplane{})
	if err := h.LoadJSON(context.Background(), []byte(`{"lhcnp:lhcnp":{"global":{"config":{"enabled":true}}}}`)); err != nil {
		t.Fatal(err)
	}
	// Many leaves, so that a subscriber that does not read has a queue.
	var b store.Batch
	pad := strings.Repeat("x", 200)
	for i := range 4000 {
		b.Update(store.MustPath(fmt.Sprintf("/bulk/leaf[id=%d]/text", i)), &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: pad}}, store.DiscreteState)
	}
	if _, err := st.Apply(&b, 0); err != nil {
		t.Fatal(err)
	}
	sub := subscribe.New(st)

	m := switchmetrics.New()
	m.WatchSubscriptions(sub)
	m.SetEngineLagFunc(func() time.Duration { return 1500 * time.Millisecond })
	m.SetCommitPendingFunc(func() bool { _, _, ok := h.PendingCommit(); return ok })

	srv, err := service.New(service.WithInsecure(),
		service.WithAuth(auth.New(auth.NewUsers(user(t, "ops", auth.ReadWrite), user(t, "nms", auth.ReadOnly)))),
		service.WithOuterInterceptors([]grpc.UnaryServerInterceptor{m.UnaryInterceptor()}, []grpc.StreamServerInterceptor{m.StreamInterceptor()}),
		service.WithCapabilities(h), service.WithGet(h), service.WithSet(h), service.WithSubscribe(sub))
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	mlis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- m.Serve(ctx, mlis) }()
	url := "http://" + mlis.Addr().String() + "/metrics"

	// A small flow-control window (fixed: no BDP growth), so that a
	// subscriber that does not read backs up into its queue.
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := gnmi.NewGNMIClient(conn)
	ops, nms := as(ctx, "ops"), as(ctx, "nms")

	for range 2 {
		if _, err := c.Capabilities(ops, &gnmi.CapabilityRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Capabilities(ctx, &gnmi.CapabilityRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("no credentials: %v", err)
	}
	if _, err := c.Get(ops, &gnmi.GetRequest{Path: []*gnmi.Path{store.MustPath("/lhcnp/bogus")}}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("bad Get: %v", err)
	}
	alpha := &gnmi.SetRequest{Update: []*gnmi.Update{{
		Path: store.MustPath("/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=0]/config/alpha"),
		Val:  &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonVal{JsonVal: []byte("0.5")}}}}}
	for range 2 {
		if _, err := c.Set(ops, alpha); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Set(nms, alpha); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("read-only Set: %v", err)
	}
	// A ONCE subscription read to its end.
	once, err := c.Subscribe(ops)
	if err != nil {
		t.Fatal(err)
	}
	if err := once.Send(&gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
		Mode: gnmi.SubscriptionList_ONCE, Subscription: []*gnmi.Subscription{{Path: store.MustPath("/lhcnp")}}}}}); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := once.Recv(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}

	exp := `
# HELP lhcnp_gnmi_rpcs_total gNMI RPCs finished, by method (Capabilities, Get, Set, Subscribe) and gRPC status code.
# TYPE lhcnp_gnmi_rpcs_total counter
lhcnp_gnmi_rpcs_total{code="InvalidArgument",method="Get"} 1
lhcnp_gnmi_rpcs_total{code="OK",method="Capabilities"} 2
lhcnp_gnmi_rpcs_total{code="OK",method="Set"} 2
lhcnp_gnmi_rpcs_total{code="OK",method="Subscribe"} 1
lhcnp_gnmi_rpcs_total{code="PermissionDenied",method="Set"} 1
lhcnp_gnmi_rpcs_total{code="Unauthenticated",method="Capabilities"} 1
# HELP lhcnp_engine_lag_seconds How far the dataplane's simulated time trails the wall clock it is paced to.
# TYPE lhcnp_engine_lag_seconds gauge
lhcnp_engine_lag_seconds 1.5
# HELP lhcnp_gnmi_commit_pending 1 while a confirmed commit (gnmi_ext.Commit) waits for its confirmation.
# TYPE lhcnp_gnmi_commit_pending gauge
lhcnp_gnmi_commit_pending 0
`
	if err := testutil.ScrapeAndCompare(url, strings.NewReader(exp), "lhcnp_gnmi_rpcs_total", "lhcnp_engine_lag_seconds", "lhcnp_gnmi_commit_pending"); err != nil {
		t.Error(err)
	}
	mf := promcheck.Scrape(t, url)
	if n, _ := value(mf, "lhcnp_gnmi_set_duration_seconds"); n != 3 {
		t.Errorf("set_duration_seconds count %v, want 3 (2 OK, 1 refused)", n)
	}
	if n, _ := value(mf, "lhcnp_gnmi_notifications_sent_total"); n < 1 {
		t.Errorf("notifications_sent_total %v after a ONCE subscription", n)
	}
	if n, _ := value(mf, "lhcnp_gnmi_subscribers"); n != 0 {
		t.Errorf("subscribers %v with none open", n)
	}
	if _, ok := value(mf, "go_goroutines"); !ok {
		t.Error("no Go runtime metrics")
	}
	// Prometheus' own naming rules (what promtool check metrics applies).
	var ours []*dto.MetricFamily
	for name, f := range mf {
		if strings.HasPrefix(name, switchmetrics.Namespace+"_") {
			ours = append(ours, f)
		}
	}
	problems, err := promlint.NewWithMetricFamilies(ours).Lint()
	if err != nil || len(problems) > 0 {
		t.Errorf("promlint: %v %+v", err, problems)
	}
	promcheck.OpenMetrics(t, url)

	// A STREAM subscriber that does not read: counted, with a queue.
	sctx, scancel := context.WithCancel(ops)
	stalled, err := c.Subscribe(sctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stalled.Send(&gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
		Mode: gnmi.SubscriptionList_STREAM, Subscription: []*gnmi.Subscription{{Path: store.MustPath("/bulk"), Mode: gnmi.SubscriptionMode_ON_CHANGE}}}}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, url, "a stalled subscriber with a queue", func(mf map[string]*dto.MetricFamily) bool {
		n, _ := value(mf, "lhcnp_gnmi_subscribers")
		q, _ := value(mf, "lhcnp_gnmi_subscriber_queue_depth", "mode", "stream")
		return n == 1 && q > 0
	})
	scancel()
	waitFor(t, url, "the subscriber gone and counted Canceled", func(mf map[string]*dto.MetricFamily) bool {
		n, _ := value(mf, "lhcnp_gnmi_subscribers")
		c, _ := value(mf, "lhcnp_gnmi_rpcs_total", "method", "Subscribe", "code", "Canceled")
		_, q := value(mf, "lhcnp_gnmi_subscriber_queue_depth")
		return n == 0 && c == 1 && !q
	})

	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// TestForSwitch: a process serving several switches exports each target's
// RPC counters with its switch label, on the one registry, and the engine
// lag once, without the label.
func TestForSwitch(t *testing.T) {
	m := switchmetrics.NewShared()
	m.SetEngineLagFunc(func() time.Duration { return 3 * time.Millisecond })
	n1, n2 := m.ForSwitch("n1"), m.ForSwitch("n2")
	call := func(mm *switchmetrics.Metrics, code codes.Code) {
		_, _ = mm.UnaryInterceptor()(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/gnmi.gNMI/Get"},
			func(context.Context, any) (any, error) { return nil, status.Error(code, "x") })
	}
	call(n1, codes.OK)
	call(n1, codes.OK)
	call(n2, codes.NotFound)
	exp := `
# HELP lhcnp_gnmi_rpcs_total gNMI RPCs finished, by method (Capabilities, Get, Set, Subscribe) and gRPC status code.
# TYPE lhcnp_gnmi_rpcs_total counter
lhcnp_gnmi_rpcs_total{code="NotFound",method="Get",switch="n2"} 1
lhcnp_gnmi_rpcs_total{code="OK",method="Get",switch="n1"} 2
# HELP lhcnp_engine_lag_seconds How far the dataplane's simulated time trails the wall clock it is paced to.
# TYPE lhcnp_engine_lag_seconds gauge
lhcnp_engine_lag_seconds 0.003
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(exp), "lhcnp_gnmi_rpcs_total", "lhcnp_engine_lag_seconds"); err != nil {
		t.Error(err)
	}
}

// gate is a collector whose Collect waits for release: a scrape under way
// for as long as a test wants.
type gate struct{ entered, release chan struct{} }

var gateDesc = prometheus.NewDesc("lhcnp_test_gate", "A collector that waits.", nil, nil)

func (g gate) Describe(ch chan<- *prometheus.Desc) { ch <- gateDesc }

func (g gate) Collect(ch chan<- prometheus.Metric) {
	close(g.entered)
	<-g.release
	ch <- prometheus.MustNewConstMetric(gateDesc, prometheus.GaugeValue, 1)
}

// TestServeShutdownFinishesScrape: when Serve's context ends during a
// scrape, Serve returns and the scrape still gets its answer, as from the
// collector's and the tuner's server (internal/metricshttp); the switch's
// own server closed the connection under it.
func TestServeShutdownFinishesScrape(t *testing.T) {
	m := switchmetrics.New()
	g := gate{entered: make(chan struct{}), release: make(chan struct{})}
	m.Registry().MustRegister(g)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- m.Serve(ctx, lis) }()
	type answer struct {
		body string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := http.Get("http://" + lis.Addr().String() + "/metrics")
		if err != nil {
			got <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- answer{string(b), err}
	}()
	<-g.entered
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	close(g.release)
	if a := <-got; a.err != nil || !strings.Contains(a.body, "lhcnp_test_gate 1") {
		t.Errorf("the scrape under way at shutdown: %v, body %q; want its answer", a.err, a.body)
	}
}
