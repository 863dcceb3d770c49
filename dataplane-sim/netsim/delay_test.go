package netsim

import (
	"net/netip"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// arrival is a data packet as it reached the far end of a link.
type arrival struct {
	psn        uint32
	sentAt, at engine.Time // transmission start at the host, arrival at the switch
}

// arrivalLog is a Forwarder that keeps the data packets one host sent, as
// they reach the switch at the far end of its link.
type arrivalLog struct {
	src NodeID
	sim *engine.Sim
	got []arrival
}

func (a *arrivalLog) Forward(_ *Switch, p *Packet, _, _ *Port) bool {
	if p.Kind == KindRoCE && p.Src == a.src && p.Opcode().IsData() {
		a.got = append(a.got, arrival{psn: p.PSN(), sentAt: p.SentAt, at: a.sim.Now()})
	}
	return true
}

// delayChangeRun sends one flow at 10 Gb/s over a link of 10 µs towards a
// switch, changes the link's delay to newDelay at 100 µs (what a scenario's
// link-delay and rtt events do) and returns every data packet's arrival
// at the switch up to 200 µs.
func delayChangeRun(t *testing.T, newDelay engine.Time) []arrival {
	t.Helper()
	sim := engine.New(engine.WithSeed(1))
	n := New(sim)
	sw, err := n.AddSwitch("sw", netip.MustParseAddr("10.0.0.254"), SwitchConfig{})
	if err != nil {
		t.Fatal(err)
	}
	hc := DefaultHostConfig()
	hc.MTUBytes = 1024
	src, err := n.AddHost("src", netip.MustParseAddr("10.0.0.1"), hc)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := n.AddHost("dst", netip.MustParseAddr("10.0.0.2"), hc)
	if err != nil {
		t.Fatal(err)
	}
	pa, _, err := n.Connect(src, sw, LinkConfig{RateBitsPerSec: 10e9, Delay: 10 * engine.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.Connect(sw, dst, LinkConfig{RateBitsPerSec: 10e9, Delay: engine.Microsecond}); err != nil {
		t.Fatal(err)
	}
	n.ComputeRoutes()
	if _, err := n.AddFlow(FlowConfig{Src: src, Dst: dst, NoCM: true}); err != nil {
		t.Fatal(err)
	}
	log := &arrivalLog{src: src.ID(), sim: sim}
	sw.SetForwarder(StageFilter, log)
	sim.AtFunc(100*engine.Microsecond, func() { pa.Out().SetDelay(newDelay) })
	sim.Run(200 * engine.Microsecond)
	return log.got
}

// TestLinkDelayChangeInFlight pins down what a delay change does to the
// packets in flight (docs/scenarios.md, "Events"): a packet takes the delay
// in force when its transmission starts, and packets never overtake each
// other. A shorter delay therefore holds the packets sent during the
// difference behind the last packet sent on the old delay: they all arrive
// in the same instant as it, a burst of the difference times the rate
// (5 µs at 10 Gb/s: six 1 KB frames); a longer delay leaves a gap of the
// difference in the arrivals. In either case nothing is lost or reordered.
func TestLinkDelayChangeInFlight(t *testing.T) {
	const change = 100 * engine.Microsecond
	const frameNs = 1104 * 8 / 10 // a 1024-byte WRITE MIDDLE frame at 10 Gb/s, ns (883.2)
	check := func(t *testing.T, got []arrival, newDelay engine.Time) (lastOld, firstNew arrival, held []arrival) {
		t.Helper()
		if len(got) < 100 {
			t.Fatalf("%d packets arrived, want a steady flow", len(got))
		}
		for i := 1; i < len(got); i++ {
			if got[i].psn != got[i-1].psn+1 || got[i].at < got[i-1].at {
				t.Fatalf("packet %d (psn %d at %v) after psn %d at %v: want every packet, in order",
					i, got[i].psn, got[i].at, got[i-1].psn, got[i-1].at)
			}
		}
		for _, a := range got {
			flight := a.at - a.sentAt
			switch {
			case a.sentAt < change:
				// Sent on the old delay: the delay plus its own serialisation.
				if flight < 10*engine.Microsecond || flight > 10*engine.Microsecond+frameNs+1 {
					t.Errorf("psn %d sent at %v before the change: %v in flight, want 10 µs + its frame", a.psn, a.sentAt, flight)
				}
				lastOld = a
			case a.at == lastOld.at:
				held = append(held, a)
			default:
				if flight < newDelay || flight > newDelay+frameNs+1 {
					t.Errorf("psn %d sent at %v: %v in flight, want %v + its frame", a.psn, a.sentAt, flight, newDelay)
				}
				if firstNew.at == 0 {
					firstNew = a
				}
			}
		}
		return lastOld, firstNew, held
	}
	t.Run("shorter", func(t *testing.T) {
		lastOld, firstNew, held := check(t, delayChangeRun(t, 5*engine.Microsecond), 5*engine.Microsecond)
		// The packets whose new arrival would come before the last old
		// one's: those sent within 5 µs of the change, delivered at once.
		if len(held) < 5 || len(held) > 6 {
			t.Errorf("%d packets held behind the last one on the old delay (arrival %v), want the 5-6 sent in the 5 µs after the change", len(held), lastOld.at)
		}
		for _, a := range held {
			if a.sentAt < change || a.sentAt >= change+5*engine.Microsecond {
				t.Errorf("held psn %d sent at %v, want it sent within 5 µs of the change", a.psn, a.sentAt)
			}
		}
		if firstNew.sentAt < change+5*engine.Microsecond-frameNs {
			t.Errorf("first packet on the new delay sent at %v, want no earlier than about 5 µs after the change", firstNew.sentAt)
		}
	})
	t.Run("longer", func(t *testing.T) {
		lastOld, firstNew, held := check(t, delayChangeRun(t, 15*engine.Microsecond), 15*engine.Microsecond)
		if len(held) != 0 {
			t.Errorf("%d packets arrived with the last old one, want none", len(held))
		}
		// A gap of the 5 µs difference (plus one frame time) in the arrivals.
		if gap := firstNew.at - lastOld.at; gap < 5*engine.Microsecond || gap > 5*engine.Microsecond+2*frameNs {
			t.Errorf("arrivals pause %v at the change, want about 5 µs", gap)
		}
	})
}
