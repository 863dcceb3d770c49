package writer_test

import (
	"context"
	"testing"

	"github.com/lhcnp/lhcnp/collector/writer"
)

// TestDeadLetterOnceConcurrent: two collectors replay one batch at the
// same instant, and each dead-letters its refused event before the other
// committed (each in a transaction of its own, as the two writers'
// statements run). The dead letters' unique key makes the second wait for
// the first and write nothing: one dead letter, on one node and on Citus
// (where nothing else guards a batch's events).
func TestDeadLetterOnceConcurrent(t *testing.T) {
	for _, db := range bothDBs {
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
			err2, returned := waitsOrReturns(t, pool, db.name == "citus", "INSERT INTO dead_letters", done)
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
