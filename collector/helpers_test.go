package collector_test

import (
	"path/filepath"
	"testing"

	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/collector/spill"
)

// writeSpill leaves batches in a state directory's spill, as a collector
// that died would.
func writeSpill(t testing.TB, stateDir string, bs ...*rows.Batch) {
	t.Helper()
	sp, err := spill.Open(filepath.Join(stateDir, "spill"))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		if err := sp.Append(rows.AppendBatch(nil, b)); err != nil {
			t.Fatal(err)
		}
	}
	sp.Close()
}
