package fabric

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/gnmi/service"
)

// TestCancelAtEveryStage: a fabric cancelled at any stage of its start-up
// (before Run, with its epoch set, waiting for its wires, starting its
// engine, running) stops cleanly: Run returns nil, never the gRPC server's
// "the server has been stopped" (a Serve reached after the stop). Each
// stage is hit through the test hook, so the cancel happens exactly there;
// every case runs several times because the goroutines Run starts race
// with the stop in different orders.
func TestCancelAtEveryStage(t *testing.T) {
	a, b := udpPair(t)
	for _, tt := range []struct {
		desc  string
		stage string // "" cancels before Run
		wired bool
	}{
		{desc: "before run", stage: ""},
		{desc: "epoch set", stage: "epoch"},
		{desc: "waiting for wires", stage: "wires", wired: true},
		{desc: "engine starting", stage: "engine"},
		{desc: "engine starting with a wire", stage: "engine", wired: true},
		{desc: "running", stage: "running"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			for range 10 {
				cfg := Config{Scenario: loadLab(t), Schema: labSchema, Speed: 0.01, TargetOptions: []service.Option{service.WithInsecure()},
					Switches: []Switch{{Name: "t1", Listen: "127.0.0.1:0"}, {Name: "n1", Listen: "127.0.0.1:0"}}}
				if tt.wired {
					// No peer answers: the wire stays down; Run waits
					// for it until cancelled, or starts the engine
					// after StartWait.
					cfg.Wires = []Wire{{Link: "wan", Listen: a, Peer: b}}
					cfg.StartWait = time.Millisecond
				}
				f, err := New(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				var mu sync.Mutex
				var seen []string
				f.onStage = func(s string) {
					mu.Lock()
					defer mu.Unlock()
					seen = append(seen, s)
					if s == tt.stage {
						cancel()
					}
				}
				if tt.stage == "" {
					cancel()
				}
				err = f.Run(ctx)
				cancel()
				if err != nil && !errors.Is(err, context.Canceled) {
					mu.Lock()
					defer mu.Unlock()
					t.Fatalf("cancelled at %q (stages seen %v): Run: %v", tt.stage, seen, err)
				}
			}
		})
	}
}
