package main

import (
	"fmt"
	"net"
	"strings"
)

// listener is one of a command's own listeners: its address (host:port,
// checked) and its key named where the value came from (namedKey).
type listener struct{ addr, named string }

// listenersApart refuses two of ls, whose's (the lab's, the collector's),
// on one port before anything listens, both keys named: the second of the
// two failed the start as an address already in use, naming only its own
// key (a switch's, the collector's northbound) or none. Port 0 is a free
// port each, never shared.
func listenersApart(whose string, ls []listener) error {
	b, a, both, ok := clash(ls, func(l listener) string { return l.addr })
	if !ok {
		return nil
	}
	if ls[a].addr != ls[b].addr {
		both += " take one port"
	}
	return usageError{fmt.Sprintf("%s, %s: %s: each of %s listeners needs an address of its own (port 0: a free one each)", ls[b].named, ls[a].named, both, whose)}
}

// clash returns the first two of xs, j before i, whose addresses (addr)
// are on one port (sameListenAddr), and the two addresses as a message
// says them: "both A" or "B and A"; ok false if there are none.
func clash[T any](xs []T, addr func(T) string) (j, i int, both string, ok bool) {
	for i, x := range xs {
		a := addr(x)
		for j, y := range xs[:i] {
			b := addr(y)
			switch {
			case !sameListenAddr(a, b):
			case a == b:
				return j, i, "both " + a, true
			default:
				return j, i, b + " and " + a, true
			}
		}
	}
	return 0, 0, "", false
}

// sameListenAddr reports whether listeners on a and b (host:port, checked)
// would take one port: the same port, not 0, on the same host or where
// either is every interface's. localhost is 127.0.0.1, where Go listens
// for it (the first address /etc/hosts gives); other names of one host
// are not told apart: the start names such a clash.
func sameListenAddr(a, b string) bool {
	ha, pa, errA := net.SplitHostPort(a)
	hb, pb, errB := net.SplitHostPort(b)
	if errA != nil || errB != nil || pa != pb || pa == "0" {
		return false
	}
	every := func(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
	host := func(h string) string {
		if strings.EqualFold(h, "localhost") {
			return "127.0.0.1"
		}
		return h
	}
	return host(ha) == host(hb) || every(ha) || every(hb)
}

// wireEnd is one end of a wire a process runs: its UDP address (host:port,
// checked), its key named where it came from (namedKey), the wire's link,
// and whether this process binds it (here) or sends to it (the far end).
type wireEnd struct {
	addr, named, link string
	here              bool
}

// wireEndsApart refuses two of ends, the two ends of each wire a process
// runs, on one UDP address before anything binds, both keys and wires
// named: two wires of the process on one port failed the start with
// "bind: address already in use" once the gNMI targets had started, and
// an end on another's address is one port bound by two processes on one
// host, or a wire's frames sent to another wire's socket. The process's
// TCP listeners are not among them: a UDP port is apart from a TCP one of
// its number.
func wireEndsApart(ends []wireEnd) error {
	b, a, both, ok := clash(ends, func(e wireEnd) string { return e.addr })
	if !ok {
		return nil
	}
	return usageError{fmt.Sprintf("%s, %s: %s: %s on one UDP port: each end of a wire needs an address of its own",
		ends[b].named, ends[a].named, both, twoEnds(ends[b], ends[a]))}
}

// twoEnds says which ends a and b are, in their order: the two of one
// wire, or each of its wire, in this process or at the far end.
func twoEnds(a, b wireEnd) string {
	switch {
	case a.link == b.link:
		return "the two ends of wire " + a.link
	case a.here && b.here:
		return "the ends of wires " + a.link + " and " + b.link + " in this process"
	case !a.here && !b.here:
		return "the far ends of wires " + a.link + " and " + b.link
	}
	where := func(e wireEnd) string {
		if e.here {
			return "wire " + e.link + "'s end in this process"
		}
		return "wire " + e.link + "'s far end"
	}
	return where(a) + " and " + where(b)
}
