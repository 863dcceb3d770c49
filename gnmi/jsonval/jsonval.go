// Package jsonval writes a gNMI TypedValue as JSON text, for the json_val and
// json_ietf_val encodings. What RFC 7951 wants quoted depends on the leaf's
// YANG type, which only a caller with the schema knows, so the caller says it
// with a Style. Used by gnmi/schema (schema-aware) and gnmi/subscribe
// (its schema-less default).
//
// It depends on the gNMI protos only.
package jsonval

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/openconfig/gnmi/proto/gnmi"
)

// Style says which numbers are written as JSON strings (RFC 7951 §6.1:
// 64-bit integers and decimal64 are strings in JSON_IETF). The zero Style
// writes every number as a number: the plain JSON encoding.
type Style struct {
	QuoteUint    bool // uint_val
	QuoteInt     bool // int_val
	QuoteFloat   bool // double_val, float_val
	QuoteDecimal bool // decimal_val
}

// Marshal writes v as JSON. json_val and json_ietf_val pass through; NaN
// and ±Inf become the strings "NaN", "Infinity" and "-Infinity" (JSON has
// no such numbers); bytes are base64 strings; a leaf-list is an array of
// its elements in the same style.
func Marshal(v *gnmi.TypedValue, s Style) ([]byte, error) {
	switch x := v.GetValue().(type) {
	case *gnmi.TypedValue_JsonVal:
		return x.JsonVal, nil
	case *gnmi.TypedValue_JsonIetfVal:
		return x.JsonIetfVal, nil
	case *gnmi.TypedValue_StringVal:
		return json.Marshal(x.StringVal)
	case *gnmi.TypedValue_BoolVal:
		return strconv.AppendBool(nil, x.BoolVal), nil
	case *gnmi.TypedValue_UintVal:
		return quoted(strconv.AppendUint(nil, x.UintVal, 10), s.QuoteUint), nil
	case *gnmi.TypedValue_IntVal:
		return quoted(strconv.AppendInt(nil, x.IntVal, 10), s.QuoteInt), nil
	case *gnmi.TypedValue_DoubleVal:
		return float(x.DoubleVal, 64, s.QuoteFloat), nil
	case *gnmi.TypedValue_FloatVal:
		// The shortest text that reads back as the float32 (gnmic's
		// "float" sends 0.1 as one), not the float64 it widens to
		// (0.10000000149011612).
		return float(float64(x.FloatVal), 32, s.QuoteFloat), nil
	case *gnmi.TypedValue_DecimalVal:
		return quoted(decimal(x.DecimalVal), s.QuoteDecimal), nil
	case *gnmi.TypedValue_BytesVal:
		return json.Marshal(base64.StdEncoding.EncodeToString(x.BytesVal))
	case *gnmi.TypedValue_LeaflistVal:
		out := []byte{'['}
		for i, e := range x.LeaflistVal.GetElement() {
			if i > 0 {
				out = append(out, ',')
			}
			b, err := Marshal(e, s)
			if err != nil {
				return nil, err
			}
			out = append(out, b...)
		}
		return append(out, ']'), nil
	}
	return nil, fmt.Errorf("no JSON form for a %T value", v.GetValue())
}

// quoted wraps a number's digits in quotes when q (digits need no escaping).
func quoted(digits []byte, q bool) []byte {
	if !q {
		return digits
	}
	out := make([]byte, 0, len(digits)+2)
	out = append(out, '"')
	out = append(out, digits...)
	return append(out, '"')
}

// decimal writes d's value exactly (digits × 10^-precision: a float64
// would keep about 16 of a decimal64's 19 digits), in a decimal64's
// canonical form (RFC 7950 §9.3.2: a digit at least on each side of the
// point, no other leading or trailing zeros: "3.0", "0.0"). A precision beyond any decimal64's
// (18) and the 19 digits an int64 has is written with an exponent
// ("1e-4000000000" rather than four billion zeros), which a JSON number
// may have.
func decimal(d *gnmi.Decimal64) []byte {
	digits := strconv.FormatInt(d.GetDigits(), 10)
	sign := ""
	if strings.HasPrefix(digits, "-") {
		sign, digits = "-", digits[1:]
	}
	prec := int(d.GetPrecision())
	switch {
	case digits == "0":
		return []byte("0.0")
	case prec == 0:
		return []byte(sign + digits + ".0")
	case prec > 40:
		return []byte(sign + digits + "e-" + strconv.Itoa(prec))
	}
	if len(digits) <= prec {
		digits = strings.Repeat("0", prec-len(digits)+1) + digits
	}
	point := len(digits) - prec
	frac := strings.TrimRight(digits[point:], "0")
	if frac == "" {
		frac = "0"
	}
	return []byte(sign + digits[:point] + "." + frac)
}

// float writes a finite float in plain decimal notation (no exponent, as
// RFC 7951 decimal64 needs when quoted), the shortest that reads back as
// the float of bitSize bits.
func float(f float64, bitSize int, q bool) []byte {
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`)
	case math.IsInf(f, 1):
		return []byte(`"Infinity"`)
	case math.IsInf(f, -1):
		return []byte(`"-Infinity"`)
	}
	return quoted(strconv.AppendFloat(nil, f, 'f', -1, bitSize), q)
}
