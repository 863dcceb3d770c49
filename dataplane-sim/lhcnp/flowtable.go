package lhcnp

import (
	"net/netip"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// FlowKey is the four-tuple of §5.2: one entry per unique key.
type FlowKey struct {
	Src, Dst     netip.Addr
	SrcQP, DstQP uint32
}

// LearnSource says how an entry was learned.
type LearnSource uint8

// Learning sources.
const (
	LearnedFromData LearnSource = iota // a RoCEv2 data packet (§5.2)
	LearnedFromCM                      // a CM REQ/REP/RTU exchange (white paper §2.2.1)
)

func (s LearnSource) String() string {
	if s == LearnedFromCM {
		return "cm"
	}
	return "data"
}

// dataKey is what a data packet's headers name: the BTH carries only the
// destination QP, so a disconnect (DREQ) finds its entry by this.
type dataKey struct {
	src, dst netip.Addr
	dstQP    uint32
}

// flowEntry is one flow-table entry. Entries sit on two intrusive lists:
// by activity (LRU replacement, idle aging) and by learning order (oldest
// replacement).
type flowEntry struct {
	key     FlowKey
	srcNode netsim.NodeID // where notifications go; -1 if unknown
	from    LearnSource
	seq     uint64

	firstSeen, lastSeen engine.Time
	packets, bytes      int64

	// Egress at this node, known from the first data packet.
	port int32 // index into Node.ports, -1 unknown
	// idSlot is 1 + the entry's slot in flowTable.ids, 0 when it has none.
	idSlot int32
	prio   uint8
	qIdx   int   // position in the queue's flow list, -1 none
	queued int64 // bytes of the flow in that queue now

	// Arrival rate over the measurement interval, and its peak over the
	// observation window (two buckets, for collaborative suppression).
	winStart       engine.Time
	winBytes       int64
	rateBitsPerSec int64
	rateValid      bool
	peakStart      engine.Time
	peakCur        int64
	peakPrev       int64
	lastCNP        engine.Time
	hasCNP         bool
	notifications  int64
	lastAction     wire.Action
	lastLevel      uint8
	needResume     bool
	// resumed: a Resume went out and RepeatResume waits to see whether
	// the flow's rate rose from resumeRate (its arrival rate then).
	resumed    bool
	resumeRate int64
	// cutEpisode is the queue's episode + 1 when this node last sent the
	// flow Rate Reduce or Pause (0: never), for OneCutPerEpisode.
	cutEpisode uint64
	// reducedEpisode is the queue's episode + 1 when this node last sent
	// the flow Rate Reduce or Pause (PerFlowRTT: a later cut in the same
	// episode is sized by loopCut alone).
	reducedEpisode uint64
	// preCutRate is the flow's arrival rate when this node first cut it
	// since its last full Resume, lastReduction what its last cut took
	// (the arrival rate then times the percentage): the node's view of
	// the source's normal rate and last reduction (§5.6), from which
	// fillResume sizes a Resume (PerFlowRTT with RepeatResume).
	preCutRate, lastReduction int64
	// srcRate and srcCut are the node's model of the flow's rate at its
	// source and of what its last cut took there: from preCutRate, each
	// cut of this node takes its percentage of what the source was left
	// at by the earlier ones (the reaction point cuts its current rate)
	// and each Resume gives back its percentage of srcCut, up to
	// preCutRate (the reaction point's rate stops at its rate before its
	// first cut). While a later cut is on its way the arrival rate still
	// shows the source before it, and lastReduction, sized on an arrival
	// rate that did not yet show the earlier cut, is more than the source
	// took (shareResume).
	srcRate, srcCut int64
	// cutAt is when this node last sent the flow Rate Reduce or Pause:
	// until its effect is back at the node (the flow's loop), the
	// flow's arrival rate is its rate before the cut (fillResume).
	cutAt engine.Time
	// preCutUnknown: the first cut came before the flow's first whole
	// measurement interval, so preCutRate is not its rate (fillResume
	// then resumes it unconditionally).
	preCutUnknown bool
	// resumeInc is what the last Resume should add to its rate
	// (fillResume), counted against the port's spare rate for a loop.
	resumeInc int64
	// srcRTT is the round trip from this node to the flow's source and
	// back, learnt from the flow's CM exchange or, without one, from how
	// soon its rate answered this node's cut (PerFlowRTT; 0: not learnt).
	// rttFromRate says it is the latter. A probe is open from probeAt,
	// when the node cut the flow by probeCut percent; probeRate is the
	// highest arrival rate since (the source's rate may still be rising
	// when the cut reaches it).
	srcRTT              engine.Time
	rttFromRate         bool
	probing             bool
	probeAt             engine.Time
	probeRate, probeCut int64
	deferring           bool
	deferStart          engine.Time
	deferQD             int64
	// §5.7 upstream priority: upstream is 0 until looked up, then
	// upstreamYes or upstreamNo; waiting says the deferral is the wait
	// for an upstream node's first response, waitEnd when the last one
	// ended.
	upstream uint8
	waiting  bool
	waitEnd  engine.Time
	// markedAt is when a data packet of the flow last arrived CE-marked
	// (0: none has; a packet marked upstream cannot arrive at time 0):
	// marked by a node before this one, whose queue is above its K_min
	// (UpstreamFirstMarked).
	markedAt engine.Time

	// link holds the entry's places on the two lists it is on at once:
	// link[byActivity] (most recently active first) and link[byLearning]
	// (most recently learned first).
	link [2]links
}

// The two lists of the flow table, as indices into flowEntry.link.
const (
	byActivity = iota
	byLearning
)

// links are an entry's neighbours on one list.
type links struct{ prev, next *flowEntry }

// nextActive is the next less recently active entry.
func (e *flowEntry) nextActive() *flowEntry { return e.link[byActivity].next }

// list is an intrusive doubly-linked list through flowEntry.link[k]; head
// is the most recent.
type list struct {
	head, tail *flowEntry
	k          int
}

func (l *list) push(e *flowEntry) {
	e.link[l.k] = links{next: l.head}
	if l.head != nil {
		l.head.link[l.k].prev = e
	} else {
		l.tail = e
	}
	l.head = e
}

func (l *list) remove(e *flowEntry) {
	lk := &e.link[l.k]
	if lk.prev != nil {
		lk.prev.link[l.k].next = lk.next
	} else {
		l.head = lk.next
	}
	if lk.next != nil {
		lk.next.link[l.k].prev = lk.prev
	} else {
		l.tail = lk.prev
	}
	*lk = links{}
}

// cmKey names a CM communication: the address of the CM that chose the ID
// and the ID (IDs are unique only within one CM; see wire.CMMessage.FlowQPNs).
type cmKey struct {
	addr netip.Addr
	id   uint32
}

// cmConn is a connection being set up.
type cmConn struct {
	a, b     netip.Addr
	qpA, qpB uint32
	// When the node forwarded the REQ (towards b) and the REP (towards
	// a): REP − REQ is the node's round trip to b, RTU − REP its round
	// trip to a (the hosts answer at once; a real host's processing time
	// is in the estimate, as it is in the flow's loop).
	reqAt, repAt engine.Time
}

// FlowTableCounters count what happened to entries.
type FlowTableCounters struct {
	Learned       int64 // entries created (data or CM)
	LearnedCM     int64 // of which from a CM exchange
	Aged          int64 // removed by the idle timeout
	Evicted       int64 // replaced when the table was full (not those a smaller MaxEntries drops)
	RemovedByCM   int64 // removed on a DREQ
	LearnFailures int64 // packets (or CM messages) whose flow could not be learned: table full with NoReplace, or CM state full
}

// flowTable is the §5.2 flow table.
type flowTable struct {
	m        map[FlowKey]*flowEntry
	byData   map[dataKey]*flowEntry
	lru, ord list
	free     *flowEntry
	seq      uint64
	counters FlowTableCounters

	reqs map[cmKey]cmConn // REQ seen, keyed by (requester, its comm ID)
	reps map[cmKey]cmConn // REP seen, keyed by (responder, its comm ID)

	// ids caches entries of m by the node and QP numbers of the data
	// packets that found them (direct-mapped): a hit saves hashing the
	// 56-byte key with its two addresses, which every data packet paid
	// at every node. An entry is in at most one slot and leaves it when
	// it leaves m (unlink); node numbers name the same addresses for the
	// network's life.
	ids *[idSlots]idCached
}

// idSlots is the size of flowTable.ids.
const idSlots = 512

// idKey is a data packet's flow by node and QP numbers.
type idKey struct {
	src, dst     netsim.NodeID
	srcQP, dstQP uint32
}

type idCached struct {
	k idKey
	e *flowEntry
}

// slot is k's place in flowTable.ids (a multiplicative hash).
func (k idKey) slot() int {
	h := (uint64(uint32(k.src))<<32 | uint64(uint32(k.dst))) * 0x9E3779B97F4A7C15
	h ^= (uint64(k.srcQP)<<32 | uint64(k.dstQP)) * 0xC2B2AE3D27D4EB4F
	return int(h >> (64 - 9))
}

// cacheIDs puts e in slot s for k, taking it out of its previous slot
// and the slot's previous entry out of it.
func (t *flowTable) cacheIDs(s int, k idKey, e *flowEntry) {
	c := &t.ids[s]
	if c.e != nil {
		c.e.idSlot = 0
	}
	if e.idSlot != 0 {
		t.ids[e.idSlot-1] = idCached{}
	}
	*c = idCached{k: k, e: e}
	e.idSlot = int32(s + 1)
}

func newFlowTable() flowTable {
	return flowTable{
		lru:    list{k: byActivity},
		ord:    list{k: byLearning},
		m:      map[FlowKey]*flowEntry{},
		byData: map[dataKey]*flowEntry{},
		reqs:   map[cmKey]cmConn{},
		reps:   map[cmKey]cmConn{},
		ids:    new([idSlots]idCached),
	}
}

func (t *flowTable) len() int { return len(t.m) }

// touch marks e active now.
func (t *flowTable) touch(e *flowEntry, now engine.Time) {
	e.lastSeen = now
	if t.lru.head != e {
		t.lru.remove(e)
		t.lru.push(e)
	}
}

// insert adds an entry for k, making room as the policy says. It returns
// nil when the flow cannot be learned and the evicted entry, if any, which
// the caller must finish with (queue lists, events) and then release.
func (t *flowTable) insert(k FlowKey, now engine.Time, max int, pol Replacement) (e, evicted *flowEntry) {
	if len(t.m) >= max {
		var victim *flowEntry
		switch pol {
		case ReplaceLeastActive:
			victim = t.lru.tail
		case ReplaceOldest:
			victim = t.ord.tail
		}
		if victim == nil {
			t.counters.LearnFailures++
			return nil, nil
		}
		t.unlink(victim)
		t.counters.Evicted++
		evicted = victim
	}
	e = t.free
	if e != nil {
		t.free = e.nextActive()
		*e = flowEntry{}
	} else {
		e = new(flowEntry)
	}
	t.seq++
	*e = flowEntry{key: k, srcNode: -1, seq: t.seq, firstSeen: now, lastSeen: now,
		port: -1, qIdx: -1, winStart: now, peakStart: now}
	t.m[k] = e
	t.byData[dataKey{k.Src, k.Dst, k.DstQP}] = e
	t.lru.push(e)
	t.ord.push(e)
	t.counters.Learned++
	return e, evicted
}

// unlink takes e out of the maps and lists (not out of its queue list).
func (t *flowTable) unlink(e *flowEntry) {
	delete(t.m, e.key)
	if e.idSlot != 0 {
		t.ids[e.idSlot-1] = idCached{}
		e.idSlot = 0
	}
	dk := dataKey{e.key.Src, e.key.Dst, e.key.DstQP}
	if t.byData[dk] == e {
		delete(t.byData, dk)
	}
	t.lru.remove(e)
	t.ord.remove(e)
}

// release returns an unlinked entry to the free list.
func (t *flowTable) release(e *flowEntry) {
	*e = flowEntry{}
	e.link[byActivity].next = t.free
	t.free = e
}

// cmPendingLimit bounds the connections being set up that the table
// remembers, so that unanswered REQs cannot grow it without end.
func cmPendingLimit(max int) int { return max }
