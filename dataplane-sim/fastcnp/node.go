package fastcnp

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// Counters are the node's Fast CNP counters (YANG
// /lhcnp/fast-cnp/state/counters).
type Counters struct {
	// Sent counts Fast CNPs that left; SentIOAM those of the IOAM variant.
	Sent, SentIOAM int64
	// NotIPv6: a notification was due to an IPv4 source (§3: IPv6 only).
	NotIPv6 int64
	// OutsideDomain: the sender is outside Domain (§5).
	OutsideDomain int64
	// MarkedAlongside: CE marks applied to packets of senders not known
	// to be capable while the node sends Fast CNP (§4 MAY).
	MarkedAlongside int64
	// EncodeErrors: the encoder refused the frame (a bug).
	EncodeErrors int64
	// MarksWithheld: packets of capable senders (or of every sender
	// without MarkUnknown) the port asked to mark, in its marking range,
	// and AllowMark refused (§4 MUST NOT), counted before the port's
	// probability draw: the marks it would have applied are a share.
	MarksWithheld int64
	// BorderDroppedIn: Fast CNPs dropped on arrival through a border port
	// (from outside the domain); BorderDroppedOut: Fast CNPs, transiting
	// or the node's own, dropped before leaving through one (§5). YANG
	// border-dropped is their sum.
	BorderDroppedIn, BorderDroppedOut int64
}

// BorderDropped is the YANG border-dropped counter: Fast CNPs dropped at
// a border port either way.
func (c Counters) BorderDropped() int64 { return c.BorderDroppedIn + c.BorderDroppedOut }

// State is a snapshot of the node.
type State struct {
	Config   Config
	Counters Counters
	// Node is the underlying detection node's state (flow table, queues,
	// suppression counters).
	Node lhcnp.State
}

// Node is the Fast CNP function of one switch.
type Node struct {
	net *netsim.Network
	sw  *netsim.Switch
	lh  *lhcnp.Node
	cfg Config

	addrs    map[netsim.NodeID]netip.Addr
	border   map[*netsim.Port]bool // BorderPorts resolved
	dec      wire.Decoder          // recognises a Fast CNP at a border port
	frame    wire.Frame
	buf      [netsim.FrameCap]byte
	ioam     [ioamDataLen]byte
	counters Counters
}

// Attach installs a Fast CNP node on sw (connect the switch first). Events
// of the underlying node (flows learned, notifications sent with
// FormatExternal) go to the lhcnp options' callback.
func Attach(net *netsim.Network, sw *netsim.Switch, cfg Config, opts ...lhcnp.Option) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("fastcnp: switch %s: %w", sw.Name(), err)
	}
	n := &Node{net: net, sw: sw, cfg: cfg, addrs: map[netsim.NodeID]netip.Addr{}}
	if err := n.setBorder(&cfg); err != nil {
		return nil, err
	}
	lh, err := lhcnp.Attach(net, sw, cfg.nodeConfig(), append(opts, lhcnp.WithNotifier(n))...)
	if err != nil {
		return nil, fmt.Errorf("fastcnp: %w", err)
	}
	n.lh = lh
	// The node is the ports' observer: it forwards to lh and filters marks;
	// and the switch's forwarder at the filter stage, for border filtering.
	sw.SetObserver(n)
	sw.SetForwarder(netsim.StageFilter, n)
	return n, nil
}

// Wrap puts a Fast CNP function, disabled, around a Long-haul CNP node that
// is already attached: a switch that runs one or the other as its
// management says (Apply). Disabled, it is transparent: the node sends
// Long-haul CNPs and marks as configured.
func Wrap(lh *lhcnp.Node) *Node {
	sw := lh.Switch()
	n := &Node{net: sw.Network(), sw: sw, lh: lh, cfg: DefaultConfig(), addrs: map[netsim.NodeID]netip.Addr{}}
	n.dec = wire.Decoder{CodePoints: n.cfg.CodePoints}
	sw.SetObserver(n)
	sw.SetForwarder(netsim.StageFilter, n)
	return n
}

// Apply sets the switch's mode: with cfg enabled the node runs Fast CNP
// (the Long-haul CNP configuration lh is not used), disabled it runs
// Long-haul CNP with lh. Both are validated first; on error nothing
// changes.
func (n *Node) Apply(cfg Config, lh lhcnp.Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("fastcnp: switch %s: %w", n.sw.Name(), err)
	}
	border, err := n.borderPorts(&cfg)
	if err != nil {
		return err
	}
	if cfg.Enabled {
		err = n.lh.SetNotifier(n, cfg.nodeConfig())
	} else {
		err = n.lh.SetNotifier(nil, lh)
	}
	if err != nil {
		return fmt.Errorf("fastcnp: %w", err)
	}
	n.cfg, n.border, n.dec = cfg, border, wire.Decoder{CodePoints: cfg.CodePoints}
	return nil
}

// Switch returns the switch.
func (n *Node) Switch() *netsim.Switch { return n.sw }

// Config returns the running configuration.
func (n *Node) Config() Config { return n.cfg }

// ApplyConfig validates cfg and, if valid, makes it the running one.
func (n *Node) ApplyConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("fastcnp: switch %s: %w", n.sw.Name(), err)
	}
	border, err := n.borderPorts(&cfg)
	if err != nil {
		return err
	}
	if err := n.lh.ApplyConfig(cfg.nodeConfig()); err != nil {
		return fmt.Errorf("fastcnp: %w", err)
	}
	n.cfg, n.border, n.dec = cfg, border, wire.Decoder{CodePoints: cfg.CodePoints}
	return nil
}

// borderPorts resolves cfg.BorderPorts on the node's switch.
func (n *Node) borderPorts(cfg *Config) (map[*netsim.Port]bool, error) {
	if len(cfg.BorderPorts) == 0 {
		return nil, nil
	}
	byName := map[string]*netsim.Port{}
	for _, pt := range n.sw.Ports() {
		byName[pt.Name()] = pt
	}
	m := map[*netsim.Port]bool{}
	for i, name := range cfg.BorderPorts {
		pt, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("fastcnp: switch %s: %w", n.sw.Name(),
				cfgErr(fmt.Sprintf("border-interface[%d]", i), "no port %q on this switch", name))
		}
		m[pt] = true
	}
	return m, nil
}

// setBorder resolves the border ports of the configuration the node starts
// with.
func (n *Node) setBorder(cfg *Config) error {
	border, err := n.borderPorts(cfg)
	if err != nil {
		return err
	}
	n.border, n.dec = border, wire.Decoder{CodePoints: cfg.CodePoints}
	return nil
}

// Forward implements netsim.Forwarder at netsim.StageFilter: border
// filtering (§5), on the packet as it arrived (before FCN's ingress PE,
// at StageRewrite, could encapsulate anything). A Fast CNP (a CNP whose
// frame carries the Fast CNP destination option, decodable or not) that
// arrived on a border port, or would leave through one, is dropped and
// counted; every other packet passes. Only CNPs with a frame at a border
// port are decoded.
func (n *Node) Forward(_ *netsim.Switch, p *netsim.Packet, in, out *netsim.Port) bool {
	if n.border == nil || p.Kind != netsim.KindRoCE || p.Opcode() != wire.OpCNP {
		return true
	}
	inB, outB := in != nil && n.border[in], n.border[out]
	if !inB && !outB {
		return true
	}
	fr := p.Frame()
	if fr == nil {
		return true
	}
	_ = n.dec.Decode(fr, &n.frame) // a malformed Fast CNP is still one
	if !n.frame.HasFastCNP {
		return true
	}
	if inB {
		n.counters.BorderDroppedIn++
	} else {
		n.counters.BorderDroppedOut++
	}
	return false
}

// State returns a snapshot; withFlows includes the flow-table entries.
func (n *Node) State(withFlows bool) State {
	return State{Config: n.cfg, Counters: n.counters, Node: n.lh.State(withFlows)}
}

// Counters returns the Fast CNP counters.
func (n *Node) Counters() Counters { return n.counters }

// Detector returns the underlying detection node.
func (n *Node) Detector() *lhcnp.Node { return n.lh }

func (n *Node) addrOf(id netsim.NodeID) netip.Addr {
	a, ok := n.addrs[id]
	if !ok {
		if x := n.net.Node(id); x != nil {
			a = x.Addr()
		}
		n.addrs[id] = a
	}
	return a
}

// capable reports whether src is known to process Fast CNP.
func (n *Node) capable(src netip.Addr) bool { return inAny(n.cfg.CapableSenders, src) }

// inAny reports whether a prefix of ps holds a.
func inAny(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// AllowMark implements netsim.MarkFilter, the ECN policy of §4: never for
// a sender known to process Fast CNP ("MUST NOT mark"), for the others
// when MarkUnknown ("MAY choose to mark"). A disabled node leaves marking
// alone.
func (n *Node) AllowMark(_ *netsim.Port, p *netsim.Packet) bool {
	if !n.cfg.Enabled {
		return true
	}
	if n.cfg.MarkUnknown && !n.capable(n.addrOf(p.Src)) {
		return true // counted in OnMark if the port's draw marks it
	}
	n.counters.MarksWithheld++
	return false
}

// OnEnqueue, OnDequeue, OnMark and OnDrop implement netsim.PortObserver by
// handing every event to the detection node.
func (n *Node) OnEnqueue(pt *netsim.Port, p *netsim.Packet, q int64) { n.lh.OnEnqueue(pt, p, q) }

// OnDequeue implements netsim.PortObserver.
func (n *Node) OnDequeue(pt *netsim.Port, p *netsim.Packet, q int64) { n.lh.OnDequeue(pt, p, q) }

// OnMark implements netsim.PortObserver. A mark while the node is on is
// one AllowMark let through (a sender not known capable, MarkUnknown) and
// the port's probability draw applied: MarkedAlongside counts it here, as
// AllowMark runs before the draw.
func (n *Node) OnMark(pt *netsim.Port, p *netsim.Packet, q int64) {
	if n.cfg.Enabled {
		n.counters.MarkedAlongside++
	}
	n.lh.OnMark(pt, p, q)
}

// OnDrop implements netsim.PortObserver.
func (n *Node) OnDrop(pt *netsim.Port, p *netsim.Packet, q int64) { n.lh.OnDrop(pt, p, q) }

// The IOAM data of the IOAM variant: an RFC 9197 pre-allocated trace
// header and one node's data (trace type bits 0 and 5: hop limit and
// short node id, queue depth).
const (
	ioamPreallocated = 0 // IOAM Opt-Type (RFC 9486)
	ioamTraceType    = 1<<23 | 1<<18
	ioamNodeLen      = 2 // 4-octet units per node
	ioamDataLen      = 8 + 4*ioamNodeLen
)

func (n *Node) ioamData(qBytes int64) []byte {
	b := n.ioam[:]
	binary.BigEndian.PutUint16(b[0:], 0) // Namespace-ID: default
	// NodeLen (5 bits), Flags (4), RemainingLen (7): the one slot is filled.
	binary.BigEndian.PutUint16(b[2:], ioamNodeLen<<11)
	binary.BigEndian.PutUint32(b[4:], ioamTraceType<<8)
	binary.BigEndian.PutUint32(b[8:], uint32(wire.DefaultTTL)<<24|uint32(n.sw.ID()+1)&0xFFFFFF)
	binary.BigEndian.PutUint32(b[12:], uint32(min(qBytes, 1<<32-1)))
	return b
}

// Notify implements lhcnp.Notifier: it builds the Fast CNP of §3 and §4
// and sends it to the flow's source: source address the node's (its
// loopback), destination the data packet's source, BTH destination QP the
// data packet's destination QP, and the destination option holding the
// data packet's destination address.
func (n *Node) Notify(x *lhcnp.Notification) bool {
	src, dst := x.SrcAddr, x.Flow.Src
	if !src.Is6() || !dst.Is6() || dst.Is4In6() || !x.Flow.Dst.Is6() {
		n.counters.NotIPv6++
		return false
	}
	if !inAny(n.cfg.Domain, dst) {
		n.counters.OutsideDomain++
		return false
	}
	a := wire.Addressing{SrcIP: src, DstIP: dst, TOS: n.cfg.CNPDSCP << 2,
		SrcPort: 0xC000 | uint16(x.Flow.DstQP&0x3FFF)}
	c := wire.CNP{DestQP: x.Flow.DstQP}
	o := wire.FastCNPOption{OrigDst: x.Flow.Dst.As16()}
	if n.cfg.IOAM {
		o.IOAM, o.IOAMOptType, o.IOAMData = true, ioamPreallocated, n.ioamData(x.QueueBytes)
	}
	enc := wire.Encoder{CodePoints: n.cfg.CodePoints}
	size, err := enc.FastCNP(n.buf[:], &a, &c, &o)
	if err != nil {
		n.counters.EncodeErrors++
		return false
	}
	p, err := n.sw.FramePacket(n.buf[:size])
	if err != nil {
		n.counters.EncodeErrors++
		return false
	}
	bth := wire.EthernetLen + 40 + o.DestOptsLen() + wire.UDPLen
	p.SizeBytes = netsim.LinkBytes(size)
	p.Src, p.Dst = n.sw.ID(), x.SrcNode
	p.Flow = netsim.NoFlow
	p.Prio = n.cfg.CNPPrio
	p.ECN = netsim.ECNNotECT
	p.Kind = netsim.KindRoCE
	p.HdrLen = uint8(copy(p.Hdr[:], n.buf[bth:size]))
	if !n.sw.Send(p) {
		return false
	}
	n.counters.Sent++
	if n.cfg.IOAM {
		n.counters.SentIOAM++
	}
	return true
}
