package writer_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/collector/writer"
	"github.com/lhcnp/lhcnp/internal/pgserver"
	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// psqlBlock is the indented ```psql block of docs/collector.md "The
// refused file": the replay script.
var psqlBlock = regexp.MustCompile("(?s)\n( *)```psql\n(.*?)\n *```")

// TestRefusedFileReplay runs docs/collector.md's replay of the refused file
// as written, with psql, on a file the writer wrote while a constraint
// refused every dead letter of a batch (one of its lines written twice, as
// a crash between a line and its batch's commit leaves it), moved away as
// the docs say, once the constraint is gone: each refused row becomes one
// dead letter.
func TestRefusedFileReplay(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/collector.md")
	if err != nil {
		t.Fatal(err)
	}
	// The section's own block: the page has others before it (Roles).
	at := bytes.Index(doc, []byte("\n### The refused file\n"))
	if at < 0 {
		t.Fatal(`docs/collector.md: no "### The refused file" section`)
	}
	m := psqlBlock.FindSubmatch(doc[at:])
	if m == nil {
		t.Fatal("docs/collector.md: no ```psql block in The refused file (its replay)")
	}
	script := regexp.MustCompile("(?m)^"+string(m[1])).ReplaceAllString(string(m[2]), "")
	if !strings.Contains(script, "dead_letters.jsonl.1") {
		t.Fatalf("docs/collector.md's replay script does not read dead_letters.jsonl.1, the file its mv makes:\n%s", script)
	}
	bin, err := pgserver.FindBinaries()
	if err != nil {
		t.Skip(err)
	}
	ctx := context.Background()
	pool, dsn := pgtest.New(t)
	b := badBatch()
	if _, err := pool.Exec(ctx, fmt.Sprintf(`ALTER TABLE dead_letters ADD CONSTRAINT test_refused CHECK (batch_id <> %d)`, b.ID)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "dead_letters.jsonl")
	w, _, stop := newWriter(t, pool, writer.WithRefusedFile(file), writer.WithRetryMax(100*time.Millisecond))
	w.Enqueue(b)
	stop()
	lines := refusedLines(t, file)
	if len(lines) != 3 {
		t.Fatalf("%d lines in the refused file, want 3", len(lines))
	}
	// Moved away (the docs' mv), one line there twice.
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	first := data[:bytes.IndexByte(data, '\n')+1]
	if err := os.WriteFile(filepath.Join(dir, "dead_letters.jsonl.1"), append(data, first...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ALTER TABLE dead_letters DROP CONSTRAINT test_refused`); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "replay.sql"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "psql"), dsn, "-v", "ON_ERROR_STOP=1", "-f", "replay.sql")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("psql -f replay.sql (the docs' script):\n%s\n%s\n%v", script, out, err)
	}
	if n := count(t, pool, `SELECT count(*) FROM dead_letters WHERE batch_id = $1`, b.ID); n != 3 {
		t.Errorf("%d dead letters of the batch after the replay, want 3 (one per refused row)", n)
	}
	var rowsMatch bool
	if err := pool.QueryRow(ctx, `SELECT bool_and("row" ? 'table' AND error <> '') FROM dead_letters WHERE batch_id = $1`, b.ID).Scan(&rowsMatch); err != nil || !rowsMatch {
		t.Errorf("replayed dead letters: a row without its table or error (%v)", err)
	}
}
