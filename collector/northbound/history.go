package northbound

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmi/proto/gnmi_ext"
	"github.com/openconfig/goyang/pkg/yang"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/gnmi/subscribe"
)

// The History extension (openconfig/reference gnmi-history.md 0.1.0),
// answered from the samples and series tables:
//
//   - snapshot_time (mode ONCE): for every stored leaf of the subscribed
//     paths, its last value at or before the instant (a leaf whose last row
//     is a delete is absent; a leaf whose samples retention trimmed, its
//     value from latest if that is at or before the instant, else absent:
//     its value then is unknown), one notification per container and
//     timestamp, then sync_response, and the RPC ends.
//   - range (mode STREAM): unless updates_only, the tree as it was just
//     before start (as a snapshot); then every stored change in the
//     half-open interval [start, end) in time order, deletes as deletes;
//     then sync_response. The stream then stays open, idle, until the
//     client cancels or closes its side (the reference says the server
//     closes it; gnmic re-subscribes a STREAM that ends). An end in the
//     future is served up to now (what is stored when the request arrives).
//
// Errors: another mode, start after end, or a malformed request is
// INVALID_ARGUMENT; a snapshot or a start in the future is UNIMPLEMENTED
// (the reference allows it); a time before the retention horizon (the
// greatest a retention pass applied, retentionHorizon) is OUT_OF_RANGE
// naming it; a subscribed path no
// addressed switch ever stored is NOT_FOUND naming it. Timestamps are
// PostgreSQL's: microseconds.

// historyOf returns the History extension of a request, if any.
func historyOf(req *gnmi.SubscribeRequest) (*gnmi_ext.History, error) {
	var h *gnmi_ext.History
	for _, e := range req.GetExtension() {
		if x := e.GetHistory(); x != nil {
			if h != nil {
				return nil, status.Error(codes.InvalidArgument, "history: the extension is given twice")
			}
			h = x
		}
	}
	return h, nil
}

// series is one stored leaf the request covers.
type series struct {
	id     int64
	target string
	path   *gnmi.Path
	leaf   *schema.Leaf
	parent string // PathString of the container, to group notifications
	name   string // PathString of the leaf: the order of a container's leaves at one instant
	// rank is the series' place in the set ordered by parent, then name:
	// rangeRows orders the rows of one instant by it (an integer: comparing
	// the two strings for every pair of rows made its sort 60 % dearer,
	// docs/gnmi.md).
	rank int
}

// row is one sample.
type row struct {
	ts time.Time
	s  *series
	tv *gnmi.TypedValue // nil: a delete
	// carried: a copy retention made at its horizon (rows.Carried), a
	// starting value and not a change the switch sent.
	carried bool
}

func (s *Server) history(rpc gnmi.GNMI_SubscribeServer, sl *gnmi.SubscriptionList, h *gnmi_ext.History) error {
	ctx := rpc.Context()
	if s.o.pool == nil {
		return status.Error(codes.Unimplemented, "history: this collector has no database to answer from")
	}
	now := s.o.clk.Now()
	var start, end time.Time
	snapshot := false
	switch r := h.GetRequest().(type) {
	case *gnmi_ext.History_SnapshotTime:
		if sl.GetMode() != gnmi.SubscriptionList_ONCE {
			return status.Errorf(codes.InvalidArgument, "history: a snapshot needs mode ONCE, not %v", sl.GetMode())
		}
		start, snapshot = time.Unix(0, r.SnapshotTime), true
		if start.After(now) {
			return status.Errorf(codes.Unimplemented, "history: snapshot time %s is in the future", stamp(start))
		}
	case *gnmi_ext.History_Range:
		if sl.GetMode() != gnmi.SubscriptionList_STREAM {
			return status.Errorf(codes.InvalidArgument, "history: a range needs mode STREAM, not %v", sl.GetMode())
		}
		start, end = time.Unix(0, r.Range.GetStart()), time.Unix(0, r.Range.GetEnd())
		if r.Range.GetStart() > r.Range.GetEnd() {
			return status.Errorf(codes.InvalidArgument, "history: range start %s is after its end %s", stamp(start), stamp(end))
		}
		if start.After(now) {
			return status.Errorf(codes.Unimplemented, "history: range start %s is in the future", stamp(start))
		}
		if end.After(now) {
			end = now
		}
	default:
		return status.Error(codes.InvalidArgument, "history: neither snapshot_time nor range is set")
	}
	what := "range"
	if snapshot {
		what = "snapshot"
	}
	// The request's own faults first: a bad path is INVALID_ARGUMENT
	// whatever its time (it was OUT_OF_RANGE before a time the retention
	// removed).
	pats, err := s.historyPaths(sl)
	if err != nil {
		return err
	}
	if err := s.kept(ctx, start, ""); err != nil {
		return err
	}
	s.between("horizon")
	enc, err := encoderOf(s.sch, sl.GetEncoding())
	if err != nil {
		return err
	}
	set, err := s.historySeries(ctx, sl, pats)
	if err != nil {
		// A pass since the horizon was read may have removed the series
		// too (a trim removes those of leaves deleted before its
		// horizon): that is the retention's answer, not the path's.
		if status.Code(err) == codes.NotFound {
			if kerr := s.kept(ctx, start, what); kerr != nil {
				return kerr
			}
		}
		return err
	}
	origin := sl.GetPrefix().GetOrigin()
	send := func(rows []row) error {
		s.between("send")
		if err := sendRows(rpc, rows, enc, origin); err != nil {
			return err
		}
		s.o.m.historySent(len(rows))
		return nil
	}
	if snapshot || !sl.GetUpdatesOnly() {
		at := start
		if !snapshot {
			at = start.Add(-time.Microsecond) // the tree before the first change of the range
		}
		rows, err := s.snapshotRows(ctx, set, at)
		if err != nil {
			return err
		}
		// Before any of it goes out: a pass since the horizon was read
		// may have removed some of these rows.
		if err := s.kept(ctx, start, what); err != nil {
			return err
		}
		if err := send(rows); err != nil {
			return err
		}
	}
	if snapshot {
		return rpc.Send(syncResponse) // ONCE: the RPC ends here
	}
	s.between("tree")
	if err := s.rangeRows(ctx, set, start, end, send); err != nil {
		return err
	}
	// The range was read in several queries, each seeing what was
	// committed when it began: a pass that committed since the horizon was
	// read removed rows of [start, horizon) that some of them may have
	// missed. Not one snapshot (a REPEATABLE READ transaction) for the
	// whole response: that would keep its partitions locked while a slow
	// client reads, and a pass's DROP of a day, then every writer's
	// INSERT queued behind it, would wait for the client.
	if err := s.kept(ctx, start, what); err != nil {
		return err
	}
	if err := rpc.Send(syncResponse); err != nil {
		return err
	}
	// The range is complete. The stream stays open, idle, until the client
	// cancels or closes its side: a STREAM that ends is re-subscribed by
	// gnmic (every --retry, printing the range again), and gnmic loses the
	// last messages of a stream closed right behind them.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, err := rpc.Recv(); err != nil {
				return
			}
		}
	}()
	select {
	case <-ctx.Done():
	case <-done:
	}
	return nil
}

// retentionHorizon is the greatest horizon a retention pass applied
// (migration 024: lhcnp_maintain's whole days, migrations.Trim's instant),
// before which the samples are removed; zero when no pass has applied one. It
// is what the passes did, not now − db.retention: the days a pass keeps
// begin up to a day earlier, and the lab trims to its own horizon at each
// pass.
func (s *Server) retentionHorizon(ctx context.Context) (time.Time, error) {
	var h pgtype.Timestamptz
	err := s.o.pool.QueryRow(ctx, `SELECT horizon FROM lhcnp_partitioning WHERE parent = 'public.samples'`).Scan(&h)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, status.Errorf(codes.Unavailable, "history: reading the retention horizon: %v", err)
	}
	if !h.Valid {
		return time.Time{}, nil
	}
	return h.Time, nil
}

// kept refuses a start before the retention horizon: OUT_OF_RANGE naming
// it. read names what was read since the horizon was last checked ("" for
// the check before any row): when a pass moved the horizon past start
// meanwhile, the rows read may miss some it removed, so the RPC fails
// rather than ending in a sync_response that looks complete.
//
// Reading the horizon after the rows is enough because a pass's horizon is
// visible no later than its removals: lhcnp_maintain records it in the
// transaction that drops the days, migrations.Trim commits it before it
// deletes.
func (s *Server) kept(ctx context.Context, start time.Time, read string) error {
	horizon, err := s.retentionHorizon(ctx)
	if err != nil {
		return err
	}
	if horizon.IsZero() || !start.Before(horizon) {
		return nil
	}
	if read != "" {
		return status.Errorf(codes.OutOfRange, "history: a retention pass ran while the %s was read: samples are now kept from %s on, after %s (the %s would miss the rows it removed)",
			read, stamp(horizon), stamp(start), read)
	}
	return status.Errorf(codes.OutOfRange, "history: %s is outside the retention: samples are kept from %s on (the retention removed the older ones)",
		stamp(start), stamp(horizon))
}

// between calls the test hook between History's reads (export_test.go).
func (s *Server) between(stage string) {
	if s.o.readHook != nil {
		s.o.readHook(stage)
	}
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// encoderOf returns the value encoder of an encoding, as the switch's
// Subscribe uses.
func encoderOf(sch *schema.Schema, e gnmi.Encoding) (subscribe.ValueEncoder, error) {
	switch e {
	case gnmi.Encoding_PROTO:
		return subscribe.ProtoEncoder, nil
	case gnmi.Encoding_JSON, gnmi.Encoding_JSON_IETF:
		return sch.ValueEncoder(e), nil
	}
	return nil, status.Errorf(codes.Unimplemented, "encoding %v is not supported", e)
}

// seriesSet is the series a request covers, by id.
type seriesSet map[int64]*series

func (set seriesSet) ids() []int64 {
	out := make([]int64, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// historyPaths checks the request as a live Subscribe and Get check it and
// returns its subscriptions' paths, each joined to the prefix.
func (s *Server) historyPaths(sl *gnmi.SubscriptionList) ([]*gnmi.Path, error) {
	// The request is checked as a live Subscribe and Get check it:
	// use_models, the origins (not in both prefix and path, gNMI 2.7) and
	// the deprecated element field, which Join does not read: a path given
	// only in it was the root, and its answer the whole tree.
	if err := service.CheckModels(sl.GetUseModels()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	prefix := sl.GetPrefix()
	if err := schema.CheckOrigin(prefix.GetOrigin()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "prefix: %v", err)
	}
	if err := schema.CheckElement(prefix); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "prefix %s: %v", schema.ErrorPath(prefix), err)
	}
	if len(sl.GetSubscription()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "the subscription list has no subscriptions")
	}
	var pats []*gnmi.Path
	for _, sub := range sl.GetSubscription() {
		if err := schema.CheckPathOrigin(prefix, sub.GetPath()); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "path %s: %v", schema.ErrorPath(sub.GetPath()), err)
		}
		if err := schema.CheckElement(sub.GetPath()); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "path %s: %v", schema.ErrorPath(sub.GetPath()), err)
		}
		full := schema.Normalize(schema.Join(prefix, sub.GetPath()))
		if _, err := s.sch.Resolve(full); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "path %s: %v", schema.ErrorPath(full), err)
		}
		// A snapshot is a ONCE subscription: an interval has no meaning
		// there, and a live ONCE refuses one (gNMI 3.5.1.3).
		if sl.GetMode() == gnmi.SubscriptionList_ONCE {
			if sub.GetSampleInterval() != 0 {
				return nil, status.Errorf(codes.InvalidArgument, "path %s: sample_interval is not allowed in ONCE mode", schema.ErrorPath(full))
			}
			if sub.GetHeartbeatInterval() != 0 {
				return nil, status.Errorf(codes.InvalidArgument, "path %s: heartbeat_interval is not allowed in ONCE mode", schema.ErrorPath(full))
			}
		}
		pats = append(pats, full)
	}
	return pats, nil
}

// historySeries finds the stored series of the addressed switches that
// pats, the request's paths, match. A path matching none is NOT_FOUND.
func (s *Server) historySeries(ctx context.Context, sl *gnmi.SubscriptionList, pats []*gnmi.Path) (seriesSet, error) {
	t := sl.GetPrefix().GetTarget()
	q := `SELECT id, target, path FROM series`
	var args []any
	if t != "" && t != AllTargets {
		q += ` WHERE target = $1`
		args = append(args, t)
	}
	rs, err := s.o.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "history: reading series: %v", err)
	}
	defer rs.Close()
	set := seriesSet{}
	hits := make([]int, len(pats))
	var id int64
	var tgt, ps string
	for rs.Next() {
		if err := rs.Scan(&id, &tgt, &ps); err != nil {
			return nil, status.Errorf(codes.Internal, "history: reading series: %v", err)
		}
		p, err := store.ParsePath(ps)
		if err != nil {
			continue // not a path we wrote
		}
		for i, pat := range pats {
			if _, ok := schema.MatchPrefix(pat, p); !ok {
				continue
			}
			hits[i]++
			leaf, _ := s.sch.LeafAt(p)
			el := p.GetElem()
			set[id] = &series{id: id, target: tgt, path: p, leaf: leaf, name: store.PathString(p),
				parent: tgt + "\x00" + store.PathString(&gnmi.Path{Elem: el[:len(el)-1]})}
			break
		}
	}
	if err := rs.Err(); err != nil {
		return nil, status.Errorf(codes.Unavailable, "history: reading series: %v", err)
	}
	ranked := slices.Collect(maps.Values(set))
	slices.SortFunc(ranked, func(a, b *series) int {
		return cmp.Or(strings.Compare(a.parent, b.parent), strings.Compare(a.name, b.name))
	})
	for i, sr := range ranked {
		sr.rank = i
	}
	for i, n := range hits {
		if n == 0 {
			who := "any switch"
			if t != "" && t != AllTargets {
				who = "target " + strconv.Quote(t)
			}
			return nil, status.Errorf(codes.NotFound, "history: path %s: never stored for %s", schema.ErrorPath(pats[i]), who)
		}
	}
	return set, nil
}

const sampleCols = `ts, series_id, v_int, v_float, v_num::text, v_bool, v_text, flags`

// snapshotRows returns the last row at or before at of every series that
// is not a delete, ordered by switch and path.
//
// A series with no sample at or before at may still have had a value then:
// the collector stores only changes, so a leaf that has not changed for
// longer than the retention has had its samples trimmed, and only `latest`
// still holds its value. When latest.ts <= at, the value has not changed
// since, so it was the value at at too. When latest is after at and no
// sample is left at or before at, the value at at is unknown (trimmed, or
// the leaf did not exist yet) and the series is left out, rather than
// served with a value it may not have had.
//
// A carried row (flags bit 3) is the value a series had before its
// timestamp, a retention horizon: it counts for an instant up to a
// microsecond before it too, so that a range starting at the horizon (the
// instant OUT_OF_RANGE names), whose tree is read a microsecond before its
// start, has the carried leaves' values, where their older samples are
// gone.
func (s *Server) snapshotRows(ctx context.Context, set seriesSet, at time.Time) ([]row, error) {
	ids := set.ids()
	rs, err := s.o.pool.Query(ctx, `SELECT DISTINCT ON (series_id) `+sampleCols+`
		FROM samples WHERE series_id = ANY($1) AND (ts <= $2 OR ts <= $3 AND flags & 8 = 8)
		ORDER BY series_id, ts DESC, batch_id DESC`, ids, at, at.Add(time.Microsecond))
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "history: reading samples: %v", err)
	}
	var out []row
	found := make(map[int64]bool, len(ids))
	keep := func(r row) error {
		found[r.s.id] = true
		if r.tv != nil {
			out = append(out, r)
		}
		return nil
	}
	if err := scanRows(rs, set, keep); err != nil {
		return nil, err
	}
	missing := slices.DeleteFunc(ids, func(id int64) bool { return found[id] })
	if len(missing) > 0 {
		rs, err := s.o.pool.Query(ctx, `SELECT `+sampleCols+`
			FROM latest WHERE series_id = ANY($1) AND ts <= $2`, missing, at)
		if err != nil {
			return nil, status.Errorf(codes.Unavailable, "history: reading latest: %v", err)
		}
		if err := scanRows(rs, set, keep); err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].s, out[j].s
		if a.parent != b.parent {
			return a.parent < b.parent
		}
		if !out[i].ts.Equal(out[j].ts) {
			return out[i].ts.Before(out[j].ts)
		}
		return a.name < b.name
	})
	return out, nil
}

// rangeBatch is how many rows go out per call of send: enough to group a
// container's leaves that share a timestamp.
const rangeBatch = 4096

// rangeChunk is the span of one query of a range: PostgreSQL sorts each
// chunk's rows by time in memory (work_mem), instead of sorting the whole
// range on disk before the first row comes.
const rangeChunk = time.Minute

// rangeRows streams the rows of [start, end) in time order to send, in
// batches; rows with the same timestamp are ordered by container, so that
// a container's leaves come together, then by path, then (two rows of one
// series at one instant) by batch: a stable order, not the one in which
// the database (on Citus, its shards) happen to answer.
func (s *Server) rangeRows(ctx context.Context, set seriesSet, start, end time.Time, send func([]row) error) error {
	ids := set.ids()
	buf := make([]row, 0, rangeBatch)
	flush := func() error {
		// The query orders the rows by time. Within a timestamp, a
		// container's leaves together, by path (their rank); the query's
		// order (series, batch) breaks the remaining ties.
		for i := 0; i < len(buf); {
			j := i + 1
			for j < len(buf) && buf[j].ts.Equal(buf[i].ts) {
				j++
			}
			slices.SortStableFunc(buf[i:j], func(a, b row) int { return cmp.Compare(a.s.rank, b.s.rank) })
			i = j
		}
		err := send(buf)
		buf = buf[:0]
		return err
	}
	var chunk []row
	for from := start; from.Before(end); {
		to := from.Add(rangeChunk)
		if to.After(end) {
			to = end
		}
		rs, err := s.o.pool.Query(ctx, `SELECT `+sampleCols+`
			FROM samples WHERE series_id = ANY($1) AND ts >= $2 AND ts < $3 ORDER BY ts, series_id, batch_id`, ids, from, to)
		if err != nil {
			return status.Errorf(codes.Unavailable, "history: reading samples: %v", err)
		}
		// The chunk is read whole before any of it is sent: a query
		// left open while a slow client reads holds its partitions
		// (AccessShare), so a retention pass's DROP of a day, and every
		// writer's INSERT queued behind it, would wait for the client.
		chunk = chunk[:0]
		err = scanRows(rs, set, func(r row) error {
			if !r.carried { // a carried row is not a change: a snapshot reads it as the value at the horizon
				chunk = append(chunk, r)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, r := range chunk {
			// Flush only between timestamps, so a notification is never split.
			if len(buf) >= rangeBatch && !buf[len(buf)-1].ts.Equal(r.ts) {
				if err := flush(); err != nil {
					return err
				}
			}
			buf = append(buf, r)
		}
		from = to
	}
	return flush()
}

// scanRows reads sample rows into typed values.
func scanRows(rs pgx.Rows, set seriesSet, fn func(row) error) error {
	defer rs.Close()
	var (
		ts    time.Time
		id    int64
		vInt  pgtype.Int8
		vFlt  pgtype.Float8
		vNum  pgtype.Text
		vBool pgtype.Bool
		vText pgtype.Text
		flags int16
	)
	for rs.Next() {
		if err := rs.Scan(&ts, &id, &vInt, &vFlt, &vNum, &vBool, &vText, &flags); err != nil {
			return status.Errorf(codes.Internal, "history: reading samples: %v", err)
		}
		se := set[id]
		if se == nil {
			continue
		}
		r := row{ts: ts, s: se, carried: rows.Flags(flags)&rows.Carried != 0}
		if rows.Flags(flags)&rows.Deleted == 0 {
			tv, err := typedValue(se.leaf, vInt, vFlt, vNum, vBool, vText)
			if err != nil {
				return status.Errorf(codes.Internal, "history: %s at %s: %v", store.ErrorPath(se.path), stamp(ts), err)
			}
			r.tv = tv
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	if err := rs.Err(); err != nil {
		return status.Errorf(codes.Unavailable, "history: reading samples: %v", err)
	}
	return nil
}

// typedValue turns a sample's value columns back into the typed value the
// switch sent (PROTO encoding): integers as uint_val or int_val by the
// leaf's YANG type, decimal64 and floats as double_val, booleans, and
// strings (enumerations by name) as string_val.
func typedValue(l *schema.Leaf, vInt pgtype.Int8, vFlt pgtype.Float8, vNum pgtype.Text, vBool pgtype.Bool, vText pgtype.Text) (*gnmi.TypedValue, error) {
	var kind yang.TypeKind
	if l != nil && l.Type != nil {
		kind = l.Type.Kind
	}
	unsigned := func() bool {
		switch kind {
		case yang.Yuint8, yang.Yuint16, yang.Yuint32, yang.Yuint64:
			return true
		}
		return false
	}
	switch {
	case vInt.Valid:
		if kind == yang.Ybool {
			return &gnmi.TypedValue{Value: &gnmi.TypedValue_BoolVal{BoolVal: vInt.Int64 != 0}}, nil
		}
		if unsigned() && vInt.Int64 >= 0 {
			return &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: uint64(vInt.Int64)}}, nil
		}
		return &gnmi.TypedValue{Value: &gnmi.TypedValue_IntVal{IntVal: vInt.Int64}}, nil
	case vFlt.Valid:
		return &gnmi.TypedValue{Value: &gnmi.TypedValue_DoubleVal{DoubleVal: vFlt.Float64}}, nil
	case vNum.Valid:
		if unsigned() {
			u, err := strconv.ParseUint(vNum.String, 10, 64)
			if err == nil {
				return &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: u}}, nil
			}
		}
		f, err := strconv.ParseFloat(vNum.String, 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, fmt.Errorf("numeric value %q", vNum.String)
		}
		return &gnmi.TypedValue{Value: &gnmi.TypedValue_DoubleVal{DoubleVal: f}}, nil
	case vBool.Valid:
		return &gnmi.TypedValue{Value: &gnmi.TypedValue_BoolVal{BoolVal: vBool.Bool}}, nil
	case vText.Valid:
		return &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: vText.String}}, nil
	}
	return nil, fmt.Errorf("no value column is set")
}

// sendRows sends rows as notifications: consecutive rows of one switch's
// container with one timestamp share a notification whose prefix is the
// container (with the switch as target) and whose paths are leaf names, as
// the switch's Subscribe sends them.
func sendRows(rpc gnmi.GNMI_SubscribeServer, rows []row, enc subscribe.ValueEncoder, origin string) error {
	for i := 0; i < len(rows); {
		r0 := rows[i]
		j := i + 1
		for j < len(rows) && rows[j].s.parent == r0.s.parent && rows[j].ts.Equal(r0.ts) {
			j++
		}
		el := r0.s.path.GetElem()
		n := &gnmi.Notification{Timestamp: r0.ts.UnixNano(),
			Prefix: &gnmi.Path{Target: r0.s.target, Origin: origin, Elem: el[:len(el)-1]}}
		// The paths and updates of a notification, allocated together.
		paths := make([]gnmi.Path, j-i)
		ups := make([]gnmi.Update, 0, j-i)
		n.Update = make([]*gnmi.Update, 0, j-i)
		for k, r := range rows[i:j] {
			rel := r.s.path.GetElem()
			p := &paths[k]
			p.Elem = rel[len(rel)-1:]
			if r.tv == nil {
				n.Delete = append(n.Delete, p)
				continue
			}
			tv, err := enc.EncodeValue(r.s.path, r.tv)
			if err != nil {
				return status.Errorf(codes.Internal, "encoding %s: %v", store.ErrorPath(r.s.path), err)
			}
			ups = append(ups, gnmi.Update{Path: p, Val: tv})
			n.Update = append(n.Update, &ups[len(ups)-1])
		}
		if err := rpc.Send(&gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: n}}); err != nil {
			return err
		}
		i = j
	}
	return nil
}
