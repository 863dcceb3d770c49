package fcn

import (
	"fmt"
	"net/netip"

	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// TransitCounters are a WAN node's counters.
type TransitCounters struct {
	// FCNSent messages. TunnelledPackets: packets queued here whose frame
	// carried the tunnel's outer header with a flow label.
	FCNSent, TunnelledPackets int64
	// Congesting flows the node could not report: NotTunnelled, no outer
	// header or no label seen on their packets (not from a PE's tunnel);
	// NotECNCapable, the outer ECN field Not-ECT (§4.2: the sender does
	// not support congestion management).
	NotTunnelled, NotECNCapable int64
	// EncodeErrors, NoRoute: messages that could not be built or routed.
	EncodeErrors, NoRoute int64
}

// outer is what the last packet of a flow carried in its outer header.
type outer struct {
	label uint32
	pe    netip.Addr // the outer source: the ingress PE
	ect   bool       // the outer ECN field is not Not-ECT
}

// Transit is a WAN node: it reads the outer IPv6 header of the tunnelled
// packets it queues (wire.DecodeEncap: the flow label, the ingress PE,
// the ECN field), and when congested it sends the FCN message to the
// ingress PE of the congesting flows (§4.2). It is the switch's port
// observer, in front of its detection node.
type Transit struct {
	net *netsim.Network
	sw  *netsim.Switch
	cfg Config
	lh  *lhcnp.Node
	// flows: the outer header of each flow's last tunnelled packet, by
	// the detection node's flow key; byFlow skips the map when a packet
	// carries what the flow's previous one did (the common case).
	flows    map[lhcnp.FlowKey]outer
	byFlow   []outer
	head     wire.Encap
	buf      [netsim.FrameCap]byte
	counters TransitCounters
	// OnSent, if set, is called for every FCN message, with the flow and
	// the ingress PE it went to.
	OnSent func(k lhcnp.FlowKey, pe *netsim.Switch)
}

// AttachTransit installs a WAN node on sw.
func AttachTransit(net *netsim.Network, sw *netsim.Switch, cfg Config, opts ...lhcnp.Option) (*Transit, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("fcn: switch %s: %w", sw.Name(), err)
	}
	t := newTransit(net, sw, cfg)
	lh, err := lhcnp.Attach(net, sw, cfg.nodeConfig(), append(opts, lhcnp.WithNotifier(t))...)
	if err != nil {
		return nil, fmt.Errorf("fcn: %w", err)
	}
	t.lh = lh
	sw.SetObserver(t)
	return t, nil
}

func newTransit(net *netsim.Network, sw *netsim.Switch, cfg Config) *Transit {
	return &Transit{net: net, sw: sw, cfg: cfg, flows: map[lhcnp.FlowKey]outer{}}
}

// WrapTransit puts a transit function, disabled, around a Long-haul CNP
// node that is already attached (a switch whose management chooses its
// mechanism): disabled, the node runs as configured (Apply).
func WrapTransit(lh *lhcnp.Node) *Transit {
	sw := lh.Switch()
	t := newTransit(sw.Network(), sw, DefaultConfig())
	t.lh = lh
	sw.SetObserver(t)
	return t
}

// Apply sets the switch's mode: with cfg enabled it is a transit node
// (the Long-haul CNP configuration lc is not used), disabled it runs
// Long-haul CNP with lc. Both are validated first; on error nothing
// changes.
func (t *Transit) Apply(cfg Config, lc lhcnp.Config) error {
	if err := setMode(t.lh, t, cfg, lc); err != nil {
		return err
	}
	t.cfg = cfg
	return nil
}

// Config returns the running configuration.
func (t *Transit) Config() Config { return t.cfg }

// Counters returns the counters.
func (t *Transit) Counters() TransitCounters { return t.counters }

// Observer returns the ports' observer: the transit node itself.
func (t *Transit) Observer() netsim.PortObserver { return t }

// Level maps the node's congestion level (0..255) to FCN's three bits,
// 1 lowest to 7 highest.
func Level(congLevel uint8) uint8 { return 1 + uint8(int(congLevel)*7/256) }

// read records the outer header of a tunnelled RoCEv2 packet: its label,
// source (the ingress PE) and ECN field, for the packet's flow.
func (t *Transit) read(p *netsim.Packet) {
	fr := p.Frame()
	if fr == nil || p.Kind != netsim.KindRoCE || p.Flow < 0 || p.HdrLen < wire.BTHLen || !t.cfg.Enabled {
		return
	}
	h := &t.head
	if wire.DecodeEncap(fr, h) != nil || h.Outer.FlowLabel == 0 {
		return
	}
	t.counters.TunnelledPackets++
	o := outer{label: h.Outer.FlowLabel, pe: h.Outer.Src, ect: h.Outer.TrafficClass&3 != netsim.ECNNotECT}
	for len(t.byFlow) <= int(p.Flow) {
		t.byFlow = append(t.byFlow, outer{})
	}
	if t.byFlow[p.Flow] == o {
		return
	}
	t.byFlow[p.Flow] = o
	t.flows[lhcnp.FlowKey{Src: h.InnerSrc, Dst: h.InnerDst, SrcQP: p.SrcQP, DstQP: p.DestQP()}] = o
}

// OnEnqueue implements netsim.PortObserver: the outer header is read
// before the detection node sees the packet (which may report its flow).
func (t *Transit) OnEnqueue(pt *netsim.Port, p *netsim.Packet, q int64) {
	t.read(p)
	t.lh.OnEnqueue(pt, p, q)
}

// OnDequeue implements netsim.PortObserver.
func (t *Transit) OnDequeue(pt *netsim.Port, p *netsim.Packet, q int64) { t.lh.OnDequeue(pt, p, q) }

// OnMark implements netsim.PortObserver.
func (t *Transit) OnMark(pt *netsim.Port, p *netsim.Packet, q int64) { t.lh.OnMark(pt, p, q) }

// OnDrop implements netsim.PortObserver.
func (t *Transit) OnDrop(pt *netsim.Port, p *netsim.Packet, q int64) { t.lh.OnDrop(pt, p, q) }

// peSwitch returns the switch whose address is a.
func (t *Transit) peSwitch(a netip.Addr) *netsim.Switch {
	for _, sw := range t.net.Switches() {
		if sw.Addr() == a {
			return sw
		}
	}
	return nil
}

// Notify implements lhcnp.Notifier: the FCN message with the label the
// flow's packets carry in their outer header and the level, from this
// node to the outer source, the ingress PE; the label is also copied
// into the message's IPv6 flow label (§4.2, optional).
func (t *Transit) Notify(x *lhcnp.Notification) bool {
	o, ok := t.flows[x.Flow]
	if !ok {
		t.counters.NotTunnelled++
		return false
	}
	if !o.ect {
		t.counters.NotECNCapable++
		return false
	}
	pe := t.peSwitch(o.pe)
	if pe == nil {
		t.counters.NoRoute++
		return false
	}
	src := t.cfg.SourceAddress
	if !src.Is6() {
		src = t.sw.Addr()
	}
	if !src.Is6() {
		t.counters.EncodeErrors++
		return false
	}
	a := wire.Addressing{SrcIP: src, DstIP: o.pe, TOS: t.cfg.CNPDSCP << 2, FlowLabel: o.label}
	m := wire.FCNMessage{FlowLabel: o.label, Level: Level(x.CongLevel)}
	n, err := (&wire.Encoder{CodePoints: t.cfg.CodePoints}).FCN(t.buf[:], &a, &m)
	if err != nil {
		t.counters.EncodeErrors++
		return false
	}
	p, err := t.sw.FramePacket(t.buf[:n])
	if err != nil {
		t.counters.EncodeErrors++
		return false
	}
	p.SizeBytes = netsim.LinkBytes(n)
	p.Src, p.Dst = t.sw.ID(), pe.ID()
	p.Flow = netsim.NoFlow
	p.Prio = t.cfg.CNPPrio
	p.ECN = netsim.ECNNotECT
	p.Kind = netsim.KindOther
	// Hdr holds the transport part, as for every packet: the FCN message
	// after the UDP header (what a wire between processes rebuilds).
	p.HdrLen = uint8(copy(p.Hdr[:], t.buf[wire.EthernetLen+wire.IPv6Len+wire.UDPLen:n]))
	if !t.sw.Send(p) {
		t.counters.NoRoute++
		return false
	}
	t.counters.FCNSent++
	if t.OnSent != nil {
		t.OnSent(x.Flow, pe)
	}
	return true
}
