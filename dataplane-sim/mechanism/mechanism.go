// Package mechanism is what the congestion-notification mechanisms of a
// switch have in common: the Function interface that each mechanism's
// package implements beside its model (fastcnp, fcn, switchcnp,
// rateadvice). A switch's gNMI target (server/dataplane) configures a
// mechanism and reads its state back through it, and the batch runner
// (package sim) reads its counters through it; neither holds a field or
// a case per mechanism. The receivers that the functions of several
// switches put on one host share it (ShareControl).
//
// A Function drives the Long-haul CNP node (package lhcnp) already
// attached to a switch: either as the node's mode (Fast CNP, an FCN role,
// the switch CNP: the node's detection, another mechanism's notification;
// at most one mode is on) or beside whatever the mode is (Rate Advice:
// it watches the same ports and notifies on its own).
//
// It must not import gen/ or server/, nor any mechanism's package.
package mechanism

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// Function is one mechanism on one switch. Call its methods from the
// engine's goroutine (a handler, or engine.Sim.Do).
type Function interface {
	// Validate checks cfg, a configuration of the mechanism's own type
	// (fastcnp.Config, ...), without changing anything.
	Validate(cfg any) error
	// Configure validates cfg and makes it the running configuration; lc
	// is the node's own Long-haul CNP configuration, which a mode switched
	// off hands the node back. On error the function runs as before.
	Configure(cfg any, lc lhcnp.Config) error
	// Observer is what the switch's ports report to while the function
	// is on: the node's mode, or what goes beside it.
	Observer() netsim.PortObserver
	// State returns the configuration in use, the counters and what the
	// function observes, as a value of the mechanism's own type (for the
	// gNMI target's state tree).
	State() any
	// Counters returns the function's counters by name: the batch runner
	// sums them over the switches into summary.json's
	// mechanism_counters, keeping the largest of a name that starts with
	// "max_".
	Counters() map[string]int64
}

// A Remover is a Function whose creation put something outside its
// switch's node (its receivers on the hosts, a forwarder on the switch).
// Remove takes that back, for a caller that drops the function as if it
// had never been created (a Set that failed after creating it); the
// function is not used after. Call it with the function off.
type Remover interface {
	Function
	Remove()
}

// A Deferrer is a Function whose Configure, between Hold and Settle,
// defers what configuring it again could not undo (a timer re-armed for
// a new period: the stale one stays pending). A caller that may set the
// function back (a target's Set that fails after configuring it) holds it
// first; Settle then does that work once for the configuration running,
// if it differs from the one at Hold. Nothing runs between the two (one
// engine.Sim.Do). A Deferrer that is also a Remover may be created held
// (Rate Advice's NewFunction), deferring what creation would start (its
// first timer) to Settle: a caller that removes it before leaves nothing
// behind, and one that keeps it settles it as any other.
type Deferrer interface {
	Function
	Hold()
	Settle()
}

// ConfigAs returns cfg as a mechanism's configuration type C, or an error
// naming both types.
func ConfigAs[C any](cfg any) (C, error) {
	c, ok := cfg.(C)
	if !ok {
		return c, fmt.Errorf("configuration of type %T, want %T", cfg, c)
	}
	return c, nil
}

// Validate checks that cfg is a C and valid (its Validate); errors are
// prefixed with where (the mechanism and switch).
func Validate[C any, P interface {
	*C
	Validate() error
}](cfg any, where string) error {
	c, err := ConfigAs[C](cfg)
	if err == nil {
		err = P(&c).Validate()
	}
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}

// AddCounters adds a function's counters into the run's: sums, and the
// largest for a name that starts with "max_".
func AddCounters(into, from map[string]int64) {
	for k, v := range from {
		if len(k) > 4 && k[:4] == "max_" {
			into[k] = max(into[k], v)
			continue
		}
		into[k] += v
	}
}

// ChainControl puts c in front of h's control handler: control packets
// go to c first, then to the handler h had (a mechanism's receiver on an
// RNIC that already runs another's).
func ChainControl(h *netsim.Host, c netsim.ControlHandler) {
	if prev := h.ControlHandler(); prev != nil {
		h.SetControlHandler(firstOf{c, prev})
	} else {
		h.SetControlHandler(c)
	}
}

// firstOf offers a control packet to a, then to b.
type firstOf struct{ a, b netsim.ControlHandler }

func (f firstOf) HandleControl(h *netsim.Host, p *netsim.Packet) bool {
	return f.a.HandleControl(h, p) || f.b.HandleControl(h, p)
}

// Verdict is what one switch's receiver on a host makes of a control
// packet (Judge), without acting on it or counting it.
type Verdict uint8

const (
	// Pass: not the mechanism's message (by the receiver's code points).
	Pass Verdict = iota
	// Act: the receiver acts on it (on, and the source on its access
	// list): the message is its switch's.
	Act
	// Refuse: the mechanism's message, refused by a receiver that is on
	// (its source is not on the access list, or it does not decode).
	Refuse
	// RefuseOff: the mechanism's message, refused by a receiver that is
	// off (Fast CNP's RNIC that does not process the option).
	RefuseOff
)

// Message is a control packet offered to the receivers of a host
// (ShareControl), decoded at most once per decoder: every receiver reads
// it, to judge it, and one acts on it, and receivers that read alike (the
// same wire.Decoder: the same code points) share one decoding, where each
// decoded it to judge it and the one that acted decoded it again. The
// zero value holds no packet; Reset gives it one.
type Message struct {
	// Packet is the control packet.
	Packet *netsim.Packet
	// decoded holds the decodings of Packet (the first n), and frames
	// kept from earlier packets for reuse: decoding into a Frame used
	// before allocates nothing.
	decoded []*decoding
	n       int
}

// decoding is a packet's frame as one decoder reads it.
type decoding struct {
	dec   wire.Decoder
	frame wire.Frame
	err   error
}

// Reset makes m the message p, not yet decoded.
func (m *Message) Reset(p *netsim.Packet) { m.Packet, m.n = p, 0 }

// Decode returns the packet's frame as d reads it, and d.Decode's error:
// decoded the first time, the same frame after. The frame is m's: valid
// until m's next Reset, read only.
func (m *Message) Decode(d wire.Decoder) (*wire.Frame, error) {
	for _, x := range m.decoded[:m.n] {
		if x.dec == d {
			return &x.frame, x.err
		}
	}
	if m.n == len(m.decoded) {
		m.decoded = append(m.decoded, new(decoding))
	}
	x := m.decoded[m.n]
	m.n++
	x.dec = d
	x.err = x.dec.Decode(m.Packet.Frame(), &x.frame)
	return &x.frame, x.err
}

// A SharedReceiver is one switch's receiver of a mechanism's messages on
// a host whose other switches' management may put theirs there too
// (ShareControl).
type SharedReceiver interface {
	// HandleControl is the receiver alone on the host: HandleMessage on
	// the packet.
	netsim.ControlHandler
	// Judge tells what HandleMessage would do with m.
	Judge(h *netsim.Host, m *Message) Verdict
	// HandleMessage acts on what Judge calls Act, drops and counts what
	// it calls Refuse or RefuseOff, and returns false for Pass, reading
	// m's decoding (Message.Decode) rather than decoding the packet again.
	HandleMessage(h *netsim.Host, m *Message) bool
}

// ShareControl gives h the receiver r of one more switch for r's
// mechanism (R, the receiver's type). The first is put in front of h's
// control handler (ChainControl) in a set that later ones join, where
// the last would otherwise go in front of the others and refuse every
// message of theirs, its source not on its access list. The set gives
// a message to the first receiver that acts on it (each switch's
// receivers take their switch's messages); one that none acts on is
// dropped and counted once, by the first receiver that refused it while
// on, else by the first that refused it while off: each switch's
// receivers count what they would count alone, and a switch whose
// receiver is off counts nothing while another's is on. A set of one is
// the receiver alone. The set decodes a message once for all its
// receivers (Message).
func ShareControl[R SharedReceiver](h *netsim.Host, r R) {
	if s := sharedIn[R](h.ControlHandler()); s != nil {
		s.rs = append(s.rs, r)
		return
	}
	ChainControl(h, &shared[R]{rs: []R{r}})
}

// UnshareControl takes r, given to h by ShareControl, off h again (its
// set off h's chain with its last receiver, the chain as it was without
// it) and returns the receivers of r's mechanism left on h.
func UnshareControl[R SharedReceiver](h *netsim.Host, r R) []R {
	s := sharedIn[R](h.ControlHandler())
	if s == nil {
		return nil
	}
	s.rs = slices.DeleteFunc(s.rs, func(x R) bool { return any(x) == any(r) })
	if len(s.rs) == 0 {
		h.SetControlHandler(unchain(h.ControlHandler(), s))
	}
	return s.rs
}

// unchain returns the chain c (ChainControl's) without the set s: nil
// for a chain of s alone.
func unchain[R SharedReceiver](c netsim.ControlHandler, s *shared[R]) netsim.ControlHandler {
	switch x := c.(type) {
	case *shared[R]:
		if x == s {
			return nil
		}
	case firstOf:
		a, b := unchain(x.a, s), unchain(x.b, s)
		switch {
		case a == nil:
			return b
		case b == nil:
			return a
		}
		return firstOf{a, b}
	}
	return c
}

// sharedIn finds the set of R receivers in the chain c (ChainControl's).
func sharedIn[R SharedReceiver](c netsim.ControlHandler) *shared[R] {
	for {
		switch x := c.(type) {
		case *shared[R]:
			return x
		case firstOf:
			if s := sharedIn[R](x.a); s != nil {
				return s
			}
			c = x.b
		default:
			return nil
		}
	}
}

// shared is the set of one mechanism's receivers on a host, in the order
// their switches' management created them, and the message they are
// offered (its decodings reused from one packet to the next).
type shared[R SharedReceiver] struct {
	rs  []R
	msg Message
}

func (s *shared[R]) HandleControl(h *netsim.Host, p *netsim.Packet) bool {
	m := &s.msg
	m.Reset(p)
	if len(s.rs) == 1 {
		return s.rs[0].HandleMessage(h, m)
	}
	// counter is the receiver that counts a message none acts on, seen
	// what it made of it.
	counter, seen := -1, Pass
	for i, r := range s.rs {
		switch v := r.Judge(h, m); {
		case v == Act:
			return r.HandleMessage(h, m)
		case v == Refuse && seen != Refuse, v == RefuseOff && seen == Pass:
			counter, seen = i, v
		}
	}
	if counter < 0 {
		return false
	}
	return s.rs[counter].HandleMessage(h, m)
}

// Beside makes every port of sw report to base (the node's mode) and then
// to each of os, the functions beside it, which only watch what is
// enqueued; base alone filters the marks. The functions beside the mode
// are given all at once: a base that is itself a Beside pair is replaced,
// not nested (the functions beside the mode are set again after each
// change of mode), so a call replaces what an earlier one put beside,
// and one with none leaves base alone.
func Beside(sw *netsim.Switch, os ...netsim.PortObserver) {
	if len(sw.Ports()) == 0 {
		return
	}
	base := sw.Ports()[0].Observer()
	if p, ok := base.(pair); ok {
		base = p.a
	}
	switch len(os) {
	case 0:
		sw.SetObserver(base)
	case 1:
		sw.SetObserver(pair{base, os[0]})
	default:
		sw.SetObserver(pair{base, watchers(slices.Clone(os))})
	}
}

// watchers gives each enqueue to every one of them in turn (pair gives
// them nothing else).
type watchers []netsim.PortObserver

func (w watchers) OnEnqueue(pt *netsim.Port, x *netsim.Packet, q int64) {
	for _, o := range w {
		o.OnEnqueue(pt, x, q)
	}
}
func (watchers) OnDequeue(*netsim.Port, *netsim.Packet, int64) {}
func (watchers) OnMark(*netsim.Port, *netsim.Packet, int64)    {}
func (watchers) OnDrop(*netsim.Port, *netsim.Packet, int64)    {}

// pair gives every port event to a, then the enqueues to b; a filters the
// marks.
type pair struct {
	a, b netsim.PortObserver
}

func (p pair) OnEnqueue(pt *netsim.Port, x *netsim.Packet, q int64) {
	p.a.OnEnqueue(pt, x, q)
	p.b.OnEnqueue(pt, x, q)
}
func (p pair) OnDequeue(pt *netsim.Port, x *netsim.Packet, q int64) { p.a.OnDequeue(pt, x, q) }
func (p pair) OnMark(pt *netsim.Port, x *netsim.Packet, q int64)    { p.a.OnMark(pt, x, q) }
func (p pair) OnDrop(pt *netsim.Port, x *netsim.Packet, q int64)    { p.a.OnDrop(pt, x, q) }
func (p pair) AllowMark(pt *netsim.Port, x *netsim.Packet) bool {
	if m, ok := p.a.(netsim.MarkFilter); ok {
		return m.AllowMark(pt, x)
	}
	return true
}

// Limits are how often a mechanism that runs as the node's mode notifies:
// each flow at most once per MinCNPInterval, each port through a bucket of
// PortCNPRatePerSec and PortCNPBurst, at most MaxFlowsPerTrigger flows per
// congestion event.
type Limits struct {
	MinCNPInterval                  engine.Time
	PortCNPRatePerSec, PortCNPBurst int64
	MaxFlowsPerTrigger              int
}

// DetectionConfig is the Long-haul CNP node's configuration under a
// mechanism that runs as its mode (Fast CNP, an FCN role, the switch CNP):
// the node detects and chooses the flows, the mechanism notifies, within
// l; no Pause, no Resume, no collaboration (none of them has any). The
// node re-evaluates a congested queue once per measurement interval: once
// per per-flow interval here. The caller sets the trigger (K_max, ...).
func DetectionConfig(enabled bool, dscp, prio uint8, l Limits) lhcnp.Config {
	lc := lhcnp.DefaultConfig()
	lc.Enabled = enabled
	lc.CNPDSCP, lc.CNPPrio = dscp, prio
	lc.Collaborative.Enabled, lc.Collaborative.UpstreamFirst = false, false
	ic := &lc.Interface
	ic.CNPRatePerSec, ic.CNPBurst = l.PortCNPRatePerSec, l.PortCNPBurst
	q := &ic.Queue
	q.MinCNPInterval = l.MinCNPInterval
	q.MeasurementInterval, q.EMRWindow = l.MinCNPInterval, l.MinCNPInterval
	q.Action.PauseLevel = lhcnp.PauseLevelNever
	q.Action.ResumeEnabled = false
	q.Action.MaxFlowsPerTrigger = l.MaxFlowsPerTrigger
	return lc
}

// AccessList is the access list of a mechanism's receivers that trust the
// sources addrs (the switch's address, the configured source address): a
// host prefix (/32 or /128) of each that is valid, in order; an unset
// address (the zero netip.Addr) is left out.
func AccessList(addrs ...netip.Addr) []netip.Prefix {
	var acl []netip.Prefix
	for _, a := range addrs {
		if a.IsValid() {
			acl = append(acl, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return acl
}
