// Package ecmp is the one definition of how a switch picks among
// equal-cost next hops: a seeded hash of a packet's five-tuple, salted per
// switch. The network model (package netsim) forwards by it and the
// scenario loader (package scenario) computes every flow's path by it, so
// the two agree by construction.
//
// The five-tuple of a RoCEv2 packet is its source and destination IP
// addresses, protocol 17 (UDP), destination port 4791 and the UDP source
// port, which RoCEv2 uses for entropy. The source port is the one Linux
// derives from the two queue pair numbers (rdma_calc_flow_label and
// rdma_flow_label_to_udp_sport, include/rdma/ib_verbs.h): a product of
// the two, so both directions of a connection have the same port.
//
// The hash (Hash) chains the splitmix64 finaliser over 64-bit words: the
// seed XOR the switch's salt (its address), the two halves of the source
// address, the two halves of the destination address (IPv4 as
// IPv4-mapped IPv6, 16 bytes, big-endian halves) and proto<<32 |
// sport<<16 | dport. Pick maps the hash onto n next hops by the high 32
// bits (multiply and shift, not modulo). Salting by switch keeps the
// choices of successive tiers independent: with one hash everywhere a
// fat-tree's aggregation switches would repeat the edge switches' choice
// and use a fraction of the cores (hash polarisation).
//
// It must not import any other package of the simulator.
package ecmp

import (
	"encoding/binary"
	"net/netip"

	"github.com/lhcnp/lhcnp/internal/splitmix"
)

// RoCEv2 constants of the five-tuple.
const (
	ProtoUDP   = 17
	RoCEv2Port = 4791
)

// Mix is the splitmix64 finaliser.
func Mix(x uint64) uint64 { return splitmix.Mix64(x) }

// Addr is an address as the hash reads it: the two big-endian halves of
// its 16-byte form. The zero Addr (no address) is two zero words.
type Addr [2]uint64

// AddrOf converts an address.
func AddrOf(a netip.Addr) Addr {
	if !a.IsValid() {
		return Addr{}
	}
	b := a.As16()
	return Addr{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

// SourcePort is the RoCEv2 UDP source port of a connection between queue
// pairs lqpn and rqpn, as Linux computes it: the flow label
// rdma_calc_flow_label(lqpn, rqpn) folded into 14 bits above 0xC000.
func SourcePort(lqpn, rqpn uint32) uint16 {
	v := uint64(lqpn) * uint64(rqpn)
	v ^= v >> 20
	v ^= v >> 40
	fl := uint32(v & 0xFFFFF)
	low := fl & 0x03FFF
	high := fl & 0xFC000
	low ^= high >> 14
	return uint16(low | 0xC000)
}

// Tuple is a packet's five-tuple.
type Tuple struct {
	Src, Dst       Addr
	SrcPort, DPort uint16
	Proto          uint8
}

// RoCE returns the five-tuple of a RoCEv2 packet between src and dst of
// the connection of queue pairs srcQP and dstQP.
func RoCE(src, dst Addr, srcQP, dstQP uint32) Tuple {
	return Tuple{Src: src, Dst: dst, SrcPort: SourcePort(srcQP, dstQP), DPort: RoCEv2Port, Proto: ProtoUDP}
}

// Hash is the seeded, salted hash of t (see the package comment).
func Hash(seed uint64, salt Addr, t Tuple) uint64 {
	h := Mix(seed ^ salt[0] ^ Mix(salt[1]))
	h = Mix(h ^ t.Src[0])
	h = Mix(h ^ t.Src[1])
	h = Mix(h ^ t.Dst[0])
	h = Mix(h ^ t.Dst[1])
	return Mix(h ^ (uint64(t.Proto)<<32 | uint64(t.SrcPort)<<16 | uint64(t.DPort)))
}

// Pick maps a hash onto one of n > 0 next hops.
func Pick(h uint64, n int) int { return int((h >> 32) * uint64(n) >> 32) }
