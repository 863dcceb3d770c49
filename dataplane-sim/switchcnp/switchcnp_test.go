package switchcnp

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

// rig: two senders at 10 Gb/s share n1's 10 Gb/s port towards r (no ECN
// marking anywhere: every CNP a sender gets is the switch's).
type rig struct {
	sim    *engine.Sim
	net    *netsim.Network
	s1, s2 *netsim.Host
	n1     *netsim.Switch
	out    *netsim.Port
	a, b   *netsim.Flow
	node   *Node
	got    []wire.Frame
	at     []engine.Time
}

var addrN1 = netip.MustParseAddr("10.0.1.1")

func newRig(t *testing.T, cfg *Config, buffer int64) *rig {
	t.Helper()
	link := func(a, b string, d engine.Time) mechtest.Link {
		return mechtest.Link{A: a, B: b, RateBitsPerSec: 10e9, Delay: d}
	}
	n := mechtest.Build(t, mechtest.Spec{
		Host:     netsim.DefaultHostConfig(),
		Hosts:    []mechtest.Node{{Name: "s1", Addr: "10.0.0.1"}, {Name: "s2", Addr: "10.0.0.2"}, {Name: "r", Addr: "10.0.4.1"}},
		Switches: []mechtest.Node{{Name: "n1", Addr: addrN1.String(), Switch: netsim.SwitchConfig{Port: netsim.PortConfig{BufferBytes: buffer}}}},
		Links:    []mechtest.Link{link("s1", "n1", engine.Microsecond), link("s2", "n1", engine.Microsecond), link("n1", "r", 20*engine.Microsecond)},
		Flows: []mechtest.Flow{{From: "s1", To: "r", Config: netsim.FlowConfig{Name: "a", SrcQPN: 100, DstQPN: 200}},
			{From: "s2", To: "r", Config: netsim.FlowConfig{Name: "b", SrcQPN: 101, DstQPN: 201}}},
	})
	r := &rig{sim: n.Sim, net: n.Net, s1: n.Hosts["s1"], s2: n.Hosts["s2"], n1: n.Switches["n1"],
		out: n.Ports[[2]string{"n1", "r"}], a: n.Flows["a"], b: n.Flows["b"]}
	if cfg != nil {
		var err error
		if r.node, err = Attach(r.net, r.n1, *cfg); err != nil {
			t.Fatal(err)
		}
	}
	// Every CNP a sender gets is recorded, then DCQCN applies it.
	n.TapHosts(func(_ *netsim.Host, f *wire.Frame, _ []byte) {
		g := *f
		g.Payload, g.Pad, g.Trailer = nil, nil, nil
		r.got = append(r.got, g)
		r.at = append(r.at, r.sim.Now())
	}, nil, nil, "s1", "s2")
	return r
}

func enabled() *Config {
	c := DefaultConfig()
	c.Enabled = true
	return &c
}

// TestDisabledByDefault: nothing is sent with the defaults.
func TestDisabledByDefault(t *testing.T) {
	c := DefaultConfig()
	r := newRig(t, &c, 4<<20)
	r.sim.Run(3 * engine.Millisecond)
	if c.Enabled || r.node.Sent() != 0 || len(r.got) != 0 {
		t.Errorf("sent %d", r.node.Sent())
	}
}

// TestStandardCNP: §2.3.2, the switch sends a standard CNP (opcode 0x81,
// BECN) from its address to the sender, with the sender's QP from the flow
// table as BTH destination QP and the configured DSCP; the sender's DCQCN
// takes it as its receiver's CNP.
func TestStandardCNP(t *testing.T) {
	cfg := enabled()
	cfg.DSCP = 26
	r := newRig(t, cfg, 4<<20)
	r.sim.Run(3 * engine.Millisecond)
	if len(r.got) == 0 {
		t.Fatal("no CNP reached a sender")
	}
	type view struct {
		Src, Dst string
		Opcode   wire.Opcode
		BECN     bool
		DestQP   uint32
		DSCP     uint8
	}
	senders := map[string]uint32{"10.0.0.1": 100, "10.0.0.2": 101}
	for _, f := range r.got {
		src, dst := f.IPAddrs()
		want := view{addrN1.String(), dst.String(), wire.OpCNP, true, senders[dst.String()], 26}
		got := view{src.String(), dst.String(), f.BTH.Opcode, f.BTH.Byte4&wire.BTHBECN != 0, f.BTH.DestQP, f.TOS() >> 2}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("CNP (-want +got):\n%s", diff)
		}
	}
	if r.a.Sender.RateCuts() == 0 || r.b.Sender.RateCuts() == 0 {
		t.Errorf("rate cuts %d, %d: the senders did not take the CNPs", r.a.Sender.RateCuts(), r.b.Sender.RateCuts())
	}
}

// TestDelayDetection: §2.3.1, packets forwarded slower than the threshold
// are recorded, their delay converted to a depth at the port rate and
// compared with the available buffer: a threshold above any delay, or a
// share no depth reaches, sends nothing.
func TestDelayDetection(t *testing.T) {
	for _, tt := range []struct {
		desc      string
		threshold engine.Time
		share     int
		buffer    int64
		send      bool
	}{
		{"defaults", 20 * engine.Microsecond, 1, 4 << 20, true},
		{"threshold above every delay", engine.Second, 1, 4 << 20, false},
		{"depth never half of a large buffer", 20 * engine.Microsecond, 50, 1 << 30, false},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := enabled()
			cfg.DelayThreshold, cfg.BufferSharePercent = tt.threshold, tt.share
			r := newRig(t, cfg, tt.buffer)
			r.sim.Run(3 * engine.Millisecond)
			c := r.node.Counters()
			if got := r.node.Sent() > 0; got != tt.send {
				t.Errorf("sent %d CNPs (counters %+v), want some: %v", r.node.Sent(), c, tt.send)
			}
			if tt.send && (c.Delayed == 0 || c.Confirmed == 0 || c.Fired == 0 || c.MaxDelay <= tt.threshold) {
				t.Errorf("counters %+v", c)
			}
		})
	}
}

// TestFlowTableReused: §2.2, the flows come from lhcnp's flow table,
// learned from the CM exchange, and the per-flow interval holds.
func TestFlowTableReused(t *testing.T) {
	cfg := enabled()
	cfg.MinCNPInterval = 200 * engine.Microsecond
	r := newRig(t, cfg, 4<<20)
	r.sim.Run(3 * engine.Millisecond)
	st := r.node.Detector().State(true)
	learned := map[uint32]string{}
	for _, f := range st.FlowTable.Flows {
		learned[f.Key.SrcQP] = f.Learned.String()
	}
	// The CM exchange names both directions of each connection.
	if diff := cmp.Diff(map[uint32]string{100: "cm", 101: "cm", 200: "cm", 201: "cm"}, learned); diff != "" {
		t.Errorf("flow table (-want +got):\n%s", diff)
	}
	last := map[uint32]engine.Time{}
	for i, f := range r.got {
		if at, ok := last[f.BTH.DestQP]; ok && r.at[i]-at < cfg.MinCNPInterval {
			t.Errorf("QP %d: CNPs %v apart", f.BTH.DestQP, r.at[i]-at)
		}
		last[f.BTH.DestQP] = r.at[i]
	}
}

// TestValidate: every invalid key is refused with an error naming it.
func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		desc string
		mod  func(*Config)
		key  string
	}{
		{"dscp", func(c *Config) { c.DSCP = 64 }, "cnp-dscp"},
		{"prio", func(c *Config) { c.Prio = 8 }, "cnp-prio"},
		{"delay", func(c *Config) { c.DelayThreshold = 0 }, "delay-threshold"},
		{"share", func(c *Config) { c.BufferSharePercent = 0 }, "buffer-share"},
		{"buffer", func(c *Config) { c.AssumedBufferBytes = 0 }, "assumed-buffer"},
		{"interval", func(c *Config) { c.MinCNPInterval = 0 }, "min-cnp-interval"},
		{"port", func(c *Config) { c.PortCNPBurst = 0 }, "port-cnp-rate"},
		{"flows", func(c *Config) { c.MaxFlowsPerTrigger = 0 }, "max-flows-per-trigger"},
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

// TestWrapSwitchesMode: a Long-haul CNP node wrapped by Wrap runs as
// configured (it marks with its own thresholds) until Apply enables the
// white paper's practice (standard CNPs, the port's own marking), and
// again after Apply disables it.
func TestWrapSwitchesMode(t *testing.T) {
	r := newRig(t, nil, 4<<20)
	lc := lhcnp.DefaultConfig()
	lc.Enabled, lc.FormatRoCEv2 = true, true
	lc.RoCEv2Receivers = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	lh, err := lhcnp.Attach(r.net, r.n1, lc)
	if err != nil {
		t.Fatal(err)
	}
	n := Wrap(lh)
	r.sim.Run(2 * engine.Millisecond)
	if e := r.out.Config().ECN[0]; !e.Enabled {
		t.Fatalf("Long-haul CNP mode: the port is not marking (%+v)", e)
	}
	if err := n.Apply(*enabled(), lc); err != nil {
		t.Fatal(err)
	}
	if e := r.out.Config().ECN[0]; e.Enabled {
		t.Errorf("white paper mode: the node still programs marking (%+v); the port's own (none here) applies", e)
	}
	r.sim.Run(5 * engine.Millisecond)
	if n.Sent() == 0 || n.Counters().Confirmed == 0 {
		t.Errorf("sent %d, counters %+v: want standard CNPs", n.Sent(), n.Counters())
	}
	off := *enabled()
	off.Enabled = false
	if err := n.Apply(off, lc); err != nil {
		t.Fatal(err)
	}
	sent := n.Sent()
	if e := r.out.Config().ECN[0]; !e.Enabled {
		t.Errorf("back in Long-haul CNP mode: the port is not marking")
	}
	r.sim.Run(8 * engine.Millisecond)
	if n.Sent() != sent {
		t.Errorf("%d standard CNPs after the practice was turned off", n.Sent()-sent)
	}
}

// TestSourceAddress: the CNPs leave from the configured source address
// (the switch's loopback, YANG source-address) when it is of the sender's
// family, else from the switch's address; the detection node is given it
// too. The sender used the switch's address whatever was configured
// before (this test failed then).
func TestSourceAddress(t *testing.T) {
	for _, tt := range []struct {
		desc, source, want string
	}{
		{"ipv4 loopback", "10.0.9.9", "10.0.9.9"},
		{"other family", "2001:db8::9", addrN1.String()},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := enabled()
			cfg.SourceAddress = netip.MustParseAddr(tt.source)
			r := newRig(t, cfg, 4<<20)
			r.sim.Run(3 * engine.Millisecond)
			if len(r.got) == 0 {
				t.Fatal("no CNP reached a sender")
			}
			for _, f := range r.got {
				if src, dst := f.IPAddrs(); src.String() != tt.want {
					t.Errorf("CNP to %v from %v, want from %s", dst, src, tt.want)
					break
				}
			}
			if got := r.node.Detector().Config().SourceAddress; got != cfg.SourceAddress {
				t.Errorf("detection node's source address %v, want %v", got, cfg.SourceAddress)
			}
		})
	}
}
