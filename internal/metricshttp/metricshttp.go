// Package metricshttp is the HTTP endpoint of a service's Prometheus
// registry and its health: /metrics and /healthz, as the collector and
// the tuner serve them (one server, so that the two cannot drift).
//
// It depends on client_golang and the standard library only.
package metricshttp

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Mux serves reg on /metrics and health's answer on /healthz: its body
// as JSON, with status 503 when ok is false. health is called for every
// /healthz.
func Mux(reg *prometheus.Registry, health func() (body any, ok bool)) *http.ServeMux {
	mux := http.NewServeMux()
	// OpenMetrics when asked (Prometheus asks for it first): its "# EOF"
	// makes a scrape cut short an error rather than a partial one.
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg, EnableOpenMetrics: true}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		body, ok := health()
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		json.NewEncoder(w).Encode(body)
	})
	return mux
}

// Serve serves h on lis until ctx ends, then shuts the server down
// (within a second: a scrape under way may finish). When lis fails
// first, Serve returns its error and leaves nothing running.
func Serve(ctx context.Context, lis net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan struct{})
	defer close(served)
	go func() {
		select {
		case <-ctx.Done():
		case <-served:
			return
		}
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
