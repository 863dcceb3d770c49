package wire

import (
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// benchFrame is the §7 Long-haul CNP in RoCEv2 format over IPv6.
func benchFrame(b *testing.B) []byte {
	var e Encoder
	a := frAddr6()
	m := frExample()
	buf := make([]byte, 256)
	n, err := e.LongHaulRoCE(buf, &a, &CNP{DestQP: 100}, &m)
	if err != nil {
		b.Fatal(err)
	}
	return buf[:n]
}

// BenchmarkDecodeLongHaulRoCEv6 decodes every layer and verifies the UDP
// checksum and the ICRC.
func BenchmarkDecodeLongHaulRoCEv6(b *testing.B) {
	frame := benchFrame(b)
	var d Decoder
	var f Frame
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if err := d.Decode(frame, &f); err != nil {
			b.Fatal(err)
		}
	}
	if f.Kind != KindLongHaulRoCE || f.ICRCStatus != StatusGood || f.UDP.ChecksumStatus != StatusGood {
		b.Fatalf("kind %v icrc %v udp %v", f.Kind, f.ICRCStatus, f.UDP.ChecksumStatus)
	}
}

// BenchmarkEncodeLongHaulRoCEv6 builds the whole frame: headers, body, ICRC,
// UDP checksum.
func BenchmarkEncodeLongHaulRoCEv6(b *testing.B) {
	var e Encoder
	a := frAddr6()
	m := frExample()
	buf := make([]byte, 256)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.LongHaulRoCE(buf, &a, &CNP{DestQP: 100}, &m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGopacketEthIPv6UDP decodes only Ethernet, IPv6 and UDP of the
// same frame with gopacket's DecodingLayerParser, verifying nothing: the
// comparison point for BenchmarkDecodeLongHaulRoCEv6.
func BenchmarkGopacketEthIPv6UDP(b *testing.B) {
	frame := benchFrame(b)
	var eth layers.Ethernet
	var ip6 layers.IPv6
	var udp layers.UDP
	var payload gopacket.Payload
	p := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &ip6, &udp, &payload)
	decoded := make([]gopacket.LayerType, 0, 4)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if err := p.DecodeLayers(frame, &decoded); err != nil {
			b.Fatal(err)
		}
	}
	if len(decoded) != 4 || udp.DstPort != RoCEv2Port {
		b.Fatalf("decoded %v", decoded)
	}
}
