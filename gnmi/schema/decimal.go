package schema

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/openconfig/goyang/pkg/yang"
)

// decimal is a decimal number read exactly from its text: digits × 10^exp,
// digits without leading or trailing zeros ("" for zero). A float64 holds
// about 16 significant digits, a decimal64 up to 19 (engine-speed's
// 9223372036.854775807): read through a float64, the last digits were
// lost and a value out of range could be taken as another in range.
type decimal struct {
	neg    bool
	digits string
	exp    int64
}

// parseDecimal reads s in RFC 7950 §9.3.1's lexical form (an optional
// sign, decimal digits, optionally a point and more digits), which is
// also RFC 7951 §6.1's for a decimal64 in a JSON string. A JSON number
// (number) may also have an exponent, as JSON's grammar allows and JSON
// encoders write small numbers ("1e-07"): its value is one number all the
// same. The JSON decoder has checked a number's grammar; a string's is
// checked here. false when s is not in that form.
func parseDecimal(s string, number bool) (decimal, bool) {
	var d decimal
	switch {
	case strings.HasPrefix(s, "-"):
		d.neg, s = true, s[1:]
	case strings.HasPrefix(s, "+") && !number:
		s = s[1:]
	}
	intPart := leadingDigits(s)
	s = s[len(intPart):]
	var fracPart string
	if strings.HasPrefix(s, ".") {
		fracPart = leadingDigits(s[1:])
		if fracPart == "" {
			return d, false // "5.": digits must follow the point
		}
		s = s[1+len(fracPart):]
	}
	var e int64
	if number && s != "" && (s[0] == 'e' || s[0] == 'E') {
		var ok bool
		if e, ok = exponent(s[1:]); !ok {
			return d, false
		}
		s = ""
	}
	if intPart == "" || s != "" {
		return d, false // ".5", "5e-1" in a string, "0x10"
	}
	digits := strings.TrimLeft(intPart+fracPart, "0")
	trimmed := strings.TrimRight(digits, "0")
	d.digits = trimmed
	d.exp = e - int64(len(fracPart)) + int64(len(digits)-len(trimmed))
	if d.digits == "" {
		return decimal{}, true // a decimal64 has no negative zero (RFC 7950 §9.3)
	}
	return d, true
}

// exponent reads a JSON number's exponent (after the "e"): an optional
// sign and digits. One beyond ±10^10 is taken as ±2^40, as far from any
// decimal64's digits as it.
func exponent(s string) (int64, bool) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	} else {
		s = strings.TrimPrefix(s, "+")
	}
	if s == "" || leadingDigits(s) != s {
		return 0, false
	}
	e := int64(1) << 40
	if v := strings.TrimLeft(s, "0"); len(v) <= 10 {
		e, _ = strconv.ParseInt("0"+v, 10, 64)
	}
	if neg {
		e = -e
	}
	return e, true
}

func leadingDigits(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}

// text is d in its canonical form (RFC 7950 §9.3.2): plain decimal
// notation with at least one digit before and after the point and no other
// leading or trailing zeros ("0.5", "2.0", "-1.25", "0.0" for zero). RFC
// 7951 §6.1 writes a decimal64 in that form. d has at most 19 digits before
// its point and 18 after it (check's bounds).
func (d decimal) text() string {
	if d.digits == "" {
		return "0.0"
	}
	var b strings.Builder
	if d.neg {
		b.WriteByte('-')
	}
	switch before := int64(len(d.digits)) + d.exp; {
	case d.exp >= 0:
		b.WriteString(d.digits)
		b.WriteString(strings.Repeat("0", int(d.exp)))
		b.WriteString(".0")
	case before > 0:
		b.WriteString(d.digits[:before])
		b.WriteByte('.')
		b.WriteString(d.digits[before:])
	default:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", int(-before)))
		b.WriteString(d.digits)
	}
	return b.String()
}

// canonicalDecimal writes f, the value of a decimal64 with fd fraction digits
// held as a float64 (ygot's Go type for one, PROTO's double_val), in the
// canonical form of RFC 7950 §9.3.2 ("2.0", "0.00001", never "2" or
// "1e-05"). The float64's shortest decimal is the value a client sent (it
// reads back as the same float64); one with more than fd fraction digits
// (a state value computed in floating point) is rounded to fd. false for
// NaN and ±Inf, which no decimal64 is.
func canonicalDecimal(f float64, fd int) (string, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", false
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if _, frac, ok := strings.Cut(s, "."); ok && len(frac) > fd {
		s = strconv.FormatFloat(f, 'f', fd, 64)
	}
	d, ok := parseDecimal(s, false)
	if !ok {
		return "", false
	}
	return d.text(), true
}

// check returns d's text if it is a value of the decimal64 type t: at most
// t's fraction digits (RFC 7950 §9.3: the value must be representable, so
// more are refused, not rounded), within a decimal64 of those fraction
// digits and within t's range, all on the exact value. s is d as the
// client sent it, for the errors.
func (d decimal) check(t *yang.YangType, s string) (string, error) {
	fd := t.FractionDigits
	if -d.exp > int64(fd) {
		return "", fmt.Errorf("%s has more than the %d fraction digits of its type", s, fd)
	}
	// 19 digits before the point: more cannot be a decimal64 (|value|
	// × 10^fd is below 2^63); the bound keeps text short.
	if int64(len(d.digits))+d.exp > 19 {
		return "", decimal64RangeError(s, fd)
	}
	text := d.text()
	n, err := yang.ParseDecimal(text, uint8(fd))
	if err != nil {
		return "", decimal64RangeError(s, fd)
	}
	if len(t.Range) > 0 && !t.Range.Contains(yang.YangRange{{Min: n, Max: n}}) {
		return "", fmt.Errorf("%s is outside the range %s of its type", text, t.Range)
	}
	return text, nil
}

// decimal64RangeError says that s is beyond every decimal64 with fd
// fraction digits (RFC 7950 §9.3: an int64 scaled by 10^-fd).
func decimal64RangeError(s string, fd int) error {
	top := yang.Number{Value: math.MaxInt64, FractionDigits: uint8(fd)}
	bottom := yang.Number{Value: 1 << 63, FractionDigits: uint8(fd), Negative: true}
	return fmt.Errorf("%s is out of the range of a decimal64 with %d fraction digits (%s..%s)", s, fd, bottom, top)
}
