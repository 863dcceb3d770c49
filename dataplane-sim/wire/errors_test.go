package wire

import (
	"encoding/binary"
	"errors"
	"testing"
)

// frFixICMPv6 recomputes the ICMPv6 checksum of an untagged IPv6 frame
// without extension headers, so that a test isolates another error.
func frFixICMPv6(b []byte) {
	ip := b[EthernetLen:]
	n := int(binary.BigEndian.Uint16(ip[4:6]))
	msg := ip[IPv6Len : IPv6Len+n]
	msg[2], msg[3] = 0, 0
	src, dst := [16]byte(ip[8:24]), [16]byte(ip[24:40])
	binary.BigEndian.PutUint16(msg[2:], csumFold(csumAdd(pseudoSum6(&src, &dst, uint32(n), ProtoICMPv6), msg)))
}

// frBuild encodes one frame with enc.
func frBuild(t *testing.T, enc func(e *Encoder, b []byte) (int, error)) []byte {
	t.Helper()
	var e Encoder
	b := make([]byte, 2048)
	n, err := enc(&e, b)
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

// TestTruncated cuts every frame at every byte before the end of its IP
// packet: each cut must fail with ErrTruncated, never panic.
func TestTruncated(t *testing.T) {
	for _, c := range frCases() {
		b := frEncode(t, c)
		var d Decoder
		var f Frame
		if err := d.Decode(b, &f); err != nil {
			t.Fatal(err)
		}
		end := len(b) - len(f.Trailer)
		for cut := 0; cut < end; cut++ {
			err := d.Decode(b[:cut], &f)
			if !errors.Is(err, ErrTruncated) {
				t.Errorf("%s cut at %d of %d: err = %v, want ErrTruncated", c.desc, cut, end, err)
				break
			}
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	lhObjs := func(e *Encoder, b []byte) (int, error) {
		m := frExample()
		m.Objects = frObjects()
		a := frAddr6()
		return e.LongHaulICMPv6(b, &a, &m)
	}
	cnp4 := func(e *Encoder, b []byte) (int, error) {
		a := frAddr4()
		return e.CNP(b, &a, &CNP{DestQP: 5})
	}
	cnp6 := func(e *Encoder, b []byte) (int, error) {
		a := frAddr6()
		return e.CNP(b, &a, &CNP{DestQP: 5})
	}
	ra4 := func(e *Encoder, b []byte) (int, error) {
		a := frAddr4()
		return e.RateAdvice(b, &a, &RateAdvice{RateMbps: 1})
	}
	const ext = EthernetLen + IPv6Len + ICMPv6HdrLen + LongHaulBodyLen // extension header offset
	const udp4 = EthernetLen + IPv4MinLen
	for _, c := range []struct {
		desc   string
		enc    func(e *Encoder, b []byte) (int, error)
		mutate func(b []byte) []byte
		want   []error // every one must match
		not    []error // none may match
		kind   Kind    // still decoded
	}{
		{"ipv4 header checksum", cnp4, func(b []byte) []byte { b[EthernetLen+8]--; return b },
			[]error{ErrChecksum}, []error{ErrICRC}, KindCNP},
		{"udp checksum over ipv6", cnp6, func(b []byte) []byte { b[EthernetLen+IPv6Len+7] ^= 1; return b },
			[]error{ErrChecksum}, []error{ErrICRC}, KindCNP},
		{"zero udp checksum over ipv6", cnp6, func(b []byte) []byte { b[EthernetLen+IPv6Len+6], b[EthernetLen+IPv6Len+7] = 0, 0; return b },
			[]error{ErrChecksum}, []error{ErrICRC}, KindCNP},
		{"icrc over ipv4", cnp4, func(b []byte) []byte { b[len(b)-1] ^= 0x80; return b },
			[]error{ErrICRC}, []error{ErrChecksum}, KindCNP},
		{"icrc and udp checksum over ipv6", cnp6, func(b []byte) []byte { b[len(b)-1] ^= 0x80; return b },
			[]error{ErrICRC, ErrChecksum}, nil, KindCNP},
		{"icmpv6 checksum", lhObjs, func(b []byte) []byte { b[EthernetLen+IPv6Len+2] ^= 1; return b },
			[]error{ErrChecksum}, []error{ErrExtChecksum}, KindLongHaulICMPv6},
		{"extension version", lhObjs, func(b []byte) []byte { b[ext] = 1 << 4; frFixICMPv6(b); return b },
			[]error{ErrExtVersion}, []error{ErrChecksum}, KindLongHaulICMPv6},
		{"extension checksum", lhObjs, func(b []byte) []byte { b[ext+2] ^= 1; frFixICMPv6(b); return b },
			[]error{ErrExtChecksum}, []error{ErrChecksum}, KindLongHaulICMPv6},
		{"object length below 4", lhObjs, func(b []byte) []byte { b[ext+4], b[ext+5] = 0, 2; frFixICMPv6(b); return b },
			[]error{ErrObjectLength}, []error{ErrChecksum}, KindLongHaulICMPv6},
		{"object length past the end", lhObjs, func(b []byte) []byte { b[ext+4], b[ext+5] = 0, 200; frFixICMPv6(b); return b },
			[]error{ErrObjectLength}, []error{ErrChecksum}, KindLongHaulICMPv6},
		{"partial extension header", func(e *Encoder, b []byte) (int, error) {
			m := frExample()
			a := frAddr6()
			return e.LongHaulICMPv6(b, &a, &m)
		}, func(b []byte) []byte {
			// Grow the ICMPv6 message by 2 bytes: 14 octets of body.
			b = append(b[:EthernetLen+IPv6Len+ICMPv6HdrLen+LongHaulBodyLen], 0x20, 0)
			binary.BigEndian.PutUint16(b[EthernetLen+4:], ICMPv6HdrLen+LongHaulBodyLen+2)
			frFixICMPv6(b)
			return b
		}, []error{ErrTruncated}, []error{ErrChecksum}, KindLongHaulICMPv6},
		{"udp length below 8", cnp4, func(b []byte) []byte { b[udp4+4], b[udp4+5] = 0, 7; return b },
			[]error{ErrLength}, nil, KindNone},
		{"udp length past the ip payload", cnp4, func(b []byte) []byte { b[udp4+5] += 4; return b },
			[]error{ErrLength}, nil, KindNone},
		{"cnp reserved field not 16 bytes", func(e *Encoder, b []byte) (int, error) {
			a := frAddr4()
			return e.RoCE(b, &a, &BTH{Opcode: OpCNP, PKey: 0xFFFF, Byte4: BTHBECN}, nil, make([]byte, 12))
		}, func(b []byte) []byte { return b }, []error{ErrLength}, nil, KindCNP},
		{"rate advice version 2", ra4, func(b []byte) []byte {
			b[udp4+UDPLen+BTHLen+7] = 2
			crc := icrc(b[EthernetLen:], IPv4MinLen, len(b)-EthernetLen-ICRCLen)
			putICRC(b[len(b)-ICRCLen:], crc)
			return b
		}, []error{ErrUnsupported}, []error{ErrICRC}, KindRateAdvice},
		{"ip version 5", cnp4, func(b []byte) []byte { b[EthernetLen] = 0x55; return b },
			[]error{ErrUnsupported}, nil, KindNone},
		{"pad count beyond payload", func(e *Encoder, b []byte) (int, error) {
			a := frAddr4()
			return e.RoCE(b, &a, &BTH{Opcode: OpRCAck, PKey: 0xFFFF}, nil, nil)
		}, func(b []byte) []byte {
			b[udp4+UDPLen+1] = 0x30
			crc := icrc(b[EthernetLen:], IPv4MinLen, len(b)-EthernetLen-ICRCLen)
			putICRC(b[len(b)-ICRCLen:], crc)
			return b
		}, []error{ErrLength}, []error{ErrICRC}, KindRoCEData},
	} {
		t.Run(c.desc, func(t *testing.T) {
			b := c.mutate(frBuild(t, c.enc))
			var d Decoder
			var f Frame
			err := d.Decode(b, &f)
			for _, w := range c.want {
				if !errors.Is(err, w) {
					t.Errorf("err = %v, want it to wrap %v", err, w)
				}
			}
			for _, w := range c.not {
				if errors.Is(err, w) {
					t.Errorf("err = %v, must not wrap %v", err, w)
				}
			}
			if c.kind != KindNone {
				frWant(t, "kind", f.Kind, c.kind)
			}
		})
	}
}

// TestBadChecksumStillFills checks that a frame with a bad ICRC and a bad
// extension checksum is fully decoded, with the statuses saying what failed.
func TestBadChecksumStillFills(t *testing.T) {
	b := frBuild(t, func(e *Encoder, b []byte) (int, error) {
		m := frExample()
		m.Objects = frObjects()
		a := frAddr4()
		return e.LongHaulRoCE(b, &a, &CNP{DestQP: 100}, &m)
	})
	ext := EthernetLen + IPv4MinLen + UDPLen + BTHLen + LongHaulBodyLen
	b[ext+2] ^= 0xFF
	var d Decoder
	var f Frame
	err := d.Decode(b, &f)
	if !errors.Is(err, ErrICRC) || !errors.Is(err, ErrExtChecksum) {
		t.Fatalf("err = %v, want ErrICRC and ErrExtChecksum", err)
	}
	frWant(t, "kind", f.Kind, KindLongHaulRoCE)
	frWant(t, "icrc status", f.ICRCStatus, StatusBad)
	frWant(t, "ext status", f.LongHaul.ExtChecksumStatus, StatusBad)
	frWant(t, "objects", len(f.LongHaul.Objects), 3)
	frWant(t, "source qp", f.LongHaul.SourceQP, uint32(100))

	skip := Decoder{SkipICRC: true, SkipChecksums: true}
	if err := skip.Decode(b, &f); err != nil {
		t.Fatalf("Decode without checks: %v", err)
	}
	frWant(t, "icrc status unchecked", f.ICRCStatus, StatusUnchecked)
	frWant(t, "ext status unchecked", f.LongHaul.ExtChecksumStatus, StatusUnchecked)
}

func TestEncodeErrors(t *testing.T) {
	a4, a6 := frAddr4(), frAddr6()
	lh := func(change func(m *LongHaul)) func(e *Encoder, b []byte) (int, error) {
		return func(e *Encoder, b []byte) (int, error) {
			m := frExample()
			change(&m)
			return e.LongHaulRoCE(b, &a4, &CNP{DestQP: 1}, &m)
		}
	}
	for _, c := range []struct {
		desc string
		enc  func(e *Encoder, b []byte) (int, error)
		want error
	}{
		{"rate reduce above 100", lh(func(m *LongHaul) { m.Parameter = 101 }), ErrInvalid},
		{"resume above 100", lh(func(m *LongHaul) { m.Action, m.Parameter = ActionResume, 101 }), ErrInvalid},
		{"notify with a parameter", lh(func(m *LongHaul) { m.Action, m.Parameter = ActionNotify, 1 }), ErrInvalid},
		{"action above 3", lh(func(m *LongHaul) { m.Action = 4 }), ErrInvalid},
		{"reserved action bits", lh(func(m *LongHaul) { m.ActionReserved = 1 }), ErrInvalid},
		{"metric value of 25 bits", lh(func(m *LongHaul) { m.MetricValue = 1 << 24 }), ErrInvalid},
		{"ecn marking rate above 100 percent", lh(func(m *LongHaul) { m.MetricType, m.MetricValue = MetricECNMarkingRate, 101 }), ErrInvalid},
		{"device id not utf-8", lh(func(m *LongHaul) { m.Objects = []ExtObject{{CType: CTypeDeviceID, Data: []byte{0xFF}}} }), ErrInvalid},
		{"timestamp of 7 octets", lh(func(m *LongHaul) { m.Objects = []ExtObject{{CType: CTypeTimestamp, Data: make([]byte, 7)}} }), ErrInvalid},
		{"object too long", lh(func(m *LongHaul) { m.Objects = []ExtObject{{CType: CTypePathID, Data: make([]byte, 65532)}} }), ErrInvalid},
		{"pause of any length is fine but destqp of 25 bits", func(e *Encoder, b []byte) (int, error) {
			m := LongHaul{Action: ActionPause, Parameter: 65535}
			return e.LongHaulRoCE(b, &a4, &CNP{DestQP: 1 << 24}, &m)
		}, ErrInvalid},
		{"icmpv6 over ipv4", func(e *Encoder, b []byte) (int, error) {
			m := frExample()
			return e.LongHaulICMPv6(b, &a4, &m)
		}, ErrInvalid},
		{"fast cnp over ipv4", func(e *Encoder, b []byte) (int, error) {
			return e.FastCNP(b, &a4, &CNP{}, &FastCNPOption{})
		}, ErrInvalid},
		{"mixed address families", func(e *Encoder, b []byte) (int, error) {
			a := a4
			a.DstIP = a6.DstIP
			return e.CNP(b, &a, &CNP{})
		}, ErrInvalid},
		{"no addresses", func(e *Encoder, b []byte) (int, error) {
			return e.CNP(b, &Addressing{}, &CNP{})
		}, ErrInvalid},
		{"flow label of 21 bits", func(e *Encoder, b []byte) (int, error) {
			a := a6
			a.FlowLabel = 1 << 20
			return e.CNP(b, &a, &CNP{})
		}, ErrInvalid},
		{"payload on an ack", func(e *Encoder, b []byte) (int, error) {
			return e.RoCE(b, &a4, &BTH{Opcode: OpRCAck}, nil, []byte{1})
		}, ErrInvalid},
		{"short buffer", func(e *Encoder, b []byte) (int, error) {
			return e.CNP(b[:73], &a4, &CNP{})
		}, ErrShortBuffer},
		{"short buffer below the ethernet minimum", func(e *Encoder, b []byte) (int, error) {
			return e.FCN(b[:59], &a4, &FCNMessage{})
		}, ErrShortBuffer},
	} {
		t.Run(c.desc, func(t *testing.T) {
			var e Encoder
			b := make([]byte, 1<<17)
			if _, err := c.enc(&e, b); !errors.Is(err, c.want) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
		})
	}
}

// TestDecodeLongHaulBody checks body-level errors.
func TestDecodeLongHaulBody(t *testing.T) {
	var m LongHaul
	if err := DecodeLongHaul(make([]byte, 11), &m, true); !errors.Is(err, ErrTruncated) {
		t.Errorf("11 bytes: err = %v, want ErrTruncated", err)
	}
	if err := DecodeLongHaul(make([]byte, 14), &m, true); !errors.Is(err, ErrTruncated) {
		t.Errorf("14 bytes: err = %v, want ErrTruncated", err)
	}
	b := make([]byte, 16)
	b[12] = 0x20
	b[14], b[15] = 0xDF, 0xFF // checksum of 0x2000
	if err := DecodeLongHaul(b, &m, true); err != nil || !m.ExtPresent || len(m.Objects) != 0 {
		t.Errorf("extension header without objects: err %v, present %v, %d objects", err, m.ExtPresent, len(m.Objects))
	}
}

// TestICRCErrors: ICRC refuses an IP packet whose headers do not leave room
// for UDP, BTH and ICRC, or whose IPv4 IHL is below 5 (which put the UDP
// header inside the IPv4 header and made the CRC's header spans run
// backwards), with an error, never a panic.
func TestICRCErrors(t *testing.T) {
	ipv4 := func(ihl uint8, n int) []byte {
		b := make([]byte, n)
		b[0], b[9] = 0x40|ihl, ProtoUDP
		return b
	}
	for _, c := range []struct {
		desc string
		pkt  []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"ipv4 ihl 0", ipv4(0, 64), ErrLength},
		{"ipv4 ihl 1", ipv4(1, 64), ErrLength},
		{"ipv4 ihl 4", ipv4(4, 64), ErrLength},
		{"ipv4 ihl 15, 40 bytes", ipv4(15, 40), ErrTruncated},
		{"ipv4 not udp", []byte{0x45, 0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, ErrUnsupported},
		{"ip version 5", []byte{0x55}, ErrUnsupported},
	} {
		t.Run(c.desc, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("ICRC panicked: %v", r)
					}
				}()
				_, err = ICRC(c.pkt)
			}()
			if !errors.Is(err, c.want) {
				t.Errorf("ICRC error = %v, want %v", err, c.want)
			}
		})
	}
}

// frWithExtHeaders returns the untagged IPv6 RoCEv2 frame b with an
// 8-octet extension header (a PadN inside) of each of the given types
// between the IPv6 header and UDP, in that order, and the payload length,
// ICRC and UDP checksum computed again.
func frWithExtHeaders(b []byte, types ...uint8) []byte {
	out := append([]byte(nil), b[:EthernetLen+IPv6Len]...)
	nh := out[EthernetLen+6]
	out[EthernetLen+6] = types[0]
	for i := range types {
		next := nh
		if i+1 < len(types) {
			next = types[i+1]
		}
		out = append(out, next, 0, optPadN, 4, 0, 0, 0, 0)
	}
	out = append(out, b[EthernetLen+IPv6Len:]...)
	pkt := out[EthernetLen:]
	binary.BigEndian.PutUint16(pkt[4:], uint16(len(pkt)-IPv6Len))
	udp, end := IPv6Len+8*len(types), len(pkt)-ICRCLen
	putICRC(pkt[end:], icrc(pkt, udp, end))
	pkt[udp+6], pkt[udp+7] = 0, 0
	binary.BigEndian.PutUint16(pkt[udp+6:], csumFold(csumAdd(pseudoSum(pkt, len(pkt)-udp, ProtoUDP), pkt[udp:])))
	return out
}

// TestHopByHopPlace: RFC 8200 §4.1 restricts the Hop-by-Hop Options header
// to "appear immediately after an IPv6 header only"; one further on is
// refused (§4: a Next Header of zero elsewhere is a Parameter Problem),
// where it was read as any other extension header.
func TestHopByHopPlace(t *testing.T) {
	cnp := frBuild(t, func(e *Encoder, b []byte) (int, error) {
		a := frAddr6()
		return e.CNP(b, &a, &CNP{DestQP: 5})
	})
	for _, c := range []struct {
		desc  string
		types []uint8
		want  error // nil: decodes as a CNP
	}{
		{"hop-by-hop first", []uint8{ProtoHopByHop, ProtoDestOpts}, nil},
		{"hop-by-hop after destination options", []uint8{ProtoDestOpts, ProtoHopByHop}, ErrInvalid},
		{"hop-by-hop twice", []uint8{ProtoHopByHop, ProtoHopByHop}, ErrInvalid},
	} {
		t.Run(c.desc, func(t *testing.T) {
			b := frWithExtHeaders(cnp, c.types...)
			var d Decoder
			var f Frame
			err := d.Decode(b, &f)
			if c.want == nil {
				if err != nil || f.Kind != KindCNP || f.IPv6.HopByHop == nil {
					t.Errorf("Decode: %v, kind %v, hop-by-hop %x; want a CNP with its hop-by-hop header", err, f.Kind, f.IPv6.HopByHop)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Errorf("Decode error = %v, want %v", err, c.want)
			}
		})
	}
}
