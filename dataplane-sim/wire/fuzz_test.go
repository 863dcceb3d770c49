package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"testing"
	"time"
)

// frSeeds returns every sample frame and, when shared/ is there, the
// third-party vectors.
func frSeeds(f *testing.F) [][]byte {
	var seeds [][]byte
	for _, c := range frCases() {
		seeds = append(seeds, frEncode(f, c))
	}
	if sharedDir(f) != "" || os.Getenv("LHCNP_ORACLES") == "required" {
		for _, v := range loadVectors(f) {
			seeds = append(seeds, v.frame)
		}
	}
	return seeds
}

// frReencode encodes a decoded frame again from its fields.
func frReencode(f *Frame, b []byte) (int, error) {
	var e Encoder
	a := f.Addressing()
	c := CNP{DestQP: f.BTH.DestQP, PKey: f.BTH.PKey}
	switch f.Kind {
	case KindLongHaulICMPv6:
		return e.LongHaulICMPv6(b, &a, &f.LongHaul)
	case KindLongHaulRoCE:
		return e.LongHaulRoCE(b, &a, &c, &f.LongHaul)
	case KindCNP:
		return e.CNP(b, &a, &c)
	case KindFastCNP:
		return e.FastCNP(b, &a, &c, &f.FastCNP)
	case KindRateAdvice:
		return e.RateAdvice(b, &a, &f.RateAdvice)
	case KindRoCEData:
		return e.RoCE(b, &a, &f.BTH, &f.Transport, f.Payload)
	case KindCM:
		return e.CM(b, &a, f.BTH.PSN, &f.CM)
	case KindFCN:
		return e.FCN(b, &a, &f.FCN)
	}
	return 0, ErrUnsupported
}

// frMessage returns the part of a frame its encoder takes, for comparison.
func frMessage(f *Frame) any {
	switch f.Kind {
	case KindLongHaulICMPv6, KindLongHaulRoCE:
		return f.LongHaul
	case KindCNP:
		return [2]uint32{f.BTH.DestQP, uint32(f.BTH.PKey)}
	case KindFastCNP:
		return f.FastCNP
	case KindRateAdvice:
		return f.RateAdvice
	case KindRoCEData:
		return struct {
			B BTH
			T TransportHeaders
			P []byte
		}{f.BTH, f.Transport, f.Payload}
	case KindCM:
		return f.CM
	case KindFCN:
		return f.FCN
	}
	return nil
}

// FuzzDecodeFrame: Decode never panics, its fast path (decodeRoCEv6) agrees
// with the general decoder, and a frame that decodes cleanly encodes again
// into one that decodes to the same message and addressing.
func FuzzDecodeFrame(f *testing.F) {
	for _, s := range frSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Decoder
		// The fast path agrees with the general decoder, also on frames
		// whose checks would fail.
		decodeBoth(t, &d, nil, b)
		decodeBoth(t, &Decoder{SkipICRC: true, SkipChecksums: true}, nil, b)
		var fr Frame
		if err := d.Decode(b, &fr); err != nil {
			return
		}
		// Values the encoders canonicalise or refuse.
		if fr.Kind == KindLongHaulICMPv6 || fr.Kind == KindLongHaulRoCE {
			for _, o := range fr.LongHaul.Objects {
				if o.ClassNum == 0 {
					return
				}
			}
		}
		if fr.Kind == KindCNP && fr.BTH.PKey == 0 {
			fr.BTH.PKey = 0xFFFF
		}
		if fr.Kind == KindFCN {
			fr.FCN.Reserved = 0 // FCNMessage.Encode writes the reserved bits as zero
		}
		out := make([]byte, 2*len(b)+MinFrameLen)
		n, err := frReencode(&fr, out)
		if errors.Is(err, ErrUnsupported) || errors.Is(err, ErrInvalid) {
			return
		}
		if err != nil {
			t.Fatalf("re-encode of a clean %v frame: %v", fr.Kind, err)
		}
		var fr2 Frame
		if err := d.Decode(out[:n], &fr2); err != nil {
			t.Fatalf("decode of the re-encoded %v frame: %v\nin  %x\nout %x", fr.Kind, err, b, out[:n])
		}
		if fr2.Kind != fr.Kind && !(fr.Kind == KindCNP && fr.HasFastCNP) {
			t.Fatalf("kind %v became %v", fr.Kind, fr2.Kind)
		}
		a, a2 := fr.Addressing(), fr2.Addressing()
		if a.TTL == 0 {
			a.TTL = DefaultTTL
		}
		if a.Tunnel.HopLimit == 0 && a.Tunnel.Present {
			a.Tunnel.HopLimit = DefaultTTL
		}
		if fr.IPVersion == 6 && fr.UDP.Length != 0 {
			a.UDPChecksum = true
		}
		frFuzzDiff(t, "addressing", a, a2)
		frFuzzDiff(t, "message", frMessage(&fr), frMessage(&fr2))
	})
}

func frFuzzDiff(t *testing.T, what string, want, got any) {
	t.Helper()
	frDiff(t, what, want, got)
	if t.Failed() {
		t.FailNow()
	}
}

// FuzzDecodeLongHaul: the body decoder never panics; a valid body survives
// encode and decode.
func FuzzDecodeLongHaul(f *testing.F) {
	m := frExample()
	b := make([]byte, 256)
	n, _ := m.Encode(b, 247)
	f.Add(append([]byte(nil), b[:n]...))
	m.Objects = frObjects()
	n, _ = m.Encode(b, 247)
	f.Add(append([]byte(nil), b[:n]...))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m LongHaul
		if err := DecodeLongHaul(b, &m, true); err != nil {
			return
		}
		for _, o := range m.Objects {
			if o.ClassNum == 0 {
				return
			}
		}
		out := make([]byte, len(b)+8)
		n, err := m.Encode(out, 247)
		if errors.Is(err, ErrInvalid) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		var m2 LongHaul
		if err := DecodeLongHaul(out[:n], &m2, true); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		frFuzzDiff(t, "long-haul", m, m2)
	})
}

// FuzzDecodeExtension: the RFC 4884 walker never panics; what it reads
// encodes to the same length and decodes to the same objects.
func FuzzDecodeExtension(f *testing.F) {
	b := make([]byte, 256)
	n, _ := EncodeExtension(b, frObjects(), 247)
	f.Add(append([]byte(nil), b[:n]...))
	f.Add([]byte{0x20, 0, 0xDF, 0xFF})
	f.Fuzz(func(t *testing.T, b []byte) {
		objs, _, _, err := DecodeExtension(b, nil, true)
		if err != nil || len(objs) == 0 {
			return
		}
		for _, o := range objs {
			if o.ClassNum == 0 {
				return
			}
		}
		out := make([]byte, len(b))
		n, err := EncodeExtension(out, objs, 247)
		if err != nil {
			t.Fatal(err)
		}
		if n != len(b) {
			t.Fatalf("re-encoded %d bytes, read %d", n, len(b))
		}
		objs2, _, st, err := DecodeExtension(out[:n], nil, true)
		if err != nil || st != StatusGood {
			t.Fatalf("re-decode: %v, %v", st, err)
		}
		frFuzzDiff(t, "objects", objs, objs2)
	})
}

// FuzzDecodeBTH: every 12 bytes are a BTH that encodes back identically.
func FuzzDecodeBTH(f *testing.F) {
	f.Add([]byte{0x81, 0, 0xFF, 0xFF, 0x60, 0, 0, 0x64, 0, 0, 0, 0})
	f.Add([]byte{0x24, 0x60, 0xFF, 0xFF, 0, 0, 0, 0xd3, 0, 0xcf, 0x17, 0x10})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeBTH(b)
		if err != nil {
			if len(b) >= BTHLen {
				t.Fatal(err)
			}
			return
		}
		out := make([]byte, BTHLen)
		if _, err := h.Encode(out); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, b[:BTHLen]) {
			t.Fatalf("encode(decode(%x)) = %x", b[:BTHLen], out)
		}
	})
}

// FuzzDecodeRateAdvice: the Rate Advice decoder never panics and round-trips.
func FuzzDecodeRateAdvice(f *testing.F) {
	f.Add([]byte{0, 0, 0x61, 0xA8, 0, 0, 0, 1, 0, 0, 0, 0x77, 0, 0, 0, 0x99})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRateAdvice(b)
		if err != nil {
			return
		}
		out := make([]byte, RateAdviceLen)
		if _, err := r.Encode(out); err != nil || !bytes.Equal(out, b) {
			t.Fatalf("encode(decode(%x)) = %x, %v", b, out, err)
		}
	})
}

// FuzzPcapReader: the reader never panics on any file.
func FuzzPcapReader(f *testing.F) {
	var buf bytes.Buffer
	w, _ := NewPcapWriter(&buf, true)
	_ = w.WritePacket(time.Unix(1, 2), []byte{1, 2, 3})
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := NewPcapReader(bytes.NewReader(b))
		if err != nil {
			return
		}
		for i := 0; i < 100; i++ {
			if _, _, _, err := r.Next(); err != nil {
				if err != io.EOF && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrLength) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
		}
	})
}

// FuzzICRC: ICRC never panics on any IP packet, and on the IP packet of a
// frame whose ICRC the decoder verified (the UDP datagram ending the
// packet) it gives that ICRC.
func FuzzICRC(f *testing.F) {
	for _, s := range frSeeds(f) {
		var d Decoder
		var fr Frame
		if d.Decode(s, &fr) != nil || fr.ICRCStatus != StatusGood || fr.Tunneled {
			continue
		}
		off := EthernetLen
		if fr.Eth.VLAN.Present {
			off += VLANTagLen
		}
		f.Add(append([]byte(nil), s[off:len(s)-len(fr.Trailer)]...))
	}
	f.Add([]byte{0x40, 0, 0, 0, 0, 0, 0, 0, 0, ProtoUDP, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, pkt []byte) {
		crc, err := ICRC(pkt)
		if len(pkt) == 0 {
			return
		}
		b := make([]byte, EthernetLen, EthernetLen+len(pkt))
		binary.BigEndian.PutUint16(b[12:], EtherTypeIPv4)
		if pkt[0]>>4 == 6 {
			binary.BigEndian.PutUint16(b[12:], EtherTypeIPv6)
		}
		b = append(b, pkt...)
		var d Decoder
		var fr Frame
		if d.Decode(b, &fr) != nil || fr.ICRCStatus != StatusGood || fr.Tunneled || len(fr.Trailer) != 0 {
			return
		}
		hlen := fr.IPv6.HeaderLen
		if fr.IPVersion == 4 {
			hlen = fr.IPv4.HeaderLen()
		}
		if hlen+int(fr.UDP.Length) != len(pkt) {
			return
		}
		if err != nil || crc != fr.ICRC {
			t.Fatalf("ICRC(%x) = %#08x, %v; the decoder verified %#08x", pkt, crc, err, fr.ICRC)
		}
	})
}

// FuzzLongHaulRoundTrip: every Long-haul CNP the encoders accept, in the
// ICMPv6 format and the RoCEv2 format over IPv4 and IPv6, decodes cleanly
// to the same message (decode(encode(x)) == x, a zero Class-Num read as
// the Long-haul class), and the decoded message encodes to the same bytes.
func FuzzLongHaulRoundTrip(f *testing.F) {
	m := frExample()
	f.Add(m.CongLevel, uint8(m.Action), m.Parameter, m.SourceQP, uint8(m.MetricType), m.MetricValue, uint8(0), uint8(0), []byte(nil))
	f.Add(uint8(20), uint8(ActionResume), uint16(0), uint32(0xFFFFFF), uint8(MetricECNMarkingRate), uint32(100), uint8(254),
		uint8(CTypeDeviceID), []byte("N1-é"))
	f.Add(uint8(255), uint8(ActionPause), uint16(65535), uint32(1), uint8(MetricRTT), uint32(MaxMetricValue), uint8(0),
		uint8(CTypeTimestamp), []byte{0xE9, 0x5B, 0x3C, 0x00, 0x80, 0, 0, 0})
	f.Fuzz(func(t *testing.T, level, action uint8, param uint16, srcQP uint32, metricType uint8, metricValue uint32,
		code, ctype uint8, data []byte) {
		m := LongHaul{CongLevel: level, Action: Action(action & 3), Parameter: param, SourceQP: srcQP,
			MetricType: MetricType(metricType), MetricValue: metricValue, ICMPCode: code}
		if ctype != 0 || len(data) > 0 {
			m.Objects = []ExtObject{{CType: CType(ctype), Data: data}}
		}
		if m.Validate(DefaultCodePoints().LongHaulClassNum) != nil {
			return
		}
		want := m
		if len(m.Objects) > 0 {
			want.Objects = []ExtObject{{ClassNum: DefaultCodePoints().LongHaulClassNum, CType: CType(ctype), Data: data}}
			want.ExtPresent, want.ExtChecksumStatus = true, StatusGood
		}
		var e Encoder
		for _, c := range []struct {
			desc string
			a    Addressing
			kind Kind
		}{{"icmpv6", frAddr6(), KindLongHaulICMPv6}, {"rocev2 ipv4", frAddr4(), KindLongHaulRoCE}, {"rocev2 ipv6", frAddr6(), KindLongHaulRoCE}} {
			b := make([]byte, 256+len(data))
			enc := func(b []byte, m *LongHaul) (int, error) {
				if c.kind == KindLongHaulICMPv6 {
					return e.LongHaulICMPv6(b, &c.a, m)
				}
				return e.LongHaulRoCE(b, &c.a, &CNP{DestQP: srcQP & 0xFFFFFF}, m)
			}
			n, err := enc(b, &m)
			if err != nil {
				t.Fatalf("%s: encode of a valid message: %v", c.desc, err)
			}
			var d Decoder
			var fr Frame
			if err := d.Decode(b[:n], &fr); err != nil {
				t.Fatalf("%s: decode: %v\n%x", c.desc, err, b[:n])
			}
			w := want
			if c.kind == KindLongHaulRoCE {
				w.ICMPCode = 0
			}
			w.ExtChecksum = fr.LongHaul.ExtChecksum
			frWant(t, c.desc+" kind", fr.Kind, c.kind)
			frFuzzDiff(t, c.desc+" message", w, fr.LongHaul)
			b2 := make([]byte, len(b))
			n2, err := enc(b2, &fr.LongHaul)
			if err != nil || !bytes.Equal(b[:n], b2[:n2]) {
				t.Fatalf("%s: re-encode of the decoded message: %v\n got %x\nwant %x", c.desc, err, b2[:n2], b[:n])
			}
		}
	})
}
