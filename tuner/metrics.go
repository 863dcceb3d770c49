package tuner

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lhcnp/lhcnp/tuner/tunermetrics"
)

// WithMetrics counts what the tuner does in m (docs/tuner.md, "Metrics
// and health"); without it the tuner counts in metrics of its own, which
// Metrics returns (the lab registers them on its collector's endpoint).
func WithMetrics(m *tunermetrics.Metrics) Option { return func(t *Tuner) { t.m = m } }

// Metrics returns the tuner's metrics.
func (t *Tuner) Metrics() *tunermetrics.Metrics { return t.m }

// Health is the tuner's /healthz: ok while its database answers a ping
// (the tuner reads its telemetry and writes its audit trail there). lhcnp
// tuner serves it on its own endpoint, the lab among its collector's.
func Health(ctx context.Context, pool *pgxpool.Pool) tunermetrics.Health {
	h := tunermetrics.Health{OK: true, DBUp: true}
	if err := pool.Ping(ctx); err != nil {
		h.OK, h.DBUp, h.Errors = false, false, []string{"database: " + err.Error()}
	}
	return h
}

// meter puts the metrics between the tuner and its parts: every call of
// the source, the recorder and the pusher goes through as it is, its
// failure counted (and a push's duration observed). The recorder's
// optional readers are kept as the recorder has them.
func (t *Tuner) meter() {
	m := t.m
	t.src = meteredSource{t.src, m}
	if t.push != nil {
		t.push = meteredPusher{t.push, m}
	}
	if tr, ok := t.rec.(TrailReader); ok {
		t.trail = meteredTrail{tr, m}
	}
	if cr, ok := t.rec.(CutReader); ok {
		t.cuts = meteredCuts{cr, m}
	}
	t.rec = meteredRecorder{t.rec, m}
}

// dbErr counts err, if any, as a database error.
func dbErr(m *tunermetrics.Metrics, err error) error {
	if err != nil {
		m.Errors.WithLabelValues(tunermetrics.ErrDatabase).Inc()
	}
	return err
}

// db is dbErr for a call that returns a value too.
func db[T any](m *tunermetrics.Metrics) func(T, error) (T, error) {
	return func(v T, err error) (T, error) { return v, dbErr(m, err) }
}

type meteredSource struct {
	Source
	m *tunermetrics.Metrics
}

func (s meteredSource) Windows(ctx context.Context, target string, start, end time.Time) ([]QueueWindow, error) {
	return db[[]QueueWindow](s.m)(s.Source.Windows(ctx, target, start, end))
}

type meteredRecorder struct {
	Recorder
	m *tunermetrics.Metrics
}

func (r meteredRecorder) Record(ctx context.Context, a Action) (int64, error) {
	return db[int64](r.m)(r.Recorder.Record(ctx, a))
}

func (r meteredRecorder) SetOutcome(ctx context.Context, id int64, o Outcome, reason, errText string, j *Judgement) error {
	return dbErr(r.m, r.Recorder.SetOutcome(ctx, id, o, reason, errText, j))
}

func (r meteredRecorder) Forget(ctx context.Context, key string) error {
	return dbErr(r.m, r.Recorder.Forget(ctx, key))
}

func (r meteredRecorder) OperatorHolds(ctx context.Context, target string, now time.Time) (map[QueueID]OperatorHold, error) {
	return db[map[QueueID]OperatorHold](r.m)(r.Recorder.OperatorHolds(ctx, target, now))
}

type meteredTrail struct {
	TrailReader
	m *tunermetrics.Metrics
}

func (r meteredTrail) LastSettings(ctx context.Context, target string) (map[QueueID]LastSettings, error) {
	return db[map[QueueID]LastSettings](r.m)(r.TrailReader.LastSettings(ctx, target))
}

type meteredCuts struct {
	CutReader
	m *tunermetrics.Metrics
}

func (r meteredCuts) TunersCuts(ctx context.Context, target string) (map[QueueID]CutClaim, error) {
	return db[map[QueueID]CutClaim](r.m)(r.CutReader.TunersCuts(ctx, target))
}

type meteredPusher struct {
	Pusher
	m *tunermetrics.Metrics
}

// done observes a call's duration and counts its failure: dial when the
// switch was not reached (gRPC Unavailable), set otherwise.
func (p meteredPusher) done(call string, start time.Time, err error) error {
	p.m.SetDuration.WithLabelValues(call).Observe(time.Since(start).Seconds())
	if err != nil {
		kind := tunermetrics.ErrSet
		if status.Code(err) == codes.Unavailable {
			kind = tunermetrics.ErrDial
		}
		p.m.Errors.WithLabelValues(kind).Inc()
	}
	return err
}

func (p meteredPusher) Commit(ctx context.Context, target, id string, changes []Change, rollback time.Duration) error {
	start := time.Now()
	return p.done(tunermetrics.CallCommit, start, p.Pusher.Commit(ctx, target, id, changes, rollback))
}

func (p meteredPusher) Confirm(ctx context.Context, target, id string) error {
	start := time.Now()
	return p.done(tunermetrics.CallConfirm, start, p.Pusher.Confirm(ctx, target, id))
}

func (p meteredPusher) Cancel(ctx context.Context, target, id string) error {
	start := time.Now()
	return p.done(tunermetrics.CallCancel, start, p.Pusher.Cancel(ctx, target, id))
}

// countChanges counts n changes ending (or starting, pushed) with o.
func (t *Tuner) countChanges(o Outcome, n int) {
	t.m.Changes.WithLabelValues(string(o)).Add(float64(n))
}

// cycleDone sets what a period leaves: the commits pending, and when it
// ended.
func (t *Tuner) cycleDone(now time.Time) {
	t.m.CommitsPending.Set(float64(len(t.pending)))
	t.m.LastCycle.Set(float64(now.UnixNano()) / 1e9)
}
