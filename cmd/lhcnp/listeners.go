package main

import (
	"fmt"
	"net"
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
	for i, a := range ls {
		for _, b := range ls[:i] {
			if !sameListenAddr(a.addr, b.addr) {
				continue
			}
			both := "both " + a.addr
			if a.addr != b.addr {
				both = b.addr + " and " + a.addr + " take one port"
			}
			return usageError{fmt.Sprintf("%s, %s: %s: each of %s listeners needs an address of its own (port 0: a free one each)", b.named, a.named, both, whose)}
		}
	}
	return nil
}

// sameListenAddr reports whether listeners on a and b (host:port, checked)
// would take one port: the same port, not 0, on the same host or where
// either is every interface's. Two names of one host (localhost and
// 127.0.0.1) are not told apart: the start names such a clash.
func sameListenAddr(a, b string) bool {
	ha, pa, errA := net.SplitHostPort(a)
	hb, pb, errB := net.SplitHostPort(b)
	if errA != nil || errB != nil || pa != pb || pa == "0" {
		return false
	}
	every := func(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
	return ha == hb || every(ha) || every(hb)
}
