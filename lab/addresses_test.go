package lab

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWriteAddresses: the addresses file is replaced whole, stays the
// lab's own (mode 0600) and leaves no temporary file beside it.
func TestWriteAddresses(t *testing.T) {
	dir := t.TempDir()
	for _, want := range []Addresses{
		{Dashboard: "http://127.0.0.1:8080/"},
		{Dashboard: "http://127.0.0.1:8081/", PrivatePG: true, PostgresDSN: "postgres://postgres@127.0.0.1:5433/lhcnp?sslmode=disable"},
	} {
		if err := writeAddresses(dir, want); err != nil {
			t.Fatal(err)
		}
		got, _, _, err := ReadAddresses(dir)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ReadAddresses (-want, +got):\n%s", diff)
		}
		st, err := os.Stat(filepath.Join(dir, AddressesFile))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", AddressesFile, st.Mode().Perm(), err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("%d files in the state directory, want %s alone", len(entries), AddressesFile)
		}
	}
}
