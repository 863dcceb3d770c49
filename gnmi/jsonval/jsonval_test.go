package jsonval

import (
	"math"
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"
)

func TestMarshal(t *testing.T) {
	ietf := Style{QuoteUint: true, QuoteInt: true, QuoteFloat: true, QuoteDecimal: true}
	leaflist := &gnmi.TypedValue{Value: &gnmi.TypedValue_LeaflistVal{LeaflistVal: &gnmi.ScalarArray{Element: []*gnmi.TypedValue{
		{Value: &gnmi.TypedValue_UintVal{UintVal: 1}}, {Value: &gnmi.TypedValue_StringVal{StringVal: "a"}}}}}}
	for _, tt := range []struct {
		desc  string
		v     *gnmi.TypedValue
		style Style
		want  string
	}{
		{"string", &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: `a"b`}}, Style{}, `"a\"b"`},
		{"bool", &gnmi.TypedValue{Value: &gnmi.TypedValue_BoolVal{BoolVal: true}}, ietf, `true`},
		{"uint plain", &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: 18446744073709551615}}, Style{}, `18446744073709551615`},
		{"uint quoted", &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: 42}}, ietf, `"42"`},
		{"int quoted", &gnmi.TypedValue{Value: &gnmi.TypedValue_IntVal{IntVal: -7}}, ietf, `"-7"`},
		{"double plain, no exponent", &gnmi.TypedValue{Value: &gnmi.TypedValue_DoubleVal{DoubleVal: 1e21}}, Style{}, `1000000000000000000000`},
		{"double quoted", &gnmi.TypedValue{Value: &gnmi.TypedValue_DoubleVal{DoubleVal: 0.5}}, ietf, `"0.5"`},
		{"nan", &gnmi.TypedValue{Value: &gnmi.TypedValue_DoubleVal{DoubleVal: math.NaN()}}, Style{}, `"NaN"`},
		{"-inf", &gnmi.TypedValue{Value: &gnmi.TypedValue_FloatVal{FloatVal: float32(math.Inf(-1))}}, Style{}, `"-Infinity"`},
		{"decimal", &gnmi.TypedValue{Value: &gnmi.TypedValue_DecimalVal{DecimalVal: &gnmi.Decimal64{Digits: 125, Precision: 1}}}, Style{QuoteDecimal: true}, `"12.5"`},
		// A decimal_val exactly, all 19 digits of an int64 (through a
		// float64 the last three were lost: "9223372036.854776").
		{"decimal, every digit of an int64", &gnmi.TypedValue{Value: &gnmi.TypedValue_DecimalVal{DecimalVal: &gnmi.Decimal64{Digits: math.MaxInt64, Precision: 9}}}, Style{}, `9223372036.854775807`},
		{"decimal, the smallest int64", &gnmi.TypedValue{Value: &gnmi.TypedValue_DecimalVal{DecimalVal: &gnmi.Decimal64{Digits: math.MinInt64, Precision: 18}}}, Style{}, `-9.223372036854775808`},
		{"decimal below one, trailing zeros dropped", &gnmi.TypedValue{Value: &gnmi.TypedValue_DecimalVal{DecimalVal: &gnmi.Decimal64{Digits: -50, Precision: 4}}}, Style{}, `-0.005`},
		{"decimal, integral", &gnmi.TypedValue{Value: &gnmi.TypedValue_DecimalVal{DecimalVal: &gnmi.Decimal64{Digits: 3000, Precision: 3}}}, Style{}, `3.0`},
		{"decimal zero", &gnmi.TypedValue{Value: &gnmi.TypedValue_DecimalVal{DecimalVal: &gnmi.Decimal64{Digits: 0, Precision: 2}}}, Style{QuoteDecimal: true}, `"0.0"`},
		{"decimal without a precision", &gnmi.TypedValue{Value: &gnmi.TypedValue_DecimalVal{DecimalVal: &gnmi.Decimal64{Digits: -7}}}, Style{}, `-7.0`},
		{"decimal, a precision beyond any decimal64's: an exponent", &gnmi.TypedValue{Value: &gnmi.TypedValue_DecimalVal{DecimalVal: &gnmi.Decimal64{Digits: 7, Precision: 4000000000}}}, Style{}, `7e-4000000000`},
		// gnmic's "float" type sends a float_val: 0.1 is the float32
		// nearest 0.1, not the float64 0.10000000149011612 it widens to.
		{"float, shortest as a float32", &gnmi.TypedValue{Value: &gnmi.TypedValue_FloatVal{FloatVal: 0.1}}, Style{}, `0.1`},
		{"bytes", &gnmi.TypedValue{Value: &gnmi.TypedValue_BytesVal{BytesVal: []byte{1, 2}}}, Style{}, `"AQI="`},
		{"leaf-list", leaflist, ietf, `["1","a"]`},
		{"json passes through", &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonVal{JsonVal: []byte(`{"a":1}`)}}, ietf, `{"a":1}`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			got, err := Marshal(tt.v, tt.style)
			if err != nil || string(got) != tt.want {
				t.Errorf("Marshal = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
	if _, err := Marshal(&gnmi.TypedValue{}, Style{}); err == nil {
		t.Error("an empty value marshalled without error")
	}
}
