package fastcnp

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// injectFastCNP has switch from originate a Fast CNP to host to, as the
// node of §4 builds it (source from's address, original destination r1).
func injectFastCNP(t *testing.T, r *rig, from *netsim.Switch, to *netsim.Host, destQP uint32) {
	t.Helper()
	var buf [netsim.FrameCap]byte
	a := wire.Addressing{SrcIP: from.Addr(), DstIP: to.Addr(), SrcPort: 0xC000}
	o := wire.FastCNPOption{OrigDst: addrR1.As16()}
	enc := wire.Encoder{CodePoints: wire.DefaultCodePoints()}
	size, err := enc.FastCNP(buf[:], &a, &wire.CNP{DestQP: destQP}, &o)
	if err != nil {
		t.Fatal(err)
	}
	p := r.net.NewPacket()
	if err := r.net.SetFrame(p, buf[:size]); err != nil {
		t.Fatal(err)
	}
	bth := wire.EthernetLen + 40 + o.DestOptsLen() + wire.UDPLen
	p.SizeBytes, p.Src, p.Dst = int32(size+4), from.ID(), to.ID()
	p.Flow, p.Prio, p.Kind = netsim.NoFlow, 6, netsim.KindRoCE
	p.HdrLen = uint8(copy(p.Hdr[:], buf[bth:size]))
	from.Send(p)
}

// TestBorderFiltering: §5 "A deployment MUST ensure that border-filtering
// drops inbound Fast CNP from outside of the domain and that drops outbound
// Fast CNP leaving the domain." n1's port towards n2 (n1:2) or towards s1
// (n1:0) is made a border port; n2 stands for the outside.
func TestBorderFiltering(t *testing.T) {
	trustN2 := trusting()
	trustN2.AccessList = append(trustN2.AccessList, netip.PrefixFrom(addrN2, 128))
	tests := []struct {
		desc    string
		border  []string
		enabled bool // n1 sends Fast CNP itself
		inject  bool // n2 sends one Fast CNP to s1 and one to s2 through n1:2
		// Fast CNPs that reach s1 and s2 (from n1 and n2), and the counters.
		wantS1, wantS2   bool
		wantIn, wantOut  bool
		wantInjectedS1   bool
		wantFilterDrops0 bool
	}{
		{desc: "no border: everything passes", inject: true, enabled: true,
			wantS1: true, wantS2: true, wantInjectedS1: true, wantFilterDrops0: true},
		{desc: "inbound from outside dropped", border: []string{"n1:2"}, inject: true,
			wantIn: true},
		{desc: "outbound leaving the domain dropped, the rest sent", border: []string{"n1:0"}, enabled: true,
			wantS2: true, wantOut: true},
		{desc: "border filtering without sending Fast CNP: a transit one leaving through the border", border: []string{"n1:0"}, inject: true,
			wantS2: true, wantOut: true},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := enabled()
			cfg.Enabled = tt.enabled
			cfg.BorderPorts = tt.border
			r := newRig(t, rigOpts{cfg: cfg, rc: trustN2})
			n2 := r.out.Peer().Node().(*netsim.Switch)
			if tt.inject {
				r.sim.AtFunc(500*engine.Microsecond, func() {
					injectFastCNP(t, r, n2, r.s1, 100)
					injectFastCNP(t, r, n2, r.s2, 102)
				})
			}
			r.sim.Run(3 * engine.Millisecond)
			got := map[string]int{}
			injectedS1 := false
			for _, g := range r.got {
				got[g.host]++
				src, _ := g.frame.IPAddrs()
				if g.host == "s1" && src == addrN2 {
					injectedS1 = true
				}
			}
			c := r.node.Counters()
			if (got["s1"] > 0) != (tt.wantS1 || tt.wantInjectedS1) || (got["s2"] > 0) != tt.wantS2 {
				t.Errorf("Fast CNPs received: %v, want s1 %v, s2 %v", got, tt.wantS1 || tt.wantInjectedS1, tt.wantS2)
			}
			if injectedS1 != tt.wantInjectedS1 {
				t.Errorf("n2's Fast CNP reached s1: %v, want %v", injectedS1, tt.wantInjectedS1)
			}
			if (c.BorderDroppedIn > 0) != tt.wantIn || (c.BorderDroppedOut > 0) != tt.wantOut {
				t.Errorf("border drops in %d out %d, want in %v out %v", c.BorderDroppedIn, c.BorderDroppedOut, tt.wantIn, tt.wantOut)
			}
			if d := r.n1.Stats().FilterDrops; d != c.BorderDropped() {
				t.Errorf("switch filter drops %d, border-dropped %d: want equal", d, c.BorderDropped())
			}
			if tt.wantIn && c.BorderDroppedIn != 2 {
				t.Errorf("%d inbound drops, want the 2 injected Fast CNPs", c.BorderDroppedIn)
			}
			t.Logf("received %v, counters %+v", got, c)
		})
	}
}

// Border filtering drops Fast CNPs only: data, ACKs and the receivers'
// standard CNPs cross a border port untouched.
func TestBorderPassesOtherTraffic(t *testing.T) {
	cfg := enabled()
	cfg.Enabled = false
	cfg.BorderPorts = []string{"n1:2"}
	r := newRig(t, rigOpts{cfg: cfg, dcqcn: true})
	ref := newRig(t, rigOpts{dcqcn: true})
	for _, x := range []*rig{r, ref} {
		x.sim.Run(3 * engine.Millisecond)
	}
	if r.node.Counters().BorderDropped() != 0 || r.n1.Stats().FilterDrops != 0 {
		t.Errorf("border drops %+v, switch filter drops %d: want none (no Fast CNP anywhere)", r.node.Counters(), r.n1.Stats().FilterDrops)
	}
	for i, f := range []*netsim.Flow{r.a, r.b, r.c} {
		g, w := f.Sender.CNPs(), []*netsim.Flow{ref.a, ref.b, ref.c}[i].Sender.CNPs()
		if g == 0 || g != w {
			t.Errorf("flow %s: %d receiver CNPs across the border, %d without a border node: want the same, not zero", f.Name, g, w)
		}
		if gr, wr := f.Receiver.RxBytes(), []*netsim.Flow{ref.a, ref.b, ref.c}[i].Receiver.RxBytes(); gr != wr {
			t.Errorf("flow %s: %d bytes received across the border, %d without: want the same", f.Name, gr, wr)
		}
	}
}

func TestBorderConfig(t *testing.T) {
	tests := []struct {
		desc   string
		border []string
		want   string // "" for no error
	}{
		{desc: "a port of n1", border: []string{"n1:2"}},
		{desc: "no such port", border: []string{"n1:9"}, want: `border-interface[0]: no port "n1:9" on this switch`},
		{desc: "empty name", border: []string{""}, want: "border-interface[0]: empty name"},
		{desc: "twice", border: []string{"n1:1", "n1:1"}, want: `border-interface[1]: "n1:1" listed twice`},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			r := newRig(t, rigOpts{rc: trusting()})
			cfg := *enabled()
			cfg.BorderPorts = tt.border
			_, err := Attach(r.net, r.n1, cfg)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Attach: %v", err)
			case tt.want != "" && (!errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Attach: %v, want ErrConfig naming %q", err, tt.want)
			}
		})
	}
}
