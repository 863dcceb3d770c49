package northbound_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lhcnp/lhcnp/collector/northbound"
	"github.com/lhcnp/lhcnp/gnmi/auth"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/service/servicetest"
	"github.com/lhcnp/lhcnp/gnmi/store"
)

// setSwitch is a switch that answers Set: OK, or refuse when set.
type setSwitch struct{ refuse error }

func (s setSwitch) Set(context.Context, *gnmi.SetRequest) (*gnmi.SetResponse, error) {
	if s.refuse != nil {
		return nil, s.refuse
	}
	return &gnmi.SetResponse{}, nil
}

// syncBuf is a log destination read while the server writes.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuf) Write(p []byte) (int, error) { b.mu.Lock(); defer b.mu.Unlock(); return b.b.Write(p) }
func (b *syncBuf) String() string              { b.mu.Lock(); defer b.mu.Unlock(); return b.b.String() }

// TestNorthboundSetNamesItsUser: every Set the northbound forwards reaches
// the switch with the collector's credentials, so the northbound logs who
// asked for it: the northbound user, the target, the outcome and code, and
// the paths. A Set the switch refuses and one for an unknown target are
// logged too. It failed before: nothing recorded which northbound user
// changed a switch.
func TestNorthboundSetNamesItsUser(t *testing.T) {
	sch, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	var sw [2]string
	for i, h := range []setSwitch{{}, {refuse: status.Error(codes.InvalidArgument, "no")}} {
		srv, err := service.New(service.WithInsecure(), service.WithSet(h))
		if err != nil {
			t.Fatal(err)
		}
		sw[i] = servicetest.Serve(t, srv)
	}
	dial := func(ctx context.Context, name string) (*grpc.ClientConn, context.Context, bool, error) {
		switch name {
		case "n1":
			return servicetest.Dial(t, sw[0]), ctx, true, nil
		case "n2":
			return servicetest.Dial(t, sw[1]), ctx, true, nil
		}
		return nil, nil, false, nil
	}
	var logs syncBuf
	nb := northbound.New(sch, northbound.WithDialer(dial), northbound.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	h, err := auth.HashPassword("ops-secret", 4)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := service.New(service.WithInsecure(), service.WithSet(nb),
		service.WithAuth(auth.New(auth.NewUsers(auth.User{Name: "ops", Role: auth.ReadWrite, Hash: []byte(h)}))))
	if err != nil {
		t.Fatal(err)
	}
	c := servicetest.Client(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, auth.MetadataUsername, "ops", auth.MetadataPassword, "ops-secret")
	set := func(target string) *gnmi.SetRequest {
		return &gnmi.SetRequest{Prefix: &gnmi.Path{Target: target, Elem: []*gnmi.PathElem{{Name: "lhcnp"}}},
			Delete: []*gnmi.Path{store.MustPath("/global/config/fcn-role")},
			Update: []*gnmi.Update{{Path: store.MustPath("/global/config/enabled"), Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_BoolVal{BoolVal: true}}}}}
	}
	if _, err := c.Set(ctx, set("n1")); err != nil {
		t.Fatalf("set on n1: %v", err)
	}
	if _, err := c.Set(ctx, set("n2")); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("set on n2: %v, want the switch's INVALID_ARGUMENT", err)
	}
	if _, err := c.Set(ctx, set("n9")); status.Code(err) != codes.NotFound {
		t.Fatalf("set on n9: %v, want NOT_FOUND", err)
	}
	const paths = `deletes=1 replaces=0 updates=1 paths="[delete /lhcnp/global/config/fcn-role update /lhcnp/global/config/enabled]"`
	for _, want := range []string{
		`msg="northbound: set" user=ops peer=127.0.0.1:`,
		`target=n1 outcome=applied code=OK ` + paths,
		`target=n2 outcome=refused code=InvalidArgument ` + paths,
		`target=n9 outcome=unknown_target code=NotFound ` + paths,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, logs.String())
		}
	}
}
