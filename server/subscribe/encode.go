package subscribe

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/openconfig/gnmi/proto/gnmi"
)

// ValueEncoder turns a stored value into the form of one gNMI encoding. It
// must not modify v; it may return v itself. The schema-aware JSON_IETF
// encoder (module-qualified names, YANG types) plugs in with WithEncoder.
type ValueEncoder interface {
	EncodeValue(p *gnmi.Path, v *gnmi.TypedValue) (*gnmi.TypedValue, error)
}

// ValueEncoderFunc adapts a function to ValueEncoder.
type ValueEncoderFunc func(p *gnmi.Path, v *gnmi.TypedValue) (*gnmi.TypedValue, error)

// EncodeValue calls f.
func (f ValueEncoderFunc) EncodeValue(p *gnmi.Path, v *gnmi.TypedValue) (*gnmi.TypedValue, error) {
	return f(p, v)
}

// ProtoEncoder sends typed values as they are stored (PROTO encoding).
var ProtoEncoder = ValueEncoderFunc(func(_ *gnmi.Path, v *gnmi.TypedValue) (*gnmi.TypedValue, error) { return v, nil })

// JSONEncoder wraps scalar values as json_val (JSON encoding): numbers as
// JSON numbers, bytes as base64 strings.
var JSONEncoder = ValueEncoderFunc(func(_ *gnmi.Path, v *gnmi.TypedValue) (*gnmi.TypedValue, error) {
	b, err := jsonValue(v, false)
	if err != nil {
		return nil, err
	}
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonVal{JsonVal: b}}, nil
})

// IETFEncoder wraps scalar values as json_ietf_val following RFC 7951 as far
// as it can without the schema: 64-bit integers as strings (the counters of
// this model are all 64-bit), other numbers as numbers. It is provisional:
// the schema-aware encoder replaces it.
var IETFEncoder = ValueEncoderFunc(func(_ *gnmi.Path, v *gnmi.TypedValue) (*gnmi.TypedValue, error) {
	b, err := jsonValue(v, true)
	if err != nil {
		return nil, err
	}
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: b}}, nil
})

func jsonValue(v *gnmi.TypedValue, ietf bool) ([]byte, error) {
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
		if ietf {
			return json.Marshal(strconv.FormatUint(x.UintVal, 10))
		}
		return strconv.AppendUint(nil, x.UintVal, 10), nil
	case *gnmi.TypedValue_IntVal:
		if ietf {
			return json.Marshal(strconv.FormatInt(x.IntVal, 10))
		}
		return strconv.AppendInt(nil, x.IntVal, 10), nil
	case *gnmi.TypedValue_DoubleVal:
		return floatJSON(x.DoubleVal)
	case *gnmi.TypedValue_FloatVal:
		return floatJSON(float64(x.FloatVal))
	case *gnmi.TypedValue_DecimalVal:
		d := x.DecimalVal
		return floatJSON(float64(d.GetDigits()) / math.Pow10(int(d.GetPrecision())))
	case *gnmi.TypedValue_BytesVal:
		return json.Marshal(base64.StdEncoding.EncodeToString(x.BytesVal))
	case *gnmi.TypedValue_LeaflistVal:
		out := []byte{'['}
		for i, e := range x.LeaflistVal.GetElement() {
			if i > 0 {
				out = append(out, ',')
			}
			b, err := jsonValue(e, ietf)
			if err != nil {
				return nil, err
			}
			out = append(out, b...)
		}
		return append(out, ']'), nil
	}
	return nil, fmt.Errorf("no JSON form for a %T value", v.GetValue())
}

// floatJSON writes a finite float as a number and NaN/±Inf as the strings
// "NaN", "Infinity", "-Infinity" (JSON has no such numbers).
func floatJSON(f float64) ([]byte, error) {
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`), nil
	case math.IsInf(f, 1):
		return []byte(`"Infinity"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Infinity"`), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}
