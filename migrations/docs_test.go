package migrations_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

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

// citusPlacements reads docs/scaling.md's table of where each table is on
// Citus: table → "by COLUMN" (distributed; " co-located" when the row says
// it shares samples' shards), "reference" or "coordinator". A row names its
// tables in backquotes before any parenthesis of its first cell.
func citusPlacements(md string) map[string]string {
	_, table, _ := strings.Cut(md, "| table | on Citus | why |")
	table, _, _ = strings.Cut(table, "\n\n")
	quoted := regexp.MustCompile("`([a-z_]+)`")
	out := map[string]string{}
	for _, row := range strings.Split(table, "\n") {
		cells := strings.Split(row, "|")
		if len(cells) < 4 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		names, _, _ := strings.Cut(cells[1], "(")
		where := cells[2]
		var placed string
		switch {
		case strings.Contains(where, "reference tables"):
			placed = "reference"
		case strings.Contains(where, "stay on the coordinator"):
			placed = "coordinator"
		default:
			if m := quoted.FindStringSubmatch(where); m != nil {
				placed = "by " + m[1]
			}
			if strings.Contains(where, "co-located") {
				placed += " co-located"
			}
		}
		for _, m := range quoted.FindAllStringSubmatch(names, -1) {
			out[m[1]] = placed
		}
	}
	return out
}

// TestCitusPlacementAsDocumented: docs/scaling.md's table of where each
// table is on Citus (distributed by which column, co-located with samples,
// a reference table, on the coordinator) is where the migrations put every
// table of the schema on a coordinator with workers, and names every one:
// it left lhcnp_schema_version out.
func TestCitusPlacementAsDocumented(t *testing.T) {
	md, err := os.ReadFile("../docs/scaling.md")
	if err != nil {
		t.Fatal(err)
	}
	want := citusPlacements(string(md))
	if len(want) == 0 {
		t.Fatal("docs/scaling.md: no | table | on Citus | why | table")
	}
	pool, _ := pgtest.NewCitus(t)
	rows, err := pool.Query(context.Background(), `
		SELECT c.relname::text,
		       CASE WHEN p.partmethod = 'h' THEN 'by ' || column_to_column_name(p.logicalrelid, p.partkey) ||
		                 CASE WHEN p.colocationid = (SELECT colocationid FROM pg_dist_partition
		                                             WHERE logicalrelid = 'samples'::regclass)
		                      AND c.relname <> 'samples' THEN ' co-located' ELSE '' END
		            WHEN p.partmethod = 'n' THEN 'reference'
		            WHEN p.logicalrelid IS NULL THEN 'coordinator'
		            ELSE 'partmethod ' || p.partmethod::text END
		FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_dist_partition p ON p.logicalrelid = c.oid
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for rows.Next() {
		var name, placed string
		if err := rows.Scan(&name, &placed); err != nil {
			t.Fatal(err)
		}
		got[name] = placed
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("docs/scaling.md's Citus table and the migrated coordinator differ (-docs +database):\n%s", d)
	}
}
