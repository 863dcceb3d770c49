package netsim

import (
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

func TestLoneFlowLineRate(t *testing.T) {
	const rate = 100e9
	in := newIncast(t, incastCfg{senders: 1, rateBitsPerSec: rate, accessDelay: engine.Microsecond, bnDelay: engine.Microsecond,
		port: dcqcnPort(100_000, 400_000, 16<<20), host: DefaultHostConfig()})
	const warm, end = 1 * engine.Millisecond, 5 * engine.Millisecond
	var rx0 int64
	var maxQ int64
	in.sim.AtFunc(warm, func() { rx0 = in.flows[0].Receiver.RxBytes() })
	in.sim.Every(warm, engine.Microsecond, func(engine.Time) {
		maxQ = max(maxQ, in.bottleneck.TotalQueueBytes())
	})
	in.sim.Run(end)
	rx := in.flows[0].Receiver.RxBytes() - rx0
	gotBitsPerSec := float64(rx*8) / (end - warm).Seconds()
	// Goodput of a 4096-byte payload in a 4158-byte frame.
	wantBitsPerSec := rate * 4096 / float64(4096+RoCEv4OverheadBytes)
	if gotBitsPerSec < 0.995*wantBitsPerSec || gotBitsPerSec > 1.001*wantBitsPerSec {
		t.Errorf("goodput %.3f Gb/s, want %.3f Gb/s (line rate less headers)", gotBitsPerSec/1e9, wantBitsPerSec/1e9)
	}
	if maxQ > 2*(4096+RoCEv4OverheadBytes+16) {
		t.Errorf("standing queue: max %d bytes after warm-up, want at most two frames", maxQ)
	}
	if m := in.bottleneck.Stats().ECNMarks; m != 0 {
		t.Errorf("%d ECN marks, want none", m)
	}
	t.Logf("goodput %.3f Gb/s, max queue %d B, events %d", gotBitsPerSec/1e9, maxQ, in.sim.Events())
}
