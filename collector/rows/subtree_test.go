package rows_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/store"
)

// TestSubtreeDelete: a switch removes a queue and says so with one delete
// of the list entry, as gNMI allows (gnmi/store applies such a delete to
// every leaf below it). Every series the converter knows below the entry
// must get a delete sample (docs/collector.md, "Rows": flags bit 1), in
// path order, and the entry itself no series: otherwise queue_latest,
// current_config and History keep the removed queue. The converter knows
// the leaves it stored, or, after a restart, those seeded from latest
// (SeedValue; one whose latest is a delete is not deleted again). A queue
// whose id starts with the same digit is left alone. Before the fix the
// converter stored one delete of a "series" whose path was the queue
// (this test failed).
func TestSubtreeDelete(t *testing.T) {
	sch, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	const q1 = "/lhcnp/interfaces/interface[name=n1-n2]/queues/queue[id=1]"
	const q10 = "/lhcnp/interfaces/interface[name=n1-n2]/queues/queue[id=10]"
	depth, kmax, gone := q1+"/state/queue-depth", q1+"/config/kmax", q1+"/config/alpha"
	other := q10 + "/state/queue-depth"
	del := &gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: &gnmi.Notification{
		Timestamp: 200, Delete: []*gnmi.Path{store.MustPath(q1)}}}}
	type row struct {
		Path    string
		Deleted bool
	}
	id := func(path string) int64 { return rows.SeriesID("sw1", path) }
	paths := map[int64]string{id(depth): depth, id(kmax): kmax, id(gone): gone, id(other): other, id(q1): q1}
	at200 := func(b *rows.Batch) []row {
		var out []row
		for _, s := range b.Samples {
			if s.TS == 200 {
				out = append(out, row{paths[s.SeriesID], s.Flags&rows.Deleted != 0})
			}
		}
		return out
	}
	want := []row{{kmax, true}, {depth, true}}

	t.Run("stored by this converter", func(t *testing.T) {
		// No describer: the tests' own (newConverter) assumes a leaf.
		c := rows.NewConverter("sw1", sch)
		var b rows.Batch
		c.Add(upd(100, depth, uintv(300)), &b)
		c.Add(upd(100, kmax, uintv(9000)), &b)
		c.Add(upd(100, other, uintv(5)), &b)
		c.Add(sync, &b)
		c.Add(del, &b)
		if diff := cmp.Diff(want, at200(&b)); diff != "" {
			t.Errorf("samples at the queue's delete (-want +got):\n%s", diff)
		}
		for _, sr := range b.Series {
			if sr.ID == id(q1) {
				t.Errorf("a series for the queue's own path %s", sr.Path)
			}
		}
	})
	t.Run("seeded from latest", func(t *testing.T) {
		c := rows.NewConverter("sw1", sch)
		for _, l := range []struct {
			path  string
			flags rows.Flags
		}{{depth, 0}, {kmax, 0}, {gone, rows.Deleted}, {other, 0}} {
			c.Seed(id(l.path), 100, 0, false)
			c.SeedValue(l.path, rows.Sample{TS: 100, SeriesID: id(l.path), Kind: rows.ValInt, Int: 1, Flags: l.flags})
		}
		var b rows.Batch
		c.Resubscribed()
		c.Add(sync, &b)
		c.Add(del, &b)
		if diff := cmp.Diff(want, at200(&b)); diff != "" {
			t.Errorf("samples at the queue's delete (-want +got):\n%s", diff)
		}
	})
}
