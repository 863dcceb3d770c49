// Package oracle holds the tests that check the wire package against
// independent implementations: tshark dissects frames our encoders wrote, and
// scapy's RoCE layer recomputes their ICRC. It has no non-test code.
//
// The oracles are external programs (Debian's tshark and python3-scapy;
// `make test` installs them). Without them the tests skip, unless
// LHCNP_ORACLES=required (as `make test` sets), when they fail.
package oracle
