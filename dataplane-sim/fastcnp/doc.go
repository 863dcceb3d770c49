// Package fastcnp is Fast CNP, draft-xiao-rtgwg-rocev2-fast-cnp-01 (§3 the
// CNP format, §4 the IPv6 Destination Options, §5 Security
// Considerations), on the netsim network model: a congested switch sends a
// standard RoCEv2 CNP straight to the sender of a congesting flow, with an
// IPv6 Destination Options header carrying the flow's original destination
// (the IOAM variant also carries the IOAM trace data), and the sender's
// RNIC treats it as the receiver's CNP for that destination.
//
// A Node runs on one switch. Flow learning (from data packets and the IB
// CM exchange, LRU replacement, idle aging), congestion detection (the
// queue above K_max), the choice of flows and the rate limits per flow and
// per port are those of the Long-haul CNP node of package lhcnp, reused
// through lhcnp.WithNotifier: this package builds the Fast CNP with
// wire.Encoder.FastCNP, applies the ECN marking policy of §4 by the
// sender's capability (netsim.MarkFilter: never mark a sender known to
// process Fast CNP, MAY mark the others) and is off by default (§5).
//
// A Receiver is the RNIC side (a netsim.ControlHandler): it decodes the
// frame, checks the switch's source address against its access list (§5),
// finds the sending QP from the original destination address and the
// BTH's destination QP (§4) and applies DCQCN's reaction to it, as for a
// receiver's CNP. An RNIC with the feature off discards a Fast CNP, as an
// IPv6 node that does not recognise the option must (its action bits are
// 10). The receivers several switches' Functions put on one host (the
// gNMI targets of one process) share it (mechanism.ShareControl, Judge):
// each switch's Fast CNPs go to its own receivers.
//
// docs/conformance.md maps the draft's sentences to the tests.
//
// The package depends on engine, netsim, wire, lhcnp and the standard
// library. It must not import gNMI, YANG or generated code.
package fastcnp
