package collector_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/lhcnp/lhcnp/collector/internal/switchtest"
)

// TestEndedFlowsNotKeptAcrossRestart: a switch's flows come and go (each
// flow's list entry removed when it ends); the collector is restarted and
// more flows come and go. Seeded from latest, which holds a delete row of
// every flow's leaves, the restarted collector's converter kept a state
// for each of them for ever; it now keeps state only for the series that
// exist (the receiver). The rows are the same: each flow's value and
// delete once, nothing stored again after the restart. On the old code the
// converter kept 121 states (this test failed); its rows were the same.
func TestEndedFlowsNotKeptAcrossRestart(t *testing.T) {
	const (
		n   = 60 // flows before the restart, as many after
		rcv = "/lhcnp/global/rocev2-receivers/receiver[prefix=10.0.0.0/8]/config/prefix"
	)
	pool, dsn := newDB(t)
	sw := switchtest.Start(t, "sw1")
	entry := func(i int) string {
		return fmt.Sprintf("/lhcnp/flow-table/flows/flow[destination-address=10.0.0.2][destination-qp=1][source-address=10.0.0.1][source-qp=%d]", i)
	}
	t0 := time.Now().Truncate(time.Millisecond).UnixNano()
	sw.Publish(t0, map[string]*gnmi.TypedValue{rcv: switchtest.Str("10.0.0.0/8")})
	flows := func(from, to int) {
		for i := from; i < to; i++ {
			ts := t0 + int64(i+1)*int64(time.Millisecond)
			sw.Publish(ts, map[string]*gnmi.TypedValue{
				entry(i) + "/state/arrival-rate": switchtest.Uint(uint64(i)), entry(i) + "/state/egress-interface": switchtest.Str("n1-n2")})
			sw.Delete(ts+int64(time.Microsecond), entry(i))
		}
	}
	flowRows := func() int64 {
		return count(t, pool, `SELECT count(*) FROM samples s JOIN series r ON r.id = s.series_id
			WHERE r.target = 'sw1' AND r.path LIKE '/lhcnp/flow-table/%'`)
	}
	cfg := testConfig(t, dsn, sw)
	c := start(t, cfg)
	waitStreaming(t, c, sw)
	flows(0, n)
	waitFor(t, 30*time.Second, "the flows stored", func() (bool, string) {
		got := flowRows()
		return got == 4*n, fmt.Sprint(got)
	})
	c.stop(t)

	c = start(t, cfg)
	waitStreaming(t, c, sw)
	flows(n, 2*n)
	waitFor(t, 30*time.Second, "the new flows stored", func() (bool, string) {
		got := flowRows()
		return got >= 8*n, fmt.Sprint(got)
	})
	c.stop(t)
	if got := c.ConverterSeries("sw1"); got != 1 {
		t.Errorf("after %d flows came and went and a restart, the converter keeps state for %d series, want 1 (the receiver)", 2*n, got)
	}
	if got := flowRows(); got != 8*n {
		t.Errorf("%d rows of flows, want %d (a value and a delete of each of 2 leaves of %d flows)", got, 8*n, 2*n)
	}
	if got := count(t, pool, `SELECT count(*) FROM samples s JOIN series r ON r.id = s.series_id
		WHERE r.target = 'sw1' AND r.path = $1`, rcv); got != 1 {
		t.Errorf("%d rows of the receiver, want 1", got)
	}
	if got := count(t, pool, `SELECT count(*) FROM series WHERE target = 'sw1' AND path NOT LIKE '%/state/%' AND path NOT LIKE '%/config/%'`); got != 0 {
		t.Errorf("%d series of paths that are no leaf", got)
	}
	noDuplicates(t, pool)
}
