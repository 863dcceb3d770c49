package dataplane_test

import (
	"context"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/gnmi/clock"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/server/dataplane"
	"github.com/openconfig/ygot/ygot"
)

// treeSource hands out the trees it is given, one per snapshot.
type treeSource struct{ trees chan *oc.Root }

func (s treeSource) Snapshot(context.Context) (*oc.Root, error) { return <-s.trees, nil }

func tree(flows ...uint32) *oc.Root {
	r := &oc.Root{}
	l := r.GetOrCreateLhcnp()
	q := l.GetOrCreateInterfaces().GetOrCreateInterface("wan0").GetOrCreateQueues().GetOrCreateQueue(0)
	q.GetOrCreateState().QueueDepth = ygot.Uint64(100)
	q.GetOrCreateState().GetOrCreateCounters().CnpPauseSent = ygot.Uint64(3)
	q.GetOrCreateState().Id = ygot.Uint8(0)
	q.GetOrCreateConfig().Id = ygot.Uint8(0) // config: not the publisher's
	for _, qp := range flows {
		f := l.GetOrCreateFlowTable().GetOrCreateFlows().GetOrCreateFlow("10.0.0.1", "10.0.0.4", qp, qp+100)
		f.GetOrCreateState().SourceQp = ygot.Uint32(qp)
		f.GetOrCreateState().GetOrCreateCounters().Bytes = ygot.Uint64(10)
	}
	return r
}

func TestPublisher(t *testing.T) {
	s, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	st := store.New(store.WithClock(clk))
	src := treeSource{trees: make(chan *oc.Root, 2)}
	p := dataplane.NewPublisher(s, st, src, dataplane.WithClock(clk))
	ctx := context.Background()

	src.trees <- tree(1, 2)
	if err := p.PublishNow(ctx); err != nil {
		t.Fatal(err)
	}
	q := "/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=0]"
	flow := func(qp string) string { // the flow of source QP qp, destination QP 100+qp
		return "/lhcnp/flow-table/flows/flow[destination-address=10.0.0.4][destination-qp=10" + qp +
			"][source-address=10.0.0.1][source-qp=" + qp + "]/state/counters/bytes"
	}
	for _, tt := range []struct {
		path string
		kind store.Kind
	}{
		{q + "/state/queue-depth", store.Gauge},
		{q + "/state/counters/cnp-pause-sent", store.Counter},
		{q + "/state/id", store.DiscreteState},
		{flow("1"), store.Counter},
		{flow("2"), store.Counter},
	} {
		v, k, ok := st.Get(store.MustPath(tt.path))
		if !ok || k != tt.kind || v.TS != clk.Now().UnixNano() {
			t.Errorf("%s: %v %v %v, want kind %v at the clock's time", tt.path, v, k, ok, tt.kind)
		}
	}
	if _, _, ok := st.Get(store.MustPath(q + "/config/id")); ok {
		t.Error("the publisher wrote a config leaf")
	}

	// Flow 2 ages out: its leaves are deleted; the rest stays.
	clk.Advance(time.Second)
	src.trees <- tree(1)
	if err := p.PublishNow(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := st.Get(store.MustPath(flow("2"))); ok {
		t.Error("vanished flow still in the store")
	}
	if v, _, ok := st.Get(store.MustPath(flow("1"))); !ok || v.TS != clk.Now().Add(-time.Second).UnixNano() {
		t.Errorf("flow 1: %v %v, want unchanged, stamped when first published", v, ok)
	}
}
