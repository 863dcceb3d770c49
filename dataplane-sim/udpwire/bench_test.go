package udpwire

import (
	"testing"

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
