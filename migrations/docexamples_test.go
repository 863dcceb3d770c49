package migrations_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgtype"
)

// docExample is one statement of a Markdown SQL block and the comment
// lines before it.
type docExample struct {
	comment, sql string
}

// sqlExamples returns the statements of every ```sql block of md: each
// ends with ";" at the end of a line, and its "-- " lines before it are its
// comment.
func sqlExamples(md string) ([]docExample, error) {
	var out []docExample
	for rest := md; ; {
		_, block, ok := strings.Cut(rest, "```sql\n")
		if !ok {
			return out, nil
		}
		block, rest, _ = strings.Cut(block, "```")
		var cur docExample
		for _, l := range strings.Split(block, "\n") {
			switch t := strings.TrimSpace(l); {
			case t == "":
			case strings.HasPrefix(t, "--") && cur.sql == "":
				cur.comment += strings.TrimSpace(strings.TrimPrefix(t, "--")) + " "
			default:
				cur.sql += l + "\n"
				if strings.HasSuffix(t, ";") {
					out = append(out, cur)
					cur = docExample{}
				}
			}
		}
		if cur.sql != "" {
			return nil, fmt.Errorf("statement without its ';': %s", cur.sql)
		}
	}
}

// TestCollectorDocExamples: every statement of docs/collector.md's SQL
// blocks (the examples an NMS or an operator would run, a target added to
// the table) runs on the schema (each in a transaction rolled back), and the one that lists "the alpha every queue
// runs with now" lists every queue, one at the YANG default too. A queue
// no one set publishes no config leaf, so the example read from
// current_config before listed only the queues set (16 of a lab's 80).
func TestCollectorDocExamples(t *testing.T) {
	b, err := os.ReadFile("../docs/collector.md")
	if err != nil {
		t.Fatal(err)
	}
	examples, err := sqlExamples(string(b))
	if err != nil {
		t.Fatal(err)
	}

	f := newFixture(t)
	q := func(leaf string, queue int) int64 { return f.series("sw1", queueState+leaf, "n1-n2", queue) }
	// Queue 0: alpha set to 0.25 (config and state); queue 1 runs the
	// default, 1, and reports only the state leaf, as a switch does.
	f.add(f.series("sw1", queueConf+"alpha", "n1-n2", 0), 0, num("0.25"), flagSync)
	f.add(q("alpha", 0), 0, num("0.25"), flagSync)
	f.add(q("alpha", 1), 0, num("1"), flagSync)
	for queue := range 2 {
		f.add(q("queue-depth", queue), 0, 100, 0)
		f.add(q("effective-kmax", queue), 0, 50, 0)
	}
	f.commit()

	ctx := context.Background()
	var alphas []string
	for _, ex := range examples {
		tx, err := f.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, ex.sql)
		if err != nil {
			t.Fatalf("%s%s: %v", ex.comment, ex.sql, err)
		}
		var got []string
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatalf("%s: %v", ex.sql, err)
			}
			var cols []string
			for _, v := range vals {
				if n, ok := v.(pgtype.Numeric); ok {
					fl, err := n.Float64Value()
					if err != nil {
						t.Fatal(err)
					}
					v = fl.Float64
				}
				cols = append(cols, fmt.Sprint(v))
			}
			got = append(got, strings.Join(cols, " "))
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s%s: %v", ex.comment, ex.sql, err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(ex.comment, "The alpha every queue runs with now") {
			alphas = got
		}
	}
	if len(examples) < 6 {
		t.Errorf("%d statements in the SQL blocks, want the six or more the page shows", len(examples))
	}
	want := []string{"sw1 n1-n2 0 0.25", "sw1 n1-n2 1 1"}
	if diff := cmp.Diff(want, alphas); diff != "" {
		t.Errorf("the alpha every queue runs with now (-want +got):\n%s", diff)
	}
}
