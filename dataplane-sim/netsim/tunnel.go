package netsim

import "github.com/lhcnp/lhcnp/dataplane-sim/wire"

// terminate ends the tunnel of a RoCEv2 packet that carries the head of
// a tunnelled frame (wire.DecodeEncap) addressed to s: the switch is the
// tunnel's egress (RFC 2473; FCN's egress PE) whatever else it runs. The
// outer header goes, SizeBytes loses wire.TunnelOverheadBytes and the
// packet's ECN becomes what RFC 6040 gives for the inner and outer fields
// (wire.DecapECN). A head that is only the encapsulation (what FCN's
// ingress PE puts on a data packet) is removed with the frame; a longer
// frame keeps its inner part. It reports whether p was consumed (dropped:
// a CE mark on a Not-ECT packet cannot be passed on).
func (s *Switch) terminate(p *Packet) (consumed bool) {
	fr := p.Frame()
	if dst, ok := wire.OuterDst(fr); !ok || dst != s.addr.As16() || !s.addr.Is6() {
		return false
	}
	var h wire.Encap
	if wire.DecodeEncap(fr, &h) != nil {
		return false
	}
	ecn, drop, _ := wire.DecapECN(h.InnerTOS, h.Outer.TrafficClass)
	if drop {
		s.stats.DecapECNDrops++
		s.part.pool.put(p)
		return true
	}
	s.stats.Decapsulated++
	p.ECN = ecn
	p.SizeBytes -= wire.TunnelOverheadBytes
	if len(fr) == h.HeadLen {
		_ = s.part.pool.setFrame(p, nil) // only the encapsulation: the data packet carries no frame
		return false
	}
	inner, _, err := wire.Decapsulate(fr) // a whole frame: its inner part stays
	if err != nil {
		_ = s.part.pool.setFrame(p, nil) // DecodeEncap accepted it: cannot happen
		return false
	}
	p.frameLen = uint16(copy(frameOf(p.fb), inner))
	return false
}
