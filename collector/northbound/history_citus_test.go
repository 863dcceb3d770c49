package northbound_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
	sch, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	paths := queueLeaves(t, sch)
	start := time.Now().Add(-time.Minute).Truncate(time.Second)
	const step = 100 * time.Millisecond
	one, _ := pgtest.New(t)
	citus, _ := pgtest.NewCitus(t)
	clients := map[string]gnmi.GNMIClient{}
	for name, pool := range map[string]*pgxpool.Pool{"one node": one, "Citus": citus} {
		storeQueue(t, pool, sch, paths, start, 20, step)
		clients[name] = gnmiClient(t, serveNorthbound(t, northbound.New(sch, northbound.WithHistory(pool, 0))))
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

// historyOf sends req and returns the notifications up to sync_response,
// each with its updates in path order.
func historyOf(t *testing.T, c gnmi.GNMIClient, req *gnmi.SubscribeRequest) []*gnmi.Notification {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sc, err := c.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Send(req); err != nil {
		t.Fatal(err)
	}
	var out []*gnmi.Notification
	for {
		r, err := sc.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if r.GetSyncResponse() {
			return out
		}
		// The updates of a notification in the order of their paths: they
		// are a set (gNMI), and the range query orders the rows only by
		// time, so that their order within an instant is the database's
		// (on Citus, that of the shards' answers).
		n := r.GetUpdate()
		sort.Slice(n.Update, func(i, j int) bool {
			return store.PathString(n.Update[i].GetPath()) < store.PathString(n.Update[j].GetPath())
		})
		out = append(out, n)
	}
}
