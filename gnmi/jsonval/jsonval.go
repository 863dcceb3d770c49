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
		return float(x.DoubleVal, s.QuoteFloat), nil
	case *gnmi.TypedValue_FloatVal:
		return float(float64(x.FloatVal), s.QuoteFloat), nil
	case *gnmi.TypedValue_DecimalVal:
		d := x.DecimalVal
		return float(float64(d.GetDigits())/math.Pow10(int(d.GetPrecision())), s.QuoteDecimal), nil
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

// float writes a finite float in plain decimal notation (no exponent, as
// RFC 7951 decimal64 needs when quoted).
func float(f float64, q bool) []byte {
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`)
	case math.IsInf(f, 1):
		return []byte(`"Infinity"`)
	case math.IsInf(f, -1):
		return []byte(`"-Infinity"`)
	}
	return quoted(strconv.AppendFloat(nil, f, 'f', -1, 64), q)
}
