package scenario

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"
)

// Unit grammar. Every quantity is a decimal number followed by a unit, with
// optional spaces between them:
//
//	number   = digit { digit } [ "." digit { digit } ]
//	rate     = number ( "bps" | "Kbps" | "kbps" | "Mbps" | "Gbps" | "Tbps" | "K" | "k" | "M" | "G" | "T" )
//	size     = number ( "B" | "KB" | "kB" | "MB" | "GB" | "TB" | "KiB" | "MiB" | "GiB" | "TiB" )
//	duration = number ( "ns" | "us" | "µs" | "ms" | "s" )
//
// Rates are bits per second with SI prefixes (powers of 1000): "25G" and
// "25Gbps" are both 25e9 b/s. Sizes are bytes: KB, MB, GB, TB are powers of
// 1000 (so 125MB is 125,000,000 bytes, as in the draft's §7), KiB, MiB, GiB
// and TiB are powers of 1024. The value must come out as a whole number of
// the base unit (bit/s, byte, nanosecond): "1.5B" and "0.5ns" are errors. A
// bare "0" is accepted for any quantity; any other number needs its unit.
// Negative values are rejected: nothing in a scenario is negative.

// Rate is a data rate in bits per second.
type Rate int64

// Size is an amount of data in bytes.
type Size int64

// Common rates and sizes, for code that builds scenarios.
const (
	Kbps Rate = 1000
	Mbps Rate = 1000 * Kbps
	Gbps Rate = 1000 * Mbps

	KB  Size = 1000
	MB  Size = 1000 * KB
	KiB Size = 1024
	MiB Size = 1024 * KiB
)

var rateUnits = map[string]int64{
	"bps": 1, "Kbps": 1e3, "kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9, "Tbps": 1e12,
	"K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
}

var sizeUnits = map[string]int64{
	"B": 1, "KB": 1e3, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
}

var durationUnits = map[string]int64{
	"ns": 1, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9,
}

// maxQuantity bounds every quantity in its base unit (bit/s, byte,
// nanosecond), a quarter of int64, so that sums of a few (a start plus a
// duration, a size in bits) do not overflow.
const maxQuantity = math.MaxInt64 / 4

// ErrNegative is returned (and wrapped by Load's errors) for a quantity
// written with a minus sign: nothing in a scenario is negative.
var ErrNegative = errors.New("negative values are not allowed")

// ParseRate parses a rate such as "100Gbps" or "25G".
func ParseRate(s string) (Rate, error) {
	v, err := parseQuantity(s, rateUnits, "rate", "bps, Kbps, Mbps, Gbps, Tbps or K, M, G, T")
	return Rate(v), err
}

// ParseSize parses a size such as "64KB", "125MB" or "64KiB".
func ParseSize(s string) (Size, error) {
	v, err := parseQuantity(s, sizeUnits, "size", "B, KB, MB, GB, TB, KiB, MiB, GiB, TiB")
	return Size(v), err
}

// ParseDuration parses a duration such as "10ms", "5us" or "1.5s".
func ParseDuration(s string) (time.Duration, error) {
	v, err := parseQuantity(s, durationUnits, "duration", "ns, us, µs, ms, s")
	return time.Duration(v), err
}

// parseQuantity parses number+unit exactly (no floating point), so that
// "0.1s" is exactly 100000000ns and "2.5Gbps" exactly 2500000000.
func parseQuantity(s string, units map[string]int64, what, list string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty %s", what)
	}
	if t[0] == '-' {
		return 0, ErrNegative
	}
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("%q is not a %s: want a number followed by a unit (%s)", s, what, list)
	}
	if i < len(t) && t[i] == '.' {
		j := i + 1
		for j < len(t) && t[j] >= '0' && t[j] <= '9' {
			j++
		}
		if j == i+1 {
			return 0, fmt.Errorf("%q is not a %s: no digits after the decimal point", s, what)
		}
		i = j
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	if unit == "" {
		if isZero(num) {
			return 0, nil
		}
		return 0, fmt.Errorf("%q has no unit: want one of %s", s, list)
	}
	mult, ok := units[unit]
	if !ok {
		return 0, fmt.Errorf("%q: unknown %s unit %q: want one of %s", s, what, unit, list)
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("%q is not a %s", s, what)
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	if !r.IsInt() {
		return 0, fmt.Errorf("%q is not a whole number of %s", s, baseUnit(what))
	}
	n := r.Num()
	if !n.IsInt64() || n.Int64() > maxQuantity {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n.Int64(), nil
}

func isZero(num string) bool {
	return strings.Trim(num, "0.") == ""
}

func baseUnit(what string) string {
	switch what {
	case "rate":
		return "bits per second"
	case "size":
		return "bytes"
	default:
		return "nanoseconds"
	}
}

// String formats a rate with the largest SI unit that keeps it exact.
func (r Rate) String() string {
	return formatExact(int64(r), []unitName{{1e12, "Tbps"}, {1e9, "Gbps"}, {1e6, "Mbps"}, {1e3, "Kbps"}, {1, "bps"}})
}

// String formats a size with the largest unit that keeps it exact, SI
// units first.
func (s Size) String() string {
	return formatExact(int64(s), []unitName{
		{1e12, "TB"}, {1 << 40, "TiB"}, {1e9, "GB"}, {1 << 30, "GiB"}, {1e6, "MB"}, {1 << 20, "MiB"},
		{1e3, "KB"}, {1 << 10, "KiB"}, {1, "B"},
	})
}

type unitName struct {
	mult int64
	name string
}

func formatExact(v int64, units []unitName) string {
	if v == 0 {
		return "0"
	}
	for _, u := range units {
		if v%u.mult == 0 {
			return fmt.Sprintf("%d%s", v/u.mult, u.name)
		}
	}
	return fmt.Sprintf("%d%s", v, units[len(units)-1].name)
}
