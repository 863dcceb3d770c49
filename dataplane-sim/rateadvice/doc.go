// Package rateadvice is SCONE Rate Advice for RoCEv2 ("Rate Advice for
// RoCEv2", draft-zhao-scone-rocev2 of July 2026: §3 the deployment
// scenarios, §4 the framework, §4.1 advice from rate policies, §4.2 advice
// from queue state, §5 the message format) on the netsim network model.
//
// A Node on a switch watches the data packets of its egress ports. A sender
// announces the capability per QP in its data packets (§4: "in the RoCEv2
// packet header"; the draft leaves the field open, this package uses one of
// the BTH's seven reserved bits, CapabilityBit); the node advises capable
// flows only. The advised rate is a configured policy's (the first match by
// precedence, §4.1) or, for flows no policy matches, the fair share of the
// egress port (§4.2): the port rate less what drains the standing queue in
// DrainInterval, over the flows active on the queue. A message goes to the
// flow's source (the BTH opcode CodePoints.RateAdviceOpcode, 0xC0 by
// default: the draft's example 0x1D is RC ATOMIC_WRITE) when the advice
// changed by ChangePercent or more, at most once per MinAdviceInterval per
// flow.
//
// A Receiver is the RNIC side: it applies the advised rate as a ceiling of
// the QP (netsim QP.SetCeiling), which DCQCN's increases never pass and a
// CNP still cuts below (§3: senders give priority to CNP, the advice
// guides the rest). Advice to a QP that did not announce the capability,
// or from a source not on the access list, is dropped. The receivers
// several switches' Functions put on one host share it
// (mechanism.ShareControl, Judge): each switch's advice goes to its own.
//
// The node coexists with a notification mechanism on the same switch
// (scenario.CanCoexist): it only observes and sends, and never touches the
// port's ECN marking.
//
// The package depends on engine, netsim, wire and the standard library. It
// must not import gNMI, YANG or generated code.
package rateadvice
