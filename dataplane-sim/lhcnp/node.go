package lhcnp

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// Trigger is the reason of a second-level response (§5.4).
type Trigger uint8

// Triggers, in the order that picks the reported one when several hold.
const (
	TriggerNone     Trigger = iota
	TriggerQD               // (a) QD > K_max
	TriggerQGR              // (c) QGR > V_growth
	TriggerEMR              // (b) EMR > V_ecn
	TriggerResume           // not a trigger: QD below K_min for the hold time
	TriggerExternal         // fired by another mechanism (Node.Fire)
)

func (t Trigger) String() string {
	switch t {
	case TriggerQD:
		return "qd"
	case TriggerQGR:
		return "qgr"
	case TriggerEMR:
		return "emr"
	case TriggerResume:
		return "resume"
	case TriggerExternal:
		return "external"
	}
	return "none"
}

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
	devID    []byte
	ageGen   uint64
	counters NodeCounters
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
	n := &Node{net: net, sim: net.Sim(), sw: sw, ft: newFlowTable(), byAddr: map[netip.Addr]netsim.NodeID{}}
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
// On error nothing changes.
func (n *Node) ApplyConfig(cfg Config) error {
	if err := cfg.validate(n.opts.notifier != nil); err != nil {
		return fmt.Errorf("lhcnp: switch %s: %w", n.sw.Name(), err)
	}
	// Check every port's ECN programming before touching anything.
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
	now := n.sim.Now()
	oldAging := n.cfg.FlowTable.IdleTimeout
	n.cfg = cfg.clone()
	n.devID = []byte(cfg.DeviceID)
	n.dec.CodePoints = cfg.CodePoints
	for _, ps := range n.ports {
		_ = n.configurePort(ps, now) // checked above
	}
	for n.ft.len() > n.cfg.FlowTable.MaxEntries {
		victim := n.ft.lru.tail
		n.ft.unlink(victim)
		n.ft.counters.Evicted++
		n.dropEntry(victim, EventFlowEvicted, now)
	}
	if n.cfg.FlowTable.IdleTimeout != oldAging {
		n.scheduleAging()
	}
	// The peers may have changed: look the routes up again.
	for e := n.ft.lru.head; e != nil; e = e.nextActive() {
		e.upstream = upstreamUnknown
	}
	return nil
}

// portState is the node's view of one egress port.
type portState struct {
	pt   *netsim.Port
	idx  int
	name string
	ic   InterfaceConfig

	rateBps     int64       // R_port in use
	rtt         engine.Time // RTT_est in use
	reportedRTT engine.Time
	rttUpdates  int64
	rttUpdateAt engine.Time

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

	qd, peak int64
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
	// condSince is when a second-level condition last started to hold
	// (valid while one holds): the node generates only once one has held
	// for cfg.TriggerPersistence.
	condSince engine.Time

	below         bool
	belowSince    engine.Time
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
	Drops          int64
	// Sent by action and by format.
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

// portRate returns R_port for ps under ic.
func (n *Node) portRate(ps *portState, ic *InterfaceConfig) int64 {
	if ic.PortRateBps > 0 {
		return ic.PortRateBps
	}
	return ps.pt.RateBps()
}

// probeBytes is the size of the simulated RTT probe.
const probeBytes = 64

// rttFor returns RTT_est for ps under ic.
func (n *Node) rttFor(ps *portState, ic *InterfaceConfig) engine.Time {
	switch ic.RTTSource {
	case RTTProbed:
		l := ps.pt.Out()
		return 2*l.Delay() + 2*engine.TxTime(probeBytes, l.RateBps())
	case RTTReported:
		if ps.reportedRTT > 0 {
			return ps.reportedRTT
		}
	}
	return ic.RTTEst
}

// thresholds computes K_max and K_min (§5.3.2).
func thresholds(qc *QueueConfig, rateBps int64, rtt engine.Time) (kmax, kmin int64) {
	if qc.KMaxMode == KMaxExplicit {
		kmax = qc.KMaxBytes
	} else {
		kmax = BDPKMaxBytes(qc.KBaseBytes, qc.Alpha, rateBps, rtt.Duration())
	}
	if qc.KMinMode == KMinExplicit {
		kmin = qc.KMinBytes
	} else {
		kmin = kmax / 2
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
	ps.rateBps = rate
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
		if n.cfg.Enabled && ic.Enabled && q.cfg.Enabled && !n.opts.externalTriggers {
			c.ECN[prio] = netsim.ECNConfig{Enabled: true, KMinBytes: q.kmin, KMaxBytes: q.kmax, PMax: q.cfg.PMax}
		} else {
			c.ECN[prio] = ps.origECN[prio]
		}
	}
	return ps.pt.SetConfig(c)
}

// LinkChanged re-reads the port's rate and delay and recomputes K_max at
// once. The node watches its ports' links itself (netsim.LinkObserver), so
// this is needed only after changes netsim does not report.
func (n *Node) LinkChanged(pt *netsim.Port) {
	if ps := n.portOf(pt); ps != nil {
		_ = n.recompute(ps, n.sim.Now())
	}
}

// ReportRTT sets the receiver-reported RTT_est of the port (used when its
// RTT source is RTTReported) and recomputes K_max.
func (n *Node) ReportRTT(pt *netsim.Port, rtt engine.Time) error {
	ps := n.portOf(pt)
	if ps == nil {
		return fmt.Errorf("lhcnp: port %s is not on switch %s", pt.Name(), n.sw.Name())
	}
	if rtt <= 0 {
		return fmt.Errorf("lhcnp: port %s: reported rtt %v must be positive", pt.Name(), rtt)
	}
	ps.reportedRTT = rtt
	return n.recompute(ps, n.sim.Now())
}

// linkWatch recomputes a port's thresholds when netsim changes the rate or
// delay of its egress link (§5.3.2: upon RTT_est or rate changes).
type linkWatch struct {
	n  *Node
	ps *portState
}

// OnLinkChange implements netsim.LinkObserver.
func (w linkWatch) OnLinkChange(*netsim.Link) { _ = w.n.recompute(w.ps, w.n.sim.Now()) }

// isData reports whether an opcode carries RDMA data (RC/UC send and write,
// UD send); ACKs, read requests, CNPs and vendor opcodes do not.
func isData(op wire.Opcode) bool {
	switch op.Class() {
	case wire.ClassRC, wire.ClassUC:
		low := op & 0x1F
		return low <= 0x0B || low == 0x16 || low == 0x17
	case wire.ClassUD:
		return true
	}
	return false
}

// OnEnqueue implements netsim.PortObserver: flow learning and refresh,
// per-queue counters, the QD and QGR monitors and the triggers.
func (n *Node) OnEnqueue(pt *netsim.Port, p *netsim.Packet, qBytes int64) {
	ps := n.portOf(pt)
	if ps == nil {
		return
	}
	now := n.sim.Now()
	prio := int(p.Prio)
	q := &ps.queues[prio]
	q.qd, q.qdT = qBytes, now
	if qBytes > q.peak {
		q.peak = qBytes
	}
	if p.Kind == netsim.KindRoCE && isData(p.Opcode()) {
		if p.DestQP() != wire.GSIQP {
			size := int64(p.SizeBytes)
			q.counters.Packets++
			q.counters.Bytes += size
			if e := n.learnData(ps, prio, p, now); e != nil {
				e.queued += size
			}
		} else if fr := p.Frame(); fr != nil {
			// A MAD to QP1: the CM exchange that a real node learns from
			// (decode errors are counted in CMErrors).
			_ = n.ObserveCM(fr)
		}
	}
	n.rollQGR(q, now)
	if qBytes >= q.kmin && q.below {
		q.below = false
		q.resumeGen++
		q.resumePending = false
	}
	n.evaluate(ps, q, now)
}

// OnDequeue implements netsim.PortObserver.
func (n *Node) OnDequeue(pt *netsim.Port, p *netsim.Packet, qBytes int64) {
	ps := n.portOf(pt)
	if ps == nil {
		return
	}
	now := n.sim.Now()
	q := &ps.queues[p.Prio]
	q.qd, q.qdT = qBytes, now
	if p.Kind == netsim.KindRoCE && isData(p.Opcode()) && p.DestQP() != wire.GSIQP {
		n.rollEMR(q, now)
		q.emrPkts++
		if e := n.lookupData(p); e != nil {
			e.queued = max(0, e.queued-int64(p.SizeBytes))
		}
	}
	n.rollQGR(q, now)
	if qBytes < q.kmin && !q.below {
		q.below = true
		q.belowSince = now
		q.resumeGen++
		q.resumePending = false
		n.scheduleResume(ps, q)
	}
}

// OnMark implements netsim.PortObserver: the EMR monitor.
func (n *Node) OnMark(pt *netsim.Port, p *netsim.Packet, qBytes int64) {
	ps := n.portOf(pt)
	if ps == nil {
		return
	}
	q := &ps.queues[p.Prio]
	n.rollEMR(q, n.sim.Now())
	q.emrMarks++
	q.counters.ECNMarked++
}

// OnDrop implements netsim.PortObserver.
func (n *Node) OnDrop(pt *netsim.Port, p *netsim.Packet, qBytes int64) {
	if ps := n.portOf(pt); ps != nil {
		ps.queues[p.Prio].counters.Drops++
	}
}

// rollQGR closes the measurement interval when it is over: QGR is the
// change of QD over the interval, in bytes per second (§5.3.1).
func (n *Node) rollQGR(q *queueState, now engine.Time) {
	if now-q.qgrT < q.cfg.MeasurementInterval {
		return
	}
	q.qgr = (q.qd - q.qgrQD) * int64(engine.Second) / int64(now-q.qgrT)
	q.qgrT, q.qgrQD = now, q.qd
}

// qgrAt is the QGR State reports at now, changing nothing: 0 when the
// queue has not changed for a whole interval (no packet since: the growth
// over the last interval is none), otherwise the last interval's, or,
// once an interval is over, what rollQGR would compute then. So an idle
// queue does not keep reporting the growth of its last busy interval.
func (q *queueState) qgrAt(now engine.Time) int64 {
	iv := q.cfg.MeasurementInterval
	switch dt := now - q.qgrT; {
	case now-q.qdT >= iv:
		return 0
	case dt < iv:
		return q.qgr
	default:
		return (q.qd - q.qgrQD) * int64(engine.Second) / int64(dt)
	}
}

// rollEMR closes the EMR window when it is over: EMR is the share of the
// window's data packets this port marked CE (§5.3.1).
func (n *Node) rollEMR(q *queueState, now engine.Time) {
	if now-q.emrT < q.cfg.EMRWindow {
		return
	}
	q.emr = q.emrAt(now)
	q.emrT, q.emrPkts, q.emrMarks = now, 0, 0
}

// emrAt is the EMR the node has at now, changing nothing: the last
// window's, or, once a window is over, what rollEMR would compute then (0
// after a whole window without traffic). State reports it, so an idle port
// does not keep reporting the marking rate of its last busy window.
func (q *queueState) emrAt(now engine.Time) float64 {
	switch d := now - q.emrT; {
	case d < q.cfg.EMRWindow:
		return q.emr
	case d >= 2*q.cfg.EMRWindow || q.emrPkts == 0:
		// A whole window without traffic in between.
		return 0
	}
	return 100 * float64(q.emrMarks) / float64(q.emrPkts)
}

// lookupData finds the entry of a data packet.
func (n *Node) lookupData(p *netsim.Packet) *flowEntry {
	k := FlowKey{Src: n.addrOf(p.Src), Dst: n.addrOf(p.Dst), SrcQP: p.SrcQP, DstQP: p.DestQP()}
	return n.ft.m[k]
}

// learnData refreshes (or learns) the entry of a data packet (§5.2: MUST
// be updated upon each matching packet).
func (n *Node) learnData(ps *portState, prio int, p *netsim.Packet, now engine.Time) *flowEntry {
	k := FlowKey{Src: n.addrOf(p.Src), Dst: n.addrOf(p.Dst), SrcQP: p.SrcQP, DstQP: p.DestQP()}
	e := n.ft.m[k]
	if e == nil {
		if !n.cfg.FlowTable.LearnFromData {
			return nil
		}
		e = n.insert(k, LearnedFromData, now)
		if e == nil {
			return nil
		}
	}
	n.ft.touch(e, now)
	e.srcNode = p.Src
	size := int64(p.SizeBytes)
	e.packets++
	e.bytes += size
	if e.port != int32(ps.idx) || e.prio != uint8(prio) || e.qIdx < 0 {
		n.moveFlow(e, ps, prio)
	}
	e.rollRate(now, ps.queues[prio].cfg.MeasurementInterval, n.obsWindow(ps))
	e.winBytes += size
	return e
}

// insert learns k, handling a replaced entry.
func (n *Node) insert(k FlowKey, from LearnSource, now engine.Time) *flowEntry {
	e, evicted := n.ft.insert(k, now, n.cfg.FlowTable.MaxEntries, n.cfg.FlowTable.Replacement)
	if evicted != nil {
		n.dropEntry(evicted, EventFlowEvicted, now)
	}
	if e == nil {
		return nil
	}
	e.from = from
	if from == LearnedFromCM {
		n.ft.counters.LearnedCM++
	}
	if id, ok := n.nodeOf(k.Src); ok {
		e.srcNode = id
	}
	n.emit(Event{Kind: EventFlowLearned, Time: now, Flow: k, Learned: from})
	return e
}

// dropEntry finishes an entry that left the table.
func (n *Node) dropEntry(e *flowEntry, kind EventKind, now engine.Time) {
	n.leaveQueue(e)
	n.emit(Event{Kind: kind, Time: now, Flow: e.key, Learned: e.from})
	n.ft.release(e)
}

// moveFlow puts e on the flow list of ps's queue prio.
func (n *Node) moveFlow(e *flowEntry, ps *portState, prio int) {
	n.leaveQueue(e)
	q := &ps.queues[prio]
	e.port, e.prio = int32(ps.idx), uint8(prio)
	e.qIdx = len(q.flows)
	e.queued = 0
	q.flows = append(q.flows, e)
}

// leaveQueue takes e off its queue's flow list.
func (n *Node) leaveQueue(e *flowEntry) {
	if e.qIdx < 0 || e.port < 0 {
		return
	}
	q := &n.ports[e.port].queues[e.prio]
	last := len(q.flows) - 1
	moved := q.flows[last]
	q.flows[e.qIdx] = moved
	moved.qIdx = e.qIdx
	q.flows[last] = nil
	q.flows = q.flows[:last]
	e.qIdx = -1
}

// rollRate closes the flow's arrival-rate interval when it is over and
// keeps the peak rate of the observation window in two buckets.
func (e *flowEntry) rollRate(now, iv, win engine.Time) {
	if now-e.winStart < iv {
		return
	}
	dt := now - e.winStart
	e.rateBps = e.winBytes * 8 * int64(engine.Second) / int64(dt)
	e.rateValid = true
	e.winStart, e.winBytes = now, 0
	if now-e.peakStart >= win {
		if now-e.peakStart >= 2*win {
			e.peakPrev = 0
		} else {
			e.peakPrev = e.peakCur
		}
		e.peakCur = 0
		e.peakStart = now
	}
	e.peakCur = max(e.peakCur, e.rateBps)
}

// rateNow closes the interval if it is over and returns the arrival rate,
// counting the time since the last packet (a paused flow's rate falls to
// zero without packets). Only decisions call it: it changes the windows.
func (e *flowEntry) rateNow(now, iv, win engine.Time) int64 {
	e.rollRate(now, iv, win)
	return e.rateBps
}

// rateAt is the rate rateNow would return at now, without closing the
// interval: what snapshots report.
func (e *flowEntry) rateAt(now, iv engine.Time) int64 {
	if dt := now - e.winStart; dt >= iv && dt > 0 {
		return e.winBytes * 8 * int64(engine.Second) / int64(dt)
	}
	return e.rateBps
}

// peak returns the highest arrival rate of the observation window.
func (e *flowEntry) peak() int64 { return max(e.peakCur, e.peakPrev) }

// obsWindow returns the collaborative observation window of a port.
func (n *Node) obsWindow(ps *portState) engine.Time {
	if w := n.cfg.Collaborative.ObservationWindow; w > 0 {
		return w
	}
	return ps.rtt
}

// active reports whether the node may act on queue q of ps.
func (n *Node) active(ps *portState, q *queueState) bool {
	return n.cfg.Enabled && ps.ic.Enabled && q.cfg.Enabled
}

// evaluate checks the second-level conditions (§5.4) and fires when one
// holds and the queue is not holding off.
func (n *Node) evaluate(ps *portState, q *queueState, now engine.Time) {
	qd := q.qd > q.kmax
	// The EMR now, not that of the last window closed: its window closes
	// at a dequeue or a mark, so the first packet after an idle spell
	// longer than a window would find the marking rate of the last busy
	// window (after a burst, 100 %) and fire on it (§3: the fraction of
	// packets marked per unit time).
	emr := q.cfg.VECNPercent > 0 && q.emrAt(now) > q.cfg.VECNPercent
	qgr := q.cfg.VGrowthBytesPerSec > 0 && q.qgr > q.cfg.VGrowthBytesPerSec
	q.level = levelQD(q.qd, q.kmin, q.kmax)
	if n.opts.externalTriggers {
		return // another mechanism detects congestion (Fire)
	}
	if !n.active(ps, q) {
		q.qdAbove, q.emrAbove, q.qgrAbove = qd, emr, qgr
		return
	}
	if qd && !q.qdAbove {
		q.counters.QDTriggers++
	}
	if emr && !q.emrAbove {
		q.counters.EMRTriggers++
	}
	if qgr && !q.qgrAbove {
		q.counters.QGRTriggers++
	}
	was := q.qdAbove || q.emrAbove || q.qgrAbove
	q.qdAbove, q.emrAbove, q.qgrAbove = qd, emr, qgr
	if !qd && !emr && !qgr {
		return
	}
	if !was {
		q.condSince = now
	}
	if q.below {
		// Congestion has not subsided while a second-level condition
		// holds: the Resume hold counts from when none does (§5.5.1).
		q.belowSince = now
	}
	// Persistence: a condition must have held for TriggerPersistence
	// before the node generates (§1: no control packets for transient
	// queue build-up). Conditions are evaluated per enqueue, so a queue
	// that dips below K_max between two packets counts as holding.
	if now-q.condSince < q.cfg.TriggerPersistence || now < q.holdUntil {
		return
	}
	t := TriggerEMR
	switch {
	case qd:
		t = TriggerQD
	case qgr:
		t = TriggerQGR
	}
	n.fire(ps, q, t, now)
}

// fire runs the §5.5 procedure for one trigger: choose the flows with the
// largest share of the queue, apply the per-flow interval, collaborative
// suppression and the per-port limit, and send.
func (n *Node) fire(ps *portState, q *queueState, t Trigger, now engine.Time) {
	level, mt, mv := n.severity(ps, q, t)
	n.selectFlows(q)
	hold := now + q.cfg.MeasurementInterval
	for _, e := range n.sel {
		if e.hasCNP && now-e.lastCNP < q.minInterval {
			q.counters.SuppressedFlowInterval++
			hold = min(hold, e.lastCNP+q.minInterval)
			continue
		}
		deferNow, escalate := n.collaborate(ps, q, e, now)
		if deferNow {
			q.counters.SuppressedDeferral++
			continue
		}
		m := wire.LongHaul{CongLevel: level, SourceQP: e.key.SrcQP, MetricType: mt, MetricValue: mv}
		// §5.5.1: Pause only for severe congestion. Severity for the
		// action is the queue's own (its depth against K_min and K_max),
		// whatever the trigger: a fast-growing or heavily marked queue
		// below K_max gets the default action, never a first Pause.
		m.Action, m.Parameter = policy(&q.cfg.Action, int(levelQD(q.qd, q.kmin, q.kmax)))
		if escalate {
			cs := &n.cfg.Collaborative
			// §5.7: a higher level than this node would send and than the
			// flow last got from it, at least EscalationLevel.
			m.CongLevel = uint8(min(255, max(int(level)+1, cs.EscalationLevel, int(e.lastLevel)+1)))
			m.Action, m.Parameter = escalationAction(&q.cfg.Action, cs.EscalationAction)
		}
		if !n.takeToken(ps, now) {
			q.counters.SuppressedPortLimit++
			ps.counters.SuppressedPortLimit++
			continue
		}
		if n.send(ps, q, e, &m, t, escalate, now) && escalate {
			q.counters.Escalations++
			n.emit(Event{Kind: EventEscalation, Time: now, Port: ps.name, Queue: q.prio, Flow: e.key,
				Action: m.Action, Parameter: m.Parameter, CongLevel: m.CongLevel})
		}
	}
	q.holdUntil = hold
}

// selectFlows fills n.sel with the flows to notify (§5.5 step 1): the
// largest contributors to the queue, at most MaxFlowsPerTrigger, each with
// at least MinSharePercent of the queue (the largest always).
func (n *Node) selectFlows(q *queueState) {
	a := &q.cfg.Action
	n.sel = n.sel[:0]
	for _, e := range q.flows {
		if e.queued <= 0 {
			continue
		}
		// Insertion into a short list sorted by queued bytes, descending.
		i := len(n.sel)
		if i == a.MaxFlowsPerTrigger {
			if e.queued <= n.sel[i-1].queued {
				continue
			}
			i--
		} else {
			n.sel = append(n.sel, nil)
		}
		for i > 0 && n.sel[i-1].queued < e.queued {
			n.sel[i] = n.sel[i-1]
			i--
		}
		n.sel[i] = e
	}
	if len(n.sel) == 0 {
		return
	}
	minBytes := q.qd * int64(a.MinSharePercent) / 100
	k := 1
	for k < len(n.sel) && n.sel[k].queued >= minBytes {
		k++
	}
	n.sel = n.sel[:k]
}

// collaborate applies §5.7 to flow e: defer when its arrival rate fell
// within the observation window (an upstream node acted), escalate when
// the queue kept growing for a whole window while deferring.
func (n *Node) collaborate(ps *portState, q *queueState, e *flowEntry, now engine.Time) (deferNow, escalate bool) {
	cs := &n.cfg.Collaborative
	if !cs.Enabled {
		e.deferring, e.waiting = false, false
		return false, false
	}
	win := n.obsWindow(ps)
	rate := e.rateNow(now, q.cfg.MeasurementInterval, win)
	peak := e.peak()
	dropped := e.rateValid && peak > 0 && rate*100 <= peak*int64(100-cs.ArrivalRateDropPercent)
	// A fall this node caused itself is not upstream control.
	own := e.hasCNP && now-e.lastCNP < win+ps.rtt
	if e.deferring {
		if now-e.deferStart < win {
			return true, false
		}
		if e.waiting {
			// The upstream-priority wait is over. A fall in the flow's
			// rate means the upstream node responded: defer to it from
			// now, as §5.7 says (escalating if the queue keeps growing);
			// otherwise respond.
			e.waiting, e.waitEnd = false, now
			if dropped && !own {
				e.deferStart, e.deferQD = now, q.qd
				return true, false
			}
			e.deferring = false
			return false, false
		}
		if q.qd > e.deferQD {
			// Worse after a whole window: upstream control is not enough.
			e.deferring = false
			return false, true
		}
		if dropped && !own {
			e.deferStart, e.deferQD = now, q.qd
			return true, false
		}
		e.deferring = false
		return false, false
	}
	// Upstream priority (§5.7): the first response of an episode (none
	// from this node and no wait within a window and an RTT_est) waits
	// for a congestion-aware node between the source and this one.
	wait := cs.UpstreamFirst && !own && !dropped && (e.waitEnd == 0 || now-e.waitEnd >= win+ps.rtt) &&
		n.upstreamPeer(e)
	if (dropped && !own) || wait {
		e.deferring, e.waiting = true, wait
		e.deferStart, e.deferQD = now, q.qd
		q.counters.Deferrals++
		n.emit(Event{Kind: EventDeferral, Time: now, Port: ps.name, Queue: q.prio, Flow: e.key, Upstream: wait})
		return true, false
	}
	return false, false
}

// Values of flowEntry.upstream.
const (
	upstreamUnknown uint8 = iota
	upstreamYes
	upstreamNo
)

// upstreamPeer reports whether a peer (Collaborative.Peers) lies on the
// route from e's source to this node, looking it up once per entry.
func (n *Node) upstreamPeer(e *flowEntry) bool {
	if len(n.cfg.Collaborative.Peers) == 0 {
		return false
	}
	if e.upstream == upstreamUnknown {
		e.upstream = upstreamNo
		if n.findUpstreamPeer(e) {
			e.upstream = upstreamYes
		}
	}
	return e.upstream == upstreamYes
}

// findUpstreamPeer walks the route from e's source host towards this
// switch.
func (n *Node) findUpstreamPeer(e *flowEntry) bool {
	if e.srcNode < 0 {
		return false
	}
	h, ok := n.net.Node(e.srcNode).(*netsim.Host)
	if !ok || h.Port() == nil {
		return false
	}
	found := false
	pt := h.Port()
	for range 64 {
		next := pt.Peer().Node()
		if next == netsim.Node(n.sw) {
			return found
		}
		sw, ok := next.(*netsim.Switch)
		if !ok {
			return false
		}
		for _, p := range n.cfg.Collaborative.Peers {
			if a := sw.Addr(); a.IsValid() && p.Contains(a) {
				found = true
			}
		}
		if pt = sw.Route(n.sw.ID()); pt == nil {
			return false
		}
	}
	return false
}

// takeToken takes one notification from the port's bucket (§9: global
// rate limit per port).
func (n *Node) takeToken(ps *portState, now engine.Time) bool {
	const unit = 1_000_000_000
	burst := ps.ic.CNPBurst * unit
	if dt := int64(now - ps.lastRefill); dt > 0 {
		if dt >= burst/ps.ic.CNPRatePerSec+1 {
			ps.tokens = burst
		} else {
			ps.tokens = min(burst, ps.tokens+dt*ps.ic.CNPRatePerSec)
		}
		ps.lastRefill = now
	}
	if ps.tokens < unit {
		return false
	}
	ps.tokens -= unit
	return true
}

// scheduleResume arms the Resume check of a queue that went below K_min.
func (n *Node) scheduleResume(ps *portState, q *queueState) {
	if q.resumePending || !q.cfg.Action.ResumeEnabled || !n.active(ps, q) {
		return
	}
	need := false
	for _, e := range q.flows {
		if e.needResume {
			need = true
			break
		}
	}
	if !need {
		return
	}
	q.resumePending = true
	n.sim.At(q.belowSince+q.resumeHold, n, evResume, resumeArg(ps.idx, int(q.prio), q.resumeGen))
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
		if t := q.belowSince + q.resumeHold; now < t {
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

// resume sends Resume (§5.5.1) to every flow of the queue this node slowed,
// once QD stayed below K_min for the hold time; flows held back by the
// rate limits are retried.
func (n *Node) resume(ps *portState, q *queueState, now engine.Time) {
	if !n.active(ps, q) || !q.cfg.Action.ResumeEnabled {
		return
	}
	retry := engine.Never
	level, mt, mv := n.severity(ps, q, TriggerResume)
	for _, e := range q.flows {
		if !e.needResume {
			continue
		}
		if e.hasCNP && now-e.lastCNP < q.minInterval {
			q.counters.SuppressedFlowInterval++
			retry = min(retry, e.lastCNP+q.minInterval)
			continue
		}
		if !n.takeToken(ps, now) {
			q.counters.SuppressedPortLimit++
			ps.counters.SuppressedPortLimit++
			retry = min(retry, now+engine.Second/engine.Time(ps.ic.CNPRatePerSec))
			continue
		}
		m := wire.LongHaul{CongLevel: level, Action: wire.ActionResume, Parameter: q.cfg.Action.ResumePercent,
			SourceQP: e.key.SrcQP, MetricType: mt, MetricValue: mv}
		n.send(ps, q, e, &m, TriggerResume, false, now)
	}
	if retry != engine.Never {
		q.resumePending = true
		n.sim.At(retry, n, evResume, resumeArg(ps.idx, int(q.prio), q.resumeGen))
	}
}

// scheduleAging arms the next idle-aging sweep.
func (n *Node) scheduleAging() {
	n.ageGen++
	t := n.cfg.FlowTable.IdleTimeout
	if t <= 0 {
		return
	}
	n.sim.After(max(t/4, engine.Microsecond), n, evAge, n.ageGen)
}

// age removes entries idle for longer than the idle timeout (§5.2: SHOULD
// be removed). The activity list is ordered by last packet, so only its
// tail is looked at.
func (n *Node) age(now engine.Time) {
	t := n.cfg.FlowTable.IdleTimeout
	if t <= 0 {
		return
	}
	for e := n.ft.lru.tail; e != nil && now-e.lastSeen >= t; e = n.ft.lru.tail {
		n.ft.unlink(e)
		n.ft.counters.Aged++
		n.dropEntry(e, EventFlowAged, now)
	}
}

// AgeNow runs the idle-aging sweep at once. State does not: it only
// leaves idle entries out.
func (n *Node) AgeNow() { n.age(n.sim.Now()) }
