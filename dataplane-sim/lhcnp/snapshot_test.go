package lhcnp

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
)

// TestSnapshotsArePure runs the two-node line of
// TestCollaborativeSuppression, whose decisions hang on the flows'
// arrival-rate windows (§5.7 deferral, escalation), with flow aging, once
// never observed and once with State(true) and Flow read on both nodes
// every 10 µs, as the §7 runner and the gNMI target poll. Reading state
// must change nothing: the two runs send, defer and escalate identically,
// event for event, and the source applies the same.
func TestSnapshotsArePure(t *testing.T) {
	type run struct {
		events1, events2 []Event
		rp               ReactionCounters
		rate             int64
	}
	do := func(poll bool) run {
		c1 := testConfig(100_000, 500*engine.Microsecond)
		c1.FlowTable.IdleTimeout = 1500 * engine.Microsecond
		c2 := testConfig(2_000_000, 4*engine.Millisecond)
		c2.FlowTable.IdleTimeout = 1500 * engine.Microsecond
		rc := DefaultReactionConfig()
		rc.RTTEst = 10 * engine.Millisecond
		rc.TrustedSources = trusted(false)
		l := newLine(t, lineOpts{srcRate: 10e9, midRate: 9e9, dstRate: 4e9, cfg1: &c1, cfg2: &c2, rc: rc})
		// A second, short flow that goes idle and ages out mid-run.
		if _, err := l.net.AddFlow(netsim.FlowConfig{Src: l.src, Dst: l.dst, SrcQPN: 101, DstQPN: 201, Bytes: 200_000,
			Start: 2 * engine.Millisecond, NoCM: true}); err != nil {
			t.Fatal(err)
		}
		if poll {
			fk := FlowKey{Src: addrSrc4, Dst: addrDst4, SrcQP: 100, DstQP: 200}
			fk2 := FlowKey{Src: addrSrc4, Dst: addrDst4, SrcQP: 101, DstQP: 201}
			l.sim.Every(0, 10*engine.Microsecond, func(now engine.Time) {
				for _, n := range []*Node{l.node1, l.node2} {
					// Every entry, field by field, before and after the
					// reads: a snapshot that rolled a rate window or aged
					// an entry shows here even when no decision follows.
					before := entries(n)
					n.State(true)
					n.Flow(fk)
					n.Flow(fk2)
					if after := entries(n); !cmp.Equal(before, after, cmp.AllowUnexported(flowEntry{}, links{}), addrCmp) {
						t.Fatalf("%v: reading %s's state changed its flow table", now, n.Switch().Name())
					}
				}
			})
		}
		l.sim.Run(12 * engine.Millisecond)
		return run{events1: l.events1, events2: l.events2, rp: l.rp.Counters(), rate: l.flow.Sender.RateBitsPerSec()}
	}
	quiet, polled := do(false), do(true)
	if len(eventsOf(quiet.events2, EventDeferral)) == 0 || len(eventsOf(quiet.events1, EventFlowAged)) == 0 {
		t.Fatalf("the run has no deferral or no aging to disturb: n1 %+v, n2 %+v", quiet.events1, quiet.events2)
	}
	if diff := cmp.Diff(quiet, polled, cmp.AllowUnexported(run{}), addrCmp); diff != "" {
		t.Errorf("polling changed the run (-never polled, +polled every 10 µs):\n%s", diff)
	}
}

// entries copies every flow-table entry of n.
func entries(n *Node) []flowEntry {
	var out []flowEntry
	for e := n.ft.lru.head; e != nil; e = e.nextActive() {
		c := *e
		c.link = [2]links{} // pointers into the table: compared through the order
		out = append(out, c)
	}
	return out
}

// TestIdleStateDecays: once a port's traffic stops, State reports the ECN
// marking rate and queue growth rate the node would compute now (0), not
// those of the last busy window, which it would otherwise report for ever
// (the tuner read an idle port as 100 % marked).
func TestIdleStateDecays(t *testing.T) {
	cfg := testConfig(100_000, 500*engine.Microsecond)
	cfg.Interface.Queue.Action.ResumeEnabled = false
	l := newLine(t, lineOpts{srcRate: 10e9, midRate: 5e9, cfg1: &cfg, flowBytes: 4_000_000})
	var busyEMR float64
	var busyQGR int64
	l.sim.Every(0, 50*engine.Microsecond, func(engine.Time) {
		for _, p := range l.node1.State(false).Ports {
			for _, q := range p.Queues {
				busyEMR = max(busyEMR, q.ECNMarkingPercent)
				busyQGR = max(busyQGR, q.QueueGrowthBytesPerSec)
			}
		}
	})
	l.sim.Run(30 * engine.Millisecond)
	if done, _ := l.flow.Done(); !done {
		t.Fatalf("the flow has not finished in 30 ms")
	}
	if busyEMR == 0 || busyQGR == 0 {
		t.Fatalf("while busy: EMR %v %%, QGR %v B/s; want both above 0 (the test shows nothing otherwise)", busyEMR, busyQGR)
	}
	for _, p := range l.node1.State(false).Ports {
		for _, q := range p.Queues {
			if q.QueueBytes != 0 || q.ECNMarkingPercent != 0 || q.QueueGrowthBytesPerSec != 0 {
				t.Errorf("%s queue %d idle: %d B, EMR %v %%, QGR %d B/s; want 0, 0, 0", p.Name, q.ID, q.QueueBytes, q.ECNMarkingPercent, q.QueueGrowthBytesPerSec)
			}
		}
	}
}
