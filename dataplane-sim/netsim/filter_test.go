package netsim

import (
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// dropFrom refuses every packet that arrived on port in (and, with own, the
// switch's own packets), counting what it saw.
type dropFrom struct {
	in        *Port
	own       bool
	seen      int
	sawOwnOut *Port
}

func (d *dropFrom) AllowForward(in, out *Port, _ *Packet) bool {
	d.seen++
	if in == nil {
		d.sawOwnOut = out
		return !d.own
	}
	return in != d.in
}

// A ForwardFilter sees every packet a switch forwards or originates, with
// its ingress (nil for its own) and egress ports, and a refused packet is
// dropped and counted, not queued; everything else is untouched.
func TestForwardFilter(t *testing.T) {
	in := newIncast(t, incastCfg{senders: 2, rateBps: 10e9, accessDelay: engine.Microsecond,
		bnDelay: engine.Microsecond, port: PortConfig{BufferBytes: 16 << 20}, host: DefaultHostConfig()})
	s0 := in.senders[0].Port().Peer() // the switch's port towards sender 0
	f := &dropFrom{in: s0, own: true}
	in.sw.SetForwardFilter(f)
	if in.sw.ForwardFilter() != f {
		t.Fatal("ForwardFilter() does not return the filter set")
	}
	in.sim.Run(2 * engine.Millisecond)
	if got := in.flows[0].Receiver.RxBytes(); got != 0 {
		t.Errorf("flow from the filtered port delivered %d bytes, want none", got)
	}
	if got := in.flows[1].Receiver.RxBytes(); got == 0 {
		t.Error("flow from the other port delivered nothing")
	}
	drops := in.sw.Stats().FilterDrops
	if drops == 0 || f.seen == 0 {
		t.Errorf("filter drops %d, calls %d: want the first flow's packets refused", drops, f.seen)
	}
	var sent bool
	in.sim.Do(func() {
		p := in.net.NewPacket()
		p.Src, p.Dst, p.SizeBytes, p.Kind = in.sw.ID(), in.recv.ID(), 64, KindOther
		sent = in.sw.Send(p)
	})
	if sent || f.sawOwnOut != in.bottleneck || in.sw.Stats().FilterDrops != drops+1 {
		t.Errorf("Send of a refused own packet = %v (egress seen %v), filter drops %d: want false, the bottleneck, %d",
			sent, f.sawOwnOut, in.sw.Stats().FilterDrops, drops+1)
	}
	// Removed, it drops nothing more (flow 0 stays idle: its CM REQ was
	// refused and is retried only after seconds).
	in.sw.SetForwardFilter(nil)
	rx := in.flows[1].Receiver.RxBytes()
	in.sim.Run(in.sim.Now() + 2*engine.Millisecond)
	if in.sw.Stats().FilterDrops != drops+1 || in.flows[1].Receiver.RxBytes() == rx {
		t.Errorf("after removal: filter drops %d (want %d), flow 1 delivered %d more bytes (want some)",
			in.sw.Stats().FilterDrops, drops+1, in.flows[1].Receiver.RxBytes()-rx)
	}
}
