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

func (d *dropFrom) Forward(_ *Switch, _ *Packet, in, out *Port) bool {
	d.seen++
	if in == nil {
		d.sawOwnOut = out
		return !d.own
	}
	return in != d.in
}

// A Forwarder sees every packet a switch forwards or originates, with
// its ingress (nil for its own) and egress ports, and a refused packet is
// dropped and counted, not queued; everything else is untouched.
func TestForwardFilter(t *testing.T) {
	in := newIncast(t, incastCfg{senders: 2, rateBitsPerSec: 10e9, accessDelay: engine.Microsecond,
		bnDelay: engine.Microsecond, port: PortConfig{BufferBytes: 16 << 20}, host: DefaultHostConfig()})
	s0 := in.senders[0].Port().Peer() // the switch's port towards sender 0
	f := &dropFrom{in: s0, own: true}
	in.sw.SetForwarder(StageFilter, f)
	if in.sw.Forwarder(StageFilter) != f || in.sw.Forwarder(StageRewrite) != nil {
		t.Fatal("Forwarder() does not return the forwarder set at each stage")
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
	in.sw.SetForwarder(StageFilter, nil)
	rx := in.flows[1].Receiver.RxBytes()
	in.sim.Run(in.sim.Now() + 2*engine.Millisecond)
	if in.sw.Stats().FilterDrops != drops+1 || in.flows[1].Receiver.RxBytes() == rx {
		t.Errorf("after removal: filter drops %d (want %d), flow 1 delivered %d more bytes (want some)",
			in.sw.Stats().FilterDrops, drops+1, in.flows[1].Receiver.RxBytes()-rx)
	}
}

// stageLog is a Forwarder that logs what it sees in a log shared by the
// stages; drop refuses packets that arrived on that port; grow adds bytes
// to every packet it passes (as a tunnel's ingress does).
type stageLog struct {
	name string
	log  *[]string
	drop *Port
	grow int32
	seen map[*Packet]int32 // size as seen, by packet, for the current step
}

func (l *stageLog) Forward(_ *Switch, p *Packet, in, _ *Port) bool {
	*l.log = append(*l.log, l.name)
	l.seen[p] = p.SizeBytes
	if in != nil && in == l.drop {
		return false
	}
	p.SizeBytes += l.grow
	return true
}

// TestForwardStagesOrder: with both stages set, the filter runs first on
// every packet, whatever order they were installed in: it sees the packet
// as it arrived (not the rewrite's growth), and what it drops never
// reaches the rewrite stage. Removing one leaves the other working.
func TestForwardStagesOrder(t *testing.T) {
	for _, tt := range []struct {
		desc         string
		rewriteFirst bool // install the rewrite stage before the filter
	}{
		{"filter installed first", false},
		{"rewrite installed first", true},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			in := newIncast(t, incastCfg{senders: 2, rateBitsPerSec: 10e9, accessDelay: engine.Microsecond,
				bnDelay: engine.Microsecond, port: PortConfig{BufferBytes: 16 << 20}, host: DefaultHostConfig()})
			var log []string
			s0 := in.senders[0].Port().Peer()
			filter := &stageLog{name: "filter", log: &log, drop: s0, seen: map[*Packet]int32{}}
			rewrite := &stageLog{name: "rewrite", log: &log, grow: 40, seen: map[*Packet]int32{}}
			if tt.rewriteFirst {
				in.sw.SetForwarder(StageRewrite, rewrite)
				in.sw.SetForwarder(StageFilter, filter)
			} else {
				in.sw.SetForwarder(StageFilter, filter)
				in.sw.SetForwarder(StageRewrite, rewrite)
			}
			var sizeErrs int
			in.sw.SetObserver(enqueueFunc(func(p *Packet) {
				// Every packet queued passed both: the filter saw it
				// 40 bytes shorter than the rewrite left it.
				if filter.seen[p]+40 != p.SizeBytes || rewrite.seen[p] != filter.seen[p] {
					sizeErrs++
				}
				delete(filter.seen, p)
				delete(rewrite.seen, p)
			}))
			in.sim.Run(engine.Millisecond)
			if len(log) == 0 {
				t.Fatal("no packet forwarded")
			}
			for i := 0; i < len(log); i++ {
				if log[i] == "rewrite" && (i == 0 || log[i-1] != "filter") {
					t.Fatalf("call %d is the rewrite stage without the filter just before it: %v", i, log[max(0, i-3):i+1])
				}
			}
			drops := in.sw.Stats().FilterDrops
			var filterCalls, rewriteCalls int64
			for _, s := range log {
				if s == "filter" {
					filterCalls++
				} else {
					rewriteCalls++
				}
			}
			if drops == 0 || filterCalls-rewriteCalls != drops {
				t.Errorf("filter calls %d, rewrite calls %d, filter drops %d: want the rewrite to see all but the dropped",
					filterCalls, rewriteCalls, drops)
			}
			if sizeErrs != 0 {
				t.Errorf("%d queued packets not seen by the filter as they arrived and grown by the rewrite once", sizeErrs)
			}
			if in.flows[0].Receiver.RxBytes() != 0 || in.flows[1].Receiver.RxBytes() == 0 {
				t.Errorf("flows delivered %d and %d bytes: want only the unfiltered one",
					in.flows[0].Receiver.RxBytes(), in.flows[1].Receiver.RxBytes())
			}
			// The filter removed: the rewrite alone sees every packet.
			in.sw.SetForwarder(StageFilter, nil)
			if in.sw.Forwarder(StageRewrite) != rewrite {
				t.Fatal("removing the filter removed the rewrite stage")
			}
			log = log[:0]
			in.sim.Run(2 * engine.Millisecond)
			for _, s := range log {
				if s != "rewrite" {
					t.Fatalf("after removing the filter the log has %q", s)
				}
			}
			if len(log) == 0 || in.sw.Stats().FilterDrops != drops {
				t.Errorf("%d rewrite calls, filter drops %d (want some calls, still %d)", len(log), in.sw.Stats().FilterDrops, drops)
			}
		})
	}
}

// enqueueFunc is a PortObserver that only watches enqueues.
type enqueueFunc func(p *Packet)

func (f enqueueFunc) OnEnqueue(_ *Port, p *Packet, _ int64) { f(p) }
func (enqueueFunc) OnDequeue(*Port, *Packet, int64)         {}
func (enqueueFunc) OnMark(*Port, *Packet, int64)            {}
func (enqueueFunc) OnDrop(*Port, *Packet, int64)            {}
