package northbound_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/lhcnp/lhcnp/gnmi/store"
)

// TestObserveKeepsTimestamps: the northbound serves every leaf with the
// timestamp its switch sent, whatever order the notifications came in (a
// switch's initial sync is not in time order): a leaf's timestamp is never
// raised to another leaf's, and an update older than the one a leaf holds
// does not replace it.
func TestObserveKeepsTimestamps(t *testing.T) {
	nb, c := startNB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := time.Now().UnixNano()
	leaf := func(name string, ts int64, v uint64) *gnmi.SubscribeResponse {
		return &gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: &gnmi.Notification{
			Timestamp: ts, Prefix: store.MustPath(wanQ0 + "/state"),
			Update: []*gnmi.Update{{Path: store.MustPath("/" + name), Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: v}}}},
		}}}
	}
	for _, r := range []*gnmi.SubscribeResponse{
		leaf("effective-kmax", base+300, 5),
		leaf("effective-kmin", base+100, 1), // older than kmax's: kept as sent
		leaf("effective-kmax", base+200, 9), // older than the kmax held: dropped
		leaf("effective-kmin", base+400, 1), // same value, newer: the switch's timestamp
	} {
		nb.Observe("n1", r)
	}
	sc, err := c.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Send(&gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
		Mode: gnmi.SubscriptionList_ONCE, Prefix: &gnmi.Path{Target: "n1"}, Encoding: gnmi.Encoding_PROTO,
		Subscription: []*gnmi.Subscription{{Path: store.MustPath(wanQ0 + "/state")}}}}}); err != nil {
		t.Fatal(err)
	}
	type stamped struct {
		TS int64
		V  uint64
	}
	got := map[string]stamped{}
	for {
		r, err := sc.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if r.GetSyncResponse() {
			break
		}
		n := r.GetUpdate()
		for _, u := range n.GetUpdate() {
			el := u.GetPath().GetElem()
			got[el[len(el)-1].GetName()] = stamped{n.GetTimestamp() - base, u.GetVal().GetUintVal()}
		}
	}
	want := map[string]stamped{"effective-kmax": {300, 5}, "effective-kmin": {400, 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("served leaves, timestamps relative to the first (-want, +got):\n%s", diff)
	}
}
