package switchcnp

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/fastcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
)

// ErrConfig is wrapped by every configuration error; the message names the
// key.
var ErrConfig = errors.New("invalid switch cnp configuration")

// Config configures the white paper's practice on one switch.
type Config struct {
	Enabled bool
	// DSCP and Prio of the CNPs (§2.3.2: user-configured, what the RNICs
	// expect).
	DSCP, Prio uint8
	// SourceAddress is the CNPs' source, the switch's loopback, for the
	// flows of its family; invalid: the switch's address (Sender.Source).
	SourceAddress netip.Addr
	// DelayThreshold: packets forwarded slower than this are recorded
	// (§2.3.1).
	DelayThreshold engine.Time
	// BufferSharePercent: the recorded delay, converted to a depth at the
	// port rate, confirms congestion when it is at least this share of
	// the queue's available buffer (free bytes plus that depth).
	BufferSharePercent int
	// AssumedBufferBytes is the buffer of a port whose buffer is not
	// limited in the model.
	AssumedBufferBytes int64
	// MinCNPInterval is the per-flow gap; PortCNPRatePerSec and
	// PortCNPBurst the per-port bucket; MaxFlowsPerTrigger the flows per
	// confirmation.
	MinCNPInterval     engine.Time
	PortCNPRatePerSec  int64
	PortCNPBurst       int64
	MaxFlowsPerTrigger int
	// FlowTable: capacity, idle aging, learning (lhcnp's).
	FlowTable lhcnp.FlowTableConfig
}

// DefaultConfig returns the defaults: off, DSCP 48, packets delayed more
// than 20 µs recorded, congestion when their depth is 1% of the available
// buffer, the Fast CNP defaults (fastcnp.DefaultConfig) for the limits.
func DefaultConfig() Config {
	lc, fc := lhcnp.DefaultConfig(), fastcnp.DefaultConfig()
	return Config{
		DSCP: lc.CNPDSCP, Prio: lc.CNPPrio, DelayThreshold: 20 * engine.Microsecond, BufferSharePercent: 1,
		AssumedBufferBytes: 32 << 20, MinCNPInterval: fc.MinCNPInterval, PortCNPRatePerSec: fc.PortCNPRatePerSec,
		PortCNPBurst: fc.PortCNPBurst, MaxFlowsPerTrigger: fc.MaxFlowsPerTrigger, FlowTable: lc.FlowTable,
	}
}

func cfgErr(key, format string, args ...any) error {
	return fmt.Errorf("%s: %s: %w", key, fmt.Sprintf(format, args...), ErrConfig)
}

// Validate reports the first invalid key.
func (c *Config) Validate() error {
	switch {
	case c.DSCP > 63:
		return cfgErr("cnp-dscp", "%d above 63", c.DSCP)
	case c.Prio >= netsim.NumPrio:
		return cfgErr("cnp-prio", "%d not below %d", c.Prio, netsim.NumPrio)
	case c.DelayThreshold <= 0:
		return cfgErr("delay-threshold", "%v, must be positive", c.DelayThreshold)
	case c.BufferSharePercent < 1 || c.BufferSharePercent > 100:
		return cfgErr("buffer-share", "%d outside 1..100", c.BufferSharePercent)
	case c.AssumedBufferBytes <= 0:
		return cfgErr("assumed-buffer", "%d bytes, must be positive", c.AssumedBufferBytes)
	case c.MinCNPInterval <= 0:
		return cfgErr("min-cnp-interval", "%v, must be positive", c.MinCNPInterval)
	case c.PortCNPRatePerSec <= 0 || c.PortCNPBurst <= 0:
		return cfgErr("port-cnp-rate", "rate %d and burst %d must be positive", c.PortCNPRatePerSec, c.PortCNPBurst)
	case c.MaxFlowsPerTrigger < 1:
		return cfgErr("max-flows-per-trigger", "%d, must be at least 1", c.MaxFlowsPerTrigger)
	}
	return nil
}

func (c *Config) nodeConfig() lhcnp.Config {
	lc := mechanism.DetectionConfig(c.Enabled, c.DSCP, c.Prio, mechanism.Limits{MinCNPInterval: c.MinCNPInterval,
		PortCNPRatePerSec: c.PortCNPRatePerSec, PortCNPBurst: c.PortCNPBurst, MaxFlowsPerTrigger: c.MaxFlowsPerTrigger})
	lc.FlowTable = c.FlowTable
	lc.SourceAddress = c.SourceAddress
	return lc
}

// Counters are the node's counters.
type Counters struct {
	// Delayed: packets forwarded slower than DelayThreshold (recorded);
	// Confirmed: of those, the ones whose converted depth confirmed
	// congestion; Fired: confirmations that ran the notification procedure
	// (at most one per queue per MinCNPInterval).
	Delayed, Confirmed, Fired int64
	// MaxDelay is the largest forwarding delay recorded.
	MaxDelay engine.Time
}

// Node is the white paper's practice on one switch: the ports' observer.
type Node struct {
	sw       *netsim.Switch
	lh       *lhcnp.Node
	snd      *Sender
	cfg      Config
	enq      map[*netsim.Port]*[netsim.NumPrio]ring
	counters Counters
}

// ring is a FIFO of enqueue times (one per queued packet).
type ring struct {
	buf        []engine.Time
	head, size int
}

func (r *ring) push(t engine.Time) {
	if r.size == len(r.buf) {
		nb := make([]engine.Time, max(16, 2*len(r.buf)))
		for i := range r.size {
			nb[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = nb, 0
	}
	r.buf[(r.head+r.size)%len(r.buf)] = t
	r.size++
}

func (r *ring) pop() (engine.Time, bool) {
	if r.size == 0 {
		return 0, false
	}
	t := r.buf[r.head]
	r.head = (r.head + 1) % len(r.buf)
	r.size--
	return t, true
}

// Attach installs the node on sw (connect it first).
func Attach(net *netsim.Network, sw *netsim.Switch, cfg Config, opts ...lhcnp.Option) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("switchcnp: switch %s: %w", sw.Name(), err)
	}
	n := &Node{sw: sw, cfg: cfg, snd: NewSender(net, sw, cfg.DSCP, cfg.Prio), enq: map[*netsim.Port]*[netsim.NumPrio]ring{}}
	n.snd.Source = cfg.SourceAddress
	lh, err := lhcnp.Attach(net, sw, cfg.nodeConfig(), append(opts, lhcnp.WithNotifier(n.snd), lhcnp.WithExternalTriggers())...)
	if err != nil {
		return nil, fmt.Errorf("switchcnp: %w", err)
	}
	n.lh = lh
	for _, pt := range sw.Ports() {
		n.enq[pt] = new([netsim.NumPrio]ring)
	}
	sw.SetObserver(n)
	return n, nil
}

// Wrap puts the white paper's practice, disabled, around a Long-haul CNP
// node that is already attached (a switch whose management chooses its
// mechanism, Apply); disabled it is transparent.
func Wrap(lh *lhcnp.Node) *Node {
	sw := lh.Switch()
	cfg := DefaultConfig()
	n := &Node{sw: sw, lh: lh, cfg: cfg, snd: NewSender(sw.Network(), sw, cfg.DSCP, cfg.Prio),
		enq: map[*netsim.Port]*[netsim.NumPrio]ring{}}
	for _, pt := range sw.Ports() {
		n.enq[pt] = new([netsim.NumPrio]ring)
	}
	sw.SetObserver(n)
	return n
}

// Apply sets the switch's mode: with cfg enabled the node runs the white
// paper's practice (the Long-haul CNP configuration lc is not used),
// disabled it runs Long-haul CNP with lc. Both are validated first; on
// error nothing changes.
func (n *Node) Apply(cfg Config, lc lhcnp.Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("switchcnp: switch %s: %w", n.sw.Name(), err)
	}
	var err error
	if cfg.Enabled {
		err = n.lh.SetExternalMode(n.snd, cfg.nodeConfig())
	} else {
		err = n.lh.SetNotifier(nil, lc)
	}
	if err != nil {
		return fmt.Errorf("switchcnp: %w", err)
	}
	n.cfg = cfg
	n.snd.DSCP, n.snd.Prio, n.snd.Source = cfg.DSCP, cfg.Prio, cfg.SourceAddress
	return nil
}

// Config returns the running configuration.
func (n *Node) Config() Config { return n.cfg }

// Counters returns the counters; Sent the CNPs sent.
func (n *Node) Counters() Counters { return n.counters }

// Sent returns the CNPs sent.
func (n *Node) Sent() int64 { return n.snd.Sent }

// Detector returns the flow table and rate-limit node.
func (n *Node) Detector() *lhcnp.Node { return n.lh }

// OnEnqueue implements netsim.PortObserver.
func (n *Node) OnEnqueue(pt *netsim.Port, p *netsim.Packet, q int64) {
	if r := n.enq[pt]; r != nil {
		r[p.Prio].push(n.lh.Switch().Sim().Now())
	}
	n.lh.OnEnqueue(pt, p, q)
}

// OnDequeue implements netsim.PortObserver: the forwarding delay of p
// (§2.3.1), converted to a depth and compared with the available buffer.
func (n *Node) OnDequeue(pt *netsim.Port, p *netsim.Packet, q int64) {
	n.lh.OnDequeue(pt, p, q)
	r := n.enq[pt]
	if r == nil {
		return
	}
	at, ok := r[p.Prio].pop()
	if !ok || !n.cfg.Enabled {
		return
	}
	now := n.lh.Switch().Sim().Now()
	d := now - at
	if d <= n.cfg.DelayThreshold {
		return
	}
	n.counters.Delayed++
	n.counters.MaxDelay = max(n.counters.MaxDelay, d)
	depth := int64(float64(d) * float64(pt.RateBitsPerSec()) / 8e9)
	buf := pt.Config().BufferBytes
	if buf <= 0 {
		buf = n.cfg.AssumedBufferBytes
	}
	avail := max(0, buf-pt.TotalQueueBytes()) + depth
	if depth*100 < int64(n.cfg.BufferSharePercent)*avail {
		return
	}
	n.counters.Confirmed++
	if n.lh.Fire(pt, int(p.Prio)) {
		n.counters.Fired++
	}
}

// OnMark implements netsim.PortObserver.
func (n *Node) OnMark(pt *netsim.Port, p *netsim.Packet, q int64) { n.lh.OnMark(pt, p, q) }

// OnDrop implements netsim.PortObserver.
func (n *Node) OnDrop(pt *netsim.Port, p *netsim.Packet, q int64) { n.lh.OnDrop(pt, p, q) }
