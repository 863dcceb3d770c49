package dataplane_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/ygot/ygot"

	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/gnmi/clock"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/service/servicetest"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/gnmi/subscribe"
	"github.com/lhcnp/lhcnp/server/dataplane"
)

// TestTimestampIsTheLastChange: a leaf's notification timestamp is the time
// its value last changed, although the publisher writes every leaf at every
// publication: two subscriptions started minutes apart (a simulated clock)
// read an unchanged leaf with the same timestamp, in their initial sync,
// and a changed one with the time of its change.
func TestTimestampIsTheLastChange(t *testing.T) {
	s, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1_800_000_000, 0)
	clk := clock.NewFake(start)
	st := store.New(store.WithClock(clk))
	src := treeSource{trees: make(chan *oc.Root, 1)}
	p := dataplane.NewPublisher(s, st, src, dataplane.WithClock(clk))
	srv, err := service.New(service.WithInsecure(), service.WithSubscribe(subscribe.New(st, subscribe.WithClock(clk))))
	if err != nil {
		t.Fatal(err)
	}
	c := servicetest.Client(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	const q = "/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=0]/state"
	// read subscribes (STREAM, ON_CHANGE, as a collector does) and returns
	// the initial sync's timestamps of the queue's leaves, in seconds after
	// start.
	read := func() map[string]int64 {
		sc, err := c.Subscribe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer sc.CloseSend() //nolint:errcheck // the stream ends with ctx
		if err := sc.Send(&gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
			Mode: gnmi.SubscriptionList_STREAM, Encoding: gnmi.Encoding_PROTO,
			Subscription: []*gnmi.Subscription{{Path: store.MustPath(q), Mode: gnmi.SubscriptionMode_ON_CHANGE}}}}}); err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for {
			r, err := sc.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if r.GetSyncResponse() {
				return got
			}
			n := r.GetUpdate()
			for _, u := range n.GetUpdate() {
				el := append(append([]*gnmi.PathElem(nil), n.GetPrefix().GetElem()...), u.GetPath().GetElem()...)
				got[store.PathString(&gnmi.Path{Elem: el[len(el)-2:]})] = (n.GetTimestamp() - start.UnixNano()) / int64(time.Second)
			}
		}
	}
	publish := func(depth uint64) {
		r := tree()
		r.GetLhcnp().GetInterfaces().GetInterface("wan0").GetQueues().GetQueue(0).GetState().QueueDepth = ygot.Uint64(depth)
		src.trees <- r
		if err := p.PublishNow(ctx); err != nil {
			t.Fatal(err)
		}
	}
	publish(100)
	clk.Advance(time.Second)
	first := read()
	// Minutes of publications, every second; the queue depth changes once.
	for i := range 240 {
		clk.Advance(time.Second)
		depth := uint64(100)
		if i >= 120 {
			depth = 200
		}
		publish(depth)
	}
	second := read()
	want := map[string]int64{"/counters/cnp-pause-sent": 0, "/state/id": 0, "/state/queue-depth": 0}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Errorf("first subscription (-want, +got):\n%s", diff)
	}
	want["/state/queue-depth"] = 122 // changed at the 121st publication after the first
	if diff := cmp.Diff(want, second); diff != "" {
		t.Errorf("second subscription, 4 minutes later (-want, +got):\n%s", diff)
	}
}
