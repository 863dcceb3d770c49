// Package lhcnp is the congestion-aware intermediate node and the source-side
// reaction point of draft-tian-ccwg-long-haul-cnp-00 (§5 to §9), on the
// netsim network model.
//
// A Node attaches to a netsim.Switch as the PortObserver of its egress ports.
// It learns flows from RoCEv2 data packets and from IB CM exchanges (§5.2 and
// the Fast CNP white paper's flow table: LRU replacement, idle aging, removal
// on a disconnect), monitors queue depth, ECN marking rate, queue growth rate
// and RTT_est per egress queue (§5.3.1), programs the BDP-adaptive K_max and
// K_min into the port's ECN marking (§5.3.2, the first-level response of
// §5.4), and on a second-level trigger builds a Long-haul CNP with
// wire.Encoder and unicasts it to the flow's source with Switch.Send (§5.5),
// subject to a per-flow minimum interval, a per-port token bucket and
// collaborative suppression (§5.7). Resume follows when the queue stays below
// K_min for the hold time.
//
// A ReactionPoint is an RNIC's netsim.ControlHandler: it decodes the frame
// with wire.Decoder, checks the sender against trusted prefixes and the QP,
// and applies Pause, Rate Reduce, Resume (capped) or Notify (DCQCN) to the
// QP, with a per-QP additive recovery timer (§5.6). In Legacy mode it
// behaves as an RNIC that knows only the standard CNP (§8).
//
// Everything runs on the engine goroutine, in simulated time; nothing here
// reads the wall clock or a global random source. Other goroutines read
// State and call ApplyConfig through engine.Sim.Do.
//
// docs/longhaul.md describes the design, the severity mapping and the
// defaults; docs/conformance.md maps every requirement of the draft to a
// test.
//
// The package depends on engine, netsim, wire and the standard library. It
// must not import gNMI, YANG or generated code.
package lhcnp
