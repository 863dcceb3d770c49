package wire

import (
	"encoding/binary"
	"math/bits"
	"net/netip"
)

// decodeRoCEv6 is Decode for the frames a Long-haul endpoint sees most, in
// one straight pass: Ethernet with at most one 802.1Q tag, IPv6 with no
// extension header, UDP to port 4791, and a BTH with opcode 0x81 followed
// by a Long-haul CNP body without extension (E=1) or a standard CNP's 16
// reserved bytes (E=0); every check passing. Decode calls it before
// resetting f.
//
// It checks the shape of the frame before it writes f, then writes every
// field of every layer over what an earlier frame of the same kind left
// (one of another kind is left to Decode), then verifies the UDP checksum
// and the ICRC. It returns false for anything else: a frame of another
// shape, a failed check, a Decoder option it does not handle. It may have
// written f by then, but only under the Kind and IPVersion it set, so
// f.reset clears it all; Decode then runs the general decoder, which fills
// f and reports what is wrong. When it returns true, f is what the general
// decoder gives: TestFastPathAgrees and FuzzDecodeFrame check that.
//
// Why it is written as it is (docs/wire.md, Performance): it runs a third
// of the instructions of the general decoder; the headers are read through
// a fixed-size array (no bounds check per field); no composite literal is
// assigned (the compiler builds one on the stack and copies it, and the
// copy's 16-byte loads wait on failed store forwarding from its narrow
// stores); no field is stored twice (f.reset, then the decoder); the calls
// come last, so that little is live across them and spilled to the stack.
func (d *Decoder) decodeRoCEv6(b []byte, f *Frame) bool {
	// The Long-haul CNP is the shorter: IPv6, UDP, BTH, 12-octet body, ICRC.
	const lhLen = IPv6Len + UDPLen + BTHLen + LongHaulBodyLen + ICRCLen
	// A zero RateAdviceOpcode means the default, 0xC0: only a configured
	// 0x81 makes an opcode-0x81 packet Rate Advice.
	if len(b) < EthernetLen+lhLen || d.Legacy || d.CodePoints.RateAdviceOpcode == OpCNP {
		return false
	}
	n, et := EthernetLen, binary.BigEndian.Uint16(b[12:14])
	if et == EtherTypeVLAN {
		if len(b) < EthernetLen+VLANTagLen+lhLen {
			return false
		}
		n, et = EthernetLen+VLANTagLen, binary.BigEndian.Uint16(b[16:18])
	}
	ip := b[n:]
	// IPv6 at 0, UDP at 40, BTH at 48, the body at 60.
	hdr := (*[lhLen]byte)(ip)
	plen := int(binary.BigEndian.Uint16(hdr[4:6]))
	ulen := int(binary.BigEndian.Uint16(hdr[44:46]))
	e := hdr[52]&BTHE != 0
	wantLen := UDPLen + BTHLen + CNPReservedLen + ICRCLen
	if e {
		wantLen = UDPLen + BTHLen + LongHaulBodyLen + ICRCLen
	}
	if et != EtherTypeIPv6 || hdr[0]>>4 != 6 || hdr[6] != ProtoUDP || IPv6Len+plen > len(ip) ||
		binary.BigEndian.Uint16(hdr[42:44]) != RoCEv2Port || ulen != wantLen || ulen > plen ||
		hdr[46]|hdr[47] == 0 || hdr[48] != uint8(OpCNP) {
		return false
	}

	// What an earlier frame left in f that this one would not overwrite is
	// left to Decode: a frame after one of another kind takes the general
	// decoder once. (The general decoder sets ICMPv6 only with KindOther or
	// KindLongHaulICMPv6, Pad only with KindRoCEData or KindCM.) Only
	// clearing the body of a Long-haul CNP for a CNP is done here.
	old := f.Kind
	if old != KindNone && old != KindCNP && old != KindLongHaulRoCE || f.Tunneled || f.HasFastCNP || f.IPVersion == 4 ||
		f.IPv6.HopByHop != nil || f.IPv6.Routing != nil || f.IPv6.DestOpts != nil {
		return false
	}
	f.Kind = KindCNP
	if e {
		f.Kind = KindLongHaulRoCE
	}
	f.IPVersion = 6
	copy(f.Eth.Dst[:], b[0:6])
	copy(f.Eth.Src[:], b[6:12])
	f.Eth.EtherType = EtherTypeIPv6
	f.Eth.VLAN = VLAN{}
	if n != EthernetLen {
		tci := binary.BigEndian.Uint16(b[14:16])
		f.Eth.VLAN = VLAN{Present: true, PCP: uint8(tci >> 13), DEI: tci&0x1000 != 0, ID: tci & 0x0FFF}
	}

	w0 := binary.BigEndian.Uint32(hdr[0:4])
	h := &f.IPv6
	h.TrafficClass, h.FlowLabel, h.PayloadLen = uint8(w0>>20), w0&0xFFFFF, uint16(plen)
	h.NextHeader, h.HopLimit, h.Proto, h.HeaderLen = ProtoUDP, hdr[7], ProtoUDP, IPv6Len
	h.Src = netip.AddrFrom16([16]byte(hdr[8:24]))
	h.Dst = netip.AddrFrom16([16]byte(hdr[24:40]))
	pkt := ip[: IPv6Len+plen : IPv6Len+plen]
	f.Trailer = ip[IPv6Len+plen:]

	uh := &f.UDP
	uh.SrcPort, uh.DstPort, uh.Length = binary.BigEndian.Uint16(hdr[40:42]), RoCEv2Port, uint16(ulen)
	uh.Checksum, uh.ChecksumStatus = binary.BigEndian.Uint16(hdr[46:48]), StatusUnchecked

	// The BTH, as decodeBTH reads it.
	bt := &f.BTH
	b1, w1, w2 := hdr[49], binary.BigEndian.Uint32(hdr[52:56]), binary.BigEndian.Uint32(hdr[56:60])
	bt.Opcode, bt.SE, bt.MigReq, bt.PadCount, bt.TVer = OpCNP, b1&0x80 != 0, b1&0x40 != 0, b1>>4&3, b1&0x0F
	bt.PKey, bt.Byte4, bt.DestQP = binary.BigEndian.Uint16(hdr[50:52]), hdr[52], w1&0xFFFFFF
	bt.AckReq, bt.Resv7, bt.PSN = w2&(1<<31) != 0, uint8(w2>>24)&0x7F, w2&0xFFFFFF

	end := IPv6Len + ulen - ICRCLen
	f.ICRC, f.ICRCComputed, f.ICRCStatus = binary.LittleEndian.Uint32(pkt[end:end+ICRCLen]), 0, StatusUnchecked
	m := &f.LongHaul
	if !e {
		f.Payload = pkt[IPv6Len+UDPLen+BTHLen : end : end]
		if old == KindLongHaulRoCE {
			m.CongLevel, m.Action, m.ActionReserved, m.Parameter, m.SourceQP = 0, 0, 0, 0, 0
			m.MetricType, m.MetricValue = 0, 0
			m.ExtPresent, m.ExtChecksum, m.ExtChecksumStatus = false, 0, StatusNone
			if len(m.Objects) != 0 {
				m.Objects = m.Objects[:0]
			}
		}
	} else {
		if f.Payload != nil {
			f.Payload = nil
		}
		// The body, as DecodeLongHaul reads it; an earlier Long-haul CNP
		// may have had an extension.
		w := binary.BigEndian.Uint32(hdr[68:72])
		m.CongLevel, m.Action, m.ActionReserved = hdr[60], Action(hdr[61]>>6), hdr[61]&0x3F
		m.Parameter, m.SourceQP = binary.BigEndian.Uint16(hdr[62:64]), binary.BigEndian.Uint32(hdr[64:68])
		m.MetricType, m.MetricValue = MetricType(w>>24), w&MaxMetricValue
		if m.ExtPresent {
			m.ExtPresent, m.ExtChecksum, m.ExtChecksumStatus = false, 0, StatusNone
			m.Objects = m.Objects[:0]
		}
	}

	// The UDP checksum: the pseudo-header's addresses are the 32 bytes
	// before the datagram, so one pass sums both, the first 64 bytes
	// without a loop, then the 4 (Long-haul CNP) or 8 (CNP) left; length
	// and next header are added byte-swapped to the little-endian sum (see
	// csumLE64). It verifies when the sum is 0xFFFF: a multiple of 0xFFFF,
	// as the sum is not zero.
	if !d.SkipChecksums {
		data := pkt[8 : IPv6Len+ulen]
		w := (*[64]byte)(data)
		s, c := bits.Add64(binary.LittleEndian.Uint64(w[0:8]), binary.LittleEndian.Uint64(w[8:16]), 0)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(w[16:24]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(w[24:32]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(w[32:40]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(w[40:48]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(w[48:56]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(w[56:64]), c)
		s, c = bits.Add64(s, uint64(bits16swap(uint16(ulen)))+uint64(bits16swap(ProtoUDP)), c)
		s += c // the last addend is below 2^17: no carry out
		var t uint64
		if rest := data[64:]; len(rest) == 8 {
			t = binary.LittleEndian.Uint64(rest)
		} else {
			t = uint64(binary.LittleEndian.Uint32(rest))
		}
		s, c = bits.Add64(s, t, 0)
		if (s+c)%0xFFFF != 0 {
			return false
		}
		uh.ChecksumStatus = StatusGood
	}
	if !d.SkipICRC {
		var crc uint32
		if haveCLMUL {
			crc = ^icrcCLMUL(^uint32(icrcSeed), pkt[:end], &icrcMasks6[0])
		} else {
			crc = icrcCopy(&f.icrcBuf, pkt, IPv6Len, end)
		}
		if crc != f.ICRC {
			return false
		}
		f.ICRCComputed, f.ICRCStatus = crc, StatusGood
	}
	return true
}

// bits16swap swaps the bytes of v: a big-endian word for a little-endian
// sum.
func bits16swap(v uint16) uint16 { return v<<8 | v>>8 }
