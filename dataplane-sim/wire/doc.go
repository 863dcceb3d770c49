// Package wire encodes and decodes every packet format lhcnp puts on a wire:
// Long-haul CNP (ICMPv6 and RoCEv2 formats), the standard RoCEv2 CNP, the
// RoCEv2 data path (BTH with its extended headers), IB CM MADs, Fast CNP,
// FCN and SCONE Rate Advice, with the Ethernet, IPv4, IPv6 and UDP layers
// around them, the checksums and the RoCEv2 ICRC.
//
// Encoders write into a caller's buffer and decoders fill value structs; the
// hot paths allocate nothing. Malformed input is reported as an error that
// wraps one of the sentinel errors in errors.go (test with errors.Is); a
// decoder never panics.
//
// The package depends on the standard library only. It must not import
// gNMI, YANG or generated code.
package wire
