package netsim

import "github.com/lhcnp/lhcnp/dataplane-sim/engine"

// serializer is engine.Serializer (transmission times that carry the
// sub-nanosecond remainder, so that N frames take exactly N*size*8/rate)
// with its last division kept: a port sends the same few sizes at one
// rate, and the same size again costs no 64-bit division (tens of
// cycles). tryTransmit calls cached, which the compiler inlines, and
// divide only when the size or the rate is new; TestSerializerAsEngine
// holds it to engine.Serializer's results.
type serializer struct {
	remainder int64 // bit-nanoseconds not yet turned into a whole ns
	// q and r are the quotient and remainder of size bytes'
	// bit-nanoseconds by the rate rate1^1 (so that the zero serializer
	// holds the true entry for 0 bytes at 1 b/s, and none for a rate of
	// 0, which divide answers with Never).
	size, rate1, q, r int64
}

// txTime returns the transmission time of sizeBytes at rateBitsPerSec.
func (s *serializer) txTime(sizeBytes, rateBitsPerSec int64) engine.Time {
	if t, ok := s.cached(sizeBytes, rateBitsPerSec); ok {
		return t
	}
	return s.divide(sizeBytes, rateBitsPerSec)
}

// cached is txTime when the size and the rate are the last division's.
// That division was the last call's (every other call divides), so
// remainder < rate, as r is: (size's bits + remainder) / rate is q or
// q+1.
func (s *serializer) cached(sizeBytes, rateBitsPerSec int64) (engine.Time, bool) {
	if sizeBytes != s.size || rateBitsPerSec^1 != s.rate1 {
		return 0, false
	}
	x := s.r + s.remainder - rateBitsPerSec
	t := s.q + 1
	if x < 0 {
		x += rateBitsPerSec
		t--
	}
	s.remainder = x
	return engine.Time(t), true
}

// divide is txTime by division; it keeps the quotient for cached.
func (s *serializer) divide(sizeBytes, rateBitsPerSec int64) engine.Time {
	if rateBitsPerSec <= 0 {
		return engine.Never
	}
	bits := sizeBytes * 8 * int64(engine.Second)
	num := bits + s.remainder
	t := num / rateBitsPerSec
	s.remainder = num % rateBitsPerSec
	s.size, s.rate1, s.q, s.r = sizeBytes, rateBitsPerSec^1, bits/rateBitsPerSec, bits%rateBitsPerSec
	return engine.Time(t)
}
