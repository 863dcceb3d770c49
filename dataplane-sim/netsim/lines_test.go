package netsim

import (
	"reflect"
	"testing"
	"unsafe"
)

// cacheLineBytes is the cache line of the machines we run on (x86-64 and
// arm64 servers: 64 bytes).
const cacheLineBytes = 64

// TestHotTypesOwnTheirLines: the objects that two partitions running side
// by side write at nearly every packet, and that are allocated next to
// objects of the other partition, are a whole number of cache lines. Go's
// allocator puts objects of a size class that is a multiple of 64 bytes
// on 64-byte boundaries (a span starts on a page), so no two of them
// share a line and a write in one partition never invalidates a line the
// other is using (docs/engine.md, "Side by side"). Adding a field changes
// the size: adjust the type's padding so that this passes.
func TestHotTypesOwnTheirLines(t *testing.T) {
	for _, v := range []any{QP{}, RecvQP{}, Link{}} {
		typ := reflect.TypeOf(v)
		if n := typ.Size(); n%cacheLineBytes != 0 {
			t.Errorf("%s is %d bytes, not a multiple of %d: change its padding (the _ field at its end) by %d bytes",
				typ.Name(), n, cacheLineBytes, cacheLineBytes-n%cacheLineBytes)
		}
	}
	// And a heap object of that size starts on a line (below 512 bytes
	// there is no malloc header before it): allocate a few, kept by the
	// cleanup so that they live on the heap, and look.
	var qs []*QP
	var rs []*RecvQP
	var ls []*Link
	for range 8 {
		qs, rs, ls = append(qs, new(QP)), append(rs, new(RecvQP)), append(ls, new(Link))
	}
	t.Cleanup(func() { qs, rs, ls = nil, nil, nil })
	for i := range qs {
		for _, p := range []unsafe.Pointer{unsafe.Pointer(qs[i]), unsafe.Pointer(rs[i]), unsafe.Pointer(ls[i])} {
			if uintptr(p)%cacheLineBytes != 0 {
				t.Errorf("an object at %p is not on a cache line", p)
			}
		}
	}
}
