package fcn

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// tunnelTap watches t1's ports in front of the transit node and keeps,
// for every tunnelled packet queued there, its whole frame as it would be
// on the wire: the head the packet carries (Ethernet, outer IPv6, inner
// IP) and, after it, the UDP header, BTH and payload the model keeps as
// for any data packet, encoded by package wire around the same outer
// header.
type tunnelTap struct {
	netsim.PortObserver
	t      *testing.T
	r      *rig
	heads  []wire.Encap
	frames [][]byte
	marked []wire.Encap
	strip  bool // remove the frames before the transit node sees them
}

func (tp *tunnelTap) OnEnqueue(pt *netsim.Port, p *netsim.Packet, q int64) {
	var h wire.Encap
	if fr := p.Frame(); fr != nil && p.Kind == netsim.KindRoCE && wire.DecodeEncap(fr, &h) == nil {
		if tp.strip {
			_ = tp.r.net.SetFrame(p, nil)
		} else if len(tp.frames) < 64 {
			tp.keep(p, fr)
		}
	}
	tp.PortObserver.OnEnqueue(pt, p, q)
}

func (tp *tunnelTap) OnMark(pt *netsim.Port, p *netsim.Packet, q int64) {
	if fr := p.Frame(); fr != nil && len(tp.marked) < 16 {
		var h wire.Encap
		if err := wire.DecodeEncap(fr, &h); err != nil {
			tp.t.Errorf("a marked tunnelled packet: %v", err)
		}
		tp.marked = append(tp.marked, h)
	}
	tp.PortObserver.OnMark(pt, p, q)
}

func (tp *tunnelTap) keep(p *netsim.Packet, fr []byte) {
	var h wire.Encap
	if err := wire.DecodeEncap(fr, &h); err != nil {
		tp.t.Fatalf("a tunnelled packet's head: %v", err)
	}
	if h.HeadLen != len(fr) {
		tp.t.Fatalf("head of %d bytes, frame of %d", h.HeadLen, len(fr))
	}
	bth, err := p.BTH()
	if err != nil {
		tp.t.Fatal(err)
	}
	a := wire.Addressing{DstMAC: wire.MAC(fr[0:6]), SrcMAC: wire.MAC(fr[6:12]), SrcIP: h.InnerSrc, DstIP: h.InnerDst,
		TOS: h.InnerTOS, FlowLabel: h.InnerFlowLabel, SrcPort: 0xC000 | uint16(p.SrcQP&0x3FFF),
		Tunnel: wire.Tunnel{Present: true, Src: h.Outer.Src, Dst: h.Outer.Dst, TrafficClass: h.Outer.TrafficClass,
			FlowLabel: h.Outer.FlowLabel, HopLimit: h.Outer.HopLimit}}
	buf := make([]byte, 8192)
	n, err := (&wire.Encoder{}).RoCE(buf, &a, &bth, nil, make([]byte, p.PayloadBytes))
	if err != nil {
		tp.t.Fatal(err)
	}
	if !bytes.Equal(buf[:len(fr)], fr) {
		tp.t.Fatalf("the packet's head is not the start of its frame:\nhead  %x\nframe %x", fr, buf[:len(fr)])
	}
	plain := a
	plain.Tunnel = wire.Tunnel{}
	n0, err := (&wire.Encoder{}).RoCE(make([]byte, 8192), &plain, &bth, nil, make([]byte, p.PayloadBytes))
	if err != nil || n != n0+wire.TunnelOverheadBytes {
		tp.t.Errorf("tunnelled frame of %d bytes, %d without the tunnel (%v): want 40 more", n, n0, err)
	}
	tp.heads = append(tp.heads, h)
	tp.frames = append(tp.frames, buf[:n])
}

func tapTransit(t *testing.T, r *rig) *tunnelTap {
	tp := &tunnelTap{PortObserver: r.tr, t: t, r: r}
	r.t1.SetObserver(tp)
	return tp
}

// TestTunnelEncapsulation: §4.1, the ingress PE encapsulates: the packets
// between the PEs carry the outer IPv6 header in their frame, from pe1 to
// pe2 (the switch the destination hangs off), next header 41, the flow's
// label, the inner ECN copied; the frame is exactly what package wire
// encodes for a tunnelled packet, and the packet's size on the links is
// that frame's (40 bytes more than the sender's).
func TestTunnelEncapsulation(t *testing.T) {
	r := newRig(t, rigOpts{cfg: enabled()})
	tp := tapTransit(t, r)
	r.sim.Run(2 * engine.Millisecond)
	if len(tp.heads) == 0 {
		t.Fatal("no tunnelled packet reached t1")
	}
	for i, h := range tp.heads {
		k := r.pe.Mappings()[0].Flow
		for _, m := range r.pe.Mappings() {
			if m.Flow.Src == h.InnerSrc {
				k = m.Flow
			}
		}
		label, _ := r.pe.Label(k)
		if h.Outer.Src != r.nodeAddr["pe1"] || h.Outer.Dst != r.nodeAddr["pe2"] || h.Outer.NextHeader != wire.ProtoIPv6 ||
			h.Outer.FlowLabel != label || h.Outer.TrafficClass != h.InnerTOS || h.InnerTOS&3 != netsim.ECNECT0 ||
			h.InnerDst != r.nodeAddr["r"] {
			t.Fatalf("packet %d: outer %v -> %v nh %d label %#x tc %#x, inner %v -> %v tos %#x; want pe1 -> pe2, 41, %#x, the inner tc, ECT(0)",
				i, h.Outer.Src, h.Outer.Dst, h.Outer.NextHeader, h.Outer.FlowLabel, h.Outer.TrafficClass, h.InnerSrc, h.InnerDst, h.InnerTOS, label)
		}
	}
	if c := r.pe.Counters(); c.Encapsulated == 0 || c.NoTunnelEnd != 0 || c.EncapErrors != 0 {
		t.Errorf("pe %+v", c)
	}
}

// TestTunnelOverhead: the 40 bytes of the outer header are serialised on
// every link between the PEs and nowhere else: t1's port towards pe2
// sends exactly 40 bytes per encapsulated packet more than pe2's port
// towards the receiver, and pe2 decapsulated every packet pe1
// encapsulated. Without FCN both ports send the same bytes.
func TestTunnelOverhead(t *testing.T) {
	for _, tt := range []struct {
		desc string
		cfg  *Config
	}{{"fcn", enabled()}, {"no fcn", nil}} {
		t.Run(tt.desc, func(t *testing.T) {
			r := newRig(t, rigOpts{cfg: tt.cfg, flowSize: 2_000_000})
			r.sim.Run(30 * engine.Millisecond)
			if a, _ := r.a.Sender.Done(); !a {
				t.Fatal("the flows did not finish")
			}
			if b, _ := r.b.Sender.Done(); !b {
				t.Fatal("the flows did not finish")
			}
			pe2 := r.net.NodeByName("pe2").(*netsim.Switch)
			wan, edge := r.t1.Route(pe2.ID()).Stats(), pe2.Route(r.net.NodeByName("r").ID()).Stats()
			var enc int64
			if r.pe != nil {
				enc = r.pe.Counters().Encapsulated
			}
			if got := pe2.Stats().Decapsulated; got != enc {
				t.Errorf("pe2 decapsulated %d, pe1 encapsulated %d", got, enc)
			}
			if tt.cfg != nil && enc == 0 {
				t.Fatal("nothing encapsulated")
			}
			if wan.TxPackets != edge.TxPackets || wan.TxBytes-edge.TxBytes != enc*wire.TunnelOverheadBytes {
				t.Errorf("t1->pe2 sent %d packets, %d bytes; pe2->r %d, %d: want the same packets and %d x 40 bytes more",
					wan.TxPackets, wan.TxBytes, edge.TxPackets, edge.TxBytes, enc)
			}
		})
	}
}

// TestTransitReadsTheFrame: §4.2, the transit node takes the label from
// the outer header of the packets it queues: with the frames taken off
// before it sees them (the same packets, the same mappings at the PE) it
// has nothing to report.
func TestTransitReadsTheFrame(t *testing.T) {
	r := newRig(t, rigOpts{cfg: enabled()})
	tp := tapTransit(t, r)
	tp.strip = true
	r.sim.Run(4 * engine.Millisecond)
	if c := r.tr.Counters(); c.FCNSent != 0 || c.NotTunnelled == 0 || c.TunnelledPackets != 0 {
		t.Errorf("transit %+v: want no FCN, every congesting flow not tunnelled", c)
	}
	if len(r.pe.Mappings()) != 2 {
		t.Errorf("%d mappings at the PE, want 2", len(r.pe.Mappings()))
	}
}

// TestTransitNotECNCapable: §4.2, the transit node reports a flow only
// when the outer ECN field says the sender supports congestion
// management: a sender whose packets are Not-ECT gets no FCN.
func TestTransitNotECNCapable(t *testing.T) {
	r := newRig(t, rigOpts{cfg: enabled()})
	r.pe1.SetForwarder(netsim.StageRewrite, forwardFunc(func(s *netsim.Switch, p *netsim.Packet, in, out *netsim.Port) bool {
		p.ECN = netsim.ECNNotECT // the senders' packets, as they enter the PE
		return r.pe.Forward(s, p, in, out)
	}))
	r.sim.Run(4 * engine.Millisecond)
	if c := r.tr.Counters(); c.FCNSent != 0 || c.NotECNCapable == 0 || c.TunnelledPackets == 0 {
		t.Errorf("transit %+v: want tunnelled packets, no FCN, flows refused as not ECN-capable", c)
	}
}

type forwardFunc func(*netsim.Switch, *netsim.Packet, *netsim.Port, *netsim.Port) bool

func (f forwardFunc) Forward(s *netsim.Switch, p *netsim.Packet, in, out *netsim.Port) bool {
	return f(s, p, in, out)
}

// TestTunnelECN: a congested node inside the tunnel marks the outer
// header (the inner one keeps ECT(0)); the egress PE passes the mark to
// the inner header (RFC 6040, the pair of §4.1's copy), so the receiver
// sees CE and sends its CNPs as without the tunnel.
func TestTunnelECN(t *testing.T) {
	r := newRig(t, rigOpts{}) // no FCN: only the tunnel is under test
	pe, err := AttachPE(r.net, r.pe1, *enabled(), []*netsim.Port{r.pe1.Route(r.t1.ID())})
	if err != nil {
		t.Fatal(err)
	}
	pe.cfg.KMaxBytes = 1 << 40 // the PE itself never reports
	pt := r.t1.Route(r.net.NodeByName("pe2").ID())
	if err := pt.SetECN(0, netsim.ECNConfig{Enabled: true, KMinBytes: 10_000, KMaxBytes: 20_000, PMax: 1}); err != nil {
		t.Fatal(err)
	}
	tp := &tunnelTap{PortObserver: nopObserver{}, t: t, r: r}
	pt.SetObserver(tp)
	r.sim.Run(4 * engine.Millisecond)
	if len(tp.marked) == 0 {
		t.Fatal("t1 marked nothing")
	}
	for _, h := range tp.marked {
		if h.Outer.TrafficClass&3 != netsim.ECNCE || h.InnerTOS&3 != netsim.ECNECT0 {
			t.Fatalf("marked packet: outer ecn %02b inner %02b, want CE and ECT(0)", h.Outer.TrafficClass&3, h.InnerTOS&3)
		}
	}
	var marked, cnps, rx int64
	for _, f := range []*netsim.Flow{r.a, r.b} {
		marked, cnps, rx = marked+f.Receiver.MarkedPackets(), cnps+f.Receiver.CNPs(), rx+f.Receiver.RxPackets()
	}
	if marked == 0 || cnps == 0 || pe.Counters().Encapsulated == 0 || r.net.NodeByName("pe2").(*netsim.Switch).Stats().DecapECNDrops != 0 {
		t.Errorf("receiver: %d of %d packets marked, %d CNPs; %d packets encapsulated: want the marks through the tunnel",
			marked, rx, cnps, pe.Counters().Encapsulated)
	}
}

type nopObserver struct{}

func (nopObserver) OnEnqueue(*netsim.Port, *netsim.Packet, int64) {}
func (nopObserver) OnDequeue(*netsim.Port, *netsim.Packet, int64) {}
func (nopObserver) OnMark(*netsim.Port, *netsim.Packet, int64)    {}
func (nopObserver) OnDrop(*netsim.Port, *netsim.Packet, int64)    {}

// TestTunnelPcap: a pcap of the tunnel opens in tshark, which reads the
// outer IPv6 header (the PEs, next header 41, the flow label the PE
// assigned, the traffic class) and behind it the sender's IPv6, UDP to
// 4791 with a good checksum and the BTH with the flow's destination QP.
func TestTunnelPcap(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("LHCNP_ORACLES") == "required" {
			t.Fatal("tshark not found and LHCNP_ORACLES=required (run scripts/deps.sh)")
		}
		t.Skip("tshark not found")
	}
	r := newRig(t, rigOpts{cfg: enabled()})
	tp := tapTransit(t, r)
	r.sim.Run(2 * engine.Millisecond)
	if len(tp.frames) == 0 {
		t.Fatal("nothing tunnelled")
	}
	var buf bytes.Buffer
	w, err := wire.NewPcapWriter(&buf, true)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range tp.frames {
		if err := w.WritePacket(time.Unix(0, int64(i)*1000), f); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "tunnel.pcap")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	fields := []string{"ipv6.src", "ipv6.dst", "ipv6.nxt", "ipv6.flow", "ipv6.tclass", "udp.dstport", "udp.checksum.status",
		"infiniband.bth.destqp"}
	args := []string{"-r", path, "-n", "-o", "udp.check_checksum:TRUE", "-T", "fields", "-E", "separator=|", "-E", "aggregator=,"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	out, err := exec.Command(tshark, args...).Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(tp.frames) {
		t.Fatalf("tshark printed %d lines for %d frames:\n%s", len(lines), len(tp.frames), out)
	}
	qp := map[string]string{"2001:db8:a::1": "200", "2001:db8:a::2": "201"}
	for i, line := range lines {
		h := tp.heads[i]
		got := map[string][]string{}
		for j, v := range strings.Split(line, "|") {
			got[fields[j]] = strings.Split(v, ",")
		}
		want := map[string][]string{
			"ipv6.src":              {"2001:db8:f::1", h.InnerSrc.String()},
			"ipv6.dst":              {"2001:db8:f::3", "2001:db8:b::1"},
			"ipv6.nxt":              {"41", "17"},
			"ipv6.flow":             {"0x" + strconv.FormatUint(uint64(h.Outer.FlowLabel), 16), "0x00000"},
			"ipv6.tclass":           {"0x00000002", "0x00000002"},
			"udp.dstport":           {"4791"},
			"udp.checksum.status":   {"1"},
			"infiniband.bth.destqp": {"0x0000" + strconv.FormatUint(mustAtoi(t, qp[h.InnerSrc.String()]), 16)},
		}
		for _, f := range fields {
			if strings.Join(got[f], ",") != strings.Join(want[f], ",") && !sameHex(got[f], want[f]) {
				t.Errorf("frame %d: %s = %v, want %v", i, f, got[f], want[f])
			}
		}
	}
}

func mustAtoi(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// sameHex compares lists of numbers tshark may print with other widths.
func sameHex(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, err1 := strconv.ParseUint(a[i], 0, 64)
		y, err2 := strconv.ParseUint(b[i], 0, 64)
		if err1 != nil || err2 != nil || x != y {
			return false
		}
	}
	return true
}
