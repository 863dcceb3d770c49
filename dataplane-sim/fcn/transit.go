package fcn

import (
	"fmt"

	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// Resolver gives a WAN node what the outer IPv6 header of a tunnelled
// flow's packets carries: the flow label and the ingress PE (the outer
// source). The simulated packets carry no outer header, so the PEs'
// mappings stand for it.
type Resolver interface {
	Outer(k lhcnp.FlowKey) (label uint32, pe *netsim.Switch, ok bool)
}

// PEs resolves through a set of ingress PEs.
type PEs []*PE

// Outer implements Resolver.
func (ps PEs) Outer(k lhcnp.FlowKey) (uint32, *netsim.Switch, bool) {
	for _, pe := range ps {
		if l, ok := pe.Label(k); ok {
			return l, pe.sw, true
		}
	}
	return 0, nil, false
}

// TransitCounters are a WAN node's counters.
type TransitCounters struct {
	// FCNSent messages; NotTunnelled: congesting flows with no outer label
	// (not from a PE's tunnel); EncodeErrors, NoRoute.
	FCNSent, NotTunnelled, EncodeErrors, NoRoute int64
}

// Transit is a WAN node: when congested it sends FCN messages to the
// ingress PE of the congesting flows (§4.2).
type Transit struct {
	net      *netsim.Network
	sw       *netsim.Switch
	cfg      Config
	res      Resolver
	lh       *lhcnp.Node
	buf      [netsim.FrameCap]byte
	counters TransitCounters
	// OnSent, if set, is called for every FCN message, with the flow.
	OnSent func(k lhcnp.FlowKey, pe *netsim.Switch)
}

// AttachTransit installs a WAN node on sw.
func AttachTransit(net *netsim.Network, sw *netsim.Switch, cfg Config, res Resolver, opts ...lhcnp.Option) (*Transit, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("fcn: switch %s: %w", sw.Name(), err)
	}
	t := &Transit{net: net, sw: sw, cfg: cfg, res: res}
	lh, err := lhcnp.Attach(net, sw, cfg.nodeConfig(), append(opts, lhcnp.WithNotifier(t))...)
	if err != nil {
		return nil, fmt.Errorf("fcn: %w", err)
	}
	t.lh = lh
	return t, nil
}

// Counters returns the counters.
func (t *Transit) Counters() TransitCounters { return t.counters }

// Observer returns the ports' observer (the detection node).
func (t *Transit) Observer() netsim.PortObserver { return t.lh }

// Level maps the node's congestion level (0..255) to FCN's three bits,
// 1 lowest to 7 highest.
func Level(congLevel uint8) uint8 { return 1 + uint8(int(congLevel)*7/256) }

// Notify implements lhcnp.Notifier: the FCN message with the flow's outer
// label and the level, from this node to the flow's ingress PE.
func (t *Transit) Notify(x *lhcnp.Notification) bool {
	label, pe, ok := t.res.Outer(x.Flow)
	if !ok {
		t.counters.NotTunnelled++
		return false
	}
	src, dst := t.sw.Addr(), pe.Addr()
	if !src.IsValid() || !dst.IsValid() || src.Is4() != dst.Is4() {
		t.counters.EncodeErrors++
		return false
	}
	a := wire.Addressing{SrcIP: src, DstIP: dst, TOS: t.cfg.CNPDSCP << 2}
	m := wire.FCNMessage{FlowLabel: label, Level: Level(x.CongLevel)}
	n, err := (&wire.Encoder{CodePoints: t.cfg.CodePoints}).FCN(t.buf[:], &a, &m)
	if err != nil {
		t.counters.EncodeErrors++
		return false
	}
	p := t.net.NewPacket()
	if err := t.net.SetFrame(p, t.buf[:n]); err != nil {
		t.net.FreePacket(p)
		t.counters.EncodeErrors++
		return false
	}
	p.SizeBytes = int32(n + 4)
	p.Src, p.Dst = t.sw.ID(), pe.ID()
	p.Flow = netsim.NoFlow
	p.Prio = t.cfg.CNPPrio
	p.ECN = netsim.ECNNotECT
	p.Kind = netsim.KindOther
	p.HdrLen = uint8(copy(p.Hdr[:], t.buf[:min(n, netsim.HdrCap)]))
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
