package rows_test

import (
	"fmt"
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/store"
)

// BenchmarkConvert: notifications of 256 queue leaves, as a switch sends
// them, into rows.
func BenchmarkConvert(b *testing.B) {
	sch, err := schema.New()
	if err != nil {
		b.Fatal(err)
	}
	var paths []*gnmi.Path
	for i := range 4 {
		for q := range 8 {
			for _, l := range []string{"queue-depth", "peak-queue-depth", "effective-kmax", "effective-kmin",
				"counters/packets", "counters/bytes", "counters/ecn-marked-packets", "counters/cnp-notify-sent"} {
				paths = append(paths, store.MustPath(fmt.Sprintf("/lhcnp/interfaces/interface[name=eth%d]/queues/queue[id=%d]/state/%s", i, q, l)))
			}
		}
	}
	c := rows.NewConverter("sw", sch)
	batch := &rows.Batch{}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		n := &gnmi.Notification{Timestamp: int64(i + 1)}
		for j, p := range paths {
			n.Update = append(n.Update, &gnmi.Update{Path: p, Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: uint64(i + j)}}})
		}
		c.Add(&gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: n}}, batch)
		if len(batch.Samples) > 10000 {
			batch.Samples = batch.Samples[:0]
		}
	}
	b.ReportMetric(float64(b.N*len(paths))/b.Elapsed().Seconds(), "updates/s")
}
