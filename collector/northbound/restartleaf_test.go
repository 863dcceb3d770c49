package northbound_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmi/proto/gnmi_ext"

	"github.com/lhcnp/lhcnp/collector"
	"github.com/lhcnp/lhcnp/collector/config"
	"github.com/lhcnp/lhcnp/collector/internal/switchtest"
	"github.com/lhcnp/lhcnp/collector/northbound"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// TestRestartedSwitchLeafGone: end to end, with a real switch (switchtest),
// the collector, its northbound and PostgreSQL. Switch n1 restarts without
// a receiver and a queue its configuration no longer holds; it sends no
// delete of them. After its new stream's sync_response a northbound Get
// --target n1 no longer returns them, current_config and queue_latest no
// longer hold them, a History snapshot at an instant before the restart
// still has them and one after it has not, while the receiver and the
// queue the switch kept are served throughout. Before 16612d5 the Get,
// current_config and queue_latest kept them for ever.
func TestRestartedSwitchLeafGone(t *testing.T) {
	pool, dsn := pgtest.New(t)
	sw := switchtest.Start(t, "n1")
	const (
		gone = "/lhcnp/global/rocev2-receivers/receiver[prefix=192.168.0.0/16]/config/prefix"
		kept = "/lhcnp/global/rocev2-receivers/receiver[prefix=10.0.0.0/8]/config/prefix"
	)
	goneQ := switchtest.Queue("wan", 1) + "/state/queue-depth"
	keptQ := switchtest.Queue("wan", 0) + "/state/queue-depth"
	// Whole milliseconds: PostgreSQL keeps microseconds.
	t0 := time.Now().Add(-time.Minute).Truncate(time.Millisecond).UnixNano()
	sw.Publish(t0, map[string]*gnmi.TypedValue{kept: switchtest.Str("10.0.0.0/8"), gone: switchtest.Str("192.168.0.0/16"),
		keptQ: switchtest.Uint(5), goneQ: switchtest.Uint(7)})

	nb, client := startNB(t, northbound.WithHistory(pool))
	ctx, cancel := context.WithCancel(context.Background())
	cfg := config.Defaults()
	cfg.ID = "restartleaf"
	cfg.DB.DSN, cfg.DB.Migrate, cfg.DB.TargetsTable = dsn, false, false
	cfg.StateDir = t.TempDir()
	cfg.Writer.BatchRows, cfg.Writer.BatchInterval = 500, 20*time.Millisecond
	cfg.Targets = []config.Target{{Name: sw.Name, Address: sw.Addr, Insecure: true,
		Subscriptions: []config.Subscription{{Paths: []string{"/lhcnp"}, Mode: "on_change"}}}}
	c, err := collector.New(ctx, cfg, collector.WithObserver(nb.Observe))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("collector: %v", err)
		}
	})

	// served is what a Get --target n1 of /lhcnp returns, as sorted paths
	// (an error: nothing).
	served := func() []string {
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		defer rcancel()
		resp, err := client.Get(rctx, &gnmi.GetRequest{Prefix: &gnmi.Path{Target: "n1"}, Encoding: gnmi.Encoding_PROTO,
			Path: []*gnmi.Path{store.MustPath("/lhcnp")}})
		if err != nil {
			return nil
		}
		return notificationPaths(resp.GetNotification())
	}
	// snapshot is what a History snapshot of n1's /lhcnp at `at` returns.
	snapshot := func(at int64) []string {
		t.Helper()
		rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
		defer rcancel()
		s, err := client.Subscribe(rctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Send(&gnmi.SubscribeRequest{
			Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_ONCE,
				Prefix: &gnmi.Path{Target: "n1"}, Subscription: []*gnmi.Subscription{{Path: store.MustPath("/lhcnp")}}}},
			Extension: []*gnmi_ext.Extension{{Ext: &gnmi_ext.Extension_History{History: &gnmi_ext.History{
				Request: &gnmi_ext.History_SnapshotTime{SnapshotTime: at}}}}}}); err != nil {
			t.Fatal(err)
		}
		var ns []*gnmi.Notification
		for {
			r, err := s.Recv()
			if err != nil {
				t.Fatalf("history snapshot at %d: %v", at, err)
			}
			if r.GetSyncResponse() {
				return notificationPaths(ns)
			}
			ns = append(ns, r.GetUpdate())
		}
	}
	query := func(sql string) []string {
		t.Helper()
		rs, err := pool.Query(ctx, sql)
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		var out []string
		for rs.Next() {
			var s string
			if err := rs.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	configRows := func() []string {
		return query(`SELECT path FROM current_config WHERE target = 'n1' ORDER BY path`)
	}
	queueRows := func() []string {
		return query(`SELECT interface || '/' || queue || ': ' || queue_depth_bytes FROM queue_latest WHERE target = 'n1' ORDER BY 1`)
	}
	all := []string{keptQ, goneQ, kept, gone}
	slices.Sort(all)
	left := []string{keptQ, kept}
	slices.Sort(left)
	var got, cfgRows, qRows []string // what the last look saw
	seen := func() string { return strings.Join(slices.Concat(got, cfgRows, qRows), " ") }
	look := func() { got, cfgRows, qRows = served(), configRows(), queueRows() }
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last seen: %s", seen())
		}
	})
	waitFor(t, 30*time.Second, "all four leaves served and stored", func() bool {
		look()
		return slices.Equal(got, all) && len(cfgRows) == 2 && slices.Equal(qRows, []string{"wan/0: 5", "wan/1: 7"})
	})

	restart := time.Now().Truncate(time.Millisecond).UnixNano()
	sw.Restart()
	sw.Publish(restart, map[string]*gnmi.TypedValue{kept: switchtest.Str("10.0.0.0/8"), keptQ: switchtest.Uint(5)})
	waitFor(t, 30*time.Second, "the receiver and the queue gone from the northbound, current_config and queue_latest", func() bool {
		look()
		return slices.Equal(got, left) && slices.Equal(cfgRows, []string{kept}) && slices.Equal(qRows, []string{"wan/0: 5"})
	})
	if got := snapshot(restart - int64(time.Millisecond)); !slices.Equal(got, all) {
		t.Errorf("history snapshot before the restart: %v, want %v", got, all)
	}
	if got := snapshot(restart + int64(time.Millisecond)); !slices.Equal(got, left) {
		t.Errorf("history snapshot after the restart: %v, want %v", got, left)
	}
}

// notificationPaths returns the paths (prefix + path) the notifications
// update, sorted.
func notificationPaths(ns []*gnmi.Notification) []string {
	var out []string
	for _, n := range ns {
		for _, u := range n.GetUpdate() {
			p := &gnmi.Path{Elem: append(slices.Clone(n.GetPrefix().GetElem()), u.GetPath().GetElem()...)}
			out = append(out, store.PathString(p))
		}
	}
	slices.Sort(out)
	return out
}
