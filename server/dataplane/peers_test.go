package dataplane_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/gnmi/store"
)

const collab = "/lhcnp/collaborative-suppression"

func (r *rig) setJSON(t *testing.T, path, val string) error {
	t.Helper()
	return r.setIETF(path, val, false)
}

// setIETF sends one JSON_IETF value as an update, or as a replace.
func (r *rig) setIETF(path, val string, replace bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u := []*gnmi.Update{{Path: store.MustPath(path),
		Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(val)}}}}
	req := &gnmi.SetRequest{Update: u}
	if replace {
		req = &gnmi.SetRequest{Replace: u}
	}
	_, err := r.c.Set(ctx, req)
	return err
}

func (r *rig) getJSON(t *testing.T, path string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := r.c.Get(ctx, &gnmi.GetRequest{Path: []*gnmi.Path{store.MustPath(path)}, Encoding: gnmi.Encoding_JSON_IETF})
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	u := resp.GetNotification()[0].GetUpdate()
	if len(u) != 1 {
		t.Fatalf("get %s: %d updates", path, len(u))
	}
	return string(u[0].GetVal().GetJsonIetfVal())
}

// TestSetPeersReachesNode: the §5.7 peer list and upstream-first set
// through gNMI reach the running node (sorted, masked, without
// duplicates) and are mirrored in state; turning upstream-first off
// reaches it too.
func TestSetPeersReachesNode(t *testing.T) {
	r := newRig(t)
	r.run(t, engine.Millisecond)
	if got := r.sw.Node.Config().Collaborative; len(got.Peers) != 0 || !got.UpstreamFirst {
		t.Fatalf("before Set: peers %v, upstream-first %v; want none and true (the defaults)", got.Peers, got.UpstreamFirst)
	}
	if err := r.setJSON(t, collab+"/config", `{"peers": ["10.0.0.3/32", "10.0.0.2/32", "10.0.0.2/32", "2001:db8::7/128"], "upstream-first": true}`); err != nil {
		t.Fatalf("set peers: %v", err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.2/32"), netip.MustParsePrefix("10.0.0.3/32"), netip.MustParsePrefix("2001:db8::7/128")}
	got := r.sw.Node.Config().Collaborative
	if diff := cmp.Diff(want, got.Peers, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("node peers (-want +got):\n%s", diff)
	}
	if !got.UpstreamFirst {
		t.Errorf("node upstream-first = false, want true")
	}
	if s := r.getJSON(t, collab+"/state/peers"); !strings.Contains(s, `"10.0.0.2/32"`) || !strings.Contains(s, `"2001:db8::7/128"`) {
		t.Errorf("state peers = %s, want the configured prefixes", s)
	}

	if err := r.setJSON(t, collab+"/config/upstream-first", `false`); err != nil {
		t.Fatalf("set upstream-first: %v", err)
	}
	if r.sw.Node.Config().Collaborative.UpstreamFirst {
		t.Errorf("after Set false: node upstream-first still true")
	}
	if s := r.getJSON(t, collab+"/state/upstream-first"); s != "false" {
		t.Errorf("state upstream-first = %s, want false", s)
	}
}

// TestSetBadPeerRefused: a peer that is not a prefix is INVALID_ARGUMENT
// naming the leaf, and the node keeps its peers.
func TestSetBadPeerRefused(t *testing.T) {
	r := newRig(t)
	r.run(t, engine.Millisecond)
	err := r.setJSON(t, collab+"/config", `{"peers": ["10.0.0.300/32"]}`)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "peers") {
		t.Fatalf("set bad peer: %v, want InvalidArgument naming peers", err)
	}
	if p := r.sw.Node.Config().Collaborative.Peers; len(p) != 0 {
		t.Errorf("node peers = %v after a refused Set, want none", p)
	}
}
