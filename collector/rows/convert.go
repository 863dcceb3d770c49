package rows

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/goyang/pkg/yang"
)

// Converter turns one target's Subscribe responses into rows. It is used by
// one goroutine (the target's subscription loop) and keeps its state across
// resubscriptions of that target.
type Converter struct {
	target    string
	sch       *schema.Schema
	describer Describer
	synced    bool
	series    map[int64]*seriesState
	queues    map[queueKey]*cnpState
	// pending: queues whose last-cnp timestamp changed in the current
	// notification.
	pending []queueKey
	scratch gnmi.Path // prefix + path of the update being converted
	tHash   uint64    // the hash state of series ids after the target
	// The current stream's subscribed paths (nil: not known, no sweep),
	// and, until its sync_response, the series its initial data sent and
	// the timestamps of its notifications: at the sync_response the
	// series known under those paths that it did not send are deleted
	// (sweep).
	subscribed []*gnmi.Path
	sent       map[int64]struct{}
	initialTS  []int64
	swept      []*gnmi.Notification
	// initialMax: the newest timestamp of the current stream's initial
	// data (math.MinInt64 before any). unsettled: a seed marked series
	// deleted since the last settle (see settle).
	initialMax int64
	unsettled  bool
}

type seriesState struct {
	ts      int64  // last stored timestamp
	counter uint64 // last counter value (counters only)
	hasCtr  bool
	written bool // the series row was emitted (or exists in the database)
	// path is the series' path (store.PathString), once known: from the
	// first update of it, or from latest (SeedValue). A delete of a
	// subtree reaches the series below it by their paths.
	path string
	// What the path is, looked up once per series: its schema leaf
	// (known: the path is in the schema) and whether it is a leaf of a
	// queue's last-cnp.
	described bool
	leaf      *schema.Leaf
	known     bool
	lastCNP   bool
	// deleted: the series' last row in the database is a delete (seeded
	// from latest or the spill, then kept by Skip); a second delete before
	// a value is the same disappearance and is not stored again (Skip,
	// leaf). Such a state is kept only while the stream that was up when
	// it was seeded may still send the series at or before its timestamp
	// (settle): a converter keeps no state for the series that ended.
	deleted bool
	// ended: Skip met a delete of the series in the held batches: the
	// stream already sent the series' end, nothing older of it follows.
	ended bool
}

type queueKey struct {
	iface string
	queue string
}

// cnpState is the last-cnp container of one queue as last received.
type cnpState struct {
	ts     uint64 // the timestamp leaf
	leaves map[string]Sample
}

// Stats counts what Add did.
type Stats struct {
	Samples    int // appended to the batch
	Duplicates int // at or before the series' last stored timestamp: dropped
	Resets     int // counters flagged Reset
	Events     int
	Unknown    int // paths outside the schema (stored with an empty yang_type)
	// Swept: series deleted at the sync_response because the initial
	// data no longer had them (Swept gives the deletes as notifications).
	Swept int
}

// Describer gives the YANG type and unit of a schema path (keys removed).
type Describer func(schemaPath string) (yangType, unit string)

// Option configures a Converter.
type Option func(*Converter)

// WithDescriber sets how new series get their yang_type and unit; the
// default reads the leaf's schema entry (type name, units statement when
// the generated schema kept it).
func WithDescriber(d Describer) Option { return func(c *Converter) { c.describer = d } }

// NewConverter returns a converter for the named target.
func NewConverter(target string, sch *schema.Schema, opts ...Option) *Converter {
	c := &Converter{target: target, sch: sch, series: map[int64]*seriesState{}, queues: map[queueKey]*cnpState{},
		tHash: targetHash(target), initialMax: math.MinInt64}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Seed records what the database already holds for a series: its last
// timestamp and, for a counter, its last value (from the latest table, and
// from batches still in the spill). Updates at or before ts are dropped.
func (c *Converter) Seed(seriesID, ts int64, counter uint64, isCounter bool) {
	st := c.state(seriesID)
	st.written = true
	if ts >= st.ts {
		st.ts = ts
		st.counter, st.hasCtr = counter, isCounter
	}
}

// SeedSpilled records the last sample of a series in the batches still in
// the spill (not in latest yet), with the series' path when the spill holds
// its series row ("" if not): updates at or before it are dropped, and a
// series whose last sample is a value is known by its path, so the sweep
// of the next stream deletes it when the switch no longer has it (a leaf
// gone while the database was down and the collector restarted). Called
// after the seeds from latest.
func (c *Converter) SeedSpilled(path string, smp Sample) {
	st := c.state(smp.SeriesID)
	st.written = true
	if smp.TS < st.ts {
		return
	}
	st.ts = smp.TS
	st.counter, st.hasCtr = uint64(smp.Int), smp.Kind == ValInt
	st.deleted = smp.Flags&Deleted != 0
	st.ended = false
	if path != "" {
		st.path = path
	}
	if st.deleted {
		c.unsettled = true
	}
}

// SeedValue records the stored value of a series by its path (from the
// latest table, at start and at a takeover). The path is kept, so that a
// later delete of a subtree above it (a queue removed) deletes it too (or,
// deleted already, drops its state: the stream sent its end). For a leaf of a queue's last-cnp, the
// queue's last CNP as the database holds it is recorded, so the CNP a
// switch sends again on resubscription is not taken for a new one, and
// the next CNP, whose notification carries only the leaves that changed,
// gets the others from it.
//
// The state of a series whose stored row is a delete is needed only
// while a stream that was up before the seed (a standby's, at its
// promotion) may still send the series at or before the delete, and for
// the promotion's Skip; it is dropped after (settle). A seed before a
// stream starts (a loop's start) keeps none of it: the next stream sends
// only what exists, a leaf created again with a timestamp after its
// delete.
func (c *Converter) SeedValue(path string, smp Sample) {
	st := c.state(smp.SeriesID)
	st.deleted = smp.Flags&Deleted != 0
	st.ended = false
	st.path = path
	if st.deleted {
		c.unsettled = true
	}
	if !strings.Contains(path, "/last-cnp/") {
		return
	}
	p, err := store.ParsePath(path)
	if err != nil {
		return
	}
	if n := len(p.GetElem()); n < 2 || p.Elem[n-2].GetName() != "last-cnp" {
		return
	}
	c.recordCNP(p, smp)
}

// Resubscribed is called when a new Subscribe stream starts: values until
// its sync_response are flagged Initial. paths are the stream's
// subscribed paths: at its sync_response, every series the converter
// knows under them that the initial data did not send is deleted (see
// Add). With no paths nothing is deleted.
//
// A new stream sends only what exists, and a leaf created again with a
// timestamp after its delete: the state of the series whose last row is a
// delete is dropped.
func (c *Converter) Resubscribed(paths ...*gnmi.Path) {
	c.synced = false
	c.subscribed = paths
	c.sent, c.initialTS = nil, c.initialTS[:0]
	c.initialMax = math.MinInt64
	if len(paths) > 0 {
		c.sent = map[int64]struct{}{}
	}
	for id, st := range c.series {
		if st.deleted {
			delete(c.series, id)
		}
	}
	c.unsettled = false
}

// settle drops the state of the series whose last row is a delete (seeded,
// or kept by Skip) that the current stream, synced, can no longer send at
// or before that delete: those whose end it sent already (Skip met their
// delete: ended), and those it did not send since the converter last
// forgot them (not described) deleted at or before the newest timestamp of
// its initial data: the series did not exist when the switch took the
// snapshot of that initial data, so what the stream sends of it later is
// a new life, stamped after the snapshot. What is left (a series the
// stream sent alive and whose delete it has not sent yet, or one created
// after the snapshot) goes when the stream sends its delete (leaf) or a
// new stream starts (Resubscribed).
func (c *Converter) settle() {
	c.unsettled = false
	for id, st := range c.series {
		if st.deleted && (st.ended || (!st.described && st.ts <= c.initialMax)) {
			delete(c.series, id)
		}
	}
}

// Tracked returns how many series the converter keeps state for (its
// memory follows the series that exist, not every one ever seen).
func (c *Converter) Tracked() int { return len(c.series) }

// Synced reports whether the current stream sent its sync_response.
func (c *Converter) Synced() bool { return c.synced }

func (c *Converter) state(id int64) *seriesState {
	st := c.series[id]
	if st == nil {
		st = &seriesState{ts: math.MinInt64}
		c.series[id] = st
	}
	return st
}

// Add converts one response, appending rows to b.
func (c *Converter) Add(resp *gnmi.SubscribeResponse, b *Batch) Stats {
	var s Stats
	switch r := resp.GetResponse().(type) {
	case *gnmi.SubscribeResponse_SyncResponse:
		if !c.synced {
			c.synced = true
			c.sweep(b, &s)
			if c.unsettled {
				c.settle()
			}
		}
	case *gnmi.SubscribeResponse_Update:
		if c.unsettled && c.synced {
			c.settle() // seeded at a promotion, after its Skip
		}
		c.notification(r.Update, b, &s)
	}
	return s
}

func (c *Converter) notification(n *gnmi.Notification, b *Batch, s *Stats) {
	ts := n.GetTimestamp()
	var flags Flags
	if !c.synced {
		flags = Initial
		c.initialMax = max(c.initialMax, ts)
		if c.sent != nil {
			c.initialTS = append(c.initialTS, ts)
		}
	}
	pre := n.GetPrefix().GetElem()
	afterPrefix := fnvElems(c.tHash, pre)
	for _, d := range n.GetDelete() {
		if !c.subtreeDelete(pre, afterPrefix, d, ts, flags|Deleted, b, s) {
			c.leaf(pre, afterPrefix, d, nil, ts, flags|Deleted, b, s)
		}
	}
	for _, u := range n.GetUpdate() {
		c.leaf(pre, afterPrefix, u.GetPath(), u.GetVal(), ts, flags, b, s)
	}
	for _, q := range c.pending {
		c.event(q, b)
		s.Events++
	}
	c.pending = c.pending[:0]
}

// join returns prefix + p in a scratch path, valid within the call.
func (c *Converter) join(pre []*gnmi.PathElem, p *gnmi.Path) *gnmi.Path {
	if len(pre) == 0 {
		return p
	}
	c.scratch.Elem = append(append(c.scratch.Elem[:0], pre...), p.GetElem()...)
	return &c.scratch
}

// leaf converts the update (or, tv nil, the delete) of path p under the
// prefix pre, whose series-id hash state is afterPrefix. The full path is
// built only the first time a series is seen (and for last-cnp leaves).
func (c *Converter) leaf(pre []*gnmi.PathElem, afterPrefix uint64, p *gnmi.Path, tv *gnmi.TypedValue, ts int64, flags Flags, b *Batch, s *Stats) {
	id := joinedID(afterPrefix, len(pre), p.GetElem())
	if c.sent != nil && !c.synced && tv != nil {
		c.sent[id] = struct{}{}
	}
	st := c.state(id)
	if tv == nil && st.deleted {
		// Its last row is a delete already (seeded): the same
		// disappearance, dated by this stream (one delete row per
		// disappearance, as Skip). The stream sent its end: nothing
		// older of it follows, its state goes.
		s.Duplicates++
		delete(c.series, id)
		return
	}
	if !st.described {
		full := c.join(pre, p)
		c.learn(st, full)
		if st.path == "" {
			st.path = store.PathString(full)
		}
		if !st.written {
			b.Series = append(b.Series, c.describe(id, st.path, full, st.leaf, ts))
			st.written = true
		}
	}
	if ts <= st.ts {
		s.Duplicates++
		if st.lastCNP && tv != nil {
			// A CNP already stored, sent again (a resubscription): its
			// queue's state learns it, so that it makes no event.
			smp := Sample{TS: ts, SeriesID: id}
			value(tv, st.leaf, &smp)
			c.recordCNP(c.join(pre, p), smp)
		}
		return
	}
	if !st.known {
		s.Unknown++
	}
	c.store(id, st, tv, ts, flags, b, s, func() *gnmi.Path { return c.join(pre, p) })
}

// store appends the sample of series id (tv nil: a delete) to b, its
// timestamp after the series' last; full gives the series' path, asked
// for a queue's last-cnp leaves only.
func (c *Converter) store(id int64, st *seriesState, tv *gnmi.TypedValue, ts int64, flags Flags, b *Batch, s *Stats, full func() *gnmi.Path) {
	l, known := st.leaf, st.known
	smp := Sample{TS: ts, SeriesID: id, Flags: flags}
	if tv != nil {
		value(tv, l, &smp)
		if known && l.Kind == store.Counter && smp.Kind == ValInt {
			v := uint64(smp.Int)
			if st.hasCtr && v < st.counter {
				smp.Flags |= Reset
				s.Resets++
			}
			st.counter, st.hasCtr = v, true
		}
	}
	st.ts = ts
	st.deleted = false // a value (a delete drops the state below)
	b.Samples = append(b.Samples, smp)
	s.Samples++
	if st.lastCNP {
		if fp := full(); fp != nil {
			c.lastCNP(fp, smp)
		}
	}
	if tv == nil {
		// The path stopped existing: a switch sends nothing more of it
		// (a resubscription sends only what exists), and one that
		// creates it again starts a new life of the series (its row
		// already stored, ON CONFLICT DO NOTHING). Keeping its state
		// would grow the converter with every flow a switch ever held.
		delete(c.series, id)
	}
}

// subtreeDelete converts the delete of path p under the prefix pre when p
// is above stored series (a list entry, a container: gNMI allows a delete
// of a subtree, and gnmi/store applies one to every leaf below it): each
// series the converter knows below it gets a delete sample, in path
// order, and p itself no series (it is not a leaf). It reports false, and
// does nothing, for a leaf of the schema or a path with no known series
// below it: leaf stores those as before. The series known are those
// stored by this converter and not deleted since, and those seeded from
// latest (SeedValue) or the spill (SeedSpilled). One below it whose last
// row is a delete already (seeded, after a promotion) is the same
// disappearance, as in leaf: its state goes and nothing is stored of it;
// with none below alive, nothing at all (the previous owner stored the
// deletes of the subtree's leaves).
func (c *Converter) subtreeDelete(pre []*gnmi.PathElem, afterPrefix uint64, p *gnmi.Path, ts int64, flags Flags, b *Batch, s *Stats) bool {
	if st := c.series[joinedID(afterPrefix, len(pre), p.GetElem())]; st != nil && st.described && st.known {
		return false // a leaf seen before: no schema lookup
	}
	full := c.join(pre, p)
	if _, ok := c.sch.LeafAt(full); ok {
		return false
	}
	below := store.PathString(full)
	if below != "/" {
		below += "/"
	}
	type known struct {
		id int64
		st *seriesState
	}
	var under []known
	gone := 0
	for id, st := range c.series {
		if st.path == "" || !strings.HasPrefix(st.path, below) {
			continue
		}
		if st.deleted {
			// Its last row is a delete already (seeded): the same
			// disappearance, as in leaf; the stream sent its end.
			delete(c.series, id)
			s.Duplicates++
			gone++
			continue
		}
		under = append(under, known{id, st})
	}
	if len(under) == 0 {
		return gone > 0
	}
	slices.SortFunc(under, func(a, b known) int { return strings.Compare(a.st.path, b.st.path) })
	for _, u := range under {
		if ts <= u.st.ts {
			s.Duplicates++
			continue
		}
		if !u.st.described {
			// Seeded from latest: what the path is, as leaf would find it.
			if fp, err := store.ParsePath(u.st.path); err == nil {
				c.learn(u.st, fp)
			}
			u.st.described = true
		}
		path := u.st.path
		c.store(u.id, u.st, nil, ts, flags, b, s, func() *gnmi.Path {
			fp, err := store.ParsePath(path)
			if err != nil {
				return nil
			}
			return fp
		})
	}
	return true
}

// sweep deletes, at the sync_response of a stream whose subscribed paths
// are known, every series the converter knows by its path (stored and not
// deleted since, or seeded from latest or the spill) under those paths
// that the initial data did not send: the switch no longer has it
// (restarted without it, or it was deleted while no stream was up), and a
// switch sends no delete of what it does not have. Without it the series'
// last value stayed in latest, current_config and the northbound for ever.
//
// The delete's timestamp is the oldest timestamp of the initial data
// newer than the series' last stored one: the first sign of the switch's
// new state (after a restart, the time it loaded its configuration), and
// the same for two collectors that subscribed at different times (a
// standby stream, the next owner after a handover), since a leaf that has
// not changed keeps its timestamp, so the writer's dedupe (the promotion's
// skip, the stale merge) keeps one row. The newest would differ: counters
// change between two subscriptions. With no newer timestamp, the last
// stored one + 1 µs (a microsecond: what PostgreSQL keeps).
func (c *Converter) sweep(b *Batch, s *Stats) {
	c.swept = c.swept[:0]
	sent, subs := c.sent, c.subscribed
	c.sent = nil
	if sent == nil {
		return
	}
	type gone struct {
		id   int64
		st   *seriesState
		path *gnmi.Path
		ts   int64
	}
	var under []gone
	for id, st := range c.series {
		if st.path == "" || st.deleted {
			continue
		}
		if _, ok := sent[id]; ok {
			continue
		}
		fp, err := store.ParsePath(st.path)
		if err != nil {
			continue
		}
		for _, sp := range subs {
			if _, ok := schema.MatchPrefix(sp, fp); ok {
				under = append(under, gone{id: id, st: st, path: fp})
				break
			}
		}
	}
	if len(under) == 0 {
		return
	}
	slices.Sort(c.initialTS)
	slices.SortFunc(under, func(a, b gone) int { return strings.Compare(a.st.path, b.st.path) })
	byTS := map[int64]*gnmi.Notification{}
	for i := range under {
		u := &under[i]
		u.ts = u.st.ts + 1000
		if j, _ := slices.BinarySearch(c.initialTS, u.st.ts+1); j < len(c.initialTS) {
			u.ts = c.initialTS[j]
		}
		if !u.st.described {
			c.learn(u.st, u.path)
		}
		c.store(u.id, u.st, nil, u.ts, Deleted, b, s, func() *gnmi.Path { return u.path })
		s.Swept++
		n := byTS[u.ts]
		if n == nil {
			n = &gnmi.Notification{Timestamp: u.ts}
			byTS[u.ts] = n
			c.swept = append(c.swept, n)
		}
		n.Delete = append(n.Delete, u.path)
	}
	slices.SortFunc(c.swept, func(a, b *gnmi.Notification) int { return cmp.Compare(a.Timestamp, b.Timestamp) })
}

// Swept returns the deletes the last sync_response made (Stats.Swept), as
// notifications in time order, for the caller to hand on where the
// stream's notifications go (the northbound's latest values). They are
// the caller's until the next sync_response.
func (c *Converter) Swept() []*gnmi.Notification { return c.swept }

// learn records in st what its series' path full is: its schema leaf,
// and whether it is a leaf of a queue's last-cnp.
func (c *Converter) learn(st *seriesState, full *gnmi.Path) {
	st.leaf, st.known = c.sch.LeafAt(full)
	n := len(full.GetElem())
	st.lastCNP = n >= 2 && full.Elem[n-2].GetName() == "last-cnp"
	st.described = true
}

func (c *Converter) describe(id int64, path string, p *gnmi.Path, l *schema.Leaf, ts int64) Series {
	sr := Series{ID: id, Target: c.target, Path: path, FirstSeen: ts}
	var sp strings.Builder
	for _, e := range p.GetElem() {
		sp.WriteByte('/')
		sp.WriteString(e.GetName())
		for _, k := range sortedKeys(e.GetKey()) {
			sr.Keys = append(sr.Keys, Key{Name: k, Value: e.Key[k]})
		}
	}
	sr.SchemaPath = sp.String()
	if c.describer != nil {
		sr.YangType, sr.Unit = c.describer(sr.SchemaPath)
	} else if l != nil && l.Entry != nil && l.Entry.Type != nil {
		sr.YangType = l.Entry.Type.Name
		sr.Unit = l.Entry.Units
		if sr.Unit == "" && l.Type != nil {
			sr.Unit = l.Type.Units
		}
	}
	return sr
}

func sortedKeys(m map[string]string) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// lastCNP records a last-cnp leaf of a queue; a new non-zero timestamp
// makes the queue's notification an event.
func (c *Converter) lastCNP(p *gnmi.Path, smp Sample) {
	q, isNew := c.recordCNP(p, smp)
	if !isNew {
		return
	}
	for _, k := range c.pending {
		if k == q {
			return
		}
	}
	c.pending = append(c.pending, q)
}

// recordCNP records a last-cnp leaf in its queue's state; isNew reports a
// timestamp leaf of a CNP other than the queue's last.
func (c *Converter) recordCNP(p *gnmi.Path, smp Sample) (q queueKey, isNew bool) {
	for _, e := range p.GetElem() {
		switch e.GetName() {
		case "interface":
			q.iface = e.GetKey()["name"]
		case "queue":
			q.queue = e.GetKey()["id"]
		}
	}
	cs := c.queues[q]
	if cs == nil {
		cs = &cnpState{leaves: map[string]Sample{}}
		c.queues[q] = cs
	}
	leaf := p.Elem[len(p.Elem)-1].GetName()
	cs.leaves[leaf] = smp
	if leaf != "timestamp" || smp.Kind != ValInt || smp.Flags&Deleted != 0 {
		return q, false
	}
	if v := uint64(smp.Int); v != 0 && v != cs.ts {
		cs.ts = v
		return q, true
	}
	return q, false
}

func (c *Converter) event(q queueKey, b *Batch) {
	cs := c.queues[q]
	get := func(leaf string) Sample { return cs.leaves[leaf] }
	queue, _ := strconv.ParseInt(q.queue, 10, 64)
	ev := Event{
		TS:                 int64(cs.ts),
		Target:             c.target,
		Kind:               "cnp",
		Interface:          q.iface,
		Queue:              queue,
		Action:             get("action").FormatValue(),
		Parameter:          get("parameter").Int,
		CongestionLevel:    get("congestion-level").Int,
		SourceAddress:      get("source-address").FormatValue(),
		DestinationAddress: get("destination-address").FormatValue(),
		SourceQP:           get("source-qp").Int,
		DestinationQP:      get("destination-qp").Int,
	}
	details := map[string]string{}
	for _, k := range []string{"format", "metric-type", "metric-value"} {
		if v, ok := cs.leaves[k]; ok {
			details[k] = v.FormatValue()
		}
	}
	d, _ := json.Marshal(details)
	ev.Details = string(d)
	b.Events = append(b.Events, ev)
}

// value fills the value columns of smp from tv. JSON values (a target that
// answers JSON or JSON_IETF even when PROTO is asked) are decoded with the
// leaf's YANG type, so a counter stays an integer.
func value(tv *gnmi.TypedValue, l *schema.Leaf, smp *Sample) {
	switch v := tv.GetValue().(type) {
	case *gnmi.TypedValue_IntVal:
		smp.Kind, smp.Int = ValInt, v.IntVal
	case *gnmi.TypedValue_UintVal:
		setUint(smp, v.UintVal)
	case *gnmi.TypedValue_DoubleVal:
		smp.Kind, smp.Float = ValFloat, v.DoubleVal
	case *gnmi.TypedValue_FloatVal: //nolint:staticcheck // deprecated, still sent by some targets
		smp.Kind, smp.Float = ValFloat, float64(v.FloatVal)
	case *gnmi.TypedValue_DecimalVal: //nolint:staticcheck // deprecated, still sent by some targets
		smp.Kind, smp.Text = ValNum, decimalString(v.DecimalVal.GetDigits(), v.DecimalVal.GetPrecision())
	case *gnmi.TypedValue_BoolVal:
		smp.Kind = ValBool
		if v.BoolVal {
			smp.Int = 1
		}
	case *gnmi.TypedValue_StringVal:
		smp.Kind, smp.Text = ValText, v.StringVal
	case *gnmi.TypedValue_AsciiVal:
		smp.Kind, smp.Text = ValText, v.AsciiVal
	case *gnmi.TypedValue_JsonIetfVal:
		jsonValue(v.JsonIetfVal, l, smp)
	case *gnmi.TypedValue_JsonVal:
		jsonValue(v.JsonVal, l, smp)
	default:
		smp.Kind, smp.Text = ValText, tv.String()
	}
}

func setUint(smp *Sample, u uint64) {
	if u <= math.MaxInt64 {
		smp.Kind, smp.Int = ValInt, int64(u)
		return
	}
	smp.Kind, smp.Text = ValNum, strconv.FormatUint(u, 10)
}

func decimalString(digits int64, prec uint32) string {
	if prec == 0 {
		return strconv.FormatInt(digits, 10)
	}
	return new(big.Rat).SetFrac(big.NewInt(digits), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(prec)), nil)).FloatString(int(prec))
}

func jsonValue(data []byte, l *schema.Leaf, smp *Sample) {
	var kind yang.TypeKind
	if l != nil && l.Type != nil {
		kind = l.Type.Kind
	}
	var x any
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		smp.Kind, smp.Text = ValText, string(data)
		return
	}
	num := func(s string) {
		switch kind {
		case yang.Yint8, yang.Yint16, yang.Yint32, yang.Yint64:
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				smp.Kind, smp.Int = ValInt, i
				return
			}
		case yang.Yuint8, yang.Yuint16, yang.Yuint32, yang.Yuint64:
			if u, err := strconv.ParseUint(s, 10, 64); err == nil {
				setUint(smp, u)
				return
			}
		case yang.Ydecimal64:
			smp.Kind, smp.Text = ValNum, s
			return
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			smp.Kind, smp.Float = ValFloat, f
			return
		}
		smp.Kind, smp.Text = ValText, s
	}
	switch v := x.(type) {
	case json.Number:
		num(v.String())
	case string:
		switch kind {
		case yang.Yint64, yang.Yuint64, yang.Ydecimal64:
			num(v) // RFC 7951 §6.1: 64-bit numbers as strings
		case yang.Yenum, yang.Yidentityref:
			smp.Kind, smp.Text = ValText, stripModule(v)
		default:
			smp.Kind, smp.Text = ValText, v
		}
	case bool:
		smp.Kind = ValBool
		if v {
			smp.Int = 1
		}
	default:
		smp.Kind, smp.Text = ValText, string(data)
	}
}

// stripModule removes the module prefix of an RFC 7951 identity or enum
// ("lhcnp-types:RATE_REDUCE"), so PROTO and JSON_IETF give the same text.
func stripModule(s string) string {
	if i := strings.IndexByte(s, ':'); i > 0 {
		return s[i+1:]
	}
	return s
}

// String renders a batch for logs.
func (b *Batch) String() string {
	return fmt.Sprintf("batch %d of %s: %d samples, %d events, %d new series", b.ID, b.Target, len(b.Samples), len(b.Events), len(b.Series))
}

// Skip drops from b the samples at or before floor[series id] — rows
// another collector already stored, received here too while both streamed
// (a handover) — and the Long-haul CNP events those samples made. Series
// rows stay (storing one again changes nothing). A delete of a series
// whose last row is a delete already (the previous owner's, as seeded
// from latest: SeedValue; or one of b's or an earlier batch's that Skip
// kept) is dropped too: it is the same disappearance, which the two
// collectors dated differently (each sweep at its own stream's
// sync_response: every leaf changed between the two subscriptions), and
// one delete row is stored per disappearance. Skip is called on the held
// batches in order. It returns how many samples and events it dropped.
// Like Add, it runs on the loop's goroutine or under its lock.
func (c *Converter) Skip(b *Batch, floor map[int64]int64) (samples, events int) {
	type cnpSample struct{ series, value int64 }
	var gone map[cnpSample]bool
	kept := b.Samples[:0]
	for _, s := range b.Samples {
		st := c.series[s.SeriesID]
		if st != nil && s.Flags&Deleted != 0 {
			st.ended = true // the stream sent the series' end (settle)
			if st.deleted {
				continue
			}
		}
		if f, ok := floor[s.SeriesID]; ok && s.TS <= f {
			if st != nil && st.lastCNP && s.Kind == ValInt {
				if gone == nil {
					gone = map[cnpSample]bool{}
				}
				gone[cnpSample{s.SeriesID, s.Int}] = true
			}
			continue
		}
		if st != nil {
			st.deleted = s.Flags&Deleted != 0
		}
		kept = append(kept, s)
	}
	samples = len(b.Samples) - len(kept)
	b.Samples = kept
	if gone == nil {
		return samples, 0
	}
	keptEv := b.Events[:0]
	for _, e := range b.Events {
		// An event is made from its queue's last-cnp timestamp sample,
		// whose value is the event's TS.
		if cs := c.queues[queueKey{e.Interface, strconv.FormatInt(e.Queue, 10)}]; cs != nil {
			if src, ok := cs.leaves["timestamp"]; ok && gone[cnpSample{src.SeriesID, e.TS}] {
				continue
			}
		}
		keptEv = append(keptEv, e)
	}
	events = len(b.Events) - len(keptEv)
	b.Events = keptEv
	return samples, events
}
