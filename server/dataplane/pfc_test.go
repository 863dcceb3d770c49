package dataplane

import (
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/gen/oc"
)

// A queue's pfc-pause-frames counter is published: the PAUSE frames its
// port sent upstream for the queue's priority (it was never set, so the
// collector's drops_and_pauses.pfc_pause_frames was NULL everywhere); and
// its packets and bytes are those transmitted from the queue, as the
// leaves say, not the node's count of data packets enqueued (more than the
// port sends while the queue grows: queue_utilisation read over 100 %).
func TestQueueStateCounters(t *testing.T) {
	for _, n := range []int64{0, 7} {
		q := &oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue{}
		qs := lhcnp.QueueState{ID: 3, PFCPauseFrames: n, TxPackets: 2 * n, TxBytes: 1000 * n,
			Counters: lhcnp.QueueCounters{Packets: 3 * n, Bytes: 5000 * n}}
		queueState(q, &qs, lhcnp.QueueConfig{}, func(engine.Time) uint64 { return 0 }, oc.LhcnpTypes_NotificationFormat_UNSET)
		c := q.GetState().GetCounters()
		got := [3]uint64{c.GetPfcPauseFrames(), c.GetPackets(), c.GetBytes()}
		if want := [3]uint64{uint64(n), uint64(2 * n), uint64(1000 * n)}; got != want || c.PfcPauseFrames == nil {
			t.Errorf("pfc-pause-frames, packets, bytes %v, want %v", got, want)
		}
	}
}
