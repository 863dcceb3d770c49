package store

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/gnmi/clock"
	"github.com/openconfig/gnmi/proto/gnmi"
)

func u(v uint64) *gnmi.TypedValue {
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: v}}
}
func str(v string) *gnmi.TypedValue {
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: v}}
}

// fixture is a small tree: two interfaces with counters and state, two flows.
func fixture(t testing.TB) *Store {
	t.Helper()
	s := New(WithClock(clock.NewFake(time.Unix(100, 0))))
	var b Batch
	for _, ifc := range []string{"eth0", "eth1"} {
		b.Update(MustPath("/interfaces/interface[name="+ifc+"]/state/counters/in-octets"), u(1), Counter)
		b.Update(MustPath("/interfaces/interface[name="+ifc+"]/state/counters/out-octets"), u(2), Counter)
		b.Update(MustPath("/interfaces/interface[name="+ifc+"]/state/oper-status"), str("UP"), DiscreteState)
		b.Update(MustPath("/interfaces/interface[name="+ifc+"]/config/mtu"), u(9000), Config)
	}
	for _, f := range []string{"1", "2"} {
		b.Update(MustPath("/flows/flow[id="+f+"][src=a]/state/rate"), u(10), Gauge)
	}
	if _, err := s.Apply(&b, 1000); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return s
}

func walkKeys(s *Store, path string) []string {
	var got []string
	s.Walk(MustPattern(nil, MustPath(path)), func(l *Node, _ *Value, _ Kind) { got = append(got, l.Key()) })
	sort.Strings(got)
	return got
}

func TestWalk(t *testing.T) {
	s := fixture(t)
	tests := []struct {
		desc string
		path string
		want []string
	}{
		{"leaf", "/interfaces/interface[name=eth0]/state/oper-status", []string{"/interfaces/interface[name=eth0]/state/oper-status"}},
		{"subtree", "/interfaces/interface[name=eth1]/state/counters", []string{
			"/interfaces/interface[name=eth1]/state/counters/in-octets",
			"/interfaces/interface[name=eth1]/state/counters/out-octets"}},
		{"key wildcard", "/interfaces/interface[name=*]/config/mtu", []string{
			"/interfaces/interface[name=eth0]/config/mtu", "/interfaces/interface[name=eth1]/config/mtu"}},
		{"omitted key", "/interfaces/interface/config/mtu", []string{
			"/interfaces/interface[name=eth0]/config/mtu", "/interfaces/interface[name=eth1]/config/mtu"}},
		{"name wildcard", "/interfaces/interface[name=eth0]/*/mtu", []string{"/interfaces/interface[name=eth0]/config/mtu"}},
		{"multi-level", "/.../rate", []string{"/flows/flow[id=1][src=a]/state/rate", "/flows/flow[id=2][src=a]/state/rate"}},
		{"multi-level in the middle", "/interfaces/.../in-octets", []string{
			"/interfaces/interface[name=eth0]/state/counters/in-octets",
			"/interfaces/interface[name=eth1]/state/counters/in-octets"}},
		{"partial keys", "/flows/flow[src=a]/state/rate", []string{"/flows/flow[id=1][src=a]/state/rate", "/flows/flow[id=2][src=a]/state/rate"}},
		{"all keys", "/flows/flow[id=2][src=a]", []string{"/flows/flow[id=2][src=a]/state/rate"}},
		{"wrong key name", "/flows/flow[id=2][dst=a]", nil},
		{"absent", "/interfaces/interface[name=eth9]", nil},
		{"below a leaf", "/interfaces/interface[name=eth0]/config/mtu/x", nil},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, walkKeys(s, tt.path)); diff != "" {
				t.Errorf("Walk(%s) (-want, +got):\n%s", tt.path, diff)
			}
		})
	}
	if got := len(walkKeys(s, "/")); got != 10 {
		t.Errorf("Walk(/) found %d leaves, want 10", got)
	}
	if got := s.Len(); got != 10 {
		t.Errorf("Len() = %d, want 10", got)
	}
}

type recorder struct{ got []string }

func (r *recorder) Notify(cs []Change) {
	for _, c := range cs {
		if c.Val == nil {
			r.got = append(r.got, fmt.Sprintf("delete %s @%d", c.Leaf.Key(), c.TS))
			continue
		}
		r.got = append(r.got, fmt.Sprintf("update %s=%v @%d", c.Leaf.Key(), c.Val.TV.GetUintVal(), c.TS))
	}
}

func TestApplyAndWatch(t *testing.T) {
	const (
		mtu0 = "/interfaces/interface[name=eth0]/config/mtu"
		in0  = "/interfaces/interface[name=eth0]/state/counters/in-octets"
		rate = "/flows/flow[id=1][src=a]/state/rate"
	)
	tests := []struct {
		desc  string
		watch string
		batch func(b *Batch)
		ts    int64
		want  []string
	}{
		{"real change fires", "/interfaces", func(b *Batch) { b.Update(MustPath(in0), u(5), Counter) }, 2000,
			[]string{"update " + in0 + "=5 @2000"}},
		{"same value does not fire", "/interfaces", func(b *Batch) { b.Update(MustPath(in0), u(1), Counter) }, 2000, nil},
		{"older timestamp is clamped", "/interfaces", func(b *Batch) { b.Update(MustPath(in0), u(6), Counter) }, 500,
			[]string{"update " + in0 + "=6 @1000"}},
		{"zero timestamp is the clock", "/interfaces", func(b *Batch) { b.Update(MustPath(in0), u(6), Counter) }, 0,
			[]string{"update " + in0 + "=6 @100000000000"}},
		{"outside the pattern", "/flows", func(b *Batch) { b.Update(MustPath(in0), u(6), Counter) }, 2000, nil},
		{"wildcard watch", "/interfaces/interface[name=*]/config", func(b *Batch) {
			b.Update(MustPath(mtu0), u(1500), Config).Update(MustPath(in0), u(7), Counter)
		}, 2000, []string{"update " + mtu0 + "=1500 @2000"}},
		{"multi-level watch", "/.../state", func(b *Batch) { b.Update(MustPath(rate), u(11), Gauge) }, 2000,
			[]string{"update " + rate + "=11 @2000"}},
		{"flow ages out", "/flows/flow", func(b *Batch) { b.Delete(MustPath("/flows/flow[id=1][src=a]")) }, 2000,
			[]string{"delete " + rate + " @2000"}},
		{"new leaf fires", "/flows", func(b *Batch) { b.Update(MustPath("/flows/flow[id=3][src=b]/state/rate"), u(1), Gauge) }, 2000,
			[]string{"update /flows/flow[id=3][src=b]/state/rate=1 @2000"}},
		{"delete of an absent path", "/", func(b *Batch) { b.Delete(MustPath("/flows/flow[id=9]")) }, 2000, nil},
		{"two patterns of one watcher hit once each", "/interfaces/...", func(b *Batch) { b.Update(MustPath(in0), u(8), Counter) }, 2000,
			[]string{"update " + in0 + "=8 @2000"}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			s := fixture(t)
			r := &recorder{}
			cancel := s.Watch(MustPattern(nil, MustPath(tt.watch)), r)
			var b Batch
			tt.batch(&b)
			if _, err := s.Apply(&b, tt.ts); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if diff := cmp.Diff(tt.want, r.got); diff != "" {
				t.Errorf("notifications (-want, +got):\n%s", diff)
			}
			cancel()
			r.got = nil
			s.Update(MustPath(in0), u(99), Counter, 0)
			if r.got != nil {
				t.Errorf("notified after cancel: %v", r.got)
			}
		})
	}
}

func TestDeletePrunes(t *testing.T) {
	s := fixture(t)
	if _, err := s.Delete(MustPath("/flows/flow[id=*]"), 0); err != nil {
		t.Fatal(err)
	}
	if got := walkKeys(s, "/flows"); got != nil {
		t.Errorf("flows left: %v", got)
	}
	if len(s.root.children) != 1 {
		t.Errorf("empty /flows container not pruned: %d root children", len(s.root.children))
	}
	if got := s.Len(); got != 8 {
		t.Errorf("Len() = %d, want 8", got)
	}
	s.Delete(MustPath("/"), 0)
	if got := s.Len(); got != 0 {
		t.Errorf("Len() after deleting the root = %d, want 0", got)
	}
	if _, err := s.Update(MustPath("/a/b"), u(1), Counter, 0); err != nil {
		t.Errorf("Update after deleting the root: %v", err)
	}
}

func TestApplyErrors(t *testing.T) {
	tests := []struct {
		desc string
		path string
		val  *gnmi.TypedValue
	}{
		{"through a leaf", "/interfaces/interface[name=eth0]/config/mtu/x", u(1)},
		{"onto a container", "/interfaces/interface[name=eth0]/config", u(1)},
		{"nil value", "/a", nil},
		{"empty path", "/", u(1)},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			s := fixture(t)
			var b Batch
			b.Update(MustPath(tt.path), tt.val, Config)
			b.Update(MustPath("/ok"), u(1), Config)
			_, err := s.Apply(&b, 0)
			if !errors.Is(err, ErrPath) {
				t.Errorf("Apply error = %v, want ErrPath", err)
			}
			if _, _, ok := s.Get(MustPath("/ok")); !ok {
				t.Errorf("the valid update of the batch was not applied")
			}
		})
	}
}

// TestApplySharedPrefixes: an Apply walks each path from where it leaves
// the previous one; mixed containers, keys, a delete in between and errors
// along a shared prefix must give the same tree as one update at a time.
func TestApplySharedPrefixes(t *testing.T) {
	ops := []struct {
		path string
		del  bool
	}{
		{path: "/if/i[name=eth0]/q[id=0][dir=in]/c0"},
		{path: "/if/i[name=eth0]/q[id=0][dir=in]/c1"},
		{path: "/if/i[name=eth0]/q[id=0][dir=out]/c0"},
		{path: "/if/i[name=eth1]/q[id=0][dir=in]/c0"},
		{path: "/if/i[name=eth0]/q[id=0][dir=in]/c2"},
		{path: "/if/i[name=eth0]/q[id=0][dir=in]/c0/x"}, // through a leaf: fails
		{path: "/if/i[name=eth0]/q[id=0][dir=in]/c3"},
		{path: "/if/i[name=eth0]", del: true},
		{path: "/if/i[name=eth0]/q[id=0][dir=in]/c4"},
		{path: "/if/i[name=eth1]/q[id=0][dir=in]/c1"},
		{path: "/if/j/k"},
	}
	batched, single := New(), New()
	var b Batch
	for _, o := range ops {
		var one Batch
		if o.del {
			b.Delete(MustPath(o.path))
			one.Delete(MustPath(o.path))
		} else {
			b.Update(MustPath(o.path), u(1), Counter)
			one.Update(MustPath(o.path), u(1), Counter)
		}
		single.Apply(&one, 1)
	}
	if _, err := batched.Apply(&b, 1); !errors.Is(err, ErrPath) {
		t.Errorf("Apply error = %v, want ErrPath (the update through a leaf)", err)
	}
	if diff := cmp.Diff(walkKeys(single, "/"), walkKeys(batched, "/")); diff != "" {
		t.Errorf("leaves (-one at a time, +batched):\n%s", diff)
	}
}

func TestGetAndVersions(t *testing.T) {
	s := fixture(t)
	p := MustPath("/interfaces/interface[name=eth0]/state/counters/in-octets")
	v1, k, ok := s.Get(p)
	if !ok || k != Counter || v1.TS != 1000 {
		t.Fatalf("Get = %v, %v, %v", v1, k, ok)
	}
	s.Update(p, u(1), Counter, 3000)
	v2, _, _ := s.Get(p)
	if v2.Ver != v1.Ver {
		t.Errorf("unchanged value: Ver %d→%d; want the same", v1.Ver, v2.Ver)
	}
	s.Update(p, u(2), Counter, 4000)
	v3, _, _ := s.Get(p)
	if v3.Ver == v1.Ver {
		t.Errorf("changed value kept Ver %d", v3.Ver)
	}
}

// TestLeafTimestamps: a leaf's timestamp is its own (the time its value
// changed, or in a mirror its source's), whatever the other leaves' are.
func TestLeafTimestamps(t *testing.T) {
	const (
		in0 = "/interfaces/interface[name=eth0]/state/counters/in-octets"
		in1 = "/interfaces/interface[name=eth1]/state/counters/in-octets"
	)
	type upd struct {
		path string
		v    uint64
		ts   int64
	}
	tests := []struct {
		desc   string
		source bool
		apply  []upd
		want   map[string]int64 // leaf → timestamp after the updates
		wantV  map[string]uint64
	}{
		{desc: "unchanged value keeps the time it changed", apply: []upd{{in0, 1, 3000}, {in0, 1, 5000}},
			want: map[string]int64{in0: 1000, in1: 1000}, wantV: map[string]uint64{in0: 1, in1: 1}},
		{desc: "a change takes its update's time", apply: []upd{{in0, 5, 3000}, {in0, 5, 5000}},
			want: map[string]int64{in0: 3000, in1: 1000}, wantV: map[string]uint64{in0: 5, in1: 1}},
		{desc: "an older change is clamped to the leaf's time, not to another leaf's", apply: []upd{{in1, 7, 9000}, {in0, 5, 500}},
			want: map[string]int64{in0: 1000, in1: 9000}, wantV: map[string]uint64{in0: 5, in1: 7}},
		{desc: "mirror: unchanged value takes its source's timestamp", source: true, apply: []upd{{in0, 1, 3000}},
			want: map[string]int64{in0: 3000, in1: 1000}, wantV: map[string]uint64{in0: 1, in1: 1}},
		{desc: "mirror: out of order across leaves, each keeps its own", source: true, apply: []upd{{in1, 7, 9000}, {in0, 5, 2000}},
			want: map[string]int64{in0: 2000, in1: 9000}, wantV: map[string]uint64{in0: 5, in1: 7}},
		{desc: "mirror: an older update of a leaf is dropped", source: true, apply: []upd{{in0, 5, 3000}, {in0, 6, 2000}},
			want: map[string]int64{in0: 3000, in1: 1000}, wantV: map[string]uint64{in0: 5, in1: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			var opts []Option
			if tt.source {
				opts = append(opts, WithSourceTimestamps())
			}
			s := New(opts...)
			for _, p := range []string{in0, in1} {
				s.Update(MustPath(p), u(1), Counter, 1000)
			}
			for _, a := range tt.apply {
				if _, err := s.Update(MustPath(a.path), u(a.v), Counter, a.ts); err != nil {
					t.Fatal(err)
				}
			}
			got, gotV := map[string]int64{}, map[string]uint64{}
			for _, p := range []string{in0, in1} {
				v, _, _ := s.Get(MustPath(p))
				got[p], gotV[p] = v.TS, v.TV.GetUintVal()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("timestamps (-want, +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantV, gotV); diff != "" {
				t.Errorf("values (-want, +got):\n%s", diff)
			}
		})
	}
}

func TestPathStringRoundTrip(t *testing.T) {
	for _, s := range []string{"/", "/a/b[k=v]/c", "/a[k1=x][k2=y\\]z]/b", "/a[k=\\\\]"} {
		p, err := ParsePath(s)
		if err != nil {
			t.Fatalf("ParsePath(%q): %v", s, err)
		}
		if got := PathString(p); got != s {
			t.Errorf("PathString(ParsePath(%q)) = %q", s, got)
		}
	}
}

func TestEqualValues(t *testing.T) {
	f := func(v float64) *gnmi.TypedValue {
		return &gnmi.TypedValue{Value: &gnmi.TypedValue_DoubleVal{DoubleVal: v}}
	}
	tests := []struct {
		desc string
		a, b *gnmi.TypedValue
		want bool
	}{
		{"same uint", u(1), u(1), true},
		{"different uint", u(1), u(2), false},
		{"different types", u(1), str("1"), false},
		{"double", f(1.5), f(1.5), true},
		{"leaflist", &gnmi.TypedValue{Value: &gnmi.TypedValue_LeaflistVal{LeaflistVal: &gnmi.ScalarArray{Element: []*gnmi.TypedValue{u(1)}}}},
			&gnmi.TypedValue{Value: &gnmi.TypedValue_LeaflistVal{LeaflistVal: &gnmi.ScalarArray{Element: []*gnmi.TypedValue{u(1)}}}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			if got := EqualValues(tt.a, tt.b); got != tt.want {
				t.Errorf("EqualValues = %v, want %v", got, tt.want)
			}
		})
	}
}

// leafPath is the path of leaf i in a tree shaped like the dataplane's:
// interfaces × queues × counters.
func leafPath(i int) *gnmi.Path {
	return &gnmi.Path{Elem: []*gnmi.PathElem{
		{Name: "interfaces"},
		{Name: "interface", Key: map[string]string{"name": fmt.Sprintf("eth%d", i/80)}},
		{Name: "queues"},
		{Name: "queue", Key: map[string]string{"id": fmt.Sprint(i / 10 % 8)}},
		{Name: "state"},
		{Name: fmt.Sprintf("counter-%d", i%10)},
	}}
}

// BenchmarkMemoryPerLeaf reports the heap held per stored leaf.
func BenchmarkMemoryPerLeaf(b *testing.B) {
	const n = 100_000
	paths := make([]*gnmi.Path, n)
	for i := range paths {
		paths[i] = leafPath(i)
	}
	b.ReportAllocs()
	var perLeaf float64
	for b.Loop() {
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		s := New()
		var batch Batch
		for i, p := range paths {
			batch.Update(p, u(uint64(i)), Counter)
		}
		s.Apply(&batch, 0)
		batch = Batch{}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		perLeaf = float64(m1.HeapAlloc-m0.HeapAlloc) / n
		runtime.KeepAlive(s)
	}
	b.ReportMetric(perLeaf, "bytes/leaf")
}

// BenchmarkApply measures publishing: 1000 counters per batch, half changed.
func BenchmarkApply(b *testing.B) {
	const n = 1000
	s := New()
	paths := make([]*gnmi.Path, n)
	for i := range paths {
		paths[i] = leafPath(i)
	}
	s.Watch(MustPattern(nil, MustPath("/interfaces/interface/queues")), nopWatcher{})
	var batch Batch
	b.ReportAllocs()
	r := 0
	for b.Loop() {
		r++
		batch.Reset()
		for i, p := range paths {
			batch.Update(p, u(uint64(r*(i%2))), Counter)
		}
		s.Apply(&batch, 0)
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "leaves/s")
}

type nopWatcher struct{}

func (nopWatcher) Notify([]Change) {}
