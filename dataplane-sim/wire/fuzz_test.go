package wire

import (
	"bytes"
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
