package lhcnp

import "github.com/lhcnp/lhcnp/dataplane-sim/engine"

// The queue's peak depth as the YANG model's peak-queue-depth describes it:
// the highest depth over the last second of the node's time, so that a
// burst between two telemetry samples is not missed, and an old one is
// forgotten. It is kept in peakBuckets buckets of a tenth of peakWindow
// each, so the reading covers between one and 1.1 seconds back.
const (
	peakWindow  = engine.Second
	peakBuckets = 10
	peakBucket  = peakWindow / peakBuckets
)

// peakTracker is a sliding maximum: max[b % len] is the highest depth
// seen in bucket b (the time b·peakBucket to (b+1)·peakBucket), for the
// buckets last-peakBuckets to last; cur is last % len and until the end
// of bucket last (an enqueue inside it costs a compare).
type peakTracker struct {
	last  int64
	cur   int
	until engine.Time
	max   [peakBuckets + 1]int64
}

// observe records a depth at now (never earlier than the last call).
func (t *peakTracker) observe(now engine.Time, depth int64) {
	if now >= t.until {
		t.roll(now)
	}
	if depth > t.max[t.cur] {
		t.max[t.cur] = depth
	}
}

// roll moves to now's bucket, clearing the buckets the clock has passed
// (at most the whole ring).
func (t *peakTracker) roll(now engine.Time) {
	b := int64(now / peakBucket)
	n := int64(len(t.max))
	for i := t.last + 1; i <= b && i <= t.last+n; i++ {
		t.max[i%n] = 0
	}
	t.last, t.cur, t.until = b, int(b%n), engine.Time(b+1)*peakBucket
}

// at is the highest depth recorded over the last second before now
// (peakBuckets whole buckets and the current one); it changes nothing,
// so a snapshot stays pure.
func (t *peakTracker) at(now engine.Time) int64 {
	b := int64(now / peakBucket)
	var m int64
	for i := max(b-peakBuckets, t.last-peakBuckets, 0); i <= min(b, t.last); i++ {
		m = max(m, t.max[i%int64(len(t.max))])
	}
	return m
}
