// Package fcn is Fast Congestion Notification over WAN tunnels ("FCN in WAN
// interconnecting RoCEv2 networks", July 2026: §4.1 the ingress PE, §4.2
// the congested WAN node and the FCN message, §4.3 the translation into a
// standard CNP) on the netsim network model.
//
// An ingress PE (PE) learns every RoCEv2 flow it sends into the tunnel
// (its ports towards other FCN nodes): the four-tuple, a randomly assigned,
// locally unique 20-bit flow label, aging when the flow goes quiet. It
// encapsulates the flow's data packets as they are forwarded into the
// tunnel (a netsim.Forwarder at StageRewrite): the packet's frame then
// carries the outer IPv6 header built by package wire (wire.EncapHead),
// from the PE to the tunnel's far end (the switch the destination hangs
// off: the egress PE),
// the label in its Flow Label, the inner traffic class and so the ECN
// copied, next header 41 (IPv6 inner) or 4 (IPv4 inner) as RFC 2473 and
// SRv6's reduced encapsulation with one segment send it (the draft leaves
// the tunnel type open); the packet grows by those 40 bytes on every link
// of the tunnel. The egress PE takes the header off with the ECN combined
// as RFC 6040 says (netsim: any switch ends a tunnel addressed to it); a
// switch that marks a tunnelled packet marks its outer header. A
// congested transit node (Transit) reads the label, the ingress PE and
// the ECN field from the outer header of the frames it queues
// (wire.DecodeEncap) and sends the FCN UDP message (the label and a 3-bit
// congestion level) to the PE, for ECN-capable flows only; the PE looks
// the label up and sends the flow's sender a standard CNP whose
// destination QP is the flow's source QP. The PE's own congestion gives
// that CNP directly. Acknowledgements, CNPs and CM MADs cross the WAN
// unencapsulated: they belong to no mapped flow. The tunnel ends before
// the egress PE's queue towards the receiver, so congestion there cannot
// be reported by FCN (no outer header left to read the label from).
//
// Detection, flow choice and the per-flow and per-port limits of both
// roles are the Long-haul CNP node's (package lhcnp, through
// lhcnp.WithNotifier); the standard CNP is package switchcnp's Sender.
// Off by default (YANG fcn-role DISABLED).
//
// The package depends on engine, netsim, wire, lhcnp, switchcnp and the
// standard library. It must not import gNMI, YANG or generated code.
package fcn
