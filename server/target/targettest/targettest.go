// Package targettest serves a target.Server on loopback for tests and
// returns a gNMI client connected to it. Test support only.
package targettest

import (
	"net"
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/lhcnp/lhcnp/server/target"
)

// Client serves srv (built WithInsecure) on 127.0.0.1 at a free port and
// returns a client of it. The server stops and the connection closes when
// the test ends.
func Client(t testing.TB, srv *target.Server) gnmi.GNMIClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return gnmi.NewGNMIClient(conn)
}
