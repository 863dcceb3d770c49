package service_test

// YANG defaults in use, in Get and Subscribe (gNMI 3.3.4, 3.5.2.3,
// 3.5.2.4): the store holds every config leaf in use, a leaf nothing set
// at its default.

import (
	"testing"

	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/openconfig/gnmi/proto/gnmi"
)

// subscribeList sends sl and returns the stream.
func subscribeList(t *testing.T, c gnmi.GNMIClient, sl *gnmi.SubscriptionList) gnmi.GNMI_SubscribeClient {
	t.Helper()
	sc, err := c.Subscribe(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Send(&gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: sl}}); err != nil {
		t.Fatal(err)
	}
	return sc
}

// untilSyncLines reads up to the next sync_response and returns the updates
// and deletes before it as "path = value" and "delete path" lines.
func untilSyncLines(t *testing.T, sc gnmi.GNMI_SubscribeClient) []string {
	t.Helper()
	var out []string
	for {
		r, err := sc.Recv()
		if err != nil {
			t.Fatalf("Recv: %v (after %v)", err, out)
		}
		if r.GetSyncResponse() {
			return out
		}
		out = append(out, notifLines(r.GetUpdate())...)
	}
}

func notifLines(n *gnmi.Notification) []string {
	var out []string
	for _, u := range n.GetUpdate() {
		out = append(out, schema.PathString(schema.Join(n.GetPrefix(), u.GetPath()))+" = "+valString(u.GetVal()))
	}
	for _, d := range n.GetDelete() {
		out = append(out, "delete "+schema.PathString(schema.Join(n.GetPrefix(), d)))
	}
	return out
}

// TestDeletedLeafStreamsItsDefault: gNMI 3.5.2.3, "To signal that a leaf
// that has transitioned to using its default value, the target MUST send
// an update with the new value being set to the default value, and MUST
// NOT only send a delete for the path or a parent path." The old target
// published only the leaves set, so a Set deleting config/alpha (YANG
// default "1.0") sent ON_CHANGE subscribers a delete and nothing else: a
// client's cache then held no alpha while the node ran 1.0. This test
// failed on it; the store now holds the config in use
// (schema.ConfigInUse), defaults included.
func TestDeletedLeafStreamsItsDefault(t *testing.T) {
	e := newEnv(t)
	c := subscribeClient(t, e)
	alpha := q3 + "/config/alpha"
	if _, err := c.Set(ctx(t), &gnmi.SetRequest{Update: []*gnmi.Update{upd(alpha, dbl(0.5))}}); err != nil {
		t.Fatal(err)
	}
	sc := subscribeList(t, c, &gnmi.SubscriptionList{Encoding: gnmi.Encoding_PROTO,
		Subscription: []*gnmi.Subscription{{Path: mustPath(alpha), Mode: gnmi.SubscriptionMode_ON_CHANGE}}})
	if got := untilSyncLines(t, sc); len(got) != 1 || got[0] != alpha+" = double 0.5" {
		t.Fatalf("initial data %q, want alpha 0.5", got)
	}
	if _, err := c.Set(ctx(t), &gnmi.SetRequest{Delete: []*gnmi.Path{mustPath(alpha)}}); err != nil {
		t.Fatal(err)
	}
	r, err := sc.Recv()
	if err != nil {
		t.Fatal(err)
	}
	got := notifLines(r.GetUpdate())
	if len(got) != 1 || got[0] != alpha+" = double 1" {
		t.Errorf("after the delete of %s the subscriber got %q, want the default: [%q]", alpha, got, alpha+" = double 1")
	}
}

// TestGetDefaultInUse: gNMI 3.3.4 (GetResponse behaviour table),
// "Requested paths exist or a YANG default value is in use: Value(s) are
// returned", and 3.5.2.4 for ONCE/POLL/STREAM. The old target answered a
// Get of a config leaf left at its YANG default (ecn-max-probability,
// default "0.2") NOT_FOUND, "no config data", and a Subscribe ONCE of it
// nothing, while state/ecn-max-probability had the value. This test
// failed on it.
func TestGetDefaultInUse(t *testing.T) {
	e := newEnv(t)
	c := subscribeClient(t, e)
	leaf := q3 + "/config/ecn-max-probability"
	for _, dt := range []gnmi.GetRequest_DataType{gnmi.GetRequest_CONFIG, gnmi.GetRequest_ALL} {
		resp, err := c.Get(ctx(t), &gnmi.GetRequest{Type: dt, Encoding: gnmi.Encoding_PROTO, Path: []*gnmi.Path{mustPath(leaf)}})
		if err != nil {
			t.Errorf("Get %v %s: %v, want its YANG default 0.2", dt, leaf, err)
			continue
		}
		if got := render(resp.GetNotification()[0]); len(got) != 1 || got[0] != leaf+" = double 0.2" {
			t.Errorf("Get %v %s = %q, want the default 0.2", dt, leaf, got)
		}
	}
	sc := subscribeList(t, c, &gnmi.SubscriptionList{Mode: gnmi.SubscriptionList_ONCE, Encoding: gnmi.Encoding_PROTO,
		Subscription: []*gnmi.Subscription{{Path: mustPath(leaf)}}})
	if got := untilSyncLines(t, sc); len(got) != 1 || got[0] != leaf+" = double 0.2" {
		t.Errorf("Subscribe ONCE %s = %q, want the default 0.2", leaf, got)
	}
}
