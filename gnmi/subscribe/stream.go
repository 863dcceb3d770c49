package subscribe

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/lhcnp/lhcnp/gnmi/clock"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// stream is one Subscribe RPC. Everything but the queue and pollC belongs to
// the sending goroutine (run).
type stream struct {
	srv      *Server
	rpc      gnmi.GNMI_SubscribeServer
	mode     gnmi.SubscriptionList_Mode
	enc      ValueEncoder
	q        *queue
	pollC    chan struct{}
	updOnly  bool
	subs     []*sub
	bare     *gnmi.Path // the request prefix's target and origin, echoed in every notification
	maxBatch int

	encoding gnmi.Encoding
	codec    string  // transport codec and compressor ("" if unknown)
	raw      bool    // the codec is protobuf: send the wire form written by wire.go
	m        *member // non-nil: on-change fan-out shared with a group
	// held (POLL) are the leaves the client holds: sent in an answer and
	// not deleted in a later one, so that a poll reports their deletes.
	held map[string]struct{}

	spare         []entry
	scratch       []entry
	recs          []*record
	vals          []*gnmi.TypedValue     // wire.go's scratch
	prefixes      map[*store.Node][]byte // encoded prefix per container (wire.go)
	lastCoalesced uint64

	id       uint64                 // for StreamInfo
	peer     string                 // the client's address, for StreamInfo
	shared   atomic.Pointer[member] // m, for StreamInfo from other goroutines
	inFlight atomic.Int64           // entries taken by flush and not sent yet
}

// sub is one Subscription of the list, resolved to what it does per kind.
type sub struct {
	st       *stream
	pat      store.Pattern
	name     string
	initial  kindFilter // kinds sent as initial data
	onChange kindFilter // kinds streamed on change (nil: none)
	sampled  kindFilter // kinds sampled every interval (nil: none)
	interval time.Duration
	// heartbeat re-sends on-change leaves every heartbeat; with suppress,
	// it re-sends a sampled leaf unchanged for that long.
	heartbeat time.Duration
	suppress  bool
	sent      map[string]sentInfo // suppress_redundant: what was last queued per leaf

	nextSample, nextBeat time.Time
	// suppress_redundant: a sampled leaf changed since the last sample (set
	// by Notify), and the oldest time a leaf in sent was last queued.
	changed    atomic.Bool
	oldestSent time.Time
}

type sentInfo struct {
	ver uint64
	at  time.Time
}

// Notify implements store.Watcher: it queues the changes the subscription
// streams (its on-change kinds, and deletes of any kind). It runs under the
// store lock and only takes the queue's lock.
func (su *sub) Notify(cs []store.Change) {
	q := su.st.q
	n := 0
	q.mu.Lock()
	for i := range cs {
		c := &cs[i]
		if c.Val == nil {
			q.insertLocked(entry{leaf: c.Leaf, ts: c.TS, seq: c.Seq})
			n++
			continue
		}
		if su.onChange == nil || !su.onChange(c.Kind) {
			if su.suppress && su.sampled != nil && su.sampled(c.Kind) {
				su.changed.Store(true)
			}
			continue
		}
		q.insertLocked(entry{leaf: c.Leaf, val: c.Val, ts: c.Val.TS, seq: c.Val.Ver})
		n++
	}
	q.mu.Unlock()
	if n > 0 {
		q.wake()
	}
}

// run is the stream's only sending goroutine.
func (st *stream) run(ctx context.Context) error {
	clk := st.srv.o.clk
	for _, su := range st.subs {
		su.st = st
	}
	if st.mode == gnmi.SubscriptionList_STREAM {
		// Watch before the initial walk so that no change falls in between;
		// the queue keeps the newer of a walked and a notified value. A
		// shared stream's group watches for it.
		if k, ok := shareKeyOf(st); ok {
			st.m = st.srv.hub.join(st.srv, st, k)
			st.shared.Store(st.m)
			defer st.srv.hub.leave(st.m)
		} else {
			for _, su := range st.subs {
				cancel := st.srv.st.Watch(su.pat, su)
				defer cancel()
			}
		}
	}
	if st.mode == gnmi.SubscriptionList_POLL {
		// A poll's answer must delete what vanished since the last one
		// (gNMI 3.5.1.5.3 refers to 3.5.2.3), with the time it vanished:
		// the subscriptions watch, and with no on-change kinds Notify
		// queues only deletes, which wait in the queue for the next poll.
		// Watching before the initial walk, as STREAM does, lets no delete
		// fall in between.
		for _, su := range st.subs {
			cancel := st.srv.st.Watch(su.pat, su)
			defer cancel()
		}
	}
	now := clk.Now()
	if !st.updOnly {
		for _, su := range st.subs {
			st.fill(su, su.initial, now, false, true)
		}
	} else {
		for _, su := range st.subs {
			if su.suppress {
				st.fill(su, su.sampled, now, true, false) // remember, do not send
			}
		}
	}
	st.q.insert(entry{}) // sync_response
	if err := st.send(); err != nil {
		return err
	}
	switch st.mode {
	case gnmi.SubscriptionList_ONCE:
		return nil
	case gnmi.SubscriptionList_POLL:
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-st.pollC:
				now := clk.Now()
				for _, su := range st.subs {
					st.fill(su, su.initial, now, false, true)
				}
				st.q.insert(entry{})
				if err := st.flush(nil); err != nil {
					return err
				}
			}
		}
	}

	var timer clock.Timer
	for _, su := range st.subs {
		if su.sampled != nil {
			su.nextSample = now.Add(su.interval)
		}
		if su.onChange != nil && su.heartbeat > 0 {
			su.nextBeat = now.Add(su.heartbeat)
		}
	}
	if next, ok := st.nextDeadline(); ok {
		timer = clk.NewTimer(next.Sub(now))
		defer timer.Stop()
	}
	var timerC <-chan time.Time
	if timer != nil {
		timerC = timer.C()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-st.q.signal:
		case <-timerC:
			st.tick(clk.Now())
			// Re-arm from the clock as it reads now, after the tick's work,
			// so that time spent in the tick does not push the next slot.
			next, _ := st.nextDeadline()
			timer.Reset(next.Sub(clk.Now()))
		}
		if err := st.send(); err != nil {
			return err
		}
	}
}

// send sends what is pending: a shared stream's log records first (they
// precede anything its queue holds), then the queue. The queue is drained
// only when no ejection has left records owed (checked under the group's
// lock, which orders it against Notify), so a value never follows a newer
// one.
func (st *stream) send() error {
	if st.m == nil {
		return st.flush(nil)
	}
	for {
		if _, err := st.sendLog(st.m); err != nil {
			return err
		}
		items, inLog, ok := st.m.drain(st)
		if !ok {
			continue // ejected meanwhile: the owed records go first
		}
		if err := st.flush(items); err != nil {
			return err
		}
		if !inLog {
			st.m.rejoin()
		}
		return nil
	}
}

// nextDeadline is the earliest sample or heartbeat due.
func (st *stream) nextDeadline() (time.Time, bool) {
	var next time.Time
	for _, su := range st.subs {
		if t := su.nextSample; !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
		if t := su.nextBeat; !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next, !next.IsZero()
}

// mustSample reports whether a sample of su can have anything to send. A
// suppress_redundant sample sends only changed leaves and leaves whose
// heartbeat is due; when no sampled leaf changed since the last sample
// (Notify says so) and no heartbeat is due, it would send nothing, so the
// walk over every leaf is skipped.
func (su *sub) mustSample(now time.Time) bool {
	if !su.suppress {
		return true
	}
	if su.changed.Swap(false) {
		return true
	}
	return su.heartbeat > 0 && !su.oldestSent.IsZero() && now.Sub(su.oldestSent) >= su.heartbeat
}

// tick runs the samples and heartbeats that are due, then moves each deadline
// to its next slot on the subscription's own grid (a late tick does not shift
// the grid; missed slots are skipped, not bunched).
func (st *stream) tick(now time.Time) {
	for _, su := range st.subs {
		if !su.nextSample.IsZero() && !now.Before(su.nextSample) {
			if su.mustSample(now) {
				st.fill(su, su.sampled, now, false, false)
			}
			su.nextSample = nextSlot(su.nextSample, su.interval, now)
		}
		if !su.nextBeat.IsZero() && !now.Before(su.nextBeat) {
			st.fill(su, su.onChange, now, false, false)
			su.nextBeat = nextSlot(su.nextBeat, su.heartbeat, now)
		}
	}
}

func nextSlot(due time.Time, every time.Duration, now time.Time) time.Time {
	missed := now.Sub(due) / every
	return due.Add((missed + 1) * every)
}

// fill queues the current value of every leaf of su whose kind passes f.
// For suppress_redundant subscriptions it skips leaves unchanged since they
// were last queued, unless the heartbeat is due; with remember it only
// records the values (updates_only). With ordered the leaves are queued in
// path order (store.ComparePaths, as Get answers), not the store's map
// walk order: the initial data and a poll's answer are the same bytes
// for the same data, which two `gnmic subscribe --mode once` can diff.
func (st *stream) fill(su *sub, f kindFilter, now time.Time, remember, ordered bool) {
	if f == nil {
		return
	}
	batch := st.scratch[:0]
	st.srv.st.Walk(su.pat, func(l *store.Node, v *store.Value, k store.Kind) {
		if f(k) {
			batch = append(batch, entry{leaf: l, val: v, ts: v.TS, seq: v.Ver, kind: k})
		}
	})
	if ordered && !remember {
		store.SortByPath(batch, func(e entry) string { return e.leaf.Key() })
	}
	// A fill of a suppress_redundant subscription either covers all its
	// sampled leaves or none (heartbeats of its on-change kinds).
	sampling := su.suppress && su.sampled != nil
	var oldest time.Time
	seen := false
	st.q.mu.Lock()
	for _, e := range batch {
		if sampling && su.sampled(e.kind) {
			seen = true
			last, ok := su.sent[e.leaf.Key()]
			if !remember && ok && last.ver == e.seq && (su.heartbeat == 0 || now.Sub(last.at) < su.heartbeat) {
				if oldest.IsZero() || last.at.Before(oldest) {
					oldest = last.at
				}
				continue
			}
			su.sent[e.leaf.Key()] = sentInfo{ver: e.seq, at: now}
			if oldest.IsZero() || now.Before(oldest) {
				oldest = now
			}
		}
		if !remember {
			st.q.insertLocked(e)
		}
	}
	st.q.mu.Unlock()
	if seen {
		su.oldestSent = oldest
	}
	clear(batch)
	st.scratch = batch[:0]
}

// flush sends everything queued (see notifications for the shape). A marker
// sends sync_response.
func (st *stream) flush(items []entry) error {
	if items == nil {
		items = st.drain()
	}
	if st.mode == gnmi.SubscriptionList_POLL {
		items = st.keepHeld(items)
	}
	for i := range items {
		if e := &items[i]; e.leaf != nil && e.val == nil {
			for _, su := range st.subs {
				if su.sent != nil {
					delete(su.sent, e.leaf.Key())
				}
			}
		}
	}
	// Taken from the queue, not sent yet: still queued for StreamInfo.
	st.inFlight.Store(int64(len(items)))
	defer st.inFlight.Store(0)
	var err error
	if st.raw {
		err = st.wireNotifications(items, func(b []byte, updates int) error {
			if b == nil {
				return st.rpc.Send(syncResponse)
			}
			st.inFlight.Add(-int64(updates))
			st.srv.stats.notifications.Add(1)
			st.srv.stats.updates.Add(uint64(updates))
			return st.rpc.Send(rawResponse(b))
		})
	} else {
		err = st.notifications(items, func(n *gnmi.Notification) error {
			if n == nil {
				return st.rpc.Send(syncResponse)
			}
			st.inFlight.Add(-int64(len(n.Update) + len(n.Delete)))
			st.srv.stats.notifications.Add(1)
			st.srv.stats.updates.Add(uint64(len(n.Update) + len(n.Delete)))
			return st.rpc.Send(&gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: n}})
		})
	}
	clear(items)
	st.spare = items[:0]
	return err
}

// keepHeld drops from a POLL answer the deletes of leaves the client does
// not hold (created and gone between two polls, or before the first answer:
// nothing to remove from its view), and records what it holds after the
// answer. It filters items in place.
func (st *stream) keepHeld(items []entry) []entry {
	if st.held == nil {
		st.held = map[string]struct{}{}
	}
	out := items[:0]
	for _, e := range items {
		if e.leaf != nil {
			key := e.leaf.Key()
			if e.val == nil {
				if _, ok := st.held[key]; !ok {
					continue
				}
				delete(st.held, key)
			} else {
				st.held[key] = struct{}{}
			}
		}
		out = append(out, e)
	}
	clear(items[len(out):])
	return out
}

// drain takes the queue's entries and accounts for what it coalesced.
func (st *stream) drain() []entry {
	items, coalesced := st.q.drain(st.spare)
	st.srv.stats.coalesced.Add(coalesced - st.lastCoalesced)
	st.lastCoalesced = coalesced
	return items
}

// syncResponse is immutable and shared by every stream.
var syncResponse = &gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_SyncResponse{SyncResponse: true}}

// notifications turns queued entries into notifications, in order, and
// hands each to emit (nil for a sync marker). Leaves with the same timestamp
// and the same parent container share a notification (up to maxBatch
// updates) whose prefix is that container (with the request's target and
// origin) and whose update paths are the leaf names: valid gNMI, and much
// less to encode and decode than a full keyed path per update. The updates
// and paths of a notification are allocated together, one slab each.
func (st *stream) notifications(items []entry, emit func(*gnmi.Notification) error) error {
	for i := 0; i < len(items); {
		e := &items[i]
		if e.leaf == nil {
			if err := emit(nil); err != nil {
				return err
			}
			i++
			continue
		}
		// The run of entries sharing e's notification.
		parent := e.leaf.Parent()
		j := i + 1
		for j < len(items) && j-i < st.maxBatch && items[j].leaf != nil && items[j].ts == e.ts && items[j].leaf.Parent() == parent {
			j++
		}
		run := items[i:j]
		i = j
		full := e.leaf.Path().GetElem()
		n := &gnmi.Notification{Timestamp: e.ts, Prefix: st.bare}
		if len(full) > 1 {
			n.Prefix = &gnmi.Path{Target: st.bare.GetTarget(), Origin: st.bare.GetOrigin(), Elem: full[:len(full)-1]}
		}
		paths := make([]gnmi.Path, len(run))
		dels := 0
		for k := range run {
			if run[k].val == nil {
				dels++
			}
		}
		var ups []gnmi.Update
		if dels < len(run) {
			ups = make([]gnmi.Update, 0, len(run)-dels)
			n.Update = make([]*gnmi.Update, 0, len(run)-dels)
		}
		if dels > 0 {
			n.Delete = make([]*gnmi.Path, 0, dels)
		}
		for k := range run {
			e := &run[k]
			el := e.leaf.Path().GetElem()
			p := &paths[k]
			p.Elem = el[len(el)-1:]
			if e.val == nil {
				n.Delete = append(n.Delete, p)
				continue
			}
			tv, err := st.enc.EncodeValue(e.leaf.Path(), e.val.TV)
			if err != nil {
				return status.Errorf(codes.Internal, "encoding %s: %v", e.leaf.Key(), err)
			}
			ups = append(ups, gnmi.Update{Path: p, Val: tv, Duplicates: e.dups})
			n.Update = append(n.Update, &ups[len(ups)-1])
		}
		if err := emit(n); err != nil {
			return err
		}
	}
	return nil
}
