package sim

import (
	"cmp"
	"encoding/binary"
	"slices"
	"sync"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/report"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// The meter measures what docs/results.md compares mechanisms on, beyond
// what the runner records for every run:
//
//   - Feedback latency, per sender: from the generation of the congestion
//     signal that reached it first on the mechanism's own path to the rate
//     reduction that signal caused at the sender. For DCQCN the signal is
//     the first CE mark of one of the sender's packets at any switch and the
//     reduction the sender's first DCQCN rate cut (the first cut can only
//     follow the first CNP, and the first CNP the first CE-marked packet to
//     reach the receiver: with one marking point on the path, the first one
//     marked). For Long-haul CNP the signal is a Long-haul CNP leaving a
//     node and the reduction what the reaction point did on receiving that
//     very packet (matched FIFO per node and flow): the first one that
//     lowered the rate or paused the QP.
//   - Reaction time, per sender: from the first congestion signal of any
//     kind generated for it (a CE mark or a Long-haul CNP) to its first rate
//     reduction of any cause. For DCQCN it equals the feedback latency; for
//     Long-haul CNP it also counts the time the node waits for a
//     second-level trigger after the first-level marks began.
//   - Congested-period utilisation, per switch egress port: bytes sent over
//     the sample intervals in which the offered load of the flows routed
//     through the port (each flow at its rate cap or its NIC's line rate,
//     from its connection until it finishes or is stopped) exceeded the port's
//     rate, divided by the capacity of those intervals. An ideal mechanism
//     keeps such a port busy: 1.
type meter struct {
	env    *Env
	end    engine.Time  // the run's
	flows  []*flowMeter // by netsim.FlowID
	byQP   map[*netsim.QP]*flowMeter
	byKey  map[lhcnp.FlowKey]*flowMeter
	ports  []*portMeter
	byPort map[*netsim.Port]*portMeter
	// pending: Long-haul CNPs in flight, by node and flow. On a network
	// cut into partitions a node and the sender it notifies may run side
	// by side: pendMu guards the map, and a sender takes only what its own
	// partition reported or what another reported a lookahead or more ago
	// (pendingEntry), so that what it takes never depends on the threads.
	pending map[pendKey][]pendEntry
	pendMu  sync.Mutex
	// lookahead of the cut network (0: not cut).
	lookahead engine.Time
	tapped    map[*netsim.Host]bool
	lastT     engine.Time
	sampled   bool
	// signal names the switch-originated notification the mechanism sends
	// ("long-haul-cnp", "fast-cnp"); "" for DCQCN alone.
	signal string
	// classify, per host, finds the QP a switch-originated notification
	// whose BTH does not name the sender's QP is for (Fast CNP names the
	// receiver's).
	classify map[*netsim.Host]func(*netsim.Host, *netsim.Packet) *netsim.QP
	// switchObs and hostCtl are what mechanisms installed, for chaining
	// a second block on the same node or host.
	switchObs map[*netsim.Switch]netsim.PortObserver
	hostCtl   map[*netsim.Host]netsim.ControlHandler
	// switchCNP: standard CNPs from a switch (p.Src a switch) are the
	// mechanism's signal (the white paper's practice).
	switchCNP bool
	// split: the runner's partSampler samples it (sampleSnap), inside the
	// partitions; else a global event (sample).
	split bool
}

type flowMeter struct {
	name              string
	nf                *netsim.Flow
	start             engine.Time
	offeredBitsPerSec int64
	firstMark         engine.Time // first CE mark of one of its packets
	firstCut          engine.Time // first DCQCN rate cut
	lhSent            engine.Time // first Long-haul CNP sent to it
	lhGen             engine.Time // generation of the Long-haul CNP that first reduced its rate
	lhReact           engine.Time // ... and when it did
	cutCheck          bool        // a DCQCN cut check is scheduled
	// markIn is firstMark per partition of a cut network (nil: not cut),
	// sentIn lhSent.
	markIn, sentIn []engine.Time
	// snapAt, snapDone and snapOffers are the sender's state at the
	// instant snapAt, read in its partition (partSampler).
	snapAt               engine.Time
	snapDone, snapOffers bool
}

// pendEntry is a notification in flight: when it was sent and the
// partition of the switch that reported it.
type pendEntry struct {
	t    engine.Time
	part int
}

type pendKey struct {
	node netsim.NodeID
	flow *flowMeter
}

type portMeter struct {
	pt    *netsim.Port
	flows []*flowMeter // the flows whose path goes through pt
	// live holds the flows of flows that started at or before the last
	// sample and were not finished then; flows[next:] have not started
	// (flows is sorted by start once the meter is built).
	live       []*flowMeter
	next       int
	lastTx     int64
	congested  bool // during the interval since the last sample
	congNs     int64
	congCap    float64
	congTx     int64
	firstCong  engine.Time
	everCongst bool
	// snapTx and snapRate are TxBytes and the rate at the instant being
	// merged, read in the port's partition (partSampler).
	snapTx, snapRate int64
}

const unset = engine.Never

// metered wraps a mechanism with the meter: the meter's observers go in
// first, the mechanism may chain them (Env.TapSwitch, Env.TapHost), and
// whatever the mechanism left untouched is observed directly.
func metered(m Mechanism) Mechanism {
	return MechanismFunc(func(env *Env) error {
		rt := runOf(env)
		if rt.meter != nil {
			// A mechanism.with block: the first block's meter measures.
			return m.Install(env)
		}
		mt := newMeter(env, rt.r.end)
		rt.meter = mt
		for _, sw := range env.Net.Switches() {
			sw.SetObserver(markObserver{mt})
		}
		if err := m.Install(env); err != nil {
			return err
		}
		for _, h := range env.Net.Hosts() {
			if !mt.tapped[h] {
				h.SetControlHandler(&hostTap{m: mt})
			}
		}
		env.Net.AddRetireObserver(mt)
		if rt.r.canSplitSamples() {
			// The runner's partSampler reads it in the partitions.
			mt.split = true
		} else {
			env.Group.EveryGlobal(0, engine.FromDuration(env.Scenario.SampleInterval), mt.sample)
		}
		env.OnSummary(mt.finish)
		return nil
	})
}

func newMeter(env *Env, end engine.Time) *meter {
	m := &meter{env: env, end: end, byQP: map[*netsim.QP]*flowMeter{}, byKey: map[lhcnp.FlowKey]*flowMeter{},
		byPort: map[*netsim.Port]*portMeter{}, pending: map[pendKey][]pendEntry{}, tapped: map[*netsim.Host]bool{},
		classify:  map[*netsim.Host]func(*netsim.Host, *netsim.Packet) *netsim.QP{},
		switchObs: map[*netsim.Switch]netsim.PortObserver{}, hostCtl: map[*netsim.Host]netsim.ControlHandler{}}
	for _, pt := range env.Net.Ports() {
		if _, ok := pt.Node().(*netsim.Switch); ok {
			pm := &portMeter{pt: pt, firstCong: unset}
			m.ports = append(m.ports, pm)
			m.byPort[pt] = pm
		}
	}
	if g := env.Group; g.Len() > 1 {
		m.lookahead = g.Lookahead()
	}
	starts := map[string]scenario.Flow{}
	for _, f := range env.Scenario.Flows {
		starts[f.Name] = f
	}
	for _, nf := range env.Net.Flows() {
		sf := starts[nf.Name]
		q := nf.Sender
		src := q.Host()
		fm := &flowMeter{name: nf.Name, nf: nf, start: engine.FromDuration(sf.Start),
			offeredBitsPerSec: src.Port().RateBitsPerSec(), firstMark: unset, firstCut: unset, lhSent: unset, lhGen: unset, lhReact: unset}
		if sf.Rate > 0 {
			fm.offeredBitsPerSec = min(fm.offeredBitsPerSec, int64(sf.Rate))
		}
		if g := env.Group; g.Len() > 1 {
			fm.markIn, fm.sentIn = make([]engine.Time, g.Len()), make([]engine.Time, g.Len())
			for i := range fm.markIn {
				fm.markIn[i], fm.sentIn[i] = unset, unset
			}
		}
		m.flows = append(m.flows, fm)
		m.byQP[q] = fm
		dst := env.Net.NodeByName(sf.Dst)
		if dst == nil {
			continue
		}
		m.byKey[lhcnp.FlowKey{Src: src.Addr(), Dst: dst.Addr(), SrcQP: q.QPN, DstQP: q.PeerQPN}] = fm
		// The switch egress ports on its path, by the routing tables.
		pt := src.Port()
		for hops := 0; pt != nil && hops < 64; hops++ {
			sw, ok := pt.Peer().Node().(*netsim.Switch)
			if !ok {
				break
			}
			pt = sw.RouteFlow(src.ID(), dst.ID(), q.QPN, q.PeerQPN)
			if pm := m.byPort[pt]; pm != nil {
				pm.flows = append(pm.flows, fm)
			}
		}
	}
	for _, pm := range m.ports {
		slices.SortStableFunc(pm.flows, func(a, b *flowMeter) int { return cmp.Compare(a.start, b.start) })
	}
	return m
}

// OnRetire implements netsim.RetireObserver: the meter lets go of a
// retired flow's sender QP (its flowMeter stays, by flow number).
func (m *meter) OnRetire(f *netsim.Flow) { delete(m.byQP, f.Sender) }

// mark records the first CE mark of a flow's packet.
func (m *meter) mark(pt *netsim.Port, p *netsim.Packet) {
	if p.Flow < 0 || int(p.Flow) >= len(m.flows) {
		return
	}
	fm := m.flows[p.Flow]
	if fm.markIn != nil {
		// A cut network: each partition keeps its own first mark (its
		// switches run side by side); finish takes the earliest.
		sw := pt.Node().(*netsim.Switch)
		if i := m.env.Net.Partition(sw); fm.markIn[i] == unset {
			fm.markIn[i] = sw.Sim().Now()
		}
		return
	}
	if fm.firstMark == unset {
		fm.firstMark = m.env.Sim.Now()
	}
}

// longHaulEvent records the notifications a node sends, reported by
// switch from (in its partition).
func (m *meter) longHaulEvent(from *netsim.Switch, ev *lhcnp.Event) {
	if ev.Kind != lhcnp.EventCNPSent {
		return
	}
	fm := m.byKey[ev.Flow]
	sw, ok := m.env.Net.NodeByName(ev.Node).(*netsim.Switch)
	if fm == nil || !ok {
		return
	}
	part := 0
	if from != nil {
		part = m.env.Net.Partition(from)
	}
	if ev.Action != wire.ActionResume {
		if fm.sentIn != nil {
			fm.sentIn[part] = min(fm.sentIn[part], ev.Time)
		} else if fm.lhSent == unset {
			fm.lhSent = ev.Time
		}
	}
	k := pendKey{sw.ID(), fm}
	m.pendMu.Lock()
	m.pending[k] = append(m.pending[k], pendEntry{ev.Time, part})
	m.pendMu.Unlock()
}

// takePending removes and returns the generation time of the oldest
// notification in flight from node to fm that a sender in partition part
// can have received at now (unset: none). On a network that is not cut
// that is the first in the list. On a cut one the sender takes what its
// own partition reported (already, in its order) or what another
// reported at least a lookahead before now (in a window before this one,
// so it is there whatever the threads); the oldest of those, ties to the
// lower partition.
func (m *meter) takePending(node netsim.NodeID, fm *flowMeter, part int, now engine.Time) engine.Time {
	k := pendKey{node, fm}
	m.pendMu.Lock()
	defer m.pendMu.Unlock()
	pend := m.pending[k]
	best := -1
	for i, e := range pend {
		if e.part != part && (m.lookahead == 0 || e.t > now-m.lookahead) {
			continue
		}
		if best < 0 || e.t < pend[best].t || (e.t == pend[best].t && e.part < pend[best].part) {
			best = i
		}
		if m.lookahead == 0 {
			break
		}
	}
	if best < 0 {
		return unset
	}
	gen := pend[best].t
	if best == 0 {
		m.pending[k] = pend[1:]
	} else {
		m.pending[k] = append(pend[:best], pend[best+1:]...)
	}
	return gen
}

// offersLoad reports whether a flow's sender offers load: from the moment
// it can send (its connection is up) until it finishes or is stopped, and
// not paused for good.
func offersLoad(q *netsim.QP) bool {
	return q.Active() && !q.AdminStopped() && q.PausedUntil() != engine.Never
}

// sample closes the interval since the last sample for every switch port
// and decides whether the next one is congested.
func (m *meter) sample(now engine.Time) { m.sampleFrom(now, false) }

// sampleSnap is sample from the partitions' snapshots of now (the ports'
// snapTx and snapRate, the flows' snapDone and snapOffers).
func (m *meter) sampleSnap(now engine.Time) { m.sampleFrom(now, true) }

func (m *meter) sampleFrom(now engine.Time, snap bool) {
	m.advance(now, snap)
	for _, pm := range m.ports {
		for ; pm.next < len(pm.flows) && pm.flows[pm.next].start <= now; pm.next++ {
			pm.live = append(pm.live, pm.flows[pm.next])
		}
		var demand int64
		keep := pm.live[:0]
		for _, fm := range pm.live {
			var done, offers bool
			if snap {
				if fm.snapAt != now {
					panic("sim: meter: flow " + fm.name + " not read at the sample")
				}
				done, offers = fm.snapDone, fm.snapOffers
			} else {
				done, _ = fm.nf.Done()
				offers = !done && offersLoad(fm.nf.Sender)
			}
			if done {
				continue // for good: a finished flow never offers again
			}
			keep = append(keep, fm)
			if offers {
				demand += fm.offeredBitsPerSec
			}
		}
		clear(pm.live[len(keep):])
		pm.live = keep
		rate := pm.snapRate
		if !snap {
			rate = pm.pt.RateBitsPerSec()
		}
		pm.congested = demand > rate
	}
}

// advance closes the interval since the last sample at now, reading the
// ports' TxBytes and rates (snap: their snapshots).
func (m *meter) advance(now engine.Time, snap bool) {
	txOf := func(pm *portMeter) int64 {
		if snap {
			return pm.snapTx
		}
		return pm.pt.Stats().TxBytes
	}
	if m.sampled && now > m.lastT {
		dt := now - m.lastT
		for _, pm := range m.ports {
			tx := txOf(pm)
			if pm.congested {
				if !pm.everCongst {
					pm.everCongst, pm.firstCong = true, m.lastT
				}
				pm.congNs += int64(dt)
				rate := pm.snapRate
				if !snap {
					rate = pm.pt.RateBitsPerSec()
				}
				pm.congCap += float64(rate) * dt.Seconds()
				pm.congTx += tx - pm.lastTx
			}
			pm.lastTx = tx
		}
	} else if !m.sampled {
		for _, pm := range m.ports {
			pm.lastTx = txOf(pm)
		}
	}
	m.sampled, m.lastT = true, now
}

// finish closes the last interval and hands the measurements to the
// summary.
func (m *meter) finish(in *report.Input) {
	m.advance(m.end, false)
	// By node and peer name, as the summary names a port: one look-up a
	// port, not a pass over all of them (a k = 48 fat-tree has 166 000
	// switch ports). The last of a name wins, as it did.
	byName := make(map[[2]string]*portMeter, len(m.ports))
	for _, pm := range m.ports {
		byName[[2]string{pm.pt.Node().Name(), pm.pt.Peer().Node().Name()}] = pm
	}
	for i := range in.Ports {
		p := &in.Ports[i]
		if pm := byName[[2]string{p.Node, p.Port}]; pm != nil {
			p.CongestedNs = pm.congNs
			p.CongestedCapacityBits = pm.congCap
			p.CongestedTxBytes = pm.congTx
			if pm.everCongst {
				p.FirstCongestedNs = pm.firstCong.Nanos()
			} else {
				p.FirstCongestedNs = -1
			}
		}
	}
	lh := m.signal != ""
	in.FeedbackSignal = "ce-mark"
	if lh {
		in.FeedbackSignal = m.signal
	}
	ns := func(t engine.Time) int64 {
		if t == unset {
			return -1
		}
		return t.Nanos()
	}
	for _, fm := range m.flows {
		for _, t := range fm.markIn {
			fm.firstMark = min(fm.firstMark, t)
		}
		for _, t := range fm.sentIn {
			fm.lhSent = min(fm.lhSent, t)
		}
		fi := report.FeedbackInput{Flow: fm.name, SignalNs: ns(fm.firstMark), ReactionNs: ns(fm.firstCut)}
		if lh {
			fi.SignalNs, fi.ReactionNs = ns(fm.lhGen), ns(fm.lhReact)
			if fm.lhReact == unset {
				fi.SignalNs = ns(fm.lhSent)
			}
		}
		fi.FirstSignalNs = ns(min(fm.firstMark, fm.lhSent))
		fi.FirstReductionNs = ns(min(fm.firstCut, fm.lhReact))
		in.Feedback = append(in.Feedback, fi)
	}
}

// markObserver is the meter's observer on a switch's egress ports.
type markObserver struct{ m *meter }

func (o markObserver) OnEnqueue(*netsim.Port, *netsim.Packet, int64) {}
func (o markObserver) OnDequeue(*netsim.Port, *netsim.Packet, int64) {}
func (o markObserver) OnMark(pt *netsim.Port, p *netsim.Packet, _ int64) {
	o.m.mark(pt, p)
}
func (o markObserver) OnDrop(*netsim.Port, *netsim.Packet, int64) {}

// teeObserver gives every port event to a mechanism's observer, then to
// the meter.
type teeObserver struct {
	o netsim.PortObserver
	m *meter
}

func (t teeObserver) OnEnqueue(pt *netsim.Port, p *netsim.Packet, q int64) { t.o.OnEnqueue(pt, p, q) }
func (t teeObserver) OnDequeue(pt *netsim.Port, p *netsim.Packet, q int64) { t.o.OnDequeue(pt, p, q) }
func (t teeObserver) OnMark(pt *netsim.Port, p *netsim.Packet, q int64) {
	t.o.OnMark(pt, p, q)
	t.m.mark(pt, p)
}
func (t teeObserver) OnDrop(pt *netsim.Port, p *netsim.Packet, q int64) { t.o.OnDrop(pt, p, q) }

// TapSwitch installs o as the observer of sw's ports, with the meter
// behind it when the run is metered.
func (e *runEnv) TapSwitch(sw *netsim.Switch, o netsim.PortObserver) {
	if e.meter == nil {
		sw.SetObserver(o)
		return
	}
	if prev := e.meter.switchObs[sw]; prev != nil {
		o = observers{prev, o}
	}
	e.meter.switchObs[sw] = o
	if f, ok := o.(netsim.MarkFilter); ok {
		sw.SetObserver(filterTee{teeObserver{o: o, m: e.meter}, f})
		return
	}
	sw.SetObserver(teeObserver{o: o, m: e.meter})
}

// filterTee is a teeObserver whose mechanism also filters marks.
type filterTee struct {
	teeObserver
	f netsim.MarkFilter
}

func (t filterTee) AllowMark(pt *netsim.Port, p *netsim.Packet) bool { return t.f.AllowMark(pt, p) }

// observers gives every port event to two mechanisms' observers on one
// switch (mechanism.with blocks that coexist); marks are filtered by the
// first that filters.
type observers [2]netsim.PortObserver

func (o observers) OnEnqueue(pt *netsim.Port, p *netsim.Packet, q int64) {
	o[0].OnEnqueue(pt, p, q)
	o[1].OnEnqueue(pt, p, q)
}
func (o observers) OnDequeue(pt *netsim.Port, p *netsim.Packet, q int64) {
	o[0].OnDequeue(pt, p, q)
	o[1].OnDequeue(pt, p, q)
}
func (o observers) OnMark(pt *netsim.Port, p *netsim.Packet, q int64) {
	o[0].OnMark(pt, p, q)
	o[1].OnMark(pt, p, q)
}
func (o observers) OnDrop(pt *netsim.Port, p *netsim.Packet, q int64) {
	o[0].OnDrop(pt, p, q)
	o[1].OnDrop(pt, p, q)
}
func (o observers) AllowMark(pt *netsim.Port, p *netsim.Packet) bool {
	for _, x := range o {
		if f, ok := x.(netsim.MarkFilter); ok && !f.AllowMark(pt, p) {
			return false
		}
	}
	return true
}

// handlers offers a control packet to two mechanisms' handlers on one
// host in turn.
type handlers [2]netsim.ControlHandler

func (hs handlers) HandleControl(h *netsim.Host, p *netsim.Packet) bool {
	return hs[0].HandleControl(h, p) || hs[1].HandleControl(h, p)
}

// TapHost installs c as h's control handler, with the meter around it
// when the run is metered.
func (e *runEnv) TapHost(h *netsim.Host, c netsim.ControlHandler) {
	if e.meter == nil {
		h.SetControlHandler(c)
		return
	}
	e.meter.tapped[h] = true
	if prev := e.meter.hostCtl[h]; prev != nil {
		c = handlers{prev, c}
	}
	e.meter.hostCtl[h] = c
	h.SetControlHandler(&hostTap{m: e.meter, inner: c})
}

// hostTap watches the notifications a host receives and the rate changes
// they cause, then lets the inner handler (or, without one, DCQCN) act.
type hostTap struct {
	m     *meter
	inner netsim.ControlHandler
}

// HandleControl implements netsim.ControlHandler.
func (t *hostTap) HandleControl(h *netsim.Host, p *netsim.Packet) bool {
	m := t.m
	var qpn uint32
	extended := false
	switch {
	case p.Kind == netsim.KindRoCE && p.HdrLen >= wire.BTHLen && p.Opcode() == wire.OpCNP:
		qpn = p.DestQP()
		extended = p.Hdr[4]&wire.BTHE != 0
		if m.switchCNP {
			_, fromSwitch := m.env.Net.Node(p.Src).(*netsim.Switch)
			extended = extended || fromSwitch
		}
	case p.Kind == netsim.KindOther && p.HdrLen >= 16 && p.Hdr[0] == wire.DefaultCodePoints().LongHaulICMPv6Type:
		qpn = binary.BigEndian.Uint32(p.Hdr[8:12])
		extended = true
	default:
		return t.inner != nil && t.inner.HandleControl(h, p)
	}
	q := h.QP(qpn)
	if cl := m.classify[h]; cl != nil {
		if fq := cl(h, p); fq != nil {
			q, extended = fq, true
		}
	}
	fm := m.byQP[q]
	if fm == nil {
		return t.inner != nil && t.inner.HandleControl(h, p)
	}
	sim := h.Sim() // the host's partition's
	now := sim.Now()
	rate, paused := q.RateBitsPerSec(), q.PausedUntil()
	handled := t.inner != nil && t.inner.HandleControl(h, p)
	if extended {
		gen := m.takePending(p.Src, fm, m.env.Net.Partition(h), now)
		reduced := q.RateBitsPerSec() < rate || q.PausedUntil() > max(now, paused)
		if handled && reduced && fm.lhReact == unset && gen != unset {
			fm.lhGen, fm.lhReact = gen, now
		}
		if !handled && fm.lhReact == unset && gen != unset {
			// A standard CNP from a switch: DCQCN applies it after this
			// returns, and a cut shows in its counter at once.
			cuts := q.RateCuts()
			sim.AtFunc(now, func() {
				if q.RateCuts() > cuts && q.RateBitsPerSec() < rate && fm.lhReact == unset {
					fm.lhGen, fm.lhReact = gen, now
				}
			})
		}
	}
	if !handled && fm.firstCut == unset && !fm.cutCheck {
		// DCQCN applies the CNP after this returns; a first cut shows in
		// the cut counter at once (a first CNP never waits for the monitor
		// period).
		cuts := q.RateCuts()
		fm.cutCheck = true
		sim.AtFunc(now, func() {
			fm.cutCheck = false
			if q.RateCuts() > cuts && fm.firstCut == unset {
				fm.firstCut = now
			}
		})
	}
	return handled
}
