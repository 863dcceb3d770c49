package lhcnp

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

var addrCmp = cmp.Comparer(func(a, b netip.Addr) bool { return a == b })

func keys(s State) []FlowKey {
	var out []FlowKey
	for _, f := range s.FlowTable.Flows {
		out = append(out, f.Key)
	}
	return out
}

func key(src, dst netip.Addr, sq, dq uint32) FlowKey {
	return FlowKey{Src: src, Dst: dst, SrcQP: sq, DstQP: dq}
}

// TestFlowTableData checks learning from data packets (§5.2): one entry
// per four-tuple, refreshed by every packet, replaced by policy when the
// table is full (white paper §2.2.3), aged out when idle.
func TestFlowTableData(t *testing.T) {
	fA := key(addrSrc4, addrDst4, 100, 200)
	fB := key(addrSrc4, addrDst4, 101, 201)
	fC := key(addrSrc4, addrDst4, 102, 202)
	for _, tt := range []struct {
		desc      string
		edit      func(c *FlowTableConfig)
		want      []FlowKey // most recent first
		wantCount FlowTableCounters
		wantKinds []EventKind
	}{
		{desc: "lru replaces the least active", edit: func(c *FlowTableConfig) { c.MaxEntries = 2 },
			want:      []FlowKey{fA, fC},
			wantCount: FlowTableCounters{Learned: 3, Evicted: 1},
			wantKinds: []EventKind{EventFlowLearned, EventFlowLearned, EventFlowEvicted, EventFlowLearned}},
		// C replaces A, the oldest; A's next packet then replaces B: the
		// reason LRU is the default.
		{desc: "oldest replaces the first learned", edit: func(c *FlowTableConfig) { c.MaxEntries, c.Replacement = 2, ReplaceOldest },
			want:      []FlowKey{fA, fC},
			wantCount: FlowTableCounters{Learned: 4, Evicted: 2},
			wantKinds: []EventKind{EventFlowLearned, EventFlowLearned, EventFlowEvicted, EventFlowLearned, EventFlowEvicted, EventFlowLearned}},
		{desc: "no replace keeps the table", edit: func(c *FlowTableConfig) { c.MaxEntries, c.Replacement = 2, NoReplace },
			want:      []FlowKey{fA, fB},
			wantCount: FlowTableCounters{Learned: 2, LearnFailures: 10}, // C's 10 packets
			wantKinds: []EventKind{EventFlowLearned, EventFlowLearned}},
		{desc: "idle entries age out", edit: func(c *FlowTableConfig) { c.IdleTimeout = 200 * engine.Microsecond },
			want:      []FlowKey{fA},
			wantCount: FlowTableCounters{Learned: 3, Aged: 2},
			wantKinds: []EventKind{EventFlowLearned, EventFlowLearned, EventFlowAged, EventFlowLearned, EventFlowAged}},
		{desc: "no learning from data", edit: func(c *FlowTableConfig) { c.LearnFromData = false },
			wantCount: FlowTableCounters{}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := testConfig(1<<30, engine.Millisecond)
			tt.edit(&cfg.FlowTable)
			// A: endless from 0. B: 40 KB from 0 (done by ~40 µs). C: from 500 µs.
			// Without CM: this is learning from data alone, and the times
			// are those of the data (TestFlowTableCM has the CM exchange).
			l := newLine(t, lineOpts{cfg1: &cfg, noRP: true, noCM: true})
			if _, err := l.net.AddFlow(netsim.FlowConfig{Src: l.src, Dst: l.dst, SrcQPN: 101, DstQPN: 201, Bytes: 40_000, NoCM: true}); err != nil {
				t.Fatal(err)
			}
			if _, err := l.net.AddFlow(netsim.FlowConfig{Src: l.src, Dst: l.dst, SrcQPN: 102, DstQPN: 202, Bytes: 40_000,
				Start: 500 * engine.Microsecond, NoCM: true}); err != nil {
				t.Fatal(err)
			}
			l.sim.Run(900 * engine.Microsecond)
			s := l.node1.State(true)
			if diff := cmp.Diff(tt.want, keys(s), addrCmp); diff != "" {
				t.Errorf("entries (-want, +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCount, s.FlowTable.Counters); diff != "" {
				t.Errorf("counters (-want, +got):\n%s", diff)
			}
			var kinds []EventKind
			for _, e := range l.events1 {
				kinds = append(kinds, e.Kind)
			}
			if diff := cmp.Diff(tt.wantKinds, kinds); diff != "" {
				t.Errorf("events (-want, +got):\n%s", diff)
			}
			if len(tt.want) > 0 {
				f := s.FlowTable.Flows[0]
				if f.Packets == 0 || f.LastSeen <= f.FirstSeen || f.EgressPort != "n1:1" {
					t.Errorf("entry not refreshed: %+v", f)
				}
			}
		})
	}
}

// TestShrinkIsNotReplacement: lowering MaxEntries below the entries held
// drops the least active ones (a flow-evicted event each), which is not
// the replacement policy at work: the Evicted counter (YANG replaced,
// "entries evicted by the replacement policy") does not count them.
func TestShrinkIsNotReplacement(t *testing.T) {
	cfg := testConfig(1<<30, engine.Millisecond)
	l := newLine(t, lineOpts{cfg1: &cfg, noRP: true, noCM: true})
	if _, err := l.net.AddFlow(netsim.FlowConfig{Src: l.src, Dst: l.dst, SrcQPN: 101, DstQPN: 201, NoCM: true}); err != nil {
		t.Fatal(err)
	}
	l.sim.Run(100 * engine.Microsecond)
	if n := l.node1.State(false).FlowTable.Entries; n != 2 {
		t.Fatalf("%d entries, want the two flows", n)
	}
	cfg.FlowTable.MaxEntries = 1
	if err := l.node1.ApplyConfig(cfg); err != nil {
		t.Fatal(err)
	}
	s := l.node1.State(false)
	if s.FlowTable.Entries != 1 || s.FlowTable.Counters.Evicted != 0 {
		t.Errorf("after the shrink to one entry: %d entries, replaced %d, want 1 and 0", s.FlowTable.Entries, s.FlowTable.Counters.Evicted)
	}
	if n := len(eventsOf(l.events1, EventFlowEvicted)); n != 1 {
		t.Errorf("%d flow-evicted events, want the one entry shrunk away", n)
	}
}

// cmFrame encodes a CM MAD from src to dst.
func cmFrame(t *testing.T, src, dst netip.Addr, m wire.CMMessage) []byte {
	t.Helper()
	var buf [512]byte
	m.Method = wire.MethodSend
	n, err := (&wire.Encoder{}).CM(buf[:], &wire.Addressing{SrcIP: src, DstIP: dst}, 0, &m)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

// TestFlowTableCM checks learning from CM exchanges (white paper §2.2.1):
// nothing before the RTU, both directions after it, refresh by data, a
// REJ dropping the exchange, and removal of both directions on a DREQ
// (§2.2.3).
func TestFlowTableCM(t *testing.T) {
	a, b := addrSrc4, addrDst4
	req := wire.CMMessage{AttrID: wire.CMAttrREQ, LocalCommID: 7, LocalQPN: 100}
	rep := wire.CMMessage{AttrID: wire.CMAttrREP, LocalCommID: 9, RemoteCommID: 7, LocalQPN: 200}
	rtu := wire.CMMessage{AttrID: wire.CMAttrRTU, LocalCommID: 7, RemoteCommID: 9}
	rej := wire.CMMessage{AttrID: wire.CMAttrREJ, LocalCommID: 9, RemoteCommID: 7}
	dreq := wire.CMMessage{AttrID: wire.CMAttrDREQ, LocalCommID: 7, RemoteCommID: 9, RemoteQPN: 200}
	fwd, rev := key(a, b, 100, 200), key(b, a, 200, 100)

	type step struct {
		from, to netip.Addr
		m        wire.CMMessage
	}
	for _, tt := range []struct {
		desc      string
		steps     []step
		want      []FlowKey
		wantCount FlowTableCounters
	}{
		{desc: "req rep rtu", steps: []step{{a, b, req}, {b, a, rep}, {a, b, rtu}},
			want: []FlowKey{rev, fwd}, wantCount: FlowTableCounters{Learned: 2, LearnedCM: 2}},
		{desc: "no rtu, no entry", steps: []step{{a, b, req}, {b, a, rep}}},
		{desc: "rej", steps: []step{{a, b, req}, {b, a, rej}, {b, a, rep}, {a, b, rtu}}},
		{desc: "dreq removes both directions", steps: []step{{a, b, req}, {b, a, rep}, {a, b, rtu}, {a, b, dreq}},
			wantCount: FlowTableCounters{Learned: 2, LearnedCM: 2, RemovedByCM: 2}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := testConfig(1<<30, engine.Millisecond)
			cfg.FlowTable.LearnFromData = false
			l := newLine(t, lineOpts{cfg1: &cfg, noRP: true, flowBytes: 1})
			for _, s := range tt.steps {
				if err := l.node1.ObserveCM(cmFrame(t, s.from, s.to, s.m)); err != nil {
					t.Fatal(err)
				}
			}
			s := l.node1.State(true)
			if diff := cmp.Diff(tt.want, keys(s), addrCmp); diff != "" {
				t.Errorf("entries (-want, +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCount, s.FlowTable.Counters); diff != "" {
				t.Errorf("counters (-want, +got):\n%s", diff)
			}
		})
	}

	t.Run("data refreshes a cm entry", func(t *testing.T) {
		cfg := testConfig(1<<30, engine.Millisecond)
		cfg.FlowTable.LearnFromData = false
		l := newLine(t, lineOpts{cfg1: &cfg, noRP: true, flowBytes: 100_000, noCM: true})
		for _, s := range []step{{a, b, req}, {b, a, rep}, {a, b, rtu}} {
			if err := l.node1.ObserveCM(cmFrame(t, s.from, s.to, s.m)); err != nil {
				t.Fatal(err)
			}
		}
		l.sim.Run(200 * engine.Microsecond)
		f, ok := l.node1.Flow(fwd)
		if !ok || f.Learned != LearnedFromCM || f.Packets == 0 || f.EgressPort != "n1:1" {
			t.Errorf("forward entry %+v, %v: want it learned from cm and refreshed by data", f, ok)
		}
		if c := l.node1.State(false).FlowTable.Counters; c.Learned != 2 {
			t.Errorf("learned %d, want 2 (data must not learn a second entry)", c.Learned)
		}
	})

	// The hosts' own exchange, seen at n1's egress ports: learned in both
	// directions at the RTU, refreshed by data, removed at the DREQ after
	// the last ACK.
	t.Run("from the hosts' cm exchange", func(t *testing.T) {
		cfg := testConfig(1<<30, engine.Millisecond)
		cfg.FlowTable.LearnFromData = false
		l := newLine(t, lineOpts{cfg1: &cfg, noRP: true, flowBytes: 100_000})
		waitActive(t, l)
		l.sim.Run(l.sim.Now() + 20*engine.Microsecond)
		f, ok := l.node1.Flow(fwd)
		if !ok || f.Learned != LearnedFromCM || f.Packets == 0 {
			t.Errorf("forward entry %+v, %v: want it learned from the hosts' cm and refreshed by data", f, ok)
		}
		if _, ok := l.node1.Flow(rev); !ok {
			t.Error("no reverse entry")
		}
		l.sim.Run(l.sim.Now() + 2*engine.Millisecond)
		if done, _ := l.flow.Sender.Done(); !done {
			t.Fatal("flow not done")
		}
		s := l.node1.State(true)
		if len(s.FlowTable.Flows) != 0 || s.FlowTable.Counters.LearnedCM != 2 || s.FlowTable.Counters.RemovedByCM != 2 {
			t.Errorf("after the DREQ: entries %v, counters %+v", keys(s), s.FlowTable.Counters)
		}
		// REQ, REP, RTU, DREQ, DREP each crossed n1 once.
		if c := s.Counters; c.CMFrames != 5 || c.CMErrors != 0 {
			t.Errorf("cm frames %d, errors %d, want 5 and 0", c.CMFrames, c.CMErrors)
		}
	})

	t.Run("not a cm frame", func(t *testing.T) {
		cfg := testConfig(1<<30, engine.Millisecond)
		l := newLine(t, lineOpts{cfg1: &cfg, noRP: true})
		if err := l.node1.ObserveCM([]byte{1, 2, 3}); err == nil {
			t.Error("no error for a truncated frame")
		}
		if c := l.node1.State(false).Counters; c.CMErrors != 1 {
			t.Errorf("cm errors %d", c.CMErrors)
		}
	})
}

// TestFlowTableIDCache checks the cache by node and QP numbers: an entry
// sits in one slot at most, and leaves it when it leaves the table, so a
// recycled entry is never found under its old flow's numbers.
func TestFlowTableIDCache(t *testing.T) {
	ft := newFlowTable()
	e1, _ := ft.insert(key(addrSrc4, addrDst4, 100, 200), 0, 10, ReplaceLeastActive)
	ik1 := idKey{src: 1, dst: 2, srcQP: 100, dstQP: 200}
	ik2 := idKey{src: 3, dst: 2, srcQP: 100, dstQP: 200}
	s1, s2 := ik1.slot(), ik2.slot()
	if s1 == s2 {
		t.Fatalf("slots %d and %d: pick keys in two slots", s1, s2)
	}
	ft.cacheIDs(s1, ik1, e1)
	ft.cacheIDs(s2, ik2, e1)
	if ft.ids[s1].e != nil || ft.ids[s2].e != e1 || e1.idSlot != int32(s2+1) {
		t.Fatalf("after moving: slot %d holds %p, slot %d %p, idSlot %d", s1, ft.ids[s1].e, s2, ft.ids[s2].e, e1.idSlot)
	}
	ft.unlink(e1)
	ft.release(e1)
	if ft.ids[s2].e != nil {
		t.Fatalf("slot %d still holds the unlinked entry", s2)
	}
	e2, _ := ft.insert(key(addrSrc4, addrDst4, 101, 201), 0, 10, ReplaceLeastActive)
	if e2 != e1 {
		t.Fatalf("the free entry was not reused")
	}
	if e2.idSlot != 0 || ft.ids[s1].e != nil || ft.ids[s2].e != nil {
		t.Fatalf("the reused entry is cached: idSlot %d", e2.idSlot)
	}
}
