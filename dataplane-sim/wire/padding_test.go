package wire

import (
	"bytes"
	"net/netip"
	"testing"
)

// TestRFC4884PaddingVector checks §6.1.1 against bytes written by hand, not
// by this package: a Long-haul CNP (ICMPv6 format, type 200, Class-Num
// 247) whose first extension object is a Device Identifier of 3 bytes,
// Length 7, zero-padded to 8 ("each Extension Object MUST be zero-padded
// to a 4-octet boundary. The Length field indicates the actual (unpadded)
// length"), followed by a Timestamp object that a receiver finds only by
// advancing by the padded length. The extension and ICMPv6 checksums were
// computed separately (RFC 1071 over the bytes below, the ICMPv6 one with
// the pseudo-header of 2001:db8:1::1 -> 2001:db8::1).
func TestRFC4884PaddingVector(t *testing.T) {
	want := []byte{
		0xc8, 0x00, 0x2a, 0x53, // type 200, code 0, checksum
		0xb4, 0x80, 0x00, 0x1e, // level 180, Rate Reduce, parameter 30
		0x00, 0x00, 0x00, 0x64, // source QP 100
		0x01, 0x01, 0xfb, 0xd0, // metric type 1, 130000 KB
		0x20, 0x00, 0x6d, 0x90, // extension header: version 2, checksum
		0x00, 0x07, 0xf7, 0x02, // object: length 7 (unpadded), class 247, device id
		0x6e, 0x31, 0x78, 0x00, // "n1x" and one zero byte of padding
		0x00, 0x0c, 0xf7, 0x01, // object: length 12, class 247, timestamp
		0x01, 0x23, 0x45, 0x67,
		0x89, 0xab, 0xcd, 0xef,
	}
	a := Addressing{SrcIP: netip.MustParseAddr("2001:db8:1::1"), DstIP: netip.MustParseAddr("2001:db8::1")}
	m := LongHaul{CongLevel: 180, Action: ActionRateReduce, Parameter: 30, SourceQP: 100,
		MetricType: MetricQueueDepth, MetricValue: 130000, Objects: []ExtObject{
			{CType: CTypeDeviceID, Data: []byte("n1x")},
			{CType: CTypeTimestamp, Data: []byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}},
		}}
	buf := make([]byte, 256)
	var e Encoder
	n, err := e.LongHaulICMPv6(buf, &a, &m)
	if err != nil {
		t.Fatal(err)
	}
	frame := buf[:n]
	if got := frame[EthernetLen+IPv6Len:]; !bytes.Equal(got, want) {
		t.Errorf("encoded message\n got % x\nwant % x", got, want)
	}

	// Decode the hand-written bytes (in the encoder's headers).
	in := append(append([]byte{}, frame[:EthernetLen+IPv6Len]...), want...)
	var d Decoder
	var f Frame
	if err := d.Decode(in, &f); err != nil {
		t.Fatal(err)
	}
	if f.Kind != KindLongHaulICMPv6 || len(f.LongHaul.Objects) != 2 {
		t.Fatalf("decoded %v with %d objects, want a long-haul icmpv6 with 2", f.Kind, len(f.LongHaul.Objects))
	}
	o1, o2 := f.LongHaul.Objects[0], f.LongHaul.Objects[1]
	if o1.CType != CTypeDeviceID || string(o1.Data) != "n1x" {
		t.Errorf("first object %v %q, want device id \"n1x\" (the padding is not data)", o1.CType, o1.Data)
	}
	if ts, ok := o2.Timestamp(); o2.CType != CTypeTimestamp || !ok || ts != 0x0123456789abcdef {
		t.Errorf("second object %v %x: want the timestamp, found at the padded offset", o2.CType, o2.Data)
	}
}
