package service_test

import (
	"errors"
	"net"
	"os"
	"reflect"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/lhcnp/lhcnp/gnmi/auth"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/service/servicetest"
)

// TestConnectionBounds: what one connection may hold before it
// authenticates is bounded. The server's HTTP/2 SETTINGS carry
// MAX_CONCURRENT_STREAMS (gRPC's default sends none: no limit), and a
// connection that never starts its TLS handshake is closed after
// DefaultHandshakeTimeout (gRPC's default: two minutes): the server's
// connection timeout is DefaultHandshakeTimeout, and a server's connection
// timeout closes a silent TLS connection. The close is watched with a
// shorter timeout (WithGRPCOptions), as waiting out the default took ten
// seconds of the package's run.
func TestConnectionBounds(t *testing.T) {
	// One authenticator for the servers, as the switches of a process
	// share one: auth.New makes a bcrypt hash (a second under -race).
	a := auth.New(auth.NewUsers())
	t.Run("max concurrent streams", func(t *testing.T) {
		if got := servicetest.MaxConcurrentStreams(t, dialRaw(t, a, service.WithInsecure())); got != service.DefaultMaxConcurrentStreams {
			t.Errorf("SETTINGS_MAX_CONCURRENT_STREAMS = %d, want %d", got, service.DefaultMaxConcurrentStreams)
		}
	})
	t.Run("max concurrent streams configured", func(t *testing.T) {
		if got := servicetest.MaxConcurrentStreams(t, dialRaw(t, a, service.WithInsecure(), service.WithMaxConcurrentStreams(7))); got != 7 {
			t.Errorf("SETTINGS_MAX_CONCURRENT_STREAMS = %d, want 7 (WithMaxConcurrentStreams)", got)
		}
	})
	t.Run("handshake timeout", func(t *testing.T) {
		srv, err := service.New(service.WithInsecure())
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Stop()
		if got := serverConnectionTimeout(t, srv.GRPC()); got != service.DefaultHandshakeTimeout {
			t.Errorf("connection timeout %v, want DefaultHandshakeTimeout (%v)", got, service.DefaultHandshakeTimeout)
		}
	})
	t.Run("silent connection", func(t *testing.T) {
		const timeout = 200 * time.Millisecond
		cert, key := servicetest.SelfSignedTLS(t, t.TempDir())
		tc, err := auth.ServerTLS(cert, key, "")
		if err != nil {
			t.Fatal(err)
		}
		conn := dialRaw(t, a, service.WithTLS(tc), service.WithGRPCOptions(grpc.ConnectionTimeout(timeout)))
		conn.SetReadDeadline(time.Now().Add(50 * timeout))
		_, err = conn.Read(make([]byte, 1))
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a connection that sent nothing still open after %v, with a connection timeout of %v", 50*timeout, timeout)
		}
		if err == nil {
			t.Fatal("the server sent something to a client that sent nothing")
		}
	})
}

// serverConnectionTimeout reads g's connection timeout (grpc.ConnectionTimeout)
// by reflection, as serverKeepalive does its keepalive settings.
func serverConnectionTimeout(t *testing.T, g *grpc.Server) time.Duration {
	t.Helper()
	ct := reflect.ValueOf(g).Elem().FieldByName("opts").FieldByName("connectionTimeout")
	if !ct.IsValid() || ct.Type() != reflect.TypeFor[time.Duration]() {
		t.Fatal("grpc.Server has no opts.connectionTimeout: grpc's internals changed, adapt serverConnectionTimeout")
	}
	return time.Duration(ct.Int())
}

// dialRaw serves a target with users (a) over transport (and opts) and
// returns a TCP connection to it, closed when the test ends, for a client
// that speaks for itself.
func dialRaw(t *testing.T, a *auth.Authenticator, transport service.Option, opts ...service.Option) net.Conn {
	t.Helper()
	srv, err := service.New(append([]service.Option{transport, service.WithAuth(a)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", servicetest.Serve(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
