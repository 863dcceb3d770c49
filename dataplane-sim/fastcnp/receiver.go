package fastcnp

import (
	"fmt"
	"net/netip"

	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// ReceiverConfig configures an RNIC's processing of Fast CNP.
type ReceiverConfig struct {
	// Enabled: the RNIC processes Fast CNP (§5: off by default). Off, it
	// discards them, as an IPv6 node that does not recognise the option
	// does (action bits 10).
	Enabled bool
	// AccessList holds the switch addresses Fast CNPs are accepted from
	// (§5: MUST check the source against an access list); empty accepts
	// none.
	AccessList []netip.Prefix
	// CodePoints hold the option types (TBD1, TBD2).
	CodePoints wire.CodePoints
}

// Validate reports the first invalid key.
func (c *ReceiverConfig) Validate() error {
	for i, p := range c.AccessList {
		if !p.IsValid() {
			return cfgErr(fmt.Sprintf("access-list[%d]", i), "invalid prefix")
		}
	}
	return nil
}

// ReceiverCounters count what the RNIC did with Fast CNPs.
type ReceiverCounters struct {
	// Accepted Fast CNPs applied to a QP; FromReceiver those whose source
	// is the original destination itself (a receiver-originated Fast CNP,
	// §4), FromSwitch the others; IOAM those with trace data.
	Accepted, FromReceiver, FromSwitch, IOAM int64
	// Discarded: the feature is off (an unrecognised option).
	Discarded int64
	// Untrusted: the source is not on the access list.
	Untrusted int64
	// NoQP: no sending QP to that destination with that destination QP;
	// Inactive: the QP is not connected or has finished.
	NoQP, Inactive int64
	// Malformed: the frame did not decode.
	Malformed int64
}

// Receiver is an RNIC's Fast CNP processing: a netsim.ControlHandler. A
// standard CNP (no destination option) goes on to DCQCN untouched.
type Receiver struct {
	net      *netsim.Network
	cfg      ReceiverConfig
	dec      wire.Decoder
	msg      mechanism.Message // the packet HandleControl is given, alone
	counters ReceiverCounters
}

// NewReceiver returns a receiver with cfg.
func NewReceiver(net *netsim.Network, cfg ReceiverConfig) (*Receiver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("fastcnp: receiver: %w", err)
	}
	return &Receiver{net: net, cfg: cfg, dec: wire.Decoder{CodePoints: cfg.CodePoints}}, nil
}

// Counters returns the counters.
func (r *Receiver) Counters() ReceiverCounters { return r.counters }

// ApplyConfig validates cfg and, if valid, makes it the running one.
func (r *Receiver) ApplyConfig(cfg ReceiverConfig) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("fastcnp: receiver: %w", err)
	}
	r.set(cfg)
	return nil
}

// set makes cfg, valid, the running configuration.
func (r *Receiver) set(cfg ReceiverConfig) {
	r.cfg, r.dec = cfg, wire.Decoder{CodePoints: cfg.CodePoints}
}

// outcome is what a receiver makes of a control packet before it looks
// for the QP.
type outcome uint8

const (
	notFastCNP outcome = iota
	malformed
	discarded // the feature is off
	untrusted
	trusted
)

// examine tells what the receiver makes of m, and m's frame as the
// receiver decodes it (nil for a packet that is not a CNP).
func (r *Receiver) examine(m *mechanism.Message) (outcome, *wire.Frame) {
	p := m.Packet
	if p.Kind != netsim.KindRoCE || p.Opcode() != wire.OpCNP || p.Frame() == nil {
		return notFastCNP, nil
	}
	f, err := m.Decode(r.dec)
	switch {
	case !f.HasFastCNP:
		return notFastCNP, f
	case err != nil:
		return malformed, f
	case !r.cfg.Enabled:
		return discarded, f
	}
	if src, _ := f.IPAddrs(); !inAny(r.cfg.AccessList, src) {
		return untrusted, f
	}
	return trusted, f
}

// Judge implements mechanism.SharedReceiver: a receiver of several on a
// host (NewFunction, one per switch) acts on the Fast CNPs of its own
// switch, trusted; those of another switch are the other's.
func (r *Receiver) Judge(_ *netsim.Host, m *mechanism.Message) mechanism.Verdict {
	switch o, _ := r.examine(m); o {
	case notFastCNP:
		return mechanism.Pass
	case trusted:
		return mechanism.Act
	}
	if r.cfg.Enabled {
		return mechanism.Refuse
	}
	return mechanism.RefuseOff
}

// HandleControl implements netsim.ControlHandler.
func (r *Receiver) HandleControl(h *netsim.Host, p *netsim.Packet) bool {
	r.msg.Reset(p)
	return r.HandleMessage(h, &r.msg)
}

// HandleMessage implements mechanism.SharedReceiver.
func (r *Receiver) HandleMessage(h *netsim.Host, m *mechanism.Message) bool {
	o, f := r.examine(m)
	switch o {
	case notFastCNP:
		return false
	case malformed:
		r.counters.Malformed++
		return true
	case discarded:
		r.counters.Discarded++
		return true
	case untrusted:
		r.counters.Untrusted++
		return true
	}
	src, _ := f.IPAddrs()
	orig := netip.AddrFrom16(f.FastCNP.OrigDst)
	q := r.sender(h, orig, f.BTH.DestQP)
	switch {
	case q == nil:
		r.counters.NoQP++
		return true
	case !q.Active():
		r.counters.Inactive++
		return true
	}
	// §3: the sender treats it as the receiver's CNP for that QP: DCQCN's
	// reaction point cuts its rate.
	q.ApplyCNP()
	r.counters.Accepted++
	if src == orig {
		r.counters.FromReceiver++
	} else {
		r.counters.FromSwitch++
	}
	if f.FastCNP.IOAM {
		r.counters.IOAM++
	}
	return true
}

// SenderQP returns the QP of h a Fast CNP names, without acting on it (nil
// for anything else): what a meter needs to attribute the notification.
func (r *Receiver) SenderQP(h *netsim.Host, p *netsim.Packet) *netsim.QP {
	fr := p.Frame()
	if p.Kind != netsim.KindRoCE || p.Opcode() != wire.OpCNP || fr == nil {
		return nil
	}
	r.msg.Reset(p)
	f, err := r.msg.Decode(r.dec)
	if err != nil || !f.HasFastCNP {
		return nil
	}
	return r.sender(h, netip.AddrFrom16(f.FastCNP.OrigDst), f.BTH.DestQP)
}

// sender finds the QP of h that sends to orig with destination QP dstQP
// (§4: the original destination address and the destination QP name the
// source QP, since two receivers may use the same QP number).
func (r *Receiver) sender(h *netsim.Host, orig netip.Addr, dstQP uint32) *netsim.QP {
	for _, q := range h.SendQPs() {
		if q.PeerQPN != dstQP {
			continue
		}
		if d := r.net.Node(q.Dst()); d != nil && d.Addr() == orig {
			return q
		}
	}
	return nil
}
