package dataplane

import (
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/gen/oc"
)

// A queue's pfc-pause-frames counter is published: the PAUSE frames its
// port sent upstream for the queue's priority (it was never set, so the
// collector's drops_and_pauses.pfc_pause_frames was NULL everywhere).
func TestQueueStatePFCPauseFrames(t *testing.T) {
	for _, n := range []int64{0, 7} {
		q := &oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue{}
		queueState(q, &lhcnp.QueueState{ID: 3, PFCPauseFrames: n}, lhcnp.QueueConfig{}, func(engine.Time) uint64 { return 0 })
		c := q.GetState().GetCounters()
		if c.PfcPauseFrames == nil || *c.PfcPauseFrames != uint64(n) {
			t.Errorf("PFCPauseFrames %d: pfc-pause-frames %v, want %d", n, c.PfcPauseFrames, n)
		}
	}
}
