package lhcnp

import (
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// TestPeakTracker: the sliding maximum keeps a depth for a second (in
// tenths: up to 1.1 s) and forgets it after, and reading it changes
// nothing.
func TestPeakTracker(t *testing.T) {
	ms := engine.Millisecond
	var p peakTracker
	p.observe(350*ms, 5_000_000)
	p.observe(500*ms, 1_000_000)
	for _, c := range []struct {
		at   engine.Time
		want int64
	}{
		{350 * ms, 5_000_000}, {1200 * ms, 5_000_000}, {1399 * ms, 5_000_000},
		{1400 * ms, 1_000_000}, {1599 * ms, 1_000_000}, {1600 * ms, 0}, {30 * engine.Second, 0},
	} {
		if got := p.at(c.at); got != c.want {
			t.Errorf("at %v: %d, want %d", c.at, got, c.want)
		}
	}
	// Reading was pure: the same values again, and a late depth after a
	// long quiet spell is alone in the window.
	if got := p.at(1200 * ms); got != 5_000_000 {
		t.Errorf("at 1.2 s read again: %d", got)
	}
	p.observe(20*engine.Second, 7)
	if got := p.at(20 * engine.Second); got != 7 {
		t.Errorf("after a quiet spell: %d, want 7", got)
	}
	p.observe(20*engine.Second+2*peakBucket, 3)
	if got := p.at(20*engine.Second + 2*peakBucket); got != 7 {
		t.Errorf("two buckets on: %d, want 7", got)
	}
}

// TestPeakQueueDepthLastSecond: a node's published peak-queue-depth is
// the highest QD over the last second (the YANG model's description), not
// the highest since the node started: a burst shows in it for a second
// after the queue drained, and then no more.
func TestPeakQueueDepthLastSecond(t *testing.T) {
	cfg := testConfig(1<<40, 100*engine.Microsecond) // a K_max the queue never reaches: the node only watches
	l := newLine(t, lineOpts{srcRate: 10e9, midRate: 5e9, flowBytes: 4_000_000, cfg1: &cfg, noRP: true})
	q := func() QueueState { return l.node1.State(false).Ports[l.n1Out.Index()].Queues[0] }
	var burst, at engine.Time
	var high int64
	for now := engine.Millisecond / 10; now < 20*engine.Millisecond; now += engine.Millisecond / 10 {
		l.sim.Run(now)
		if s := q(); s.QueueBytes > high {
			high, at = s.QueueBytes, now
		}
	}
	if high < 1_000_000 {
		t.Fatalf("a 2:1 bottleneck queued at most %d B", high)
	}
	burst = at
	if s := q(); s.QueueBytes != 0 || s.PeakQueueBytes < high {
		t.Fatalf("after the flow: QD %d, peak %d, want 0 and at least %d", s.QueueBytes, s.PeakQueueBytes, high)
	}
	l.sim.Run(burst + 900*engine.Millisecond)
	if s := q(); s.PeakQueueBytes < high {
		t.Errorf("0.9 s after the burst: peak %d, want at least %d", s.PeakQueueBytes, high)
	}
	l.sim.Run(burst + 1200*engine.Millisecond)
	if s := q(); s.PeakQueueBytes != 0 {
		t.Errorf("1.2 s after the burst, the queue idle since: peak %d, want 0", s.PeakQueueBytes)
	}
}
