package subscribe

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/openconfig/gnmi/proto/gnmi"
)

// groups returns, per group pattern and target, its member count and how
// many of them are in the log.
func (h *harness) groups() map[string][2]int {
	h.srv.hub.mu.Lock()
	defer h.srv.hub.mu.Unlock()
	out := map[string][2]int{}
	for k, g := range h.srv.hub.groups {
		g.mu.Lock()
		inLog := 0
		for _, m := range g.members {
			if m.inLog {
				inLog++
			}
		}
		out[k.pattern+"@"+k.target] = [2]int{len(g.members), inLog}
		g.mu.Unlock()
	}
	return out
}

// waitGroups polls until the groups are as wanted (streams join the log
// once their initial data is sent, and leave when their RPC ends).
func (h *harness) waitGroups(t *testing.T, want map[string][2]int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := h.groups()
		if cmp.Equal(want, got) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("groups (-want, +got):\n%s", cmp.Diff(want, got))
		}
		runtime.Gosched()
	}
}

// TestSharedFanOut: identical ON_CHANGE subscriptions share one group and
// each gets every change once; another target is another group; groups go
// when their streams end.
func TestSharedFanOut(t *testing.T) {
	h := newHarness(t)
	list := func(target string) *gnmi.SubscriptionList {
		return &gnmi.SubscriptionList{Prefix: &gnmi.Path{Target: target}, Encoding: gnmi.Encoding_PROTO,
			Subscription: []*gnmi.Subscription{subOf("/interfaces/interface[name=eth0]", gnmi.SubscriptionMode_ON_CHANGE, 0, 0)}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var scs []gnmi.GNMI_SubscribeClient
	for _, target := range []string{"sw1", "sw1", "sw2"} {
		sc, err := h.client.Subscribe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := sc.Send(&gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: list(target)}}); err != nil {
			t.Fatal(err)
		}
		untilSync(t, sc)
		scs = append(scs, sc)
	}
	pattern := "/interfaces/interface[name=eth0]"
	h.waitGroups(t, map[string][2]int{pattern + "@sw1": {2, 2}, pattern + "@sw2": {1, 1}})
	for i, v := range []uint64{5, 6} {
		h.publish(t, int64(200+100*i), func(b *store.Batch) {
			b.Update(store.MustPath(in0), u(v), store.Counter).Update(store.MustPath(in1), u(v), store.Counter)
		})
	}
	h.publish(t, 400, func(b *store.Batch) { b.Delete(store.MustPath(oper0)) })
	want := []string{"update @200 " + in0 + "=5", "update @300 " + in0 + "=6", "delete @400 " + oper0}
	for i, sc := range scs {
		var got []string
		for len(got) < len(want) {
			r, err := sc.Recv()
			if err != nil {
				t.Fatalf("subscriber %d: %v", i, err)
			}
			if p, target := r.GetUpdate().GetPrefix(), []string{"sw1", "sw1", "sw2"}[i]; p.GetTarget() != target {
				t.Errorf("subscriber %d: prefix %v, want target %s", i, p, target)
			}
			got = append(got, lines(r)...)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("subscriber %d (-want, +got):\n%s", i, diff)
		}
	}
	cancel()
	h.waitGroups(t, map[string][2]int{})
}

// TestSharedRejoin: a member ejected from the log for lagging (the stalled
// subscriber of TestStalledSubscriber) is back in the log once it has caught
// up, and from then on gets each change once.
func TestSharedRejoin(t *testing.T) {
	h := newHarness(t)
	sl := &gnmi.SubscriptionList{Encoding: gnmi.Encoding_PROTO,
		Subscription: []*gnmi.Subscription{subOf("/big", gnmi.SubscriptionMode_ON_CHANGE, 0, 0)}}
	sc := h.subscribe(t, sl)
	untilSync(t, sc)
	h.waitGroups(t, map[string][2]int{"/big@": {1, 1}})
	// Rounds while nobody reads, until the sender's backlog passes the
	// bound: ejected, later rounds coalesce in its queue.
	const leaves, rounds = minBacklog / 4, 12
	var b store.Batch
	for r := 1; r <= rounds; r++ {
		b.Reset()
		for i := range leaves {
			b.Update(store.MustPath(fmt.Sprintf("/big/leaf[id=%d]/value", i)), u(uint64(r)), store.Counter)
		}
		if _, err := h.st.Apply(&b, int64(1000+r)); err != nil {
			t.Fatal(err)
		}
	}
	last := map[string]uint64{}
	for len(last) < leaves || !allEqual(last, rounds) {
		r, err := sc.Recv()
		if err != nil {
			t.Fatal(err)
		}
		for _, up := range r.GetUpdate().GetUpdate() {
			k, v := joined(r.GetUpdate().GetPrefix(), up.GetPath()), up.GetVal().GetUintVal()
			if v < last[k] {
				t.Fatalf("%s: %d after %d: a value went back", k, v, last[k])
			}
			last[k] = v
		}
	}
	if c := h.srv.Stats().Coalesced; c == 0 {
		t.Error("nothing coalesced: the lagging member was not ejected from the log")
	}
	h.waitGroups(t, map[string][2]int{"/big@": {1, 1}})
	h.publish(t, 2000, func(b *store.Batch) { b.Update(store.MustPath("/big/leaf[id=7]/value"), u(99), store.Counter) })
	if diff := cmp.Diff([]string{"update @2000 /big/leaf[id=7]/value=99"}, next(t, sc, 1)); diff != "" {
		t.Errorf("after rejoining (-want, +got):\n%s", diff)
	}
}
