// Package dashboard serves the lab's web page: static files embedded in the
// binary (the page, its script and the vendored uPlot charting library) and a
// small JSON API that reads the collector's views in PostgreSQL
// (queue_latest, queue_congestion, queue_utilisation,
// notifications_per_second, series_values) and the tuner's tuner_actions.
// The page polls the API, so charts move without a reload.
//
// It reads the database only; it depends on pgx and the standard library,
// never on the collector, the tuner or the switches.
package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

//go:embed static
var staticFiles embed.FS

// Querier is the part of a pgx pool the dashboard uses (*pgxpool.Pool).
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

type options struct {
	logger        *slog.Logger
	refresh       time.Duration
	defaultWindow time.Duration
	maxWindow     time.Duration
	queryTimeout  time.Duration
	speed         float64
}

// Option configures a Server.
type Option func(*options)

// WithLogger sets where request errors are logged (default: discarded).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithRefresh sets how often the page polls the API (default 2 s).
func WithRefresh(d time.Duration) Option { return func(o *options) { o.refresh = d } }

// WithDefaultWindow sets the time span the page shows at first (default 5
// minutes).
func WithDefaultWindow(d time.Duration) Option { return func(o *options) { o.defaultWindow = d } }

// WithSpeed sets the speed the page shows (simulated seconds per
// wall-clock second, default 1). It changes no number: every rate on the
// page is per simulated second, the views' columns per simulated second
// (divided by each target's speed, its engine-speed leaf) next to the switches'
// own rate leaves (growth rate, flows' arrival rate).
func WithSpeed(speed float64) Option {
	return func(o *options) {
		if speed > 0 {
			o.speed = speed
		}
	}
}

// Server is the dashboard's http.Handler.
type Server struct {
	db   Querier
	opts options
	mux  *http.ServeMux
}

// New returns the dashboard reading db.
func New(db Querier, opts ...Option) *Server {
	o := options{
		logger:        slog.New(slog.DiscardHandler),
		refresh:       2 * time.Second,
		defaultWindow: 5 * time.Minute,
		maxWindow:     24 * time.Hour,
		queryTimeout:  10 * time.Second,
		speed:         1,
	}
	for _, opt := range opts {
		opt(&o)
	}
	s := &Server{db: db, opts: o, mux: http.NewServeMux()}
	static, err := fs.Sub(staticFiles, "static")
	if err != nil {
		panic(err) // the embed directive guarantees the directory
	}
	s.mux.Handle("GET /", http.FileServerFS(static))
	s.mux.HandleFunc("GET /api/config", s.handleConfig)
	s.mux.HandleFunc("GET /api/queues", s.handleQueues)
	s.mux.HandleFunc("GET /api/queue", s.handleQueue)
	s.mux.HandleFunc("GET /healthz", s.handleHealth)
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Config is what the page needs before its first query.
type Config struct {
	RefreshMillis       int64   `json:"refresh_ms"`
	DefaultWindowSecond int64   `json:"default_window_s"`
	Speed               float64 `json:"speed"`
}

func (s *Server) handleConfig(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, Config{
		RefreshMillis:       s.opts.refresh.Milliseconds(),
		DefaultWindowSecond: int64(s.opts.defaultWindow / time.Second),
		Speed:               s.opts.speed,
	})
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.queryTimeout)
	defer cancel()
	var one int
	if err := s.db.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
		http.Error(w, "database: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

func (s *Server) handleQueues(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.queryTimeout)
	defer cancel()
	out, err := Queues(ctx, s.db)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, out)
}

func (s *Server) handleQueue(w http.ResponseWriter, r *http.Request) {
	q, err := s.parseQueueRequest(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.queryTimeout)
	defer cancel()
	out, err := QueueSeries(ctx, s.db, q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, out)
}

// parseQueueRequest reads target, interface, queue and window (seconds or a
// Go duration) from the query string.
func (s *Server) parseQueueRequest(r *http.Request) (QueueRequest, error) {
	v := r.URL.Query()
	q := QueueRequest{Target: v.Get("target"), Interface: v.Get("interface"), Window: s.opts.defaultWindow}
	if q.Target == "" || q.Interface == "" {
		return q, errors.New("query parameters target and interface are required")
	}
	// The model's queue ids: yang/lhcnp.yang, a queue's config id, uint8
	// range 0..15 (tuner.MaxQueueID; this package imports none of ours).
	id, err := strconv.ParseUint(v.Get("queue"), 10, 8)
	if err != nil || id > 15 {
		return q, fmt.Errorf("query parameter queue %q: want a queue id 0-15", v.Get("queue"))
	}
	q.Queue = int(id)
	if w := v.Get("window"); w != "" {
		d, err := parseWindow(w)
		if err != nil || d <= 0 || d > s.opts.maxWindow {
			return q, fmt.Errorf("query parameter window %q: want seconds or a duration between 1s and %s", w, s.opts.maxWindow)
		}
		q.Window = d
	}
	return q, nil
}

// parseWindow reads whole seconds or a Go duration. Seconds whose
// nanoseconds do not fit a time.Duration are an error: multiplied, they
// wrapped round into a window that could pass the range check.
func parseWindow(s string) (time.Duration, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n > math.MaxInt64/int64(time.Second) || n < math.MinInt64/int64(time.Second) {
			return 0, fmt.Errorf("%d seconds out of range", n)
		}
		return time.Duration(n) * time.Second, nil
	}
	return time.ParseDuration(s)
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	s.opts.logger.Error("dashboard query", "path", r.URL.Path, "err", err)
	http.Error(w, err.Error(), http.StatusInternalServerError)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}
