package rateadvice

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/internal/mechtest"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// TestSwitchesShareHosts: two switches of one network whose management
// each turns Rate Advice on (NewFunction), as two gNMI targets in one
// process do: each puts a receiver on every host. n1 advises every flow
// 3 Gb/s (a policy), n2 advises nothing; the senders take n1's ceiling
// whichever function was created first, and only n1's receivers count it.
// Advice from a source no receiver trusts changes nothing and is counted
// once, by the first function's receivers. The receivers created last
// took all advice before, n1's as untrusted when n2's came after (the
// senders kept no ceiling), and this test failed. Each function's
// Counters hold its receivers' (rnic_advice_applied, _dropped); they were
// left out, and this test failed too.
//
//	s1 --25G-- n1 --10G, 20µs-- n2 --10G-- r
//	s2 --25G--/
func TestSwitchesShareHosts(t *testing.T) {
	for _, order := range [][2]string{{"n1", "n2"}, {"n2", "n1"}} {
		t.Run(order[0]+" first", func(t *testing.T) {
			n := mechtest.Build(t, mechtest.Spec{
				Host:     netsim.DefaultHostConfig(),
				Hosts:    []mechtest.Node{{Name: "s1", Addr: "10.0.0.1"}, {Name: "s2", Addr: "10.0.0.2"}, {Name: "r", Addr: "10.0.4.1"}},
				Switches: []mechtest.Node{{Name: "n1", Addr: addrN1.String()}, {Name: "n2", Addr: "10.0.2.1"}},
				Links: []mechtest.Link{{A: "s1", B: "n1", RateBitsPerSec: 25e9, Delay: engine.Microsecond},
					{A: "s2", B: "n1", RateBitsPerSec: 25e9, Delay: engine.Microsecond},
					{A: "n1", B: "n2", RateBitsPerSec: 10e9, Delay: 20 * engine.Microsecond},
					{A: "n2", B: "r", RateBitsPerSec: 10e9, Delay: engine.Microsecond}},
				Flows: []mechtest.Flow{{From: "s1", To: "r", Config: netsim.FlowConfig{Name: "a", SrcQPN: 100, DstQPN: 200}},
					{From: "s2", To: "r", Config: netsim.FlowConfig{Name: "b", SrcQPN: 101, DstQPN: 201}}},
			})
			funcs := map[string]*Function{}
			for _, name := range order {
				cfg := enabled()
				cfg.QueueBased = false
				if name == "n1" {
					cfg.Policies = []Policy{{Name: "all", Precedence: 1, RateMbps: 3000}}
				}
				sw := n.Switches[name]
				f, err := NewFunction(sw, *cfg)
				if err != nil {
					t.Fatal(err)
				}
				f.Settle() // created held: the sweep armed, as a kept Set does
				sw.SetObserver(f.Observer())
				funcs[name] = f
			}
			n.Sim.Run(2 * engine.Millisecond)
			for _, fl := range []*netsim.Flow{n.Flows["a"], n.Flows["b"]} {
				if c := fl.Sender.CeilingBitsPerSec(); c != 3e9 {
					t.Errorf("%s's ceiling %d, want n1's 3 Gb/s", fl.Sender.Host().Name(), c)
				}
			}
			// Advice from a rogue source to flow a's QP.
			var buf [netsim.FrameCap]byte
			a := wire.Addressing{SrcIP: netip.MustParseAddr("10.0.9.9"), DstIP: n.Addrs["s1"]}
			size, err := (&wire.Encoder{}).RateAdvice(buf[:], &a, &wire.RateAdvice{RateMbps: 1000, DestQP: 100, SrcQP: 200})
			if err != nil {
				t.Fatal(err)
			}
			p, err := n.Switches["n1"].FramePacket(buf[:size])
			if err != nil {
				t.Fatal(err)
			}
			p.Kind = netsim.KindRoCE
			p.HdrLen = uint8(copy(p.Hdr[:], buf[wire.EthernetLen+20+wire.UDPLen:size]))
			n.Hosts["s1"].Receive(p, nil)
			if c := n.Flows["a"].Sender.CeilingBitsPerSec(); c != 3e9 {
				t.Errorf("s1's ceiling %d after a rogue's advice, want n1's 3 Gb/s", c)
			}
			type counts struct{ Applied, Untrusted int64 }
			got := map[string]counts{}
			for name, f := range funcs {
				var c counts
				for _, rv := range f.recvs {
					c.Applied += rv.Counters().Applied
					c.Untrusted += rv.Counters().Untrusted
				}
				got[name] = c
			}
			want := map[string]counts{"n1": {Applied: got["n1"].Applied}, "n2": {}}
			if got["n1"].Applied == 0 {
				t.Errorf("n1's receivers applied no advice")
			}
			first := want[order[0]]
			first.Untrusted = 1
			want[order[0]] = first
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("each switch's receivers (-want +got):\n%s", diff)
			}
			// Each function's counters hold its receivers', as Fast
			// CNP's do (they were left out).
			for name, f := range funcs {
				var applied, dropped int64
				for _, rv := range f.recvs {
					c := rv.Counters()
					applied += c.Applied
					dropped += c.NotCapable + c.Untrusted + c.NoQP + c.Malformed
				}
				c := f.Counters()
				if c["rnic_advice_applied"] != applied || c["rnic_advice_dropped"] != dropped || c["advice_policy"] != f.node.Counters().PolicyAdvice {
					t.Errorf("%s: counters %v, want rnic_advice_applied %d, rnic_advice_dropped %d beside the node's", name, c, applied, dropped)
				}
			}
		})
	}
}

// TestHoldKeepsTheSweep: held (mechanism.Deferrer), a configuration with
// another min-advice-interval and then the one before again (a Set set
// back) leave the sweep where it falls: no event more pending, the next
// sweep when it was due. Settled after a change, the sweep is re-armed
// once for the new period. Each change re-armed the sweep before, two
// stale sweeps pending after the set back (this test failed then).
func TestHoldKeepsTheSweep(t *testing.T) {
	n := oneSwitch(t)
	cfg := *enabled()
	f, err := NewFunction(n.Switches["n1"], cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.Settle() // created held: the sweep armed, as a kept Set does
	n.Sim.Run(50 * engine.Microsecond)
	other := cfg
	other.MinAdviceInterval = cfg.MinAdviceInterval * 3
	configure := func(c Config) {
		t.Helper()
		if err := f.Configure(c, lhcnp.Config{}); err != nil {
			t.Fatal(err)
		}
	}
	pending, next := n.Sim.Pending(), n.Sim.NextAt()
	f.Hold()
	configure(other)
	configure(cfg)
	f.Settle()
	if got, at := n.Sim.Pending(), n.Sim.NextAt(); got != pending || at != next {
		t.Errorf("set back: %d events pending, the next at %v; want %d at %v as before", got, at, pending, next)
	}
	f.Hold()
	configure(other)
	f.Settle()
	if got := n.Sim.Pending(); got != pending+1 {
		t.Errorf("settled after a change: %d events pending, want the sweep re-armed once, %d", got, pending+1)
	}
}

// oneSwitch is s -- n1 -- r, 10 Gb/s links of 1 µs, no flow.
func oneSwitch(t *testing.T) *mechtest.Net {
	return mechtest.Build(t, mechtest.Spec{
		Host:     netsim.DefaultHostConfig(),
		Hosts:    []mechtest.Node{{Name: "s", Addr: "10.0.0.1"}, {Name: "r", Addr: "10.0.4.1"}},
		Switches: []mechtest.Node{{Name: "n1", Addr: addrN1.String()}},
		Links: []mechtest.Link{{A: "s", B: "n1", RateBitsPerSec: 10e9, Delay: engine.Microsecond},
			{A: "n1", B: "r", RateBitsPerSec: 10e9, Delay: engine.Microsecond}},
	})
}

// TestRemovedBeforeSettleLeavesNoSweep: a function created (NewFunction)
// and removed before it is settled (a Set that failed after creating it)
// leaves the engine as it was: no event pending, none run; a Settle
// after the Remove arms nothing. Settled instead, it arms its sweep once,
// at the creation's instant plus min-advice-interval. NewFunction armed
// the sweep before, and Remove left it pending until it fired, stale
// (this test failed then: one event more pending after the Remove).
func TestRemovedBeforeSettleLeavesNoSweep(t *testing.T) {
	for _, kept := range []bool{false, true} {
		t.Run(map[bool]string{false: "removed", true: "settled"}[kept], func(t *testing.T) {
			n := oneSwitch(t)
			n.Sim.Run(30 * engine.Microsecond)
			pending, next, events := n.Sim.Pending(), n.Sim.NextAt(), n.Sim.Events()
			cfg := *enabled()
			f, err := NewFunction(n.Switches["n1"], cfg)
			if err != nil {
				t.Fatal(err)
			}
			created := n.Sim.Now()
			if !kept {
				f.Remove()
				f.Settle()
				if got, at := n.Sim.Pending(), n.Sim.NextAt(); got != pending || at != next {
					t.Errorf("removed: %d events pending, the next at %v; want %d at %v as before", got, at, pending, next)
				}
				n.Sim.Run(30*engine.Microsecond + 3*cfg.MinAdviceInterval)
				if got := n.Sim.Events(); got != events {
					t.Errorf("removed: %d events run, want %d as before", got, events)
				}
				return
			}
			f.Settle()
			if got, at := n.Sim.Pending(), n.Sim.NextAt(); got != pending+1 || at != min(next, created+cfg.MinAdviceInterval) {
				t.Errorf("settled: %d events pending, the next at %v; want %d, the sweep at %v", got, at, pending+1, created+cfg.MinAdviceInterval)
			}
			f.Settle() // once
			if got := n.Sim.Pending(); got != pending+1 {
				t.Errorf("settled twice: %d events pending, want %d", got, pending+1)
			}
		})
	}
}
