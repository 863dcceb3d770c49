package writer

import (
	"time"

	"github.com/cenkalti/backoff/v5"
)

// NewBackOff returns a jittered exponential back-off from initial whose
// waits never exceed longest, jitter included: backoff's randomization
// spreads a wait over ±RandomizationFactor of the current interval, on top
// of MaxInterval, so MaxInterval (and the initial interval) are set to
// longest/(1+RandomizationFactor). writer.retry_max is the longest wait of
// every retry of the collector's database work.
func NewBackOff(initial, longest time.Duration) *backoff.ExponentialBackOff {
	bo := backoff.NewExponentialBackOff()
	ceiling := time.Duration(float64(longest) / (1 + bo.RandomizationFactor))
	bo.InitialInterval, bo.MaxInterval = min(initial, ceiling), ceiling
	bo.Reset()
	return bo
}
