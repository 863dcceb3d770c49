package udpwire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// Defaults of a wire.
const (
	DefaultKeepalive = 100 * time.Millisecond
	DefaultDeadAfter = time.Second
	// DefaultMaxLate is the lateness tolerated before a frame counts as
	// late, in simulated time (docs/lab.md).
	DefaultMaxLate = 100 * engine.Microsecond
	// DefaultQueue is how many datagrams wait for the socket before the
	// engine's sends are dropped.
	DefaultQueue = 8192
	// maxDatagram bounds a datagram: a 9 kB jumbo frame and our headers.
	maxDatagram = 9216 + DataOverhead
	// ioBatch is how many datagrams one system call sends or receives at
	// most, and one engine.Sim.Do delivers.
	ioBatch = 64
)

// Config is one wire: the local end of one cable whose far end runs in
// another process.
type Config struct {
	// Name is the link's name (logs, errors).
	Name string
	// Listen is the local UDP address; Peer the far end's, host:port
	// (resolved when Run starts).
	Listen netip.AddrPort
	Peer   string
	// Speed is the realtime factor the engine runs at (simulated seconds
	// per wall-clock second), announced in hellos: peers at another speed
	// cannot share a clock.
	Speed float64
	// VNI identifies the link on both sides (the Geneve VNI), so that a
	// datagram for another link is refused rather than delivered.
	VNI uint32
	// Keepalive is how often a hello is sent; DeadAfter how long without
	// any datagram takes the link down; MaxLate the lateness of a frame
	// (simulated time) beyond which it counts as late; Queue the send
	// queue's length. Zero values take the defaults.
	Keepalive, DeadAfter time.Duration
	MaxLate              engine.Time
	Queue                int
}

// Stats are a wire's counters.
type Stats struct {
	TxFrames, TxBytes  uint64 // data datagrams sent, their bytes
	TxDropped          uint64 // frames lost because the send queue was full
	TxErrors           uint64 // failed socket writes
	RxFrames, RxBytes  uint64 // data datagrams delivered into the engine
	RxDown             uint64 // data datagrams that arrived while the link was down
	RxMalformed        uint64 // datagrams refused (bad geneve, frame, vni)
	RxLost             uint64 // gaps in the sequence numbers
	Late               uint64 // frames delivered later than MaxLate
	MaxLateNs          int64  // the latest of them, simulated ns
	HellosTx, HellosRx uint64
	Ups, Downs         uint64 // link state changes
	Up                 bool
	PeerInstance       uint64
}

// Hello is what a wire tells the fabric about its peer's clock.
type HelloFunc func(name string, h Hello) error

type options struct {
	log     *slog.Logger
	hello   HelloFunc
	capture io.Writer
	inst    uint64
	now     func() time.Time
}

// Option configures a wire.
type Option func(*options)

// WithLogger logs link state changes and errors (default: nothing).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithHello has f judge every hello before the link comes up: it adopts
// the peer's epoch or refuses the peer (a different speed) with an error,
// which keeps the link down.
func WithHello(f HelloFunc) Option { return func(o *options) { o.hello = f } }

// WithCapture writes every frame the wire sends and receives to w as a
// pcap (Ethernet, nanosecond timestamps of the simulated time mapped to
// the wall clock by the engine's epoch).
func WithCapture(w io.Writer) Option { return func(o *options) { o.capture = w } }

// WithClock has the wire read the wall clock from now (default time.Now)
// to judge its peer's silence: when it last heard a datagram and how long
// ago that was. Tests drive the dead interval with it.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithInstance sets the instance number announced in hellos (default:
// random): it tells the peer that this process restarted.
func WithInstance(n uint64) Option { return func(o *options) { o.inst = n } }

// Wire is the local end of a cable to another process. It implements
// netsim.Wire on out, the local port's egress link, and delivers what the
// peer sends into in, the link back.
type Wire struct {
	cfg     Config
	o       options
	sim     driver
	out, in *netsim.Link
	codec   *codec

	// Engine side (the engine goroutine, or Do).
	txSeq uint32
	txBuf []byte

	tx     chan []byte
	free   chan []byte // datagram buffers back from the writer
	conn   *net.UDPConn
	peer   atomic.Pointer[netip.AddrPort]
	pcapMu sync.Mutex
	pcap   *wire.PcapWriter

	stateMu   sync.Mutex // one link state change at a time
	helloNow  chan struct{}
	helloBuf  []byte // keepalive goroutine only
	up        atomic.Bool
	lastHeard atomic.Int64 // wall ns (o.now) of the last datagram
	peerInst  atomic.Uint64
	rxSeq     uint32 // reader goroutine only
	refused   atomic.Bool

	txFrames, txBytes, txDropped, txErrors atomic.Uint64
	rxFrames, rxBytes, rxDown, rxMalformed atomic.Uint64
	rxLost, late, hellosTx, hellosRx       atomic.Uint64
	ups, downs                             atomic.Uint64
	maxLate                                atomic.Int64
}

var _ netsim.Wire = (*Wire)(nil)

// driver is what a wire uses of the engine that drives its network: the
// network's engine.Group when it is cut into partitions (the group's Do
// stops them all), else its Sim.
type driver interface {
	Do(func())
	Now() engine.Time
	Epoch() time.Time
}

// New makes port's link a wire. port belongs to a node of this process;
// its peer's node runs elsewhere. The links start down: they come up when
// the peer's first hello is accepted. Call New before the engine runs (or
// inside the engine's Do), then Run.
func New(n *netsim.Network, port *netsim.Port, cfg Config, opts ...Option) (*Wire, error) {
	if cfg.VNI > MaxVNI {
		return nil, fmt.Errorf("udpwire: link %s: vni %d above %d", cfg.Name, cfg.VNI, MaxVNI)
	}
	if !(cfg.Speed > 0) {
		return nil, fmt.Errorf("udpwire: link %s: speed %g must be positive", cfg.Name, cfg.Speed)
	}
	if !cfg.Listen.IsValid() || cfg.Peer == "" {
		return nil, fmt.Errorf("udpwire: link %s: need a listen address and a peer", cfg.Name)
	}
	if cfg.Keepalive <= 0 {
		cfg.Keepalive = DefaultKeepalive
	}
	if cfg.DeadAfter <= 0 {
		cfg.DeadAfter = DefaultDeadAfter
	}
	if cfg.DeadAfter < 2*cfg.Keepalive {
		return nil, fmt.Errorf("udpwire: link %s: dead interval %v must be at least twice the keepalive %v", cfg.Name, cfg.DeadAfter, cfg.Keepalive)
	}
	if cfg.MaxLate <= 0 {
		cfg.MaxLate = DefaultMaxLate
	}
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	o := options{log: slog.New(slog.DiscardHandler), inst: rand.Uint64(), now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	var d driver = n.Sim()
	if g := n.Group(); g != nil {
		d = g
	}
	w := &Wire{cfg: cfg, o: o, sim: d, out: port.Out(), in: port.In(), codec: newCodec(n),
		tx: make(chan []byte, cfg.Queue), helloNow: make(chan struct{}, 1)}
	w.free = make(chan []byte, cfg.Queue+ioBatch)
	if o.capture != nil {
		pw, err := wire.NewPcapWriter(o.capture, true)
		if err != nil {
			return nil, fmt.Errorf("udpwire: link %s: capture: %w", cfg.Name, err)
		}
		w.pcap = pw
	}
	w.out.SetWire(w)
	w.out.SetUp(false)
	w.in.SetUp(false)
	return w, nil
}

// Name returns the link's name.
func (w *Wire) Name() string { return w.cfg.Name }

// Send implements netsim.Wire: it encodes p on the engine goroutine and
// queues the datagram for the socket; a full queue loses it, counted.
func (w *Wire) Send(_ *netsim.Link, p *netsim.Packet, txEnd engine.Time) {
	var b []byte
	select {
	case b = <-w.free:
	default:
		b = make([]byte, 0, 2048)
	}
	w.txSeq++
	m := Meta{SentAt: txEnd, Seq: w.txSeq}
	var err error
	hdr := len(b)
	b = append(b, make([]byte, DataOverhead)...)
	if b, err = w.codec.appendFrame(b, p, &m); err != nil {
		w.codec.net.FreePacket(p)
		w.txErrors.Add(1)
		w.o.log.Error("wire: cannot encode a frame", "link", w.cfg.Name, "err", err)
		return
	}
	w.codec.net.FreePacket(p)
	frame := b[hdr+DataOverhead:]
	w.writeCapture(txEnd, frame)
	// Write the header in front of the frame now that meta is complete.
	AppendData(b[:hdr], w.cfg.VNI, &m, nil)
	select {
	case w.tx <- b:
	default:
		w.txDropped.Add(1)
		w.recycle(b)
	}
}

func (w *Wire) writeCapture(t engine.Time, frame []byte) {
	if w.pcap == nil {
		return
	}
	ts := time.Unix(0, 0)
	if e := w.sim.Epoch(); !e.IsZero() {
		ts = e.Add(time.Duration(float64(t) / w.cfg.Speed))
	}
	w.pcapMu.Lock()
	defer w.pcapMu.Unlock()
	_ = w.pcap.WritePacket(ts, frame)
}

// Run opens the socket and carries frames until ctx ends. It returns an
// error when the socket cannot be opened or the peer's address is not a
// host:port. A peer name that does not resolve yet (a container that has
// not started) is looked up again every keepalive interval, the link down
// meanwhile.
func (w *Wire) Run(ctx context.Context) error {
	if _, _, err := net.SplitHostPort(w.cfg.Peer); err != nil {
		return fmt.Errorf("udpwire: link %s: peer %q: %w", w.cfg.Name, w.cfg.Peer, err)
	}
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(w.cfg.Listen))
	if err != nil {
		return fmt.Errorf("udpwire: link %s: %w", w.cfg.Name, err)
	}
	for logged := false; ; {
		peer, err := ResolveAddr(ctx, w.cfg.Peer)
		if err == nil {
			w.peer.Store(&peer)
			break
		}
		if !logged {
			logged = true
			w.o.log.Warn("wire: peer not found yet, looking again", "link", w.cfg.Name, "peer", w.cfg.Peer, "err", err)
		}
		select {
		case <-ctx.Done():
			conn.Close()
			return nil
		case <-time.After(w.cfg.Keepalive):
		}
	}
	w.conn = conn
	_ = conn.SetReadBuffer(4 << 20)
	_ = conn.SetWriteBuffer(4 << 20)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); w.writer(ctx) }()
	go func() { defer wg.Done(); w.reader(); cancel() }()
	go func() { defer wg.Done(); w.keepalive(ctx) }()
	<-ctx.Done()
	conn.Close()
	wg.Wait()
	return nil
}

// LocalAddr returns the bound address once Run has opened the socket.
func (w *Wire) LocalAddr() netip.AddrPort {
	if w.conn == nil {
		return netip.AddrPort{}
	}
	return w.conn.LocalAddr().(*net.UDPAddr).AddrPort()
}

// ResolveAddr resolves a wire's address: ip:port, host:port (a container's
// name; its IPv4 address when it has one, so that both ends of a wire pick
// the same family) or :port (every interface, IPv4).
func ResolveAddr(ctx context.Context, hostport string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(hostport); err == nil {
		return ap, nil
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return netip.AddrPort{}, err
	}
	pn, err := net.DefaultResolver.LookupPort(ctx, "udp", port)
	if err != nil {
		return netip.AddrPort{}, err
	}
	if host == "" {
		return netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(pn)), nil
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return netip.AddrPort{}, err
	}
	best := addrs[0].Unmap()
	for _, a := range addrs {
		if a.Unmap().Is4() {
			best = a.Unmap()
			break
		}
	}
	return netip.AddrPortFrom(best, uint16(pn)), nil
}

// recycle returns a datagram buffer for the next Send.
func (w *Wire) recycle(b []byte) {
	select {
	case w.free <- b[:0]:
	default:
	}
}

// batchConn is what x/net's ipv4 and ipv6 PacketConns share: sendmmsg
// and recvmmsg on Linux, one datagram per call elsewhere.
type batchConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

func (w *Wire) batchConn() batchConn {
	if w.cfg.Listen.Addr().Is4() {
		return ipv4.NewPacketConn(w.conn)
	}
	return ipv6.NewPacketConn(w.conn)
}

// writer sends the queued datagrams, as many per system call as are
// waiting (up to ioBatch).
func (w *Wire) writer(ctx context.Context) {
	bc := w.batchConn()
	msgs := make([]ipv4.Message, ioBatch)
	bufs := make([][]byte, 0, ioBatch)
	for {
		bufs = bufs[:0]
		select {
		case <-ctx.Done():
			return
		case b := <-w.tx:
			bufs = append(bufs, b)
		}
	more:
		for len(bufs) < ioBatch {
			select {
			case b := <-w.tx:
				bufs = append(bufs, b)
			default:
				break more
			}
		}
		peer := net.UDPAddrFromAddrPort(*w.peer.Load())
		for i, b := range bufs {
			msgs[i] = ipv4.Message{Buffers: [][]byte{b}, Addr: peer}
		}
		for sent := 0; sent < len(bufs); {
			n, err := bc.WriteBatch(msgs[sent:len(bufs)], 0)
			if err != nil {
				// A peer that is gone (ICMP port unreachable) fails the
				// first datagram: count it and go on with the rest.
				w.txErrors.Add(1)
				n = 1
			} else {
				for _, b := range bufs[sent : sent+n] {
					w.txFrames.Add(1)
					w.txBytes.Add(uint64(len(b)))
				}
			}
			sent += n
		}
		for _, b := range bufs {
			w.recycle(b)
		}
	}
}

func (w *Wire) keepalive(ctx context.Context) {
	t := time.NewTicker(w.cfg.Keepalive)
	defer t.Stop()
	r := silence{heard: w.lastHeard.Load()}
	for {
		w.sendHello()
		w.judgeSilence(&r)
		select {
		case <-ctx.Done():
			return
		case <-w.helloNow:
		case <-t.C:
		}
	}
}

// silence is what the keepalive loop remembers between its rounds: the
// last datagram's instant it saw and the rounds since it changed.
type silence struct {
	heard  int64 // wall ns (the wire's clock), as lastHeard
	rounds int
}

// judgeSilence is one keepalive round's look at the peer: the link goes
// down when peerSilent says the peer is.
func (w *Wire) judgeSilence(r *silence) {
	if h := w.lastHeard.Load(); h != r.heard {
		r.heard, r.rounds = h, 0
	} else {
		r.rounds++
	}
	quiet := w.o.now().Sub(time.Unix(0, r.heard))
	if w.up.Load() && peerSilent(quiet, r.rounds, w.cfg.DeadAfter, int(w.cfg.DeadAfter/w.cfg.Keepalive)) {
		w.peerInst.Store(0)
		w.setUp(false, fmt.Sprintf("nothing heard for %v (%d keepalives)", w.cfg.DeadAfter, r.rounds))
	}
}

// noteHeard records that a datagram arrived now.
func (w *Wire) noteHeard() { w.lastHeard.Store(w.o.now().UnixNano()) }

// peerSilent judges the peer dead: nothing heard for the dead interval
// (quiet), and for as many of this wire's own keepalive rounds as the
// interval holds. A process starved of CPU (a loaded machine; a stopped
// container) runs one round where it should have run ten, and its reader
// has not yet read what waits in its socket: the silence is its own, not
// the peer's, and taking the link down for it lost the frames in flight
// (a flap during a flow's CM exchange costs its 4.3 s retry, minutes of
// wall-clock time at a low speed). A peer that is really gone is still
// found after the dead interval when this process runs.
func peerSilent(quiet time.Duration, silentRounds int, deadAfter time.Duration, rounds int) bool {
	return quiet > deadAfter && silentRounds >= rounds
}

// sendHello sends a keepalive (once the engine has an epoch).
func (w *Wire) sendHello() {
	e := w.sim.Epoch()
	if e.IsZero() {
		return
	}
	var now engine.Time
	w.sim.Do(func() { now = w.sim.Now() })
	h := Hello{Epoch: e.UnixNano(), Speed: w.cfg.Speed, Now: now, Instance: w.o.inst}
	if !w.refused.Load() {
		h.Heard = w.peerInst.Load()
	}
	w.helloBuf = AppendHello(w.helloBuf[:0], w.cfg.VNI, &h)
	if _, err := w.conn.WriteToUDPAddrPort(w.helloBuf, *w.peer.Load()); err == nil {
		w.hellosTx.Add(1)
	}
}

// setUp changes the link state in the engine: both directions of the
// cable go up or down together.
func (w *Wire) setUp(up bool, why string) {
	w.stateMu.Lock()
	defer w.stateMu.Unlock()
	if w.up.Swap(up) == up {
		return
	}
	w.sim.Do(func() {
		w.out.SetUp(up)
		w.in.SetUp(up)
	})
	if up {
		w.ups.Add(1)
		w.o.log.Info("wire: link up", "link", w.cfg.Name, "peer", w.cfg.Peer, "why", why)
	} else {
		w.downs.Add(1)
		w.o.log.Warn("wire: link down", "link", w.cfg.Name, "peer", w.cfg.Peer, "why", why)
	}
}

// reader receives datagrams, as many per system call as have arrived (up
// to ioBatch), and hands the batch's frames to the engine in one Do.
func (w *Wire) reader() {
	bc := w.batchConn()
	msgs := make([]ipv4.Message, ioBatch)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, maxDatagram)}
	}
	var d Datagram
	var f wire.Frame
	batch := make([]rxFrame, 0, ioBatch)
	for {
		n, err := bc.ReadBatch(msgs, 0)
		if err != nil {
			if errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed) {
				return
			}
			continue // ICMP errors from a peer that is gone
		}
		w.noteHeard()
		for i := range msgs[:n] {
			b := msgs[i].Buffers[0][:msgs[i].N]
			if err := Decode(b, &d); err != nil || d.VNI != w.cfg.VNI {
				w.rxMalformed.Add(1)
				continue
			}
			if d.Control {
				w.hellosRx.Add(1)
				w.onHello(&d.Hello)
				continue
			}
			if !w.up.Load() {
				w.rxDown.Add(1)
				continue
			}
			batch = append(batch, rxFrame{})
			r := &batch[len(batch)-1]
			if err := w.codec.check(&d, &f, r); err != nil {
				batch = batch[:len(batch)-1]
				w.rxMalformed.Add(1)
				continue
			}
			if w.rxSeq != 0 && d.Meta.Seq > w.rxSeq+1 {
				w.rxLost.Add(uint64(d.Meta.Seq - w.rxSeq - 1))
			}
			w.rxSeq = d.Meta.Seq
			w.rxBytes.Add(uint64(len(b)))
			w.writeCapture(d.Meta.SentAt, d.Frame)
		}
		w.deliver(batch)
		batch = batch[:0]
	}
}

// onHello runs the handshake: a new peer (or a restarted one) is
// answered at once with a hello that says we hear it; the link comes up
// when the peer's hello says it hears us.
func (w *Wire) onHello(h *Hello) {
	prev := w.peerInst.Swap(h.Instance)
	if prev != h.Instance {
		if prev != 0 && w.up.Load() {
			w.setUp(false, "the peer restarted")
		}
		w.wakeHello()
	}
	if w.o.hello != nil {
		if err := w.o.hello(w.cfg.Name, *h); err != nil {
			if !w.refused.Swap(true) {
				w.o.log.Error("wire: peer refused", "link", w.cfg.Name, "peer", w.cfg.Peer, "err", err)
			}
			w.setUp(false, err.Error())
			return
		}
	}
	if w.refused.Swap(false) {
		w.wakeHello()
	}
	if !w.up.Load() && h.Heard == w.o.inst {
		w.rxSeq = 0
		w.setUp(true, "the peer hears us")
		w.wakeHello()
	}
}

func (w *Wire) wakeHello() {
	select {
	case w.helloNow <- struct{}{}:
	default:
	}
}

// deliver hands a batch of frames to the engine.
func (w *Wire) deliver(batch []rxFrame) {
	if len(batch) == 0 {
		return
	}
	from, to := w.in.From().Node().ID(), w.in.To().Node().ID()
	w.sim.Do(func() {
		for i := range batch {
			r := &batch[i]
			p := w.codec.packet(r, from, to)
			if late := w.in.Arrive(p, r.meta.SentAt); late > w.cfg.MaxLate {
				w.late.Add(1)
				if int64(late) > w.maxLate.Load() {
					w.maxLate.Store(int64(late))
				}
			}
		}
	})
	w.rxFrames.Add(uint64(len(batch)))
	clear(batch)
}

// Up reports whether the link is up.
func (w *Wire) Up() bool { return w.up.Load() }

// Stats returns the wire's counters. Safe from any goroutine.
func (w *Wire) Stats() Stats {
	return Stats{
		TxFrames: w.txFrames.Load(), TxBytes: w.txBytes.Load(), TxDropped: w.txDropped.Load(), TxErrors: w.txErrors.Load(),
		RxFrames: w.rxFrames.Load(), RxBytes: w.rxBytes.Load(), RxDown: w.rxDown.Load(), RxMalformed: w.rxMalformed.Load(),
		RxLost: w.rxLost.Load(), Late: w.late.Load(), MaxLateNs: w.maxLate.Load(),
		HellosTx: w.hellosTx.Load(), HellosRx: w.hellosRx.Load(), Ups: w.ups.Load(), Downs: w.downs.Load(),
		Up: w.up.Load(), PeerInstance: w.peerInst.Load(),
	}
}
