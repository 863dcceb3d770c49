package placement

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/lease"
)

const ttl, renew = 3 * time.Second, 200 * time.Millisecond

// t0 is the tests' start; a test's clock is t0 plus an offset.
var t0 = time.Unix(1_700_000_000, 0)

// members are the live collectors: "a" is the one under test.
var members = []string{"a", "b"}

// ownedBy returns a target rendezvous hashing gives owner among members.
func ownedBy(owner string) string {
	for i := 0; ; i++ {
		if name := fmt.Sprintf("sw%d", i); lease.Owner(members, name) == owner {
			return name
		}
	}
}

// hold makes p hold the lease of name at epoch (taken when free).
func hold(t *testing.T, p *Placement, name string, epoch int64) {
	t.Helper()
	if got := p.Acquired(name, lease.Lease{Epoch: epoch}, true, nil, NoStandby); got != Taken {
		t.Fatalf("Acquired(%s) = %v, want Taken", name, got)
	}
}

// readyBy is b's announcement of its stream session at syncPoint.
func readyBy(by, target string, session uint64, syncPoint int64) lease.Handover {
	return lease.Handover{Target: target, Ready: by, Session: session, SyncPoint: syncPoint}
}

// TestAcquired: taking a lease — with no standby stream from another
// collector is a takeover; with one streaming, a promotion; with one that
// ended or streams an old configuration, a fresh start; a free lease, or
// one already ours from before a restart, no handover at all.
func TestAcquired(t *testing.T) {
	for _, tt := range []struct {
		desc     string
		l        lease.Lease
		ok       bool
		err      error
		standby  Standby
		want     Take
		wantHeld map[string]int64
	}{
		{"the database did not answer", lease.Lease{}, false, errors.New("timeout"), NoStandby, NotTaken, map[string]int64{}},
		{"held by another", lease.Lease{}, false, nil, StandbyStreaming, HeldByAnother, map[string]int64{}},
		{"free", lease.Lease{Epoch: 1}, true, nil, NoStandby, Taken, map[string]int64{"sw": 1}},
		{"ours from before a restart", lease.Lease{Epoch: 3}, true, nil, NoStandby, Taken, map[string]int64{"sw": 3}},
		{"a dead owner's, no standby: takeover", lease.Lease{Epoch: 4, From: "dead"}, true, nil, NoStandby, TakenOver, map[string]int64{"sw": 4}},
		{"released by another, standby streaming: promotion", lease.Lease{Epoch: 4, From: "b"}, true, nil, StandbyStreaming, Promote, map[string]int64{"sw": 4}},
		{"standby ended or stale: start afresh", lease.Lease{Epoch: 4, From: "b"}, true, nil, StandbyUnusable, StartAfresh, map[string]int64{"sw": 4}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			p := New("a", ttl, renew)
			if got := p.Acquired("sw", tt.l, tt.ok, tt.err, tt.standby); got != tt.want {
				t.Errorf("Acquired = %v, want %v", got, tt.want)
			}
			if d := cmp.Diff(tt.wantHeld, p.Held()); d != "" {
				t.Errorf("held (-want +got):\n%s", d)
			}
		})
	}
}

// TestTarget: what a pass of the reconcile loop does about a target, by
// who rendezvous hashing names, whether this collector holds the lease,
// since when it should hand it over and what the new owner announced.
func TestTarget(t *testing.T) {
	ours, theirs := ownedBy("a"), ownedBy("b")
	announced := readyBy("b", theirs, 1, 42)
	collectOn := Step{StopStandby: true, Renew: true, Epoch: 4, Collect: true}
	mbb := Step{StopStandby: true, HandOver: true, Kind: MakeBeforeBreak,
		To: Ready{By: "b", Session: 1, SyncPoint: 42, At: t0}, Owner: "b", Renew: true, Epoch: 4}
	type pass struct {
		at      time.Duration
		members []string
	}
	for _, tt := range []struct {
		desc   string
		target string
		held   bool             // at epoch 4
		heard  []lease.Handover // at t0
		passes []pass           // before the pass under test
		at     time.Duration    // the pass's time, after t0
		want   Step
		// wantHanding: the pass left a handover in progress.
		wantHanding bool
	}{
		{desc: "ours, not held: take it", target: ours, want: Step{Acquire: true}},
		{desc: "ours, held: renew and collect", target: ours, held: true, want: Step{Renew: true, Epoch: 4, Collect: true}},
		{desc: "another's, not held: no standby of ours", target: theirs, want: Step{StopStandby: true}},
		{desc: "another's, held, nobody announced: collect on", target: theirs, held: true, want: collectOn},
		{desc: "another's, held, nobody announced for leases.ttl: collect on", target: theirs, held: true,
			passes: []pass{{0, members}}, at: ttl, want: collectOn},
		{desc: "another's, held, nobody announced for longer than leases.ttl: break-before-make", target: theirs, held: true,
			passes: []pass{{0, members}}, at: ttl + time.Nanosecond,
			want:        Step{StopStandby: true, HandOver: true, Kind: BreakBeforeMake, Owner: "b"},
			wantHanding: true},
		{desc: "back to ours meanwhile: the wait for the new owner starts again", target: theirs, held: true,
			passes: []pass{{0, members}, {time.Second, []string{"a"}}}, at: ttl + time.Nanosecond, want: collectOn},
		{desc: "the new owner announced: make-before-break", target: theirs, held: true,
			heard: []lease.Handover{announced}, at: 2 * renew, want: mbb, wantHanding: true},
		{desc: "an announcement older than two renewals: collect on", target: theirs, held: true,
			heard: []lease.Handover{announced}, at: 2*renew + time.Nanosecond, want: collectOn},
		{desc: "announced by a collector that is not the owner: collect on", target: theirs, held: true,
			heard: []lease.Handover{readyBy("c", theirs, 1, 42)}, want: collectOn},
		{desc: "announced, then withdrawn: collect on", target: theirs, held: true,
			heard: []lease.Handover{announced, {Target: theirs, NotReady: "b", Session: 1}}, want: collectOn},
		{desc: "another collector's withdrawal leaves the announcement", target: theirs, held: true,
			heard: []lease.Handover{announced, {Target: theirs, NotReady: "c", Session: 1}}, want: mbb, wantHanding: true},
		{desc: "a handover in progress: renew only (it stops the loop)", target: theirs, held: true,
			heard: []lease.Handover{announced}, passes: []pass{{0, members}}, want: Step{Renew: true, Epoch: 4}, wantHanding: true},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			p := New("a", ttl, renew)
			if tt.held {
				hold(t, p, tt.target, 4)
			}
			for _, h := range tt.heard {
				p.Hear(h, t0, true, false)
			}
			for _, ps := range tt.passes {
				p.Target(tt.target, ps.members, t0.Add(ps.at))
			}
			if d := cmp.Diff(tt.want, p.Target(tt.target, members, t0.Add(tt.at))); d != "" {
				t.Errorf("Target (-want +got):\n%s", d)
			}
			if _, got := p.handoffs[tt.target]; got != tt.wantHanding {
				t.Errorf("handover in progress %v, want %v", got, tt.wantHanding)
			}
		})
	}
}

// handover is what a handover's steps gave: how it stops the loop, whether
// it went on after the wait (when it waited), whether a renewal may run
// once it releases the lease, what the release did, and the leases held
// once it ended.
type handover struct {
	Stop     Stop
	GoOn     bool
	Renewing bool
	Release  Release
	Kind     Kind
	Held     map[string]int64
}

// TestHandOver: a handover from its start to its end, as the collector
// drives it: make-before-break when the loop's stream reaches the new
// owner's sync point, break-before-make when it does not or when the loop
// is a standby still being promoted; nothing stopped when the new owner's
// stream is gone meanwhile; a lease lost or not released on the way.
func TestHandOver(t *testing.T) {
	name := ownedBy("b")
	to := Ready{By: "b", Session: 1, SyncPoint: 42, At: t0}
	for _, tt := range []struct {
		desc string
		// start begins the handover.
		start              func(t *testing.T, p *Placement)
		running, promoting bool
		meanwhile          []lease.Handover // heard during the wait
		reached            bool
		released           bool
		releaseErr         error
		want               handover
	}{
		{desc: "given make-before-break", running: true, reached: true, released: true,
			want: handover{Stop: Stop{Wait: true, SyncPoint: 42, To: to}, GoOn: true, Release: Given, Kind: MakeBeforeBreak,
				Held: map[string]int64{}}},
		{desc: "the stream did not reach the sync point: break-before-make", running: true, reached: false, released: true,
			want: handover{Stop: Stop{Wait: true, SyncPoint: 42, To: to}, GoOn: true, Release: Given, Kind: BreakBeforeMake,
				Held: map[string]int64{}}},
		{desc: "a standby still being promoted: break-before-make, no wait", running: true, promoting: true, released: true,
			want: handover{Stop: Stop{DropsHeld: true}, Release: Given, Kind: BreakBeforeMake, Held: map[string]int64{}}},
		{desc: "no loop: nothing to wait for", running: false, released: true,
			want: handover{Release: Given, Kind: MakeBeforeBreak, Held: map[string]int64{}}},
		{desc: "the new owner withdrew its stream meanwhile: nothing stopped, the lease kept", running: true, reached: true,
			meanwhile: []lease.Handover{{Target: name, NotReady: "b", Session: 1}},
			want: handover{Stop: Stop{Wait: true, SyncPoint: 42, To: to}, GoOn: false, Renewing: true,
				Held: map[string]int64{name: 4}}},
		{desc: "the new owner announced a newer stream meanwhile: nothing stopped", running: true, reached: true,
			meanwhile: []lease.Handover{readyBy("b", name, 2, 50)},
			want: handover{Stop: Stop{Wait: true, SyncPoint: 42, To: to}, GoOn: false, Renewing: true,
				Held: map[string]int64{name: 4}}},
		{desc: "the new owner's standby loop started again meanwhile (session 1 again): nothing stopped", running: true, reached: true,
			meanwhile: []lease.Handover{readyBy("b", name, 1, 60)},
			want: handover{Stop: Stop{Wait: true, SyncPoint: 42, To: to}, GoOn: false, Renewing: true,
				Held: map[string]int64{name: 4}}},
		{desc: "the lease expired and was taken before the release: lost, forgotten", running: true, reached: true, released: false,
			want: handover{Stop: Stop{Wait: true, SyncPoint: 42, To: to}, GoOn: true, Release: ReleaseLost, Kind: MakeBeforeBreak,
				Held: map[string]int64{}}},
		{desc: "the release failed: the lease kept", running: true, reached: true, releaseErr: errors.New("timeout"),
			want: handover{Stop: Stop{Wait: true, SyncPoint: 42, To: to}, GoOn: true, Release: ReleaseFailed, Kind: MakeBeforeBreak,
				Held: map[string]int64{name: 4}}},
		{desc: "nobody streamed within leases.ttl: break-before-make",
			start: func(t *testing.T, p *Placement) {
				p.Target(name, members, t0)
				if s := p.Target(name, members, t0.Add(ttl+time.Second)); s.Kind != BreakBeforeMake {
					t.Fatalf("pass after leases.ttl: %+v, want a break-before-make handover", s)
				}
			},
			running: true, released: true,
			want: handover{Release: Given, Kind: BreakBeforeMake, Held: map[string]int64{}}},
		{desc: "a target no longer collected: retired, not counted",
			start: func(t *testing.T, p *Placement) {
				if got := p.Retire(func(string) bool { return false }); fmt.Sprint(got) != "["+name+"]" {
					t.Fatalf("Retire = %v, want [%s]", got, name)
				}
			},
			running: true, released: true,
			want: handover{Release: Given, Kind: Retired, Held: map[string]int64{}}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			p := New("a", ttl, renew)
			hold(t, p, name, 4)
			if tt.start != nil {
				tt.start(t, p)
			} else {
				p.Hear(readyBy("b", name, 1, 42), t0, true, false)
				if s := p.Target(name, members, t0); !s.HandOver {
					t.Fatalf("pass after b's announcement: %+v, want a handover", s)
				}
			}
			var got handover
			got.Stop = p.Stopping(name, tt.running, tt.promoting)
			if got.Stop.Wait {
				for _, h := range tt.meanwhile {
					p.Hear(h, t0, true, false)
				}
				got.GoOn = p.Reached(name, tt.reached)
			}
			if !got.Stop.Wait || got.GoOn {
				p.Releasing(name)
				got.Release, got.Kind = p.Released(name, tt.released, tt.releaseErr)
			}
			got.Renewing = p.Renewing(name)
			p.HandOverDone(name)
			got.Held = p.Held()
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("handover (-want +got):\n%s", d)
			}
			if len(p.handoffs) != 0 {
				t.Errorf("handovers in progress after the end: %v", p.handoffs)
			}
		})
	}
}

// TestRenewed: what a renewal's result does to the lease: kept when
// renewed, taken again or unanswered; forgotten when lost — unless a
// handover holds it (its end forgets it); and no renewal once the
// handover releases it.
func TestRenewed(t *testing.T) {
	name := ownedBy("b")
	for _, tt := range []struct {
		desc         string
		handingOver  bool
		releasing    bool
		res          lease.Renewal
		err          error
		wantRenewing bool
		want         Renewal
		wantResult   string
		wantKeep     bool
		wantHeld     map[string]int64
	}{
		{desc: "renewed", res: lease.Renewed, wantRenewing: true, want: Renewed, wantResult: "renewed", wantKeep: true,
			wantHeld: map[string]int64{name: 4}},
		{desc: "expired, nobody took it: reacquired", res: lease.Reacquired, wantRenewing: true, want: Reacquired,
			wantResult: "reacquired", wantKeep: true, wantHeld: map[string]int64{name: 4}},
		{desc: "the database did not answer: kept", res: lease.Lost, err: errors.New("timeout"), wantRenewing: true,
			want: RenewFailed, wantResult: "error", wantKeep: true, wantHeld: map[string]int64{name: 4}},
		{desc: "the renewal finds the lease gone: forgotten", res: lease.Lost, wantRenewing: true, want: Lost,
			wantResult: "lost", wantHeld: map[string]int64{}},
		{desc: "gone during a handover: kept until the handover ends", handingOver: true, res: lease.Lost, wantRenewing: true,
			want: LostHandingOver, wantResult: "lost", wantHeld: map[string]int64{name: 4}},
		{desc: "renewed during a handover", handingOver: true, res: lease.Renewed, wantRenewing: true, want: Renewed,
			wantResult: "renewed", wantKeep: true, wantHeld: map[string]int64{name: 4}},
		{desc: "the handover releases the lease: no renewal", handingOver: true, releasing: true, wantRenewing: false,
			wantHeld: map[string]int64{name: 4}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			p := New("a", ttl, renew)
			hold(t, p, name, 4)
			p.Target(name, members, t0) // should move to b: handing since t0
			if tt.handingOver {
				p.Hear(readyBy("b", name, 1, 42), t0, true, false)
				p.Target(name, members, t0)
			}
			if tt.releasing {
				p.Stopping(name, false, false)
				p.Releasing(name)
			}
			if got := p.Renewing(name); got != tt.wantRenewing {
				t.Fatalf("Renewing = %v, want %v", got, tt.wantRenewing)
			}
			if tt.wantRenewing {
				got := p.Renewed(name, tt.res, tt.err)
				if got != tt.want || got.Result() != tt.wantResult || got.Keep() != tt.wantKeep {
					t.Errorf("Renewed = %v (result %q, keep %v), want %v (%q, %v)", got, got.Result(), got.Keep(),
						tt.want, tt.wantResult, tt.wantKeep)
				}
			}
			if d := cmp.Diff(tt.wantHeld, p.Held()); d != "" {
				t.Errorf("held (-want +got):\n%s", d)
			}
			if _, handing := p.handing[name]; handing != (len(tt.wantHeld) == 1) {
				t.Errorf("handing %v with the lease held %v", handing, tt.wantHeld)
			}
		})
	}
}

// TestHear: a handover message updates the announcements and wakes the
// collector only when it concerns it; its own messages are ignored.
func TestHear(t *testing.T) {
	for _, tt := range []struct {
		desc         string
		before       []lease.Handover
		h            lease.Handover
		runs, waits  bool
		wantWake     bool
		wantReady    Ready
		wantHasReady bool
	}{
		{desc: "ready for a target it collects: wake", h: readyBy("b", "sw", 1, 42), runs: true, wantWake: true,
			wantReady: Ready{By: "b", Session: 1, SyncPoint: 42, At: t0}, wantHasReady: true},
		{desc: "ready for a target it does not collect: recorded, no wake", h: readyBy("b", "sw", 1, 42),
			wantReady: Ready{By: "b", Session: 1, SyncPoint: 42, At: t0}, wantHasReady: true},
		{desc: "ready for a target it streams on standby: no wake", h: readyBy("b", "sw", 1, 42), waits: true,
			wantReady: Ready{By: "b", Session: 1, SyncPoint: 42, At: t0}, wantHasReady: true},
		{desc: "a newer stream replaces the announcement", before: []lease.Handover{readyBy("b", "sw", 1, 42)},
			h: readyBy("b", "sw", 2, 50), runs: true, wantWake: true,
			wantReady: Ready{By: "b", Session: 2, SyncPoint: 50, At: t0}, wantHasReady: true},
		{desc: "its own ready: ignored", h: readyBy("a", "sw", 1, 42), runs: true},
		{desc: "withdrawn by its collector", before: []lease.Handover{readyBy("b", "sw", 1, 42)},
			h: lease.Handover{Target: "sw", NotReady: "b", Session: 1}, runs: true},
		{desc: "withdrawn by another collector: kept", before: []lease.Handover{readyBy("b", "sw", 1, 42)},
			h: lease.Handover{Target: "sw", NotReady: "c", Session: 1}, runs: true,
			wantReady: Ready{By: "b", Session: 1, SyncPoint: 42, At: t0}, wantHasReady: true},
		{desc: "released for a target it streams on standby: wake", h: lease.Handover{Target: "sw", Released: "b"},
			waits: true, wantWake: true},
		{desc: "released for a target it collects: no wake", h: lease.Handover{Target: "sw", Released: "b"}, runs: true},
		{desc: "its own release: ignored", h: lease.Handover{Target: "sw", Released: "a"}, waits: true},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			p := New("a", ttl, renew)
			for _, h := range tt.before {
				p.Hear(h, t0, false, false)
			}
			if got := p.Hear(tt.h, t0, tt.runs, tt.waits); got != tt.wantWake {
				t.Errorf("Hear = %v, want %v", got, tt.wantWake)
			}
			got, ok := p.ReadyOf("sw")
			if ok != tt.wantHasReady {
				t.Fatalf("ReadyOf ok %v, want %v", ok, tt.wantHasReady)
			}
			if d := cmp.Diff(tt.wantReady, got); d != "" {
				t.Errorf("ReadyOf (-want +got):\n%s", d)
			}
		})
	}
}

// TestDraining: at shutdown a held target goes make-before-break once its
// new owner announced it, its lease renewed meanwhile.
func TestDraining(t *testing.T) {
	name := ownedBy("b")
	left := []string{"b"} // a left the members
	for _, tt := range []struct {
		desc   string
		before func(p *Placement)
		want   Step
	}{
		{desc: "nobody announced: renew", want: Step{Renew: true, Epoch: 4}},
		{desc: "the new owner announced: make-before-break",
			before: func(p *Placement) { p.Hear(readyBy("b", name, 1, 42), t0, true, false) },
			want: Step{HandOver: true, Kind: MakeBeforeBreak, To: Ready{By: "b", Session: 1, SyncPoint: 42, At: t0},
				Owner: "b", Renew: true, Epoch: 4}},
		{desc: "a handover in progress: renew",
			before: func(p *Placement) {
				p.Hear(readyBy("b", name, 1, 42), t0, true, false)
				p.Draining(name, left, t0)
			},
			want: Step{Renew: true, Epoch: 4}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			p := New("a", ttl, renew)
			hold(t, p, name, 4)
			if tt.before != nil {
				tt.before(p)
			}
			if d := cmp.Diff(tt.want, p.Draining(name, left, t0)); d != "" {
				t.Errorf("Draining (-want +got):\n%s", d)
			}
		})
	}
}

// TestAnnounce: a standby stream is announced once it synced, then once
// per renewal; a stream that dropped is withdrawn if it was announced.
func TestAnnounce(t *testing.T) {
	s1, s2 := Stream{Session: 1, Point: 42}, Stream{Session: 2, Point: 50}
	for _, tt := range []struct {
		desc      string
		s         Stream
		synced    bool
		announced Stream
		since     time.Duration // since the last announcement
		want      Announce
	}{
		{desc: "not synced, nothing announced", want: AnnounceNothing},
		{desc: "not synced, announced: withdraw", announced: s1, want: AnnounceWithdraw},
		{desc: "synced, not announced", s: s1, synced: true, want: AnnounceReady},
		{desc: "announced just now", s: s1, synced: true, announced: s1, since: renew*9/10 - time.Nanosecond, want: AnnounceNothing},
		{desc: "announced a renewal ago: again", s: s1, synced: true, announced: s1, since: renew * 9 / 10, want: AnnounceReady},
		{desc: "a new stream: at once", s: s2, synced: true, announced: s1, want: AnnounceReady},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			p := New("a", ttl, renew)
			if got := p.Announce(tt.s, tt.synced, tt.announced, t0, t0.Add(tt.since)); got != tt.want {
				t.Errorf("Announce = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPromoted: a promotion is make-before-break when its stream synced at
// or before the newest value the previous owner stored and nothing newer
// was let go of.
func TestPromoted(t *testing.T) {
	for _, tt := range []struct {
		desc              string
		synced            bool
		s                 Stream
		stored, discarded int64
		want              Promotion
		wantKind          Kind
	}{
		{"stopped before a stream synced", false, Stream{}, 100, 0, PromotionCut, BreakBeforeMake},
		{"synced at what was stored", true, Stream{Session: 1, Point: 100}, 100, 0, PromotionWhole, MakeBeforeBreak},
		{"synced before, older rows let go of", true, Stream{Session: 1, Point: 90}, 100, 100, PromotionWhole, MakeBeforeBreak},
		{"synced past what was stored", true, Stream{Session: 2, Point: 101}, 100, 0, PromotionLateSync, BreakBeforeMake},
		{"newer rows let go of", true, Stream{Session: 1, Point: 90}, 100, 101, PromotionDiscarded, BreakBeforeMake},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			got := Promoted(tt.synced, tt.s, tt.stored, tt.discarded)
			if got != tt.want || got.Kind() != tt.wantKind {
				t.Errorf("Promoted = %v (%q), want %v (%q)", got, got.Kind(), tt.want, tt.wantKind)
			}
		})
	}
}

// TestLabelsServed: every renewal's Result and every counted handover Kind
// is a label value the collector serves at 0 (collectormetrics' LeasesOn):
// a value of its own would be a series that first appears at 1, which
// increase() misses, and an alert on the served one would never fire.
func TestLabelsServed(t *testing.T) {
	m := collectormetrics.New()
	m.LeasesOn()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{} // metric/label=value
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				served[mf.GetName()+"/"+l.GetName()+"="+l.GetValue()] = true
			}
		}
	}
	for r := Renewed; r <= Lost; r++ {
		if k := collectormetrics.Prefix + "lease_renewals_total/result=" + r.Result(); !served[k] {
			t.Errorf("renewal %d: Result %q is not served (%s)", r, r.Result(), k)
		}
	}
	for _, kind := range []Kind{MakeBeforeBreak, BreakBeforeMake, Takeover} {
		if k := collectormetrics.Prefix + "handovers_total/kind=" + string(kind); !served[k] {
			t.Errorf("kind %q is not served (%s)", kind, k)
		}
	}
}
