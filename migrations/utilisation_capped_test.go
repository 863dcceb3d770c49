package migrations_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestUtilisationCapped: a queue whose samples' timestamps stray from the
// instants of their counter values (one second's bytes stamped 0.8 s after
// the previous sample, the next 1.2 s after) reads 125 % then 83 % of its
// port's rate per the bytes over the time between the samples; the share
// is capped at 100 %, the measured rates stay as they are. A queue at half
// its port's rate reads 50 %.
func TestUtilisationCapped(t *testing.T) {
	f := newFixture(t)
	jitter := f.series("jitter", queueState+"counters/bytes", "wan", 0)
	half := f.series("half", queueState+"counters/bytes", "wan", 0)
	for s, at := range []time.Duration{0, time.Second, 1800 * ms, 3 * time.Second} {
		f.add(jitter, at, s*100e6/8, 0) // 100 Mb of sending per sample
		f.add(half, time.Duration(s)*time.Second, s*50e6/8, 0)
	}
	for _, target := range []string{"jitter", "half"} {
		f.add(f.series(target, ifState+"effective-port-rate", "wan", -1), 0, 100_000_000, 0)
	}
	f.commit()

	type row struct {
		Target                 string
		Ts                     time.Time
		UtilisationPercent     float64
		BitsPerSimulatedSecond float64
	}
	got := query[row](t, f.pool, `SELECT target, ts, utilisation_percent, bits_per_simulated_second
		FROM queue_utilisation ORDER BY target, ts`)
	at := func(d time.Duration) time.Time { return f.t0.Add(d) }
	want := []row{
		{"half", at(time.Second), 50, 50e6},
		{"half", at(2 * time.Second), 50, 50e6},
		{"half", at(3 * time.Second), 50, 50e6},
		{"jitter", at(time.Second), 100, 100e6},
		{"jitter", at(1800 * ms), 100, 125e6},
		{"jitter", at(3 * time.Second), 100.0 / 1.2, 100e6 / 1.2},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(1e-9, 0), cmpopts.EquateApproxTime(0)); diff != "" {
		t.Errorf("queue_utilisation (-want +got):\n%s", diff)
	}
}
