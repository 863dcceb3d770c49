package atomicfile_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/lhcnp/lhcnp/internal/atomicfile"
)

// TestWrite: the file is replaced whole with its new mode (also synced,
// Durable); a writer that fails leaves the old file as it was; none leaves
// a temporary file.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "doc.md")
	if err := os.WriteFile(path, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := atomicfile.Write(path, 0o644, func(w io.Writer) error {
		fmt.Fprintln(w, "half of the new")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("Write with a failing writer: %v, want %v", err, boom)
	}
	check := func(want string, mode os.FileMode) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil || string(b) != want {
			t.Errorf("%s: %q (%v), want %q", path, b, err, want)
		}
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != mode {
			t.Errorf("%s: mode %v (%v), want %v", path, st.Mode().Perm(), err, mode)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("%d files in the directory, want the file alone", len(entries))
		}
	}
	check("old\n", 0o600)
	if err := atomicfile.Write(path, 0o644, func(w io.Writer) error {
		_, err := io.WriteString(w, "new\n")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	check("new\n", 0o644)
	if err := atomicfile.Write(path, 0o600, func(w io.Writer) error {
		_, err := io.WriteString(w, "durable\n")
		return err
	}, atomicfile.Durable()); err != nil {
		t.Fatal(err)
	}
	check("durable\n", 0o600)
}
