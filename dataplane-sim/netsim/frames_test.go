package netsim

import "testing"

// TestFrameStoreRelease checks that a pool's frame buffers are distinct,
// keep their bytes, and go back to the stores for the next pool when
// released (what the pool's cleanup does once it is collected).
func TestFrameStoreRelease(t *testing.T) {
	var a packetPool
	refs := map[uint32]bool{}
	for i := 0; i < 600; i++ {
		r := a.getFrame(i%3 != 0)
		if r == 0 || refs[r] {
			t.Fatalf("buffer %d: ref %#x zero or taken twice", i, r)
		}
		refs[r] = true
		b := frameOf(r)
		if want := SmallFrameCap; r&1 != 0 {
			want = FrameCap
			if len(b) != want {
				t.Fatalf("large buffer of %d bytes, want %d", len(b), want)
			}
		} else if len(b) != want {
			t.Fatalf("small buffer of %d bytes, want %d", len(b), want)
		}
		b[0], b[len(b)-1] = byte(i), byte(i>>8)
	}
	if len(a.frOwn.refs) != len(refs) {
		t.Fatalf("pool owns %d buffers, took %d", len(a.frOwn.refs), len(refs))
	}
	free := func() (n int, made uint32) {
		for _, s := range []*frameStore{&smallFrames, &largeFrames} {
			s.mu.Lock()
			n += len(s.free)
			made += s.n
			s.mu.Unlock()
		}
		return n, made
	}
	n0, _ := free()
	a.frOwn.release()
	// Other pools' cleanups may give buffers back meanwhile: at least ours.
	n1, made := free()
	if n1-n0 < len(refs) {
		t.Fatalf("release gave back %d buffers, want %d", n1-n0, len(refs))
	}
	var b packetPool
	for j := 0; j < 10; j++ {
		b.getFrame(j%2 == 0)
	}
	if _, made2 := free(); made2 != made {
		t.Fatalf("a new pool made %d buffers with %d free", made2-made, n1)
	}
}
