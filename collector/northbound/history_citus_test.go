package northbound_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmi/proto/gnmi_ext"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/lhcnp/lhcnp/collector/northbound"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// TestHistoryCitus: the History extension answered from a Citus
// coordinator with two workers sends the notifications that one PostgreSQL
// sends for the same rows (20 instants of every state leaf of a queue), for
// a snapshot and for a range with its starting tree.
func TestHistoryCitus(t *testing.T) {
	t.Parallel()
	sch, paths, start, dbs := queueOnBoth(t)
	const step = 100 * time.Millisecond
	clients := map[string]gnmi.GNMIClient{}
	for name, pool := range dbs {
		storeQueue(t, pool, sch, paths, start, 20, step)
		clients[name] = gnmiClient(t, serveNorthbound(t, northbound.New(sch, northbound.WithHistory(pool))))
	}
	list := func(mode gnmi.SubscriptionList_Mode) *gnmi.SubscriptionList {
		return &gnmi.SubscriptionList{Mode: mode, Prefix: &gnmi.Path{Target: "sw1"}, Encoding: gnmi.Encoding_PROTO,
			Subscription: []*gnmi.Subscription{{Path: store.MustPath(wanQ0 + "/state")}}}
	}
	for _, tc := range []struct {
		desc string
		req  *gnmi.SubscribeRequest
	}{
		{desc: "snapshot", req: &gnmi.SubscribeRequest{
			Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: list(gnmi.SubscriptionList_ONCE)},
			Extension: []*gnmi_ext.Extension{{Ext: &gnmi_ext.Extension_History{History: &gnmi_ext.History{
				Request: &gnmi_ext.History_SnapshotTime{SnapshotTime: start.Add(1050 * time.Millisecond).UnixNano()}}}}}}},
		{desc: "range", req: &gnmi.SubscribeRequest{
			Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: list(gnmi.SubscriptionList_STREAM)},
			Extension: []*gnmi_ext.Extension{{Ext: &gnmi_ext.Extension_History{History: &gnmi_ext.History{
				Request: &gnmi_ext.History_Range{Range: &gnmi_ext.TimeRange{
					Start: start.Add(500 * time.Millisecond).UnixNano(), End: start.Add(1500 * time.Millisecond).UnixNano()}}}}}}}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got := map[string][]*gnmi.Notification{}
			for name, c := range clients {
				got[name] = historyOf(t, c, tc.req)
			}
			if len(got["one node"]) == 0 {
				t.Fatal("no notifications from one node")
			}
			if d := cmp.Diff(got["one node"], got["Citus"], protocmp.Transform()); d != "" {
				t.Errorf("History on Citus (-one node +Citus):\n%s", d)
			}
		})
	}
}

// queueOnBoth is what the History tests on Citus start from: the schema, a
// queue's state leaves, a start a minute ago, and a fresh database of one
// PostgreSQL ("one node") and of the Citus cluster ("Citus").
func queueOnBoth(t *testing.T) (*schema.Schema, []*gnmi.Path, time.Time, map[string]*pgxpool.Pool) {
	t.Helper()
	sch, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	one, _ := pgtest.New(t)
	citus, _ := pgtest.NewCitus(t)
	return sch, queueLeaves(t, sch), time.Now().Add(-time.Minute).Truncate(time.Second),
		map[string]*pgxpool.Pool{"one node": one, "Citus": citus}
}

// historyOf sends req and returns the notifications up to sync_response,
// each with its updates in path order.
func historyOf(t *testing.T, c gnmi.GNMIClient, req *gnmi.SubscribeRequest) []*gnmi.Notification {
	t.Helper()
	out, err := tryHistory(c, req)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tryHistory is historyOf returning the RPC's error.
func tryHistory(c gnmi.GNMIClient, req *gnmi.SubscribeRequest) ([]*gnmi.Notification, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sc, err := c.Subscribe(ctx)
	if err != nil {
		return nil, err
	}
	if err := sc.Send(req); err != nil {
		return nil, err
	}
	var out []*gnmi.Notification
	for {
		r, err := sc.Recv()
		if err != nil {
			return nil, err
		}
		if r.GetSyncResponse() {
			return out, nil
		}
		// As sent: within an instant the server orders the rows by
		// container and path, not in the database's order (on Citus, that
		// of the shards' answers).
		out = append(out, r.GetUpdate())
	}
}

// TestHistoryRangeTies: rows with one timestamp (every leaf of a queue at
// each of 5 instants) stored in a shuffled order come out of a History
// range in a stable order, on one node and on Citus: by instant, then
// container, then path — not in the order the database reads them.
func TestHistoryRangeTies(t *testing.T) {
	sch, paths, start, dbs := queueOnBoth(t)
	const steps, step = 5, 100 * time.Millisecond
	for name, pool := range dbs {
		t.Run(name, func(t *testing.T) {
			ids, leaves := storeSeries(t, pool, sch, paths)
			var rs [][]any
			for s := range steps {
				for k := range paths {
					rs = append(rs, sampleRow(leaves[k], start.Add(time.Duration(s)*step), ids[k], s))
				}
			}
			r := rand.New(rand.NewPCG(7, 7))
			r.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
			if _, err := pool.CopyFrom(context.Background(), pgx.Identifier{"samples"}, sampleColumns, pgx.CopyFromRows(rs)); err != nil {
				t.Fatal(err)
			}
			c := gnmiClient(t, serveNorthbound(t, northbound.New(sch, northbound.WithHistory(pool))))
			got := historyOf(t, c, &gnmi.SubscribeRequest{
				Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_STREAM,
					Prefix: &gnmi.Path{Target: "sw1"}, Encoding: gnmi.Encoding_PROTO,
					Subscription: []*gnmi.Subscription{{Path: store.MustPath(wanQ0 + "/state")}}}},
				Extension: []*gnmi_ext.Extension{{Ext: &gnmi_ext.Extension_History{History: &gnmi_ext.History{
					Request: &gnmi_ext.History_Range{Range: &gnmi_ext.TimeRange{
						Start: start.UnixNano(), End: start.Add(steps * step).UnixNano()}}}}}}})
			var order []string
			updates := 0
			for _, n := range got {
				for _, u := range n.Update {
					order = append(order, fmt.Sprintf("%d %s %s", n.Timestamp, store.PathString(n.Prefix), store.PathString(u.Path)))
					updates++
				}
			}
			if updates != len(rs) {
				t.Errorf("%d updates, want %d", updates, len(rs))
			}
			if !slices.IsSorted(order) {
				t.Errorf("updates not in (instant, container, path) order:\n%s", strings.Join(order, "\n"))
			}
		})
	}
}
