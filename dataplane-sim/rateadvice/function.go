package rateadvice

import (
	"fmt"
	"slices"

	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
)

// Function is Rate Advice as a mechanism.Function, beside the switch's
// mode (mechanism.Beside): a node and, on a switch whose management turns
// it on (NewFunction), a receiver on every host, beside those of the
// network's other switches that have one (mechanism.ShareControl). Its
// configuration is a Config, its state a State.
type Function struct {
	node  *Node
	recvs []*Receiver
	hosts []*netsim.Host // recvs[i] is on hosts[i]
}

var (
	_ mechanism.Remover        = (*Function)(nil)
	_ mechanism.Deferrer       = (*Function)(nil)
	_ mechanism.SharedReceiver = (*Receiver)(nil)
)

// NewFunction creates a node on sw with cfg and a receiver on every host
// of sw's network, announcing the capability and trusting the switch (its
// address and cfg's source address). The receivers join those other
// switches' functions put on the hosts (mechanism.ShareControl): each
// switch's advice goes to its own receivers; advice no receiver trusts is
// counted once, by the first function's receiver, and dropped.
//
// The function is created held (mechanism.Deferrer): its node's first
// sweep is armed by Settle, so that one removed before (Remove: a Set
// that failed after creating it) leaves no event pending in the engine,
// where a sweep armed at creation stayed pending until it fired, stale.
func NewFunction(sw *netsim.Switch, cfg Config) (*Function, error) {
	n, err := newNode(sw.Network(), sw, cfg, true)
	if err != nil {
		return nil, err
	}
	f := &Function{node: n}
	rc := receiverConfig(sw, cfg)
	for _, h := range sw.Network().Hosts() {
		rv, err := NewReceiver(h, rc)
		if err != nil {
			return nil, fmt.Errorf("rateadvice: receiver: %w", err)
		}
		mechanism.ShareControl(h, rv)
		f.recvs, f.hosts = append(f.recvs, rv), append(f.hosts, h)
	}
	return f, nil
}

// Remove implements mechanism.Remover: NewFunction's receivers off the
// hosts and, on a host where no other switch's capable receiver is left,
// the capability off its QPs (those it has and those added later), as
// before NewFunction; the node's sweeps stop. Removed while held since
// NewFunction, it armed none: the engine has no event of it pending; one
// Settle after arms none either.
func (f *Function) Remove() {
	for i, h := range f.hosts {
		left := mechanism.UnshareControl(h, f.recvs[i])
		if !slices.ContainsFunc(left, func(r *Receiver) bool { return r.cfg.Capable }) {
			h.SetReservedBits(h.ReservedBits() &^ CapabilityBit)
		}
	}
	f.recvs, f.hosts = nil, nil
	f.node.holding = false
	f.node.sweepGen++ // a sweep armed (Settle) finds itself stale
}

// receiverConfig is what the receivers of a Function run with cfg:
// capable, trusting the switch's address and cfg's source address, with
// cfg's code points.
func receiverConfig(sw *netsim.Switch, cfg Config) ReceiverConfig {
	acl := mechanism.AccessList(sw.Addr(), cfg.SourceAddress)
	return ReceiverConfig{Capable: true, AccessList: acl, CodePoints: cfg.CodePoints}
}

// FunctionOf is the Function of a node created on its own (New), whose
// receivers the caller installs.
func FunctionOf(n *Node) *Function { return &Function{node: n} }

// Validate implements mechanism.Function.
func (f *Function) Validate(cfg any) error {
	return mechanism.Validate[Config](cfg, "rateadvice: switch "+f.node.sw.Name())
}

// Configure implements mechanism.Function (Node.ApplyConfig) and gives
// the receivers the new code points and source address, as Fast CNP's
// Configure does: a receiver left with the old opcode would pass the new
// advice by. lc is not used: Rate Advice runs beside the node, whatever
// its mode.
func (f *Function) Configure(cfg any, _ lhcnp.Config) error {
	c, err := mechanism.ConfigAs[Config](cfg)
	if err != nil {
		return err
	}
	rc := receiverConfig(f.node.sw, c)
	if err := rc.Validate(); err != nil {
		return fmt.Errorf("rateadvice: receiver: %w", err)
	}
	if err := f.node.ApplyConfig(c); err != nil {
		return err
	}
	for _, rv := range f.recvs {
		if err := rv.ApplyConfig(rc); err != nil {
			return err
		}
	}
	return nil
}

// Hold implements mechanism.Deferrer (Node.Hold).
func (f *Function) Hold() { f.node.Hold() }

// Settle implements mechanism.Deferrer (Node.Settle).
func (f *Function) Settle() { f.node.Settle() }

// Observer implements mechanism.Function: the node.
func (f *Function) Observer() netsim.PortObserver { return f.node }

// State implements mechanism.Function: the node's State.
func (f *Function) State() any { return f.node.State() }

// Counters implements mechanism.Function: the node's advice, and its
// receivers' (NewFunction's; a FunctionOf has none, its caller counting
// those it installs with AddReceiverCounters), as Fast CNP's Counters.
func (f *Function) Counters() map[string]int64 {
	c := f.node.Counters()
	out := map[string]int64{
		"advice_policy":      c.PolicyAdvice,
		"advice_queue":       c.QueueAdvice,
		"advice_not_capable": c.NotCapable,
	}
	AddReceiverCounters(out, f.recvs) // a FunctionOf's none: no key
	return out
}

// AddReceiverCounters adds the counters of receivers rs into out: the
// advice applied, and that dropped (to a QP that did not announce the
// capability, from an untrusted source, to no such QP, malformed).
func AddReceiverCounters(out map[string]int64, rs []*Receiver) {
	for _, rv := range rs {
		c := rv.Counters()
		out["rnic_advice_applied"] += c.Applied
		out["rnic_advice_dropped"] += c.NotCapable + c.Untrusted + c.NoQP + c.Malformed
	}
}
