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
}

// PECounters are the ingress PE's counters (YANG /lhcnp/fcn/state).
type PECounters struct {
	FCNReceived, CNPTranslated, UnknownFlowLabel int64
	MappingsCreated, MappingsAged, TableFull     int64
	// DirectCNPs: standard CNPs for the PE's own congestion.
	DirectCNPs int64
	// Malformed FCN messages; Untrusted: from outside the Domain.
	Malformed, Untrusted int64
}

// PE is an ingress PE: the ports' observer and the switch's local handler.
type PE struct {
	net      *netsim.Network
	sim      *engine.Sim
	sw       *netsim.Switch
	cfg      Config
	lh       *lhcnp.Node
	snd      *switchcnp.Sender
	tunnel   map[*netsim.Port]bool
	byKey    map[lhcnp.FlowKey]*Mapping
	byLabel  map[uint32]*Mapping
	order    []*Mapping
	dec      wire.Decoder
	frame    wire.Frame
	counters PECounters
	agingGen uint64
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
	pe.scheduleAging()
	return pe, nil
}

func newPE(net *netsim.Network, sw *netsim.Switch, cfg Config, tunnel []*netsim.Port) *PE {
	pe := &PE{net: net, sim: net.Sim(), sw: sw, cfg: cfg, tunnel: map[*netsim.Port]bool{},
		byKey: map[lhcnp.FlowKey]*Mapping{}, byLabel: map[uint32]*Mapping{}, dec: wire.Decoder{CodePoints: cfg.CodePoints}}
	for _, pt := range tunnel {
		pe.tunnel[pt] = true
	}
	pe.snd = switchcnp.NewSender(net, sw, cfg.CNPDSCP, cfg.CNPPrio)
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
	return pe
}

// Apply sets the switch's mode: with cfg enabled it is an ingress PE (the
// Long-haul CNP configuration lc is not used), disabled it runs Long-haul
// CNP with lc. Both are validated first; on error nothing changes.
func (pe *PE) Apply(cfg Config, lc lhcnp.Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("fcn: switch %s: %w", pe.sw.Name(), err)
	}
	var err error
	if cfg.Enabled {
		err = pe.lh.SetNotifier(pe.direct(), cfg.nodeConfig())
	} else {
		err = pe.lh.SetNotifier(nil, lc)
	}
	if err != nil {
		return fmt.Errorf("fcn: %w", err)
	}
	aging := cfg.AgingTimeout != pe.cfg.AgingTimeout || pe.agingGen == 0
	pe.cfg = cfg
	pe.dec = wire.Decoder{CodePoints: cfg.CodePoints}
	pe.snd.DSCP, pe.snd.Prio = cfg.CNPDSCP, cfg.CNPPrio
	if aging {
		pe.scheduleAging()
	}
	return nil
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

// Label returns the flow label of a flow the PE tunnels: what a WAN node
// reads in the outer IPv6 header of the flow's packets (Resolver).
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

// OnEnqueue implements netsim.PortObserver: a data packet going into the
// tunnel creates or refreshes its flow's mapping (§4.1).
func (pe *PE) OnEnqueue(pt *netsim.Port, p *netsim.Packet, q int64) {
	pe.lh.OnEnqueue(pt, p, q)
	if !pe.cfg.Enabled || !pe.tunnel[pt] || p.Kind != netsim.KindRoCE || p.HdrLen < wire.BTHLen {
		return
	}
	if op := p.Opcode(); op >= 0x20 || op == wire.OpRCAck || p.DestQP() == wire.GSIQP {
		return
	}
	src, dst := pe.net.Node(p.Src), pe.net.Node(p.Dst)
	if src == nil || dst == nil {
		return
	}
	k := lhcnp.FlowKey{Src: src.Addr(), Dst: dst.Addr(), SrcQP: p.SrcQP, DstQP: p.DestQP()}
	now := pe.sim.Now()
	m := pe.byKey[k]
	if m == nil {
		if len(pe.order) >= pe.cfg.MaxMappings {
			pe.counters.TableFull++
			return
		}
		m = &Mapping{Flow: k, FlowLabel: pe.newLabel(), Created: now, srcNode: p.Src}
		pe.byKey[k], pe.byLabel[m.FlowLabel] = m, m
		pe.order = append(pe.order, m)
		pe.counters.MappingsCreated++
	}
	m.LastSeen = now
	m.Packets++
}

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
