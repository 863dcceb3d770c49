package spill_test

import (
	"testing"

	"github.com/lhcnp/lhcnp/collector/spill"
)

// FuzzScan reads arbitrary segment bytes: a valid prefix and an error, never
// a panic, and the prefix rescans to the same records.
func FuzzScan(f *testing.F) {
	f.Add([]byte(spill.Magic))
	f.Add([]byte(spill.Magic + "\x03\x00\x00\x00\x00\x00\x00\x00abc"))
	f.Add([]byte(spill.Magic + "\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var n int
		valid, records, _ := spill.Scan(data, func([]byte) { n++ })
		if n != records || valid > len(data) {
			t.Fatalf("valid %d of %d bytes, %d records, %d calls", valid, len(data), records, n)
		}
		if valid >= len(spill.Magic) {
			v2, r2, err := spill.Scan(data[:valid], nil)
			if err != nil || v2 != valid || r2 != records {
				t.Fatalf("rescan of the valid prefix: %d, %d, %v; want %d, %d, nil", v2, r2, err, valid, records)
			}
		}
	})
}
