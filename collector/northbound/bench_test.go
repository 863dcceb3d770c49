package northbound_test

// Benchmarks of the northbound. Run with:
//
//	go test ./collector/northbound -run '^$' -bench . -benchtime 1x     # History range
//	go test ./collector/northbound -run '^$' -bench FanOut -benchtime 200x
//
// BenchmarkHistoryRange loads one hour of one queue's state leaves at
// 100 ms with COPY and streams it with a History range over loopback gRPC;
// BenchmarkFanOut delivers live updates to 8 subscribers through the
// northbound and through a switch's own Subscribe in the same run.

import (
	"context"
	"fmt"
	"net"
	"sort"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmi/proto/gnmi_ext"
	"github.com/openconfig/goyang/pkg/yang"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/lhcnp/lhcnp/collector/northbound"
	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/gnmi/subscribe"
	"github.com/lhcnp/lhcnp/internal/benchtest"
	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// queueLeaves returns the leaves of one queue's state container (its
// counters included) in the schema, as concrete paths of queue 0 of wan.
func queueLeaves(tb testing.TB, sch *schema.Schema) []*gnmi.Path {
	tb.Helper()
	e := sch.Root()
	for _, n := range []string{"lhcnp", "interfaces", "interface", "queues", "queue", "state"} {
		if e = e.Dir[n]; e == nil {
			tb.Fatalf("schema: no %s", n)
		}
	}
	base := store.MustPath(wanQ0 + "/state").GetElem()
	var out []*gnmi.Path
	var walk func(e *yang.Entry, el []*gnmi.PathElem)
	walk = func(e *yang.Entry, el []*gnmi.PathElem) {
		names := make([]string, 0, len(e.Dir))
		for n := range e.Dir {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			c := e.Dir[n]
			p := append(append([]*gnmi.PathElem(nil), el...), &gnmi.PathElem{Name: n})
			switch {
			case c.IsLeaf():
				out = append(out, &gnmi.Path{Elem: p})
			case c.IsContainer():
				walk(c, p)
			}
		}
	}
	walk(e, base)
	return out
}

// sampleRow is one row of samples for leaf l at step i, typed as the
// collector stores it.
func sampleRow(l *schema.Leaf, ts time.Time, id int64, i int) []any {
	r := []any{ts, id, nil, nil, nil, nil, nil, int16(0), int64(1)}
	switch l.Type.Kind {
	case yang.Ydecimal64:
		r[3] = float64(i%1000) / 8
	case yang.Ybool:
		r[5] = i%2 == 0
	case yang.Yenum, yang.Ystring, yang.Yidentityref, yang.Yunion:
		r[6] = fmt.Sprint("v", i%7)
	default:
		r[2] = int64(i)
	}
	return r
}

// storeQueue stores steps instants, step apart from start, of every leaf of
// paths for target sw1 (sampleRow's values) with COPY, and returns the rows
// stored.
func storeQueue(tb testing.TB, pool *pgxpool.Pool, sch *schema.Schema, paths []*gnmi.Path, start time.Time, steps int, step time.Duration) int64 {
	tb.Helper()
	ids, leaves := storeSeries(tb, pool, sch, paths)
	n, err := pool.CopyFrom(context.Background(), pgx.Identifier{"samples"}, sampleColumns,
		pgx.CopyFromFunc(func() func() ([]any, error) {
			s, k := 0, 0
			return func() ([]any, error) {
				if s == steps {
					return nil, nil
				}
				r := sampleRow(leaves[k], start.Add(time.Duration(s)*step), ids[k], s)
				if k++; k == len(paths) {
					k, s = 0, s+1
				}
				return r, nil
			}
		}()))
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// sampleColumns are the columns of sampleRow.
var sampleColumns = []string{"ts", "series_id", "v_int", "v_float", "v_num", "v_bool", "v_text", "flags", "batch_id"}

// storeSeries stores the series of paths for target sw1 and returns their
// ids and leaves.
func storeSeries(tb testing.TB, pool *pgxpool.Pool, sch *schema.Schema, paths []*gnmi.Path) ([]int64, []*schema.Leaf) {
	tb.Helper()
	ids := make([]int64, len(paths))
	leaves := make([]*schema.Leaf, len(paths))
	for i, p := range paths {
		ps := store.PathString(p)
		ids[i] = rows.SeriesID("sw1", ps)
		l, ok := sch.LeafAt(p)
		if !ok {
			tb.Fatalf("%s: not a leaf", ps)
		}
		leaves[i] = l
		if _, err := pool.Exec(context.Background(), `INSERT INTO series (id, target, path, schema_path) VALUES ($1, 'sw1', $2, $3)`,
			ids[i], ps, l.SchemaPath); err != nil {
			tb.Fatal(err)
		}
	}
	return ids, leaves
}

// BenchmarkHistoryRange: one hour of one queue's leaves every 100 ms
// (36 000 instants × every state leaf of a queue), loaded with COPY, then a
// History range over all of it per iteration: updates/s delivered to a
// gRPC client on loopback (PROTO), updates only.
func BenchmarkHistoryRange(b *testing.B) {
	pool, _ := pgtest.New(b)
	ctx := context.Background()
	sch, err := schema.New()
	if err != nil {
		b.Fatal(err)
	}
	paths := queueLeaves(b, sch)
	end := time.Now().Add(-time.Minute).Truncate(time.Second)
	start := end.Add(-time.Hour)
	const step = 100 * time.Millisecond
	steps := int(time.Hour / step)
	t0 := time.Now()
	n := storeQueue(b, pool, sch, paths, start, steps, step)
	b.Logf("loaded %d rows (%d leaves × %d instants) with COPY in %v", n, len(paths), steps, time.Since(t0).Round(time.Millisecond))
	if _, err := pool.Exec(ctx, `ANALYZE samples`); err != nil {
		b.Fatal(err)
	}

	nb := northbound.New(sch, northbound.WithHistory(pool))
	addr := serveNorthbound(b, nb)
	c := gnmiClient(b, addr)
	req := &gnmi.SubscribeRequest{
		Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_STREAM,
			UpdatesOnly: true, Prefix: &gnmi.Path{Target: "sw1"}, Encoding: gnmi.Encoding_PROTO,
			Subscription: []*gnmi.Subscription{{Path: store.MustPath(wanQ0 + "/state")}}}},
		Extension: []*gnmi_ext.Extension{{Ext: &gnmi_ext.Extension_History{History: &gnmi_ext.History{
			Request: &gnmi_ext.History_Range{Range: &gnmi_ext.TimeRange{Start: start.UnixNano(), End: end.UnixNano()}}}}}},
	}
	var updates int
	var elapsed time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		sctx, cancel := context.WithCancel(ctx)
		sc, err := c.Subscribe(sctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := sc.Send(req); err != nil {
			b.Fatal(err)
		}
		got := 0
		for {
			r, err := sc.Recv()
			if err != nil {
				b.Fatal(err)
			}
			if r.GetSyncResponse() {
				break
			}
			got += len(r.GetUpdate().GetUpdate())
		}
		cancel()
		elapsed += time.Since(t0)
		if got != int(n) {
			b.Fatalf("history range delivered %d updates, %d stored", got, n)
		}
		updates += got
	}
	b.StopTimer()
	b.ReportMetric(float64(updates)/elapsed.Seconds(), "updates/s")
	b.ReportMetric(float64(len(paths)), "leaves")
}

func serveNorthbound(b testing.TB, nb *northbound.Server) string {
	return serveTarget(b, service.WithCapabilities(nb), service.WithGet(nb), service.WithSet(nb), service.WithSubscribe(nb))
}

// serveTarget serves a gNMI target on loopback until the benchmark ends.
func serveTarget(b testing.TB, opts ...service.Option) string {
	srv, err := service.New(append([]service.Option{service.WithInsecure()}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(lis) //nolint:errcheck // ends with Stop
	b.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func gnmiClient(b testing.TB, addr string) gnmi.GNMIClient {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return gnmi.NewGNMIClient(conn)
}

// fanSub is one subscriber of BenchmarkFanOut (a benchtest.Subscriber).
type fanSub struct {
	sc      gnmi.GNMI_SubscribeClient
	updates int
}

// Updates is the leaf updates received.
func (s *fanSub) Updates() int { return s.updates }

// Until reads until the done leaf carries round.
func (s *fanSub) Until(round uint64) error {
	for {
		r, err := s.sc.Recv()
		if err != nil {
			return err
		}
		n := r.GetUpdate()
		s.updates += len(n.GetUpdate())
		if el := n.GetPrefix().GetElem(); len(el) > 2 && el[2].GetKey()["name"] == "done" {
			for _, u := range n.GetUpdate() {
				if u.GetVal().GetUintVal() == round {
					return nil
				}
			}
		}
	}
}

// BenchmarkFanOut: b.N rounds; in each, 1000 counters of 100 queues change
// (then a "done" leaf) and 8 ON_CHANGE subscribers over loopback must each
// receive all of them, (1) from a switch's own store and subscribe.Server,
// published with store.Apply as the switch's publisher does, and (2) from
// the northbound, fed with the notifications the switch would send the
// collector (Observe), subscribed with target "*". Rounds alternate between
// the two so that load from other processes falls on both alike;
// x-switch is the northbound's updates/s over the switch's (≥ 0.5 is the
// goal: within 2×).
func BenchmarkFanOut(b *testing.B) {
	const subs = 8
	sch, err := schema.New()
	if err != nil {
		b.Fatal(err)
	}
	counters := []string{"packets", "bytes", "ecn-marked-packets", "dropped-packets", "cnp-rocev2-sent",
		"cnp-icmpv6-sent", "qd-triggers", "emr-triggers", "qgr-triggers", "escalations"}
	containers := make([]*gnmi.Path, 0, 101)
	for i := range 100 {
		containers = append(containers, store.MustPath(fmt.Sprintf("/lhcnp/interfaces/interface[name=eth%d]/queues/queue[id=%d]/state/counters", i/8, i%8)))
	}
	// The last container of a round: a subscriber that has it has the round.
	containers = append(containers, store.MustPath("/lhcnp/interfaces/interface[name=done]/queues/queue[id=7]/state/counters"))
	leafPath := func(c *gnmi.Path, leaf string) *gnmi.Path {
		return &gnmi.Path{Elem: append(append([]*gnmi.PathElem(nil), c.GetElem()...), &gnmi.PathElem{Name: leaf})}
	}
	subPath := store.MustPath("/lhcnp/interfaces")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	subscribeAll := func(addr, tgt string) []benchtest.Subscriber {
		var out []benchtest.Subscriber
		for range subs {
			sc, err := gnmiClient(b, addr).Subscribe(ctx)
			if err != nil {
				b.Fatal(err)
			}
			sc.Send(&gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
				Prefix: &gnmi.Path{Target: tgt}, Encoding: gnmi.Encoding_PROTO,
				Subscription: []*gnmi.Subscription{{Path: subPath, Mode: gnmi.SubscriptionMode_ON_CHANGE}}}}})
			for {
				r, err := sc.Recv()
				if err != nil {
					b.Fatal(err)
				}
				if r.GetSyncResponse() {
					break
				}
			}
			out = append(out, &fanSub{sc: sc})
		}
		return out
	}

	// (1) The switch: its store and Subscribe, as server/fabric builds them.
	st := store.New()
	var batch store.Batch
	swPublish := func(round uint64) {
		v := &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: round}}
		for _, c := range containers {
			batch.Reset()
			for _, l := range counters {
				batch.Update(leafPath(c, l), v, store.Counter)
			}
			st.Apply(&batch, 0)
		}
	}
	swPublish(0)
	swAddr := serveTarget(b, service.WithSubscribe(subscribe.New(st,
		subscribe.WithOrigins(schema.Origin, schema.OpenConfigOrigin), subscribe.WithPathRewrite(schema.StripModules),
		subscribe.WithPathValidator(func(p *gnmi.Path) error { _, err := sch.Resolve(p); return err }))))

	// (2) The northbound, fed what that switch would send the collector:
	// one notification per container, leaf names under its prefix.
	nb := northbound.New(sch)
	nbPublish := func(round uint64) {
		v := &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: round}}
		ts := time.Now().UnixNano()
		for _, c := range containers {
			n := &gnmi.Notification{Timestamp: ts, Prefix: c}
			for _, l := range counters {
				n.Update = append(n.Update, &gnmi.Update{Path: &gnmi.Path{Elem: []*gnmi.PathElem{{Name: l}}}, Val: v})
			}
			nb.Observe("sw1", &gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: n}})
		}
	}
	nbPublish(0)
	nbAddr := serveNorthbound(b, nb)

	sides := []*benchtest.Side{
		{Publish: swPublish, Subs: subscribeAll(swAddr, "sw1")},
		{Publish: nbPublish, Subs: subscribeAll(nbAddr, "*")},
	}
	benchtest.Interleave(b, sides...)
	rate := make([]float64, len(sides))
	for i, sd := range sides {
		rate[i] = sd.Rate()
		name := []string{"switch", "northbound"}[i]
		b.ReportMetric(rate[i], name+"-updates/s")
		b.ReportMetric(float64(sd.Updates())/float64(b.N*len(containers)*len(counters)*subs)*100, name+"-%delivered")
	}
	b.ReportMetric(rate[1]/rate[0], "x-switch")
}
