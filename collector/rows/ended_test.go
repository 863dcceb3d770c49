package rows_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/store"
)

const liveRcv = "/lhcnp/global/rocev2-receivers/receiver[prefix=10.0.0.0/8]/config/prefix"

// flowLeaf is the canonical path (keys sorted) of a leaf of flow i.
func flowLeaf(i int) string {
	return fmt.Sprintf("/lhcnp/flow-table/flows/flow[destination-address=10.0.0.2][destination-qp=1][source-address=10.0.0.1][source-qp=%d]/state/source-qp", i)
}

// Flow i lives from 10i+1 (its value) to 10i+2 (its delete).
func flowStart(i int) *gnmi.SubscribeResponse {
	return upd(int64(10*i+1), flowLeaf(i), uintv(uint64(i)))
}
func flowEnd(i int) *gnmi.SubscribeResponse {
	return &gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: &gnmi.Notification{
		Timestamp: int64(10*i + 2), Delete: []*gnmi.Path{store.MustPath(flowLeaf(i))}}}}
}

// seedEnded seeds c with what latest holds after flows [0, n) came and
// went and the receiver was set at 5, as the collector does at a start and
// a promotion (Seed, then SeedValue).
func seedEnded(c *rows.Converter, n int) {
	for i := range n {
		id := rows.SeriesID("sw1", flowLeaf(i))
		c.Seed(id, int64(10*i+2), 0, false)
		c.SeedValue(flowLeaf(i), rows.Sample{TS: int64(10*i + 2), SeriesID: id, Flags: rows.Deleted})
	}
	id := rows.SeriesID("sw1", liveRcv)
	c.Seed(id, 5, 0, false)
	c.SeedValue(liveRcv, rows.Sample{TS: 5, SeriesID: id, Kind: rows.ValText, Text: "10.0.0.0/8"})
}

type endedRow struct {
	Path    string
	TS      int64
	Deleted bool
}

func endedRows(b *rows.Batch, n int) []endedRow {
	paths := map[int64]string{rows.SeriesID("sw1", liveRcv): "rcv"}
	for i := range n {
		paths[rows.SeriesID("sw1", flowLeaf(i))] = fmt.Sprint("flow", i)
	}
	var out []endedRow
	for _, s := range b.Samples {
		out = append(out, endedRow{paths[s.SeriesID], s.TS, s.Flags&rows.Deleted != 0})
	}
	return out
}

// TestEndedSeriesNotKept: a switch's flows come and go for weeks; latest
// holds a delete row of every flow that ended. Seeded from it at a start
// or a promotion, the converter kept a state for each (SeedValue) for
// ever: its memory grew with every flow the switch ever held. It now keeps
// the state of a series whose last row is a delete only while the stream
// up at the seed may still send the series at or before that delete: none
// after a start (the next stream sends only what exists), and after a
// promotion only for the flows the standby's stream has not yet sent the
// end of; those go when it does. The rows are those the old code wrote:
// the flows the standby receives after its promotion, stored by the
// previous owner, are not stored again. On the old code the converter kept
// 2 001 states in each case (this test failed); the rows were the same.
func TestEndedSeriesNotKept(t *testing.T) {
	const n = 2000
	subs := []*gnmi.Path{store.MustPath("/lhcnp")}
	t.Run("start", func(t *testing.T) {
		c := newConverter(t)
		seedEnded(c, n)
		var b rows.Batch
		c.Resubscribed(subs...)
		c.Add(upd(5, liveRcv, strv("10.0.0.0/8")), &b)
		c.Add(sync, &b)
		if got := c.Tracked(); got != 1 {
			t.Errorf("after a start with %d flows ended in latest, state kept for %d series, want 1 (the receiver)", n, got)
		}
		// Flows come and go; one created again with a key of an ended
		// flow is a new life of its series.
		for i := n; i < n+100; i++ {
			c.Add(flowStart(i), &b)
			c.Add(flowEnd(i), &b)
		}
		c.Add(upd(100_000, flowLeaf(3), uintv(3)), &b)
		want := []endedRow{}
		for i := n; i < n+100; i++ {
			want = append(want, endedRow{fmt.Sprint("flow", i), int64(10*i + 1), false}, endedRow{fmt.Sprint("flow", i), int64(10*i + 2), true})
		}
		want = append(want, endedRow{"flow3", 100_000, false})
		if d := cmp.Diff(want, endedRows(&b, n+100), cmpEmpty); d != "" {
			t.Errorf("rows (-want +got):\n%s", d)
		}
		if got := c.Tracked(); got != 2 {
			t.Errorf("state kept for %d series, want 2 (the receiver, flow 3)", got)
		}
	})
	t.Run("promotion", func(t *testing.T) {
		// The standby subscribed while flow k lived (its initial data:
		// the receiver, flow k), then received flows up to m; the owner
		// stored flows [0, n). At the promotion flows m+1 to n-1 are
		// still on their way to the standby.
		const k, m = 1000, 1600
		c := newConverter(t)
		var held rows.Batch
		c.Resubscribed(subs...)
		c.Add(upd(5, liveRcv, strv("10.0.0.0/8")), &held)
		c.Add(flowStart(k), &held)
		c.Add(sync, &held)
		c.Add(flowEnd(k), &held)
		for i := k + 1; i <= m; i++ {
			c.Add(flowStart(i), &held)
			c.Add(flowEnd(i), &held)
		}
		floor := map[int64]int64{rows.SeriesID("sw1", liveRcv): 5}
		for i := range n {
			floor[rows.SeriesID("sw1", flowLeaf(i))] = int64(10*i + 2)
		}
		seedEnded(c, n)
		c.Skip(&held, floor)
		var b rows.Batch
		for i := m + 1; i < n; i++ {
			c.Add(flowStart(i), &b)
			if i == m+1 {
				if got := c.Tracked(); got != 1+n-m-1 {
					t.Errorf("after the promotion, state kept for %d series, want %d (the receiver, the flows on their way)", got, n-m)
				}
			}
			c.Add(flowEnd(i), &b)
		}
		if got := c.Tracked(); got != 1 {
			t.Errorf("once the standby's stream sent the flows' ends, state kept for %d series, want 1 (the receiver)", got)
		}
		if d := cmp.Diff([]endedRow(nil), endedRows(&held, n)); d != "" {
			t.Errorf("held rows after the promotion's skip (-want +got):\n%s", d)
		}
		if d := cmp.Diff([]endedRow(nil), endedRows(&b, n)); d != "" {
			t.Errorf("rows after the promotion (-want +got):\n%s", d)
		}
	})
}

// TestDeleteAfterSeededDeleteDropped: the owner's sweep dated a
// receiver's disappearance 1000 (its stream subscribed after the switch
// removed it); the standby, subscribed before, receives the switch's own
// delete, at 1100, after its promotion. Its last stored row is a delete
// already: the same disappearance, not stored again (as the promotion's
// Skip drops it from the held batches). A receiver created again (1200)
// and removed (1300) is a new disappearance: stored. Before, the delete at
// 1100 was stored: two delete rows of one disappearance (this test failed).
func TestDeleteAfterSeededDeleteDropped(t *testing.T) {
	const rcv = "/lhcnp/global/rocev2-receivers/receiver[prefix=192.168.0.0/16]/config/prefix"
	id := rows.SeriesID("sw1", rcv)
	del := func(ts int64) *gnmi.SubscribeResponse {
		return &gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: &gnmi.Notification{
			Timestamp: ts, Delete: []*gnmi.Path{store.MustPath(rcv)}}}}
	}
	c := newConverter(t)
	var held, b rows.Batch
	c.Resubscribed(store.MustPath("/lhcnp/global"))
	c.Add(upd(150, rcv, strv("192.168.0.0/16")), &held)
	c.Add(sync, &held)
	c.Seed(id, 1000, 0, false)
	c.SeedValue(rcv, rows.Sample{TS: 1000, SeriesID: id, Flags: rows.Deleted})
	c.Skip(&held, map[int64]int64{id: 1000})
	c.Add(del(1100), &b)
	c.Add(upd(1200, rcv, strv("192.168.0.0/16")), &b)
	c.Add(del(1300), &b)
	want := []endedRow{{"", 1200, false}, {"", 1300, true}}
	if d := cmp.Diff(want, endedRows(&b, 0)); d != "" {
		t.Errorf("rows after the promotion (-want +got):\n%s", d)
	}
	if got := c.Tracked(); got != 0 {
		t.Errorf("state kept for %d series, want 0", got)
	}
}

var cmpEmpty = cmp.Transformer("nilEmpty", func(r []endedRow) []endedRow {
	if len(r) == 0 {
		return nil
	}
	return r
})

// BenchmarkEndedFlows: flows that start and end, then a restart's seed
// from latest; reports the converter's retained states per ended flow
// (0: it keeps only the live series).
func BenchmarkEndedFlows(b *testing.B) {
	c := newConverter(b)
	var batch rows.Batch
	subs := []*gnmi.Path{store.MustPath("/lhcnp")}
	c.Resubscribed(subs...)
	c.Add(sync, &batch)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		c.Add(flowStart(n), &batch)
		c.Add(flowEnd(n), &batch)
		n++
		batch.Samples, batch.Series = batch.Samples[:0], batch.Series[:0]
	}
	seedEnded(c, n)
	c.Resubscribed(subs...)
	c.Add(upd(5, liveRcv, strv("10.0.0.0/8")), &batch)
	c.Add(sync, &batch)
	b.ReportMetric(float64(c.Tracked()-1)/float64(n), "states/ended-flow")
}

// TestSubtreeDeleteAfterPromotion: the previous owner stored the end of a
// flow (the delete of its list entry, stored as the deletes of the flow's
// leaves); the standby, promoted, receives the same delete after its
// promotion. The flow's leaves' last rows are deletes already: the same
// disappearance, nothing stored, and their states go. Before, their
// seeded states had no path: the delete reached no series and was stored
// as the delete of the list entry's own path (a series row and a delete
// row of a path that is no leaf, which the owner never stored), and the
// states stayed until the next stream (this test failed).
func TestSubtreeDeleteAfterPromotion(t *testing.T) {
	const i = 7
	entry := strings.TrimSuffix(flowLeaf(i), "/state/source-qp")
	sch, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	c := rows.NewConverter("sw1", sch) // the schema's types: the list entry is no leaf
	var held, b rows.Batch
	c.Resubscribed(store.MustPath("/lhcnp"))
	c.Add(upd(5, liveRcv, strv("10.0.0.0/8")), &held)
	c.Add(sync, &held)
	// Promotion: latest holds the flow's leaf deleted at 10i+2.
	id := rows.SeriesID("sw1", flowLeaf(i))
	c.Seed(id, 10*i+2, 0, false)
	c.SeedValue(flowLeaf(i), rows.Sample{TS: 10*i + 2, SeriesID: id, Flags: rows.Deleted})
	c.Skip(&held, map[int64]int64{rows.SeriesID("sw1", liveRcv): 5})
	c.Add(flowStart(i), &b) // on its way: stored by the owner
	c.Add(&gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: &gnmi.Notification{
		Timestamp: int64(10*i + 2), Delete: []*gnmi.Path{store.MustPath(entry)}}}}, &b)
	if len(b.Series) != 0 || len(b.Samples) != 0 {
		t.Errorf("stored %d series rows, %d samples; want none", len(b.Series), len(b.Samples))
	}
	if got := c.Tracked(); got != 1 {
		t.Errorf("state kept for %d series, want 1 (the receiver)", got)
	}
}
