package rows_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/gnmi/store"
)

// TestCNPEventOnceAcrossStreams: a converter that starts again (a collector
// restart, a takeover) and meets the queue's last CNP again in the switch's
// initial sync makes no event of it, however it was seeded; the next CNP,
// whose notification carries only the leaves that changed, is an event
// with every field.
func TestCNPEventOnceAcrossStreams(t *testing.T) {
	lc := q + "/state/last-cnp/"
	type leaf struct {
		name string
		v    *gnmi.TypedValue
	}
	full := []leaf{{"timestamp", uintv(90)}, {"action", strv("RATE_REDUCE")}, {"parameter", uintv(30)},
		{"congestion-level", uintv(200)}, {"source-address", strv("2001:db8::1")},
		{"destination-address", strv("2001:db8::2")}, {"source-qp", uintv(17)}, {"destination-qp", uintv(18)},
		{"format", strv("LONG_HAUL_ICMPV6")}}
	note := func(ts int64, leaves []leaf) *gnmi.SubscribeResponse {
		n := &gnmi.Notification{Timestamp: ts}
		for _, l := range leaves {
			n.Update = append(n.Update, &gnmi.Update{Path: store.MustPath(lc + l.name), Val: l.v})
		}
		return &gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: n}}
	}
	// What the first collector stored: every last-cnp leaf at 100.
	first := newConverter(t)
	var stored rows.Batch
	first.Add(note(100, full), &stored)
	if len(stored.Events) != 1 {
		t.Fatalf("first stream: %d events, want 1", len(stored.Events))
	}
	paths := map[int64]string{}
	for _, l := range full {
		paths[rows.SeriesID("sw1", lc+l.name)] = lc + l.name
	}
	next := []leaf{{"timestamp", uintv(250)}, {"action", strv("PAUSE")}}
	want := []rows.Event{{TS: 250, Target: "sw1", Kind: "cnp", Interface: "n1-n2", Action: "PAUSE", Parameter: 30,
		CongestionLevel: 200, SourceAddress: "2001:db8::1", DestinationAddress: "2001:db8::2", SourceQP: 17, DestinationQP: 18,
		Details: `{"format":"LONG_HAUL_ICMPV6"}`}}
	tests := []struct {
		desc   string
		seed   func(c *rows.Converter)
		resent int64 // the notification timestamp of the CNP sent again
	}{
		{"seeded from latest, sent again as stored", func(c *rows.Converter) {
			for _, s := range stored.Samples {
				c.Seed(s.SeriesID, s.TS, 0, false)
				c.SeedValue(paths[s.SeriesID], s)
			}
		}, 100},
		{"seeded from the spill (timestamps only), sent again as stored", func(c *rows.Converter) {
			for _, s := range stored.Samples {
				c.Seed(s.SeriesID, s.TS, 0, false)
			}
		}, 100},
		{"seeded from latest, sent again with a newer notification timestamp", func(c *rows.Converter) {
			for _, s := range stored.Samples {
				c.Seed(s.SeriesID, s.TS, 0, false)
				c.SeedValue(paths[s.SeriesID], s)
			}
		}, 150},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			c := newConverter(t)
			tt.seed(c)
			var b rows.Batch
			c.Add(note(tt.resent, full), &b)
			c.Add(sync, &b)
			c.Add(note(300, next), &b)
			if d := cmp.Diff(want, b.Events); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
		})
	}
}
