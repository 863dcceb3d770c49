// Package hostport checks an address of a configuration is host:port
// before anything listens on it or dials it: net's own error ("address
// 99999: invalid port") names neither the key nor the file, and a dial
// retried in a loop says it again and again instead of once at the start.
// It depends on the standard library only.
package hostport

import (
	"errors"
	"fmt"
	"net"
)

// Check reports whether addr ("" for none) is host:port with a port
// number (or service name) of network ("tcp", "udp").
func Check(network, addr string) error {
	if addr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			return errors.New(ae.Err + " (want host:port)")
		}
		return err
	}
	if _, err := net.LookupPort(network, port); err != nil {
		return fmt.Errorf("invalid port %q", port)
	}
	return nil
}
