package udpwire

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// BenchmarkDataFrame: what a wire does per data frame on each side,
// without the socket: encode the frame and the datagram (sender), decode
// the datagram, verify the frame (checksums, ICRC) and make the packet
// (receiver). frames/s bounds the packet rate a wire carries per core.
func BenchmarkDataFrame(b *testing.B) {
	for _, payload := range []int32{1024, 4096} {
		b.Run(map[int32]string{1024: "1KiB", 4096: "4KiB"}[payload], func(b *testing.B) {
			sim := engine.New()
			h := buildHalves(b, sim, "")
			c := newCodec(h.net)
			var buf []byte
			var d Datagram
			var f wire.Frame
			var r rxFrame
			b.ReportAllocs()
			b.SetBytes(int64(payload))
			for i := 0; b.Loop(); i++ {
				p := h.net.NewPacket()
				p.Kind, p.SizeBytes, p.PayloadBytes, p.Src, p.Dst, p.Flow, p.ECN = netsim.KindRoCE, payload+62, payload, 2, 4, 0, netsim.ECNECT0
				p.SetBTH(&wire.BTH{Opcode: wire.OpRCWriteMiddle, PKey: 0xFFFF, DestQP: 200, PSN: uint32(i) & 0xFFFFFF})
				m := Meta{SentAt: engine.Time(i), Seq: uint32(i)}
				buf = buf[:0]
				buf = append(buf, make([]byte, DataOverhead)...)
				var err error
				if buf, err = c.appendFrame(buf, p, &m); err != nil {
					b.Fatal(err)
				}
				AppendData(buf[:0], 1, &m, nil)
				h.net.FreePacket(p)
				if err := Decode(buf, &d); err != nil {
					b.Fatal(err)
				}
				if err := c.check(&d, &f, &r); err != nil {
					b.Fatal(err)
				}
				h.net.FreePacket(c.packet(&r, 0, 1))
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
		})
	}
}

// BenchmarkLoopback: frames through a real wire: encoded by Send, written
// by the sending socket in batches, read by the other wire's socket,
// checked and delivered into its engine (not running: Do applies at once).
// frames/s is what one wire carries on loopback; lost/op the fraction
// lost to a full queue or socket buffer when the sender outruns it.
func BenchmarkLoopback(b *testing.B) {
	s1, s2 := engine.New(), engine.New()
	h1, h2 := buildHalves(b, s1, "s1"), buildHalves(b, s2, "s2")
	a1, a2 := freePort(b), freePort(b)
	w1, err := New(h1.net, h1.wan[0], Config{Name: "wan", Listen: a1, Peer: a2.String(), VNI: 1, Speed: 1, Queue: 1 << 16})
	if err != nil {
		b.Fatal(err)
	}
	w2, err := New(h2.net, h2.wan[1], Config{Name: "wan", Listen: a2, Peer: a1.String(), VNI: 1, Speed: 1})
	if err != nil {
		b.Fatal(err)
	}
	s1.SetEpoch(time.Now())
	s2.SetEpoch(time.Now())
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, w := range []*Wire{w1, w2} {
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Run(ctx) }()
	}
	defer func() { cancel(); wg.Wait() }()
	up := time.Now().Add(10 * time.Second)
	for !w1.Up() || !w2.Up() {
		if time.Now().After(up) {
			b.Fatalf("no handshake within 10s: %+v / %+v", w1.Stats(), w2.Stats())
		}
		time.Sleep(time.Millisecond) // polling for the handshake
	}
	out := h1.wan[0].Out()
	b.ReportAllocs()
	var sent int
	for i := 0; b.Loop(); i++ {
		p := h1.net.NewPacket()
		p.Kind, p.SizeBytes, p.PayloadBytes, p.Src, p.Dst, p.Flow, p.ECN = netsim.KindRoCE, 1024+62, 1024, 2, 4, 0, netsim.ECNECT0
		p.SetBTH(&wire.BTH{Opcode: wire.OpRCWriteMiddle, PKey: 0xFFFF, DestQP: 200, PSN: uint32(i) & 0xFFFFFF})
		w1.Send(out, p, engine.Time(i))
		sent++
	}
	elapsed := b.Elapsed()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st1, st2 := w1.Stats(), w2.Stats()
		if int(st2.RxFrames+st2.RxLost+st1.TxDropped) >= sent || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond) // polling for the tail of the run
	}
	st2 := w2.Stats()
	b.ReportMetric(float64(st2.RxFrames)/elapsed.Seconds(), "frames/s")
	b.ReportMetric(float64(sent-int(st2.RxFrames))/float64(sent), "lost/op")
}
