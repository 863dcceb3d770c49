package rows_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/gnmi/store"
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
		// NaN is a value a float sample may carry; it equals itself here.
		if d := cmp.Diff(b, b2, cmpopts.EquateNaNs()); d != "" {
			t.Fatalf("re-encode changed the batch (-first +second):\n%s", d)
		}
	})
}

// FuzzPathID: the series id computed from the path's elements is the id of
// its canonical string, for any path the store parses.
func FuzzPathID(f *testing.F) {
	f.Add("sw", "/lhcnp/interfaces/interface[name=n1-n2]/queues/queue[id=0]/state/queue-depth")
	f.Add("", "/a[k=v\\]x][j=\\\\]/b")
	f.Add("t", "/a[b=ü][a=\xff]")
	f.Fuzz(func(t *testing.T, target, path string) {
		p, err := store.ParsePath(path)
		if err != nil {
			return
		}
		if got, want := rows.PathID(target, p), rows.SeriesID(target, store.PathString(p)); got != want {
			t.Fatalf("PathID(%q, %q) = %d, SeriesID of %q = %d", target, path, got, store.PathString(p), want)
		}
	})
}
