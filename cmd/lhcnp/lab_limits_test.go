package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lhcnp/lhcnp/gnmi/service/servicetest"
	"github.com/lhcnp/lhcnp/server/fabric"
)

// TestLabStreamLimits: lhcnp lab's switches have the fabric file's stream
// limits, lhcnp switch's keys, each switch its own as lhcnp switch gives
// them: with max_streams 2 the third stream on n1 is RESOURCE_EXHAUSTED
// while n2 still takes one, and a connection is told the file's
// max_streams_per_connection. It failed before: the lab's targets shared
// one auth.New(nil) and had no stream limit (a client could open streams
// without end) and gRPC's default per connection whatever the file said.
func TestLabStreamLimits(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fabricFile := fileWriter(t, t.TempDir())("fabric.yaml", fmt.Sprintf(`scenario: %s
publish_interval: 100ms
switches:
  - {name: t1, listen: 127.0.0.1:0}
  - {name: n1, listen: 127.0.0.1:0}
  - {name: n2, listen: 127.0.0.1:0}
max_streams: 2
max_streams_per_connection: 3
`, filepath.Join(root, "scenarios", "lab.yaml")))
	lf, err := parseLab([]string{"--fabric", fabricFile, "--tuner=false"}, func() []string { return nil }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	lc, err := labConfig(context.Background(), *lf, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	fab, err := fabric.New(context.Background(), lc.Fabric)
	if err != nil {
		t.Fatal(err)
	}
	fctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fab.Run(fctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("the lab's switches: %v", err)
		}
	})
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel() // ends the streams, then the switches
	addr := func(name string) string { return fab.Switch(name).Addr().String() }

	n1 := gnmi.NewGNMIClient(dialGNMI(t, addr("n1")))
	for i := range 2 {
		if err := openStream(ctx, n1, "anyone"); err != nil {
			t.Fatalf("n1: stream %d of 2: %v", i+1, err)
		}
	}
	if err := openStream(ctx, n1, "anyone"); status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "limit 2") {
		t.Errorf("n1: stream 3: %v, want RESOURCE_EXHAUSTED naming limit 2", err)
	}
	if err := openStream(ctx, gnmi.NewGNMIClient(dialGNMI(t, addr("n2"))), "anyone"); err != nil {
		t.Errorf("n2: a first stream, n1 at its limit: %v", err)
	}
	conn, err := net.Dial("tcp", addr("t1"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if got := servicetest.MaxConcurrentStreams(t, conn); got != 3 {
		t.Errorf("t1: SETTINGS_MAX_CONCURRENT_STREAMS = %d, want 3 (max_streams_per_connection)", got)
	}
}
