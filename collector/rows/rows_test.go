package rows_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/store"
)

const q = "/lhcnp/interfaces/interface[name=n1-n2]/queues/queue[id=0]"

func upd(ts int64, path string, v *gnmi.TypedValue) *gnmi.SubscribeResponse {
	return &gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: &gnmi.Notification{
		Timestamp: ts,
		Update:    []*gnmi.Update{{Path: store.MustPath(path), Val: v}},
	}}}
}

func uintv(v uint64) *gnmi.TypedValue {
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: v}}
}
func strv(v string) *gnmi.TypedValue {
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: v}}
}

var sync = &gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_SyncResponse{SyncResponse: true}}

func newConverter(t testing.TB) *rows.Converter {
	t.Helper()
	sch, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	return rows.NewConverter("sw1", sch, rows.WithDescriber(func(sp string) (string, string) {
		l, _ := sch.LeafBySchemaPath(sp)
		return l.Entry.Type.Name, map[string]string{"counter64": "packets", "gauge64": "bytes"}[l.Entry.Type.Name]
	}))
}

func TestConverter(t *testing.T) {
	c := newConverter(t)
	var b rows.Batch
	pkts := q + "/state/counters/packets"
	depth := q + "/state/queue-depth"
	id := rows.SeriesID("sw1", pkts)
	c.Add(upd(100, pkts, uintv(10)), &b)
	c.Add(upd(100, depth, uintv(500)), &b)
	c.Add(sync, &b)
	c.Add(upd(200, pkts, uintv(20)), &b)
	// A resubscription re-sends the current value with its timestamp: dropped.
	c.Resubscribed()
	if s := c.Add(upd(200, pkts, uintv(20)), &b); s.Duplicates != 1 || s.Samples != 0 {
		t.Errorf("re-sent value: %+v, want one duplicate", s)
	}
	// The switch restarted: its counter starts again.
	if s := c.Add(upd(300, pkts, uintv(3)), &b); s.Resets != 1 {
		t.Errorf("counter going back: %+v, want one reset", s)
	}
	c.Add(sync, &b)
	c.Add(&gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: &gnmi.Notification{
		Timestamp: 400, Delete: []*gnmi.Path{store.MustPath(depth)}}}}, &b)

	did := rows.SeriesID("sw1", depth)
	want := []rows.Sample{
		{TS: 100, SeriesID: id, Kind: rows.ValInt, Int: 10, Flags: rows.Initial},
		{TS: 100, SeriesID: did, Kind: rows.ValInt, Int: 500, Flags: rows.Initial},
		{TS: 200, SeriesID: id, Kind: rows.ValInt, Int: 20},
		{TS: 300, SeriesID: id, Kind: rows.ValInt, Int: 3, Flags: rows.Initial | rows.Reset},
		{TS: 400, SeriesID: did, Flags: rows.Deleted},
	}
	if d := cmp.Diff(want, b.Samples); d != "" {
		t.Errorf("samples (-want +got):\n%s", d)
	}
	wantSeries := []rows.Series{
		{ID: id, Target: "sw1", Path: pkts, SchemaPath: "/lhcnp/interfaces/interface/queues/queue/state/counters/packets",
			Keys: []rows.Key{{"name", "n1-n2"}, {"id", "0"}}, YangType: "counter64", Unit: "packets", FirstSeen: 100},
		{ID: did, Target: "sw1", Path: depth, SchemaPath: "/lhcnp/interfaces/interface/queues/queue/state/queue-depth",
			Keys: []rows.Key{{"name", "n1-n2"}, {"id", "0"}}, YangType: "gauge64", Unit: "bytes", FirstSeen: 100},
	}
	if d := cmp.Diff(wantSeries, b.Series); d != "" {
		t.Errorf("series (-want +got):\n%s", d)
	}
}

func TestSeed(t *testing.T) {
	c := newConverter(t)
	pkts := q + "/state/counters/packets"
	c.Seed(rows.SeriesID("sw1", pkts), 500, 40, true)
	var b rows.Batch
	c.Add(upd(500, pkts, uintv(40)), &b)
	c.Add(upd(600, pkts, uintv(1)), &b)
	want := []rows.Sample{{TS: 600, SeriesID: rows.SeriesID("sw1", pkts), Kind: rows.ValInt, Int: 1, Flags: rows.Initial | rows.Reset}}
	if d := cmp.Diff(want, b.Samples); d != "" {
		t.Errorf("samples (-want +got):\n%s", d)
	}
	if len(b.Series) != 0 {
		t.Errorf("a seeded series was emitted again: %v", b.Series)
	}
}

func TestCNPEvent(t *testing.T) {
	c := newConverter(t)
	lc := q + "/state/last-cnp/"
	note := func(ts int64, stamp uint64, action string) *gnmi.SubscribeResponse {
		n := &gnmi.Notification{Timestamp: ts}
		for _, u := range []struct {
			leaf string
			v    *gnmi.TypedValue
		}{
			{"timestamp", uintv(stamp)}, {"action", strv(action)}, {"parameter", uintv(30)},
			{"congestion-level", uintv(200)}, {"source-address", strv("2001:db8::1")},
			{"destination-address", strv("2001:db8::2")}, {"source-qp", uintv(17)}, {"destination-qp", uintv(18)},
			{"format", strv("LONG_HAUL_ICMPV6")},
		} {
			n.Update = append(n.Update, &gnmi.Update{Path: store.MustPath(lc + u.leaf), Val: u.v})
		}
		return &gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: n}}
	}
	var b rows.Batch
	c.Add(note(100, 90, "RATE_REDUCE"), &b)
	c.Add(note(200, 90, "RATE_REDUCE"), &b) // same notification sampled again
	c.Add(note(300, 250, "PAUSE"), &b)
	want := []rows.Event{
		{TS: 90, Target: "sw1", Kind: "cnp", Interface: "n1-n2", Action: "RATE_REDUCE", Parameter: 30, CongestionLevel: 200,
			SourceAddress: "2001:db8::1", DestinationAddress: "2001:db8::2", SourceQP: 17, DestinationQP: 18,
			Details: `{"format":"LONG_HAUL_ICMPV6"}`},
		{TS: 250, Target: "sw1", Kind: "cnp", Interface: "n1-n2", Action: "PAUSE", Parameter: 30, CongestionLevel: 200,
			SourceAddress: "2001:db8::1", DestinationAddress: "2001:db8::2", SourceQP: 17, DestinationQP: 18,
			Details: `{"format":"LONG_HAUL_ICMPV6"}`},
	}
	if d := cmp.Diff(want, b.Events); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

func TestValues(t *testing.T) {
	for _, tt := range []struct {
		desc string
		path string
		v    *gnmi.TypedValue
		want rows.Sample
	}{
		{"uint64 past int64", q + "/state/counters/bytes", uintv(1 << 63), rows.Sample{Kind: rows.ValNum, Text: "9223372036854775808"}},
		{"int", q + "/state/queue-growth-rate", &gnmi.TypedValue{Value: &gnmi.TypedValue_IntVal{IntVal: -5}}, rows.Sample{Kind: rows.ValInt, Int: -5}},
		{"double", q + "/state/ecn-marking-rate", &gnmi.TypedValue{Value: &gnmi.TypedValue_DoubleVal{DoubleVal: 12.5}}, rows.Sample{Kind: rows.ValFloat, Float: 12.5}},
		{"bool", q + "/state/qd-above-kmax", &gnmi.TypedValue{Value: &gnmi.TypedValue_BoolVal{BoolVal: true}}, rows.Sample{Kind: rows.ValBool, Int: 1}},
		{"json_ietf uint64 as string", q + "/state/queue-depth", &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(`"1234"`)}}, rows.Sample{Kind: rows.ValInt, Int: 1234}},
		{"json_ietf enum with module", q + "/state/last-cnp/action", &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(`"lhcnp-types:PAUSE"`)}}, rows.Sample{Kind: rows.ValText, Text: "PAUSE"}},
		{"json_ietf address keeps its colons", q + "/state/last-cnp/source-address", &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(`"fe80::1"`)}}, rows.Sample{Kind: rows.ValText, Text: "fe80::1"}},
		{"decimal", "/lhcnp/interfaces/interface[name=a]/queues/queue[id=0]/config/alpha", &gnmi.TypedValue{Value: &gnmi.TypedValue_DecimalVal{DecimalVal: &gnmi.Decimal64{Digits: 125, Precision: 2}}}, rows.Sample{Kind: rows.ValNum, Text: "1.25"}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			c := newConverter(t)
			var b rows.Batch
			c.Add(upd(1, tt.path, tt.v), &b)
			tt.want.TS, tt.want.SeriesID, tt.want.Flags = 1, rows.SeriesID("sw1", tt.path), rows.Initial
			if d := cmp.Diff([]rows.Sample{tt.want}, b.Samples); d != "" {
				t.Errorf("sample (-want +got):\n%s", d)
			}
		})
	}
}

func TestCodecRoundTrip(t *testing.T) {
	b := &rows.Batch{ID: 42, Collector: "c1", Target: "sw1", Epoch: 3,
		Series:  []rows.Series{{ID: 1, Target: "sw1", Path: "/a[k=v]/b", SchemaPath: "/a/b", Keys: []rows.Key{{"k", "v"}}, YangType: "gauge64", Unit: "bytes", FirstSeen: 9}},
		Samples: []rows.Sample{{TS: 1, SeriesID: 1, Kind: rows.ValInt, Int: -7}, {TS: 2, SeriesID: 1, Kind: rows.ValFloat, Float: 0.5, Flags: rows.Reset}, {TS: 3, SeriesID: 1, Kind: rows.ValText, Text: "x"}, {TS: 4, SeriesID: 1, Flags: rows.Deleted}},
		Events:  []rows.Event{{TS: 5, Target: "sw1", Kind: "cnp", Interface: "i", Queue: 2, Action: "PAUSE", Parameter: 1000, Details: "{}"}},
	}
	got, err := rows.DecodeBatch(rows.AppendBatch(nil, b))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(b, got); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	if _, err := rows.DecodeBatch([]byte{1, 2}); !errors.Is(err, rows.ErrCorrupt) {
		t.Errorf("short input: %v, want ErrCorrupt", err)
	}
}

// TestSkip: after a handover, the rows another collector stored (at or
// before each series' floor) leave a batch, with the CNP events their
// last-cnp timestamps made; the rest stays.
func TestSkip(t *testing.T) {
	lc := q + "/state/last-cnp/"
	depth, stamp := q+"/state/queue-depth", lc+"timestamp"
	note := func(ts int64, cnp uint64) *gnmi.SubscribeResponse {
		n := &gnmi.Notification{Timestamp: ts, Update: []*gnmi.Update{
			{Path: store.MustPath(depth), Val: uintv(uint64(ts))},
			{Path: store.MustPath(stamp), Val: uintv(cnp)},
			{Path: store.MustPath(lc + "action"), Val: strv("PAUSE")},
		}}
		return &gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: n}}
	}
	type kept struct {
		Depth  []int64 // timestamps of the queue-depth samples kept
		Events []int64 // TS of the events kept
	}
	for _, tt := range []struct {
		desc  string
		floor map[string]int64 // path → floor
		want  kept
	}{
		{"no floor", nil, kept{[]int64{100, 200, 300}, []int64{10, 20, 30}}},
		{"the first two stored", map[string]int64{depth: 200, stamp: 200}, kept{[]int64{300}, []int64{30}}},
		{"a floor at a timestamp keeps what follows", map[string]int64{depth: 100, stamp: 100}, kept{[]int64{200, 300}, []int64{20, 30}}},
		{"the event goes with its timestamp sample", map[string]int64{stamp: 300}, kept{[]int64{100, 200, 300}, nil}},
		{"everything stored", map[string]int64{depth: 1000, stamp: 1000}, kept{nil, nil}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			c := newConverter(t)
			var b rows.Batch
			for i, ts := range []int64{100, 200, 300} {
				c.Add(note(ts, uint64(10*(i+1))), &b)
			}
			floor := map[int64]int64{}
			for p, ts := range tt.floor {
				floor[rows.SeriesID("sw1", p)] = ts
			}
			series := len(b.Series)
			samples, events := len(b.Samples), len(b.Events)
			ds, de := c.Skip(&b, floor)
			var got kept
			for _, s := range b.Samples {
				if s.SeriesID == rows.SeriesID("sw1", depth) {
					got.Depth = append(got.Depth, s.TS)
				}
			}
			for _, e := range b.Events {
				got.Events = append(got.Events, e.TS)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("kept (-want +got):\n%s", d)
			}
			if ds != samples-len(b.Samples) || de != events-len(b.Events) {
				t.Errorf("Skip says %d samples and %d events dropped; %d and %d were", ds, de, samples-len(b.Samples), events-len(b.Events))
			}
			if len(b.Series) != series {
				t.Errorf("%d series rows kept, want all %d", len(b.Series), series)
			}
		})
	}
}

// TestDeletedSeriesForgotten: a switch's flow table adds and deletes
// entries for ever (a lab runs for days); the converter keeps state only
// for the series that exist, so its memory follows the table, not every
// flow the switch ever held. A flow created again with the same key is a
// new life of its series: stored again from its first value.
func TestDeletedSeriesForgotten(t *testing.T) {
	c := newConverter(t)
	var b rows.Batch
	flow := func(i int) string {
		return fmt.Sprintf("/lhcnp/flow-table/flows/flow[source-address=10.0.0.1][destination-address=10.0.0.2][source-qp=%d][destination-qp=1]/state/source-qp", i)
	}
	for i := range 1000 {
		c.Add(upd(int64(10*i+1), flow(i), uintv(1)), &b)
		c.Add(&gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_Update{Update: &gnmi.Notification{
			Timestamp: int64(10*i + 2), Delete: []*gnmi.Path{store.MustPath(flow(i))}}}}, &b)
	}
	if got := c.Tracked(); got != 0 {
		t.Errorf("state kept for %d series after 1000 flows came and went, want 0", got)
	}
	if len(b.Samples) != 2000 || len(b.Series) != 1000 {
		t.Fatalf("%d samples, %d series; want 2000, 1000", len(b.Samples), len(b.Series))
	}
	b = rows.Batch{}
	c.Add(upd(100_000, flow(3), uintv(7)), &b)
	if len(b.Samples) != 1 || b.Samples[0].Int != 7 {
		t.Errorf("the flow created again stored %+v, want its first value", b.Samples)
	}
}
