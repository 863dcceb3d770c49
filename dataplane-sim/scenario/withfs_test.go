package scenario

import (
	"os"
	"reflect"
	"testing"
	"testing/fstest"
)

// TestWithFS: a scenario read from a file system of its own (lhcnp's
// defaults built into the binary) reads the CDF files it names from the
// same file system, relative to its directory, and loads as from disk.
func TestWithFS(t *testing.T) {
	const file = "../../scenarios/fabric/two-dc-k4.yaml"
	want, err := LoadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	yml, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cdf, err := os.ReadFile("../../scenarios/cdf/websearch.txt")
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{
		"scenarios/fabric/two-dc-k4.yaml": {Data: yml},
		"scenarios/cdf/websearch.txt":     {Data: cdf},
	}
	got, err := LoadFile("scenarios/fabric/two-dc-k4.yaml", WithFS(fsys))
	if err != nil {
		t.Fatalf("from the file system: %v", err)
	}
	got.File = want.File
	if !reflect.DeepEqual(want, got) {
		t.Error("the scenario read from the file system differs from the one read from disk")
	}
	// Without the CDF file there, the file system is read, not the disk.
	delete(fsys, "scenarios/cdf/websearch.txt")
	if _, err := LoadFile("scenarios/fabric/two-dc-k4.yaml", WithFS(fsys)); err == nil {
		t.Error("loaded without its CDF file in the file system")
	}
}
