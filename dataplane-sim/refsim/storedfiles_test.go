package refsim

import (
	"io/fs"
	"path/filepath"
	"slices"
	"testing"
)

// TestStoredFiles: the copy built into the binary holds every stored run
// of testdata/ref (Go embeds a testdata directory only when named, as
// here), and CheckAllStored accepts it with the scenarios from disk.
func TestStoredFiles(t *testing.T) {
	disk, err := filepath.Glob("testdata/ref/*/run*.json")
	if err != nil || len(disk) == 0 {
		t.Fatalf("no stored reference outputs: %v", err)
	}
	built, err := fs.Glob(StoredFiles, "testdata/ref/*/run*.json")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(disk)
	slices.Sort(built)
	if !slices.Equal(disk, built) {
		t.Errorf("built in: %d runs, on disk %d", len(built), len(disk))
	}
	if err := CheckAllStored("testdata/ref", "../../scenarios/refsim", WithStoredFS(StoredFiles)); err != nil {
		t.Error(err)
	}
}
