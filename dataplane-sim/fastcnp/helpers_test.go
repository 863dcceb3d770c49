package fastcnp

import (
	"net/netip"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// rig is the test network: two senders share n1's 10 Gb/s port towards n2,
// behind which two receivers sit.
//
//	s1 --10G-- n1 --10G, 20µs-- n2 --10G-- r1
//	s2 --10G--/                   \--10G-- r2
//
// Flows: a s1→r1 QP 100→200, b s1→r2 QP 101→200 (the same destination QP
// on another receiver), c s2→r1 QP 102→201. s1 alone offers 10 Gb/s, s2
// another 10: n1's port to n2 congests.
type rig struct {
	sim            *engine.Sim
	net            *netsim.Network
	s1, s2, r1, r2 *netsim.Host
	n1             *netsim.Switch
	out            *netsim.Port // n1 -> n2
	a, b, c        *netsim.Flow
	node           *Node
	recv           map[string]*Receiver
	got            []received // Fast CNPs the senders got, decoded
	events         []lhcnp.Event
}

type received struct {
	at    engine.Time
	host  string
	frame wire.Frame
	raw   []byte
	ioam  []byte
}

var (
	addrS1 = netip.MustParseAddr("2001:db8::1")
	addrS2 = netip.MustParseAddr("2001:db8::2")
	addrR1 = netip.MustParseAddr("2001:db8:4::1")
	addrR2 = netip.MustParseAddr("2001:db8:4::2")
	addrN1 = netip.MustParseAddr("2001:db8:1::1")
	addrN2 = netip.MustParseAddr("2001:db8:2::1")
	loop   = netip.MustParseAddr("2001:db8:ff::1")
)

type rigOpts struct {
	v4    bool
	cfg   *Config // nil: no node
	rc    ReceiverConfig
	dcqcn bool
}

// tap decodes what reaches a sender, then lets the receiver act.
type tap struct {
	r    *rig
	name string
	dec  wire.Decoder
	in   *Receiver
}

func (t *tap) HandleControl(h *netsim.Host, p *netsim.Packet) bool {
	if fr := p.Frame(); fr != nil && p.Kind == netsim.KindRoCE && p.Opcode() == wire.OpCNP {
		var f wire.Frame
		if err := t.dec.Decode(fr, &f); err == nil && f.HasFastCNP {
			rec := received{at: t.r.sim.Now(), host: t.name, frame: f, raw: append([]byte(nil), fr...), ioam: append([]byte(nil), f.FastCNP.IOAMData...)}
			rec.frame.FastCNP.IOAMData = nil
			t.r.got = append(t.r.got, rec)
		}
	}
	return t.in.HandleControl(h, p)
}

func newRig(t testing.TB, o rigOpts) *rig {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	r := &rig{sim: engine.New(engine.WithSeed(1)), recv: map[string]*Receiver{}}
	r.net = netsim.New(r.sim)
	hc := netsim.DefaultHostConfig()
	hc.DCQCN.Enabled = o.dcqcn
	addr := func(a netip.Addr, v4 string) netip.Addr {
		if o.v4 {
			return netip.MustParseAddr(v4)
		}
		return a
	}
	var err error
	r.s1, err = r.net.AddHost("s1", addr(addrS1, "10.0.0.1"), hc)
	must(err)
	r.s2, err = r.net.AddHost("s2", addr(addrS2, "10.0.0.2"), hc)
	must(err)
	r.r1, err = r.net.AddHost("r1", addr(addrR1, "10.0.4.1"), hc)
	must(err)
	r.r2, err = r.net.AddHost("r2", addr(addrR2, "10.0.4.2"), hc)
	must(err)
	ecn := netsim.ECNConfig{Enabled: true, KMinBytes: 20_000, KMaxBytes: 200_000, PMax: 0.2}
	sc := netsim.SwitchConfig{Port: netsim.PortConfig{ECN: netsim.SameECN(ecn)}}
	r.n1, err = r.net.AddSwitch("n1", addr(addrN1, "10.0.1.1"), sc)
	must(err)
	n2, err := r.net.AddSwitch("n2", addr(addrN2, "10.0.2.1"), sc)
	must(err)
	lc := netsim.LinkConfig{RateBps: 10e9, Delay: engine.Microsecond}
	for _, h := range []*netsim.Host{r.s1, r.s2} {
		_, _, err = r.net.Connect(h, r.n1, lc)
		must(err)
	}
	r.out, _, err = r.net.Connect(r.n1, n2, netsim.LinkConfig{RateBps: 10e9, Delay: 20 * engine.Microsecond})
	must(err)
	for _, h := range []*netsim.Host{r.r1, r.r2} {
		_, _, err = r.net.Connect(n2, h, lc)
		must(err)
	}
	r.net.ComputeRoutes()
	r.a, err = r.net.AddFlow(netsim.FlowConfig{Name: "a", Src: r.s1, Dst: r.r1, SrcQPN: 100, DstQPN: 200})
	must(err)
	r.b, err = r.net.AddFlow(netsim.FlowConfig{Name: "b", Src: r.s1, Dst: r.r2, SrcQPN: 101, DstQPN: 200})
	must(err)
	r.c, err = r.net.AddFlow(netsim.FlowConfig{Name: "c", Src: r.s2, Dst: r.r1, SrcQPN: 102, DstQPN: 201})
	must(err)
	if o.cfg != nil {
		r.node, err = Attach(r.net, r.n1, *o.cfg, lhcnp.WithEvents(func(e lhcnp.Event) { r.events = append(r.events, e) }))
		must(err)
	}
	for _, h := range []*netsim.Host{r.s1, r.s2} {
		rv, err := NewReceiver(r.net, o.rc)
		must(err)
		r.recv[h.Name()] = rv
		h.SetControlHandler(&tap{r: r, name: h.Name(), in: rv})
	}
	return r
}

// enabled is the default configuration, on, sending from the loopback.
func enabled() *Config {
	c := DefaultConfig()
	c.Enabled = true
	c.SourceAddress = loop
	c.Domain = []netip.Prefix{netip.MustParsePrefix("2001:db8::/32"), netip.MustParsePrefix("10.0.0.0/8")}
	return &c
}

// trusting accepts Fast CNP from n1's loopback.
func trusting() ReceiverConfig {
	return ReceiverConfig{Enabled: true, AccessList: []netip.Prefix{netip.PrefixFrom(loop, 128)}}
}

func (r *rig) sent() int64 {
	if r.node == nil {
		return 0
	}
	return r.node.Counters().Sent
}
