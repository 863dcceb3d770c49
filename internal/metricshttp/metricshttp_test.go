package metricshttp

import (
	"context"
	"net"
	"net/http"
	"runtime"
	"testing"
	"time"
)

// TestServeFailingLeavesNothing: Serve on a listener that fails returns
// its error and leaves no goroutine behind, though its context never
// ends (a process's, until it exits).
func TestServeFailingLeavesNothing(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 20 {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lis.Close()
		if err := Serve(context.Background(), lis, http.NotFoundHandler()); err == nil {
			t.Fatal("Serve on a closed listener: no error")
		}
	}
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines before 20 failed Serves, %d after", before, runtime.NumGoroutine())
		}
		time.Sleep(10 * time.Millisecond) // polling the goroutines' exit, with the deadline above
	}
}
