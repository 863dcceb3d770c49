package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lhcnp/lhcnp/gnmi/auth"
	"github.com/lhcnp/lhcnp/gnmi/store"
)

// TestSwitchStreamLimits: lhcnp switch limits each user's Subscribe
// streams (gnmiMaxStreamsPerUser): one more is RESOURCE_EXHAUSTED, and
// another user still subscribes. Before, a user could open streams without
// end.
func TestSwitchStreamLimits(t *testing.T) {
	var lines []string
	for _, name := range []string{"nms", "tuner"} {
		l, err := auth.PasswdLine(name, auth.ReadOnly, name+"-secret")
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	users := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(users, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startSwitch(t, "--users", users)
	c := gnmi.NewGNMIClient(dialGNMI(t, r.addr))
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel() // ends the streams
	open := func(user string) error {
		sc, err := c.Subscribe(metadata.AppendToOutgoingContext(ctx, auth.MetadataUsername, user, auth.MetadataPassword, user+"-secret"))
		if err != nil {
			return err
		}
		if err := sc.Send(&gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
			Mode: gnmi.SubscriptionList_STREAM, Subscription: []*gnmi.Subscription{{Path: store.MustPath("/lhcnp/global/state/enabled"), Mode: gnmi.SubscriptionMode_ON_CHANGE}}}}}); err != nil {
			return err
		}
		for {
			resp, err := sc.Recv()
			if err != nil || resp.GetSyncResponse() {
				return err
			}
		}
	}
	for i := range gnmiMaxStreamsPerUser {
		if err := open("nms"); err != nil {
			t.Fatalf("stream %d of %d: %v", i+1, gnmiMaxStreamsPerUser, err)
		}
	}
	if err := open("nms"); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("stream %d of one user: %v, want RESOURCE_EXHAUSTED", gnmiMaxStreamsPerUser+1, err)
	}
	if err := open("tuner"); err != nil {
		t.Errorf("another user's stream: %v", err)
	}
}
