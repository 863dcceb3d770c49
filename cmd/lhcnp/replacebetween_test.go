package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplaceBetween: the text between a key's markers is replaced and the
// rest of the file kept; without the markers the file is left as it was
// and the error names the file and the markers.
func TestReplaceBetween(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "tuner.md")
	orig := "head\n<!-- tuner-eval:test -->\nold table\n<!-- /tuner-eval:test -->\ntail\n"
	if err := os.WriteFile(p, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := replaceBetween(p, "tuner-eval:test", "new table\n"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	want := "head\n<!-- tuner-eval:test -->\nnew table\n<!-- /tuner-eval:test -->\ntail\n"
	if string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	err := replaceBetween(p, "tuner-eval:train", "x\n")
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "tuner-eval:train") {
		t.Fatalf("missing markers: err %v, want one naming %s and the key", err, p)
	}
	if again, _ := os.ReadFile(p); string(again) != want {
		t.Fatalf("file changed by a failed replace: %q", again)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*tmp-*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}
