package fcn

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/switchcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// Mapping is one flow-label mapping of the ingress PE (YANG
// /lhcnp/fcn/mappings).
type Mapping struct {
	Flow      lhcnp.FlowKey
	FlowLabel uint32
	Created   engine.Time
	LastSeen  engine.Time
	// Packets encapsulated with the label; FCNReceived messages for it.
	Packets, FCNReceived int64

	srcNode netsim.NodeID
	// head is the encapsulation of the flow's last packet (wire.EncapHead
	// for headTOS and headL4): the next one with the same traffic class
	// and length takes a copy.
	head            [wire.EthernetLen + 2*wire.IPv6Len]byte
	headLen, headL4 int
	headTOS         uint8
}

// PECounters are the ingress PE's counters (YANG /lhcnp/fcn/state).
type PECounters struct {
	FCNReceived, CNPTranslated, UnknownFlowLabel int64
	MappingsCreated, MappingsAged, TableFull     int64
	// Encapsulated: packets sent into the tunnel with the outer IPv6
	// header; NoTunnelEnd: packets for the tunnel whose destination has no
	// switch at the far end (sent as they are); EncapErrors: packets the
	// header could not be written for (an IPv4 PE address).
	Encapsulated, NoTunnelEnd, EncapErrors int64
	// DirectCNPs: standard CNPs for the PE's own congestion.
	DirectCNPs int64
	// Malformed FCN messages; Untrusted: from outside the Domain.
	Malformed, Untrusted int64
}

// PE is an ingress PE: the switch's rewrite-stage Forwarder (it encapsulates), the
// ports' observer and the switch's local handler.
type PE struct {
	net    *netsim.Network
	sim    *engine.Sim
	sw     *netsim.Switch
	cfg    Config
	lh     *lhcnp.Node
	snd    *switchcnp.Sender
	tunnel []*netsim.Port
	// egress caches the far end of the tunnel by destination node:
	// egressUnknown until looked up, egressNone when there is none.
	egress   []netsim.NodeID
	enc      wire.Encoder
	head     [wire.EthernetLen + 2*wire.IPv6Len]byte
	byKey    map[lhcnp.FlowKey]*Mapping
	byLabel  map[uint32]*Mapping
	order    []*Mapping
	dec      wire.Decoder
	frame    wire.Frame
	counters PECounters
	agingGen uint64
	// holding: between hold and settle, Apply leaves the aging timer as it
	// is; heldAging is the period at hold.
	holding   bool
	heldAging engine.Time
	// OnTranslated, if set, is called for every CNP sent for an FCN
	// message, with the flow.
	OnTranslated func(lhcnp.FlowKey)
}

// AttachPE installs an ingress PE on sw; tunnel are its ports into the
// WAN tunnel (towards the other FCN nodes).
func AttachPE(net *netsim.Network, sw *netsim.Switch, cfg Config, tunnel []*netsim.Port, opts ...lhcnp.Option) (*PE, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("fcn: switch %s: %w", sw.Name(), err)
	}
	pe := newPE(net, sw, cfg, tunnel)
	lh, err := lhcnp.Attach(net, sw, cfg.nodeConfig(), append(opts, lhcnp.WithNotifier(pe.direct()))...)
	if err != nil {
		return nil, fmt.Errorf("fcn: %w", err)
	}
	pe.lh = lh
	sw.SetObserver(pe)
	sw.SetLocalHandler(pe)
	sw.SetForwarder(netsim.StageRewrite, pe)
	pe.scheduleAging()
	return pe, nil
}

func newPE(net *netsim.Network, sw *netsim.Switch, cfg Config, tunnel []*netsim.Port) *PE {
	pe := &PE{net: net, sim: sw.Sim(), sw: sw, cfg: cfg, tunnel: slices.Clone(tunnel),
		byKey: map[lhcnp.FlowKey]*Mapping{}, byLabel: map[uint32]*Mapping{}, dec: wire.Decoder{CodePoints: cfg.CodePoints}}
	pe.snd = switchcnp.NewSender(net, sw, cfg.CNPDSCP, cfg.CNPPrio)
	pe.snd.Source = cfg.SourceAddress
	return pe
}

// direct is the notifier of the PE's own congestion: a standard CNP.
func (pe *PE) direct() lhcnp.Notifier {
	return notifierFunc(func(x *lhcnp.Notification) bool {
		if pe.snd.Notify(x) {
			pe.counters.DirectCNPs++
			return true
		}
		return false
	})
}

// WrapPE puts an ingress PE function, disabled, around a Long-haul CNP
// node that is already attached (a switch whose management chooses its
// mechanism, Apply): disabled, the node runs as configured.
func WrapPE(lh *lhcnp.Node, tunnel []*netsim.Port) *PE {
	sw := lh.Switch()
	pe := newPE(sw.Network(), sw, DefaultConfig(), tunnel)
	pe.lh = lh
	sw.SetObserver(pe)
	sw.SetLocalHandler(pe)
	sw.SetForwarder(netsim.StageRewrite, pe)
	return pe
}

// Apply sets the switch's mode: with cfg enabled it is an ingress PE (the
// Long-haul CNP configuration lc is not used), disabled it runs Long-haul
// CNP with lc. Both are validated first; on error nothing changes.
func (pe *PE) Apply(cfg Config, lc lhcnp.Config) error {
	if err := setMode(pe.lh, pe.direct(), cfg, lc); err != nil {
		return err
	}
	aging := cfg.AgingTimeout != pe.cfg.AgingTimeout || pe.agingGen == 0
	pe.cfg = cfg
	pe.egress = pe.egress[:0] // routes may have changed since
	for _, m := range pe.order {
		m.headLen = 0
	}
	pe.dec = wire.Decoder{CodePoints: cfg.CodePoints}
	pe.snd.DSCP, pe.snd.Prio, pe.snd.Source = cfg.CNPDSCP, cfg.CNPPrio, cfg.SourceAddress
	if aging && !pe.holding {
		pe.scheduleAging()
	}
	return nil
}

// hold defers the aging timer's re-arming by Apply until settle: a
// configuration applied and then the one before again (a Set set back)
// leaves the timer where it falls. Nothing may run in between.
func (pe *PE) hold() {
	if !pe.holding {
		pe.holding, pe.heldAging = true, pe.cfg.AgingTimeout
	}
}

// settle ends hold: the aging timer is armed, once, if it never was or
// the running period is not the one at hold.
func (pe *PE) settle() {
	if !pe.holding {
		return
	}
	pe.holding = false
	if pe.agingGen == 0 || pe.cfg.AgingTimeout != pe.heldAging {
		pe.scheduleAging()
	}
}

// Config returns the running configuration.
func (pe *PE) Config() Config { return pe.cfg }

type notifierFunc func(*lhcnp.Notification) bool

func (f notifierFunc) Notify(x *lhcnp.Notification) bool { return f(x) }

// Counters returns the counters.
func (pe *PE) Counters() PECounters { return pe.counters }

// Switch returns the switch.
func (pe *PE) Switch() *netsim.Switch { return pe.sw }

// Mappings returns a copy of the table in creation order.
func (pe *PE) Mappings() []Mapping {
	out := make([]Mapping, len(pe.order))
	for i, m := range pe.order {
		out[i] = *m
	}
	return out
}

// Label returns the flow label the PE assigned to a flow it tunnels: what
// it writes into the outer IPv6 header of the flow's packets.
func (pe *PE) Label(k lhcnp.FlowKey) (uint32, bool) {
	if m := pe.byKey[k]; m != nil {
		return m.FlowLabel, true
	}
	return 0, false
}

// newLabel draws a random, locally unique, non-zero 20-bit label (§4.1).
func (pe *PE) newLabel() uint32 {
	for {
		l := uint32(pe.sim.Rand().Uint64() & wire.MaxFCNFlowLabel)
		if l != 0 && pe.byLabel[l] == nil {
			return l
		}
	}
}

// isTunnel reports whether pt is one of the PE's ports into the tunnel.
func (pe *PE) isTunnel(pt *netsim.Port) bool {
	for _, t := range pe.tunnel {
		if t == pt {
			return true
		}
	}
	return false
}

// Sentinels of the egress cache.
const (
	egressUnknown netsim.NodeID = -1
	egressNone    netsim.NodeID = -2
)

// tunnelEnd returns the egress PE of the tunnel towards node dst for
// packet p, which leaves through port out: the last switch on p's route
// (Switch.RouteFlow, its ECMP path), the one the destination hangs off
// (the egress PE of the WANs modelled here). A host hangs off one switch,
// so every equal-cost path ends there and the answer is kept per
// destination. nil when the route ends nowhere, loops or reaches a switch
// without an IPv6 address.
func (pe *PE) tunnelEnd(p *netsim.Packet, out *netsim.Port) *netsim.Switch {
	dst := p.Dst
	for len(pe.egress) <= int(dst) {
		pe.egress = append(pe.egress, egressUnknown)
	}
	if id := pe.egress[dst]; id != egressUnknown {
		if id == egressNone {
			return nil
		}
		sw, _ := pe.net.Node(id).(*netsim.Switch)
		return sw
	}
	var last *netsim.Switch
	node := out.Peer().Node()
	for range len(pe.net.Nodes()) + 1 {
		sw, ok := node.(*netsim.Switch)
		if !ok {
			break
		}
		last = sw
		pt := sw.RouteFlow(p.Src, dst, p.SrcQP, p.DestQP())
		if pt == nil {
			last = nil
			break
		}
		node = pt.Peer().Node()
	}
	if _, atHost := node.(*netsim.Host); !atHost || last == nil || !last.Addr().Is6() {
		pe.egress[dst] = egressNone
		return nil
	}
	pe.egress[dst] = last.ID()
	return last
}

// Forward implements netsim.Forwarder at netsim.StageRewrite: a RoCEv2
// data packet from the DC side going into the tunnel creates or refreshes
// its flow's mapping and is encapsulated (§4.1): the outer IPv6 header from
// the PE to the tunnel's far end with the flow's label and the inner
// traffic class (the ECN with it) copied, next header 41 or 4
// (wire.EncapHead); the packet grows by the header's 40 bytes.
// Acknowledgements, CNPs and CM MADs cross the WAN as they are (they
// belong to no mapped flow), and so do the packets the switch originates
// (in nil: its own notifications go to the senders, never into the
// tunnel). It drops nothing.
func (pe *PE) Forward(_ *netsim.Switch, p *netsim.Packet, in, out *netsim.Port) bool {
	if in != nil {
		pe.encapsulate(p, in, out)
	}
	return true
}

// encapsulate is Forward for a packet the switch forwards.
func (pe *PE) encapsulate(p *netsim.Packet, in, out *netsim.Port) {
	if !pe.cfg.Enabled || p.Kind != netsim.KindRoCE || p.HdrLen < wire.BTHLen || p.Frame() != nil ||
		!pe.isTunnel(out) || pe.isTunnel(in) {
		return
	}
	op := p.Opcode()
	if op >= 0x20 || op == wire.OpRCAck || p.DestQP() == wire.GSIQP {
		return
	}
	src, dst := pe.net.Node(p.Src), pe.net.Node(p.Dst)
	if src == nil || dst == nil {
		return
	}
	end := pe.tunnelEnd(p, out)
	if end == nil {
		pe.counters.NoTunnelEnd++
		return
	}
	k := lhcnp.FlowKey{Src: src.Addr(), Dst: dst.Addr(), SrcQP: p.SrcQP, DstQP: p.DestQP()}
	l4 := wire.RoCEUDPLen(op, int(p.PayloadBytes))
	m := pe.learn(k, p.Src)
	var err error
	if m != nil && m.headLen > 0 && m.headL4 == l4 && m.headTOS == p.ECN {
		err = pe.sw.SetFrame(p, m.head[:m.headLen])
	} else {
		var label uint32 // a full table: tunnelled without a label
		if m != nil {
			label = m.FlowLabel
		}
		a := wire.Addressing{SrcIP: k.Src, DstIP: k.Dst, TOS: p.ECN, Tunnel: wire.Tunnel{
			Present: true, Src: pe.sw.Addr(), Dst: end.Addr(), TrafficClass: p.ECN, FlowLabel: label}}
		var n int
		n, err = pe.enc.EncapHead(pe.head[:], &a, l4)
		if err == nil {
			err = pe.sw.SetFrame(p, pe.head[:n])
		}
		if err == nil && m != nil {
			m.headLen, m.headL4, m.headTOS = copy(m.head[:], pe.head[:n]), l4, p.ECN
		}
	}
	if err != nil {
		pe.counters.EncapErrors++
		return
	}
	p.SizeBytes += wire.TunnelOverheadBytes
	pe.counters.Encapsulated++
}

// learn creates or refreshes the mapping of k; nil when the table is full.
func (pe *PE) learn(k lhcnp.FlowKey, srcNode netsim.NodeID) *Mapping {
	now := pe.sim.Now()
	m := pe.byKey[k]
	if m == nil {
		if len(pe.order) >= pe.cfg.MaxMappings {
			pe.counters.TableFull++
			return nil
		}
		m = &Mapping{Flow: k, FlowLabel: pe.newLabel(), Created: now, srcNode: srcNode}
		pe.byKey[k], pe.byLabel[m.FlowLabel] = m, m
		pe.order = append(pe.order, m)
		pe.counters.MappingsCreated++
	}
	m.LastSeen = now
	m.Packets++
	return m
}

// OnEnqueue implements netsim.PortObserver.
func (pe *PE) OnEnqueue(pt *netsim.Port, p *netsim.Packet, q int64) { pe.lh.OnEnqueue(pt, p, q) }

// OnDequeue implements netsim.PortObserver.
func (pe *PE) OnDequeue(pt *netsim.Port, p *netsim.Packet, q int64) { pe.lh.OnDequeue(pt, p, q) }

// OnMark implements netsim.PortObserver.
func (pe *PE) OnMark(pt *netsim.Port, p *netsim.Packet, q int64) { pe.lh.OnMark(pt, p, q) }

// OnDrop implements netsim.PortObserver.
func (pe *PE) OnDrop(pt *netsim.Port, p *netsim.Packet, q int64) { pe.lh.OnDrop(pt, p, q) }

// HandleLocal implements netsim.LocalHandler: an FCN message for the PE
// becomes a standard CNP to the flow's sender (§4.3).
func (pe *PE) HandleLocal(_ *netsim.Switch, p *netsim.Packet) {
	fr := p.Frame()
	if fr == nil || !pe.cfg.Enabled {
		return
	}
	f := &pe.frame
	if err := pe.dec.Decode(fr, f); err != nil || f.Kind != wire.KindFCN {
		pe.counters.Malformed++
		return
	}
	if src, _ := f.IPAddrs(); !slices.ContainsFunc(pe.cfg.Domain, func(p netip.Prefix) bool { return p.Contains(src) }) {
		pe.counters.Untrusted++
		return
	}
	pe.counters.FCNReceived++
	m := pe.byLabel[f.FCN.FlowLabel]
	if m == nil {
		pe.counters.UnknownFlowLabel++
		return
	}
	m.FCNReceived++
	if pe.snd.Send(m.Flow.Src, m.Flow.SrcQP, m.srcNode) {
		pe.counters.CNPTranslated++
		if pe.OnTranslated != nil {
			pe.OnTranslated(m.Flow)
		}
	}
}

// scheduleAging removes mappings idle for AgingTimeout, checking every
// tenth of it.
func (pe *PE) scheduleAging() {
	pe.agingGen++
	gen := pe.agingGen
	var tick func()
	tick = func() {
		if gen != pe.agingGen {
			return
		}
		now := pe.sim.Now()
		kept := pe.order[:0]
		for _, m := range pe.order {
			if now-m.LastSeen >= pe.cfg.AgingTimeout {
				delete(pe.byKey, m.Flow)
				delete(pe.byLabel, m.FlowLabel)
				pe.counters.MappingsAged++
				continue
			}
			kept = append(kept, m)
		}
		clear(pe.order[len(kept):])
		pe.order = kept
		pe.sim.AtFunc(now+max(pe.cfg.AgingTimeout/10, engine.Microsecond), tick)
	}
	pe.sim.AtFunc(pe.sim.Now()+max(pe.cfg.AgingTimeout/10, engine.Microsecond), tick)
}

// Addr returns the PE's address (the outer source of its tunnel).
func (pe *PE) Addr() netip.Addr { return pe.sw.Addr() }
