package fcn

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/internal/mechtest"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// rig is a WAN between two DCs, congested in its middle:
//
//	s1 --10G-- pe1 ==100G, 100µs== t1 ==wanRate, 100µs== pe2 --10G-- r
//	s2 --10G--/
//
// pe1 is the ingress PE, t1 a transit node; with wanRate 10G the two
// senders congest t1's port towards pe2.
type rig struct {
	sim      *engine.Sim
	net      *netsim.Network
	s1, s2   *netsim.Host
	pe1, t1  *netsim.Switch
	a, b     *netsim.Flow
	pe       *PE
	tr       *Transit
	cnps     []wire.Frame // standard CNPs the senders got from a switch
	fcnSeen  []lhcnp.FlowKey
	nodeAddr map[string]netip.Addr
}

type rigOpts struct {
	cfg      *Config
	wanRate  int64
	tunnel   int64 // pe1 -> t1 rate
	flowSize int64
}

func newRig(t *testing.T, o rigOpts) *rig {
	t.Helper()
	if o.wanRate == 0 {
		o.wanRate = 10e9
	}
	if o.tunnel == 0 {
		o.tunnel = 100e9
	}
	flow := func(name, from string, src, dst uint32) mechtest.Flow {
		return mechtest.Flow{From: from, To: "r", Config: netsim.FlowConfig{Name: name, SrcQPN: src, DstQPN: dst, Bytes: o.flowSize}}
	}
	n := mechtest.Build(t, mechtest.Spec{
		Host:  netsim.DefaultHostConfig(),
		Hosts: []mechtest.Node{{Name: "s1", Addr: "2001:db8:a::1"}, {Name: "s2", Addr: "2001:db8:a::2"}, {Name: "r", Addr: "2001:db8:b::1"}},
		Switches: []mechtest.Node{{Name: "pe1", Addr: "2001:db8:f::1"}, {Name: "t1", Addr: "2001:db8:f::2"},
			{Name: "pe2", Addr: "2001:db8:f::3"}},
		Links: []mechtest.Link{{A: "s1", B: "pe1", RateBitsPerSec: 10e9, Delay: engine.Microsecond},
			{A: "s2", B: "pe1", RateBitsPerSec: 10e9, Delay: engine.Microsecond},
			{A: "pe1", B: "t1", RateBitsPerSec: o.tunnel, Delay: 100 * engine.Microsecond},
			{A: "t1", B: "pe2", RateBitsPerSec: o.wanRate, Delay: 100 * engine.Microsecond},
			{A: "pe2", B: "r", RateBitsPerSec: 10e9, Delay: engine.Microsecond}},
		Flows: []mechtest.Flow{flow("a", "s1", 100, 200), flow("b", "s2", 101, 201)},
	})
	r := &rig{sim: n.Sim, net: n.Net, s1: n.Hosts["s1"], s2: n.Hosts["s2"], pe1: n.Switches["pe1"], t1: n.Switches["t1"],
		a: n.Flows["a"], b: n.Flows["b"], nodeAddr: n.Addrs}
	if o.cfg != nil {
		var err error
		if r.pe, err = AttachPE(r.net, r.pe1, *o.cfg, []*netsim.Port{n.Ports[[2]string{"pe1", "t1"}]}); err != nil {
			t.Fatal(err)
		}
		if r.tr, err = AttachTransit(r.net, r.t1, *o.cfg); err != nil {
			t.Fatal(err)
		}
		r.tr.OnSent = func(k lhcnp.FlowKey, _ *netsim.Switch) { r.fcnSeen = append(r.fcnSeen, k) }
	}
	// Every standard CNP a sender gets from a switch (with its frame) is
	// recorded, then DCQCN applies it.
	n.TapHosts(func(_ *netsim.Host, f *wire.Frame, _ []byte) {
		g := *f
		g.Payload, g.Pad, g.Trailer = nil, nil, nil
		r.cnps = append(r.cnps, g)
	}, nil, nil, "s1", "s2")
	return r
}

func enabled() *Config {
	c := DefaultConfig()
	c.Enabled = true
	c.Domain = []netip.Prefix{netip.MustParsePrefix("2001:db8:f::/48")}
	return &c
}

// TestDisabledByDefault: FCN is off by default: no mapping, no message.
func TestDisabledByDefault(t *testing.T) {
	c := DefaultConfig()
	r := newRig(t, rigOpts{cfg: &c})
	r.sim.Run(3 * engine.Millisecond)
	if c.Enabled || len(r.pe.Mappings()) != 0 || r.tr.Counters().FCNSent != 0 || len(r.cnps) != 0 {
		t.Errorf("mappings %d, fcn sent %d, cnps %d", len(r.pe.Mappings()), r.tr.Counters().FCNSent, len(r.cnps))
	}
}

// TestIngressPEMapping: §4.1, the ingress PE learns each flow's
// four-tuple and assigns it a locally unique 20-bit flow label.
func TestIngressPEMapping(t *testing.T) {
	r := newRig(t, rigOpts{cfg: enabled()})
	r.sim.Run(2 * engine.Millisecond)
	ms := r.pe.Mappings()
	type key struct {
		Src, Dst     string
		SrcQP, DstQP uint32
	}
	var got []key
	labels := map[uint32]bool{}
	for _, m := range ms {
		got = append(got, key{m.Flow.Src.String(), m.Flow.Dst.String(), m.Flow.SrcQP, m.Flow.DstQP})
		if m.FlowLabel == 0 || m.FlowLabel > wire.MaxFCNFlowLabel || labels[m.FlowLabel] {
			t.Errorf("label %#x: zero, too wide or not unique", m.FlowLabel)
		}
		labels[m.FlowLabel] = true
		if m.Packets == 0 {
			t.Errorf("mapping %v counted no packet", m.Flow)
		}
	}
	want := []key{{"2001:db8:a::1", "2001:db8:b::1", 100, 200}, {"2001:db8:a::2", "2001:db8:b::1", 101, 201}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mappings (-want +got):\n%s", diff)
	}
	if r.pe.Counters().MappingsCreated != 2 {
		t.Errorf("counters %+v", r.pe.Counters())
	}
}

// TestTransitToPEToSender: §4.2 and §4.3, the congested transit node sends
// FCN messages to the ingress PE, which sends each flow's sender a standard
// CNP from its own address with the flow's source QP as destination QP.
func TestTransitToPEToSender(t *testing.T) {
	r := newRig(t, rigOpts{cfg: enabled()})
	r.sim.Run(4 * engine.Millisecond)
	tc, pc := r.tr.Counters(), r.pe.Counters()
	// The last few are still on the 100 µs link when the run ends.
	if tc.FCNSent == 0 || pc.FCNReceived > tc.FCNSent || pc.FCNReceived < tc.FCNSent*9/10 ||
		pc.CNPTranslated != pc.FCNReceived || pc.UnknownFlowLabel != 0 {
		t.Fatalf("transit %+v, pe %+v: want the FCNs received and every one translated", tc, pc)
	}
	qp := map[string]uint32{"2001:db8:a::1": 100, "2001:db8:a::2": 101}
	fromPE := 0
	for _, f := range r.cnps {
		src, dst := f.IPAddrs()
		if src != r.nodeAddr["pe1"] {
			continue // a receiver's CNP
		}
		fromPE++
		if f.BTH.Opcode != wire.OpCNP || f.BTH.DestQP != qp[dst.String()] {
			t.Errorf("CNP to %v: opcode %v, dest QP %d, want 0x81 and %d", dst, f.BTH.Opcode, f.BTH.DestQP, qp[dst.String()])
		}
	}
	if fromPE == 0 {
		t.Errorf("no CNP from the PE reached a sender")
	}
	if r.a.Sender.RateCuts() == 0 || r.b.Sender.RateCuts() == 0 {
		t.Errorf("senders not cut")
	}
}

// TestFCNMessage: §4.2, the message carries the 20-bit label and a 3-bit
// level from the congested node to the PE: a message built by the transit
// node decodes to the PE's label for the flow.
func TestFCNMessage(t *testing.T) {
	r := newRig(t, rigOpts{cfg: enabled()})
	var frames, hdrs [][]byte
	r.pe1.SetLocalHandler(localFunc(func(_ *netsim.Switch, p *netsim.Packet) {
		frames = append(frames, append([]byte(nil), p.Frame()...))
		hdrs = append(hdrs, append([]byte(nil), p.Hdr[:p.HdrLen]...))
		r.pe.HandleLocal(r.pe1, p)
	}))
	r.sim.Run(4 * engine.Millisecond)
	if len(frames) == 0 {
		t.Fatal("no FCN message reached the PE")
	}
	var f wire.Frame
	if err := (&wire.Decoder{}).Decode(frames[0], &f); err != nil || f.Kind != wire.KindFCN {
		t.Fatalf("decode: %v, kind %v", err, f.Kind)
	}
	src, dst := f.IPAddrs()
	label, ok := r.pe.Label(r.fcnSeen[0])
	if !ok || f.FCN.FlowLabel != label || src != r.nodeAddr["t1"] || dst != r.nodeAddr["pe1"] ||
		f.UDP.DstPort != wire.DefaultCodePoints().FCNPort || f.FCN.Level < 1 || f.FCN.Level > 7 {
		t.Errorf("message %+v from %v to %v, want label %#x (%v) from t1 to pe1, level 1..7", f.FCN, src, dst, label, ok)
	}
	// The packet's header bytes are its transport part, as for every
	// packet: the message after the UDP header.
	if want := frames[0][wire.EthernetLen+wire.IPv6Len+wire.UDPLen:][:wire.FCNMessageLen]; !bytes.Equal(hdrs[0], want) {
		t.Errorf("Hdr %x, want the message %x", hdrs[0], want)
	}
}

type localFunc func(*netsim.Switch, *netsim.Packet)

func (f localFunc) HandleLocal(s *netsim.Switch, p *netsim.Packet) { f(s, p) }

// TestUnknownLabel: an FCN message whose label no mapping holds is
// counted and dropped.
func TestUnknownLabel(t *testing.T) {
	r := newRig(t, rigOpts{cfg: enabled()})
	r.sim.Run(engine.Millisecond)
	before := r.pe.Counters()
	var buf [netsim.FrameCap]byte
	a := wire.Addressing{SrcIP: r.nodeAddr["t1"], DstIP: r.nodeAddr["pe1"]}
	n, err := (&wire.Encoder{}).FCN(buf[:], &a, &wire.FCNMessage{FlowLabel: 0xABCDE, Level: 3})
	if err != nil {
		t.Fatal(err)
	}
	p := r.net.NewPacket()
	if err := r.net.SetFrame(p, buf[:n]); err != nil {
		t.Fatal(err)
	}
	r.pe.HandleLocal(r.pe1, p)
	r.net.FreePacket(p)
	if c := r.pe.Counters(); c.UnknownFlowLabel != before.UnknownFlowLabel+1 || c.CNPTranslated != before.CNPTranslated {
		t.Errorf("counters %+v, before %+v", c, before)
	}
}

// TestMappingAging: §4.1, a mapping whose flow sent nothing for the aging
// timeout is removed and its label released.
func TestMappingAging(t *testing.T) {
	cfg := enabled()
	cfg.AgingTimeout = engine.Millisecond
	r := newRig(t, rigOpts{cfg: cfg, flowSize: 100_000})
	r.sim.Run(20 * engine.Millisecond)
	if c := r.pe.Counters(); c.MappingsCreated != 2 || c.MappingsAged != 2 || len(r.pe.Mappings()) != 0 {
		t.Errorf("counters %+v, %d mappings left; want both created and aged", c, len(r.pe.Mappings()))
	}
}

// TestPEOwnCongestion: §4.2, an ingress PE that congests itself sends the
// standard CNP directly.
func TestPEOwnCongestion(t *testing.T) {
	r := newRig(t, rigOpts{cfg: enabled(), tunnel: 10e9, wanRate: 100e9})
	r.sim.Run(3 * engine.Millisecond)
	if c := r.pe.Counters(); c.DirectCNPs == 0 || c.FCNReceived != 0 {
		t.Errorf("pe %+v: want direct CNPs and no FCN (the WAN is not congested)", c)
	}
}

// TestLevel: the node's level maps onto FCN's 1..7.
func TestLevel(t *testing.T) {
	got := []uint8{Level(0), Level(36), Level(37), Level(170), Level(255)}
	if diff := cmp.Diff([]uint8{1, 1, 2, 5, 7}, got); diff != "" {
		t.Errorf("levels (-want +got):\n%s", diff)
	}
}

// TestValidate: every invalid key is refused with an error naming it.
func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		desc string
		mod  func(*Config)
		key  string
	}{
		{"mappings", func(c *Config) { c.MaxMappings = 0 }, "max-mappings"},
		{"too many mappings", func(c *Config) { c.MaxMappings = 1 << 20 }, "max-mappings"},
		{"aging", func(c *Config) { c.AgingTimeout = 0 }, "aging-timeout"},
		{"kmax", func(c *Config) { c.KMaxBytes = 0 }, "kmax"},
		{"interval", func(c *Config) { c.MinCNPInterval = 0 }, "min-cnp-interval"},
		{"port", func(c *Config) { c.PortCNPRatePerSec = 0 }, "port-cnp-rate"},
		{"flows", func(c *Config) { c.MaxFlowsPerTrigger = 0 }, "max-flows-per-trigger"},
		{"dscp", func(c *Config) { c.CNPDSCP = 64 }, "cnp-dscp"},
		{"prio", func(c *Config) { c.CNPPrio = 8 }, "cnp-prio"},
		{"port number", func(c *Config) { c.CodePoints.FCNPort = 0 }, "fcn-udp-port"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			c := DefaultConfig()
			tt.mod(&c)
			if err := c.Validate(); !errors.Is(err, ErrConfig) || !strings.HasPrefix(err.Error(), tt.key+":") {
				t.Errorf("Validate: %v, want ErrConfig starting with %q", err, tt.key+":")
			}
		})
	}
}

// TestControlledDomain: §6, the PE takes FCN messages only from inside its
// domain; outside, they are counted and dropped.
func TestControlledDomain(t *testing.T) {
	cfg := enabled()
	cfg.Domain = []netip.Prefix{netip.MustParsePrefix("2001:db8:9::/48")}
	r := newRig(t, rigOpts{cfg: cfg})
	r.sim.Run(4 * engine.Millisecond)
	if c := r.pe.Counters(); c.Untrusted == 0 || c.FCNReceived != 0 || c.CNPTranslated != 0 {
		t.Errorf("pe %+v: want every message from t1 dropped as untrusted", c)
	}
}

// attachLongHaul attaches a Long-haul CNP node (ICMPv6) to pe1, with no
// FCN role: what a function wrapping it (WrapPE, NewFunction) starts
// from. It returns the node and its configuration.
func attachLongHaul(t *testing.T, r *rig) (*lhcnp.Node, lhcnp.Config) {
	t.Helper()
	lc := lhcnp.DefaultConfig()
	lc.Enabled, lc.FormatICMPv6 = true, true
	lh, err := lhcnp.Attach(r.net, r.pe1, lc)
	if err != nil {
		t.Fatal(err)
	}
	return lh, lc
}

// TestWrapPE: a Long-haul CNP node wrapped as an ingress PE keeps its own
// mode until Apply enables FCN (then it learns mappings and translates),
// and a refused Apply changes nothing.
func TestWrapPE(t *testing.T) {
	r := newRig(t, rigOpts{})
	lh, lc := attachLongHaul(t, r)
	pe := WrapPE(lh, []*netsim.Port{r.pe1.Ports()[2]})
	tr, err := AttachTransit(r.net, r.t1, *enabled())
	if err != nil {
		t.Fatal(err)
	}
	r.sim.Run(2 * engine.Millisecond)
	if len(pe.Mappings()) != 0 {
		t.Fatalf("a disabled PE learned %d mappings", len(pe.Mappings()))
	}
	bad := *enabled()
	bad.MaxMappings = 0
	if err := pe.Apply(bad, lc); !errors.Is(err, ErrConfig) || pe.Config().Enabled {
		t.Fatalf("Apply(bad) = %v, enabled %v", err, pe.Config().Enabled)
	}
	if err := pe.Apply(*enabled(), lc); err != nil {
		t.Fatal(err)
	}
	r.sim.Run(6 * engine.Millisecond)
	if c := pe.Counters(); c.MappingsCreated != 2 || c.CNPTranslated == 0 || tr.Counters().FCNSent == 0 {
		t.Errorf("pe %+v, transit %+v: want mappings and translated CNPs", c, tr.Counters())
	}
}

// TestSourceAddress: the configured source address (the switch's
// loopback, YANG source-address) is the source of the transit node's FCN
// messages and of the PE's CNPs, and the detection nodes are given it;
// the switches' addresses were used whatever was configured before (this
// test failed then). It lies in the PE's domain, which still trusts the
// messages.
func TestSourceAddress(t *testing.T) {
	cfg := enabled()
	cfg.SourceAddress = netip.MustParseAddr("2001:db8:f::99")
	r := newRig(t, rigOpts{cfg: cfg})
	var fcnFrom []netip.Addr
	r.pe1.SetLocalHandler(localFunc(func(_ *netsim.Switch, p *netsim.Packet) {
		var f wire.Frame
		if err := (&wire.Decoder{}).Decode(p.Frame(), &f); err == nil {
			src, _ := f.IPAddrs()
			fcnFrom = append(fcnFrom, src)
		}
		r.pe.HandleLocal(r.pe1, p)
	}))
	r.sim.Run(4 * engine.Millisecond)
	if len(fcnFrom) == 0 || r.pe.Counters().CNPTranslated == 0 || r.pe.Counters().Untrusted != 0 {
		t.Fatalf("%d FCN messages, PE %+v: want messages, trusted and translated", len(fcnFrom), r.pe.Counters())
	}
	for _, a := range fcnFrom {
		if a != cfg.SourceAddress {
			t.Errorf("FCN message from %v, want %v", a, cfg.SourceAddress)
			break
		}
	}
	fromSwitch := 0
	for _, f := range r.cnps {
		switch src, _ := f.IPAddrs(); src {
		case cfg.SourceAddress:
			fromSwitch++
		case r.nodeAddr["pe1"], r.nodeAddr["t1"]:
			t.Errorf("CNP from the switch's address %v, want %v", src, cfg.SourceAddress)
			return
		}
	}
	if fromSwitch == 0 {
		t.Errorf("no CNP from %v reached a sender", cfg.SourceAddress)
	}
	for _, lh := range []*lhcnp.Node{r.pe.lh, r.tr.lh} {
		if got := lh.Config().SourceAddress; got != cfg.SourceAddress {
			t.Errorf("detection node of %s: source address %v, want %v", lh.Switch().Name(), got, cfg.SourceAddress)
		}
	}
}

// TestFlowTable: the configured flow table is the detection nodes'; here
// one entry, so a PE congested by two flows holds one of them. They ran
// lhcnp's default table whatever was configured before (this test failed
// then).
func TestFlowTable(t *testing.T) {
	cfg := enabled()
	cfg.FlowTable.MaxEntries, cfg.FlowTable.IdleTimeout = 1, 5*engine.Second
	r := newRig(t, rigOpts{cfg: cfg})
	r.sim.Run(2 * engine.Millisecond)
	for _, lh := range []*lhcnp.Node{r.pe.lh, r.tr.lh} {
		if got := lh.Config().FlowTable; got != cfg.FlowTable {
			t.Errorf("detection node of %s: flow table %+v, want %+v", lh.Switch().Name(), got, cfg.FlowTable)
		}
	}
	if st := r.pe.lh.State(true); len(st.FlowTable.Flows) != 1 {
		t.Errorf("PE's flow table holds %d flows, want 1 (max-entries)", len(st.FlowTable.Flows))
	}
}

// switchSeen is what a role's creation changes on pe1 and what the
// function f shows.
type switchSeen struct {
	Observer, Local, Rewrite string
	Pending                  int
	State                    string
}

func seeSwitch(r *rig, f mechanism.Function) switchSeen {
	return switchSeen{Observer: fmt.Sprintf("%T", r.pe1.Ports()[0].Observer()), Local: fmt.Sprintf("%T", r.pe1.LocalHandler()),
		Rewrite: fmt.Sprintf("%T", r.pe1.Forwarder(netsim.StageRewrite)), Pending: r.sim.Pending(), State: fmt.Sprintf("%+v", f.State())}
}

// TestRefusedRoleCreatesNothing: a Configure that turns the ingress PE
// on for the first time with a configuration the node refuses (a flow
// table of no entry: FCN's own Validate does not look at it) fails with
// the switch as it was: no PE wrapped around the node (the ports'
// observer, the rewrite stage; the local handler goes with them), no
// aging timer, no role in the state. The PE was created before the node refused, and
// stayed (this test failed then).
func TestRefusedRoleCreatesNothing(t *testing.T) {
	r := newRig(t, rigOpts{})
	lh, lc := attachLongHaul(t, r)
	f := NewFunction(lh)
	r.sim.Run(100 * engine.Microsecond)
	look := func() switchSeen { return seeSwitch(r, f) }
	before := look()
	bad := *enabled()
	bad.FlowTable.MaxEntries = 0
	if err := f.Validate(Roles{PE: bad, Transit: DefaultConfig()}); err != nil {
		t.Fatalf("Validate refused what the node refuses: %v", err)
	}
	if err := f.Configure(Roles{PE: bad, Transit: DefaultConfig()}, lc); err == nil {
		t.Fatal("Configure took a flow table of no entry")
	}
	if diff := cmp.Diff(before, look()); diff != "" {
		t.Errorf("refused (-before +after):\n%s", diff)
	}
}

// TestHeldRoleSetBack: a role Configure creates between Hold and Settle
// and that is off at Settle (a Set set back) is undone: the PE's local
// handler and rewrite stage are what they were, no aging timer is armed,
// and neither role is in the state; a role on at Settle stays, its aging
// armed once; and a PE's aging period changed and set back while held
// re-arms nothing. With Hold and Settle doing nothing (before Function
// was a mechanism.Deferrer) it fails: the PE stays on the switch (local
// handler, rewrite stage, in the state) with its aging timer.
func TestHeldRoleSetBack(t *testing.T) {
	r := newRig(t, rigOpts{})
	lh, lc := attachLongHaul(t, r)
	var d mechanism.Deferrer = NewFunction(lh)
	r.sim.Run(100 * engine.Microsecond)
	look := func() switchSeen { return seeSwitch(r, d) }
	off := Roles{PE: DefaultConfig(), Transit: DefaultConfig()}
	configure := func(ro Roles) {
		t.Helper()
		if err := d.Configure(ro, lc); err != nil {
			t.Fatal(err)
		}
	}
	before := look()
	for _, on := range []Roles{{PE: *enabled(), Transit: DefaultConfig()}, {PE: DefaultConfig(), Transit: *enabled()}} {
		d.Hold()
		configure(on)
		configure(off)
		r.pe1.SetObserver(lh) // the caller's: the node's mode is
		d.Settle()
		if diff := cmp.Diff(before, look()); diff != "" {
			t.Errorf("role created and set back (-before +after):\n%s", diff)
		}
	}
	pe := Roles{PE: *enabled(), Transit: DefaultConfig()}
	d.Hold()
	configure(pe)
	d.Settle()
	kept := look()
	if kept.Local != "*fcn.PE" || kept.Pending != before.Pending+1 {
		t.Errorf("PE kept: %+v, want the PE the local handler and its aging timer pending", kept)
	}
	longer := pe
	longer.PE.AgingTimeout *= 2
	d.Hold()
	configure(longer)
	configure(pe)
	d.Settle()
	if diff := cmp.Diff(kept, look()); diff != "" {
		t.Errorf("aging period changed and set back (-before +after):\n%s", diff)
	}
}
