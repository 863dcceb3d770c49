// Package fcn is Fast Congestion Notification over WAN tunnels ("FCN in WAN
// interconnecting RoCEv2 networks", July 2026: §4.1 the ingress PE, §4.2
// the congested WAN node and the FCN message, §4.3 the translation into a
// standard CNP) on the netsim network model.
//
// An ingress PE (PE) learns every RoCEv2 flow it sends into the tunnel
// (its ports towards other FCN nodes): the four-tuple, a randomly assigned,
// locally unique 20-bit flow label, aging when the flow goes quiet. The
// label is what it writes into the outer IPv6 header with the inner ECN
// copied; the simulated packets carry no outer header bytes, so a transit
// node reads the label a packet of the flow carries through the PE's
// mapping (Resolver) — what it would read from the outer header — and the
// encapsulation's 40 bytes are not added to the packets' size. A
// congested transit node (Transit) sends the FCN UDP message (the label
// and a 3-bit congestion level) to the PE; the PE looks the label up and
// sends the flow's sender a standard CNP whose destination QP is the
// flow's source QP. The PE's own congestion gives that CNP directly.
//
// Detection, flow choice and the per-flow and per-port limits of both
// roles are the Long-haul CNP node's (package lhcnp, through
// lhcnp.WithNotifier); the standard CNP is package switchcnp's Sender.
// Off by default (YANG fcn-role DISABLED).
//
// The package depends on engine, netsim, wire, lhcnp, switchcnp and the
// standard library. It must not import gNMI, YANG or generated code.
package fcn
