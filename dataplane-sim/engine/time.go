package engine

import (
	"strconv"
	"time"
)

// Time is simulated time in integer nanoseconds since the start of the
// simulation. It is its own type so that simulated and wall-clock time never
// mix by accident: convert with Duration and FromDuration.
type Time int64

// Units of simulated time.
const (
	Nanosecond  Time = 1
	Microsecond Time = 1000 * Nanosecond
	Millisecond Time = 1000 * Microsecond
	Second      Time = 1000 * Millisecond
)

// Never is a time later than any event: the "no deadline" value.
const Never Time = 1<<63 - 1

// FromDuration converts a wall-clock duration to simulated time.
func FromDuration(d time.Duration) Time { return Time(d.Nanoseconds()) }

// Duration converts t to a time.Duration (for printing and configuration).
func (t Time) Duration() time.Duration { return time.Duration(t) }

// Seconds returns t in seconds.
func (t Time) Seconds() float64 { return float64(t) / float64(Second) }

// Microseconds returns t in (fractional) microseconds.
func (t Time) Microseconds() float64 { return float64(t) / float64(Microsecond) }

// String prints t like a time.Duration ("1.5ms"); Never prints as "never".
func (t Time) String() string {
	if t == Never {
		return "never"
	}
	return time.Duration(t).String()
}

// Nanos returns t as an integer number of nanoseconds, for formats (CSV) that
// want a plain number.
func (t Time) Nanos() int64 { return int64(t) }

// ParseTime reads a Go duration string ("10ms", "2.5us") as simulated time.
func ParseTime(s string) (Time, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		// A bare integer is nanoseconds.
		n, err2 := strconv.ParseInt(s, 10, 64)
		if err2 != nil {
			return 0, err
		}
		return Time(n), nil
	}
	return FromDuration(d), nil
}

// TxTime returns the serialisation time of sizeBytes at rateBitsPerSec, rounded up
// to a whole nanosecond. Links that must hold an exact long-run rate use a
// Serializer instead, which carries the rounding remainder.
func TxTime(sizeBytes int64, rateBitsPerSec int64) Time {
	if rateBitsPerSec <= 0 {
		return Never
	}
	bits := sizeBytes * 8 * int64(Second)
	return Time((bits + rateBitsPerSec - 1) / rateBitsPerSec)
}

// Serializer turns packet sizes into transmission times at a given rate
// without drift: the sub-nanosecond remainder of each packet is carried to the
// next, so N packets take exactly N*size*8/rate seconds, to the nanosecond.
// It keeps its last division: a port sends the same few sizes at one rate,
// and the same size again costs no 64-bit division (tens of cycles). A hot
// caller calls Cached, which the compiler inlines, and Divide only when it
// misses; TxTime is the two together.
type Serializer struct {
	remainder int64 // bit-nanoseconds not yet turned into a whole ns
	// q and r are the quotient and remainder of size bytes'
	// bit-nanoseconds by the rate rate1^1 (so that the zero Serializer
	// holds the true entry for 0 bytes at 1 b/s, and none for a rate of
	// 0, which Divide answers with Never).
	size, rate1, q, r int64
}

// TxTime returns the transmission time of sizeBytes at rateBitsPerSec.
func (s *Serializer) TxTime(sizeBytes, rateBitsPerSec int64) Time {
	if t, ok := s.Cached(sizeBytes, rateBitsPerSec); ok {
		return t
	}
	return s.Divide(sizeBytes, rateBitsPerSec)
}

// Cached is TxTime when the size and the rate are the last division's
// (ok false otherwise, and nothing changes). That division was the last
// call's (every other call divides), so remainder < rate, as r is:
// (size's bits + remainder) / rate is q or q+1.
func (s *Serializer) Cached(sizeBytes, rateBitsPerSec int64) (Time, bool) {
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
	return Time(t), true
}

// Divide is TxTime by division; it keeps the quotient for Cached.
func (s *Serializer) Divide(sizeBytes, rateBitsPerSec int64) Time {
	if rateBitsPerSec <= 0 {
		return Never
	}
	bits := sizeBytes * 8 * int64(Second)
	num := bits + s.remainder
	t := num / rateBitsPerSec
	s.remainder = num % rateBitsPerSec
	s.size, s.rate1, s.q, s.r = sizeBytes, rateBitsPerSec^1, bits/rateBitsPerSec, bits%rateBitsPerSec
	return Time(t)
}
