package netsim

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// dropOnce is a Forwarder that drops, the first time each passes, the data
// packets whose PSN it lists (their resends pass, unless listed again:
// times), and NAKs while naks > 0.
type dropOnce struct {
	times   map[uint32]int // PSN -> how many of its passages to drop
	naks    int
	dropped int
}

func (d *dropOnce) Forward(_ *Switch, p *Packet, _, _ *Port) bool {
	if p.Kind != KindRoCE || p.DestQP() == wire.GSIQP {
		return true
	}
	switch op := p.Opcode(); {
	case op.IsData():
		if d.times[p.PSN()] > 0 {
			d.times[p.PSN()]--
			d.dropped++
			return false
		}
	case op == wire.OpRCAck && isNAK(p) && d.naks > 0:
		d.naks--
		d.dropped++
		return false
	}
	return true
}

// gbnPath is a sender and a receiver through one switch (10 Gb/s, 5 µs per
// link, no ECN, a buffer that never fills) carrying one finite flow.
type gbnPath struct {
	sim      *engine.Sim
	net      *Network
	sw       *Switch
	src, dst *Host
	flow     *Flow
}

func newGBNPath(t *testing.T, hc HostConfig, fc FlowConfig, drop Forwarder) *gbnPath {
	t.Helper()
	sim := engine.New(engine.WithSeed(1))
	n := New(sim)
	g := &gbnPath{sim: sim, net: n}
	var err error
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	g.sw, err = n.AddSwitch("sw", netip.MustParseAddr("10.0.0.254"), SwitchConfig{Port: PortConfig{BufferBytes: 64 << 20}})
	must(err)
	g.src, err = n.AddHost("a", netip.MustParseAddr("10.0.0.1"), hc)
	must(err)
	g.dst, err = n.AddHost("b", netip.MustParseAddr("10.0.0.2"), hc)
	must(err)
	for _, h := range []*Host{g.src, g.dst} {
		_, _, err = n.Connect(h, g.sw, LinkConfig{RateBitsPerSec: 10e9, Delay: 5 * engine.Microsecond})
		must(err)
	}
	n.ComputeRoutes()
	fc.Src, fc.Dst = g.src, g.dst
	g.flow, err = n.AddFlow(fc)
	must(err)
	if drop != nil {
		g.sw.SetForwarder(StageFilter, drop)
	}
	return g
}

func gbnHost() HostConfig {
	hc := DefaultHostConfig()
	if !hc.GoBackN {
		panic("DefaultHostConfig without go-back-N")
	}
	return hc
}

// packetsOf is the number of data packets of a flow of bytes in messages
// of msg bytes, mtu bytes per packet.
func packetsOf(bytes, msg, mtu int64) int64 {
	var n int64
	for left := bytes; left > 0; left -= msg {
		m := min(left, msg)
		n += (m + mtu - 1) / mtu
	}
	return n
}

// With go-back-N, a packet lost in the middle of a flow is NAKed once, the
// sender goes back to it and the flow finishes with every byte: each packet
// received once in sequence, the ones the sender had sent after the lost
// one discarded and sent again, no timeout. Flows of one message and of
// several (whose last packets are short) resume at the right byte.
func TestGoBackNResendsAfterANAK(t *testing.T) {
	for _, tc := range []struct {
		name       string
		bytes, msg int64
	}{
		{"one message", 256 << 10, 0},
		{"messages with short last packets", 100000, 10000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drop := &dropOnce{times: map[uint32]int{10: 1}}
			g := newGBNPath(t, gbnHost(), FlowConfig{Bytes: tc.bytes, MessageBytes: tc.msg}, drop)
			g.sim.Run(10 * engine.Millisecond)
			q, r := g.flow.Sender, g.flow.Receiver
			msg := tc.msg
			if msg == 0 {
				msg = tc.bytes
			}
			pkts := packetsOf(tc.bytes, msg, 4096)
			if done, _ := q.Done(); !done {
				t.Fatalf("flow not finished: acked %d of %d bytes", q.AckedBytes(), tc.bytes)
			}
			if r.RxBytes() != tc.bytes || r.RxPackets() != pkts {
				t.Errorf("received %d bytes in %d packets, want %d in %d", r.RxBytes(), r.RxPackets(), tc.bytes, pkts)
			}
			if drop.dropped != 1 || g.dst.Stats().NakTx != 1 || g.src.Stats().NakRx != 1 {
				t.Errorf("dropped %d, NAKs sent %d, received %d: want 1, 1, 1", drop.dropped, g.dst.Stats().NakTx, g.src.Stats().NakRx)
			}
			// Every packet after the lost one that reached the receiver
			// before the sender went back was discarded and sent again.
			if q.RetransmittedPackets() == 0 || r.OutOfSequence() != q.RetransmittedPackets()-1 {
				t.Errorf("resent %d, discarded out of sequence %d: want some, one fewer than resent (the lost one)",
					q.RetransmittedPackets(), r.OutOfSequence())
			}
			if r.LostPackets() != 1 || q.Timeouts() != 0 {
				t.Errorf("lost %d, timeouts %d: want 1, 0", r.LostPackets(), q.Timeouts())
			}
			if q.SentBytes() != tc.bytes {
				t.Errorf("sent bytes %d at the end, want %d", q.SentBytes(), tc.bytes)
			}
		})
	}
}

// A lost tail (no packet after it to show a gap) and a lost NAK are
// recovered by the local ACK timeout: the sender goes back to its oldest
// unacknowledged packet when no ACK came for AckTimeout. A resent packet
// lost again is not NAKed a second time (one NAK per sequence error, IBA
// 9.7.5.1.2): the timeout resends it.
func TestGoBackNTimeout(t *testing.T) {
	const bytes = 64 * 4096 // 64 packets, PSN 0..63
	hc := gbnHost()
	hc.AckTimeout = AckTimeoutFor(8) // 1.05 ms
	for _, tc := range []struct {
		name      string
		drop      *dropOnce
		naks      int64
		timeouts  int64
		notBefore engine.Time
	}{
		{"lost tail", &dropOnce{times: map[uint32]int{63: 1}}, 0, 1, hc.AckTimeout},
		{"lost NAK", &dropOnce{times: map[uint32]int{10: 1}, naks: 1}, 1, 1, hc.AckTimeout},
		{"lost twice", &dropOnce{times: map[uint32]int{10: 2}}, 1, 1, hc.AckTimeout},
		{"nothing lost", &dropOnce{}, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGBNPath(t, hc, FlowConfig{Bytes: bytes}, tc.drop)
			g.sim.Run(20 * engine.Millisecond)
			q, r := g.flow.Sender, g.flow.Receiver
			done, at := q.Done()
			if !done || r.RxBytes() != bytes || r.RxPackets() != 64 {
				t.Fatalf("finished %v, received %d bytes in %d packets: want finished, %d in 64", done, r.RxBytes(), r.RxPackets(), bytes)
			}
			if got := g.dst.Stats().NakTx; got != tc.naks {
				t.Errorf("NAKs sent %d, want %d", got, tc.naks)
			}
			if q.Timeouts() != tc.timeouts {
				t.Errorf("timeouts %d, want %d", q.Timeouts(), tc.timeouts)
			}
			if at-g.flow.Sender.cm.connectedAt < tc.notBefore {
				t.Errorf("finished %v after connecting, before the timeout %v could have fired", at-q.cm.connectedAt, tc.notBefore)
			}
			if tc.timeouts == 0 && q.RetransmittedPackets() != 0 {
				t.Errorf("resent %d packets with nothing lost", q.RetransmittedPackets())
			}
		})
	}
}

// Without go-back-N (GoBackN off; DefaultHostConfig has it on) nothing is
// resent: the receiver acknowledges past the gap and the flow finishes
// without the lost packet.
func TestNoLossRecoveryWhenOff(t *testing.T) {
	const bytes = 64 * 4096
	drop := &dropOnce{times: map[uint32]int{10: 1}}
	hc := DefaultHostConfig()
	hc.GoBackN = false
	g := newGBNPath(t, hc, FlowConfig{Bytes: bytes}, drop)
	g.sim.Run(10 * engine.Millisecond)
	q, r := g.flow.Sender, g.flow.Receiver
	if done, _ := q.Done(); !done || r.RxBytes() != bytes-4096 || r.LostPackets() != 1 {
		t.Errorf("finished %v with %d bytes received, %d lost: want finished, %d, 1", done, r.RxBytes(), r.LostPackets(), bytes-4096)
	}
	if q.RetransmittedPackets() != 0 || g.dst.Stats().NakTx != 0 || r.OutOfSequence() != 0 {
		t.Errorf("resent %d, NAKs %d, discarded %d: want none", q.RetransmittedPackets(), g.dst.Stats().NakTx, r.OutOfSequence())
	}
}

// A host configured for go-back-N without a timeout is refused.
func TestGoBackNNeedsATimeout(t *testing.T) {
	hc := gbnHost()
	hc.AckTimeout = 0
	if err := hc.Validate(); err == nil {
		t.Error("go-back-n with no local ack timeout accepted")
	}
	if got, want := AckTimeoutFor(DefaultAckTimeoutExp), engine.Time(536870912); got != want {
		t.Errorf("AckTimeoutFor(17) = %v, want 536.870912ms", got)
	}
	for _, tc := range []struct {
		d    engine.Time
		want uint8
	}{{AckTimeoutFor(14), 14}, {AckTimeoutFor(17), 17}, {AckTimeoutFor(17) - 1, 17}, {AckTimeoutFor(17) + 1, 18}, {0, 1}, {1 << 62, 31}} {
		if got := ackTimeoutExp(tc.d); got != tc.want {
			t.Errorf("ackTimeoutExp(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
}

// dropRandom drops each data packet, ACK and NAK of the flow with
// probability p (its own seeded source: the run stays deterministic).
type dropRandom struct {
	rng     *rand.Rand
	p       float64
	dropped int
}

func (d *dropRandom) Forward(_ *Switch, p *Packet, _, _ *Port) bool {
	if p.Kind != KindRoCE || p.DestQP() == wire.GSIQP || p.Opcode() == wire.OpCNP {
		return true
	}
	if d.rng.Float64() < d.p {
		d.dropped++
		return false
	}
	return true
}

// Whatever is lost (data packets, ACKs, NAKs, resent packets, at random),
// go-back-N delivers every byte once and in sequence and the flow
// finishes: over 40 seeds and three loss rates, for flows of one message
// and of many.
func TestGoBackNDeliversEverythingUnderRandomLoss(t *testing.T) {
	hc := gbnHost()
	hc.AckTimeout = AckTimeoutFor(6) // 262 µs: a few round trips of the path
	for _, loss := range []float64{0.01, 0.05, 0.2} {
		for seed := range uint64(40) {
			for _, fc := range []FlowConfig{{Bytes: 300000}, {Bytes: 123457, MessageBytes: 9000}} {
				drop := &dropRandom{rng: rand.New(rand.NewPCG(seed, 7)), p: loss}
				g := newGBNPath(t, hc, fc, drop)
				g.sim.Run(200 * engine.Millisecond)
				q, r := g.flow.Sender, g.flow.Receiver
				msg := fc.MessageBytes
				if msg == 0 {
					msg = fc.Bytes
				}
				done, _ := q.Done()
				if !done || r.RxBytes() != fc.Bytes || r.RxPackets() != packetsOf(fc.Bytes, msg, 4096) || q.AckedBytes() != fc.Bytes {
					t.Fatalf("loss %v seed %d flow %d/%d: finished %v, received %d bytes in %d packets, acked %d (dropped %d, resent %d, timeouts %d)",
						loss, seed, fc.Bytes, msg, done, r.RxBytes(), r.RxPackets(), q.AckedBytes(), drop.dropped, q.RetransmittedPackets(), q.Timeouts())
				}
			}
		}
	}
}

// Many QPs of one host share its timeout heap: eight flows of different
// sizes and starts from one sender, random losses; every flow gets every
// byte and finishes, the heap empty at the end.
func TestGoBackNManyQPsOneHost(t *testing.T) {
	hc := gbnHost()
	hc.AckTimeout = AckTimeoutFor(6)
	var timeouts int64
	for seed := range uint64(20) {
		drop := &dropRandom{rng: rand.New(rand.NewPCG(seed, 9)), p: 0.05}
		g := newGBNPath(t, hc, FlowConfig{Bytes: 50000}, drop)
		flows := []*Flow{g.flow}
		for i := range 7 {
			f, err := g.net.AddFlow(FlowConfig{Src: g.src, Dst: g.dst, Bytes: int64(20000 * (i + 1)), Start: engine.Time(i) * 30 * engine.Microsecond})
			if err != nil {
				t.Fatal(err)
			}
			flows = append(flows, f)
		}
		g.sim.Run(200 * engine.Millisecond)
		for _, f := range flows {
			q, r := f.Sender, f.Receiver
			if done, _ := q.Done(); !done || r.RxBytes() != q.totalBytes {
				t.Fatalf("seed %d flow %s: finished %v, %d of %d bytes", seed, f.Name, done, r.RxBytes(), q.totalBytes)
			}
			timeouts += q.Timeouts()
		}
		if n := len(g.src.rto.h); n != 0 {
			t.Errorf("seed %d: %d timeouts left in the heap after every flow finished", seed, n)
		}
	}
	if timeouts < 20 {
		t.Errorf("%d timeouts over 20 seeds: the heap was hardly used", timeouts)
	}
}
