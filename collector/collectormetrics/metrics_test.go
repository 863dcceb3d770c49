package collectormetrics

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
)

// TestProfileOnlyWhenAsked: /debug/pprof/ answers beside /metrics only
// with profile on; off (the default), it is not found.
func TestProfileOnlyWhenAsked(t *testing.T) {
	for _, profile := range []bool{false, true} {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- New().Serve(ctx, lis, profile, func() Health { return Health{OK: true} }) }()
		get := func(path string) int {
			resp, err := http.Get("http://" + lis.Addr().String() + path)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode
		}
		if got := get("/metrics"); got != http.StatusOK {
			t.Errorf("profile %v: /metrics answered %d", profile, got)
		}
		want := http.StatusNotFound
		if profile {
			want = http.StatusOK
		}
		if got := get("/debug/pprof/heap"); got != want {
			t.Errorf("profile %v: /debug/pprof/heap answered %d, want %d", profile, got, want)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
