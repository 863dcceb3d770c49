package subscribe

import (
	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/lhcnp/lhcnp/gnmi/jsonval"
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
	b, err := jsonval.Marshal(v, jsonval.Style{})
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
	b, err := jsonval.Marshal(v, ietfStyle)
	if err != nil {
		return nil, err
	}
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: b}}, nil
})

// ietfStyle is RFC 7951 without the schema: every integer quoted (the
// model's counters are all 64-bit), floats as numbers.
var ietfStyle = jsonval.Style{QuoteUint: true, QuoteInt: true}
