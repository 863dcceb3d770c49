package rateadvice

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/internal/mechtest"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// rig: two senders share n1's 10 Gb/s port towards r.
//
//	s1 --25G-- n1 --10G, 20µs-- r
//	s2 --25G--/
type rig struct {
	sim    *engine.Sim
	net    *netsim.Network
	s1, s2 *netsim.Host
	n1     *netsim.Switch
	out    *netsim.Port
	a, b   *netsim.Flow
	node   *Node
	recv   map[string]*Receiver
	got    []wire.Frame // advice the senders got
}

var addrN1 = netip.MustParseAddr("10.0.1.1")

type rigOpts struct {
	cfg      *Config
	capable  [2]bool
	ecn      bool
	dcqcn    bool
	noAccess bool
}

func newRig(t *testing.T, o rigOpts) *rig {
	t.Helper()
	hc := netsim.DefaultHostConfig()
	hc.DCQCN.Enabled = o.dcqcn
	sc := netsim.SwitchConfig{}
	if o.ecn {
		sc.Port.ECN = netsim.SameECN(netsim.ECNConfig{Enabled: true, KMinBytes: 20_000, KMaxBytes: 200_000, PMax: 0.2})
	}
	n := mechtest.Build(t, mechtest.Spec{
		Host:     hc,
		Hosts:    []mechtest.Node{{Name: "s1", Addr: "10.0.0.1"}, {Name: "s2", Addr: "10.0.0.2"}, {Name: "r", Addr: "10.0.4.1"}},
		Switches: []mechtest.Node{{Name: "n1", Addr: addrN1.String(), Switch: sc}},
		Links: []mechtest.Link{{A: "s1", B: "n1", RateBitsPerSec: 25e9, Delay: engine.Microsecond},
			{A: "s2", B: "n1", RateBitsPerSec: 25e9, Delay: engine.Microsecond},
			{A: "n1", B: "r", RateBitsPerSec: 10e9, Delay: 20 * engine.Microsecond}},
		Flows: []mechtest.Flow{{From: "s1", To: "r", Config: netsim.FlowConfig{Name: "a", SrcQPN: 100, DstQPN: 200}},
			{From: "s2", To: "r", Config: netsim.FlowConfig{Name: "b", SrcQPN: 101, DstQPN: 201}}},
	})
	r := &rig{sim: n.Sim, net: n.Net, s1: n.Hosts["s1"], s2: n.Hosts["s2"], n1: n.Switches["n1"],
		out: n.Ports[[2]string{"n1", "r"}], a: n.Flows["a"], b: n.Flows["b"], recv: map[string]*Receiver{}}
	if o.cfg != nil {
		var err error
		if r.node, err = New(r.net, r.n1, *o.cfg); err != nil {
			t.Fatal(err)
		}
		r.n1.SetObserver(r.node)
	}
	acl := []netip.Prefix{netip.PrefixFrom(addrN1, 32)}
	if o.noAccess {
		acl = nil
	}
	for i, h := range []*netsim.Host{r.s1, r.s2} {
		rv, err := NewReceiver(h, ReceiverConfig{Capable: o.capable[i], AccessList: acl, CodePoints: wire.DefaultCodePoints()})
		if err != nil {
			t.Fatal(err)
		}
		r.recv[h.Name()] = rv
	}
	// Every Rate Advice a sender gets is recorded, then its receiver acts.
	isAdvice := func(_ *netsim.Packet, f *wire.Frame) bool { return f.Kind == wire.KindRateAdvice }
	n.TapHosts(func(_ *netsim.Host, f *wire.Frame, _ []byte) {
		g := *f
		g.Payload, g.Pad, g.Trailer = nil, nil, nil
		r.got = append(r.got, g)
	}, isAdvice, func(h *netsim.Host) netsim.ControlHandler { return r.recv[h.Name()] }, "s1", "s2")
	return r
}

func enabled() *Config {
	c := DefaultConfig()
	c.Enabled = true
	return &c
}

// TestDisabledByDefault: the YANG default (rate-advice-enabled false) is
// the node's: nothing is advised.
func TestDisabledByDefault(t *testing.T) {
	cfg := DefaultConfig()
	r := newRig(t, rigOpts{cfg: &cfg, capable: [2]bool{true, true}})
	r.sim.Run(2 * engine.Millisecond)
	if cfg.Enabled || r.node.Counters().Sent != 0 || len(r.got) != 0 {
		t.Errorf("enabled %v, sent %d", cfg.Enabled, r.node.Counters().Sent)
	}
}

// TestMessageFormat: §5, the message is a BTH with the Rate Advice opcode
// (0xC0, not the draft's example 0x1D, which is RC ATOMIC_WRITE) whose
// destination QP is the sender's, then Rate (Mb/s), Version 1,
// Destination QP ID (the sender's QP, copied from what the flow's data
// name) and Source QP ID (the receiver's), from the switch to the source.
func TestMessageFormat(t *testing.T) {
	r := newRig(t, rigOpts{cfg: enabled(), capable: [2]bool{true, true}})
	r.sim.Run(2 * engine.Millisecond)
	if len(r.got) == 0 {
		t.Fatal("no advice received")
	}
	type view struct {
		Opcode                wire.Opcode
		BTHDestQP             uint32
		Version, DestQP, SrcQ uint32
		Src                   string
	}
	seen := map[uint32]bool{}
	for _, f := range r.got {
		src, _ := f.IPAddrs()
		want := view{0xC0, f.RateAdvice.DestQP, 1, f.RateAdvice.DestQP, f.RateAdvice.DestQP + 100, addrN1.String()}
		got := view{f.BTH.Opcode, f.BTH.DestQP, f.RateAdvice.Version, f.RateAdvice.DestQP, f.RateAdvice.SrcQP, src.String()}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("advice (-want +got):\n%s", diff)
		}
		seen[f.RateAdvice.DestQP] = true
	}
	if !seen[100] || !seen[101] {
		t.Errorf("advice for QPs %v, want 100 and 101", seen)
	}
}

// TestQueueBasedFairShare: §4.2, with two capable flows on a 10 Gb/s port
// the advice is their fair share (at most 5 Gb/s, less while a queue
// stands), the senders take it as a ceiling, and the queue stays bounded.
func TestQueueBasedFairShare(t *testing.T) {
	r := newRig(t, rigOpts{cfg: enabled(), capable: [2]bool{true, true}})
	r.sim.Run(5 * engine.Millisecond)
	for _, f := range r.got {
		if f.RateAdvice.RateMbps > 10_000 {
			t.Errorf("advice %d Mb/s above the port rate", f.RateAdvice.RateMbps)
		}
	}
	last := r.got[len(r.got)-1].RateAdvice.RateMbps
	if last < 2500 || last > 5000 {
		t.Errorf("last advice %d Mb/s, want the fair share of 10 Gb/s between two (2500..5000)", last)
	}
	for _, q := range []*netsim.QP{r.a.Sender, r.b.Sender} {
		if c := q.CeilingBitsPerSec(); c == 0 || c > 5e9 || q.RateBitsPerSec() > c {
			t.Errorf("QP %d: ceiling %d, rate %d; want a ceiling of at most 5 Gb/s and the rate under it", q.QPN, c, q.RateBitsPerSec())
		}
	}
	if peak := r.out.Stats().PeakQueueBytes; peak > 5_000_000 {
		t.Errorf("peak queue %d bytes: the advice did not hold the senders", peak)
	}
	if c := r.node.Counters(); c.QueueAdvice == 0 || c.PolicyAdvice != 0 || c.Sent != c.QueueAdvice {
		t.Errorf("counters %+v", c)
	}
}

// TestPolicy: §4.1, a configured policy gives its rate to the flows it
// matches (first by precedence), the others get the fair share; with
// QueueBased off they get nothing.
func TestPolicy(t *testing.T) {
	cfg := enabled()
	cfg.Policies = []Policy{
		{Name: "late", Precedence: 200, Src: netip.MustParsePrefix("10.0.0.0/8"), RateMbps: 9000},
		{Name: "s1", Precedence: 10, Src: netip.MustParsePrefix("10.0.0.1/32"), RateMbps: 2000},
	}
	r := newRig(t, rigOpts{cfg: cfg, capable: [2]bool{true, true}})
	r.sim.Run(3 * engine.Millisecond)
	st := r.node.State()
	got := map[uint32]string{}
	for _, f := range st.Flows {
		got[f.SrcQP] = f.Basis.String() + "/" + f.Policy
	}
	if diff := cmp.Diff(map[uint32]string{100: "policy/s1", 101: "policy/late"}, got); diff != "" {
		t.Errorf("bases (-want +got):\n%s", diff)
	}
	if c := r.a.Sender.CeilingBitsPerSec(); c != 2e9 {
		t.Errorf("s1's ceiling %d, want the policy's 2 Gb/s", c)
	}

	cfg.Policies = cfg.Policies[1:]
	cfg.QueueBased = false
	r = newRig(t, rigOpts{cfg: cfg, capable: [2]bool{true, true}})
	r.sim.Run(3 * engine.Millisecond)
	if c := r.b.Sender.CeilingBitsPerSec(); c != 0 {
		t.Errorf("s2 got a ceiling of %d without a policy or queue-based advice", c)
	}
	if c := r.node.Counters(); c.PolicyAdvice == 0 || c.QueueAdvice != 0 {
		t.Errorf("counters %+v, want policy advice only", c)
	}
}

// TestCapabilityPerQP: §4, only flows whose packets announce the
// capability are advised; an RNIC that is not capable drops advice.
func TestCapabilityPerQP(t *testing.T) {
	r := newRig(t, rigOpts{cfg: enabled(), capable: [2]bool{true, false}})
	r.sim.Run(3 * engine.Millisecond)
	for _, f := range r.got {
		if f.RateAdvice.DestQP != 100 {
			t.Errorf("advice to QP %d, which did not announce the capability", f.RateAdvice.DestQP)
		}
	}
	if r.node.Counters().NotCapable == 0 || r.b.Sender.CeilingBitsPerSec() != 0 {
		t.Errorf("not-capable %d, s2 ceiling %d", r.node.Counters().NotCapable, r.b.Sender.CeilingBitsPerSec())
	}
	// A capable QP on a host whose RNIC is told not to apply advice.
	r = newRig(t, rigOpts{cfg: enabled(), capable: [2]bool{true, true}})
	rv, err := NewReceiver(r.s2, ReceiverConfig{AccessList: []netip.Prefix{netip.PrefixFrom(addrN1, 32)}, CodePoints: wire.DefaultCodePoints()})
	if err != nil {
		t.Fatal(err)
	}
	r.s2.SetControlHandler(rv)
	r.sim.Run(3 * engine.Millisecond)
	if rv.Counters().NotCapable == 0 || r.b.Sender.CeilingBitsPerSec() != 0 {
		t.Errorf("receiver %+v, ceiling %d: want advice dropped", rv.Counters(), r.b.Sender.CeilingBitsPerSec())
	}
}

// TestCapabilityForLaterFlows: a capable RNIC announces the capability on
// the QPs of flows added after its receiver was set up (a lab adds flows
// while it runs), and they are advised; a flow added later on the RNIC that
// is not capable is not.
func TestCapabilityForLaterFlows(t *testing.T) {
	r := newRig(t, rigOpts{cfg: enabled(), capable: [2]bool{true, false}})
	var late [2]*netsim.Flow
	r.sim.AtFunc(engine.Millisecond, func() {
		for i, h := range []*netsim.Host{r.s1, r.s2} {
			f, err := r.net.AddFlow(netsim.FlowConfig{Name: "late-" + h.Name(), Src: h, Dst: r.net.NodeByName("r").(*netsim.Host),
				SrcQPN: 110 + uint32(i), DstQPN: 210 + uint32(i), Start: r.sim.Now()})
			if err != nil {
				t.Error(err)
				return
			}
			late[i] = f
		}
	})
	r.sim.Run(4 * engine.Millisecond)
	if late[0] == nil {
		t.Fatal("no flow added")
	}
	if got, want := r.s1.ReservedBits(), CapabilityBit; got != want {
		t.Errorf("s1's reserved bits %#x, want the capability bit %#x", got, want)
	}
	advised := map[uint32]int{}
	for _, f := range r.got {
		advised[f.RateAdvice.DestQP]++
	}
	if advised[110] == 0 || late[0].Sender.CeilingBitsPerSec() == 0 {
		t.Errorf("advice by QP %v, late flow's ceiling %d: want QP 110, added after the receiver, advised",
			advised, late[0].Sender.CeilingBitsPerSec())
	}
	if advised[111] != 0 || late[1].Sender.CeilingBitsPerSec() != 0 {
		t.Errorf("advice by QP %v, ceiling %d: QP 111's RNIC is not capable", advised, late[1].Sender.CeilingBitsPerSec())
	}
}

// TestPortSentMonotonic: the node counts its messages per egress port and
// queue (YANG rate-advice-sent); the count is the node's total here (one
// port, one queue), and it stays when the flows go idle and are forgotten,
// which takes their per-flow counts away.
func TestPortSentMonotonic(t *testing.T) {
	cfg := enabled()
	cfg.IdleTimeout = 2 * engine.Millisecond
	r := newRig(t, rigOpts{cfg: cfg, capable: [2]bool{true, true}})
	r.sim.Run(3 * engine.Millisecond)
	queueSent := func() (st State, out int64, others int64) {
		st = r.node.State()
		for _, p := range st.Ports {
			for q, n := range p.Queues {
				if p.Port == r.out.Name() && q == 0 {
					out = n
				} else {
					others += n
				}
			}
		}
		return st, out, others
	}
	st, sent, others := queueSent()
	if sent == 0 || sent != st.Counters.Sent || others != 0 || len(st.Ports) != len(r.n1.Ports()) {
		t.Fatalf("queue 0 of %s: %d sent, elsewhere %d, node %d, %d ports: want all the node's on that queue",
			r.out.Name(), sent, others, st.Counters.Sent, len(st.Ports))
	}
	var perFlow int64
	for _, f := range st.Flows {
		perFlow += f.Sent
	}
	if perFlow != sent {
		t.Errorf("per-flow counts sum to %d, the queue's to %d", perFlow, sent)
	}
	r.a.Sender.AdminStop()
	r.b.Sender.AdminStop()
	r.sim.Run(8 * engine.Millisecond)
	st, after, _ := queueSent()
	if len(st.Flows) != 0 {
		t.Fatalf("%d flows still known after the idle timeout", len(st.Flows))
	}
	if after != st.Counters.Sent || after < sent {
		t.Errorf("after the flows were forgotten: queue count %d, node %d, before %d: want it kept", after, st.Counters.Sent, sent)
	}
}

// TestCNPCutsBelowAdvice: §3, a sender gets both CNPs and advice and
// gives CNP priority: with ECN marking and DCQCN on, the rate falls below
// the advised ceiling.
func TestCNPCutsBelowAdvice(t *testing.T) {
	cfg := enabled()
	cfg.Policies = []Policy{{Name: "all", RateMbps: 8000}}
	r := newRig(t, rigOpts{cfg: cfg, capable: [2]bool{true, true}, ecn: true, dcqcn: true})
	r.sim.Run(5 * engine.Millisecond)
	for _, q := range []*netsim.QP{r.a.Sender, r.b.Sender} {
		if q.CeilingBitsPerSec() != 8e9 || q.RateCuts() == 0 || q.RateBitsPerSec() >= 8e9 {
			t.Errorf("QP %d: ceiling %d, %d cuts, rate %d; want the 8 Gb/s advice and DCQCN cutting below it",
				q.QPN, q.CeilingBitsPerSec(), q.RateCuts(), q.RateBitsPerSec())
		}
	}
}

// TestUntrustedAdviceDropped: advice from a node not on the access list
// changes nothing.
func TestUntrustedAdviceDropped(t *testing.T) {
	r := newRig(t, rigOpts{cfg: enabled(), capable: [2]bool{true, true}, noAccess: true})
	r.sim.Run(2 * engine.Millisecond)
	if r.recv["s1"].Counters().Untrusted == 0 || r.a.Sender.CeilingBitsPerSec() != 0 {
		t.Errorf("receiver %+v, ceiling %d", r.recv["s1"].Counters(), r.a.Sender.CeilingBitsPerSec())
	}
}

// TestValidate: every invalid key is refused with an error naming it.
func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		desc string
		mod  func(*Config)
		key  string
	}{
		{"policy name", func(c *Config) { c.Policies = []Policy{{RateMbps: 1}} }, "policies[0].name"},
		{"policy twice", func(c *Config) { c.Policies = []Policy{{Name: "x", RateMbps: 1}, {Name: "x", RateMbps: 2}} }, "policies[1].name"},
		{"policy rate", func(c *Config) { c.Policies = []Policy{{Name: "x"}} }, "policies[0].rate"},
		{"policy qp", func(c *Config) { c.Policies = []Policy{{Name: "x", RateMbps: 1, DstQP: 1 << 24}} }, "policies[0].destination-qp"},
		{"interval", func(c *Config) { c.MinAdviceInterval = 0 }, "min-advice-interval"},
		{"drain", func(c *Config) { c.DrainInterval = 0 }, "drain-interval"},
		{"change", func(c *Config) { c.ChangePercent = 101 }, "change-percent"},
		{"idle", func(c *Config) { c.IdleTimeout = 0 }, "idle-timeout"},
		{"dscp", func(c *Config) { c.DSCP = 64 }, "dscp"},
		{"prio", func(c *Config) { c.Prio = 8 }, "prio"},
		{"opcode", func(c *Config) { c.CodePoints.RateAdviceOpcode = wire.OpRCWriteOnly }, "rate-advice-opcode"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			c := DefaultConfig()
			tt.mod(&c)
			err := c.Validate()
			if !errors.Is(err, ErrConfig) || !strings.HasPrefix(err.Error(), tt.key+":") {
				t.Errorf("Validate: %v, want ErrConfig starting with %q", err, tt.key+":")
			}
		})
	}
	c := DefaultConfig()
	c.CodePoints.RateAdviceOpcode = wire.OpRCAtomicWrite
	if err := c.Validate(); err != nil {
		t.Errorf("the draft's 0x1D, chosen explicitly: %v", err)
	}
}

// TestConfigureReachesReceivers: a Function's Configure gives its
// receivers the new opcode (and source address) with the node's: advice
// sent with the new opcode is applied. The receivers kept the
// configuration of NewFunction before, passing the new advice by, and the
// senders kept the old ceiling (this test failed then).
func TestConfigureReachesReceivers(t *testing.T) {
	// The rig's own receivers take no advice (not capable, no access).
	r := newRig(t, rigOpts{noAccess: true})
	cfg := enabled()
	cfg.Policies = []Policy{{Name: "all", Precedence: 1, RateMbps: 3000}}
	f, err := NewFunction(r.n1, *cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.Settle() // created held: the sweep armed, as a kept Set does
	r.n1.SetObserver(f.Observer())
	r.sim.Run(2 * engine.Millisecond)
	if c := r.a.Sender.CeilingBitsPerSec(); c != 3e9 {
		t.Fatalf("s1's ceiling %d, want the policy's 3 Gb/s", c)
	}
	cfg.CodePoints.RateAdviceOpcode = 0xC1
	cfg.Policies[0].RateMbps = 2000
	if err := f.Configure(*cfg, lhcnp.Config{}); err != nil {
		t.Fatal(err)
	}
	r.sim.Run(6 * engine.Millisecond)
	for _, fl := range []*netsim.Flow{r.a, r.b} {
		if c := fl.Sender.CeilingBitsPerSec(); c != 2e9 {
			t.Errorf("%s's ceiling %d after opcode 0xC1 and rate 2000, want 2 Gb/s", fl.Sender.Host().Name(), c)
		}
	}
	// The capability was announced on the host's QPs: it stays.
	if err := f.recvs[0].ApplyConfig(ReceiverConfig{}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "capable") {
		t.Errorf("receiver made not capable: %v, want ErrConfig naming capable", err)
	}
}

// TestApplyKeepsSweep: a configuration applied with the sweep's period
// unchanged (the same one again, or a policy's rate changed and changed
// back) keeps the sweep where it falls: the engine runs the events it
// runs with the configuration applied once, or never. A new period
// re-arms the sweep at it. Every apply re-armed the sweep before, one
// event more each (this test failed then).
func TestApplyKeepsSweep(t *testing.T) {
	cfg := enabled()
	cfg.Policies = []Policy{{Name: "all", Precedence: 1, RateMbps: 3000}}
	faster := *cfg
	faster.MinAdviceInterval = cfg.MinAdviceInterval / 2
	slower := *cfg
	slower.Policies = []Policy{{Name: "all", Precedence: 1, RateMbps: 2000}}
	for _, tc := range []struct {
		desc        string
		apply, base []Config // what r and base apply at 1.03 ms
		extra       bool     // the sweep is re-armed: the events run differ
	}{
		{desc: "the same again", apply: []Config{*cfg, *cfg}},
		{desc: "a policy's rate, back and again", apply: []Config{slower, *cfg, slower}, base: []Config{slower}},
		{desc: "a faster sweep", apply: []Config{faster}, extra: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			base := newRig(t, rigOpts{cfg: cfg, capable: [2]bool{true, true}})
			r := newRig(t, rigOpts{cfg: cfg, capable: [2]bool{true, true}})
			for _, x := range []struct {
				r     *rig
				apply []Config
			}{{base, tc.base}, {r, tc.apply}} {
				x.r.sim.Run(engine.Millisecond + 30*engine.Microsecond)
				for _, c := range x.apply {
					if err := x.r.node.ApplyConfig(c); err != nil {
						t.Fatal(err)
					}
				}
				x.r.sim.Run(2 * engine.Millisecond)
			}
			if got, want := r.sim.Events(), base.sim.Events(); (got != want) != tc.extra {
				t.Errorf("%d events run, %d with %d configurations applied (re-armed: %v)", got, want, len(tc.base), tc.extra)
			}
		})
	}
}
