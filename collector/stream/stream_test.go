package stream_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/config"
	"github.com/lhcnp/lhcnp/collector/internal/switchtest"
	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/collector/stream"
	"github.com/lhcnp/lhcnp/gnmi/auth"
	"github.com/lhcnp/lhcnp/gnmi/schema"
)

// wait is how long a test waits for something the loop does at once on
// loopback; it only bounds a failing test.
const wait = 20 * time.Second

// depth is the queue-depth leaf the tests publish (a gauge: its samples
// are the values published, whatever came before).
var depth = switchtest.Queue("n1-n2", 0) + "/state/queue-depth"

// t0 is the switch's timestamp of the first value a test publishes (ns):
// fixed, so that a run is like any other.
const t0 = int64(1_800_000_000_000_000_000)

// onChange is a target subscribing to the whole tree on change, so that
// every published value is sent.
func onChange(sw *switchtest.Switch) config.Target {
	return config.Target{Name: sw.Name, Address: sw.Addr, Insecure: true,
		Subscriptions: []config.Subscription{{Paths: []string{"/lhcnp"}, Mode: "on_change"}}}
}

// sample is what the tests compare of a stored sample.
type sample struct {
	Path  string
	TS    int64
	Value int64
	Epoch int64
}

// recorder is a Sink that keeps the batches and wakes waiters.
type recorder struct {
	mu      sync.Mutex
	batches []*rows.Batch
	changed chan struct{}
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{}, 1)} }

// paths names the series the tests publish (the batch that carries a
// series row may be one a standby loop let go of).
var paths = map[int64]string{rows.SeriesID("sw1", depth): depth}

func (r *recorder) sink(b *rows.Batch) error {
	r.mu.Lock()
	r.batches = append(r.batches, b)
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
	return nil
}

// samples returns every sample received so far, in order.
func (r *recorder) samples() []sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []sample
	for _, b := range r.batches {
		for _, s := range b.Samples {
			out = append(out, sample{Path: paths[s.SeriesID], TS: s.TS, Value: s.Int, Epoch: b.Epoch})
		}
	}
	return out
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.batches)
}

// waitSamples waits until n samples have arrived and returns them.
func (r *recorder) waitSamples(t *testing.T, n int) []sample {
	t.Helper()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		if s := r.samples(); len(s) >= n {
			return s
		}
		select {
		case <-r.changed:
		case <-deadline.C:
			t.Fatalf("%d samples, want %d: %v", len(r.samples()), n, r.samples())
		}
	}
}

// newLoop builds the loop of sw's target with a converter of the switch's
// schema.
func newLoop(t *testing.T, tg config.Target, sink stream.Sink, opts ...stream.Option) *stream.Loop {
	t.Helper()
	sch, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	return stream.New(tg, rows.NewConverter(tg.Name, sch), sink, opts...)
}

// run runs l until the returned stop is called (or the test ends); stop
// returns once Run has.
func run(t *testing.T, l *stream.Loop) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		l.Run(ctx)
		close(done)
	}()
	stop = func() {
		cancel()
		select {
		case <-done:
		case <-time.After(wait):
			t.Fatal("Run did not return")
		}
	}
	t.Cleanup(stop)
	return stop
}

// poll checks cond until it holds or the wait is over.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func waitSynced(t *testing.T, l *stream.Loop) stream.Sync {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	s, err := l.WaitSynced(ctx)
	if err != nil {
		t.Fatalf("WaitSynced: %v", err)
	}
	return s
}

func waitReceived(t *testing.T, l *stream.Loop, ts int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := l.WaitReceived(ctx, ts); err != nil {
		t.Fatalf("WaitReceived(%d): %v (last received %d)", ts, err, l.LastReceived())
	}
}

// publishOne publishes one value at t0 and checks that it, alone, reaches the
// sink.
func publishOne(t *testing.T, sw *switchtest.Switch, rec *recorder, v uint64) {
	t.Helper()
	ts := t0
	sw.Publish(ts, map[string]*gnmi.TypedValue{depth: switchtest.Uint(v)})
	if diff := cmp.Diff([]sample{{depth, ts, int64(v), 0}}, rec.waitSamples(t, 1)); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}
}

// users is a switch's users file: "collector", password "s3cret".
func users(t *testing.T) *auth.Users {
	t.Helper()
	hash, err := auth.HashPassword("s3cret", 4)
	if err != nil {
		t.Fatal(err)
	}
	return auth.NewUsers(auth.User{Name: "collector", Role: auth.ReadOnly, Hash: []byte(hash)})
}

// signals counts calls of a callback that must not block.
type signals chan struct{}

func (s signals) fire() {
	select {
	case s <- struct{}{}:
	default:
		panic("too many signals")
	}
}

func (s signals) next(t *testing.T, what string) {
	t.Helper()
	select {
	case <-s:
	case <-time.After(wait):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestStreamsRows: the loop subscribes, turns the initial data and the
// updates after it into samples of the target's batches, records the
// stream's sync point, and reports its state and counts in the metrics.
func TestStreamsRows(t *testing.T) {
	sw := switchtest.Start(t, "sw1")
	ts1 := t0
	sw.Publish(ts1, map[string]*gnmi.TypedValue{depth: switchtest.Uint(10)})
	rec := newRecorder()
	m := collectormetrics.New()
	syncs := make(signals, 4)
	l := newLoop(t, onChange(sw), rec.sink, stream.WithCollector("c1", 3), stream.WithBatch(1000, 5*time.Millisecond),
		stream.WithMetrics(m), stream.WithOnSync(syncs.fire))
	if _, ok := l.Synced(); ok {
		t.Error("Synced before Run")
	}
	stop := run(t, l)

	if diff := cmp.Diff(stream.Sync{Session: 1, Point: ts1}, waitSynced(t, l)); diff != "" {
		t.Errorf("sync (-want +got):\n%s", diff)
	}
	syncs.next(t, "onSync at the sync_response")
	ts2 := ts1 + int64(time.Millisecond)
	sw.Publish(ts2, map[string]*gnmi.TypedValue{depth: switchtest.Uint(20)})
	waitReceived(t, l, ts2)
	if got := l.LastReceived(); got != ts2 {
		t.Errorf("LastReceived = %d, want %d", got, ts2)
	}
	want := []sample{{depth, ts1, 10, 3}, {depth, ts2, 20, 3}}
	if diff := cmp.Diff(want, rec.waitSamples(t, 2)); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}
	var series []rows.Series
	rec.mu.Lock()
	batches := rec.batches
	rec.mu.Unlock()
	for _, b := range batches {
		if b.Collector != "c1" || b.Target != "sw1" {
			t.Errorf("batch of collector %q, target %q; want c1, sw1", b.Collector, b.Target)
		}
		series = append(series, b.Series...)
	}
	wantSeries := []rows.Series{{ID: rows.SeriesID("sw1", depth), Target: "sw1", Path: depth}}
	if diff := cmp.Diff(wantSeries, series, cmpopts.IgnoreFields(rows.Series{}, "SchemaPath", "Keys", "YangType", "Unit", "FirstSeen")); diff != "" {
		t.Errorf("series rows (-want +got):\n%s", diff)
	}
	if got := m.TargetStates()["sw1"]; got != "streaming" {
		t.Errorf("state %q, want streaming", got)
	}
	if err := l.LastError(); err != nil {
		t.Errorf("LastError = %v while streaming", err)
	}
	for _, c := range []struct {
		desc string
		got  float64
		want float64
	}{
		{"subscribes", testutil.ToFloat64(m.Resubscribes.WithLabelValues("sw1")), 1},
		{"notifications", testutil.ToFloat64(m.Notifications.WithLabelValues("sw1")), 2},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.desc, c.got, c.want)
		}
	}

	stop()
	syncs.next(t, "onSync when the stream ended")
	if s, ok := l.Synced(); ok {
		t.Errorf("Synced = %+v after Run returned", s)
	}
	if got := m.TargetStates()["sw1"]; got != "stopped" {
		t.Errorf("state %q after Run, want stopped", got)
	}
}

// TestWaitSyncedEndsWithContext: WaitSynced on a loop whose target never
// answers returns the context's error.
func TestWaitSyncedEndsWithContext(t *testing.T) {
	sw := switchtest.Start(t, "down")
	sw.Stop()
	l := newLoop(t, onChange(sw), newRecorder().sink, stream.WithBackoff(time.Millisecond, time.Millisecond))
	run(t, l)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.WaitSynced(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitSynced = %v, want context.Canceled", err)
	}
	if err := l.WaitReceived(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitReceived = %v, want context.Canceled", err)
	}
}

// TestBatches: a batch goes to the sink when it is full, a partial one
// when the interval is over, and the one in progress when Run returns.
func TestBatches(t *testing.T) {
	for _, tt := range []struct {
		desc      string
		batchRows int
		every     time.Duration
		// Batches at the sink once the three updates are received, and
		// after Run returned.
		whileRunning, afterRun int
	}{
		{desc: "full batches go at once", batchRows: 1, every: time.Hour, whileRunning: 3, afterRun: 3},
		{desc: "the batch in progress goes when Run returns", batchRows: 1000, every: time.Hour, whileRunning: 0, afterRun: 1},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			sw := switchtest.Start(t, "sw1")
			rec := newRecorder()
			l := newLoop(t, onChange(sw), rec.sink, stream.WithBatch(tt.batchRows, tt.every))
			stop := run(t, l)
			waitSynced(t, l)
			ts := t0
			var want []sample
			for i := range 3 {
				ts += int64(time.Millisecond)
				sw.Publish(ts, map[string]*gnmi.TypedValue{depth: switchtest.Uint(uint64(i))})
				want = append(want, sample{depth, ts, int64(i), 0})
			}
			waitReceived(t, l, ts)
			if tt.whileRunning > 0 {
				rec.waitSamples(t, 3)
			}
			if got := rec.count(); got != tt.whileRunning {
				t.Errorf("%d batches while running, want %d", got, tt.whileRunning)
			}
			stop()
			if got := rec.count(); got != tt.afterRun {
				t.Errorf("%d batches after Run, want %d", got, tt.afterRun)
			}
			if diff := cmp.Diff(want, rec.samples()); diff != "" {
				t.Errorf("samples (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPartialBatchOnTime: a quiet stream's partial batch goes out once the
// batch interval is over, without Run returning.
func TestPartialBatchOnTime(t *testing.T) {
	sw := switchtest.Start(t, "sw1")
	rec := newRecorder()
	l := newLoop(t, onChange(sw), rec.sink, stream.WithBatch(1000, time.Millisecond))
	run(t, l)
	waitSynced(t, l)
	publishOne(t, sw, rec, 7)
}

// TestResubscribes: when the switch goes down the loop retries with
// back-off, reporting the error with the target's name and address; when
// it comes back (empty, as after a reboot) the loop subscribes again as a
// new session and streams what it publishes.
func TestResubscribes(t *testing.T) {
	sw := switchtest.Start(t, "sw1")
	rec := newRecorder()
	m := collectormetrics.New()
	syncs := make(signals, 4)
	l := newLoop(t, onChange(sw), rec.sink, stream.WithBatch(1, time.Hour), stream.WithMetrics(m),
		stream.WithBackoff(time.Millisecond, 5*time.Millisecond), stream.WithOnSync(syncs.fire))
	run(t, l)
	if s := waitSynced(t, l); s.Session != 1 {
		t.Errorf("first session %d, want 1", s.Session)
	}
	syncs.next(t, "the first sync")

	sw.Stop()
	syncs.next(t, "onSync when the stream broke")
	if s, ok := l.Synced(); ok {
		t.Errorf("Synced = %+v with the switch down", s)
	}
	poll(t, "the loop in back-off with an error", func() bool {
		return m.TargetStates()["sw1"] == "backoff" && l.LastError() != nil
	})
	if msg, prefix := l.LastError().Error(), fmt.Sprintf("target sw1 (%s): ", sw.Addr); !strings.HasPrefix(msg, prefix) {
		t.Errorf("LastError = %q, want it to start with %q", msg, prefix)
	}

	sw.Restart()
	if diff := cmp.Diff(stream.Sync{Session: 2}, waitSynced(t, l)); diff != "" {
		t.Errorf("second sync (-want +got):\n%s", diff)
	}
	syncs.next(t, "the second sync")
	poll(t, "the error cleared and the state streaming", func() bool {
		return l.LastError() == nil && m.TargetStates()["sw1"] == "streaming"
	})
	publishOne(t, sw, rec, 1)
	if got := testutil.ToFloat64(m.Resubscribes.WithLabelValues("sw1")); got != 2 {
		t.Errorf("%v subscribes, want 2", got)
	}
}

// retries is a slog.Handler that passes on the back-off of every
// "subscription ended, retrying" record.
type retries chan time.Duration

func (r retries) Enabled(context.Context, slog.Level) bool { return true }
func (r retries) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r retries) WithGroup(string) slog.Handler            { return r }
func (r retries) Handle(_ context.Context, rec slog.Record) error {
	if rec.Message != "subscription ended, retrying" {
		return nil
	}
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "in" {
			r <- a.Value.Duration()
		}
		return true
	})
	return nil
}

// TestBackoff: the wait between attempts grows while the target is down,
// up to the longest, and starts again from the first once a stream has
// delivered its sync_response. Back-offs are randomised by ±50 %: the
// bounds below hold whatever the draw.
func TestBackoff(t *testing.T) {
	const initial, longest = time.Millisecond, 64 * time.Millisecond
	sw := switchtest.Start(t, "sw1")
	sw.Stop()
	waits := make(retries, 1000)
	l := newLoop(t, onChange(sw), newRecorder().sink, stream.WithBackoff(initial, longest),
		stream.WithLogger(slog.New(waits)))
	run(t, l)

	next := func() time.Duration {
		t.Helper()
		select {
		case d := <-waits:
			return d
		case <-time.After(wait):
			t.Fatal("no retry")
			return 0
		}
	}
	// Logged rounded to the millisecond.
	if d := next(); d > 2*initial {
		t.Errorf("first back-off %v, want at most 1.5 × %v", d, initial)
	}
	for {
		d := next()
		if d > longest*3/2+time.Millisecond {
			t.Fatalf("back-off %v beyond 1.5 × the longest, %v", d, longest)
		}
		if d >= longest/2 {
			break // grown to the longest
		}
	}

	sw.Restart()
	waitSynced(t, l)
	// The retries logged before the stream came up.
	for len(waits) > 0 {
		<-waits
	}
	sw.Stop()
	if d := next(); d > 2*initial {
		t.Errorf("back-off after a synced stream %v, want the first again (at most 1.5 × %v)", d, initial)
	}
}

// TestErrors: a target that cannot be subscribed to reports why in
// LastError, naming the target and what is wrong, and never syncs; a
// subscription the loop cannot build stops it at once.
func TestErrors(t *testing.T) {
	for _, tt := range []struct {
		desc   string
		target func(sw *switchtest.Switch) config.Target
		// want is in the error; stops: Run returns by itself.
		want  string
		stops bool
	}{
		{desc: "wrong password", want: "Unauthenticated", target: func(sw *switchtest.Switch) config.Target {
			tg := onChange(sw)
			tg.Username, tg.Password = "collector", "guess"
			return tg
		}},
		{desc: "no password", want: "Unauthenticated", target: onChange},
		{desc: "unreadable CA file", want: "targets[sw1].ca_file: ", target: func(sw *switchtest.Switch) config.Target {
			tg := onChange(sw)
			tg.Insecure, tg.CAFile = false, t.TempDir()+"/missing.pem"
			return tg
		}},
		{desc: "bad subscription path", want: "targets[sw1].subscriptions: ", stops: true, target: func(sw *switchtest.Switch) config.Target {
			tg := onChange(sw)
			tg.Subscriptions[0].Paths = []string{"/lhcnp/interfaces/interface[name=x"}
			return tg
		}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			sw := switchtest.Start(t, "sw1", switchtest.WithUsers(users(t)))
			m := collectormetrics.New()
			l := newLoop(t, tt.target(sw), newRecorder().sink, stream.WithMetrics(m),
				stream.WithBackoff(time.Millisecond, 5*time.Millisecond), stream.WithOnSync(func() { t.Error("onSync") }))
			if tt.stops {
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				defer cancel()
				l.Run(ctx)
				if ctx.Err() != nil {
					t.Fatal("Run did not return by itself")
				}
				if got := m.TargetStates()["sw1"]; got != "stopped" {
					t.Errorf("state %q, want stopped", got)
				}
			} else {
				run(t, l)
				poll(t, "an error", func() bool { return l.LastError() != nil })
			}
			if msg := l.LastError().Error(); !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") {
				t.Errorf("LastError = %q, want one line with %q", msg, tt.want)
			}
			if s, ok := l.Synced(); ok {
				t.Errorf("Synced = %+v", s)
			}
		})
	}
}

// TestTLS: a target with the switch's CA, a client certificate and a
// password streams.
func TestTLS(t *testing.T) {
	pki := switchtest.NewPKI(t)
	serverTLS, err := auth.ServerTLS(pki.ServerCert, pki.ServerKey, pki.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	sw := switchtest.Start(t, "sw1", switchtest.WithTLS(serverTLS), switchtest.WithUsers(users(t)))
	tg := onChange(sw)
	tg.Insecure = false
	tg.CAFile, tg.CertFile, tg.KeyFile = pki.CAFile, pki.ClientCert, pki.ClientKey
	tg.Username, tg.Password = "collector", "s3cret"
	rec := newRecorder()
	l := newLoop(t, tg, rec.sink, stream.WithBatch(1, time.Hour))
	run(t, l)
	waitSynced(t, l)
	publishOne(t, sw, rec, 3)
}

// TestStandby: a standby loop streams and holds its batches, within its
// budget (the oldest go first), until Promote: then the held batches lose
// what the previous owner stored (at or before the floor) and go to the
// sink with the new epoch, in order.
func TestStandby(t *testing.T) {
	for _, tt := range []struct {
		desc   string
		budget int
		// held: rows held before Promote; discarded: the newest timestamp
		// let go of (index into the published, -1: none).
		held, discarded int
		// floor: the index of the published sample the previous owner
		// stored last.
		floor int
		// want: the indices of the published samples at the sink.
		want []int
		// skipped: samples Promote dropped.
		skipped int
	}{
		{desc: "within the budget", budget: 100, held: 4, discarded: -1, floor: 1, want: []int{2, 3}, skipped: 2},
		{desc: "past the budget", budget: 2, held: 2, discarded: 1, floor: 1, want: []int{2, 3}, skipped: 0},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			sw := switchtest.Start(t, "sw1")
			rec := newRecorder()
			m := collectormetrics.New()
			budget := stream.NewStandbyBudget(tt.budget)
			l := newLoop(t, onChange(sw), rec.sink, stream.WithBatch(1, time.Hour), stream.WithMetrics(m),
				stream.WithCollector("c2", 1), stream.WithStandby(budget))
			run(t, l)
			waitSynced(t, l)
			poll(t, "the state standby", func() bool { return m.TargetStates()["sw1"] == "standby" })
			var ts []int64
			for i := range 4 {
				ts = append(ts, t0+int64(i)*int64(time.Millisecond))
				sw.Publish(ts[i], map[string]*gnmi.TypedValue{depth: switchtest.Uint(uint64(i))})
			}
			wantDiscarded := int64(0)
			if tt.discarded >= 0 {
				wantDiscarded = ts[tt.discarded]
			}
			// Received is before held: wait for the last batch to be held.
			poll(t, "the rows held", func() bool {
				return budget.Rows() == int64(tt.held) && l.DiscardedUpTo() == wantDiscarded
			})
			if !l.Standby() {
				t.Error("not on standby before Promote")
			}
			if n := rec.count(); n != 0 {
				t.Errorf("%d batches at the sink on standby", n)
			}

			floor := map[int64]int64{rows.SeriesID("sw1", depth): ts[tt.floor]}
			seeded := false
			samples, events := l.Promote(7, floor, func(*rows.Converter) { seeded = true })
			if samples != tt.skipped || events != 0 || !seeded {
				t.Errorf("Promote skipped %d samples, %d events, seeded %v; want %d, 0, true", samples, events, seeded, tt.skipped)
			}
			var want []sample
			for _, i := range tt.want {
				want = append(want, sample{depth, ts[i], int64(i), 7})
			}
			if diff := cmp.Diff(want, rec.samples()); diff != "" {
				t.Errorf("samples at the sink (-want +got):\n%s", diff)
			}
			if l.Standby() || budget.Rows() != 0 {
				t.Errorf("after Promote: standby %v, %d rows held", l.Standby(), budget.Rows())
			}
			if got := m.TargetStates()["sw1"]; got != "streaming" {
				t.Errorf("state %q after Promote, want streaming", got)
			}
		})
	}
}
