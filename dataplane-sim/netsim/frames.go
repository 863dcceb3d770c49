package netsim

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Frame buffers live outside the packets, in two process-wide stores of
// pointer-free chunks (one of SmallFrameCap-byte buffers, one of
// FrameCap-byte ones), and a packet names its buffer by a number
// (Packet.fb). A Packet so holds no pointer: the chunks of packets, most
// of a run's heap (the packets in flight), are not scanned by the
// collector, and no write barrier runs where a packet is zeroed or its
// frame attached. Each pool keeps the buffers it took (its free lists and
// the ones attached to its packets); when the pool is collected, a cleanup
// gives them all back to the stores, which never shrink.
type frameStore struct {
	size  int  // bytes a buffer
	shift uint // log2 of the buffers a chunk

	mu     sync.Mutex
	chunks atomic.Pointer[[][]byte] // read without the lock (Frame)
	n      uint32                   // buffers made
	free   []uint32                 // given back by collected pools
}

var (
	smallFrames = frameStore{size: SmallFrameCap, shift: 8} // 256 a chunk: 32 KiB
	largeFrames = frameStore{size: FrameCap, shift: 3}      // 8 a chunk: 12 KiB
)

// take returns the number of a buffer no pool holds.
func (s *frameStore) take() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := len(s.free); k > 0 {
		id := s.free[k-1]
		s.free = s.free[:k-1]
		return id
	}
	id := s.n
	var cs [][]byte
	if p := s.chunks.Load(); p != nil {
		cs = *p
	}
	if int(id>>s.shift) == len(cs) {
		ns := make([][]byte, len(cs)+1)
		copy(ns, cs)
		ns[len(cs)] = make([]byte, s.size<<s.shift)
		s.chunks.Store(&ns)
	}
	s.n++
	return id
}

// bytes returns the whole buffer id.
func (s *frameStore) bytes(id uint32) []byte {
	c := (*s.chunks.Load())[id>>s.shift]
	o := int(id&(1<<s.shift-1)) * s.size
	return c[o : o+s.size : o+s.size]
}

// A frame reference (Packet.fb) is 0 for none, else (id+1)<<1 | 1 for a
// buffer of largeFrames and (id+1)<<1 for one of smallFrames.
func frameRef(id uint32, large bool) uint32 {
	r := (id + 1) << 1
	if large {
		r |= 1
	}
	return r
}

// frameOf returns the whole buffer of a reference other than 0.
func frameOf(ref uint32) []byte {
	if ref&1 != 0 {
		return largeFrames.bytes(ref>>1 - 1)
	}
	return smallFrames.bytes(ref>>1 - 1)
}

// frameOwn lists the buffers a pool took from the stores.
type frameOwn struct{ refs []uint32 }

// release gives a collected pool's buffers back to the stores.
func (o *frameOwn) release() {
	for _, large := range [2]bool{false, true} {
		s := &smallFrames
		if large {
			s = &largeFrames
		}
		s.mu.Lock()
		for _, r := range o.refs {
			if r&1 != 0 == large {
				s.free = append(s.free, r>>1-1)
			}
		}
		s.mu.Unlock()
	}
	o.refs = nil // once: a test releases a live pool's buffers itself
}

// newFrame takes a buffer from a store for pp.
func (pp *packetPool) newFrame(large bool) uint32 {
	if pp.frOwn == nil {
		pp.frOwn = &frameOwn{}
		runtime.AddCleanup(pp, (*frameOwn).release, pp.frOwn)
	}
	s := &smallFrames
	if large {
		s = &largeFrames
	}
	r := frameRef(s.take(), large)
	pp.frOwn.refs = append(pp.frOwn.refs, r)
	return r
}
