package fastcnp

import (
	"fmt"

	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
)

// Function is Fast CNP as a mechanism.Function: a node and, on a switch
// whose management turns it on (NewFunction), a Fast CNP receiver on
// every host, trusting the switch, beside those of the network's other
// switches that have one (mechanism.ShareControl). Its configuration is a
// Config.
type Function struct {
	node  *Node
	recvs []*Receiver
	hosts []*netsim.Host // recvs[i] is on hosts[i]
}

var (
	_ mechanism.Remover        = (*Function)(nil)
	_ mechanism.SharedReceiver = (*Receiver)(nil)
)

// NewFunction wraps the Long-haul CNP node lh (Wrap), disabled, and puts
// a receiver, disabled, on every host of lh's network: until Configure
// turns it on the switch runs as before. The receivers join those other
// switches' functions put on the hosts (mechanism.ShareControl): each
// switch's Fast CNPs go to its own receivers; one that no receiver takes
// is counted once, by the first function's receiver that is on (else by
// the first function's), and dropped, never taken for a plain CNP.
func NewFunction(lh *lhcnp.Node) (*Function, error) {
	f := &Function{node: Wrap(lh)}
	net := lh.Switch().Network()
	for _, h := range net.Hosts() {
		rv, err := NewReceiver(net, ReceiverConfig{})
		if err != nil {
			return nil, err
		}
		mechanism.ShareControl(h, rv)
		f.recvs, f.hosts = append(f.recvs, rv), append(f.hosts, h)
	}
	return f, nil
}

// Remove implements mechanism.Remover: NewFunction's receivers off the
// hosts and the node off the switch's filter stage (Wrap put it there),
// as before NewFunction. The function must be off (Configure disabled):
// the Long-haul CNP node then notifies for itself, and the ports report
// to whatever the caller made their observer.
func (f *Function) Remove() {
	for i, h := range f.hosts {
		mechanism.UnshareControl(h, f.recvs[i])
	}
	f.recvs, f.hosts = nil, nil
	if sw := f.node.sw; sw.Forwarder(netsim.StageFilter) == f.node {
		sw.SetForwarder(netsim.StageFilter, nil)
	}
}

// FunctionOf is the Function of a node attached on its own (Attach),
// whose receivers the caller installs.
func FunctionOf(n *Node) *Function { return &Function{node: n} }

// Node returns the node.
func (f *Function) Node() *Node { return f.node }

// Validate implements mechanism.Function: the node's configuration and
// what the receivers would run with it.
func (f *Function) Validate(cfg any) error {
	if err := mechanism.Validate[Config](cfg, "fastcnp: switch "+f.node.sw.Name()); err != nil {
		return err
	}
	c := cfg.(Config)
	if _, err := f.node.borderPorts(&c); err != nil {
		return err
	}
	rc := f.receiverConfig(c)
	if err := rc.Validate(); err != nil {
		return fmt.Errorf("fastcnp: receiver: %w", err)
	}
	return nil
}

// Configure sets the switch's mode (Node.Apply) and the receivers' access
// list: the switch's own address and its configured source address. It
// refuses before it changes anything: the receivers' configuration is
// checked first, then the node's (Node.Apply refuses before it changes
// anything), and only then are the receivers, which all run the one
// configuration checked, given it. A receiver that refused after the
// node was set would leave the switch in the new mode with the old
// receivers. (None can today: the access list holds only valid
// addresses, whose /32 or /128 is a valid prefix; TestConfigureIsAllOrNothing.)
func (f *Function) Configure(cfg any, lc lhcnp.Config) error {
	c, err := mechanism.ConfigAs[Config](cfg)
	if err != nil {
		return err
	}
	rc := f.receiverConfig(c)
	if err := rc.Validate(); err != nil {
		return fmt.Errorf("fastcnp: receiver: %w", err)
	}
	if err := f.node.Apply(c, lc); err != nil {
		return err
	}
	for _, rv := range f.recvs {
		rv.set(rc)
	}
	return nil
}

// receiverConfig is what the receivers of a Function run with c: on with
// Fast CNP, trusting the switch's address and c's source address, with
// c's code points.
func (f *Function) receiverConfig(c Config) ReceiverConfig {
	acl := mechanism.AccessList(f.node.Switch().Addr(), c.SourceAddress)
	return ReceiverConfig{Enabled: c.Enabled, AccessList: acl, CodePoints: c.CodePoints}
}

// Observer implements mechanism.Function: the node.
func (f *Function) Observer() netsim.PortObserver { return f.node }

// State implements mechanism.Function: a State without the flow table.
func (f *Function) State() any { return f.node.State(false) }

// Counters implements mechanism.Function: the node's notifications and
// suppressions, and its receivers'.
func (f *Function) Counters() map[string]int64 {
	c := f.node.Counters()
	out := map[string]int64{
		"fast_cnp_ioam":            c.SentIOAM,
		"fast_cnp_not_ipv6":        c.NotIPv6,
		"marks_withheld":           c.MarksWithheld,
		"suppressed_flow_interval": 0,
		"suppressed_port_limit":    0,
	}
	for _, ps := range f.node.State(false).Node.Ports {
		for _, q := range ps.Queues {
			out["suppressed_flow_interval"] += q.Counters.SuppressedFlowInterval
			out["suppressed_port_limit"] += q.Counters.SuppressedPortLimit
		}
	}
	if len(f.recvs) > 0 {
		AddReceiverCounters(out, f.recvs)
	}
	return out
}

// AddReceiverCounters adds the counters of receivers rs into out.
func AddReceiverCounters(out map[string]int64, rs []*Receiver) {
	for _, rv := range rs {
		c := rv.Counters()
		out["rnic_accepted"] += c.Accepted
		out["rnic_discarded"] += c.Discarded
		out["rnic_untrusted"] += c.Untrusted
		out["rnic_no_qp"] += c.NoQP + c.Inactive + c.Malformed
	}
}
