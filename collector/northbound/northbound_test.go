package northbound_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmi/proto/gnmi_ext"
	"github.com/openconfig/ygnmi/ygnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/lhcnp/lhcnp/gen/oc/ocpath"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/migrations"
)

const (
	wanQ0   = "/lhcnp/interfaces/interface[name=wan]/queues/queue[id=0]"
	queueSt = "/lhcnp/interfaces/interface/queues/queue/state"
)

// responses parses gnmic's --format protojson output: one SubscribeResponse
// (or GetResponse) per JSON object.
func responses[T proto.Message](t *testing.T, out string, mk func() T) []T {
	t.Helper()
	start := strings.IndexByte(out, '{')
	if start < 0 {
		t.Fatalf("no JSON in gnmic output:\n%s", out)
	}
	dec := json.NewDecoder(strings.NewReader(out[start:]))
	var msgs []T
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			break // gnmic's own lines after the messages
		}
		m := mk()
		if err := protojson.Unmarshal(raw, m); err != nil {
			t.Fatalf("gnmic output: %v\n%s", err, raw)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

func subResp() *gnmi.SubscribeResponse { return &gnmi.SubscribeResponse{} }

// leafVals flattens notifications into published values.
func leafVals(rs []*gnmi.SubscribeResponse) (vals []published, syncs int) {
	for _, r := range rs {
		if r.GetSyncResponse() {
			syncs++
			continue
		}
		n := r.GetUpdate()
		join := func(p *gnmi.Path) string {
			return store.PathString(&gnmi.Path{Elem: append(append([]*gnmi.PathElem(nil), n.GetPrefix().GetElem()...), p.GetElem()...)})
		}
		for _, d := range n.GetDelete() {
			vals = append(vals, published{target: n.GetPrefix().GetTarget(), path: join(d), ts: n.GetTimestamp()})
		}
		for _, u := range n.GetUpdate() {
			vals = append(vals, published{target: n.GetPrefix().GetTarget(), path: join(u.GetPath()), ts: n.GetTimestamp(), val: u.GetVal()})
		}
	}
	return vals, syncs
}

// key renders a value for comparison: PostgreSQL keeps microseconds.
func key(p published) string {
	v := "<deleted>"
	if p.val != nil {
		v = prototext.MarshalOptions{}.Format(p.val)
	}
	return fmt.Sprintf("%s %s @%d = %s", p.target, p.path, p.ts/1000*1000, v)
}

func keys(ps []published) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = key(p)
	}
	sort.Strings(out)
	return out
}

// underQueueState reports whether a path is a queue's state leaf.
func underQueueState(path string) bool {
	p := store.MustPath(path)
	el := p.GetElem()
	return len(el) > 6 && el[1].GetName() == "interfaces" && el[3].GetName() == "queues" && el[5].GetName() == "state"
}

// compact removes whitespace (protojson varies its spacing on purpose).
// recvAll reads a Subscribe stream to its end: nil when the target ended
// it (EOF), else the stream's error.
func recvAll(s gnmi.GNMI_SubscribeClient) error {
	for {
		if _, err := s.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func compact(s string) string { return strings.Join(strings.Fields(s), "") }

func usTime(ns int64) time.Time { return time.Unix(0, ns/1000*1000) }

// TestNorthboundFleet: two real switch targets, the collector subscribed to
// both with its own PostgreSQL database, and its northbound driven by
// gnmic and ygnmi: Capabilities, Get and a live Subscribe across both
// targets with target=*, History range and snapshot checked value by value
// against what the switches published to the collector, History's errors,
// and Set forwarded to a switch (K_max changed; a bad Set refused with the
// switch's own error).
func TestNorthboundFleet(t *testing.T) {
	fl := startFleet(t)
	nb := []string{"-a", fl.addr, "--insecure"}

	t.Run("capabilities", func(t *testing.T) {
		out, err := gnmic(t, append(nb, "capabilities")...)
		if err != nil || !strings.Contains(out, "lhcnp") || !strings.Contains(out, "JSON_IETF") {
			t.Errorf("gnmic capabilities: %v\n%s", err, out)
		}
	})

	t.Run("get target=*", func(t *testing.T) {
		out, err := gnmic(t, append(nb, "get", "--target", "*", "-e", "proto", "--format", "protojson",
			"--path", "/lhcnp/interfaces/interface[name=wan]/queues/queue[id=0]/state/effective-kmax")...)
		if err != nil {
			t.Fatalf("gnmic get: %v\n%s", err, out)
		}
		got := map[string]bool{}
		for _, r := range responses(t, out, func() *gnmi.GetResponse { return &gnmi.GetResponse{} }) {
			for _, n := range r.GetNotification() {
				if len(n.GetUpdate()) == 1 && n.GetUpdate()[0].GetVal().GetUintVal() > 0 {
					got[n.GetPrefix().GetTarget()] = true
				}
			}
		}
		if !got["n1"] || !got["n2"] {
			t.Errorf("get target=*: effective-kmax of %v, want n1 and n2:\n%s", got, out)
		}
	})

	t.Run("live subscribe target=*", func(t *testing.T) {
		// Initial data of both switches, one sync_response, then live
		// updates of both (their WAN queues carry data and ACKs).
		out := gnmicUntil(t, 60*time.Second, func(out string) bool {
			_, after, ok := strings.Cut(out, `"syncResponse"`)
			return ok && strings.Contains(after, `"target":"n1"`) && strings.Contains(after, `"target":"n2"`) &&
				strings.HasSuffix(after, "}}")
		}, append(nb, "subscribe", "--target", "*", "--stream-mode", "on-change", "-e", "proto", "--format", "protojson",
			"--path", "/lhcnp/interfaces/interface/queues/queue[id=0]/state/counters/packets")...)
		_, syncs := leafVals(responses(t, out, subResp))
		if syncs != 1 {
			t.Errorf("%d sync_responses, want exactly one for both switches:\n%s", syncs, out)
		}
		before, _, _ := strings.Cut(compact(out), `"syncResponse"`)
		if !strings.Contains(before, `"target":"n1"`) || !strings.Contains(before, `"target":"n2"`) {
			t.Errorf("initial data lacks a switch:\n%s", before)
		}
	})

	t.Run("ygnmi", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		viaNB := fl.ygnmi(t, fl.addr, "n1")
		direct := fl.ygnmi(t, fl.sw["n1"], "n1")
		q := ocpath.Root().Lhcnp().Interfaces().Interface("wan").Queues().Queue(0)
		want := must(ygnmi.Get(ctx, direct, q.State().EffectiveKmax())).of(t)
		got := must(ygnmi.Get(ctx, viaNB, q.State().EffectiveKmax())).of(t)
		if got != want {
			t.Errorf("ygnmi effective-kmax through the collector %d, from the switch %d", got, want)
		}
		// Every queue of both switches, through the collector.
		all := must(ygnmi.GetAll(ctx, fl.ygnmi(t, fl.addr, "n2"),
			ocpath.Root().Lhcnp().Interfaces().InterfaceAny().Queues().QueueAny().State().EffectiveKmax())).of(t)
		if len(all) == 0 {
			t.Error("ygnmi GetAll through the collector: no effective-kmax of n2")
		}
	})

	t.Run("set forwarded", func(t *testing.T) {
		out, err := gnmic(t, append(nb, "set", "--target", "n1",
			"--update-path", wanQ0+"/config/kmax-mode", "--update-value", "EXPLICIT",
			"--update-path", wanQ0+"/config/kmax", "--update-value", "2000000")...)
		if err != nil {
			t.Fatalf("gnmic set through the collector: %v\n%s", err, out)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		q := ocpath.Root().Lhcnp().Interfaces().Interface("wan").Queues().Queue(0)
		direct := fl.ygnmi(t, fl.sw["n1"], "n1")
		if got := must(ygnmi.Get(ctx, direct, q.State().EffectiveKmax())).of(t); got != 2000000 {
			t.Errorf("switch n1 effective-kmax %d after the forwarded Set, want 2000000", got)
		}
		// The change comes back through the collector's subscription.
		viaNB := fl.ygnmi(t, fl.addr, "n1")
		if _, err := ygnmi.Await(ctx, viaNB, q.State().EffectiveKmax(), 2000000); err != nil {
			t.Errorf("effective-kmax through the collector never became 2000000: %v", err)
		}
		// ygnmi's Set, forwarded the same way.
		if _, err := ygnmi.Replace(ctx, viaNB, q.Config().Alpha(), 0.5); err != nil {
			t.Fatalf("ygnmi Replace through the collector: %v", err)
		}
		if got := must(ygnmi.Get(ctx, direct, q.Config().Alpha())).of(t); got != 0.5 {
			t.Errorf("switch n1 alpha %v after ygnmi's forwarded Replace, want 0.5", got)
		}
		// n2 unchanged.
		q2 := ocpath.Root().Lhcnp().Interfaces().Interface("wan").Queues().Queue(0)
		d2 := fl.ygnmi(t, fl.sw["n2"], "n2")
		if got := must(ygnmi.Get(ctx, d2, q2.State().EffectiveKmax())).of(t); got == 2000000 {
			t.Errorf("switch n2 effective-kmax changed to %d by a Set for n1", got)
		}
	})

	t.Run("bad set forwarded", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req := &gnmi.SetRequest{Prefix: &gnmi.Path{Target: "n1"}, Update: []*gnmi.Update{{
			Path: store.MustPath(wanQ0 + "/config/alpha"), Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: "fast"}}}}}
		_, direct := fl.client(t, fl.sw["n1"]).Set(ctx, req)
		_, via := fl.client(t, fl.addr).Set(ctx, req)
		if direct == nil {
			t.Fatal("the switch accepted alpha \"fast\"")
		}
		if diff := cmp.Diff(status.Convert(direct).Proto(), status.Convert(via).Proto(), protocmp.Transform()); diff != "" {
			t.Errorf("status through the collector differs from the switch's (-switch +collector):\n%s", diff)
		}
		out, err := gnmic(t, append(nb, "set", "--target", "n1", "--update-path", wanQ0+"/config/alpha", "--update-value", "fast")...)
		if err == nil || !strings.Contains(out, `the string "fast" is not a decimal64 number`) || !strings.Contains(out, "InvalidArgument") {
			t.Errorf("gnmic bad set through the collector: %v\n%s", err, out)
		}
		// A Set for no one switch is refused by the collector itself.
		_, err = fl.client(t, fl.addr).Set(ctx, &gnmi.SetRequest{Prefix: &gnmi.Path{Target: "*"}, Update: req.Update})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("set target=*: %v, want INVALID_ARGUMENT", err)
		}
		_, err = fl.client(t, fl.addr).Set(ctx, &gnmi.SetRequest{Prefix: &gnmi.Path{Target: "n9"}, Update: req.Update})
		if status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), `"n9"`) {
			t.Errorf("set target=n9: %v, want NOT_FOUND naming n9", err)
		}
	})

	// History: a window of what the switches published, once stored. It
	// starts at a queue's change after the initial data.
	var a time.Time
	waitFor(t, 60*time.Second, "a queue's state changing", func() bool {
		initial, ok := fl.rec.initialUpTo("n1", "n2")
		if !ok {
			return false
		}
		for _, p := range fl.rec.snapshot() {
			if p.ts > initial && underQueueState(p.path) {
				a = usTime(p.ts)
				return true
			}
		}
		return false
	})
	b := a.Add(time.Second)
	waitFor(t, 60*time.Second, "notifications after the window", func() bool {
		return fl.rec.lastTS("n1") > b.UnixNano() && fl.rec.lastTS("n2") > b.UnixNano()
	})
	var inWindow, upToB []published
	for _, p := range fl.rec.snapshot() {
		ts := usTime(p.ts)
		if !ts.Before(a) && ts.Before(b) {
			inWindow = append(inWindow, p)
		}
		if !ts.After(b) {
			upToB = append(upToB, p)
		}
	}
	pool := fl.pool
	waitFor(t, 60*time.Second, "the window's samples in PostgreSQL", func() bool {
		var n int
		err := pool.QueryRow(context.Background(), `SELECT count(*) FROM samples WHERE ts >= $1 AND ts < $2`, a, b).Scan(&n)
		return err == nil && n >= len(inWindow)
	})

	// A row retention carried forward (migration 008: flags bit 3, the
	// series' last value copied to the horizon) inside the window: History
	// reads it as a value to start from, never as a change the switch sent
	// (a series that changes again before b: the snapshot at b is its
	// later, real value).
	mid := a.Add(b.Sub(a) / 2)
	if tag, err := pool.Exec(context.Background(), `INSERT INTO samples (ts, series_id, v_int, v_float, v_num, v_bool, v_text, flags, batch_id)
		SELECT $1, y.series_id, y.v_int, y.v_float, y.v_num, y.v_bool, y.v_text, y.flags | 8, 0 FROM samples y
		JOIN series se ON se.id = y.series_id WHERE se.schema_path LIKE '%/queues/queue/state/%' AND y.ts < $1
		  AND EXISTS (SELECT 1 FROM samples z WHERE z.series_id = y.series_id AND z.ts > $1 AND z.ts < $2)
		ORDER BY y.ts DESC LIMIT 1`, mid, b); err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("inserting a carried row: %v, %v", tag, err)
	}

	t.Run("history range", func(t *testing.T) {
		out := gnmicUntil(t, 60*time.Second, func(out string) bool { return strings.HasSuffix(out, `{"syncResponse":true}`) },
			append(nb, "subscribe", "--target", "*", "--mode", "stream", "--updates-only", "-e", "proto", "--format", "protojson",
				"--history-start", a.Format(time.RFC3339Nano), "--history-end", b.Format(time.RFC3339Nano),
				"--path", queueSt)...)
		got, syncs := leafVals(responses(t, out, subResp))
		var want []published
		for _, p := range inWindow {
			if underQueueState(p.path) {
				want = append(want, p)
			}
		}
		if len(want) == 0 {
			t.Fatal("the switches published nothing in the window")
		}
		if diff := cmp.Diff(keys(want), keys(got)); diff != "" {
			t.Errorf("history range [%s, %s): %d updates, the switches published %d (-published +history):\n%s",
				a.Format(time.RFC3339Nano), b.Format(time.RFC3339Nano), len(got), len(want), diff)
		}
		for i := 1; i < len(got); i++ {
			if got[i].ts < got[i-1].ts {
				t.Fatalf("history range out of time order at %s after %s", describe(got[i]), describe(got[i-1]))
			}
		}
		if syncs != 1 {
			t.Errorf("%d sync_responses, want 1", syncs)
		}
	})

	t.Run("history snapshot", func(t *testing.T) {
		last := map[string]published{}
		for _, p := range upToB {
			if underQueueState(p.path) {
				last[p.target+p.path] = p
			}
		}
		var want []published
		for _, p := range last {
			if p.val != nil {
				want = append(want, p)
			}
		}
		out, err := gnmic(t, append(nb, "subscribe", "--target", "*", "--mode", "once", "-e", "proto", "--format", "protojson",
			"--history-snapshot", b.Format(time.RFC3339Nano), "--path", queueSt)...)
		if err != nil {
			t.Fatalf("gnmic: %v\n%s", err, out)
		}
		got, syncs := leafVals(responses(t, out, subResp))
		if diff := cmp.Diff(keys(want), keys(got)); diff != "" {
			t.Errorf("history snapshot at %s (-published +history):\n%s", b.Format(time.RFC3339Nano), diff)
		}
		if syncs != 1 {
			t.Errorf("%d sync_responses, want 1", syncs)
		}
	})

	t.Run("use_models", func(t *testing.T) {
		// A subscription naming only a model the collector does not
		// serve is refused as a switch refuses it; the served one is
		// answered.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := fl.client(t, fl.addr)
		once := func(models []*gnmi.ModelData) error {
			s, err := c.Subscribe(ctx)
			if err != nil {
				return err
			}
			if err := s.Send(&gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
				Mode: gnmi.SubscriptionList_ONCE, Prefix: &gnmi.Path{Target: "n1"}, UseModels: models,
				Subscription: []*gnmi.Subscription{{Path: store.MustPath(queueSt)}}}}}); err != nil {
				return err
			}
			return recvAll(s)
		}
		if err := once([]*gnmi.ModelData{{Name: "openconfig-interfaces"}}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("use_models openconfig-interfaces: %v, want INVALID_ARGUMENT", err)
		}
		if err := once([]*gnmi.ModelData{{Name: schema.ModuleName}}); err != nil {
			t.Errorf("use_models %s: %v, want an answer", schema.ModuleName, err)
		}
	})

	t.Run("history errors", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// A real horizon, as the lab's retention records it (migration
		// 024): the switches' samples are all newer, nothing is removed.
		horizon := time.Now().Add(-90 * time.Minute).Truncate(time.Second)
		if err := migrations.TrimAt(ctx, fl.pool, horizon); err != nil {
			t.Fatal(err)
		}
		kept := "samples are kept from " + horizon.UTC().Format(time.RFC3339Nano) + " on"
		c := fl.client(t, fl.addr)
		hist := func(h *gnmi_ext.History, mode gnmi.SubscriptionList_Mode, path string, edit func(*gnmi.SubscriptionList)) error {
			s, err := c.Subscribe(ctx)
			if err != nil {
				return err
			}
			sl := &gnmi.SubscriptionList{Mode: mode, Prefix: &gnmi.Path{Target: "*"},
				Subscription: []*gnmi.Subscription{{Path: store.MustPath(path)}}}
			if edit != nil {
				edit(sl)
			}
			err = s.Send(&gnmi.SubscribeRequest{
				Request:   &gnmi.SubscribeRequest_Subscribe{Subscribe: sl},
				Extension: []*gnmi_ext.Extension{{Ext: &gnmi_ext.Extension_History{History: h}}}})
			if err != nil {
				return err
			}
			return recvAll(s)
		}
		snap := func(ts time.Time) *gnmi_ext.History {
			return &gnmi_ext.History{Request: &gnmi_ext.History_SnapshotTime{SnapshotTime: ts.UnixNano()}}
		}
		rng := func(s, e time.Time) *gnmi_ext.History {
			return &gnmi_ext.History{Request: &gnmi_ext.History_Range{Range: &gnmi_ext.TimeRange{Start: s.UnixNano(), End: e.UnixNano()}}}
		}
		for _, tt := range []struct {
			desc string
			h    *gnmi_ext.History
			mode gnmi.SubscriptionList_Mode
			path string
			// edit changes the request before it is sent.
			edit func(*gnmi.SubscriptionList)
			code codes.Code
			msg  string
		}{
			{desc: "outside retention", h: snap(time.Now().Add(-2 * time.Hour)), mode: gnmi.SubscriptionList_ONCE, path: queueSt,
				code: codes.OutOfRange, msg: "outside the retention: " + kept},
			{desc: "range outside retention", h: rng(time.Now().Add(-3*time.Hour), time.Now().Add(-2*time.Hour)), mode: gnmi.SubscriptionList_STREAM,
				path: queueSt, code: codes.OutOfRange, msg: "outside the retention: " + kept},
			{desc: "never stored", h: snap(b), mode: gnmi.SubscriptionList_ONCE, path: "/lhcnp/fcn/mappings",
				code: codes.NotFound, msg: "path /lhcnp/fcn/mappings: never stored for any switch"},
			{desc: "not in the schema", h: snap(b), mode: gnmi.SubscriptionList_ONCE, path: "/lhcnp/nothing",
				code: codes.InvalidArgument, msg: "/lhcnp/nothing"},
			{desc: "snapshot not ONCE", h: snap(b), mode: gnmi.SubscriptionList_STREAM, path: queueSt,
				code: codes.InvalidArgument, msg: "a snapshot needs mode ONCE"},
			{desc: "range not STREAM", h: rng(a, b), mode: gnmi.SubscriptionList_ONCE, path: queueSt,
				code: codes.InvalidArgument, msg: "a range needs mode STREAM"},
			{desc: "start after end", h: rng(b, a), mode: gnmi.SubscriptionList_STREAM, path: queueSt,
				code: codes.InvalidArgument, msg: "is after its end"},
			{desc: "future snapshot", h: snap(time.Now().Add(time.Hour)), mode: gnmi.SubscriptionList_ONCE, path: queueSt,
				code: codes.Unimplemented, msg: "in the future"},
			// Checked as a live Subscribe and Get check them; History
			// answered these before: a path in the deprecated element
			// field with every stored leaf of the fleet (Join read it
			// as the root), the others as if the field were not there.
			{desc: "a path in the deprecated element field", h: snap(b), mode: gnmi.SubscriptionList_ONCE, path: queueSt,
				edit: func(sl *gnmi.SubscriptionList) {
					sl.Subscription[0].Path = &gnmi.Path{Element: []string{"lhcnp", "global"}}
				},
				code: codes.InvalidArgument, msg: "path /lhcnp/global: malformed path: the deprecated element field is not supported, use elem"},
			{desc: "a prefix in the deprecated element field", h: snap(b), mode: gnmi.SubscriptionList_ONCE, path: "/config",
				edit: func(sl *gnmi.SubscriptionList) { sl.Prefix.Element = []string{"lhcnp", "global"} },
				code: codes.InvalidArgument, msg: "prefix /lhcnp/global: malformed path: the deprecated element field is not supported, use elem"},
			{desc: "origin in both prefix and path", h: snap(b), mode: gnmi.SubscriptionList_ONCE, path: queueSt,
				edit: func(sl *gnmi.SubscriptionList) {
					sl.Prefix.Origin, sl.Subscription[0].Path.Origin = "openconfig", "openconfig"
				},
				code: codes.InvalidArgument, msg: `origin "openconfig" in the path and "openconfig" in the prefix: give it in one of them (gNMI 2.7)`},
			{desc: "use_models naming a model not served", h: snap(b), mode: gnmi.SubscriptionList_ONCE, path: queueSt,
				edit: func(sl *gnmi.SubscriptionList) { sl.UseModels = []*gnmi.ModelData{{Name: "openconfig-interfaces"}} },
				code: codes.InvalidArgument, msg: `use_models: model "openconfig-interfaces" version "" is not served`},
			{desc: "another module's qualifier", h: snap(b), mode: gnmi.SubscriptionList_ONCE, path: "/bogus:lhcnp/global",
				code: codes.InvalidArgument, msg: `module "bogus" is not served`},
			// A snapshot is ONCE: its intervals are refused as a live
			// ONCE refuses them (History ignored them).
			{desc: "a snapshot with a sample interval", h: snap(b), mode: gnmi.SubscriptionList_ONCE, path: queueSt,
				edit: func(sl *gnmi.SubscriptionList) { sl.Subscription[0].SampleInterval = uint64(time.Second) },
				code: codes.InvalidArgument, msg: "sample_interval is not allowed in ONCE mode"},
			{desc: "a snapshot with a heartbeat", h: snap(b), mode: gnmi.SubscriptionList_ONCE, path: queueSt,
				edit: func(sl *gnmi.SubscriptionList) { sl.Subscription[0].HeartbeatInterval = uint64(time.Second) },
				code: codes.InvalidArgument, msg: "heartbeat_interval is not allowed in ONCE mode"},
			// The request's faults before the retention's answer (a bad
			// path at a removed time was OUT_OF_RANGE).
			{desc: "not in the schema, outside retention", h: snap(time.Now().Add(-2 * time.Hour)), mode: gnmi.SubscriptionList_ONCE,
				path: "/lhcnp/nothing", code: codes.InvalidArgument, msg: "/lhcnp/nothing"},
		} {
			t.Run(tt.desc, func(t *testing.T) {
				err := hist(tt.h, tt.mode, tt.path, tt.edit)
				if status.Code(err) != tt.code || !strings.Contains(err.Error(), tt.msg) {
					t.Errorf("got %v, want %v saying %q", err, tt.code, tt.msg)
				}
			})
		}
		out, err := gnmic(t, append(nb, "subscribe", "--target", "*", "--mode", "once",
			"--history-snapshot", time.Now().Add(-2*time.Hour).Format(time.RFC3339), "--path", queueSt)...)
		if err == nil && !bytes.Contains([]byte(out), []byte("outside the retention")) {
			t.Errorf("gnmic snapshot outside retention: %v\n%s", err, out)
		}
	})
}
