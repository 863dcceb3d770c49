// Package switchcnp is the practice of the Data Center Fast CNP white paper
// (§2.2 flow-table maintenance, §2.3.1 congestion detection, §2.3.2
// congestion notification): a congested switch builds a standard RoCEv2
// CNP for a flow from its flow table (sender and receiver addresses, the
// sender's QP) with a configurable IP DSCP and sends it straight to the
// sender, whose RNIC takes it as its receiver's CNP.
//
// The flow table is the Long-haul CNP node's (package lhcnp: learned from
// the CM exchange and data packets, refreshed by data, removed on a
// disconnect, LRU replacement when full, idle aging), reused through
// lhcnp.WithNotifier, which also supplies the per-flow interval and the
// per-port bucket. Detection is the white paper's: the forwarding delay of
// every packet is measured at dequeue; one above DelayThreshold is
// converted linearly to a queue depth (delay × port rate) and congestion is
// confirmed when that depth is at least BufferSharePercent of the queue's
// buffer available at that moment; the node then fires
// (lhcnp.Node.Fire). ECN marking stays the port's own.
//
// Sender, the standard-CNP builder, is also what an FCN ingress PE sends on
// its own congestion and after translating an FCN message (package fcn).
//
// The package depends on engine, netsim, wire, lhcnp, fastcnp (its
// default limits) and the standard library. It must not import gNMI,
// YANG or generated code.
package switchcnp
