package collector_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/internal/switchtest"
)

// handoversOf reads a collector's handovers_total by direction and kind
// (zeros left out).
func handoversOf(c *runningCollector) map[string]float64 {
	got := map[string]float64{}
	for _, dir := range []string{"given", "taken"} {
		for _, kind := range []string{collectormetrics.HandoverMakeBeforeBreak, collectormetrics.HandoverBreakBeforeMake, collectormetrics.HandoverTakeover} {
			if n := testutil.ToFloat64(c.Metrics().Handovers.WithLabelValues(dir, kind)); n != 0 {
				got[dir+"/"+kind] = n
			}
		}
	}
	return got
}

// TestTakeoverWithoutStandby: a collector that takes a target's lease
// from another collector with no standby stream to promote — the other
// died and its lease expired, or it released the lease and left before
// this one streamed — counts handovers_total{direction="taken",
// kind="takeover"}; a lease that was free, or already its own (from before
// a restart), is no handover.
func TestTakeoverWithoutStandby(t *testing.T) {
	for _, tt := range []struct {
		desc      string
		lease     string // the lease row before the collector starts ("": none); $1 is the target
		wantEpoch int64
		want      map[string]float64
	}{
		{"a dead owner's expired lease", `INSERT INTO leases VALUES ($1, 'collector-dead', 3, now() - interval '1 second')`,
			4, map[string]float64{"taken/" + collectormetrics.HandoverTakeover: 1}},
		{"a lease released by a collector gone", `INSERT INTO leases VALUES ($1, 'collector-gone', 3, '-infinity')`,
			4, map[string]float64{"taken/" + collectormetrics.HandoverTakeover: 1}},
		{"no lease yet", "", 1, map[string]float64{}},
		{"its own lease from before a restart", `INSERT INTO leases VALUES ($1, 'collector-b', 3, now() - interval '1 second')`,
			3, map[string]float64{}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			pool, dsn := newDB(t)
			sw := switchtest.Start(t, "sw-takeover")
			if tt.lease != "" {
				if _, err := pool.Exec(context.Background(), tt.lease, sw.Name); err != nil {
					t.Fatal(err)
				}
			}
			b := start(t, leaseConfig(t, dsn, "collector-b", sw))
			waitStreaming(t, b, sw)
			if n := count(t, pool, `SELECT count(*) FROM leases WHERE target = $1 AND owner = 'collector-b' AND epoch = $2`, sw.Name, tt.wantEpoch); n != 1 {
				t.Errorf("b does not hold the lease of %s at epoch %d", sw.Name, tt.wantEpoch)
			}
			if d := cmp.Diff(tt.want, handoversOf(b)); d != "" {
				t.Errorf("handovers_total (-want +got):\n%s", d)
			}
		})
	}
}

// TestLapsedLeaseReacquired: a lease that lapsed while its holder kept
// collecting (the database was away longer than leases.ttl) and that
// nobody took is taken again by the holder's next renewal, at the same
// epoch: counted as lease_renewals_total{result="reacquired"}, not lost,
// and the target keeps streaming.
func TestLapsedLeaseReacquired(t *testing.T) {
	pool, dsn := newDB(t)
	sw := switchtest.Start(t, "sw-lapse")
	a := start(t, leaseConfig(t, dsn, "collector-a", sw))
	waitStreaming(t, a, sw)
	epoch := count(t, pool, `SELECT epoch FROM leases WHERE target = $1`, sw.Name)
	if _, err := pool.Exec(context.Background(), `UPDATE leases SET expires_at = now() - interval '1 second' WHERE target = $1`, sw.Name); err != nil {
		t.Fatal(err)
	}
	m := a.Metrics()
	waitFor(t, 10*time.Second, "a to take its lapsed lease again", func() (bool, string) {
		n := testutil.ToFloat64(m.LeaseRenewals.WithLabelValues("reacquired"))
		return n >= 1, fmt.Sprintf("%v reacquired", n)
	})
	if n := count(t, pool, `SELECT count(*) FROM leases WHERE target = $1 AND owner = 'collector-a' AND epoch = $2 AND expires_at > now()`, sw.Name, epoch); n != 1 {
		t.Errorf("a does not hold the lease of %s at epoch %d after re-acquiring it", sw.Name, epoch)
	}
	if n := testutil.ToFloat64(m.LeaseRenewals.WithLabelValues("lost")); n != 0 {
		t.Errorf("%v renewals lost", n)
	}
	waitStreaming(t, a, sw)
	if d := cmp.Diff(map[string]float64{}, handoversOf(a)); d != "" {
		t.Errorf("handovers_total (-want +got):\n%s", d)
	}
}
