// Package lease shares targets between collectors through PostgreSQL: a
// collectors table with heartbeats says who is alive, rendezvous (highest
// random weight) hashing says which live collector should own each target
// (so when one joins or leaves only ~1/N of the targets move), and a lease
// row per target with a fencing epoch says who does own it. The epoch goes
// up on every change of owner; the writer stores it in each ledger row and
// refuses, in the same transaction, a batch whose epoch is no longer the
// lease's. A handover is announced on a NOTIFY channel (HandoverChannel):
// the new owner says when its stream is ready, the old owner when it has
// released the lease, so neither has to wait for its next renewal.
//
// It depends on pgx only; it knows neither gNMI nor the write path.
package lease

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/internal/splitmix"
)

// Owner returns the member that rendezvous hashing gives target: the one
// with the highest score(member, target). "" when there are no members.
func Owner(members []string, target string) string {
	var best string
	var bestScore uint64
	for _, m := range members {
		if s := score(m, target); best == "" || s > bestScore || s == bestScore && m < best {
			best, bestScore = m, s
		}
	}
	return best
}

// score hashes member and target (FNV-1a) and mixes the result
// (splitmix64's finaliser) so that similar names give unrelated weights.
func score(member, target string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(member))
	h.Write([]byte{0})
	h.Write([]byte(target))
	return splitmix.Mix64(h.Sum64())
}

// Manager holds this collector's membership and leases.
type Manager struct {
	pool    *pgxpool.Pool
	id      string
	address string
	ttl     time.Duration
}

// New returns the lease manager of collector id (address is informative:
// where its /metrics is).
func New(pool *pgxpool.Pool, id, address string, ttl time.Duration) *Manager {
	return &Manager{pool: pool, id: id, address: address, ttl: ttl}
}

// ID is the collector's id.
func (m *Manager) ID() string { return m.id }

const (
	// The statements that write leases and collectors call now() nowhere
	// in an ON CONFLICT clause: on Citus (schema 11) both are reference
	// tables, and Citus refuses a function that is not IMMUTABLE there
	// (it evaluates those of VALUES, SET and WHERE of an UPDATE on the
	// coordinator).
	heartbeatSQL = `INSERT INTO collectors (id, address, heartbeat_at) VALUES ($1, $2, now())
ON CONFLICT (id) DO UPDATE SET address = EXCLUDED.address, heartbeat_at = EXCLUDED.heartbeat_at`
	membersSQL = `SELECT id FROM collectors WHERE heartbeat_at > now() - $1 * interval '1 millisecond' ORDER BY id`
	// takeSQL and newSQL run after lockSQL, in its transaction (Acquire's
	// batch): the previous owner read there is the one takeSQL replaces.
	// takeSQL takes a lease row that is ours, expired or released; newSQL
	// makes the row of a target that has none (a collector that made it
	// meanwhile wins: DO NOTHING).
	lockSQL = `SELECT owner FROM leases WHERE target = $1 FOR UPDATE`
	takeSQL = `UPDATE leases SET epoch = CASE WHEN owner = $2 THEN epoch ELSE epoch + 1 END,
  owner = $2, expires_at = now() + $3 * interval '1 millisecond'
WHERE target = $1 AND (owner = $2 OR expires_at < now())
RETURNING epoch`
	newSQL = `INSERT INTO leases (target, owner, epoch, expires_at)
VALUES ($1, $2, 1, now() + $3 * interval '1 millisecond')
ON CONFLICT (target) DO NOTHING
RETURNING epoch`
	// renewSQL extends only a lease still held: a renewal the server runs
	// late (its client gave up waiting; pgx does not cancel the statement)
	// must not take back a lease released or expired meanwhile.
	renewSQL = `UPDATE leases SET expires_at = now() + $4 * interval '1 millisecond'
WHERE target = $1 AND owner = $2 AND epoch = $3 AND expires_at > now()`
	// reacquireSQL takes again a lease that expired with nobody taking it
	// (same owner and epoch), but not one its owner released: released
	// leases expire at -infinity, so that no late statement of the old
	// owner can tell them from a lapse and take them back.
	reacquireSQL = `UPDATE leases SET expires_at = now() + $4 * interval '1 millisecond'
WHERE target = $1 AND owner = $2 AND epoch = $3 AND expires_at > '-infinity'`
	releaseSQL = `WITH r AS (UPDATE leases SET expires_at = '-infinity' WHERE target = $1 AND owner = $2 AND expires_at > '-infinity' RETURNING target)
SELECT pg_notify($3, $4) FROM r`
	leaveSQL  = `DELETE FROM collectors WHERE id = $1`
	notifySQL = `SELECT pg_notify($1, $2)`
)

// On Citus the writers do not fence a target's writes with FOR SHARE on its
// lease row: leases is a reference table, whose row locks Citus takes
// under one lock of its one shard, so every fenced write of every target
// and collector waited for the others, and concurrent writers deadlocked
// on that lock (BenchmarkWriterCitusFencing, docs/scaling.md). They take
// FenceLockSQL instead, a shared advisory lock of the target on the
// coordinator (the transaction's own node: it is held until the
// transaction ends there, after its worker committed), before they read
// the epoch; whatever changes the lease's owner or epoch (Acquire) or
// merges a stale batch takes TakeoverLockSQL, the same lock exclusive,
// first in its transaction: it waits for the writes in flight under the
// old epoch, and the writes after it wait for it and read the new epoch.
// Writers of different targets, and of the same target, do not wait for
// each other. On one node the lease row's lock does this (Acquire's
// advisory lock costs nothing there: no writer takes it).
const (
	FenceLockSQL    = `SELECT pg_advisory_xact_lock_shared(1819042670, hashtext($1))`
	TakeoverLockSQL = `SELECT pg_advisory_xact_lock(1819042670, hashtext($1))`
)

// HandoverChannel is the NOTIFY channel of handovers; its payloads are
// Handover values in JSON.
const HandoverChannel = "lhcnp_handover"

// Handover is a message on HandoverChannel: Ready names the collector
// whose stream of Target has reached its sync_response and waits for the
// lease, Session that stream (the collector's count of its streams of the
// target: a stream that dropped and came back is a new one), SyncPoint the
// newest switch timestamp (ns) of that stream's initial values; NotReady
// the collector whose announced stream has dropped (until it announces
// again); Released the collector that has just released the lease.
type Handover struct {
	Target    string `json:"target"`
	Ready     string `json:"ready,omitempty"`
	Session   uint64 `json:"session,omitempty"`
	SyncPoint int64  `json:"sync_point,omitempty"`
	NotReady  string `json:"not_ready,omitempty"`
	Released  string `json:"released,omitempty"`
}

// ParseHandover decodes a HandoverChannel payload.
func ParseHandover(payload string) (Handover, error) {
	var h Handover
	if err := json.Unmarshal([]byte(payload), &h); err != nil {
		return Handover{}, err
	}
	if h.Target == "" {
		return Handover{}, errors.New("handover without a target")
	}
	return h, nil
}

func (h Handover) payload() string {
	data, _ := json.Marshal(h)
	return string(data)
}

// Ready announces that this collector streams target (its stream
// session) and is ready to take its lease over (make-before-break): the
// owner may stop and release once its own stream has received up to
// syncPoint.
func (m *Manager) Ready(ctx context.Context, target string, session uint64, syncPoint int64) error {
	return m.notify(ctx, Handover{Target: target, Ready: m.id, Session: session, SyncPoint: syncPoint})
}

// NotReady withdraws a Ready: the stream session it announced has dropped.
func (m *Manager) NotReady(ctx context.Context, target string, session uint64) error {
	return m.notify(ctx, Handover{Target: target, NotReady: m.id, Session: session})
}

func (m *Manager) notify(ctx context.Context, h Handover) error {
	_, err := m.pool.Exec(ctx, notifySQL, HandoverChannel, h.payload())
	return err
}

func (m *Manager) ms() int64 { return m.ttl.Milliseconds() }

// Heartbeat records that this collector is alive.
func (m *Manager) Heartbeat(ctx context.Context) error {
	_, err := m.pool.Exec(ctx, heartbeatSQL, m.id, m.address)
	return err
}

// Members returns the collectors whose heartbeat is younger than the TTL.
func (m *Manager) Members(ctx context.Context) ([]string, error) {
	rs, err := m.pool.Query(ctx, membersSQL, m.ms())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rs, pgx.RowTo[string])
}

// Lease is a lease Acquire took.
type Lease struct {
	// Epoch is the lease's fencing token: unchanged when this collector
	// already held it, one more when it changed hands.
	Epoch int64
	// From is the collector it was taken from (its lease had expired, or
	// it had released it); "" when the lease was new or already ours.
	From string
}

// Acquire takes the lease of target when it is free, expired, released or
// already ours. ok is false when another collector holds it.
func (m *Manager) Acquire(ctx context.Context, target string) (l Lease, ok bool, err error) {
	// One round trip: the statements of a batch run in one implicit
	// transaction, so the row lockSQL reads stays locked for acquireSQL.
	b := &pgx.Batch{}
	var prev string
	b.Queue(TakeoverLockSQL, target)
	b.Queue(lockSQL, target).QueryRow(func(row pgx.Row) error {
		if err := row.Scan(&prev); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		return nil
	})
	// A lease held by another collector returns no row: handled here, as
	// an error out of the batch would make pgx drop the prepared
	// statements from the connection (prepared again at the next poll).
	taken := false
	took := func(row pgx.Row) error {
		switch err := row.Scan(&l.Epoch); {
		case errors.Is(err, pgx.ErrNoRows):
			return nil
		case err != nil:
			return err
		}
		taken = true
		return nil
	}
	b.Queue(takeSQL, target, m.id, m.ms()).QueryRow(took)
	b.Queue(newSQL, target, m.id, m.ms()).QueryRow(took)
	if err = m.pool.SendBatch(ctx, b).Close(); err != nil {
		return Lease{}, false, err
	}
	if !taken {
		return Lease{}, false, nil
	}
	if prev != m.id {
		l.From = prev
	}
	return l, true, nil
}

// Renewal is what Renew did.
type Renewal int

const (
	// Lost: another collector holds the lease, or this one released it.
	Lost Renewal = iota
	// Renewed: the lease was still held and is extended.
	Renewed
	// Reacquired: the lease had expired (the database was away longer
	// than the TTL, say) and nobody took it: it is this collector's
	// again, at the same epoch.
	Reacquired
)

func (r Renewal) String() string {
	switch r {
	case Renewed:
		return "renewed"
	case Reacquired:
		return "reacquired"
	}
	return "lost"
}

// Renew extends a lease we hold at epoch. A lease that expired meanwhile
// with nobody taking it is taken again (Reacquired); one that another
// collector took, or that this one released, is Lost.
//
// The client orders its renewals and its release of a lease, but a
// renewal it gave up waiting for may still run on the server after the
// release: renewSQL then finds the lease not held, and reacquireSQL (run
// only once the renewal has answered) never takes a released lease back.
func (m *Manager) Renew(ctx context.Context, target string, epoch int64) (Renewal, error) {
	tag, err := m.pool.Exec(ctx, renewSQL, target, m.id, epoch, m.ms())
	if err != nil {
		return Lost, err
	}
	if tag.RowsAffected() == 1 {
		return Renewed, nil
	}
	tag, err = m.pool.Exec(ctx, reacquireSQL, target, m.id, epoch, m.ms())
	if err != nil {
		return Lost, err
	}
	if tag.RowsAffected() == 1 {
		return Reacquired, nil
	}
	return Lost, nil
}

// Release lets another collector take the lease at once, and says so on
// HandoverChannel. released is false when the lease was not this
// collector's any more (it expired and another took it) or was released
// already: nothing changed. A released lease expires at -infinity.
func (m *Manager) Release(ctx context.Context, target string) (released bool, err error) {
	tag, err := m.pool.Exec(ctx, releaseSQL, target, m.id, HandoverChannel, Handover{Target: target, Released: m.id}.payload())
	return err == nil && tag.RowsAffected() == 1, err
}

// Leave removes this collector from the members.
func (m *Manager) Leave(ctx context.Context) error {
	_, err := m.pool.Exec(ctx, leaveSQL, m.id)
	return err
}
