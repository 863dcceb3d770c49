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
type Serializer struct {
	remainder int64 // bit-nanoseconds not yet turned into a whole ns
}

// TxTime returns the transmission time of sizeBytes at rateBitsPerSec.
func (s *Serializer) TxTime(sizeBytes int64, rateBitsPerSec int64) Time {
	if rateBitsPerSec <= 0 {
		return Never
	}
	num := sizeBytes*8*int64(Second) + s.remainder
	t := num / rateBitsPerSec
	s.remainder = num % rateBitsPerSec
	return Time(t)
}
