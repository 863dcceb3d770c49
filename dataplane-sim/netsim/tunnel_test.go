package netsim

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// TestTerminate: a switch ends a tunnel addressed to it, and only such a
// tunnel: the outer header goes (40 bytes less), the ECN is RFC 6040's,
// a head-only frame goes with it and a whole frame keeps its inner part;
// a CE mark on a Not-ECT packet drops it.
func TestTerminate(t *testing.T) {
	n := New(engine.New())
	me := netip.MustParseAddr("2001:db8:f::3")
	s, err := n.AddSwitch("pe2", me, SwitchConfig{})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		Consumed      bool
		Size          int32
		ECN           uint8
		FrameLen      int
		Decapsulated  int64
		DecapECNDrops int64
	}
	for _, tt := range []struct {
		desc        string
		to          string
		inner, mark uint8 // inner ECN; the outer's after marking
		whole       bool  // the whole frame, not only the head
		want        result
	}{
		{"head, unmarked", "2001:db8:f::3", ECNECT0, ECNECT0, false, result{false, 1000 - 40, ECNECT0, 0, 1, 0}},
		{"head, marked in the tunnel", "2001:db8:f::3", ECNECT0, ECNCE, false, result{false, 1000 - 40, ECNCE, 0, 1, 0}},
		{"whole frame keeps its inner part", "2001:db8:f::3", ECNECT0, ECNCE, true, result{false, 1000 - 40, ECNCE, 14 + 40 + 8 + 12 + 16 + 4, 1, 0}},
		{"CE on not-ECT is dropped", "2001:db8:f::3", ECNNotECT, ECNCE, false, result{true, 0, 0, 0, 0, 1}},
		{"another switch's tunnel", "2001:db8:f::9", ECNECT0, ECNCE, false, result{false, 1000, ECNCE, 94, 0, 0}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			before := s.Stats()
			a := wire.Addressing{SrcIP: netip.MustParseAddr("2001:db8:a::1"), DstIP: netip.MustParseAddr("2001:db8:b::1"), TOS: tt.inner,
				Tunnel: wire.Tunnel{Present: true, Src: netip.MustParseAddr("2001:db8:f::1"), Dst: netip.MustParseAddr(tt.to),
					TrafficClass: tt.inner, FlowLabel: 7}}
			buf := make([]byte, FrameCap)
			var size int
			if tt.whole {
				size, err = (&wire.Encoder{}).RoCE(buf, &a, &wire.BTH{Opcode: wire.OpRCWriteOnly, PKey: 0xFFFF, DestQP: 9}, nil, nil)
			} else {
				size, err = (&wire.Encoder{}).EncapHead(buf, &a, wire.RoCEUDPLen(wire.OpRCWriteOnly, 900))
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := wire.SetOuterECN(buf[:size], tt.mark); err != nil {
				t.Fatal(err)
			}
			p := n.NewPacket()
			p.Kind, p.SizeBytes, p.ECN = KindRoCE, 1000, tt.mark
			if err := n.SetFrame(p, buf[:size]); err != nil {
				t.Fatal(err)
			}
			got := result{Consumed: s.terminate(p)}
			st := s.Stats()
			got.Decapsulated, got.DecapECNDrops = st.Decapsulated-before.Decapsulated, st.DecapECNDrops-before.DecapECNDrops
			if !got.Consumed {
				got.Size, got.ECN, got.FrameLen = p.SizeBytes, p.ECN, len(p.Frame())
				if tt.whole {
					var f wire.Frame
					if err := (&wire.Decoder{}).Decode(p.Frame(), &f); err != nil || f.Tunneled || f.IPv6.TrafficClass&3 != tt.mark {
						t.Errorf("inner frame: %v, tunneled %v, ecn %02b", err, f.Tunneled, f.IPv6.TrafficClass&3)
					}
				}
				n.FreePacket(p)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if n.LivePackets() != 0 {
		t.Errorf("%d live packets", n.LivePackets())
	}
}
