package netsim

import (
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// A shared buffer with dynamic thresholds caps a lone congested port at
// alpha/(1+alpha) of the buffer (a packet joins a queue q while q plus
// the packet stays at most alpha (B - q)) and drops beyond; the switch's occupancy returns to
// zero when the queues drain.
func TestSharedBufferDynamicThreshold(t *testing.T) {
	const b = 1_000_000
	for _, tt := range []struct {
		desc  string
		alpha float64
	}{
		{"alpha 1: half the buffer", 1},
		{"alpha 2: two thirds", 2},
		{"alpha 1/4: a fifth", 0.25},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			hc := DefaultHostConfig()
			hc.DCQCN.Enabled = false
			in := newIncast(t, incastCfg{senders: 4, rateBitsPerSec: 25e9, accessDelay: engine.Microsecond, bnDelay: engine.Microsecond,
				host: hc, sharedBytes: b, alpha: tt.alpha})
			for _, f := range in.flows {
				f.Sender.totalBytes = 2_000_000
			}
			in.sim.Run(2 * engine.Millisecond)
			st := in.bottleneck.Stats()
			limit := int64(tt.alpha / (1 + tt.alpha) * b)
			frame := int64(DataBytes(in.senders[0].Addr(), in.senders[0].Config().MTUBytes, true))
			// The threshold is taken on the buffer free before the packet,
			// so the last one admitted may pass it by part of a frame.
			if st.PeakQueueBytes > limit+frame || st.PeakQueueBytes < limit-frame {
				t.Errorf("peak queue %d B, want within a frame (%d B) of %d B", st.PeakQueueBytes, frame, limit)
			}
			if st.DropPackets == 0 {
				t.Errorf("no drops: a 4:1 incast of 8 MB should overflow %d B", limit)
			}
			in.sim.Run(20 * engine.Millisecond)
			if u := in.sw.SharedBufferUsed(); u != 0 {
				t.Errorf("shared buffer holds %d B after the queues drained", u)
			}
		})
	}
}
