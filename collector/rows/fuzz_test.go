package rows_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/collector/rows"
)

// FuzzDecodeBatch decodes arbitrary spill payloads: an error or a batch that
// encodes back to the same bytes, never a panic.
func FuzzDecodeBatch(f *testing.F) {
	f.Add(rows.AppendBatch(nil, &rows.Batch{ID: 1, Target: "t",
		Samples: []rows.Sample{{TS: 1, SeriesID: 2, Kind: rows.ValText, Text: "v"}, {TS: 2, Kind: rows.ValFloat, Float: 1}},
		Series:  []rows.Series{{ID: 2, Keys: []rows.Key{{"a", "b"}}}},
		Events:  []rows.Event{{TS: 3, Kind: "cnp"}}}))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := rows.DecodeBatch(data)
		if err != nil {
			return
		}
		b2, err := rows.DecodeBatch(rows.AppendBatch(nil, b))
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if d := cmp.Diff(b, b2); d != "" {
			t.Fatalf("re-encode changed the batch (-first +second):\n%s", d)
		}
	})
}
