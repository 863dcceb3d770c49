// Package mechtest builds the small networks the tests of the mechanism
// packages (fastcnp, switchcnp, rateadvice, fcn) run on: hosts, switches,
// links and flows named in a Spec, built in Spec order so that port
// indices and routes are the same on every run, and a Tap that records the
// control frames a sender receives before its own handler acts.
//
// It is for tests only. It depends on netsim, engine and wire and on
// nothing of the mechanisms it serves, so that each of them can use it.
package mechtest

import (
	"net/netip"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// Spec is a test network.
type Spec struct {
	// Seed seeds the engine (0: 1).
	Seed uint64
	// Host is every host's RNIC configuration.
	Host     netsim.HostConfig
	Hosts    []Node
	Switches []Node
	// Links are connected in order: a switch's ports are numbered in the
	// order its links appear (netsim Port.Name "n1:0", "n1:1", ...).
	Links []Link
	Flows []Flow
}

// Flow is a flow from host From to host To; Config's Src and Dst are
// filled in.
type Flow struct {
	From, To string
	Config   netsim.FlowConfig
}

// Node is a host or a switch; Switch is a switch's configuration.
type Node struct {
	Name   string
	Addr   string
	Switch netsim.SwitchConfig
}

// Link connects A to B (the A side's port first).
type Link struct {
	A, B           string
	RateBitsPerSec int64
	Delay          engine.Time
}

// Net is a built Spec.
type Net struct {
	Sim      *engine.Sim
	Net      *netsim.Network
	Hosts    map[string]*netsim.Host
	Switches map[string]*netsim.Switch
	// Ports holds each link's A-side port by [A, B].
	Ports map[[2]string]*netsim.Port
	Flows map[string]*netsim.Flow
	Addrs map[string]netip.Addr
}

// Build builds s, failing t on any error (a test's own mistake).
func Build(t testing.TB, s Spec) *Net {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	seed := s.Seed
	if seed == 0 {
		seed = 1
	}
	n := &Net{Sim: engine.New(engine.WithSeed(seed)), Hosts: map[string]*netsim.Host{},
		Switches: map[string]*netsim.Switch{}, Ports: map[[2]string]*netsim.Port{},
		Flows: map[string]*netsim.Flow{}, Addrs: map[string]netip.Addr{}}
	n.Net = netsim.New(n.Sim)
	parse := func(x Node) netip.Addr {
		t.Helper()
		a, err := netip.ParseAddr(x.Addr)
		must(err)
		n.Addrs[x.Name] = a
		return a
	}
	for _, h := range s.Hosts {
		x, err := n.Net.AddHost(h.Name, parse(h), s.Host)
		must(err)
		n.Hosts[h.Name] = x
	}
	for _, sw := range s.Switches {
		x, err := n.Net.AddSwitch(sw.Name, parse(sw), sw.Switch)
		must(err)
		n.Switches[sw.Name] = x
	}
	node := func(name string) netsim.Node {
		t.Helper()
		if h, ok := n.Hosts[name]; ok {
			return h
		}
		if sw, ok := n.Switches[name]; ok {
			return sw
		}
		t.Fatalf("mechtest: no node %q", name)
		return nil
	}
	for _, l := range s.Links {
		pa, _, err := n.Net.Connect(node(l.A), node(l.B), netsim.LinkConfig{RateBitsPerSec: l.RateBitsPerSec, Delay: l.Delay})
		must(err)
		n.Ports[[2]string{l.A, l.B}] = pa
	}
	n.Net.ComputeRoutes()
	for _, fl := range s.Flows {
		fc := fl.Config
		src, dst := n.Hosts[fl.From], n.Hosts[fl.To]
		if src == nil || dst == nil {
			t.Fatalf("mechtest: flow %s: no host %q or %q", fc.Name, fl.From, fl.To)
		}
		fc.Src, fc.Dst = src, dst
		f, err := n.Net.AddFlow(fc)
		must(err)
		n.Flows[fc.Name] = f
	}
	return n
}

// Tap is a host's control handler that shows every control frame that
// decodes and that Keep accepts (nil: every CNP) to Seen, then offers the
// packet to Next; without Next the packet goes on to the host's default
// processing (a CNP to DCQCN).
type Tap struct {
	Dec  wire.Decoder
	Keep func(p *netsim.Packet, f *wire.Frame) bool
	Seen func(h *netsim.Host, f *wire.Frame, raw []byte)
	Next netsim.ControlHandler
}

// IsCNP keeps RoCEv2 CNPs (standard and Fast CNP).
func IsCNP(p *netsim.Packet, _ *wire.Frame) bool {
	return p.Kind == netsim.KindRoCE && p.Opcode() == wire.OpCNP
}

// HandleControl implements netsim.ControlHandler.
func (t *Tap) HandleControl(h *netsim.Host, p *netsim.Packet) bool {
	if fr := p.Frame(); fr != nil && t.Seen != nil {
		keep := t.Keep
		if keep == nil {
			keep = IsCNP
		}
		var f wire.Frame
		if err := t.Dec.Decode(fr, &f); err == nil && keep(p, &f) {
			t.Seen(h, &f, fr)
		}
	}
	if t.Next != nil {
		return t.Next.HandleControl(h, p)
	}
	return false
}

// TapHosts puts a Tap with seen (and next(host), if next is not nil) in
// front of each named host.
func (n *Net) TapHosts(seen func(h *netsim.Host, f *wire.Frame, raw []byte), keep func(*netsim.Packet, *wire.Frame) bool,
	next func(h *netsim.Host) netsim.ControlHandler, hosts ...string) {
	for _, name := range hosts {
		h := n.Hosts[name]
		tp := &Tap{Seen: seen, Keep: keep}
		if next != nil {
			tp.Next = next(h)
		}
		h.SetControlHandler(tp)
	}
}
