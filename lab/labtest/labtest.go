// Package labtest writes a deterministic stretch of lab telemetry into a
// database with lhcnp's schema, through the same tables and columns the
// collector writes (series, samples by COPY, latest, ingest_ledger) and the
// tuner writes (tuner_actions). Tests of the dashboard and of the Grafana
// panels read it back through the views.
//
// It depends on pgx and collector/rows (the series ids); nothing outside
// tests uses it.
package labtest

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/tuner"
)

// DB is what Fill writes through (*pgxpool.Pool, *pgx.Conn).
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Queue names one queue of the fixture.
type Queue struct {
	Target    string
	Interface string
	ID        int
}

// Congested is the queue of the fixture that congests and that the tuner
// changes; Quiet is a queue of another switch that stays almost empty.
var (
	Congested = Queue{Target: "n1", Interface: "n1-wan", ID: 3}
	Quiet     = Queue{Target: "n2", Interface: "n2-d0", ID: 3}
)

// BufferBytes is Congested's port's egress buffer (its interface's
// buffer-size leaf); Quiet's port reports none.
const BufferBytes = 32_000_000

// Fixture is what Fill wrote, for the tests to check against.
type Fixture struct {
	Start, End time.Time
	// Decision is when the tuner's decision on Congested was recorded; its
	// reason is DecisionReason.
	Decision       time.Time
	DecisionReason string
	// DecisionInputs are the decision's inputs as the tuner records them
	// (tuner.Inputs, JSON): its direction and its judgement.
	DecisionInputs tuner.Inputs
	Samples        int
}

const (
	queueState = "/lhcnp/interfaces/interface/queues/queue/state/"
	queueConf  = "/lhcnp/interfaces/interface/queues/queue/config/"
	ifState    = "/lhcnp/interfaces/interface/state/"
	flowState  = "/lhcnp/flow-table/flows/flow/state/"
)

type sample struct {
	ts     time.Time
	series int64
	vInt   *int64
	vNum   *string
	vText  *string
	flags  int16
}

type seriesRow struct {
	id                      int64
	target, path, schemaPth string
	keys                    map[string]string
}

type writer struct {
	series  map[int64]seriesRow
	order   []int64
	samples []sample
	latest  map[int64]sample
}

func (w *writer) put(ts time.Time, target, schemaPath string, keys map[string]string, path string, s sample) {
	id := rows.SeriesID(target, path)
	if _, ok := w.series[id]; !ok {
		w.series[id] = seriesRow{id: id, target: target, path: path, schemaPth: schemaPath, keys: keys}
		w.order = append(w.order, id)
	}
	s.ts, s.series = ts, id
	w.samples = append(w.samples, s)
	w.latest[id] = s
}

func i64(v int64) *int64    { return &v }
func num(v string) *string  { return &v }
func text(v string) *string { return &v }

func (w *writer) queueLeaf(ts time.Time, q Queue, leaf string, s sample) {
	keys := map[string]string{"name": q.Interface, "id": fmt.Sprint(q.ID)}
	base := queueState
	if len(leaf) > 7 && leaf[:7] == "config/" {
		base, leaf = queueConf, leaf[7:]
	}
	path := fmt.Sprintf("/lhcnp/interfaces/interface[name=%s]/queues/queue[id=%d]/%s%s", q.Interface, q.ID,
		base[len("/lhcnp/interfaces/interface/queues/queue/"):], leaf)
	w.put(ts, q.Target, base+leaf, keys, path, s)
}

func (w *writer) ifLeaf(ts time.Time, q Queue, leaf string, s sample) {
	path := fmt.Sprintf("/lhcnp/interfaces/interface[name=%s]/state/%s", q.Interface, leaf)
	w.put(ts, q.Target, ifState+leaf, map[string]string{"name": q.Interface}, path, s)
}

func (w *writer) flowLeaf(ts time.Time, target string, flow int, leaf string, s sample) {
	keys := map[string]string{
		"source-address": fmt.Sprintf("2001:db8::%d", 10+flow), "destination-address": "2001:db8::100",
		"source-qp": fmt.Sprint(100 + flow), "destination-qp": "200",
	}
	path := fmt.Sprintf("/lhcnp/flow-table/flows/flow[source-address=%s][destination-address=%s][source-qp=%s][destination-qp=%s]/state/%s",
		keys["source-address"], keys["destination-address"], keys["source-qp"], keys["destination-qp"], leaf)
	w.put(ts, target, flowState+leaf, keys, path, s)
}

// Fill writes seconds seconds of telemetry, one sample a second per leaf,
// starting at start, for Congested and Quiet, and one tuner decision on
// Congested half-way that halves its alpha (and so its K_max).
func Fill(ctx context.Context, db DB, start time.Time, seconds int) (Fixture, error) {
	start = start.Truncate(time.Second)
	w := &writer{series: map[int64]seriesRow{}, latest: map[int64]sample{}}
	decisionAt := seconds / 2
	fx := Fixture{Start: start, End: start.Add(time.Duration(seconds-1) * time.Second),
		Decision:       start.Add(time.Duration(decisionAt)*time.Second + 500*time.Millisecond),
		DecisionReason: "kmax: queue above K_max for 3 windows; alpha 0.5 -> 0.25",
		// Judged better: the judge window's objective under the one
		// expected without the change.
		DecisionInputs: tuner.Inputs{Samples: 3, Rule: "kmax", Direction: "tighten",
			Judgement: &tuner.Judgement{Keep: true, ObjectiveBefore: 1.84, ObjectiveAfter: 1.21}}}
	const portBitsPerSec = 100_000_000_000
	var bytes, notify, reduce, pause, resume [2]int64
	for s := 0; s < seconds; s++ {
		ts := start.Add(time.Duration(s) * time.Second)
		for qi, q := range []Queue{Congested, Quiet} {
			alpha, kmaxBytes := "0.5", int64(1_250_000)
			if qi == 0 && s > decisionAt {
				alpha, kmaxBytes = "0.25", 625_000
			}
			depth := int64(2_000 + 37*s)
			if qi == 0 {
				// A sawtooth that rises above K_max and is cut back.
				depth = int64(200_000 + (s%12)*120_000)
			}
			growth := int64(120_000)
			if qi == 1 || s%12 == 11 {
				growth = -40_000
			}
			bytes[qi] += portBitsPerSec / 8 * int64(90-qi*60) / 100
			if depth > kmaxBytes {
				notify[qi] += 40
				reduce[qi] += 12
			}
			if depth > 2*kmaxBytes/3*2 {
				pause[qi]++
			}
			if s%12 == 11 {
				resume[qi] += 3
			}
			w.queueLeaf(ts, q, "queue-depth", sample{vInt: i64(depth)})
			w.queueLeaf(ts, q, "peak-queue-depth", sample{vInt: i64(depth + 10_000)})
			w.queueLeaf(ts, q, "effective-kmax", sample{vInt: i64(kmaxBytes)})
			w.queueLeaf(ts, q, "effective-kmin", sample{vInt: i64(kmaxBytes / 5)})
			w.queueLeaf(ts, q, "queue-growth-rate", sample{vInt: i64(growth)})
			w.queueLeaf(ts, q, "ecn-marking-rate", sample{vNum: num(fmt.Sprintf("%d.%02d", min(depth*100/(kmaxBytes+1), 100), s%100))})
			w.queueLeaf(ts, q, "congestion-level", sample{vInt: i64(min(depth*15/(kmaxBytes*2), 15))})
			w.queueLeaf(ts, q, "alpha", sample{vNum: num(alpha)})
			w.queueLeaf(ts, q, "kmax-mode", sample{vText: text("BDP_ADAPTIVE")})
			w.queueLeaf(ts, q, "k-base", sample{vInt: i64(2_500_000)})
			w.queueLeaf(ts, q, "v-growth", sample{vInt: i64(1_000_000)})
			w.queueLeaf(ts, q, "counters/bytes", sample{vInt: i64(bytes[qi])})
			w.queueLeaf(ts, q, "counters/cnp-notify-sent", sample{vInt: i64(notify[qi])})
			w.queueLeaf(ts, q, "counters/cnp-rate-reduce-sent", sample{vInt: i64(reduce[qi])})
			w.queueLeaf(ts, q, "counters/cnp-pause-sent", sample{vInt: i64(pause[qi])})
			w.queueLeaf(ts, q, "counters/cnp-resume-sent", sample{vInt: i64(resume[qi])})
			w.queueLeaf(ts, q, "counters/dropped-packets", sample{vInt: i64(int64(s / 20))})
			w.queueLeaf(ts, q, "counters/pfc-pause-frames", sample{vInt: i64(int64(s / 7))})
			w.queueLeaf(ts, q, "config/alpha", sample{vNum: num(alpha)})
			w.ifLeaf(ts, q, "effective-port-rate", sample{vInt: i64(portBitsPerSec)})
			w.ifLeaf(ts, q, "effective-rtt-est", sample{vInt: i64(20_000)})
			if qi == 0 { // the quiet port's buffer is not limited: no leaf
				w.ifLeaf(ts, q, "buffer-size", sample{vInt: i64(BufferBytes)})
			}
			for f := 0; f < 2; f++ {
				w.flowLeaf(ts, q.Target, f, "egress-interface", sample{vText: text(q.Interface)})
				w.flowLeaf(ts, q.Target, f, "egress-queue", sample{vInt: i64(int64(q.ID))})
				w.flowLeaf(ts, q.Target, f, "arrival-rate", sample{vInt: i64(int64(40_000_000_000 + f*5_000_000_000 - qi*30_000_000_000))})
			}
		}
	}
	fx.Samples = len(w.samples)
	return fx, w.write(ctx, db, fx)
}

func (w *writer) write(ctx context.Context, db DB, fx Fixture) error {
	const batchID = 1
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	for _, id := range w.order {
		s := w.series[id]
		keys, _ := json.Marshal(s.keys)
		if _, err := tx.Exec(ctx, `INSERT INTO series (id, target, path, schema_path, keys) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT DO NOTHING`, s.id, s.target, s.path, s.schemaPth, keys); err != nil {
			return fmt.Errorf("series: %w", err)
		}
	}
	rows := make([][]any, len(w.samples))
	for i, s := range w.samples {
		rows[i] = []any{s.ts, s.series, s.vInt, s.vNum, s.vText, s.flags, int64(batchID)}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"samples"},
		[]string{"ts", "series_id", "v_int", "v_num", "v_text", "flags", "batch_id"}, pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("samples: %w", err)
	}
	for _, id := range w.order {
		s := w.latest[id]
		if _, err := tx.Exec(ctx, `INSERT INTO latest (series_id, ts, v_int, v_num, v_text, flags) VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (series_id) DO UPDATE SET ts = EXCLUDED.ts, v_int = EXCLUDED.v_int, v_num = EXCLUDED.v_num,
			v_text = EXCLUDED.v_text, flags = EXCLUDED.flags`, id, s.ts, s.vInt, s.vNum, s.vText, s.flags); err != nil {
			return fmt.Errorf("latest: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO ingest_ledger (batch_id, collector, target, epoch, rows, first_ts, last_ts)
		VALUES ($1, 'labtest', $2, 1, $3, $4, $5)`, batchID, Congested.Target, len(w.samples), fx.Start, fx.End); err != nil {
		return fmt.Errorf("ingest_ledger: %w", err)
	}
	inputs, err := json.Marshal(fx.DecisionInputs)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO tuner_actions (ts, target, interface, queue, inputs, reason, before, after, outcome, dry_run)
		VALUES ($1, $2, $3, $4, $6, $5,
		        '{"kmax_mode": "BDP_ADAPTIVE", "alpha": 0.5, "v_growth_bytes_per_second": 1000000}',
		        '{"kmax_mode": "BDP_ADAPTIVE", "alpha": 0.25, "v_growth_bytes_per_second": 1000000}',
		        'confirmed', false)`,
		fx.Decision, Congested.Target, Congested.Interface, Congested.ID, fx.DecisionReason, inputs); err != nil {
		return fmt.Errorf("tuner_actions: %w", err)
	}
	return tx.Commit(ctx)
}
