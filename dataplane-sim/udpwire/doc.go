// Package udpwire carries a netsim cable between two processes: the
// frames one switch sends on a link travel as UDP datagrams, one socket
// per link, to the process that runs the switch at the other end, which
// delivers them into its engine at the simulated time they left plus the
// link's delay.
//
// A datagram is Geneve (RFC 8926) around the frame exactly as package wire
// encodes it: the Geneve header names the link (VNI), an experimental
// Geneve option (class OptionClass) carries what the simulator knows
// beside the bytes (the simulated send time, a sequence number, the model's
// frame size, flow and source QP), and the payload is the Ethernet frame:
// the RoCEv2 data packet, ACK or CNP with its BTH and ICRC, the IB CM MAD,
// the Long-haul CNP as the node encoded it, or an 802.1Qbb PFC frame. A
// data packet FCN's ingress PE tunnelled travels whole inside its outer
// IPv6 header (the head it carries, wire.EncapHead), and arrives with that
// head and the outer ECN field as the packet's.
// tshark dissects a capture of the wire with `-d udp.port==PORT,geneve`;
// the frames alone are written to pcap with WithCapture.
//
// Keepalives are Geneve control packets (the O bit) with a hello option:
// the sender's epoch (the wall-clock time of its simulated time 0), its
// speed and an instance number that changes when the process restarts. A
// link comes up when a hello is accepted and goes down when nothing has
// arrived for the dead interval or the peer restarted; netsim then loses
// what is queued and in flight, counted (docs/lab.md).
//
// The package depends on engine, netsim, wire and the standard library.
// It must not import gNMI, YANG or generated code.
package udpwire
