package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/migrations"
)

// TestEventIdentity: migration 9 removes the copies of an event stored
// more than once before it (the copy of the earliest batch stays), and
// then the database refuses a second row of an event's identity (target,
// kind, ts, interface, queue), an event of no queue included.
func TestEventIdentity(t *testing.T) {
	ctx := context.Background()
	conn := connect(t, emptyDB(t))
	if err := migrations.To(ctx, conn, 8); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const insert = `INSERT INTO events (ts, target, kind, interface, queue, action, batch_id) VALUES ($1, $2, 'cnp', $3, $4, $5, $6)`
	for _, e := range []struct {
		at     time.Duration
		target string
		iface  any
		queue  any
		action string
		batch  int64
	}{
		{0, "sw1", "wan", 0, "PAUSE", 7}, // stored three times (restarts)
		{0, "sw1", "wan", 0, "PAUSE", 5},
		{0, "sw1", "wan", 0, "PAUSE", 9},
		{0, "sw1", "wan", 1, "PAUSE", 9},                 // another queue
		{0, "sw2", "wan", 0, "PAUSE", 9},                 // another switch
		{time.Millisecond, "sw1", "wan", 0, "RESUME", 9}, // the next CNP
		{0, "sw1", nil, nil, "flow", 3},                  // no queue, twice
		{0, "sw1", nil, nil, "flow", 4},
	} {
		if _, err := conn.Exec(ctx, insert, t0.Add(e.at), e.target, e.iface, e.queue, e.action, e.batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := migrations.Up(ctx, conn); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"sw1 - - flow 3 0", "sw1 wan 0 PAUSE 5 0", "sw1 wan 0 RESUME 9 1", "sw1 wan 1 PAUSE 9 0", "sw2 wan 0 PAUSE 9 0",
	}
	got := column(t, conn, `SELECT concat_ws(' ', target, coalesce(interface, '-'), coalesce(queue::text, '-'), action, batch_id,
		(extract(epoch FROM ts - '2026-03-01 12:00:00+00') * 1000)::int) FROM events ORDER BY 1`)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("events after migration 9 (-want +got):\n%s", d)
	}
	tag, err := conn.Exec(ctx, `INSERT INTO events (ts, target, kind, interface, queue, action, batch_id)
		VALUES ($1, 'sw1', 'cnp', 'wan', 0, 'PAUSE', 11), ($1, 'sw1', 'cnp', NULL, NULL, 'flow', 11), ($1, 'sw3', 'cnp', 'wan', 0, 'PAUSE', 11)
		ON CONFLICT DO NOTHING`, t0)
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() != 1 {
		t.Errorf("%d of 3 inserted, want 1 (two are stored already)", tag.RowsAffected())
	}
	if _, err := conn.Exec(ctx, `INSERT INTO events (ts, target, kind, interface, queue) VALUES ($1, 'sw1', 'cnp', 'wan', 0)`, t0); err == nil {
		t.Error("a second row of a stored event was accepted")
	}
}
