package service_test

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/gnmi/auth"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/service/servicetest"
)

// TestConnectionBounds: what one connection may hold before it
// authenticates is bounded. The server's HTTP/2 SETTINGS carry
// MAX_CONCURRENT_STREAMS (gRPC's default sends none: no limit), and a
// connection that never starts its TLS handshake is closed after
// DefaultHandshakeTimeout (gRPC's default: two minutes). The wait for that
// close is bounded well below two minutes, above DefaultHandshakeTimeout.
func TestConnectionBounds(t *testing.T) {
	t.Run("max concurrent streams", func(t *testing.T) {
		if got := servicetest.MaxConcurrentStreams(t, dialRaw(t, service.WithInsecure())); got != service.DefaultMaxConcurrentStreams {
			t.Errorf("SETTINGS_MAX_CONCURRENT_STREAMS = %d, want %d", got, service.DefaultMaxConcurrentStreams)
		}
	})
	t.Run("max concurrent streams configured", func(t *testing.T) {
		if got := servicetest.MaxConcurrentStreams(t, dialRaw(t, service.WithInsecure(), service.WithMaxConcurrentStreams(7))); got != 7 {
			t.Errorf("SETTINGS_MAX_CONCURRENT_STREAMS = %d, want 7 (WithMaxConcurrentStreams)", got)
		}
	})
	t.Run("silent connection", func(t *testing.T) {
		cert, key := servicetest.SelfSignedTLS(t, t.TempDir())
		tc, err := auth.ServerTLS(cert, key, "")
		if err != nil {
			t.Fatal(err)
		}
		conn := dialRaw(t, service.WithTLS(tc))
		conn.SetReadDeadline(time.Now().Add(6 * service.DefaultHandshakeTimeout))
		_, err = conn.Read(make([]byte, 1))
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a connection that sent nothing still open after %v", 6*service.DefaultHandshakeTimeout)
		}
		if err == nil {
			t.Fatal("the server sent something to a client that sent nothing")
		}
	})
}

// dialRaw serves a target with users over transport (and opts) and returns
// a TCP connection to it, closed when the test ends, for a client that
// speaks for itself.
func dialRaw(t *testing.T, transport service.Option, opts ...service.Option) net.Conn {
	t.Helper()
	srv, err := service.New(append([]service.Option{transport, service.WithAuth(auth.New(auth.NewUsers()))}, opts...)...)
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
