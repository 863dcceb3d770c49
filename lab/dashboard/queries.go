package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Schema paths the dashboard reads besides the views (docs/collector.md).
const (
	alphaPath          = "/lhcnp/interfaces/interface/queues/queue/state/alpha"
	vGrowthPath        = "/lhcnp/interfaces/interface/queues/queue/state/v-growth"
	kmaxPath           = "/lhcnp/interfaces/interface/queues/queue/state/kmax"
	overloadCutPath    = "/lhcnp/interfaces/interface/queues/queue/state/overload-cut"
	flowArrivalPath    = "/lhcnp/flow-table/flows/flow/state/arrival-rate"
	flowEgressIfPath   = "/lhcnp/flow-table/flows/flow/state/egress-interface"
	flowEgressQueuePth = "/lhcnp/flow-table/flows/flow/state/egress-queue"
)

// tunedLeaf is one of a queue's leaves the tuner changes (and an operator
// may): its setting's name in ConfigChange, its state path, and its key in
// tuner_actions' before and after (docs/tuner.md "tuner_actions").
type tunedLeaf struct {
	setting, path, key string
	// flag: a boolean leaf, 1 for true and 0 for false; the tuner's JSON
	// leaves it out when false (overload_cut).
	flag bool
}

// tunedLeaves are every leaf the tuner tunes, in the order a change of
// several at one instant is listed: alpha, V_growth, the explicit kmax
// (a switch publishes it only when set) and overload-cut (rule pinned).
var tunedLeaves = []tunedLeaf{
	{setting: "alpha", path: alphaPath, key: "alpha"},
	{setting: "v_growth", path: vGrowthPath, key: "v_growth_bytes_per_second"},
	{setting: "kmax", path: kmaxPath, key: "kmax_bytes"},
	{setting: "overload_cut", path: overloadCutPath, key: "overload_cut", flag: true},
}

// Actions are the Long-haul CNP actions, in the order the page shows them
// (the YANG cnp-action names, as notifications_per_second spells them).
var Actions = [...]string{"NOTIFY", "RATE_REDUCE", "PAUSE", "RESUME"}

// QueueSummary is one row of queue_latest.
type QueueSummary struct {
	Target               string   `json:"target"`
	Interface            string   `json:"interface"`
	Queue                int      `json:"queue"`
	Time                 float64  `json:"t"` // Unix seconds
	QueueDepthBytes      *float64 `json:"queue_depth_bytes"`
	PeakQueueDepthBytes  *float64 `json:"peak_queue_depth_bytes"`
	KMaxBytes            *float64 `json:"kmax_bytes"`
	KMinBytes            *float64 `json:"kmin_bytes"`
	GrowthBytesPerSecond *float64 `json:"growth_rate_bytes_per_second"`
	ECNMarkingPercent    *float64 `json:"ecn_marking_rate_percent"`
	CongestionLevel      *float64 `json:"congestion_level"`
	Alpha                *float64 `json:"alpha"`
	Notifications        *float64 `json:"notifications"` // sum of the cnp-*-sent counters
	PortRateBitsPerSec   *float64 `json:"port_rate_bps"`
	// BufferBytes is the port's egress buffer (the interface's
	// buffer-size leaf), which the tuner keeps a lifted K_max under a
	// share of; nil when the switch reports none.
	BufferBytes *float64 `json:"buffer_bytes"`
	// OverloadCut is the queue's overload-cut option as the switch runs
	// it (the state/overload-cut leaf in queue_latest.state), which the tuner's
	// rule pinned switches; nil when the switch does not publish it.
	OverloadCut *bool `json:"overload_cut"`
	// Held: the tuner leaves the queue alone until then (an operator's
	// change or hold); nil when it tunes it.
	Held *Held `json:"held"`
}

// TunerAction is one row of tuner_actions.
type TunerAction struct {
	ID        int64   `json:"id"`
	Time      float64 `json:"t"` // Unix seconds
	Target    string  `json:"target"`
	Interface *string `json:"interface"`
	Queue     *int    `json:"queue"`
	Reason    *string `json:"reason"`
	// Rule is the rule that decided (the reason's first word: the tuner
	// writes "rule: why"); "pinned" is a change of overload-cut.
	Rule string `json:"rule"`
	// ReasonText is Reason for a reader: rounded durations and sizes with
	// units, the tuner's keys in words (ReadableReason).
	ReasonText *string         `json:"reason_text"`
	Outcome    string          `json:"outcome"`
	DryRun     bool            `json:"dry_run"`
	Before     json.RawMessage `json:"before"`
	After      json.RawMessage `json:"after"`
	Error      *string         `json:"error"`
	// Direction is the decision's (tighten, loosen or hold; for a hold,
	// the direction of the rule that held it back); "" on an operator's
	// row and on rows written before the tuner recorded it.
	Direction string `json:"direction,omitempty"`
	// Judgement is the change's judgement (tuner.Judgement), null when
	// the change was not judged (a hold, a change refused, lost, or
	// undone before its judge window).
	Judgement *Judgement `json:"judgement"`
	// HoldUntil (Unix seconds) is set on an operator's row (outcome
	// operator: a change the tuner did not make, a hold, a release): the
	// tuner leaves the queue alone until then.
	HoldUntil *float64 `json:"hold_until"`
}

// Held says that the tuner leaves a queue alone, and until when: the
// queue's newest operator row (by time, then id), as the tuner reads it
// (PGRecorder.OperatorHolds), while its hold_until is ahead of the
// database's clock, however old the row (a change is held for
// operator_hold, 15 minutes, longer than the page's window).
type Held struct {
	Time  float64 `json:"t"`     // Unix seconds: the operator row's
	Until float64 `json:"until"` // Unix seconds
	// Rule is the row's: "operator" (a change the tuner did not make),
	// "operator-hold" (lhcnp tuner hold).
	Rule    string `json:"rule"`
	TunerID int64  `json:"tuner_id"`
}

// heldQueues reads the holds of the queues the where clause selects
// (args its arguments), by target, interface and queue.
func heldQueues(ctx context.Context, db Querier, where string, args ...any) (map[[3]string]Held, error) {
	rows, err := db.Query(ctx, `
		SELECT target, interface, queue::text, id, extract(epoch FROM ts)::float8, extract(epoch FROM hold_until)::float8,
		       split_part(COALESCE(reason, ''), ':', 1)
		FROM (
			SELECT DISTINCT ON (target, interface, queue) target, interface, queue, id, ts, hold_until, reason
			FROM tuner_actions
			WHERE outcome = 'operator' AND interface IS NOT NULL AND queue IS NOT NULL `+where+`
			ORDER BY target, interface, queue, ts DESC, id DESC) newest
		WHERE hold_until > now()`, args...)
	if err != nil {
		return nil, fmt.Errorf("tuner_actions: holds: %w", err)
	}
	defer rows.Close()
	out := map[[3]string]Held{}
	for rows.Next() {
		var k [3]string
		var h Held
		if err := rows.Scan(&k[0], &k[1], &k[2], &h.TunerID, &h.Time, &h.Until, &h.Rule); err != nil {
			return nil, fmt.Errorf("tuner_actions: holds: %w", err)
		}
		out[k] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("tuner_actions: holds: %w", err)
	}
	return out, nil
}

// heldKey is a queue's key in heldQueues' map.
func heldKey(target, iface string, queue int) [3]string {
	return [3]string{target, iface, strconv.Itoa(queue)}
}

// Judgement is a change's judgement as tuner_actions records it in its
// inputs: Keep when the judge window's objective was no worse than the
// one expected without the change (ObjectiveBefore), ObjectiveAfter the
// judge window's. NotCompared: kept without weighing the two (rule
// start's change), so kept, not better.
type Judgement struct {
	Keep            bool    `json:"keep"`
	ObjectiveBefore float64 `json:"objective_before"`
	ObjectiveAfter  float64 `json:"objective_after"`
	NotCompared     bool    `json:"not_compared,omitempty"`
}

// QueuesResponse is GET /api/queues.
type QueuesResponse struct {
	Queues []QueueSummary `json:"queues"`
	Tuner  []TunerAction  `json:"tuner"` // the newest decisions of every switch, newest first
}

// Queues reads every queue's latest state and the tuner's last decisions.
func Queues(ctx context.Context, db Querier) (QueuesResponse, error) {
	out := QueuesResponse{Queues: []QueueSummary{}}
	rows, err := db.Query(ctx, `
		SELECT target, interface, queue, extract(epoch FROM ts)::float8,
		       queue_depth_bytes::float8, peak_queue_depth_bytes::float8, kmax_bytes::float8, kmin_bytes::float8,
		       growth_rate_bytes_per_second::float8, ecn_marking_rate_percent::float8, congestion_level::float8,
		       alpha::float8,
		       (COALESCE(cnp_notify_sent, 0) + COALESCE(cnp_pause_sent, 0) + COALESCE(cnp_rate_reduce_sent, 0) + COALESCE(cnp_resume_sent, 0))::float8,
		       port_rate_bps::float8, buffer_bytes::float8, (state ->> 'overload-cut')::boolean
		FROM queue_latest
		WHERE interface IS NOT NULL AND queue IS NOT NULL
		ORDER BY target, interface, queue`)
	if err != nil {
		return out, fmt.Errorf("queue_latest: %w", err)
	}
	out.Queues, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (QueueSummary, error) {
		var q QueueSummary
		err := r.Scan(&q.Target, &q.Interface, &q.Queue, &q.Time, &q.QueueDepthBytes, &q.PeakQueueDepthBytes,
			&q.KMaxBytes, &q.KMinBytes, &q.GrowthBytesPerSecond, &q.ECNMarkingPercent, &q.CongestionLevel,
			&q.Alpha, &q.Notifications, &q.PortRateBitsPerSec, &q.BufferBytes, &q.OverloadCut)
		return q, err
	})
	if err != nil {
		return out, fmt.Errorf("queue_latest: %w", err)
	}
	held, err := heldQueues(ctx, db, "")
	if err != nil {
		return out, err
	}
	for i, q := range out.Queues {
		if h, ok := held[heldKey(q.Target, q.Interface, q.Queue)]; ok {
			out.Queues[i].Held = &h
		}
	}
	out.Tuner, err = tunerActions(ctx, db, `ORDER BY ts DESC, id DESC LIMIT 20`)
	return out, err
}

func tunerActions(ctx context.Context, db Querier, where string, args ...any) ([]TunerAction, error) {
	rows, err := db.Query(ctx, `
		SELECT id, extract(epoch FROM ts)::float8, target, interface, queue, reason, outcome, dry_run,
		       COALESCE(before, 'null'::jsonb), COALESCE(after, 'null'::jsonb), error,
		       extract(epoch FROM hold_until)::float8, COALESCE(inputs ->> 'direction', ''),
		       (inputs -> 'judgement' ->> 'keep')::boolean,
		       (inputs -> 'judgement' ->> 'objective_before')::float8,
		       (inputs -> 'judgement' ->> 'objective_after')::float8,
		       COALESCE((inputs -> 'judgement' ->> 'not_compared')::boolean, false)
		FROM tuner_actions `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("tuner_actions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (TunerAction, error) {
		var a TunerAction
		var before, after []byte
		var keep *bool
		var jBefore, jAfter *float64
		var notCompared bool
		err := r.Scan(&a.ID, &a.Time, &a.Target, &a.Interface, &a.Queue, &a.Reason, &a.Outcome, &a.DryRun,
			&before, &after, &a.Error, &a.HoldUntil, &a.Direction, &keep, &jBefore, &jAfter, &notCompared)
		a.Before, a.After = before, after
		if keep != nil && jBefore != nil && jAfter != nil {
			a.Judgement = &Judgement{Keep: *keep, ObjectiveBefore: *jBefore, ObjectiveAfter: *jAfter, NotCompared: notCompared}
		}
		if a.Reason != nil {
			text := ReadableReason(*a.Reason)
			a.ReasonText = &text
			if rule, _, ok := strings.Cut(*a.Reason, ":"); ok && !strings.ContainsAny(rule, " \t") {
				a.Rule = rule
			}
		}
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("tuner_actions: %w", err)
	}
	return out, nil
}

// QueueRequest names one queue and how far back to read.
type QueueRequest struct {
	Target    string
	Interface string
	Queue     int
	Window    time.Duration
}

// Columns is a set of series sharing one time axis, in uPlot's layout: T in
// Unix seconds, each named column as long as T (null where unknown).
type Columns struct {
	T      []float64             `json:"t"`
	Values map[string][]*float64 `json:"values"`
}

func newColumns(names ...string) Columns {
	c := Columns{T: []float64{}, Values: map[string][]*float64{}}
	for _, n := range names {
		c.Values[n] = []*float64{}
	}
	return c
}

// QueueResponse is GET /api/queue: one queue's time series over the window.
type QueueResponse struct {
	Target    string  `json:"target"`
	Interface string  `json:"interface"`
	Queue     int     `json:"queue"`
	From      float64 `json:"from"` // Unix seconds
	To        float64 `json:"to"`
	// Congestion: depth, kmin, kmax (bytes), growth (bytes/s), emr (percent).
	Congestion Columns `json:"congestion"`
	// Rates: the queue's output (queue_bps) and its port's rate (port_bps),
	// bits per second.
	Rates Columns `json:"rates"`
	// Flows: the summed arrival-rate (bits per second) of the flows the
	// switch sends through this queue, and how many there are.
	Flows Columns `json:"flows"`
	// Notifications: Long-haul CNPs per second by action.
	Notifications Columns `json:"notifications"`
	// Alpha: the queue's alpha as reported: its value at the window's
	// start (the switch reports a change, not every sample), then every
	// change.
	Alpha Columns       `json:"alpha"`
	Tuner []TunerAction `json:"tuner"`
	// Changes are the changes in the window of every leaf the tuner
	// tunes (alpha, v_growth, kmax, overload_cut), each the tuner's (an
	// applied decision that set this value; Rule names its rule), the
	// switch's rollback of one, or an operator's (none did; the tuner's
	// operator row for it, when it saw it, gives how long it leaves the
	// queue alone); and the operators' holds and releases of the queue
	// the tuner recorded. In time order.
	Changes []ConfigChange `json:"changes"`
	// Held: the tuner leaves the queue alone until then, whether the
	// operator's row is in the window or not; nil when it tunes it.
	Held *Held `json:"held"`
}

// ConfigChange is a configuration value that changed, and who changed it;
// or an operator's hold or release of the queue's tuning (no value).
type ConfigChange struct {
	Time float64 `json:"t"` // Unix seconds: the first sample of the new value; a hold's or release's row
	// Setting is the leaf: "alpha", "v_growth" (bytes per second),
	// "kmax" (the explicit K_max, bytes) or "overload_cut" (1 on, 0 off);
	// "" for a hold or a release.
	Setting string   `json:"setting"`
	Before  *float64 `json:"before"`
	After   *float64 `json:"after"`
	// By is "tuner", "rollback" (the switch undid a tuner's change),
	// "operator", "hold" or "release" (lhcnp tuner hold / release).
	By string `json:"by"`
	// Rule is the tuner's rule that made the change (By tuner) or whose
	// change was rolled back (rollback); "operator" for an operator's
	// change the tuner saw; "operator-hold", "operator-release".
	Rule    string `json:"rule,omitempty"`
	TunerID *int64 `json:"tuner_id,omitempty"` // the decision, when By is "tuner"; the tuner's operator row, when it saw an operator's
	// HoldUntil (Unix seconds): the operator's change or hold held the
	// queue's tuning until then (the tuner's operator row).
	HoldUntil *float64 `json:"hold_until,omitempty"`
}

// QueueSeries reads one queue's series. The window ends at the newest sample
// of the queue's switch (so a stopped lab still shows its last minutes), or
// now when there is none.
func QueueSeries(ctx context.Context, db Querier, q QueueRequest) (QueueResponse, error) {
	out := QueueResponse{Target: q.Target, Interface: q.Interface, Queue: q.Queue}
	var to time.Time
	err := db.QueryRow(ctx, `
		SELECT COALESCE(max(l.ts), now()) FROM latest l JOIN series s ON s.id = l.series_id WHERE s.target = $1`,
		q.Target).Scan(&to)
	if err != nil {
		return out, fmt.Errorf("latest: %w", err)
	}
	from := to.Add(-q.Window)
	out.From, out.To = unix(from), unix(to)

	args := []any{q.Target, q.Interface, q.Queue, from}
	if out.Congestion, err = readColumns(ctx, db, []string{"depth", "kmin", "kmax", "growth", "emr"}, `
		SELECT extract(epoch FROM ts)::float8, queue_depth_bytes::float8, kmin_bytes::float8, kmax_bytes::float8,
		       growth_rate_bytes_per_second::float8, ecn_marking_rate_percent::float8
		FROM queue_congestion
		WHERE target = $1 AND interface = $2 AND queue = $3 AND ts > $4
		ORDER BY ts`, args...); err != nil {
		return out, fmt.Errorf("queue_congestion: %w", err)
	}
	if out.Rates, err = readColumns(ctx, db, []string{"queue_bps", "port_bps"}, `
		SELECT extract(epoch FROM ts)::float8, bits_per_simulated_second, port_rate_bps::float8
		FROM queue_utilisation
		WHERE target = $1 AND interface = $2 AND queue = $3 AND ts > $4
		ORDER BY ts`, args...); err != nil {
		return out, fmt.Errorf("queue_utilisation: %w", err)
	}
	if out.Flows, err = readColumns(ctx, db, []string{"arrival_bps", "flows"}, `
		WITH f AS (
		    SELECT ei.keys
		    FROM latest li JOIN series ei ON ei.id = li.series_id
		    WHERE ei.target = $1 AND ei.schema_path = '`+flowEgressIfPath+`' AND li.v_text = $2
		      AND EXISTS (SELECT 1 FROM latest lq JOIN series eq ON eq.id = lq.series_id
		                  WHERE eq.target = $1 AND eq.keys = ei.keys AND eq.schema_path = '`+flowEgressQueuePth+`'
		                    AND COALESCE(lq.v_int, lq.v_num) = $3)
		), per_flow AS (
		    SELECT date_trunc('second', v.ts) AS second, v.keys, avg(v.value_num) AS bps
		    FROM series_values v JOIN f ON f.keys = v.keys
		    WHERE v.target = $1 AND v.schema_path = '`+flowArrivalPath+`' AND v.ts > $4 AND NOT v.deleted
		    GROUP BY 1, 2
		)
		SELECT extract(epoch FROM second)::float8, sum(bps)::float8, count(*)::float8
		FROM per_flow GROUP BY second ORDER BY second`, args...); err != nil {
		return out, fmt.Errorf("flow arrival rates: %w", err)
	}
	if out.Notifications, err = readNotifications(ctx, db, args...); err != nil {
		return out, fmt.Errorf("notifications_per_second: %w", err)
	}
	// Decisions for this queue or for the whole switch; no upper bound, so a
	// decision taken after the switch's newest sample still shows.
	if out.Tuner, err = tunerActions(ctx, db, `
		WHERE target = $1 AND (interface IS NULL OR interface = $2) AND (queue IS NULL OR queue = $3) AND ts > $4
		ORDER BY ts, id`, args...); err != nil {
		return out, err
	}
	out.Changes = []ConfigChange{}
	for _, leaf := range tunedLeaves {
		c, err := readLeaf(ctx, db, leaf, args...)
		if err != nil {
			return out, err
		}
		if leaf.path == alphaPath {
			out.Alpha = c
		}
		out.Changes = append(out.Changes, attribute(leaf, c.T, c.Values["v"], out.Tuner)...)
	}
	out.Alpha.Values = map[string][]*float64{"alpha": out.Alpha.Values["v"]}
	out.Changes = append(out.Changes, holds(out.Tuner)...)
	sort.SliceStable(out.Changes, func(i, j int) bool { return out.Changes[i].Time < out.Changes[j].Time })
	held, err := heldQueues(ctx, db, `AND target = $1 AND interface = $2 AND queue = $3`, q.Target, q.Interface, q.Queue)
	if err != nil {
		return out, err
	}
	if h, ok := held[heldKey(q.Target, q.Interface, q.Queue)]; ok {
		out.Held = &h
	}
	return out, nil
}

// readLeaf reads one tuned leaf of the queue (args: target, interface,
// queue, the window's start) as a column "v": its value at the window's
// start (the switch reports a change, not every sample), then every
// change; a boolean as 1 or 0.
func readLeaf(ctx context.Context, db Querier, leaf tunedLeaf, args ...any) (Columns, error) {
	c, err := readColumns(ctx, db, []string{"v"}, `
		WITH a AS (
		    SELECT ts, COALESCE(value_num, CASE value_text WHEN 'true' THEN 1 WHEN 'false' THEN 0 END) AS v, deleted
		    FROM series_values
		    WHERE target = $1 AND keys = jsonb_build_object('name', $2::text, 'id', ($3::integer)::text)
		      AND schema_path = $5
		)
		(SELECT extract(epoch FROM $4::timestamptz)::float8, v::float8
		 FROM a WHERE ts <= $4 ORDER BY ts DESC LIMIT 1)
		UNION ALL
		(SELECT extract(epoch FROM ts)::float8, v::float8 FROM a WHERE ts > $4 AND NOT deleted ORDER BY ts)`,
		append(args[:4:4], leaf.path)...)
	if err != nil {
		return c, fmt.Errorf("%s: %w", leaf.setting, err)
	}
	return c, nil
}

// holds lists the operators' holds and releases of the queue the tuner
// recorded (lhcnp tuner hold / release: operator rows without settings).
func holds(acts []TunerAction) []ConfigChange {
	out := []ConfigChange{}
	for _, a := range acts {
		by := map[string]string{"operator-hold": "hold", "operator-release": "release"}[a.Rule]
		if a.Outcome != "operator" || by == "" {
			continue
		}
		id := a.ID
		c := ConfigChange{Time: a.Time, By: by, Rule: a.Rule, TunerID: &id}
		if by == "hold" {
			c.HoldUntil = a.HoldUntil
		}
		out = append(out, c)
	}
	return out
}

// attributionSlack is how long after a value first shows the decision that
// set it may be recorded (the tuner records a row once its Set returns).
const attributionSlack = 5.0 // seconds

// attribute lists the changes of one leaf's samples (t, v) and whose
// they are: the tuner's when one of its applied decisions (pushed,
// confirmed or rolled back; not a dry run) changed that leaf to the new
// value at most attributionSlack after it first showed and after the
// previous change; a rollback when the switch returned to the value a
// rolled-back decision had replaced; else an operator's, matched with the
// first operator row the tuner recorded that changed the leaf to that
// value since the previous change (the tuner sees a change a period or so
// after it shows), if any. A decision is matched once for each. Only a
// decision that changed the leaf explains a change of it: every decision
// carries every setting, and one of another rule leaves overload_cut off
// in its JSON (the operator's switching it off is not that decision's).
func attribute(leaf tunedLeaf, t []float64, v []*float64, acts []TunerAction) []ConfigChange {
	out := []ConfigChange{}
	usedAfter, usedBefore := map[int64]bool{}, map[int64]bool{}
	value := func(raw json.RawMessage) (float64, bool) {
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil || m == nil {
			return 0, false
		}
		if leaf.flag {
			on, _ := m[leaf.key].(bool)
			if on {
				return 1, true
			}
			return 0, true
		}
		x, ok := m[leaf.key].(float64)
		return x, ok
	}
	// changed says a decision moved the leaf, and from and to what.
	changed := func(a TunerAction) (before, after float64, ok bool) {
		b, okB := value(a.Before)
		f, okA := value(a.After)
		return b, f, okA && (!okB || b != f)
	}
	var prev *float64
	prevT := math.Inf(-1)
	for i := range t {
		if v[i] == nil {
			continue
		}
		if prev == nil || *prev == *v[i] {
			if prev == nil {
				prevT = t[i]
			}
			prev = v[i]
			continue
		}
		c := ConfigChange{Time: t[i], Setting: leaf.setting, Before: prev, After: v[i], By: "operator"}
		for _, a := range acts {
			applied := a.Outcome == "pushed" || a.Outcome == "confirmed" || a.Outcome == "rolled-back"
			if a.DryRun || !applied || a.Time > t[i]+attributionSlack {
				continue
			}
			b, f, ok := changed(a)
			if !ok {
				continue
			}
			id := a.ID
			if f == *v[i] && !usedAfter[id] && a.Time >= prevT {
				c.By, c.Rule, c.TunerID = "tuner", a.Rule, &id
				usedAfter[id] = true
				break
			}
			if b == *v[i] && a.Outcome == "rolled-back" && usedAfter[id] && !usedBefore[id] {
				c.By, c.Rule, c.TunerID = "rollback", a.Rule, &id
				usedBefore[id] = true
				break
			}
		}
		if c.By == "operator" {
			for _, a := range acts {
				id := a.ID
				if _, f, ok := changed(a); ok && a.Outcome == "operator" && f == *v[i] && !usedAfter[id] && a.Time >= prevT {
					c.Rule, c.TunerID, c.HoldUntil = a.Rule, &id, a.HoldUntil
					usedAfter[id] = true
					break
				}
			}
		}
		out = append(out, c)
		prev, prevT = v[i], t[i]
	}
	return out
}

// readColumns runs a query whose first column is the time (Unix seconds) and
// the others the named values, in order.
func readColumns(ctx context.Context, db Querier, names []string, sql string, args ...any) (Columns, error) {
	c := newColumns(names...)
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return c, err
	}
	defer rows.Close()
	dest := make([]any, 1+len(names))
	var t float64
	dest[0] = &t
	vals := make([]*float64, len(names))
	for i := range vals {
		dest[i+1] = &vals[i]
	}
	for rows.Next() {
		for i := range vals {
			vals[i] = nil
		}
		if err := rows.Scan(dest...); err != nil {
			return c, err
		}
		c.T = append(c.T, t)
		for i, n := range names {
			c.Values[n] = append(c.Values[n], vals[i])
		}
	}
	return c, rows.Err()
}

// readNotifications pivots notifications_per_second (one row per second and
// action) into one column per action, per simulated second (the view's
// rate_per_simulated_second); a second without an action's row has zero of
// it.
func readNotifications(ctx context.Context, db Querier, args ...any) (Columns, error) {
	c := newColumns(Actions[:]...)
	rows, err := db.Query(ctx, `
		SELECT extract(epoch FROM second)::float8, action, COALESCE(rate_per_simulated_second, notifications / speed)::float8
		FROM notifications_per_second
		WHERE target = $1 AND interface = $2 AND queue = $3 AND second > $4 AND action IS NOT NULL
		ORDER BY second`, args...)
	if err != nil {
		return c, err
	}
	perSecond := map[float64]map[string]float64{}
	for rows.Next() {
		var t, v float64
		var action string
		if err := rows.Scan(&t, &action, &v); err != nil {
			rows.Close()
			return c, err
		}
		if perSecond[t] == nil {
			perSecond[t] = map[string]float64{}
		}
		perSecond[t][action] += v
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return c, err
	}
	for t := range perSecond {
		c.T = append(c.T, t)
	}
	sort.Float64s(c.T)
	for _, t := range c.T {
		for _, a := range Actions {
			v := perSecond[t][a]
			c.Values[a] = append(c.Values[a], &v)
		}
	}
	return c, nil
}

func unix(t time.Time) float64 { return float64(t.UnixMicro()) / 1e6 }
