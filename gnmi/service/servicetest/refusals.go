package servicetest

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lhcnp/lhcnp/gnmi/auth"
)

// CheckRefusals checks, over a plaintext connection to addr, that a target
// whose users include user refuses every RPC that comes without valid
// credentials (none, a wrong password, an unknown user, an empty password
// or user name): UNAUTHENTICATED, with a message that does not say which
// part was wrong, and on a Subscribe stream before any response. It checks
// too that the credentials come before the request: a unary request the
// server could not decode, or one never sent, is refused the same way (and
// at once: it is not read). subscribes are Subscribe requests to try beyond
// ONCE, POLL and STREAM of the whole tree (the collector's History).
func CheckRefusals(t *testing.T, addr, user string, subscribes map[string]*gnmi.SubscribeRequest) {
	t.Helper()
	conn := Dial(t, addr)
	c := gnmi.NewGNMIClient(conn)
	// The bound of a request the server never answers (the old behaviour
	// of a request never sent); a refusal comes well before it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	subs := map[string]*gnmi.SubscribeRequest{}
	for _, mode := range []gnmi.SubscriptionList_Mode{gnmi.SubscriptionList_ONCE, gnmi.SubscriptionList_POLL, gnmi.SubscriptionList_STREAM} {
		subs["Subscribe "+mode.String()] = &gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
			Mode: mode, Subscription: []*gnmi.Subscription{{Path: &gnmi.Path{}}}}}}
	}
	for name, r := range subscribes {
		subs[name] = r
	}
	rpcs := map[string]func(context.Context) error{
		"Capabilities": func(ctx context.Context) error { _, err := c.Capabilities(ctx, &gnmi.CapabilityRequest{}); return err },
		"Get": func(ctx context.Context) error {
			_, err := c.Get(ctx, &gnmi.GetRequest{Path: []*gnmi.Path{{}}})
			return err
		},
		"Set": func(ctx context.Context) error {
			_, err := c.Set(ctx, &gnmi.SetRequest{Delete: []*gnmi.Path{{Elem: []*gnmi.PathElem{{Name: "lhcnp"}}}}})
			return err
		},
	}
	for name, r := range subs {
		rpcs[name] = func(ctx context.Context) error {
			sc, err := c.Subscribe(ctx)
			if err != nil {
				return err
			}
			// A stream the server already ended says why on Recv.
			if err := sc.Send(r); err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			resp, err := sc.Recv()
			if err == nil {
				t.Errorf("%s: a response before the credentials were checked: %v", name, resp)
			}
			return err
		}
	}
	creds := []struct {
		desc     string
		user, pw string
		omit     bool
	}{
		{desc: "no credentials", omit: true},
		{desc: "wrong password", user: user, pw: "not-the-password"},
		{desc: "unknown user", user: "no-such-user", pw: "not-the-password"},
		{desc: "empty password", user: user, pw: ""},
		{desc: "empty user", user: "", pw: "not-the-password"},
	}
	with := func(ctx context.Context, user, pw string, omit bool) context.Context {
		if omit {
			return ctx
		}
		return metadata.AppendToOutgoingContext(ctx, auth.MetadataUsername, user, auth.MetadataPassword, pw)
	}
	for rpc, call := range rpcs {
		msgs := map[string]string{}
		for _, cr := range creds {
			err := call(with(ctx, cr.user, cr.pw, cr.omit))
			if status.Code(err) != codes.Unauthenticated {
				t.Errorf("%s, %s: %v, want UNAUTHENTICATED", rpc, cr.desc, err)
				continue
			}
			msgs[cr.desc] = status.Convert(err).Message()
			if strings.Contains(msgs[cr.desc], user) {
				t.Errorf("%s, %s: the refusal names the user: %q", rpc, cr.desc, msgs[cr.desc])
			}
		}
		if msgs["wrong password"] != msgs["unknown user"] {
			t.Errorf("%s: a wrong password (%q) and an unknown user (%q) are told apart", rpc, msgs["wrong password"], msgs["unknown user"])
		}
	}

	// The request itself: one the server could not decode, and one never
	// sent, as a slow client would hold a stream open. The streams of those
	// never sent are opened together: the old behaviour was to wait for
	// them all.
	waitCtx, cancelWait := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelWait()
	type unsent struct {
		desc string
		cs   grpc.ClientStream
	}
	var held []unsent
	for _, m := range []string{"Capabilities", "Get", "Set"} {
		method := "/gnmi.gNMI/" + m
		for _, cr := range creds[:3] {
			var out []byte
			garbage := []byte{0x0a, 0xff} // field 1, 255 bytes long, that are not there
			err := conn.Invoke(with(ctx, cr.user, cr.pw, cr.omit), method, &garbage, &out, grpc.ForceCodec(rawCodec{}))
			if status.Code(err) != codes.Unauthenticated {
				t.Errorf("%s, %s, an undecodable request: %v, want UNAUTHENTICATED (the request read before the credentials)", m, cr.desc, err)
			}
			cs, err := conn.NewStream(with(waitCtx, cr.user, cr.pw, cr.omit), &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, method, grpc.ForceCodec(rawCodec{}))
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, unsent{m + ", " + cr.desc, cs})
		}
	}
	for _, u := range held {
		var out []byte
		if err := u.cs.RecvMsg(&out); status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s, the request never sent: %v, want UNAUTHENTICATED (the server waits for the request)", u.desc, err)
		}
	}
}

// rawCodec sends and receives messages as they are, bytes.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }

func (rawCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }
