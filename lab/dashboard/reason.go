package dashboard

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The tuner writes its reasons for the record: Go durations to the
// nanosecond, byte counts to the byte, rates in %g notation, and the names
// of its configuration keys. ReadableReason says the same for a network
// engineer reading the page: durations and sizes rounded with their units,
// and the keys in words. The table keeps the tuner's text (the page shows
// it on hover).

var (
	// A Go duration: 1m3.2843s, 250ms, 1.5µs (not a plain number).
	goDuration = regexp.MustCompile(`\b(?:\d+(?:\.\d+)?(?:h|ms|µs|us|ns|m|s))+\b`)
	// A number and a unit of bytes or bytes per second.
	bytesValue = regexp.MustCompile(`(-?\d+(?:\.\d+)?(?:e[+-]?\d+)?) (B/s|B)\b`)
	// A number in %g exponent notation with no unit after it.
	expNumber = regexp.MustCompile(`\b\d+(?:\.\d+)?e[+-]?\d+\b`)
)

// keyWords are the tuner's configuration keys (docs/tuner.md) in words.
var keyWords = strings.NewReplacer(
	"delay_high_rtt", "the high-delay limit",
	"delay_low_rtt", "the low-delay limit",
	"utilisation_under", "the under-use limit",
	"notifications_high_cost", "the notification limit",
	"growth_trend_rtt", "the growth-trend limit",
	"settle_growth_share of V_growth", "the settling share of V_growth",
	"settle_growth_share", "the settling share",
	"loss_high", "the loss limit",
	"overrun_ceiling_bdp", "the overrun ceiling",
	"overrun_ceiling_buffer_share", "the overrun's share of the buffer",
	"under_use_ceiling_bdp", "the under-use ceiling",
	"under_use_v_growth_share", "the under-use ceiling of V_growth",
	"loss_caps_under_use", "the loss cap",
	"pinned_buffer_share", "the pinned share of the buffer",
	"pinned_off_rtt", "the pinned calm time",
	"standing_floor_share", "the standing floor share",
	"overrun_headroom_share", "the overrun headroom share",
	"alpha_start_overload_cut", "the starting alpha where the node cuts to the overload",
	"alpha_start", "the starting alpha",
	"v_growth_start_share", "the starting V_growth share",
	"under_use_after_rtt", "the under-use wait",
	"qgr_off_rtt", "the QGR-off time",
	"settle_whole", "the settle in one change",
	"settle_unjudged", "the settle not judged",
	"RTT_est", "RTT",
)

// ReadableReason rewrites a tuner reason for the page.
func ReadableReason(reason string) string {
	s := bytesValue.ReplaceAllStringFunc(reason, func(m string) string {
		sub := bytesValue.FindStringSubmatch(m)
		v, err := strconv.ParseFloat(sub[1], 64)
		if err != nil {
			return m
		}
		return siBytes(v, sub[2])
	})
	s = expNumber.ReplaceAllStringFunc(s, func(m string) string {
		v, err := strconv.ParseFloat(m, 64)
		if err != nil {
			return m
		}
		return siNumber(v)
	})
	s = goDuration.ReplaceAllStringFunc(s, func(m string) string {
		d, err := time.ParseDuration(m)
		if err != nil {
			return m
		}
		return roundDuration(d)
	})
	return keyWords.Replace(s)
}

// roundDuration writes d with two significant digits and a unit: 63 s,
// 1.2 min, 250 ms, 4.2 µs.
func roundDuration(d time.Duration) string {
	a := d.Abs()
	switch {
	case a >= time.Hour:
		return sig2(d.Hours()) + " h"
	case a >= 2*time.Minute:
		return sig2(d.Minutes()) + " min"
	case a >= time.Second:
		return sig2(d.Seconds()) + " s"
	case a >= time.Millisecond:
		return sig2(float64(d)/float64(time.Millisecond)) + " ms"
	case a >= time.Microsecond:
		return sig2(float64(d)/float64(time.Microsecond)) + " µs"
	}
	return strconv.FormatInt(int64(d), 10) + " ns"
}

// sig2 writes v with two significant digits, or as an integer when it has
// more integer digits than that.
func sig2(v float64) string {
	if v == 0 {
		return "0"
	}
	if math.Abs(v) >= 10 {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 2, 64)
}

var siPrefixes = []struct {
	factor float64
	prefix string
}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}}

// siBytes writes v bytes (or bytes per second) with an SI prefix and three
// significant digits: 12.5 MB, 980 kB/s.
func siBytes(v float64, unit string) string {
	n, prefix := si(v)
	return n + " " + prefix + unit
}

// siNumber writes a number with no unit the same way: 12.3M.
func siNumber(v float64) string {
	n, prefix := si(v)
	return n + prefix
}

func si(v float64) (string, string) {
	for _, p := range siPrefixes {
		if math.Abs(v) >= p.factor {
			return sig3(v / p.factor), p.prefix
		}
	}
	return sig3(v), ""
}

func sig3(v float64) string {
	if math.Abs(v) >= 100 {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
