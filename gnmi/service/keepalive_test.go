package service_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/lhcnp/lhcnp/gnmi/service"
)

// keepaliveOptions are the keepalive settings of a gRPC server.
type keepaliveOptions struct {
	Time, Timeout, MaxConnectionIdle time.Duration
	MinTime                          time.Duration
	PermitWithoutStream              bool
}

// serverKeepalive reads g's keepalive parameters and enforcement policy.
// gRPC has no accessor for a server's options, and what they do takes
// minutes to see, so it reads them by reflection (fields, not methods:
// reading an unexported field's value is allowed).
func serverKeepalive(t *testing.T, g *grpc.Server) keepaliveOptions {
	t.Helper()
	opts := reflect.ValueOf(g).Elem().FieldByName("opts")
	kp, kep := opts.FieldByName("keepaliveParams"), opts.FieldByName("keepalivePolicy")
	if !kp.IsValid() || kp.Type() != reflect.TypeFor[keepalive.ServerParameters]() ||
		!kep.IsValid() || kep.Type() != reflect.TypeFor[keepalive.EnforcementPolicy]() {
		t.Fatal("grpc.Server has no opts.keepaliveParams and opts.keepalivePolicy: grpc's internals changed, adapt serverKeepalive")
	}
	d := func(v reflect.Value, name string) time.Duration { return time.Duration(v.FieldByName(name).Int()) }
	return keepaliveOptions{Time: d(kp, "Time"), Timeout: d(kp, "Timeout"), MaxConnectionIdle: d(kp, "MaxConnectionIdle"),
		MinTime: d(kep, "MinTime"), PermitWithoutStream: kep.FieldByName("PermitWithoutStream").Bool()}
}

// TestKeepaliveDefaults: the server pings a connection it has read nothing
// from for a minute and closes it if the ping is not answered in 20 s,
// closes a connection without RPCs after 15 min, and lets a client ping
// every 5 s, with or without an RPC; WithGRPCOptions still overrides them.
// It failed before: gRPC's defaults (all zero: pings after 2 h, idle
// connections never closed, a client's pings at most every 5 min and not
// without an RPC).
func TestKeepaliveDefaults(t *testing.T) {
	tests := []struct {
		desc string
		opts []grpc.ServerOption
		want keepaliveOptions
	}{
		{"defaults", nil, keepaliveOptions{Time: time.Minute, Timeout: 20 * time.Second, MaxConnectionIdle: 15 * time.Minute,
			MinTime: 5 * time.Second, PermitWithoutStream: true}},
		{"WithGRPCOptions overrides", []grpc.ServerOption{
			grpc.KeepaliveParams(keepalive.ServerParameters{Time: 2 * time.Hour, Timeout: time.Second}),
			grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: time.Minute}),
		}, keepaliveOptions{Time: 2 * time.Hour, Timeout: time.Second, MinTime: time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			srv, err := service.New(service.WithInsecure(), service.WithGRPCOptions(tt.opts...))
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop()
			if diff := cmp.Diff(tt.want, serverKeepalive(t, srv.GRPC())); diff != "" {
				t.Errorf("keepalive (-want, +got):\n%s", diff)
			}
		})
	}
}
