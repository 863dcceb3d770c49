package switchcnp

import (
	"net/netip"

	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// Sender builds standard RoCEv2 CNPs (IBA Annex A17: opcode 0x81, BECN, 16
// reserved bytes) on behalf of a switch and sends them to a flow's sender:
// an lhcnp.Notifier.
type Sender struct {
	net *netsim.Network
	sw  *netsim.Switch
	// DSCP and Prio are the CNPs' class (white paper §2.3.2: the DSCP is
	// the one the RNICs expect, configured by the user).
	DSCP, Prio uint8
	// Source is the CNPs' source address (the switch's loopback, YANG
	// source-address) for a flow of its family; invalid, or of the other
	// family: the switch's address.
	Source netip.Addr
	// Sent and Failed count CNPs sent and those that could not leave.
	Sent, Failed int64
	buf          [netsim.FrameCap]byte
}

// NewSender returns a sender for sw.
func NewSender(net *netsim.Network, sw *netsim.Switch, dscp, prio uint8) *Sender {
	return &Sender{net: net, sw: sw, DSCP: dscp, Prio: prio}
}

// Send sends a standard CNP for the flow from src whose sender's QP is
// srcQP to src's node srcNode, from Source or the switch's address,
// whichever is of src's family (Source first).
func (s *Sender) Send(src netip.Addr, srcQP uint32, srcNode netsim.NodeID) bool {
	from := s.Source
	if !from.IsValid() || from.Is4() != src.Is4() {
		from = s.sw.Addr()
	}
	if !from.IsValid() || from.Is4() != src.Is4() {
		s.Failed++
		return false
	}
	a := wire.Addressing{SrcIP: from, DstIP: src, TOS: s.DSCP << 2, SrcPort: 0xC000 | uint16(srcQP&0x3FFF)}
	n, err := (&wire.Encoder{}).CNP(s.buf[:], &a, &wire.CNP{DestQP: srcQP})
	if err != nil {
		s.Failed++
		return false
	}
	p, err := s.sw.FramePacket(s.buf[:n])
	if err != nil {
		s.Failed++
		return false
	}
	ip := 40
	if src.Is4() {
		ip = 20
	}
	p.SizeBytes = netsim.LinkBytes(n)
	p.Src, p.Dst = s.sw.ID(), srcNode
	p.Flow = netsim.NoFlow
	p.Prio = s.Prio
	p.ECN = netsim.ECNNotECT
	p.Kind = netsim.KindRoCE
	p.HdrLen = uint8(copy(p.Hdr[:], s.buf[wire.EthernetLen+ip+wire.UDPLen:n]))
	if !s.sw.Send(p) {
		s.Failed++
		return false
	}
	s.Sent++
	return true
}

// Notify implements lhcnp.Notifier: the CNP's BTH destination QP is the
// flow's source QP from the flow table (white paper §2.3.2).
func (s *Sender) Notify(x *lhcnp.Notification) bool {
	return s.Send(x.Flow.Src, x.Flow.SrcQP, x.SrcNode)
}
