package writer_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/collector/writer"
	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// TestDeadLetterOnceConcurrent: two collectors replay one batch at the
// same instant, and each dead-letters its refused event before the other
// committed (each in a transaction of its own, as the two writers'
// statements run). The dead letters' unique key makes the second wait for
// the first and write nothing: one dead letter, on one node and on Citus
// (where nothing else guards a batch's events).
func TestDeadLetterOnceConcurrent(t *testing.T) {
	for _, db := range []struct {
		name  string
		new   func(testing.TB) (*pgxpool.Pool, string)
		waits string // counts the backends waiting for a lock in an insert into dead_letters
	}{
		{"postgresql", pgtest.New, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO dead_letters%'`},
		{"citus", pgtest.NewCitus, `SELECT count(*) FROM citus_lock_waits
			WHERE blocked_statement LIKE '%INSERT INTO%dead_letters%'`},
	} {
		t.Run(db.name, func(t *testing.T) {
			ctx := context.Background()
			pool, _ := db.new(t)
			row := `{"table": "events", "row": {"kind": "cnp", "details": "{bad json"}}`
			first, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer first.Rollback(ctx)
			if _, err := first.Exec(ctx, writer.DeadLetterSQL, "sw1", int64(7), row, "first"); err != nil {
				t.Fatal(err)
			}
			second, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer second.Rollback(ctx)
			done := make(chan error, 1)
			go func() {
				_, err := second.Exec(ctx, writer.DeadLetterSQL, "sw1", int64(7), row, "second")
				done <- err
			}()
			// The second statement either returned (nothing made it wait)
			// or waits for the first's transaction.
			var err2 error
			returned := false
			deadline := time.Now().Add(30 * time.Second)
			for !returned && count(t, pool, db.waits) == 0 {
				select {
				case err2 = <-done:
					returned = true
				default:
				}
				if time.Now().After(deadline) {
					t.Fatal("the second insert neither returned nor waits for a lock")
				}
				time.Sleep(10 * time.Millisecond) // polling with a deadline
			}
			if err := first.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if !returned {
				err2 = <-done
			}
			if err2 != nil {
				t.Fatal(err2)
			}
			if err := second.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if n := count(t, pool, `SELECT count(*) FROM dead_letters WHERE target = 'sw1' AND batch_id = 7`); n != 1 {
				t.Errorf("%d dead letters of the batch's refused event, want 1", n)
			}
		})
	}
}
