package subscribe

import (
	"sync"

	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"
)

// Shared fan-out. Streams that would send exactly the same on-change
// notifications — one ON_CHANGE subscription without heartbeat, the same
// path, encoding, target and origin, and the same transport codec — join
// one group. The group is the only store watcher for all of them: an Apply
// appends one record to the group's log, the first member to send the record
// encodes it into notifications (marshalled once, as grpc.PreparedMsg when
// the transport allows), and every member sends those same bytes. The cost of
// an update is then paid once per group, not once per subscriber.
//
// A member holds its place in the log. One that falls more than a bound
// behind (a slow or stalled client) is ejected: it keeps the records it had
// not yet taken (at most the bound), and later changes go to its own
// coalescing queue, one pending value per leaf, as for an unshared stream.
// When that queue is empty again it rejoins the log at its head. The log is
// trimmed to the slowest member still in it, so memory stays bounded by the
// bound per member.

// minBacklog is the number of log entries a member may lag behind before it
// is ejected; larger records raise it (see Notify).
const minBacklog = 1 << 14

type shareKey struct {
	pattern        string
	enc            gnmi.Encoding
	target, origin string
	// A PreparedMsg carries bytes made by one stream's codec and
	// compressor; only streams that agree on both may share them.
	codec    string
	prepared bool // the transport is known: pre-encode
}

// hub holds a Server's groups.
type hub struct {
	mu     sync.Mutex
	groups map[shareKey]*group
}

type group struct {
	key    shareKey
	cancel func() // the store watch

	mu      sync.Mutex // everything below; Notify takes it under the store lock
	members []*member
	log     []*record
	base    uint64 // log position of log[0]
}

// record is the changes of one Apply. entries is immutable once appended;
// msgs is built once, by the first member to send the record.
type record struct {
	entries []entry
	once    sync.Once
	msgs    []any // *grpc.PreparedMsg, or *gnmi.SubscribeResponse without pre-encoding
	updates uint64
	err     error
}

// member is a stream's place in its group. All fields are guarded by the
// group's mutex.
type member struct {
	st      *stream
	g       *group
	inLog   bool
	pos     uint64    // next log position to take (inLog)
	pending int       // entries appended and not yet taken (inLog)
	backlog []*record // records still owed after an ejection
}

// shareKeyOf reports whether st can share its on-change fan-out, and with
// which key.
func shareKeyOf(st *stream) (shareKey, bool) {
	if st.mode != gnmi.SubscriptionList_STREAM || len(st.subs) != 1 {
		return shareKey{}, false
	}
	su := st.subs[0]
	if su.onChange == nil || su.sampled != nil || su.heartbeat != 0 || su.sent != nil {
		return shareKey{}, false
	}
	k := shareKey{pattern: su.pat.String(), enc: st.encoding, target: st.bare.GetTarget(), origin: st.bare.GetOrigin()}
	k.codec, k.prepared = st.codec, st.codec != ""
	return k, true
}

// transportOf returns the stream's content-subtype and send compressor
// ("" if unknown, e.g. a stream that is not gRPC's), and whether its codec
// is protobuf (the raw wire form is only for that codec).
func transportOf(rpc gnmi.GNMI_SubscribeServer) (codec string, raw bool) {
	ts, ok := grpc.ServerTransportStreamFromContext(rpc.Context()).(interface {
		ContentSubtype() string
		SendCompress() string
	})
	if !ok {
		return "", false
	}
	sub := ts.ContentSubtype()
	return "codec=" + sub + ";compress=" + ts.SendCompress(), sub == "" || sub == "proto"
}

// join adds st to its group (creating the group and its store watch if need
// be). The member starts outside the log: changes go to the stream's queue
// until its initial data is sent and it rejoins.
func (h *hub) join(srv *Server, st *stream, k shareKey) *member {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := h.groups[k]
	if g == nil {
		g = &group{key: k}
		g.cancel = srv.st.Watch(st.subs[0].pat, g)
		if h.groups == nil {
			h.groups = map[shareKey]*group{}
		}
		h.groups[k] = g
	}
	m := &member{st: st, g: g}
	g.mu.Lock()
	g.members = append(g.members, m)
	g.mu.Unlock()
	return m
}

// leave removes m; the last member out removes the group and its watch.
func (h *hub) leave(m *member) {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := m.g
	g.mu.Lock()
	for i, x := range g.members {
		if x == m {
			g.members = append(g.members[:i], g.members[i+1:]...)
			break
		}
	}
	empty := len(g.members) == 0
	g.trimLocked()
	g.mu.Unlock()
	if empty {
		delete(h.groups, g.key)
		g.cancel()
	}
}

// Notify implements store.Watcher: one record for the members in the log,
// the stream queue for the others.
func (g *group) Notify(cs []store.Change) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var r *record
	for _, m := range g.members {
		if !m.inLog {
			m.st.subs[0].Notify(cs)
			continue
		}
		if r == nil {
			r = &record{entries: make([]entry, len(cs))}
			for i := range cs {
				c := &cs[i]
				if c.Val == nil {
					r.entries[i] = entry{leaf: c.Leaf, ts: c.TS, seq: c.Seq}
				} else {
					r.entries[i] = entry{leaf: c.Leaf, val: c.Val, ts: c.Val.TS, seq: c.Val.Ver, kind: c.Kind}
				}
			}
			g.log = append(g.log, r)
		}
		m.pending += len(cs)
		if m.pending > max(minBacklog, 4*len(cs)) {
			// Too far behind: keep what it owes, coalesce from here on.
			m.inLog = false
			m.backlog = append([]*record(nil), g.log[m.pos-g.base:]...)
			m.pending = 0
		}
		m.st.q.wake()
	}
	if r != nil {
		g.trimLocked()
	}
}

// trimLocked drops the records every member in the log has taken.
func (g *group) trimLocked() {
	end := g.base + uint64(len(g.log))
	low := end
	for _, m := range g.members {
		if m.inLog {
			low = min(low, m.pos)
		}
	}
	if drop := int(low - g.base); drop > 0 {
		clear(g.log[:drop])
		g.log = g.log[drop:]
		g.base = low
	}
}

// take returns the records m is to send now, and whether m is in the log.
// An ejected member whose queue and backlog are empty rejoins at the head.
func (m *member) take(dst []*record) ([]*record, bool) {
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if m.inLog {
		dst = append(dst, g.log[m.pos-g.base:]...)
		m.pos = g.base + uint64(len(g.log))
		m.pending = 0
		return dst, true
	}
	dst = append(dst, m.backlog...)
	m.backlog = nil
	return dst, false
}

// drain takes the stream's queue unless records are owed after an ejection
// (ok false: send those first), and reports whether m is in the log.
func (m *member) drain(st *stream) (items []entry, inLog, ok bool) {
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(m.backlog) > 0 {
		return nil, false, false
	}
	return st.drain(), m.inLog, true
}

// rejoin puts m back in the log if nothing is pending in its queue; the
// group's lock orders it against Notify, so no change falls between.
func (m *member) rejoin() {
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if m.inLog || len(m.backlog) > 0 || m.st.q.Len() > 0 {
		return
	}
	m.inLog = true
	m.pos = g.base + uint64(len(g.log))
	m.pending = 0
}

// sendLog sends the records m has taken from the log, encoding each on first
// use. It reports whether m is in the log.
func (st *stream) sendLog(m *member) (bool, error) {
	recs, inLog := m.take(st.recs[:0])
	for i, r := range recs {
		r.once.Do(func() { st.encodeRecord(r, m.g.key.prepared) })
		if r.err != nil {
			return inLog, r.err
		}
		for _, msg := range r.msgs {
			if err := st.rpc.SendMsg(msg); err != nil {
				return inLog, err
			}
		}
		st.srv.stats.notifications.Add(uint64(len(r.msgs)))
		st.srv.stats.updates.Add(r.updates)
		recs[i] = nil
	}
	st.recs = recs[:0]
	return inLog, nil
}

// encodeRecord builds a record's notifications once for every member.
func (st *stream) encodeRecord(r *record, prepared bool) {
	add := func(resp *gnmi.SubscribeResponse, updates int) {
		r.updates += uint64(updates)
		if prepared {
			pm := &grpc.PreparedMsg{}
			if err := pm.Encode(st.rpc, resp); err == nil {
				r.msgs = append(r.msgs, pm)
				return
			}
		}
		r.msgs = append(r.msgs, resp)
	}
	if st.raw {
		r.err = st.wireNotifications(r.entries, func(b []byte, updates int) error {
			add(rawResponse(b), updates)
			return nil
		})
	} else {
		r.err = st.notifications(r.entries, func(n *gnmi.Notification) error {
			add(&gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: n}}, len(n.Update)+len(n.Delete))
			return nil
		})
	}
	r.entries = nil
}
