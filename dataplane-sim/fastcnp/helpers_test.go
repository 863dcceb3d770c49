package fastcnp

import (
	"net/netip"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/internal/mechtest"
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

func newRig(t testing.TB, o rigOpts) *rig {
	t.Helper()
	hc := netsim.DefaultHostConfig()
	hc.DCQCN.Enabled = o.dcqcn
	addr := func(a netip.Addr, v4 string) string {
		if o.v4 {
			return v4
		}
		return a.String()
	}
	ecn := netsim.ECNConfig{Enabled: true, KMinBytes: 20_000, KMaxBytes: 200_000, PMax: 0.2}
	sc := netsim.SwitchConfig{Port: netsim.PortConfig{ECN: netsim.SameECN(ecn)}}
	link := func(a, b string, d engine.Time) mechtest.Link {
		return mechtest.Link{A: a, B: b, RateBitsPerSec: 10e9, Delay: d}
	}
	flow := func(name, from, to string, src, dst uint32) mechtest.Flow {
		return mechtest.Flow{From: from, To: to, Config: netsim.FlowConfig{Name: name, SrcQPN: src, DstQPN: dst}}
	}
	n := mechtest.Build(t, mechtest.Spec{
		Host: hc,
		Hosts: []mechtest.Node{{Name: "s1", Addr: addr(addrS1, "10.0.0.1")}, {Name: "s2", Addr: addr(addrS2, "10.0.0.2")},
			{Name: "r1", Addr: addr(addrR1, "10.0.4.1")}, {Name: "r2", Addr: addr(addrR2, "10.0.4.2")}},
		Switches: []mechtest.Node{{Name: "n1", Addr: addr(addrN1, "10.0.1.1"), Switch: sc}, {Name: "n2", Addr: addr(addrN2, "10.0.2.1"), Switch: sc}},
		Links: []mechtest.Link{link("s1", "n1", engine.Microsecond), link("s2", "n1", engine.Microsecond),
			link("n1", "n2", 20*engine.Microsecond), link("n2", "r1", engine.Microsecond), link("n2", "r2", engine.Microsecond)},
		Flows: []mechtest.Flow{flow("a", "s1", "r1", 100, 200), flow("b", "s1", "r2", 101, 200), flow("c", "s2", "r1", 102, 201)},
	})
	r := &rig{sim: n.Sim, net: n.Net, s1: n.Hosts["s1"], s2: n.Hosts["s2"], r1: n.Hosts["r1"], r2: n.Hosts["r2"],
		n1: n.Switches["n1"], out: n.Ports[[2]string{"n1", "n2"}], a: n.Flows["a"], b: n.Flows["b"], c: n.Flows["c"],
		recv: map[string]*Receiver{}}
	if o.cfg != nil {
		var err error
		r.node, err = Attach(r.net, r.n1, *o.cfg, lhcnp.WithEvents(func(e lhcnp.Event) { r.events = append(r.events, e) }))
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range []*netsim.Host{r.s1, r.s2} {
		rv, err := NewReceiver(r.net, o.rc)
		if err != nil {
			t.Fatal(err)
		}
		r.recv[h.Name()] = rv
	}
	// Every Fast CNP a sender gets is recorded (frame, raw bytes, IOAM
	// data), then the sender's receiver acts on it.
	isFast := func(p *netsim.Packet, f *wire.Frame) bool { return mechtest.IsCNP(p, f) && f.HasFastCNP }
	n.TapHosts(func(h *netsim.Host, f *wire.Frame, raw []byte) {
		rec := received{at: r.sim.Now(), host: h.Name(), frame: *f, raw: append([]byte(nil), raw...), ioam: append([]byte(nil), f.FastCNP.IOAMData...)}
		rec.frame.FastCNP.IOAMData = nil
		r.got = append(r.got, rec)
	}, isFast, func(h *netsim.Host) netsim.ControlHandler { return r.recv[h.Name()] }, "s1", "s2")
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
