package collector_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"

	"github.com/lhcnp/lhcnp/collector"
	"github.com/lhcnp/lhcnp/collector/internal/switchtest"
	"github.com/lhcnp/lhcnp/collector/northbound"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/store"
)

// replayTarget is a gNMI target that answers Subscribe with notifications
// prepared in advance (grpc.PreparedMsg): a switch whose own cost is next
// to nothing, so that a benchmark measures the collector and PostgreSQL,
// not the switch sharing the machine.
type replayTarget struct {
	gnmi.UnimplementedGNMIServer
	first []*gnmi.SubscribeResponse
	rest  []*gnmi.SubscribeResponse
	ready chan struct{} // closed when rest is prepared
	start chan struct{} // closed by the benchmark: send rest
	sent  chan struct{}
}

func (r *replayTarget) Subscribe(st gnmi.GNMI_SubscribeServer) error {
	if _, err := st.Recv(); err != nil {
		return err
	}
	for _, m := range r.first {
		if err := st.Send(m); err != nil {
			return err
		}
	}
	if err := st.Send(&gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_SyncResponse{SyncResponse: true}}); err != nil {
		return err
	}
	msgs := make([]*grpc.PreparedMsg, len(r.rest))
	for i, m := range r.rest {
		msgs[i] = &grpc.PreparedMsg{}
		if err := msgs[i].Encode(st, m); err != nil {
			return err
		}
	}
	// Only the encoded bytes are kept: a switch is another machine, its
	// messages are not heap the collector's garbage collector must scan.
	r.rest = nil
	close(r.ready)
	<-r.start
	for _, m := range msgs {
		if err := st.SendMsg(m); err != nil {
			return err
		}
	}
	close(r.sent)
	<-st.Context().Done()
	return nil
}

// newReplayTarget serves rounds+1 rounds of the 256 leaves of 32 queues,
// timestamps 1 ms apart, shaped as a switch sends them: one notification
// per container, its path as the prefix, the leaf names as the paths.
func newReplayTarget(b *testing.B, rounds int) (*replayTarget, string) {
	type group struct {
		prefix *gnmi.Path
		leaves []*gnmi.Path
	}
	var groups []group
	for i := range 4 {
		for q := range 8 {
			state := group{prefix: store.MustPath(switchtest.Queue(fmt.Sprintf("eth%d", i), q) + "/state")}
			counters := group{prefix: store.MustPath(switchtest.Queue(fmt.Sprintf("eth%d", i), q) + "/state/counters")}
			for _, l := range benchLeaves {
				if name, ok := strings.CutPrefix(l, "counters/"); ok {
					counters.leaves = append(counters.leaves, store.MustPath("/"+name))
				} else {
					state.leaves = append(state.leaves, store.MustPath("/"+l))
				}
			}
			groups = append(groups, state, counters)
		}
	}
	ts := time.Now().UnixNano()
	round := func(r int) []*gnmi.SubscribeResponse {
		var out []*gnmi.SubscribeResponse
		for gi, g := range groups {
			n := &gnmi.Notification{Timestamp: ts + int64(r)*int64(time.Millisecond), Prefix: g.prefix}
			for i, p := range g.leaves {
				n.Update = append(n.Update, &gnmi.Update{Path: p, Val: switchtest.Uint(uint64(r*1000 + gi*10 + i))})
			}
			out = append(out, &gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: n}})
		}
		return out
	}
	r := &replayTarget{first: round(0), ready: make(chan struct{}), start: make(chan struct{}), sent: make(chan struct{})}
	for i := 1; i <= rounds; i++ {
		r.rest = append(r.rest, round(i)...)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := grpc.NewServer()
	gnmi.RegisterGNMIServer(srv, r)
	go srv.Serve(lis)
	b.Cleanup(srv.Stop)
	return r, lis.Addr().String()
}

// BenchmarkCollector: two replay targets stream 400 notifications of 256
// updates each; the collector receives them over gRPC, converts and stores
// them. It reports committed rows/s (first notification sent to last row
// committed), the raw pgx CopyFrom of the same rows into a fresh database
// in batches of the same size, their ratio, and the p99 lag from the
// notification's timestamp to its batch's transaction... measured on the
// rows' own timestamps shifted to the send start (the replayed timestamps
// are synthetic).
func BenchmarkCollector(b *testing.B) { benchCollector(b) }

// BenchmarkCollectorNorthbound is BenchmarkCollector with the northbound's
// store fed from every response (collector.WithObserver, as `lhcnp
// collector` does with northbound.listen set): the receive side's cost of
// serving the fleet northbound.
func BenchmarkCollectorNorthbound(b *testing.B) {
	sch, err := schema.New()
	if err != nil {
		b.Fatal(err)
	}
	nb := northbound.New(sch)
	benchCollector(b, collector.WithObserver(nb.Observe), collector.WithTargetGone(nb.RemoveTarget))
}

func benchCollector(b *testing.B, opts ...collector.Option) {
	const targets, rounds, leaves = 2, 400, 256
	for range b.N {
		pool, dsn := newDB(b)
		cfg := benchConfig(b, "bench", dsn)
		var rts []*replayTarget
		for i := range targets {
			rt, addr := newReplayTarget(b, rounds)
			rts = append(rts, rt)
			cfg.Targets = append(cfg.Targets, onChange(fmt.Sprintf("replay%d", i), addr))
		}
		c := start(b, cfg, opts...)
		for _, rt := range rts {
			<-rt.ready
		}
		waitFor(b, 30*time.Second, "the initial notifications stored", func() (bool, string) {
			return count(b, pool, `SELECT count(*) FROM samples`) == targets*leaves, ""
		})
		want := int64(targets * leaves * (rounds + 1))
		b.ResetTimer()
		begin := time.Now()
		for _, rt := range rts {
			close(rt.start)
		}
		waitFor(b, 300*time.Second, "every row committed", func() (bool, string) {
			n := count(b, pool, `SELECT count(*) FROM samples`)
			return n >= want, fmt.Sprintf("%d of %d", n, want)
		})
		elapsed := time.Since(begin)
		b.StopTimer()
		stored := count(b, pool, `SELECT count(*) FROM samples`)
		if stored != want {
			b.Errorf("%d rows stored, want %d", stored, want)
		}
		ours := float64(want-targets*leaves) / elapsed.Seconds()
		// Lag: commit time minus the moment the notification could have
		// been sent at the earliest (begin + its offset in the replay).
		var p99 float64
		if err := pool.QueryRow(context.Background(), `
			WITH first AS (SELECT min(ts) AS t0 FROM samples)
			SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM l.committed_at - $1::timestamptz))
			FROM samples s JOIN ingest_ledger l USING (batch_id) WHERE s.flags & 1 = 0`, begin).Scan(&p99); err != nil {
			b.Fatal(err)
		}
		c.stop(b)
		rawRate := rawCopy(b, pool, cfg.Writer.BatchRows)
		b.ReportMetric(ours, "rows/s")
		b.ReportMetric(rawRate, "raw-copy-rows/s")
		b.ReportMetric(ours/rawRate, "ratio")
		b.ReportMetric(p99*1000, "commit-p99-ms")
	}
}

// rawCopy copies every sample of pool's database into the samples table of
// a fresh database with pgx CopyFrom, batchRows rows per call, and returns
// the rows per second.
func rawCopy(b *testing.B, pool interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, batchRows int) float64 {
	ctx := context.Background()
	rs, err := pool.Query(ctx, `SELECT ts, series_id, v_int, v_float, v_num, v_bool, v_text, flags, batch_id FROM samples`)
	if err != nil {
		b.Fatal(err)
	}
	all, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
	if err != nil {
		b.Fatal(err)
	}
	raw, _ := newDB(b)
	start := time.Now()
	for i := 0; i < len(all); i += batchRows {
		chunk := all[i:min(i+batchRows, len(all))]
		if _, err := raw.CopyFrom(ctx, pgx.Identifier{"samples"},
			[]string{"ts", "series_id", "v_int", "v_float", "v_num", "v_bool", "v_text", "flags", "batch_id"},
			pgx.CopyFromRows(chunk)); err != nil {
			b.Fatal(err)
		}
	}
	return float64(len(all)) / time.Since(start).Seconds()
}
