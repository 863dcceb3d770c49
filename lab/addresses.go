package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/lhcnp/lhcnp/internal/atomicfile"
)

// AddressesFile is the file of the state directory that holds the
// addresses of the last start (Addresses as JSON): a listener configured
// with port 0 gets the port it had then, so that a psql, a Grafana data
// source or a Prometheus job pointed at the lab keeps working across
// restarts; `lhcnp lab status` prints it.
const AddressesFile = "addresses.json"

// ReadAddresses returns the addresses the lab of stateDir had at its last
// start, and whether a lab holds stateDir now (with its pid).
func ReadAddresses(stateDir string) (a Addresses, pid int, running bool, err error) {
	b, err := os.ReadFile(filepath.Join(stateDir, AddressesFile))
	if err != nil {
		return Addresses{}, 0, false, err
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return Addresses{}, 0, false, fmt.Errorf("%s: %w", filepath.Join(stateDir, AddressesFile), err)
	}
	pid, running = lockHolder(stateDir)
	return a, pid, running, nil
}

// keptAddresses reads the last start's addresses; none when the file is
// missing or unreadable (a fresh state directory).
func keptAddresses(stateDir string) Addresses {
	var a Addresses
	if b, err := os.ReadFile(filepath.Join(stateDir, AddressesFile)); err == nil {
		_ = json.Unmarshal(b, &a)
	}
	return a
}

// writeAddresses replaces the addresses file whole (internal/atomicfile),
// so a reader never sees half of one; it is the lab's own file, mode 0600.
func writeAddresses(stateDir string, a Addresses) error {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(stateDir, AddressesFile), 0o600, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}

// keep returns the address to listen on for a configured host:port: the
// configured one, unless its port is 0 and the last start listened on the
// same host, then that address (kept is a host:port, a URL or a DSN).
func keep(configured, kept string) string {
	host, port, err := net.SplitHostPort(configured)
	if err != nil || port != "0" || kept == "" {
		return configured
	}
	if u, err := url.Parse(kept); err == nil && u.Host != "" {
		kept = u.Host
	}
	khost, kport, err := net.SplitHostPort(kept)
	if err != nil || khost != host || kport == "0" {
		return configured
	}
	return kept
}

// portOf returns the port of a host:port, URL or DSN (0 when it has none).
func portOf(addr string) int {
	if u, err := url.Parse(addr); err == nil && u.Host != "" {
		addr = u.Host
	}
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}

// listen listens on addr for a part of the lab; an address in use is an
// error wrapping ErrInUse that names the part, the flag (and key) that
// chooses another, and, when the address was kept from an earlier start,
// the file that holds it.
func listen(addr, configured, part, flag, stateDir string) (net.Listener, error) {
	lis, err := net.Listen("tcp", addr)
	if err == nil {
		return lis, nil
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("%s address %s is %w (or another program): %s", part, addr, ErrInUse, choose(addr, configured, flag, stateDir))
	}
	return nil, fmt.Errorf("%s: %w", part, err)
}

// probe is listen for an address that another part listens on later
// (PostgreSQL, a switch): it is tried now and released, so that one in use
// refuses the start before anything runs.
func probe(addr, configured, part, flag, stateDir string) error {
	lis, err := listen(addr, configured, part, flag, stateDir)
	if err != nil {
		return err
	}
	return lis.Close()
}

func choose(addr, configured, flag, stateDir string) string {
	if addr != configured {
		return fmt.Sprintf("it was kept from an earlier start in %s; choose another with %s, or remove that file for a free one",
			filepath.Join(stateDir, AddressesFile), flag)
	}
	return "choose another with " + flag
}
