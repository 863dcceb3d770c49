package rows_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/store"
)

// TestSweepAtSync: a switch restarted without a receiver it had (its
// configuration no longer holds it) sends no delete of it: its initial data
// just leaves it out. At the new stream's sync_response every series the
// converter knows under the subscribed paths that the initial data did not
// send gets a delete sample (flags bit 1), and Swept hands the same delete
// on (the northbound's latest values); a series outside the subscribed
// paths, one the initial data sent again (even as a duplicate), and one
// whose latest row is a delete are left alone; one seeded from latest and
// not sent is deleted too. The delete's timestamp is
// the oldest of the initial data newer than the series' last value (the
// restart), so a second collector subscribing later, whose counters came
// with newer timestamps, writes the same row (the writer keeps one). Before
// the fix nothing was deleted and current_config, latest and the
// northbound's Get kept the receiver for ever (this test failed).
func TestSweepAtSync(t *testing.T) {
	const (
		rcv     = "/lhcnp/global/rocev2-receivers/receiver[prefix=192.168.0.0/16]/config/prefix"
		kept    = "/lhcnp/global/rocev2-receivers/receiver[prefix=10.0.0.0/8]/config/prefix"
		pkts    = q + "/state/counters/packets"
		outside = "/lhcnp/other/leaf"
		seeded  = "/lhcnp/global/rocev2-receivers/receiver[prefix=172.16.0.0/12]/config/prefix"
		dead    = "/lhcnp/global/rocev2-receivers/receiver[prefix=172.17.0.0/16]/config/prefix"
	)
	sch, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	id := func(path string) int64 { return rows.SeriesID("sw1", path) }
	subs := []*gnmi.Path{store.MustPath("/lhcnp/global"), store.MustPath("/lhcnp/interfaces/interface[name=*]")}
	// One collector's view before the restart: the receivers set at 100
	// and 150, the counter at 300, a leaf outside the subscribed paths; a
	// receiver seeded from latest, and one whose latest row is a delete.
	before := func(c *rows.Converter, b *rows.Batch) {
		c.Seed(id(seeded), 50, 0, false)
		c.SeedValue(seeded, rows.Sample{TS: 50, SeriesID: id(seeded), Kind: rows.ValText, Text: "172.16.0.0/12"})
		c.Seed(id(dead), 60, 0, false)
		c.SeedValue(dead, rows.Sample{TS: 60, SeriesID: id(dead), Flags: rows.Deleted})
		c.Resubscribed(subs...)
		c.Add(upd(100, kept, strv("10.0.0.0/8")), b)
		c.Add(upd(150, rcv, strv("192.168.0.0/16")), b)
		c.Add(upd(300, pkts, uintv(30)), b)
		c.Add(upd(120, outside, strv("x")), b)
		c.Add(upd(300, seeded, strv("172.16.0.0/12")), b) // sent again: kept
		c.Add(sync, b)
	}
	// The switch restarted at 1000 without the 192.168 receiver and the
	// seeded one; its counter, stamped at subscribe time, differs between
	// the two collectors.
	after := func(c *rows.Converter, b *rows.Batch, counterTS int64) rows.Stats {
		c.Resubscribed(subs...)
		c.Add(upd(counterTS, pkts, uintv(5)), b)
		c.Add(upd(1000, kept, strv("10.0.0.0/8")), b)
		return c.Add(sync, b)
	}
	type row struct {
		TS      int64
		Path    string
		Deleted bool
	}
	paths := map[int64]string{id(rcv): rcv, id(kept): kept, id(pkts): pkts, id(outside): outside, id(seeded): seeded}
	deletes := func(b *rows.Batch) []row {
		var out []row
		for _, s := range b.Samples {
			if s.Flags&rows.Deleted != 0 {
				out = append(out, row{s.TS, paths[s.SeriesID], true})
			}
		}
		return out
	}
	want := []row{{1000, seeded, true}, {1000, rcv, true}}

	var got [2][]row
	for i, counterTS := range []int64{1100, 1700} {
		c := rows.NewConverter("sw1", sch)
		var b rows.Batch
		before(c, &b)
		if d := deletes(&b); len(d) != 0 {
			t.Fatalf("collector %d: deletes before the restart: %v", i, d)
		}
		b = rows.Batch{}
		st := after(c, &b, counterTS)
		if st.Swept != 2 {
			t.Errorf("collector %d: swept %d, want 2", i, st.Swept)
		}
		got[i] = deletes(&b)
		if d := cmp.Diff(want, got[i]); d != "" {
			t.Errorf("collector %d: deletes (-want +got):\n%s", i, d)
		}
		if d := cmp.Diff(seeded+rcv, pathsOf(c.Swept())); d != "" {
			t.Errorf("collector %d: Swept (-want +got):\n%s", i, d)
		}
		if n := c.Swept(); len(n) != 1 || n[0].GetTimestamp() != 1000 {
			t.Errorf("collector %d: Swept %v, want one notification at 1000", i, n)
		}
		// The next stream sends the same: nothing more is deleted.
		b = rows.Batch{}
		if st := after(c, &b, counterTS+100); st.Swept != 0 || len(deletes(&b)) != 0 {
			t.Errorf("collector %d: the next stream deleted again: %+v %v", i, st, deletes(&b))
		}
	}
}

// TestSweepNeedsPaths: a stream whose subscribed paths the converter was not
// given deletes nothing at its sync_response.
func TestSweepNeedsPaths(t *testing.T) {
	c := newConverter(t)
	var b rows.Batch
	depth := q + "/state/queue-depth"
	c.Resubscribed()
	c.Add(upd(100, depth, uintv(5)), &b)
	c.Add(sync, &b)
	c.Resubscribed()
	if st := c.Add(sync, &b); st.Swept != 0 {
		t.Errorf("swept %d without paths", st.Swept)
	}
}

func pathsOf(ns []*gnmi.Notification) string {
	var s string
	for _, n := range ns {
		for _, p := range n.GetDelete() {
			s += store.PathString(p)
		}
	}
	return s
}

// TestSkipSecondDelete: collector a (the owner) and b (its standby, about
// to be promoted) both stream a switch that restarts without a receiver.
// Every leaf changed between their two subscriptions, so each sweep dates
// the delete differently: a stored it at 1000, b holds it at 1200. On
// promotion b is seeded from latest (the receiver deleted at 1000) and
// skips what a stored: its delete, newer than a's, is the same
// disappearance and is dropped (one delete row per disappearance). The
// receiver created again (1300) and deleted again (1400) in b's held
// batches is a second disappearance: both rows stay. Before the fix b's
// delete at 1200 was kept: two delete rows of one disappearance.
func TestSkipSecondDelete(t *testing.T) {
	const (
		rcv  = "/lhcnp/global/rocev2-receivers/receiver[prefix=192.168.0.0/16]/config/prefix"
		kept = "/lhcnp/global/rocev2-receivers/receiver[prefix=10.0.0.0/8]/config/prefix"
	)
	sch, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	id := func(path string) int64 { return rows.SeriesID("sw1", path) }
	subs := []*gnmi.Path{store.MustPath("/lhcnp/global")}
	restarted := func(c *rows.Converter, b *rows.Batch, keptTS int64) {
		c.Resubscribed(subs...)
		c.Add(upd(keptTS, kept, strv("10.0.0.0/8")), b)
		c.Add(sync, b)
	}
	type row struct {
		TS      int64
		Deleted bool
	}
	rowsOf := func(b *rows.Batch) []row {
		var out []row
		for _, s := range b.Samples {
			if s.SeriesID == id(rcv) {
				out = append(out, row{s.TS, s.Flags&rows.Deleted != 0})
			}
		}
		return out
	}
	for _, tt := range []struct {
		desc  string
		again bool // the receiver created and deleted again after b's sweep
		want  []row
	}{
		{"the same disappearance", false, nil},
		{"and a second one", true, []row{{1300, false}, {1400, true}}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			b := rows.NewConverter("sw1", sch)
			var held rows.Batch
			b.Resubscribed(subs...)
			b.Add(upd(100, kept, strv("10.0.0.0/8")), &held)
			b.Add(upd(150, rcv, strv("192.168.0.0/16")), &held)
			b.Add(sync, &held)
			restarted(b, &held, 1200)
			if got := rowsOf(&held); !cmp.Equal(got, []row{{150, false}, {1200, true}}) {
				t.Fatalf("b's held rows of the receiver: %v", got)
			}
			if tt.again {
				b.Add(upd(1300, rcv, strv("192.168.0.0/16")), &held)
				b.Add(&gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: &gnmi.Notification{
					Timestamp: 1400, Delete: []*gnmi.Path{store.MustPath(rcv)}}}}, &held)
			}
			// Promotion: latest holds a's rows (the receiver deleted at
			// 1000, the kept receiver at 1000).
			b.Seed(id(rcv), 1000, 0, false)
			b.SeedValue(rcv, rows.Sample{TS: 1000, SeriesID: id(rcv), Flags: rows.Deleted})
			b.Seed(id(kept), 1000, 0, false)
			b.SeedValue(kept, rows.Sample{TS: 1000, SeriesID: id(kept), Kind: rows.ValText, Text: "10.0.0.0/8"})
			b.Skip(&held, map[int64]int64{id(rcv): 1000, id(kept): 1000})
			if d := cmp.Diff(tt.want, rowsOf(&held)); d != "" {
				t.Errorf("b's rows of the receiver after the promotion's skip (-want +got):\n%s", d)
			}
			// The next stream does not delete it again either.
			var next rows.Batch
			restarted(b, &next, 1500)
			if got := rowsOf(&next); len(got) != 0 {
				t.Errorf("the next stream stored %v of the receiver", got)
			}
		})
	}
}
