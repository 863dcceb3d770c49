package rateadvice

import (
	"fmt"
	"net/netip"

	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// ReceiverConfig configures an RNIC's Rate Advice processing.
type ReceiverConfig struct {
	// Capable: the RNIC announces the capability on every sending QP
	// (CapabilityBit) and applies advice; false: it drops advice.
	Capable bool
	// AccessList holds the nodes advice is accepted from.
	AccessList []netip.Prefix
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

// ReceiverCounters count what the RNIC did with advice.
type ReceiverCounters struct {
	// Applied: advice set as the QP's ceiling (Raised: above the previous
	// ceiling, Lowered: below).
	Applied, Raised, Lowered int64
	// NotCapable: advice to a QP that did not announce the capability.
	NotCapable int64
	// Untrusted: from a source not on the access list.
	Untrusted int64
	// NoQP: no such sending QP, or not active; Malformed: did not decode.
	NoQP, Malformed int64
}

// Receiver is an RNIC's Rate Advice processing: a netsim.ControlHandler.
type Receiver struct {
	cfg      ReceiverConfig
	dec      wire.Decoder
	msg      mechanism.Message // the packet HandleControl is given, alone
	counters ReceiverCounters
}

// NewReceiver returns a receiver with cfg and, when capable, announces the
// capability (CapabilityBit) on every sending QP of h: those it has now and
// those added to it later (netsim.Host.SetReservedBits).
func NewReceiver(h *netsim.Host, cfg ReceiverConfig) (*Receiver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("rateadvice: receiver: %w", err)
	}
	r := &Receiver{cfg: cfg, dec: wire.Decoder{CodePoints: cfg.CodePoints}}
	if cfg.Capable {
		h.SetReservedBits(h.ReservedBits() | CapabilityBit)
	}
	return r, nil
}

// Counters returns the counters.
func (r *Receiver) Counters() ReceiverCounters { return r.counters }

// ApplyConfig validates cfg and, if valid, makes its access list and code
// points the running ones. The capability is the receiver's from
// NewReceiver, which announced it on the host's QPs: a cfg that changes it
// is refused.
func (r *Receiver) ApplyConfig(cfg ReceiverConfig) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("rateadvice: receiver: %w", err)
	}
	if cfg.Capable != r.cfg.Capable {
		return fmt.Errorf("rateadvice: receiver: %w", cfgErr("capable", "%v: fixed at %v when the receiver was made", cfg.Capable, r.cfg.Capable))
	}
	r.cfg, r.dec = cfg, wire.Decoder{CodePoints: cfg.CodePoints}
	return nil
}

// outcome is what a receiver makes of a control packet before it looks
// for the QP.
type outcome uint8

const (
	notAdvice outcome = iota
	malformed
	untrusted
	trusted
)

// examine tells what the receiver makes of m, and m's frame as the
// receiver decodes it (nil for a packet that is not advice).
func (r *Receiver) examine(m *mechanism.Message) (outcome, *wire.Frame) {
	p := m.Packet
	if p.Kind != netsim.KindRoCE || p.HdrLen < wire.BTHLen || p.Frame() == nil ||
		p.Opcode() != r.cfg.CodePoints.RateAdviceOpcode {
		return notAdvice, nil
	}
	f, err := m.Decode(r.dec)
	if err != nil || f.Kind != wire.KindRateAdvice {
		return malformed, f
	}
	src, _ := f.IPAddrs()
	for _, pr := range r.cfg.AccessList {
		if pr.Contains(src) {
			return trusted, f
		}
	}
	return untrusted, f
}

// Judge implements mechanism.SharedReceiver: a receiver of several on a
// host (NewFunction, one per switch) acts on the advice of its own
// switch, trusted; that of another switch is the other's.
func (r *Receiver) Judge(_ *netsim.Host, m *mechanism.Message) mechanism.Verdict {
	o, _ := r.examine(m)
	return [...]mechanism.Verdict{notAdvice: mechanism.Pass, malformed: mechanism.Refuse,
		untrusted: mechanism.Refuse, trusted: mechanism.Act}[o]
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
	case notAdvice:
		return false
	case malformed:
		r.counters.Malformed++
		return true
	case untrusted:
		r.counters.Untrusted++
		return true
	}
	q := h.QP(f.RateAdvice.DestQP)
	switch {
	case q == nil || !q.Active():
		r.counters.NoQP++
		return true
	case !r.cfg.Capable:
		r.counters.NotCapable++
		return true
	}
	// The advice is a ceiling: DCQCN's increases stop at it, a CNP still
	// cuts below it (§3: CNP first, the advice guides the rest).
	ceil := int64(f.RateAdvice.RateMbps) * 1_000_000
	switch old := q.CeilingBitsPerSec(); {
	case old == 0 || ceil > old:
		r.counters.Raised++
	case ceil < old:
		r.counters.Lowered++
	}
	if ceil >= q.LineRateBitsPerSec() {
		q.ClearCeiling()
	} else {
		q.SetCeiling(ceil)
	}
	r.counters.Applied++
	return true
}
