package lhcnp

import (
	"fmt"
	"net/netip"

	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// FormatExternal is the Format of notifications a Notifier sent (Fast CNP,
// the white paper's switch CNP): the node decided them, another package
// built and sent the packet.
const FormatExternal Format = 3

// Notification is a notification the node decided to send, handed to a
// Notifier: the §5.5 procedure has run (the flow is among the largest
// contributors to the congested queue, its per-flow interval has passed,
// collaborative suppression let it through and the port's token bucket
// had a token). It is what a mechanism that reuses the node's flow table,
// monitors and rate limits needs to build a packet of its own.
type Notification struct {
	// Flow is the flow-table entry's key: Src is the data source (where
	// the notification goes), Dst the data destination.
	Flow FlowKey
	// SrcNode is the flow source's node (Packet.Dst of the notification).
	SrcNode netsim.NodeID
	// SrcAddr is the node's own address of the source's family (the
	// configured SourceAddress or the switch's), valid.
	SrcAddr netip.Addr
	// Port and Queue are the congested egress queue; QueueBytes its depth.
	Port       string
	Queue      uint8
	QueueBytes int64
	Trigger    Trigger
	Escalated  bool
	// Action, Parameter and CongLevel are the Long-haul CNP the node would
	// have sent; a format without them may ignore them.
	Action    wire.Action
	Parameter uint16
	CongLevel uint8
}

// Notifier builds and sends the packet of a notification (with
// Switch.Send) in a format other than Long-haul CNP. It runs on the engine
// goroutine inside the node's port observer and reports whether a packet
// left; the node then counts it (FormatExternal) and updates the flow's
// per-flow interval, as for its own notifications.
type Notifier interface {
	Notify(n *Notification) bool
}

// WithNotifier makes the node hand its notifications to nf instead of
// sending Long-haul CNPs. The Long-haul CNP formats need not be enabled
// (Config.FormatICMPv6, FormatRoCEv2): the node decides, nf sends.
func WithNotifier(nf Notifier) Option { return func(o *options) { o.notifier = nf } }

// SetNotifier replaces the node's Notifier (nil: send Long-haul CNPs
// again) together with its configuration, which is validated for the new
// mode first: on error nothing changes. A switch whose management turns
// Fast CNP on or off at run time goes through here.
func (n *Node) SetNotifier(nf Notifier, cfg Config) error {
	return n.setMode(nf, false, cfg)
}

// SetExternalMode is SetNotifier for a mechanism that also detects
// congestion itself (WithExternalTriggers): on, the node's own triggers
// and ECN programming are off until a SetNotifier.
func (n *Node) SetExternalMode(nf Notifier, cfg Config) error { return n.setMode(nf, true, cfg) }

func (n *Node) setMode(nf Notifier, external bool, cfg Config) error {
	if err := cfg.validate(nf != nil); err != nil {
		return fmt.Errorf("lhcnp: switch %s: %w", n.sw.Name(), err)
	}
	old, oldExt := n.opts.notifier, n.opts.externalTriggers
	n.opts.notifier = nf
	n.opts.externalTriggers = external && nf != nil
	if err := n.ApplyConfig(cfg); err != nil {
		n.opts.notifier, n.opts.externalTriggers = old, oldExt
		return err
	}
	return nil
}

// WithExternalTriggers turns the node's own second-level triggers (QD, EMR,
// QGR) and its ECN programming off: another mechanism detects congestion
// (the white paper's forwarding delay) and calls Fire; the ports keep the
// ECN marking they had. The node still learns flows, measures, chooses the
// flows and applies the per-flow and per-port limits.
func WithExternalTriggers() Option { return func(o *options) { o.externalTriggers = true } }

// Fire runs the §5.5 procedure on the queue prio of port pt now, as a
// trigger of its own would: the largest flows, the per-flow interval, the
// per-port bucket, then the notification. A queue fires at most once per
// measurement interval; Fire reports whether it ran.
func (n *Node) Fire(pt *netsim.Port, prio int) bool {
	ps := n.portOf(pt)
	if ps == nil || prio < 0 || prio >= netsim.NumPrio {
		return false
	}
	q := &ps.queues[prio]
	now := n.sim.Now()
	if !n.active(ps, q) || now < q.holdUntil {
		return false
	}
	n.fire(ps, q, TriggerExternal, now)
	return true
}
