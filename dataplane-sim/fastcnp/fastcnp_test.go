package fastcnp

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// TestDisabledByDefault: §5 "By default, the Fast CNP feature MUST be
// disabled": a node attached with DefaultConfig sends nothing and leaves
// ECN marking to the port, and an RNIC with the default receiver
// configuration discards a Fast CNP.
func TestDisabledByDefault(t *testing.T) {
	if DefaultConfig().Enabled || (ReceiverConfig{}).Enabled {
		t.Fatal("the default configurations enable Fast CNP")
	}
	cfg := DefaultConfig()
	r := newRig(t, rigOpts{cfg: &cfg, rc: ReceiverConfig{}})
	r.sim.Run(5 * engine.Millisecond)
	if r.sent() != 0 || len(r.got) != 0 {
		t.Errorf("disabled node sent %d Fast CNPs (%d received)", r.sent(), len(r.got))
	}
	if r.out.Stats().ECNMarks == 0 {
		t.Errorf("disabled node: no ECN marks at the congested port, want the port's own marking")
	}
	if r.out.TotalQueueBytes() < cfg.KMaxBytes {
		t.Fatalf("queue %d bytes: the rig does not congest", r.out.TotalQueueBytes())
	}

	// An RNIC with the feature off drops a Fast CNP (the option's action
	// bits 10: discard) and its QP is untouched.
	rv, err := NewReceiver(r.net, ReceiverConfig{AccessList: []netip.Prefix{netip.PrefixFrom(loop, 128)}})
	if err != nil {
		t.Fatal(err)
	}
	q := r.a.Sender
	before := q.CNPs()
	p := fastCNP(t, r, loop, addrS1, addrR1, 200)
	if !rv.HandleControl(r.s1, p) {
		t.Errorf("disabled receiver let the Fast CNP through to DCQCN")
	}
	r.net.FreePacket(p)
	if got := rv.Counters(); got.Discarded != 1 || got.Accepted != 0 || q.CNPs() != before {
		t.Errorf("disabled receiver: %+v, QP CNPs %d -> %d; want one discarded, none applied", got, before, q.CNPs())
	}
}

// TestFormat: §3 and §4: the Fast CNP goes from the switch's loopback to
// the data packet's source, is a standard CNP (opcode 0x81, BECN) whose
// BTH destination QP is the data packet's, with a Destination Options
// header holding the option of type TBD1 (act 10, chg 0) and the data
// packet's destination address, at the configured DSCP.
func TestFormat(t *testing.T) {
	r := newRig(t, rigOpts{cfg: enabled(), rc: trusting()})
	r.sim.Run(3 * engine.Millisecond)
	if len(r.got) == 0 {
		t.Fatalf("no Fast CNP reached a sender (node sent %d)", r.sent())
	}
	type view struct {
		Src, Dst       netip.Addr
		Opcode         wire.Opcode
		BECN           bool
		DestQP         uint32
		OptType        uint8
		OrigDst        netip.Addr
		DSCP           uint8
		IOAM, Tunneled bool
	}
	want := map[string]view{
		"s1/" + addrR1.String(): {loop, addrS1, wire.OpCNP, true, 200, 0x9E, addrR1, 48, false, false},
		"s1/" + addrR2.String(): {loop, addrS1, wire.OpCNP, true, 200, 0x9E, addrR2, 48, false, false},
		"s2/" + addrR1.String(): {loop, addrS2, wire.OpCNP, true, 201, 0x9E, addrR1, 48, false, false},
	}
	seen := map[string]bool{}
	for _, g := range r.got {
		f := &g.frame
		src, dst := f.IPAddrs()
		orig := netip.AddrFrom16(f.FastCNP.OrigDst)
		k := g.host + "/" + orig.String()
		got := view{src, dst, f.BTH.Opcode, f.BTH.Byte4&wire.BTHBECN != 0, f.BTH.DestQP, optType(t, g.raw), orig,
			f.TOS() >> 2, f.FastCNP.IOAM, f.Tunneled}
		if diff := cmp.Diff(want[k], got, cmpopts.EquateComparable(netip.Addr{})); diff != "" {
			t.Errorf("%s (-want +got):\n%s", k, diff)
		}
		seen[k] = true
	}
	for k := range want {
		if !seen[k] {
			t.Errorf("no Fast CNP for %s", k)
		}
	}
}

// optType reads the type of the first option other than padding in the
// Destination Options header that follows the IPv6 header of frame.
func optType(t *testing.T, frame []byte) uint8 {
	t.Helper()
	if frame[wire.EthernetLen+6] != 60 {
		t.Fatalf("next header %d after IPv6, want 60 (Destination Options)", frame[wire.EthernetLen+6])
	}
	h := frame[wire.EthernetLen+40:]
	end := 8 * (int(h[1]) + 1)
	for i := 2; i < end; {
		switch h[i] {
		case 0: // Pad1
			i++
		case 1: // PadN
			i += 2 + int(h[i+1])
		default:
			return h[i]
		}
	}
	t.Fatal("no option in the Destination Options header")
	return 0
}

// TestIOAMVariant: §4, the second option type carries IOAM trace data
// (the pre-allocated trace with this node's queue depth) before the
// original destination.
func TestIOAMVariant(t *testing.T) {
	cfg := enabled()
	cfg.IOAM = true
	r := newRig(t, rigOpts{cfg: cfg, rc: trusting()})
	r.sim.Run(3 * engine.Millisecond)
	if len(r.got) == 0 {
		t.Fatal("no Fast CNP received")
	}
	for _, g := range r.got {
		o := g.frame.FastCNP
		if !o.IOAM || o.IOAMOptType != ioamPreallocated || len(g.ioam) != ioamDataLen {
			t.Fatalf("option %+v with %d IOAM bytes, want the IOAM variant with %d", o, len(g.ioam), ioamDataLen)
		}
		if tt := binary.BigEndian.Uint32(g.ioam[4:]) >> 8; tt != ioamTraceType {
			t.Errorf("trace type %#x, want %#x", tt, ioamTraceType)
		}
		if qd := int64(binary.BigEndian.Uint32(g.ioam[12:])); qd <= cfg.KMaxBytes {
			t.Errorf("IOAM queue depth %d, want above K_max %d (the trigger)", qd, cfg.KMaxBytes)
		}
	}
	if got := r.recv["s1"].Counters().IOAM + r.recv["s2"].Counters().IOAM; got == 0 {
		t.Errorf("receivers counted no IOAM Fast CNP")
	}
}

// fastCNP builds a Fast CNP packet from src to dst for the data packet's
// destination orig and destination QP.
func fastCNP(t testing.TB, r *rig, src, dst, orig netip.Addr, qp uint32) *netsim.Packet {
	t.Helper()
	var buf [netsim.FrameCap]byte
	o := wire.FastCNPOption{OrigDst: orig.As16()}
	n, err := (&wire.Encoder{}).FastCNP(buf[:], &wire.Addressing{SrcIP: src, DstIP: dst}, &wire.CNP{DestQP: qp}, &o)
	if err != nil {
		t.Fatal(err)
	}
	p := r.net.NewPacket()
	if err := r.net.SetFrame(p, buf[:n]); err != nil {
		t.Fatal(err)
	}
	p.Kind = netsim.KindRoCE
	p.SizeBytes = int32(n + 4)
	off := wire.EthernetLen + 40 + o.DestOptsLen() + wire.UDPLen
	p.HdrLen = uint8(copy(p.Hdr[:], buf[off:n]))
	return p
}

// TestReceiverFindsQPByOriginalDestination: §4, the original destination
// address with the destination QP names the sender's QP; s1 has two QPs
// whose receivers both use QP 200. The access list (§5) is checked first,
// and a Fast CNP whose source is the original destination is a
// receiver-originated one.
func TestReceiverFindsQPByOriginalDestination(t *testing.T) {
	r := newRig(t, rigOpts{rc: trusting(), dcqcn: true})
	r.sim.Run(engine.Millisecond) // connected
	rogue := netip.MustParseAddr("2001:db8:9::9")
	for _, tt := range []struct {
		desc      string
		src, orig netip.Addr
		qp        uint32
		want      ReceiverCounters
		cutA      bool
		cutB      bool
	}{
		{"to r1 qp 200 is flow a", loop, addrR1, 200, ReceiverCounters{Accepted: 1, FromSwitch: 1}, true, false},
		{"to r2 qp 200 is flow b", loop, addrR2, 200, ReceiverCounters{Accepted: 1, FromSwitch: 1}, false, true},
		{"unknown qp", loop, addrR1, 999, ReceiverCounters{NoQP: 1}, false, false},
		{"source not on the access list", rogue, addrR1, 200, ReceiverCounters{Untrusted: 1}, false, false},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			rv, err := NewReceiver(r.net, trusting())
			if err != nil {
				t.Fatal(err)
			}
			a, b := r.a.Sender.CNPs(), r.b.Sender.CNPs()
			p := fastCNP(t, r, tt.src, addrS1, tt.orig, tt.qp)
			handled := rv.HandleControl(r.s1, p)
			r.net.FreePacket(p)
			if !handled {
				t.Errorf("a Fast CNP went on to DCQCN")
			}
			if diff := cmp.Diff(tt.want, rv.Counters()); diff != "" {
				t.Errorf("counters (-want +got):\n%s", diff)
			}
			if got := r.a.Sender.CNPs() > a; got != tt.cutA {
				t.Errorf("flow a got a CNP: %v, want %v", got, tt.cutA)
			}
			if got := r.b.Sender.CNPs() > b; got != tt.cutB {
				t.Errorf("flow b got a CNP: %v, want %v", got, tt.cutB)
			}
		})
	}
	t.Run("receiver-originated", func(t *testing.T) {
		rv, err := NewReceiver(r.net, ReceiverConfig{Enabled: true, AccessList: []netip.Prefix{netip.PrefixFrom(addrR1, 128)}})
		if err != nil {
			t.Fatal(err)
		}
		p := fastCNP(t, r, addrR1, addrS1, addrR1, 200)
		rv.HandleControl(r.s1, p)
		r.net.FreePacket(p)
		if diff := cmp.Diff(ReceiverCounters{Accepted: 1, FromReceiver: 1}, rv.Counters()); diff != "" {
			t.Errorf("counters (-want +got):\n%s", diff)
		}
	})
	t.Run("a standard CNP goes on to DCQCN", func(t *testing.T) {
		rv, _ := NewReceiver(r.net, trusting())
		var buf [netsim.FrameCap]byte
		n, err := (&wire.Encoder{}).CNP(buf[:], &wire.Addressing{SrcIP: addrR1, DstIP: addrS1}, &wire.CNP{DestQP: 100})
		if err != nil {
			t.Fatal(err)
		}
		p := r.net.NewPacket()
		_ = r.net.SetFrame(p, buf[:n])
		p.Kind = netsim.KindRoCE
		p.HdrLen = uint8(copy(p.Hdr[:], buf[wire.EthernetLen+40+wire.UDPLen:n]))
		if rv.HandleControl(r.s1, p) {
			t.Errorf("a standard CNP was consumed")
		}
		r.net.FreePacket(p)
	})
}

// TestSenderSlowsDown: end to end, with DCQCN at the RNICs and ECN marking
// off for capable senders, the senders' rates fall because of Fast CNPs
// alone: every rate cut follows an accepted Fast CNP, no receiver sent a
// CNP, and an access list without the switch stops all of it.
func TestSenderSlowsDown(t *testing.T) {
	all := []netip.Prefix{netip.MustParsePrefix("2001:db8::/48")}
	for _, tt := range []struct {
		desc   string
		rc     ReceiverConfig
		accept bool
	}{
		{"trusted", trusting(), true},
		{"not on the access list", ReceiverConfig{Enabled: true, AccessList: []netip.Prefix{netip.MustParsePrefix("2001:db8:9::/48")}}, false},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := enabled()
			cfg.CapableSenders = all
			r := newRig(t, rigOpts{cfg: cfg, rc: tt.rc, dcqcn: true})
			r.sim.Run(5 * engine.Millisecond)
			acc := r.recv["s1"].Counters().Accepted + r.recv["s2"].Counters().Accepted
			untrusted := r.recv["s1"].Counters().Untrusted + r.recv["s2"].Counters().Untrusted
			cuts := r.a.Sender.RateCuts() + r.b.Sender.RateCuts() + r.c.Sender.RateCuts()
			rx := r.r1.Stats().CNPTx + r.r2.Stats().CNPTx
			if rx != 0 {
				t.Errorf("receivers sent %d CNPs; capable senders' packets must not be marked", rx)
			}
			if tt.accept {
				if acc == 0 || cuts == 0 {
					t.Fatalf("accepted %d Fast CNPs, %d rate cuts; want both", acc, cuts)
				}
				if rate := r.a.Sender.RateBitsPerSec() + r.b.Sender.RateBitsPerSec() + r.c.Sender.RateBitsPerSec(); rate >= 20e9 {
					t.Errorf("senders at %d b/s, want below the 20 Gb/s offered", rate)
				}
				return
			}
			if acc != 0 || cuts != 0 || untrusted == 0 {
				t.Errorf("accepted %d, rate cuts %d, untrusted %d; want 0, 0, > 0", acc, cuts, untrusted)
			}
		})
	}
}

// TestMarkingPolicy: §4, a switch that knows the sender processes Fast
// CNP MUST NOT mark its packets; one that does not know MAY (MarkUnknown,
// on by default) so that the receiver's CNP still works.
func TestMarkingPolicy(t *testing.T) {
	s1 := []netip.Prefix{netip.PrefixFrom(addrS1, 128)}
	for _, tt := range []struct {
		desc           string
		capable        []netip.Prefix
		markUnknown    bool
		wantS1, wantS2 bool // marked packets arrive
	}{
		{"nobody known capable", nil, true, true, true},
		{"s1 capable", s1, true, false, true},
		{"s1 capable, unknown not marked", s1, false, false, false},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := enabled()
			cfg.CapableSenders, cfg.MarkUnknown = tt.capable, tt.markUnknown
			r := newRig(t, rigOpts{cfg: cfg, rc: trusting()})
			r.sim.Run(3 * engine.Millisecond)
			ms1 := r.a.Receiver.MarkedPackets() + r.b.Receiver.MarkedPackets()
			ms2 := r.c.Receiver.MarkedPackets()
			if got := ms1 > 0; got != tt.wantS1 {
				t.Errorf("s1's packets marked: %d, want marked %v", ms1, tt.wantS1)
			}
			if got := ms2 > 0; got != tt.wantS2 {
				t.Errorf("s2's packets marked: %d, want marked %v", ms2, tt.wantS2)
			}
			if withheld := r.node.Counters().MarksWithheld; (withheld > 0) != (!tt.wantS1 || !tt.wantS2) {
				t.Errorf("marks withheld %d", withheld)
			}
			if r.sent() == 0 {
				t.Errorf("no Fast CNP sent")
			}
		})
	}
}

// TestMarkedAlongsideCountsMarks: MarkedAlongside (YANG
// ecn-marked-alongside, "data packets marked CE alongside a Fast CNP")
// counts the CE marks the port applied, nobody being known capable: every
// mark of n1's ports. The port asks before its probability draw (marked
// with ecn-pmax at the congestion threshold), so a count at the question,
// as the old node made, counted the packets the draw left unmarked too.
func TestMarkedAlongsideCountsMarks(t *testing.T) {
	r := newRig(t, rigOpts{cfg: enabled(), rc: trusting()})
	r.sim.Run(3 * engine.Millisecond)
	var marks int64
	for _, pt := range r.n1.Ports() {
		marks += pt.Stats().ECNMarks
	}
	if got := r.node.Counters().MarkedAlongside; marks == 0 || got != marks {
		t.Errorf("marked alongside %d, want the %d CE marks n1's ports applied (> 0)", got, marks)
	}
}

// TestRateLimits: §5 RECOMMENDED rate limiting: Fast CNPs to one flow are
// at least MinCNPInterval apart, and a port sends no more than its bucket
// allows.
func TestRateLimits(t *testing.T) {
	t.Run("per flow", func(t *testing.T) {
		cfg := enabled()
		cfg.MinCNPInterval = 200 * engine.Microsecond
		r := newRig(t, rigOpts{cfg: cfg, rc: trusting()})
		r.sim.Run(5 * engine.Millisecond)
		last := map[lhcnp.FlowKey]engine.Time{}
		n := 0
		for _, e := range r.events {
			if e.Kind != lhcnp.EventCNPSent {
				continue
			}
			if e.Format != lhcnp.FormatExternal {
				t.Fatalf("notification format %v, want external (Fast CNP)", e.Format)
			}
			if at, ok := last[e.Flow]; ok && e.Time-at < cfg.MinCNPInterval {
				t.Errorf("flow %v: Fast CNPs at %v and %v, closer than %v", e.Flow, at, e.Time, cfg.MinCNPInterval)
			}
			last[e.Flow] = e.Time
			n++
		}
		if n < 10 || int64(n) != r.sent() {
			t.Errorf("%d events, %d sent; want the same, at least 10", n, r.sent())
		}
	})
	t.Run("per port", func(t *testing.T) {
		cfg := enabled()
		cfg.MinCNPInterval = engine.Microsecond
		cfg.PortCNPRatePerSec, cfg.PortCNPBurst = 2000, 2
		r := newRig(t, rigOpts{cfg: cfg, rc: trusting()})
		r.sim.Run(5 * engine.Millisecond)
		// burst + rate * time; the queue congests from about 0.1 ms.
		if max := int64(2 + 2000*5/1000); r.sent() > max || r.sent() < 5 {
			t.Errorf("sent %d Fast CNPs in 5 ms, want between 5 and %d", r.sent(), max)
		}
		if st := r.node.State(false); st.Node.Ports[2].Counters.SuppressedPortLimit == 0 {
			t.Errorf("no notification suppressed by the port limit")
		}
	})
}

// TestIPv4NotSent: §3 "only IPv6 is taken into account": an IPv4 network
// gets no Fast CNP, and the node counts why.
func TestIPv4NotSent(t *testing.T) {
	cfg := enabled()
	cfg.SourceAddress = netip.Addr{}
	r := newRig(t, rigOpts{v4: true, cfg: cfg, rc: trusting()})
	r.sim.Run(3 * engine.Millisecond)
	if r.sent() != 0 || r.node.Counters().NotIPv6 == 0 {
		t.Errorf("sent %d, not-ipv6 %d; want 0 and > 0", r.sent(), r.node.Counters().NotIPv6)
	}
}

// TestApplyConfig: turning the feature on at run time starts Fast CNP; an
// invalid configuration is refused and changes nothing.
func TestApplyConfig(t *testing.T) {
	cfg := DefaultConfig()
	r := newRig(t, rigOpts{cfg: &cfg, rc: trusting()})
	r.sim.Run(2 * engine.Millisecond)
	bad := *enabled()
	bad.KMinBytes = bad.KMaxBytes
	if err := r.node.ApplyConfig(bad); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "kmin") {
		t.Fatalf("apply bad config: %v, want ErrConfig naming kmin", err)
	}
	if r.node.Config().Enabled {
		t.Fatalf("a refused config enabled the node")
	}
	if err := r.node.ApplyConfig(*enabled()); err != nil {
		t.Fatal(err)
	}
	r.sim.Run(4 * engine.Millisecond)
	if r.sent() == 0 {
		t.Errorf("no Fast CNP after enabling")
	}
}

// TestValidate: every invalid key is refused with an error naming it.
func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		desc string
		mod  func(*Config)
		key  string
	}{
		{"ipv4 source", func(c *Config) { c.Enabled, c.SourceAddress = true, netip.MustParseAddr("10.0.0.1") }, "source-address"},
		{"capable prefix", func(c *Config) { c.CapableSenders = []netip.Prefix{{}} }, "capable-senders[0]"},
		{"kmax", func(c *Config) { c.KMaxBytes = 0 }, "kmax"},
		{"kmin", func(c *Config) { c.KMinBytes = -1 }, "kmin"},
		{"pmax", func(c *Config) { c.PMax = 1.5 }, "pmax"},
		{"interval", func(c *Config) { c.MinCNPInterval = 0 }, "min-cnp-interval"},
		{"port rate", func(c *Config) { c.PortCNPRatePerSec = 0 }, "port-cnp-rate"},
		{"burst", func(c *Config) { c.PortCNPBurst = 0 }, "port-cnp-burst"},
		{"flows", func(c *Config) { c.MaxFlowsPerTrigger = 0 }, "max-flows-per-trigger"},
		{"dscp", func(c *Config) { c.CNPDSCP = 64 }, "cnp-dscp"},
		{"prio", func(c *Config) { c.CNPPrio = 8 }, "cnp-prio"},
		{"option type bits", func(c *Config) { c.CodePoints.FastCNPOptType = 0x1E }, "option-type"},
		{"ioam option type bits", func(c *Config) { c.CodePoints.FastCNPIOAMOptType = 0xBD }, "ioam-option-type"},
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
	rc := ReceiverConfig{AccessList: []netip.Prefix{{}}}
	if err := rc.Validate(); !errors.Is(err, ErrConfig) || !strings.HasPrefix(err.Error(), "access-list[0]:") {
		t.Errorf("receiver Validate: %v", err)
	}
	d := DefaultConfig()
	if err := d.Validate(); err != nil {
		t.Errorf("default config: %v", err)
	}
	// Off, the switch's IPv4 source address is not Fast CNP's concern.
	d.SourceAddress = netip.MustParseAddr("10.0.0.1")
	if err := d.Validate(); err != nil {
		t.Errorf("disabled, IPv4 source address: %v", err)
	}
}

// TestControlledDomain: §5 "MUST be applied in a specific controlled
// domain": a sender outside Domain gets no Fast CNP (s2 here), one inside
// does.
func TestControlledDomain(t *testing.T) {
	cfg := enabled()
	cfg.Domain = []netip.Prefix{netip.PrefixFrom(addrS1, 128)}
	r := newRig(t, rigOpts{cfg: cfg, rc: trusting()})
	r.sim.Run(3 * engine.Millisecond)
	for _, g := range r.got {
		if g.host != "s1" {
			t.Errorf("Fast CNP to %s, outside the domain", g.host)
		}
	}
	if r.node.Counters().OutsideDomain == 0 || r.recv["s1"].Counters().Accepted == 0 {
		t.Errorf("counters %+v, s1 accepted %d: want some outside the domain and some to s1",
			r.node.Counters(), r.recv["s1"].Counters().Accepted)
	}
	none := enabled()
	none.Domain = nil
	r = newRig(t, rigOpts{cfg: none, rc: trusting()})
	r.sim.Run(3 * engine.Millisecond)
	if r.sent() != 0 {
		t.Errorf("an empty domain sent %d Fast CNPs, want none", r.sent())
	}
}

// TestWrapSwitchesMode: a Long-haul CNP node wrapped by Wrap keeps sending
// Long-haul CNPs until Apply enables Fast CNP, and again after Apply
// disables it; a refused Apply changes nothing.
func TestWrapSwitchesMode(t *testing.T) {
	r := newRig(t, rigOpts{rc: trusting()})
	lc := lhcnp.DefaultConfig()
	lc.Enabled, lc.FormatICMPv6 = true, true
	lc.Collaborative.Enabled = false
	var formats []lhcnp.Format
	lh, err := lhcnp.Attach(r.net, r.n1, lc, lhcnp.WithEvents(func(e lhcnp.Event) {
		if e.Kind == lhcnp.EventCNPSent && (len(formats) == 0 || formats[len(formats)-1] != e.Format) {
			formats = append(formats, e.Format)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	n := Wrap(lh)
	r.sim.Run(2 * engine.Millisecond)
	bad := *enabled()
	bad.PMax = 2
	if err := n.Apply(bad, lc); !errors.Is(err, ErrConfig) {
		t.Fatalf("Apply(bad) = %v, want ErrConfig", err)
	}
	r.sim.Run(3 * engine.Millisecond)
	if err := n.Apply(*enabled(), lc); err != nil {
		t.Fatal(err)
	}
	r.sim.Run(6 * engine.Millisecond)
	off := *enabled()
	off.Enabled = false
	if err := n.Apply(off, lc); err != nil {
		t.Fatal(err)
	}
	r.sim.Run(12 * engine.Millisecond)
	want := []lhcnp.Format{lhcnp.FormatICMPv6, lhcnp.FormatExternal, lhcnp.FormatICMPv6}
	if diff := cmp.Diff(want, formats); diff != "" {
		t.Errorf("notification formats over time (-want +got):\n%s", diff)
	}
	if n.Counters().Sent == 0 {
		t.Errorf("no Fast CNP while enabled")
	}
}
