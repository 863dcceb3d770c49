package lhcnp

// The Node and its wiring: its options, its per-port and per-queue state,
// Attach and ApplyConfig, the first-level response (K_max and K_min from
// R_port and RTT_est, programmed into the ports' ECN marking: thresholds,
// configurePort, recompute) and the engine timers (Handle). The node's
// jobs are in files of their own: monitors.go (QD, EMR, QGR, RTT_est),
// learn.go and flowtable.go (the flow table), triggers.go (the two-level
// response and the choice of flows), collaborate.go (collaborative
// suppression), generate.go (severity, action and the notification on the
// wire), cm.go (learning from CM exchanges), notifier.go (another
// mechanism sending the notifications or firing the triggers), state.go
// (State and events), config.go (the configuration and its rules).

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// Format is the wire format of a notification.
type Format uint8

// Formats (§6).
const (
	FormatNone   Format = iota
	FormatICMPv6        // §6.1
	FormatRoCEv2        // §6.2
)

func (f Format) String() string {
	switch f {
	case FormatICMPv6:
		return "icmpv6"
	case FormatRoCEv2:
		return "rocev2"
	case FormatExternal:
		return "external"
	}
	return "none"
}

// Option configures a Node.
type Option func(*options)

type options struct {
	onEvent          func(Event)
	notifier         Notifier
	externalTriggers bool
}

// WithEvents calls f for every event (CNP sent, flow learned, aged,
// evicted, removed, deferral, escalation), on the engine goroutine. f must
// not keep the Event's slices and must not block.
func WithEvents(f func(Event)) Option { return func(o *options) { o.onEvent = f } }

// Node is a congestion-aware intermediate node on one switch. Its methods
// run on the engine goroutine (from other goroutines use engine.Sim.Do).
type Node struct {
	net  *netsim.Network
	sim  *engine.Sim
	sw   *netsim.Switch
	cfg  Config
	opts options

	ports []*portState
	ft    flowTable

	addrs  []netip.Addr
	byAddr map[netip.Addr]netsim.NodeID

	dec      wire.Decoder
	frame    wire.Frame
	buf      [netsim.FrameCap]byte
	objs     [2]wire.ExtObject
	tsBuf    [8]byte
	sel      []*flowEntry
	selRates []int64      // selectByRate's scratch
	demands  []int64      // fairShare's and shareResume's scratch
	caps     []int64      // shareResume's scratch
	held     []*flowEntry // shareResume's scratch
	// equal and equalLevels: the flows equalCut cuts again with the
	// flow fire is cutting, and their Rate Reduce percentages.
	equal       []*flowEntry
	equalLevels []float64
	devID       []byte
	ageGen      uint64
	// deferring: a Checkpoint is out (until Restore or Commit), and
	// ApplyConfig leaves what it cannot undo (shrinking the flow table,
	// re-arming the aging sweep) to the end of it.
	deferring bool
	counters  NodeCounters
}

// NodeCounters are node-wide counters beyond the per-queue ones.
type NodeCounters struct {
	// NoAddress: a notification was due but the node has no source address
	// of the flow source's family, or the source is unknown.
	NoAddress int64
	// NoFormat: no enabled format applies to the source (ICMPv6 off or an
	// IPv4 source, RoCEv2 off or the source not in RoCEv2Receivers).
	NoFormat int64
	// NoRoute: Switch.Send found no route to the source.
	NoRoute int64
	// EncodeErrors: the wire encoder refused the notification (a bug).
	EncodeErrors int64
	// ObjectsOmitted: extension objects left out because the frame with
	// them would exceed netsim.FrameCap (an MTU-sized frame).
	ObjectsOmitted int64
	// CMFrames and CMErrors count the frames given to ObserveCM.
	CMFrames, CMErrors int64
}

// Attach creates a node on sw with cfg and installs it as the observer of
// every port sw has now (connect the switch first). It programs the ports'
// ECN marking when cfg is enabled.
func Attach(net *netsim.Network, sw *netsim.Switch, cfg Config, opts ...Option) (*Node, error) {
	if net == nil || sw == nil {
		return nil, errors.New("lhcnp: attach needs a network and a switch")
	}
	n := &Node{net: net, sim: sw.Sim(), sw: sw, ft: newFlowTable(), byAddr: map[netip.Addr]netsim.NodeID{}}
	for _, o := range opts {
		o(&n.opts)
	}
	if err := cfg.validate(n.opts.notifier != nil); err != nil {
		return nil, fmt.Errorf("lhcnp: switch %s: %w", sw.Name(), err)
	}
	n.dec.CodePoints = cfg.CodePoints
	for i, pt := range sw.Ports() {
		ps := &portState{pt: pt, idx: i, name: pt.Name()}
		for prio := range netsim.NumPrio {
			ps.origECN[prio] = pt.Config().ECN[prio]
			ps.queues[prio].prio = uint8(prio)
		}
		n.ports = append(n.ports, ps)
	}
	n.refreshAddrs()
	n.cfg = cfg.clone()
	n.devID = []byte(cfg.DeviceID)
	for _, ps := range n.ports {
		if err := n.configurePort(ps, n.sim.Now()); err != nil {
			return nil, fmt.Errorf("lhcnp: switch %s: %w", sw.Name(), err)
		}
	}
	n.scheduleAging()
	sw.SetObserver(n)
	for _, ps := range n.ports {
		ps.pt.Out().AddObserver(linkWatch{n, ps})
	}
	return n, nil
}

// Switch returns the switch the node is attached to.
func (n *Node) Switch() *netsim.Switch { return n.sw }

// Config returns a copy of the running configuration.
func (n *Node) Config() Config { return n.cfg.clone() }

// ApplyConfig validates cfg and, only if it is valid, replaces the running
// configuration: thresholds are recomputed and programmed, token buckets
// resized, the flow table shrunk to the new size (least active first).
// On error nothing changes. While a Checkpoint is out the shrinking and
// the aging sweep's re-arming wait for its end (Restore, Commit).
func (n *Node) ApplyConfig(cfg Config) error {
	if err := n.CheckConfig(cfg, n.opts.notifier != nil); err != nil {
		return err
	}
	now := n.sim.Now()
	oldAging := n.cfg.FlowTable.IdleTimeout
	n.cfg = cfg.clone()
	n.devID = []byte(cfg.DeviceID)
	n.dec.CodePoints = cfg.CodePoints
	for _, ps := range n.ports {
		_ = n.configurePort(ps, now) // checked above
	}
	if !n.deferring {
		n.settleTable(oldAging, now)
	}
	// The peers may have changed: look the routes up again.
	for e := n.ft.lru.head; e != nil; e = e.nextActive() {
		e.upstream = upstreamUnknown
	}
	return nil
}

// CheckConfig tells whether ApplyConfig would take cfg (SetNotifier with
// a notifier when withNotifier), changing nothing: a caller that does
// something it cannot undo before configuring the node checks first.
func (n *Node) CheckConfig(cfg Config, withNotifier bool) error {
	if err := cfg.validate(withNotifier); err != nil {
		return fmt.Errorf("lhcnp: switch %s: %w", n.sw.Name(), err)
	}
	// Every port's ECN programming.
	for _, ps := range n.ports {
		ic := cfg.interfaceFor(ps.name)
		for prio := range netsim.NumPrio {
			qc := ic.queueFor(prio)
			kmax, kmin := thresholds(&qc, n.portRate(ps, ic), n.rttFor(ps, ic))
			c := ps.pt.Config()
			c.ECN[prio] = netsim.ECNConfig{Enabled: true, KMinBytes: kmin, KMaxBytes: kmax, PMax: qc.PMax}
			if err := c.Validate(); err != nil {
				return fmt.Errorf("lhcnp: switch %s: port %s: %w", n.sw.Name(), ps.name, err)
			}
		}
	}
	return nil
}

// settleTable fits the flow table to the running configuration: shrunk
// to its size, least active first, and the aging sweep re-armed when the
// idle timeout is not aging, the one it was armed for.
func (n *Node) settleTable(aging, now engine.Time) {
	// Shrunk away, least active first: an event each, but not Evicted,
	// which counts the replacement policy's work (YANG replaced).
	for n.ft.len() > n.cfg.FlowTable.MaxEntries {
		victim := n.ft.lru.tail
		n.ft.unlink(victim)
		n.dropEntry(victim, EventFlowEvicted, now)
	}
	if n.cfg.FlowTable.IdleTimeout != aging {
		n.scheduleAging()
	}
}

// A Checkpoint is what applying a configuration moves in the node and
// applying the one before again does not put back: each port's count and
// time of RTT_est updates and its CNP tokens. From Checkpoint to Restore
// or Commit, which end it, no event runs (a target's Set, between two
// events) and ApplyConfig defers what nothing could undo: the entries a
// smaller flow table evicts, the aging sweep a new idle timeout re-arms
// (a stale sweep would stay pending).
type Checkpoint struct {
	ports []portCheckpoint
	// aging is the idle timeout the aging sweep is armed for.
	aging engine.Time
}

type portCheckpoint struct {
	rtt, rttUpdateAt engine.Time
	rttUpdates       int64
	tokens           int64
}

// Checkpoint returns the node's Checkpoint now; Restore or Commit ends
// it.
func (n *Node) Checkpoint() Checkpoint {
	c := Checkpoint{ports: make([]portCheckpoint, len(n.ports)), aging: n.cfg.FlowTable.IdleTimeout}
	for i, ps := range n.ports {
		c.ports[i] = portCheckpoint{rtt: ps.rtt, rttUpdateAt: ps.rttUpdateAt, rttUpdates: ps.rttUpdates, tokens: ps.tokens}
	}
	n.deferring = true
	return c
}

// Commit ends c, the configuration applied since kept: the flow table is
// shrunk to its size and the aging sweep re-armed for its idle timeout,
// once, if they changed.
func (n *Node) Commit(c Checkpoint) {
	n.deferring = false
	n.settleTable(c.aging, n.sim.Now())
}

// Restore ends c and puts back what it holds, once the configuration that
// ran when c was taken is applied again at the same instant (a Set that
// failed after it configured the node, set back): the flow table keeps
// its entries and the aging sweep its timer (what runs differs from c's
// only where it is not back: those are settled as Commit does), a port
// whose RTT_est is back to the one then counts the updates it counted
// then, the last at the same time (the two changes between are none), and
// has the tokens it had then (those a smaller burst took), within its
// burst.
func (n *Node) Restore(c Checkpoint) {
	n.Commit(c)
	for i, ps := range n.ports {
		if i >= len(c.ports) {
			break
		}
		p := c.ports[i]
		if ps.rtt == p.rtt {
			ps.rttUpdates, ps.rttUpdateAt = p.rttUpdates, p.rttUpdateAt
		}
		ps.tokens = min(p.tokens, ps.ic.CNPBurst*1e9)
	}
}

// portState is the node's view of one egress port.
type portState struct {
	pt   *netsim.Port
	idx  int
	name string
	ic   InterfaceConfig

	rateBitsPerSec int64       // R_port in use
	rtt            engine.Time // RTT_est in use
	reportedRTT    engine.Time
	rttUpdates     int64
	rttUpdateAt    engine.Time

	tokens     int64 // nano-tokens: 1e9 per notification
	lastRefill engine.Time

	origECN  [netsim.NumPrio]netsim.ECNConfig
	queues   [netsim.NumPrio]queueState
	counters PortCounters
}

// PortCounters are per-port counters.
type PortCounters struct {
	NotificationsSent   int64
	SuppressedPortLimit int64
}

// queueState is the monitor, trigger and generation state of one queue.
type queueState struct {
	prio        uint8
	cfg         QueueConfig
	kmax, kmin  int64
	minInterval engine.Time
	resumeHold  engine.Time

	qd       int64
	peak     peakTracker // the highest QD over the last second (PeakQueueBytes)
	qgrT     engine.Time
	qgrQD    int64
	qdT      engine.Time // when qd last changed
	qgr      int64       // bytes per second, last interval
	emrT     engine.Time
	emrPkts  int64
	emrMarks int64
	emr      float64 // percent, last window
	level    uint8

	qdAbove, emrAbove, qgrAbove bool
	holdUntil                   engine.Time
	// drainCheckAt is when drainResume or shareResume looks again.
	drainCheckAt engine.Time
	// condSince is when a second-level condition last started to hold
	// (valid while one holds): the node generates only once one has held
	// for cfg.TriggerPersistence.
	condSince engine.Time

	below      bool
	belowSince engine.Time
	// dropAt is when the queue last tail-dropped a packet (valid when
	// dropped): OverloadCut's severe queue.
	dropAt  engine.Time
	dropped bool
	// episode counts the queue's falls below K_min: a congestion episode
	// ends at each (OneCutPerEpisode).
	episode       uint64
	resumeGen     uint64
	resumePending bool

	flows    []*flowEntry
	last     LastCNP
	counters QueueCounters
}

// QueueCounters are per-queue counters.
type QueueCounters struct {
	Packets, Bytes int64 // data packets enqueued
	ECNMarked      int64
	// MarksSpared counts CE marks the port's marking called for and the
	// node withheld from flows it had cut in the episode
	// (OneCutPerEpisode).
	MarksSpared int64
	// Drops counts buffer overflows: not the packets lost because the
	// egress link was down (netsim.PortStats.DownDropPackets).
	Drops int64
	// Sent by action (Long-haul CNPs: a Notifier's count in SentExternal
	// only) and by format.
	SentNotify, SentPause, SentRateReduce, SentResume int64
	SentICMPv6, SentRoCEv2                            int64
	// SentExternal counts notifications a Notifier sent (WithNotifier).
	SentExternal int64
	// Notifications not sent: per-flow interval, per-port bucket,
	// collaborative deferral.
	SuppressedFlowInterval, SuppressedPortLimit, SuppressedDeferral int64
	// Deferrals counts flows entering deferral; Escalations escalated
	// notifications sent.
	Deferrals, Escalations int64
	// Trigger episodes (a condition becoming true), per reason.
	QDTriggers, EMRTriggers, QGRTriggers int64
}

// LastCNP describes the last notification sent for a queue.
type LastCNP struct {
	Time        engine.Time
	Valid       bool
	Format      Format
	Action      wire.Action
	Parameter   uint16
	CongLevel   uint8
	MetricType  wire.MetricType
	MetricValue uint32
	Trigger     Trigger
	Escalated   bool
	Flow        FlowKey
}

// portOf returns the node's state of pt, or nil for a foreign port.
func (n *Node) portOf(pt *netsim.Port) *portState {
	i := pt.Index()
	if i < len(n.ports) && n.ports[i].pt == pt {
		return n.ports[i]
	}
	return nil
}

// refreshAddrs rebuilds the NodeID → address table.
func (n *Node) refreshAddrs() {
	nodes := n.net.Nodes()
	n.addrs = n.addrs[:0]
	for _, x := range nodes {
		a := x.Addr()
		n.addrs = append(n.addrs, a)
		if a.IsValid() {
			n.byAddr[a] = x.ID()
		}
	}
}

func (n *Node) addrOf(id netsim.NodeID) netip.Addr {
	if int(id) >= len(n.addrs) {
		n.refreshAddrs()
		if int(id) >= len(n.addrs) || id < 0 {
			return netip.Addr{}
		}
	}
	return n.addrs[id]
}

func (n *Node) nodeOf(a netip.Addr) (netsim.NodeID, bool) {
	id, ok := n.byAddr[a]
	if !ok {
		n.refreshAddrs()
		id, ok = n.byAddr[a]
	}
	return id, ok
}

// thresholds computes K_max and K_min (§5.3.2).
func thresholds(qc *QueueConfig, rateBitsPerSec int64, rtt engine.Time) (kmax, kmin int64) {
	if qc.KMaxMode == KMaxExplicit {
		kmax = qc.KMaxBytes
	} else {
		kmax = BDPKMaxBytes(qc.KBaseBytes, qc.Alpha, rateBitsPerSec, rtt.Duration())
	}
	if qc.KMinMode == KMinExplicit {
		kmin = qc.KMinBytes
	} else {
		kmin = kmax / 2 // KMinDerivedFraction
	}
	// K_min MUST be less than K_max (§5.3.2).
	if kmin >= kmax {
		kmin = kmax - 1
	}
	return kmax, kmin
}

// configurePort applies the running configuration to one port.
func (n *Node) configurePort(ps *portState, now engine.Time) error {
	ic := n.cfg.interfaceFor(ps.name)
	ps.ic = *ic
	burst := ic.CNPBurst * 1e9
	if ps.lastRefill == 0 && ps.tokens == 0 {
		ps.tokens = burst
		ps.lastRefill = now
	}
	ps.tokens = min(ps.tokens, burst)
	for prio := range netsim.NumPrio {
		ps.queues[prio].cfg = ic.queueFor(prio)
	}
	return n.recompute(ps, now)
}

// recompute refreshes R_port and RTT_est and, from them, K_max, K_min and
// the derived intervals of every queue, and programs the port's ECN
// marking (§5.3.2: upon RTT_est or rate changes).
func (n *Node) recompute(ps *portState, now engine.Time) error {
	ic := &ps.ic
	rate := n.portRate(ps, ic)
	rtt := n.rttFor(ps, ic)
	if rtt != ps.rtt {
		if ps.rtt != 0 {
			ps.rttUpdates++
		}
		ps.rtt = rtt
		ps.rttUpdateAt = now
	}
	ps.rateBitsPerSec = rate
	c := ps.pt.Config()
	for prio := range netsim.NumPrio {
		q := &ps.queues[prio]
		q.kmax, q.kmin = thresholds(&q.cfg, rate, rtt)
		q.minInterval = q.cfg.MinCNPInterval
		if q.minInterval == 0 {
			q.minInterval = rtt
		}
		q.resumeHold = q.cfg.Action.ResumeHold
		if q.resumeHold == 0 {
			q.resumeHold = rtt
		}
		if n.marks(ps, q) {
			c.ECN[prio] = netsim.ECNConfig{Enabled: true, KMinBytes: q.kmin, KMaxBytes: q.kmax, PMax: q.cfg.PMax}
		} else {
			c.ECN[prio] = ps.origECN[prio]
		}
	}
	return ps.pt.SetConfig(c)
}

// Node event kinds.
const (
	evResume uint32 = iota
	evAge
)

func resumeArg(port, prio int, gen uint64) uint64 {
	return gen<<24 | uint64(port)<<8 | uint64(prio)
}

// Handle implements engine.Handler: the Resume hold timer and flow aging.
func (n *Node) Handle(kind uint32, arg uint64) {
	now := n.sim.Now()
	switch kind {
	case evResume:
		port, prio, gen := int(arg>>8&0xFFFF), int(arg&0xFF), arg>>24
		if port >= len(n.ports) {
			return
		}
		ps := n.ports[port]
		q := &ps.queues[prio]
		if gen != q.resumeGen&(1<<40-1) || !q.below {
			return
		}
		if t := q.belowSince + q.holdFor(); now < t {
			// A second-level condition held since the timer was armed.
			n.sim.At(t, n, evResume, arg)
			return
		}
		q.resumePending = false
		n.resume(ps, q, now)
	case evAge:
		if arg != n.ageGen {
			return
		}
		n.age(now)
		n.scheduleAging()
	}
}
