package startup

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFile(t *testing.T) {
	tests := []struct {
		desc     string
		writes   []string
		leftover bool // a crashed write's temporary file is there
		want     string
		wantOK   bool
	}{
		{desc: "none yet", wantOK: false},
		{desc: "one write", writes: []string{`{"a":1}`}, want: `{"a":1}`, wantOK: true},
		{desc: "the last write wins", writes: []string{`{"a":1}`, `{"a":2}`}, want: `{"a":2}`, wantOK: true},
		{desc: "a crashed write is ignored and removed", writes: []string{`{"a":1}`}, leftover: true, want: `{"a":1}`, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "switches")
			f := New(FileName(dir, "n1"))
			for _, w := range tt.writes {
				if err := f.Persist(context.Background(), []byte(w)); err != nil {
					t.Fatalf("Persist: %v", err)
				}
			}
			if tt.leftover {
				if err := os.WriteFile(filepath.Join(dir, ".n1.json.tmp-123"), []byte(`{"a":`), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, ok, err := f.Read()
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if ok != tt.wantOK || string(got) != tt.want {
				t.Errorf("Read = %q, %v; want %q, %v", got, ok, tt.want, tt.wantOK)
			}
			var names []string
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				names = append(names, e.Name())
			}
			var want []string
			if tt.wantOK {
				want = []string{"n1.json"}
			}
			if diff := cmp.Diff(want, names); diff != "" {
				t.Errorf("files in the directory (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPersistFailureKeepsTheOld: a write that fails leaves the previous
// document and no temporary file.
func TestPersistFailureKeepsTheOld(t *testing.T) {
	dir := t.TempDir()
	f := New(FileName(dir, "n1"))
	if err := f.Persist(context.Background(), []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	// The rename fails: a directory stands where the file would go.
	blocked := New(FileName(dir, "n2"))
	if err := os.MkdirAll(filepath.Join(blocked.Path(), "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := blocked.Persist(context.Background(), []byte(`{"a":2}`)); err == nil {
		t.Fatal("Persist over a directory succeeded")
	}
	got, ok, err := f.Read()
	if err != nil || !ok || string(got) != `{"a":1}` {
		t.Errorf("Read = %q, %v, %v; want the first document", got, ok, err)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"n1.json", "n2.json"}, names); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}
