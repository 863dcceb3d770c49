// Package placement decides where a target is collected when collectors
// share targets through leases: which targets this collector holds and
// renews, when it streams one on standby and announces it, when it takes a
// lease over (promoting its standby stream or not), when it hands a target
// over and what each handover counts as (make-before-break,
// break-before-make, takeover).
//
// It is a state machine without I/O: the members, the results of the lease
// calls, the handover announcements and the time come in; what to do comes
// out, and the collector carries it out (SQL through collector/lease's
// Manager, gNMI subscriptions through collector/stream). It starts no
// goroutine, reads no clock and waits for nothing: its caller serialises
// the calls and passes the time. It uses collector/lease's values (Owner,
// Lease, Renewal, Handover), none of its SQL, and collectormetrics' label
// values for its kinds and results, so that what it counts is what the
// collector serves at 0.
package placement

import (
	"maps"
	"slices"
	"time"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/lease"
)

// Kind is the kind of a handover (label kind of the collector's
// handovers_total: collectormetrics' Handover* values).
type Kind string

const (
	// Retired: the target is no longer collected at all (not counted).
	Retired Kind = ""
	// MakeBeforeBreak: the new owner's stream had reached the old owner's
	// before the old one stopped.
	MakeBeforeBreak Kind = collectormetrics.HandoverMakeBeforeBreak
	// BreakBeforeMake: the old owner stopped first.
	BreakBeforeMake Kind = collectormetrics.HandoverBreakBeforeMake
	// Takeover: a lease taken from another collector with no standby
	// stream to promote.
	Takeover Kind = collectormetrics.HandoverTakeover
)

// Ready is a collector's announcement that it streams a target on standby
// (a lease.Handover with Ready), heard at At.
type Ready struct {
	By        string
	Session   uint64 // the announcing collector's stream of the target
	SyncPoint int64
	At        time.Time
}

// Stream is a stream's sync: its session and the newest switch timestamp
// of its initial values (collector/stream's Sync).
type Stream struct {
	Session uint64
	Point   int64
}

// Placement is one collector's part in sharing the targets: the leases it
// holds, the targets it is handing over, and the announcements it heard.
type Placement struct {
	self  string
	ttl   time.Duration // leases.ttl
	renew time.Duration // leases.renew
	held  map[string]int64
	// handing: since when a held target should move to another collector.
	handing map[string]time.Time
	ready   map[string]Ready
	// handoffs: the handovers in progress.
	handoffs map[string]*handoff
}

// handoff is a handover in progress.
type handoff struct {
	kind Kind
	succ Ready
	// releasing: the lease is being released; from then on it is not
	// renewed (a renewal the database ran after the release would take
	// the released lease back until leases.ttl).
	releasing bool
	released  bool // the lease was released: its end forgets it
}

// New returns the placement of collector self, whose leases last ttl and
// are renewed every renew.
func New(self string, ttl, renew time.Duration) *Placement {
	return &Placement{self: self, ttl: ttl, renew: renew, held: map[string]int64{}, handing: map[string]time.Time{},
		ready: map[string]Ready{}, handoffs: map[string]*handoff{}}
}

// Held returns the leases held: target → epoch.
func (p *Placement) Held() map[string]int64 { return maps.Clone(p.held) }

// HeldNames returns the targets whose lease is held, in order.
func (p *Placement) HeldNames() []string { return slices.Sorted(maps.Keys(p.held)) }

// Hear records a handover message heard at now. It returns whether the
// message concerns this collector: a Ready for a target it collects
// (runs), a Released for a target it streams on standby (waits); the loop
// that hands targets over or takes them then wakes. (Waking on every
// message would make collectors waiting on standby wake each other without
// end.) Its own messages are ignored.
func (p *Placement) Hear(h lease.Handover, now time.Time, runs, waits bool) (wake bool) {
	if h.Ready == p.self || h.Released == p.self || h.NotReady == p.self {
		return false
	}
	switch {
	case h.Ready != "":
		// Messages of one collector arrive in the order it sent them:
		// the last one is its newest stream.
		p.ready[h.Target] = Ready{By: h.Ready, Session: h.Session, SyncPoint: h.SyncPoint, At: now}
	case h.NotReady != "":
		if r, ok := p.ready[h.Target]; ok && r.By == h.NotReady {
			delete(p.ready, h.Target)
		}
	}
	return h.Ready != "" && runs || h.Released != "" && waits
}

// ReadyOf returns the announcement held of a collector ready to take
// target over.
func (p *Placement) ReadyOf(target string) (Ready, bool) {
	r, ok := p.ready[target]
	return r, ok
}

// successorReady: owner, the collector rendezvous hashing now names for
// the target, streams it on standby (announced within two renewals and
// not withdrawn), in the stream and from the sync point it returns.
func (p *Placement) successorReady(name, owner string, now time.Time) (Ready, bool) {
	r, ok := p.ready[name]
	if !ok || r.By != owner || now.Sub(r.At) > 2*p.renew {
		return Ready{}, false
	}
	return r, true
}

// stillReady: the announcement r is the newest of its collector's and
// not withdrawn (its standby stream has not dropped meanwhile).
func (p *Placement) stillReady(name string, r Ready) bool {
	cur, ok := p.ready[name]
	// (A standby loop started again counts its sessions from 1 again: the
	// sync point tells its streams from the previous loop's.)
	return ok && cur.By == r.By && cur.Session == r.Session && cur.SyncPoint == r.SyncPoint
}

// Step is what to do about one target in a pass, in the order of the
// fields.
type Step struct {
	// StopStandby: stop the target's standby loop, if any.
	StopStandby bool
	// Acquire: try to take the lease; Acquired says what follows.
	Acquire bool
	// HandOver: a handover of the target begins, of this kind, to the
	// announcement To (none for break-before-make); Owner is the
	// collector rendezvous hashing names.
	HandOver bool
	Kind     Kind
	To       Ready
	Owner    string
	// Renew: renew the lease held at Epoch (Renewing, then Renewed).
	Renew bool
	Epoch int64
	// Collect: collect the target at Epoch, unless the renewal lost the
	// lease.
	Collect bool
}

// Target decides, in a pass over the targets to collect at now with
// these members, whether this collector collects name (it holds or takes
// its lease), streams it on standby, or hands it over. A handover it
// begins is in progress until HandOverDone.
func (p *Placement) Target(name string, members []string, now time.Time) Step {
	epoch, held := p.held[name]
	if _, busy := p.handoffs[name]; busy {
		return Step{Renew: true, Epoch: epoch}
	}
	owner := lease.Owner(members, name)
	switch mine := owner == p.self; {
	case mine && held:
		delete(p.handing, name)
		return Step{Renew: true, Epoch: epoch, Collect: true}
	case mine:
		return Step{Acquire: true}
	case held:
		if succ, ok := p.successorReady(name, owner, now); ok {
			p.handOver(name, MakeBeforeBreak, succ)
			return Step{StopStandby: true, HandOver: true, Kind: MakeBeforeBreak, To: succ, Owner: owner, Renew: true, Epoch: epoch}
		}
		since, ok := p.handing[name]
		if ok && now.Sub(since) > p.ttl {
			// The new owner did not stream within leases.ttl.
			p.handOver(name, BreakBeforeMake, Ready{})
			return Step{StopStandby: true, HandOver: true, Kind: BreakBeforeMake, Owner: owner}
		}
		// Keep collecting until the new owner streams.
		if !ok {
			p.handing[name] = now
		}
		return Step{StopStandby: true, Renew: true, Epoch: epoch, Collect: true}
	}
	return Step{StopStandby: true}
}

// Retire begins the handover of each lease held whose target is not
// collected any more (not in desired), and returns their names.
func (p *Placement) Retire(desired func(name string) bool) []string {
	var out []string
	for _, name := range p.HeldNames() {
		if _, busy := p.handoffs[name]; busy || desired(name) {
			continue
		}
		p.handOver(name, Retired, Ready{})
		out = append(out, name)
	}
	return out
}

// Draining decides, in a pass of the drain at shutdown (this collector
// left the members), what to do about the held target name: hand it over
// make-before-break once its new owner streams it, and renew its lease
// meanwhile.
func (p *Placement) Draining(name string, members []string, now time.Time) Step {
	epoch := p.held[name]
	if _, busy := p.handoffs[name]; busy {
		return Step{Renew: true, Epoch: epoch}
	}
	owner := lease.Owner(members, name)
	if succ, ok := p.successorReady(name, owner, now); ok {
		p.handOver(name, MakeBeforeBreak, succ)
		return Step{HandOver: true, Kind: MakeBeforeBreak, To: succ, Owner: owner, Renew: true, Epoch: epoch}
	}
	return Step{Renew: true, Epoch: epoch}
}

func (p *Placement) handOver(name string, kind Kind, succ Ready) {
	p.handoffs[name] = &handoff{kind: kind, succ: succ}
}

// Standby is the state of a target's standby loop.
type Standby int

const (
	// NoStandby: the target has no standby loop.
	NoStandby Standby = iota
	// StandbyStreaming: a standby loop runs with the target's
	// configuration: it can be promoted.
	StandbyStreaming
	// StandbyUnusable: a standby loop ended, or the target's
	// configuration changed.
	StandbyUnusable
)

// Take is what follows an attempt to take a lease.
type Take int

const (
	// NotTaken: the database did not answer; the next pass tries again.
	NotTaken Take = iota
	// HeldByAnother: stream the target on standby meanwhile, and say
	// when ready (Announce).
	HeldByAnother
	// Promote: promote the standby loop; its promotion counts the
	// handover (Promoted).
	Promote
	// StartAfresh: the standby loop cannot be promoted: stop it, and count
	// a break-before-make taken.
	StartAfresh
	// TakenOver: the lease was taken from another collector with no
	// standby stream: what the switch published between the previous
	// owner's last stored value and this loop's sync is lost; count a
	// takeover taken.
	TakenOver
	// Taken: the lease was free or this collector's already (from before
	// a restart): no handover.
	Taken
)

// Acquired records the result of taking name's lease (lease.Manager's
// Acquire), given the state of its standby loop.
func (p *Placement) Acquired(name string, l lease.Lease, ok bool, err error, sb Standby) Take {
	switch {
	case err != nil:
		return NotTaken
	case !ok:
		return HeldByAnother
	}
	p.held[name] = l.Epoch
	switch {
	case sb == StandbyStreaming:
		return Promote
	case sb == StandbyUnusable:
		return StartAfresh
	case l.From != "":
		return TakenOver
	}
	return Taken
}

// Renewing says whether the lease of name may be renewed now: not once
// its handover releases it.
func (p *Placement) Renewing(name string) bool {
	h := p.handoffs[name]
	return h == nil || !h.releasing
}

// Renewal is what a renewal did.
type Renewal int

const (
	// Renewed: still held, extended.
	Renewed Renewal = iota
	// RenewFailed: the database did not answer: not renewed, but kept
	// (were it to expire meanwhile and move, the writer's fencing refuses
	// this collector's batches; a database blip does not stop every
	// target).
	RenewFailed
	// Reacquired: it had expired (the database was away for longer than
	// leases.ttl) and nobody took it: held again, at the same epoch.
	Reacquired
	// LostHandingOver: gone before its handover released it (expired and
	// taken meanwhile); the handover's end forgets it.
	LostHandingOver
	// Lost: another collector holds it: forgotten.
	Lost
)

// Keep says whether the lease is still this collector's to collect with.
func (r Renewal) Keep() bool { return r == Renewed || r == RenewFailed || r == Reacquired }

// Result is the renewal's label result of lease_renewals_total: one of
// collectormetrics' Lease* values, which LeasesOn serves at 0.
func (r Renewal) Result() string {
	switch r {
	case RenewFailed:
		return collectormetrics.LeaseRenewError
	case Reacquired:
		return collectormetrics.LeaseReacquired
	case LostHandingOver, Lost:
		return collectormetrics.LeaseLost
	}
	return collectormetrics.LeaseRenewed
}

// Renewed records the result of renewing name's lease (lease.Manager's
// Renew). A lease lost while a handover holds it stays until the
// handover's end (HandOverDone): a renewal that finds nothing is then not
// a loss of a target this collector collects.
func (p *Placement) Renewed(name string, res lease.Renewal, err error) Renewal {
	switch {
	case err != nil:
		return RenewFailed
	case res == lease.Reacquired:
		return Reacquired
	case res == lease.Lost:
		if _, busy := p.handoffs[name]; busy {
			return LostHandingOver
		}
		delete(p.held, name)
		delete(p.handing, name)
		return Lost
	}
	return Renewed
}

// Stop is how a handover stops the target's loop.
type Stop struct {
	// Wait: let the loop receive up to SyncPoint, where the new owner's
	// announced stream To starts, first (bounded), then say whether it
	// did (Reached).
	Wait      bool
	SyncPoint int64
	To        Ready
	// DropsHeld: the loop is still a standby whose promotion retries: its
	// held rows were never stored, and stopping it drops them (the
	// handover is break-before-make).
	DropsHeld bool
}

// Stopping says how the handover of name stops its loop: running says
// whether a loop collects it, promoting whether that loop's promotion is
// still under way.
func (p *Placement) Stopping(name string, running, promoting bool) Stop {
	h := p.handoffs[name]
	var s Stop
	if promoting && h.kind == MakeBeforeBreak {
		h.kind, s.DropsHeld = BreakBeforeMake, true
	}
	if running && h.kind == MakeBeforeBreak {
		s.Wait, s.SyncPoint, s.To = true, h.succ.SyncPoint, h.succ
	}
	return s
}

// Reached records whether the loop's stream received up to the new
// owner's sync point (else the handover is break-before-make), and says
// whether the handover goes on: not when the new owner withdrew the
// announced stream or announced a newer one meanwhile. Then nothing is
// stopped, the lease stays held, and the next announcement begins another
// handover (the handover ends: HandOverDone).
func (p *Placement) Reached(name string, reached bool) (goOn bool) {
	h := p.handoffs[name]
	if !reached {
		h.kind = BreakBeforeMake
	}
	return p.stillReady(name, h.succ)
}

// Releasing records that the handover of name releases the lease now: it
// is not renewed from then on.
func (p *Placement) Releasing(name string) { p.handoffs[name].releasing = true }

// Release is what a handover's release of the lease did.
type Release int

const (
	// ReleaseFailed: the database did not answer: still held; the next
	// pass tries again (or the lease expires).
	ReleaseFailed Release = iota
	// ReleaseLost: the lease was not this collector's any more (expired
	// and taken meanwhile): a lost renewal, no handover of this
	// collector's to count.
	ReleaseLost
	// Given: released: the handover is counted as given, of its kind
	// (unless the target is retired).
	Given
)

// Released records the result of the release of name's lease by its
// handover (lease.Manager's Release) and returns it with the handover's
// kind.
func (p *Placement) Released(name string, released bool, err error) (Release, Kind) {
	h := p.handoffs[name]
	switch {
	case err != nil:
		return ReleaseFailed, h.kind
	case !released:
		h.released = true
		return ReleaseLost, h.kind
	}
	h.released = true
	return Given, h.kind
}

// HandOverDone ends the handover of name (its work is over), and forgets
// the lease if it released it.
func (p *Placement) HandOverDone(name string) {
	h := p.handoffs[name]
	if h == nil {
		return
	}
	delete(p.handoffs, name)
	if h.released {
		delete(p.held, name)
		delete(p.handing, name)
	}
}

// Announce is what a standby stream's announcement needs.
type Announce int

const (
	// AnnounceNothing: nothing to say now.
	AnnounceNothing Announce = iota
	// AnnounceWithdraw: the announced stream dropped: withdraw it, so the
	// owner does not stop while this collector has no stream.
	AnnounceWithdraw
	// AnnounceReady: announce the stream (lease.Manager's Ready).
	AnnounceReady
)

// Announce says what to announce of a standby stream at now: s is its
// stream when synced, announced the stream last announced (zero: none)
// and at when. A stream is announced once it has synced, then again once
// per renewal (the owner counts on an announcement for two renewals), not
// on every pass.
func (p *Placement) Announce(s Stream, synced bool, announced Stream, at, now time.Time) Announce {
	switch {
	case !synced && announced == Stream{}:
		return AnnounceNothing
	case !synced:
		return AnnounceWithdraw
	case s == announced && now.Sub(at) < p.renew*9/10:
		return AnnounceNothing
	}
	return AnnounceReady
}

// Promotion is how the promotion of a standby stream ended.
type Promotion int

const (
	// PromotionCut: the loop stopped before its promotion was done, or
	// before a stream synced: its held rows are dropped.
	PromotionCut Promotion = iota
	// PromotionLateSync: the stream synced past the newest value the
	// previous owner stored (the announced stream dropped after the old
	// owner's last look, or none was announced: the lease expired); the
	// values superseded in between are in neither.
	PromotionLateSync
	// PromotionDiscarded: held rows newer than the previous owner's were
	// let go of past writer.queue_rows.
	PromotionDiscarded
	// PromotionWhole: every value is in what the previous owner stored or
	// in this stream.
	PromotionWhole
)

// Kind is the kind of handover taken a promotion counts as.
func (p Promotion) Kind() Kind {
	if p == PromotionWhole {
		return MakeBeforeBreak
	}
	return BreakBeforeMake
}

// Promoted judges a promoted standby loop once its stream synced (synced
// false: the loop stopped first) at s: stored is the newest value the
// previous owner stored, discarded the newest held value let go of.
func Promoted(synced bool, s Stream, stored, discarded int64) Promotion {
	switch {
	case !synced:
		return PromotionCut
	case s.Point > stored:
		return PromotionLateSync
	case discarded > stored:
		return PromotionDiscarded
	}
	return PromotionWhole
}
