package lhcnp

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// line is the test topology src -> n1 -> n2 -> dst:
//
//	src --(srcRate, 1µs)-- n1 --(midRate, midDelay)-- n2 --(dstRate, 1µs)-- dst
type line struct {
	sim              *engine.Sim
	net              *netsim.Network
	src, dst         *netsim.Host
	n1, n2, rogue    *netsim.Switch
	n1Out, n2Out     *netsim.Port // egress towards dst
	flow             *netsim.Flow
	node1, node2     *Node
	rp               *ReactionPoint
	events1, events2 []Event
}

type lineOpts struct {
	v6                        bool
	srcRate, midRate, dstRate int64
	midDelay                  engine.Time
	dcqcn                     bool
	flowBytes                 int64
	flowRateBitsPerSec        int64   // the flow's maximum rate (0: line rate)
	cfg1, cfg2                *Config // nil: no node on that switch
	rc                        ReactionConfig
	noRP                      bool
	rogue                     bool // a switch hanging off n1 whose address is not trusted
	noCM                      bool // the flow starts without the CM exchange
}

var (
	addrSrc4 = netip.MustParseAddr("10.0.0.1")
	addrN14  = netip.MustParseAddr("10.0.1.1")
	addrN24  = netip.MustParseAddr("10.0.2.1")
	addrDst4 = netip.MustParseAddr("10.0.0.4")
	addrRog4 = netip.MustParseAddr("10.9.9.9")
	addrSrc6 = netip.MustParseAddr("2001:db8::1")
	addrN16  = netip.MustParseAddr("2001:db8:1::1")
	addrN26  = netip.MustParseAddr("2001:db8:2::1")
	addrDst6 = netip.MustParseAddr("2001:db8::4")
	addrRog6 = netip.MustParseAddr("2001:db8:9::9")
)

func newLine(t testing.TB, o lineOpts) *line {
	t.Helper()
	l := &line{sim: engine.New(engine.WithSeed(1))}
	l.net = netsim.New(l.sim)
	hc := netsim.DefaultHostConfig()
	if !o.dcqcn {
		hc.DCQCN.Enabled = false
		hc.NP.Disabled = true
	}
	as, a1, a2, ad, ar := addrSrc4, addrN14, addrN24, addrDst4, addrRog4
	if o.v6 {
		as, a1, a2, ad, ar = addrSrc6, addrN16, addrN26, addrDst6, addrRog6
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var err error
	l.src, err = l.net.AddHost("src", as, hc)
	must(err)
	l.dst, err = l.net.AddHost("dst", ad, hc)
	must(err)
	l.n1, err = l.net.AddSwitch("n1", a1, netsim.SwitchConfig{})
	must(err)
	l.n2, err = l.net.AddSwitch("n2", a2, netsim.SwitchConfig{})
	must(err)
	if o.srcRate == 0 {
		o.srcRate = 10e9
	}
	if o.midRate == 0 {
		o.midRate = o.srcRate
	}
	if o.dstRate == 0 {
		o.dstRate = o.midRate
	}
	if o.midDelay == 0 {
		o.midDelay = 100 * engine.Microsecond
	}
	_, _, err = l.net.Connect(l.src, l.n1, netsim.LinkConfig{RateBitsPerSec: o.srcRate, Delay: engine.Microsecond})
	must(err)
	l.n1Out, _, err = l.net.Connect(l.n1, l.n2, netsim.LinkConfig{RateBitsPerSec: o.midRate, Delay: o.midDelay})
	must(err)
	l.n2Out, _, err = l.net.Connect(l.n2, l.dst, netsim.LinkConfig{RateBitsPerSec: o.dstRate, Delay: engine.Microsecond})
	must(err)
	if o.rogue {
		l.rogue, err = l.net.AddSwitch("rogue", ar, netsim.SwitchConfig{})
		must(err)
		_, _, err = l.net.Connect(l.rogue, l.n1, netsim.LinkConfig{RateBitsPerSec: o.srcRate, Delay: engine.Microsecond})
		must(err)
	}
	l.net.ComputeRoutes()
	l.flow, err = l.net.AddFlow(netsim.FlowConfig{Name: "f", Src: l.src, Dst: l.dst, SrcQPN: 100, DstQPN: 200, Bytes: o.flowBytes, NoCM: o.noCM, MaxRateBitsPerSec: o.flowRateBitsPerSec})
	must(err)
	if o.cfg1 != nil {
		l.node1, err = Attach(l.net, l.n1, *o.cfg1, WithEvents(func(e Event) { l.events1 = append(l.events1, e) }))
		must(err)
	}
	if o.cfg2 != nil {
		l.node2, err = Attach(l.net, l.n2, *o.cfg2, WithEvents(func(e Event) { l.events2 = append(l.events2, e) }))
		must(err)
	}
	if !o.noRP {
		rc := o.rc
		if rc.RTTEst == 0 {
			rc = DefaultReactionConfig()
			rc.TrustedSources = trusted(o.v6)
		}
		l.rp, err = NewReactionPoint(l.net, rc)
		must(err)
		l.rp.Attach(l.src)
	}
	return l
}

// trusted returns the prefix of the two nodes' addresses.
func trusted(v6 bool) []netip.Prefix {
	if v6 {
		return []netip.Prefix{netip.MustParsePrefix("2001:db8:1::/48"), netip.MustParsePrefix("2001:db8:2::/48")}
	}
	return []netip.Prefix{netip.MustParsePrefix("10.0.1.0/24"), netip.MustParsePrefix("10.0.2.0/24")}
}

// testConfig is an enabled node with small explicit thresholds, the
// RoCEv2 format to every source and both other triggers off; everything
// else, trigger persistence (0) included, is DefaultConfig's.
func testConfig(kmax int64, rtt engine.Time) Config {
	c := DefaultConfig()
	c.Enabled = true
	c.FormatRoCEv2 = true
	c.FormatICMPv6 = true
	c.RoCEv2Receivers = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}
	c.Interface.RTTEst = rtt
	q := &c.Interface.Queue
	q.KMaxMode = KMaxExplicit
	q.KMaxBytes = kmax
	q.VECNPercent = 0
	q.VGrowthBytesPerSec = 0
	return c
}

func eventsOf(evs []Event, k EventKind) []Event {
	var out []Event
	for _, e := range evs {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// craft builds a netsim packet holding a Long-haul CNP from node `from`
// to host `to`, as Node.send does: the whole frame, its transport part in
// Hdr.
//
// A value the encoder refuses to send, an ECN marking rate above 100 %
// (§10.4), is what a forger sends: it is written over an encoded 100 and the
// frame resealed.
func craft(t testing.TB, n *netsim.Network, from netsim.Node, to *netsim.Host, f Format, m wire.LongHaul) *netsim.Packet {
	t.Helper()
	return craftDestQP(t, n, from, to, f, m, m.SourceQP)
}

// craftDestQP is craft with the RoCEv2 format's BTH destination QP given
// (craft's is the body's Source QP, as §6.2.3 asks).
func craftDestQP(t testing.TB, n *netsim.Network, from netsim.Node, to *netsim.Host, f Format, m wire.LongHaul, destQP uint32) *netsim.Packet {
	t.Helper()
	forgedMetric := m.MetricType == wire.MetricECNMarkingRate && m.MetricValue > 100
	metricValue := m.MetricValue
	if forgedMetric {
		m.MetricValue = 100
	}
	a := wire.Addressing{SrcIP: from.Addr(), DstIP: to.Addr()}
	var buf [256]byte
	enc := wire.Encoder{}
	ipLen := 40
	if a.SrcIP.Is4() {
		ipLen = 20
	}
	var start, size int
	var err error
	p := n.NewPacket()
	if f == FormatRoCEv2 {
		a.SrcPort = roceUDPSrcPort(m.SourceQP)
		c := wire.CNP{DestQP: destQP}
		size, err = enc.LongHaulRoCE(buf[:], &a, &c, &m)
		start = wire.EthernetLen + ipLen + wire.UDPLen
		p.Kind = netsim.KindRoCE
	} else {
		size, err = enc.LongHaulICMPv6(buf[:], &a, &m)
		start = wire.EthernetLen + ipLen
		p.Kind = netsim.KindOther
	}
	if err != nil {
		t.Fatal(err)
	}
	if forgedMetric {
		body := start
		if f == FormatRoCEv2 {
			body += wire.BTHLen
		} else {
			body += wire.ICMPv6HdrLen
		}
		buf[body+9], buf[body+10], buf[body+11] = byte(metricValue>>16), byte(metricValue>>8), byte(metricValue)
		reseal(t, buf[:size], f)
	}
	if err := n.SetFrame(p, buf[:size]); err != nil {
		t.Fatal(err)
	}
	p.Src, p.Dst = from.ID(), to.ID()
	p.Flow = netsim.NoFlow
	p.SizeBytes = int32(size + 4)
	p.HdrLen = uint8(copy(p.Hdr[:], buf[start:size]))
	return p
}

// waitActive runs the line until its flow's QP is connected (the CM
// exchange takes a round trip).
func waitActive(t testing.TB, l *line) {
	t.Helper()
	for end := l.sim.Now() + 10*engine.Millisecond; !l.flow.Sender.Active(); {
		if l.sim.Now() >= end {
			t.Fatal("the flow did not connect within 10 ms")
		}
		l.sim.Run(l.sim.Now() + 10*engine.Microsecond)
	}
}

// overloaded runs 10 Gb/s into midRate through a node with K_max kmax,
// RTT_est rtt and no Resume for d, and returns the line and the node's
// notifications, of which there must be several.
func overloaded(t *testing.T, kmax int64, rtt engine.Time, midRate int64, d engine.Time) (*line, []Event) {
	t.Helper()
	cfg := testConfig(kmax, rtt)
	cfg.Interface.Queue.Action.ResumeEnabled = false
	l := newLine(t, lineOpts{srcRate: 10e9, midRate: midRate, cfg1: &cfg})
	l.sim.Run(d)
	sent := eventsOf(l.events1, EventCNPSent)
	if len(sent) < 2 {
		t.Fatalf("%d notifications, want several", len(sent))
	}
	return l, sent
}

// optionsLine runs newLine's two nodes for 2 ms with node 1 configured by
// testConfig with PerFlowRTT, RepeatResume and, as asked, ResumeOnDrain, no
// reaction points, and returns node 1's WAN port, its queue and the test
// flow's entry (the rig of the options' cut-rate tests).
func optionsLine(t *testing.T, resumeOnDrain bool) (*line, Config, *portState, *queueState, *flowEntry) {
	t.Helper()
	cfg := testConfig(400_000, 200*engine.Microsecond)
	cfg.Interface.Queue.PerFlowRTT = true
	cfg.Interface.Queue.Action.RepeatResume = true
	cfg.Interface.Queue.Action.ResumeOnDrain = resumeOnDrain
	l := newLine(t, lineOpts{srcRate: 10e9, midRate: 10e9, cfg1: &cfg, noRP: true})
	l.sim.Run(2 * engine.Millisecond)
	ps := l.node1.portOf(l.n1Out)
	e := l.node1.ft.m[key(addrSrc4, addrDst4, 100, 200)]
	if e == nil {
		t.Fatal("flow not learnt")
	}
	return l, cfg, ps, &ps.queues[0], e
}

// reseal computes the checks of an untagged frame without IPv6 extension
// headers again after a test changed its body: the ICRC of a RoCEv2 frame
// (and then its UDP checksum over IPv6), or the ICMPv6 checksum.
func reseal(t testing.TB, frame []byte, f Format) {
	t.Helper()
	ip := frame[wire.EthernetLen:]
	hl, addrs := 20, ip[12:20]
	if ip[0]>>4 == 6 {
		hl, addrs = 40, ip[8:40]
		ip = ip[:40+int(binary.BigEndian.Uint16(ip[4:6]))]
	} else {
		ip = ip[:binary.BigEndian.Uint16(ip[2:4])]
	}
	// l4sum is the checksum of the transport message l4 with its pseudo-header.
	l4sum := func(l4 []byte, proto byte) uint16 {
		b := append([]byte(nil), addrs...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(l4)))
		b = append(b, 0, 0, 0, proto)
		return wire.Checksum(append(b, l4...))
	}
	l4 := ip[hl:]
	if f != FormatRoCEv2 {
		l4[2], l4[3] = 0, 0
		binary.BigEndian.PutUint16(l4[2:], l4sum(l4, wire.ProtoICMPv6))
		return
	}
	crc, err := wire.ICRC(ip)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(ip[len(ip)-wire.ICRCLen:], crc)
	if hl == 40 {
		l4[6], l4[7] = 0, 0
		binary.BigEndian.PutUint16(l4[6:], l4sum(l4, wire.ProtoUDP))
	}
}
