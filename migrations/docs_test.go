package migrations_test

import (
	"context"
	"os"
	"regexp"
	"testing"

	"github.com/lhcnp/lhcnp/internal/pgtest"
)

var sqlBlock = regexp.MustCompile("(?s)```sql\n(.*?)```")

// TestDocQueries runs every SQL example of docs/collector.md against the
// schema, so the documentation cannot drift from it.
func TestDocQueries(t *testing.T) {
	doc, err := os.ReadFile("../docs/collector.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := sqlBlock.FindAllSubmatch(doc, -1)
	if len(blocks) == 0 {
		t.Fatal("no ```sql block in docs/collector.md")
	}
	pool, _ := pgtest.New(t)
	ctx := context.Background()
	for _, b := range blocks {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Simple protocol: several statements in one Exec.
		if _, err := tx.Exec(ctx, string(b[1])); err != nil {
			t.Errorf("docs/collector.md example:\n%s\n%v", b[1], err)
		}
		tx.Rollback(ctx)
	}
}
