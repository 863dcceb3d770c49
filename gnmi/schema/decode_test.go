package schema_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/goyang/pkg/yang"
)

func entryAt(t *testing.T, s *schema.Schema, path string) *yang.Entry {
	t.Helper()
	res, err := s.Resolve(store.MustPath(path))
	if err != nil || res.Entry == nil {
		t.Fatalf("resolve %s: %v", path, err)
	}
	return res.Entry
}

func jsonVal(s string) *gnmi.TypedValue {
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonVal{JsonVal: []byte(s)}}
}

func ietfVal(s string) *gnmi.TypedValue {
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(s)}}
}

// TestDecodeValueAccepts: the forms clients send for each type become the
// RFC 7951 form ygot reads.
func TestDecodeValueAccepts(t *testing.T) {
	s := newSchema(t)
	const q = "/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=0]"
	for _, tt := range []struct {
		desc string
		path string
		val  *gnmi.TypedValue
		want string
	}{
		{"decimal64 as a JSON number (gnmic's json_val)", q + "/config/alpha", jsonVal(`0.5`), `"0.5"`},
		{"decimal64 as a JSON number in json_ietf_val (gnmic -e json_ietf)", q + "/config/alpha", ietfVal(`0.5`), `"0.5"`},
		{"decimal64 as an RFC 7951 string", q + "/config/alpha", ietfVal(`"0.5"`), `"0.5"`},
		{"decimal64 with an exponent", q + "/config/alpha", jsonVal(`5e-1`), `"0.5"`},
		{"decimal64 as double_val", q + "/config/alpha", &gnmi.TypedValue{Value: &gnmi.TypedValue_DoubleVal{DoubleVal: 0.25}}, `"0.25"`},
		{"decimal64 as decimal_val", q + "/config/alpha", &gnmi.TypedValue{Value: &gnmi.TypedValue_DecimalVal{DecimalVal: &gnmi.Decimal64{Digits: 125, Precision: 2}}}, `"1.25"`},
		{"decimal64 as a JSON number with a capital exponent", q + "/config/alpha", jsonVal(`1E+2`), `"100.0"`},
		{"decimal64 as a JSON number with an exponent in json_ietf_val", q + "/config/ecn-max-probability", ietfVal(`1e-4`), `"0.0001"`},
		{"decimal64 zero with a vast exponent", q + "/config/ecn-max-probability", jsonVal(`0e-99999999999999999999`), `"0.0"`},
		{"decimal64 with trailing zeros beyond its fraction digits", q + "/config/alpha", ietfVal(`"0.50000"`), `"0.5"`},
		// gnmic's --update path:::float:::0.1 (was 0.10000000149011612,
		// more fraction digits than alpha's 3).
		{"decimal64 as gnmic's float_val", q + "/config/alpha", &gnmi.TypedValue{Value: &gnmi.TypedValue_FloatVal{FloatVal: 0.1}}, `"0.1"`},
		{"decimal64 as decimal_val with trailing zeros", q + "/config/alpha", &gnmi.TypedValue{Value: &gnmi.TypedValue_DecimalVal{DecimalVal: &gnmi.Decimal64{Digits: 5000, Precision: 4}}}, `"0.5"`},
		{"decimal64 as uint_val", q + "/config/alpha", &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: 2}}, `"2.0"`},
		{"uint64 as a JSON number", q + "/config/v-growth", jsonVal(`2500000000`), `"2500000000"`},
		{"uint64 as a string", q + "/config/v-growth", ietfVal(`"2500000000"`), `"2500000000"`},
		{"uint64 at its maximum", q + "/config/v-growth", jsonVal(`18446744073709551615`), `"18446744073709551615"`},
		{"uint64 as uint_val", q + "/config/v-growth", &gnmi.TypedValue{Value: &gnmi.TypedValue_UintVal{UintVal: 7}}, `"7"`},
		{"uint64 as a string_val of digits", q + "/config/v-growth", &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: "7"}}, `"7"`},
		{"uint8 as a number", q + "/config/id", jsonVal(`0`), `0`},
		{"uint8 as a string", q + "/config/id", ietfVal(`"0"`), `0`},
		// RFC 7950 §9.2.1: an integer's lexical form has an optional sign
		// and leading zeros; the value is taken in its canonical form
		// (§9.2.2), where Go's JSON refused "05" ("invalid number
		// literal") and "+3" was "out of the range of uint8".
		{"uint8 with leading zeros", q + "/config/id", ietfVal(`"05"`), `5`},
		{"uint8 with a plus sign", q + "/config/id", jsonVal(`"+3"`), `3`},
		{"uint8 as minus zero", q + "/config/id", jsonVal(`"-0"`), `0`},
		{"uint64 with a sign and leading zeros", q + "/config/v-growth", ietfVal(`"+0005"`), `"5"`},
		{"uint64 string_val with a plus sign", q + "/config/v-growth", &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: "+7"}}, `"7"`},
		{"uint32 with a sign and leading zeros", "/lhcnp/interfaces/interface[name=wan0]/config/rtt-est", jsonVal(`"+010000"`), `10000`},
		// §9.3.1 likewise for decimal64; a decimal64 has no negative zero.
		{"decimal64 with a plus sign and leading zeros", q + "/config/alpha", ietfVal(`"+00.50"`), `"0.5"`},
		{"decimal64 minus zero", q + "/config/ecn-max-probability", ietfVal(`"-0.0"`), `"0.0"`},
		{"uint32 as a number", "/lhcnp/interfaces/interface[name=wan0]/config/rtt-est", jsonVal(`10000`), `10000`},
		{"boolean", "/lhcnp/global/config/enabled", jsonVal(`true`), `true`},
		{"boolean as a string", "/lhcnp/global/config/enabled", jsonVal(`"false"`), `false`},
		{"enumeration", q + "/config/kmax-mode", jsonVal(`"EXPLICIT"`), `"EXPLICIT"`},
		{"enumeration as string_val", q + "/config/kmax-mode", &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: "EXPLICIT"}}, `"EXPLICIT"`},
		{"string key as a number", "/lhcnp/interfaces/interface[name=7]/config/name", jsonVal(`7`), `"7"`},
		{"container in plain JSON, numbers as numbers", q + "/config",
			jsonVal(`{"id": 0, "alpha": 0.5, "v-growth": 2500000000, "kmax-mode": "BDP_ADAPTIVE"}`),
			`{"alpha":"0.5","id":0,"kmax-mode":"BDP_ADAPTIVE","v-growth":"2500000000"}`},
		{"container in RFC 7951 with module-qualified names", q + "/config",
			ietfVal(`{"lhcnp:id": 0, "lhcnp:alpha": "0.5"}`), `{"alpha":"0.5","id":0}`},
		{"list entry with nested lists", "/lhcnp/interfaces/interface[name=wan0]",
			jsonVal(`{"name":"wan0","config":{"name":"wan0","rtt-est":20000},"queues":{"queue":[{"id":1,"config":{"id":1,"kmax":2000000}}]}}`),
			`{"config":{"name":"wan0","rtt-est":20000},"name":"wan0","queues":{"queue":[{"config":{"id":1,"kmax":"2000000"},"id":1}]}}`},
		{"the root", "/", ietfVal(`{"lhcnp:lhcnp":{"global":{"config":{"enabled":true}}}}`), `{"lhcnp":{"global":{"config":{"enabled":true}}}}`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			got, err := s.DecodeValue(entryAt(t, s, tt.path), tt.val)
			if err != nil {
				t.Fatalf("DecodeValue: %v", err)
			}
			if diff := cmp.Diff(tt.want, string(got.GetJsonIetfVal())); diff != "" {
				t.Errorf("DecodeValue (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodeValueRefuses: values that do not fit the type are refused with
// the YANG path of the fault and the reason, never converted silently.
func TestDecodeValueRefuses(t *testing.T) {
	s := newSchema(t)
	const q = "/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=0]"
	for _, tt := range []struct {
		desc string
		path string
		val  *gnmi.TypedValue
		want string
	}{
		{"fraction for an integer", q + "/config/id", jsonVal(`0.5`), `0.5 is not an integer (uint8)`},
		{"out of range", q + "/config/id", jsonVal(`256`), `256 is out of the range of uint8`},
		{"negative unsigned", q + "/config/v-growth", jsonVal(`-1`), `-1 is out of the range of uint64`},
		{"word for a number", q + "/config/v-growth", ietfVal(`"lots"`), `the string "lots" is not a uint64`},
		{"boolean for a number", q + "/config/id", jsonVal(`true`), `a boolean is not a uint8`},
		{"hex for an integer (RFC 7950 §9.2.1: a module's default alone)", q + "/config/id", ietfVal(`"0x10"`), `the string "0x10" is not a uint8: an integer is written as decimal digits after an optional sign (RFC 7950 §9.2.1)`},
		{"two signs", q + "/config/v-growth", ietfVal(`"+-5"`), `the string "+-5" is not a uint64: an integer is written as decimal digits after an optional sign (RFC 7950 §9.2.1)`},
		{"a plus sign out of range", q + "/config/id", ietfVal(`"+256"`), `+256 is out of the range of uint8`},
		{"a negative unsigned with leading zeros", q + "/config/id", ietfVal(`"-01"`), `-01 is out of the range of uint8`},
		// A list key is a path element, compared as text: in a value too
		// it is written in its canonical form (where Go's JSON refused
		// "03", "invalid number literal", and "+3" was out of range).
		{"key with leading zeros in a subtree", "/lhcnp/interfaces/interface[name=wan0]",
			jsonVal(`{"queues":{"queue":[{"id":"03"}]}}`), `queues/queue[id=03]/id: key id: the string "03" is not a uint8 in its canonical form (3)`},
		{"key with a plus sign", "/lhcnp/interfaces/interface[name=wan0]/queues",
			ietfVal(`{"queue":[{"lhcnp:id":"+3"}]}`), `queue[id=+3]/id: key id: the string "+3" is not a uint8 in its canonical form (3)`},
		{"key as a JSON number minus zero", "/lhcnp/interfaces/interface[name=wan0]/queues",
			jsonVal(`{"queue":[{"id":-0}]}`), `queue[id=-0]/id: key id: the number -0 is not a uint8 in its canonical form (0)`},
		// RFC 7950 §7.8.2, RFC 7951 §5.4: a list's keys are unique; ygot
		// kept the last of two entries silently. Keys are compared as
		// values: with or without a module prefix, a number or a string.
		{"an entry given twice (JSON)", "/lhcnp/interfaces", jsonVal(`{"interface":[{"name":"a","config":{"rtt-est":1}},{"name":"a"}]}`),
			`interface[name=a]: list entry given twice (entries 0 and 1 of the array): a list's keys are unique (RFC 7950 §7.8.2)`},
		{"an entry given twice (JSON_IETF, one with a module prefix)", "/lhcnp/interfaces", ietfVal(`{"lhcnp:interface":[{"name":"b"},{"name":"a"},{"lhcnp:name":"a"}]}`),
			`interface[name=a]: list entry given twice (entries 1 and 2 of the array): a list's keys are unique (RFC 7950 §7.8.2)`},
		{"an entry given twice, its key as a number and a string", "/lhcnp/interfaces/interface[name=wan0]/queues", jsonVal(`{"queue":[{"id":3},{"id":"3"}]}`),
			`queue[id=3]: list entry given twice (entries 0 and 1 of the array): a list's keys are unique (RFC 7950 §7.8.2)`},
		// An entry without its key: ygot refused it in its words, Go
		// types and the whole value quoted ("failed to update struct …
		// key field name (*string) has nil value <nil>").
		{"an entry without its key", "/lhcnp/interfaces", jsonVal(`{"interface":[{"config":{"name":"a","rtt-est":1}}]}`),
			`interface[0]: a list entry without its key "name"`},
		{"an entry without its key, deeper", "/lhcnp", jsonVal(`{"interfaces":{"interface":[{"name":"a","queues":{"queue":[{"id":1},{"config":{"alpha":1}}]}}]}}`),
			`interfaces/interface[name=a]/queues/queue[1]: a list entry without its key "id"`},
		{"leading zeros outside the model's range", q + "/action-policy/config/rate-reduce-percent", jsonVal(`"0101"`), `101 is outside the range 1..100 of its type`},
		{"too many fraction digits", q + "/config/alpha", jsonVal(`0.1234567`), `0.1234567 has more than the 3 fraction digits of its type`},
		{"NaN decimal", q + "/config/alpha", &gnmi.TypedValue{Value: &gnmi.TypedValue_DoubleVal{DoubleVal: nanVal()}}, `NaN is not a finite decimal64 number`},
		{"hex decimal", q + "/config/alpha", ietfVal(`"0x1p-2"`), `the string "0x1p-2" is not a decimal64 number: ` + lexical9_3_1},
		// RFC 7951 §6.1: a decimal64 in a string is RFC 7950 §9.3.1's
		// lexical form, which has no exponent and a digit before the
		// point (they were read as floats and taken).
		{"decimal64 string with an exponent", q + "/config/alpha", ietfVal(`"5e-1"`), `the string "5e-1" is not a decimal64 number: ` + lexical9_3_1},
		{"decimal64 string without a digit before the point", q + "/config/alpha", jsonVal(`".5"`), `the string ".5" is not a decimal64 number: ` + lexical9_3_1},
		{"decimal64 string_val without a digit after the point", q + "/config/alpha", &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: "5."}}, `the string "5." is not a decimal64 number: ` + lexical9_3_1},
		{"decimal64 string Infinity", q + "/config/alpha", ietfVal(`"Infinity"`), `Infinity is not a finite decimal64 number`},
		// Read exactly: a JSON number beyond a float64 is beyond the
		// decimal64 too (it was "not finite"), one below a float64's
		// smallest has too many fraction digits (it was 0 and taken).
		{"decimal64 number beyond a float64", q + "/config/alpha", jsonVal(`1e400`), `1e400 is out of the range of a decimal64 with 3 fraction digits (-9223372036854775.808..9223372036854775.807)`},
		{"decimal64 number below a float64's smallest", q + "/config/ecn-max-probability", jsonVal(`1e-400`), `1e-400 has more than the 4 fraction digits of its type`},
		{"decimal64 number with an exponent beyond int64", q + "/config/alpha", jsonVal(`1e99999999999999999999`), `1e99999999999999999999 is out of the range of a decimal64 with 3 fraction digits (-9223372036854775.808..9223372036854775.807)`},
		{"decimal64 with one digit too many beyond a float64's", q + "/config/alpha", ietfVal(`"0.10000000000000000001"`), `0.10000000000000000001 has more than the 3 fraction digits of its type`},
		{"decimal_val with a precision beyond a decimal64's", q + "/config/alpha", &gnmi.TypedValue{Value: &gnmi.TypedValue_DecimalVal{DecimalVal: &gnmi.Decimal64{Digits: 7, Precision: 4000000000}}}, `7e-4000000000 has more than the 3 fraction digits of its type`},
		{"number for an enumeration", q + "/config/kmax-mode", jsonVal(`1`), `the number 1 is not an enumeration name`},
		{"unknown enumeration name", q + "/config/kmax-mode", jsonVal(`"SOMETIMES"`), `"SOMETIMES" is not one of BDP_ADAPTIVE, EXPLICIT`},
		{"decimal64 outside the model's range", q + "/config/alpha", jsonVal(`5000`), `5000.0 is outside the range 0.001..1000.000 of its type`},
		{"integer outside the model's range", q + "/action-policy/config/rate-reduce-percent", jsonVal(`101`), `101 is outside the range 1..100 of its type`},
		{"yes for a boolean", "/lhcnp/global/config/enabled", jsonVal(`"yes"`), `the string "yes" is not a boolean`},
		// RFC 7951 §6.1: a string of the number's lexical form, which has
		// no spaces (they were trimmed; a key's value with them is refused
		// too, naming its canonical form).
		{"uint64 string with a space", q + "/config/v-growth", ietfVal(`" 5"`), `the string " 5" is not a uint64: a number in a string is written without spaces (RFC 7951 §6.1)`},
		{"uint8 string with a line break", q + "/config/id", ietfVal(`"5\n"`), `the string "5\n" is not a uint8: a number in a string is written without spaces (RFC 7951 §6.1)`},
		{"decimal64 string with spaces", q + "/config/alpha", ietfVal(`" 0.5 "`), `the string " 0.5 " is not a decimal64 number: a number in a string is written without spaces (RFC 7951 §6.1)`},
		{"uint64 string_val with a space", q + "/config/v-growth", &gnmi.TypedValue{Value: &gnmi.TypedValue_StringVal{StringVal: "7 "}}, `the string "7 " is not a uint64: a number in a string is written without spaces (RFC 7951 §6.1)`},
		{"unknown member, named by its path", q, jsonVal(`{"config":{"bogus":1}}`), `config/bogus: not in the schema`},
		{"bad value deep in a subtree", "/lhcnp/interfaces/interface[name=wan0]",
			jsonVal(`{"queues":{"queue":[{"id":1,"config":{"alpha":"x"}}]}}`),
			`queues/queue[id=1]/config/alpha: the string "x" is not a decimal64 number`},
		{"list not an array", "/lhcnp/interfaces", jsonVal(`{"interface":{"name":"a"}}`), `interface: list interface takes a JSON array of entries, not an object`},
		{"container not an object", q + "/config", jsonVal(`5`), `container config takes a JSON object, not the number 5`},
		{"foreign module", q + "/config", ietfVal(`{"openconfig-if:alpha":"1"}`), `openconfig-if:alpha: module "openconfig-if" is not served (use "lhcnp" or no prefix)`},
		{"the types module", q + "/config", ietfVal(`{"lhcnp-types:alpha":"1"}`), `lhcnp-types:alpha: module "lhcnp-types" defines types, no data nodes (every data node is in "lhcnp": use "lhcnp" or no prefix)`},
		{"same member twice", q + "/config", ietfVal(`{"lhcnp:alpha":"1","alpha":"2"}`), `alpha: member given twice (with and without module prefix)`},
		{"a member twice, the same spelling", q + "/config", ietfVal(`{"alpha":"0.5","alpha":"0.7"}`),
			`alpha: member "alpha" given twice in one object (RFC 8259 §4: the names in an object should be unique; which one was meant is not known)`},
		{"a member twice in a list entry", "/lhcnp/interfaces", jsonVal(`{"interface":[{"name":"a"},{"name":"b","config":{"name":"b","name":"b"}}]}`),
			`interface[1]/config/name: member "name" given twice in one object (RFC 8259 §4: the names in an object should be unique; which one was meant is not known)`},
		{"malformed JSON", q + "/config", jsonVal(`{"alpha":`), `malformed JSON: unexpected EOF`},
		{"trailing data", q + "/config/id", jsonVal(`1 2`), `malformed JSON: data after the value`},
		{"empty", q + "/config/id", jsonVal(``), `malformed JSON: empty value`},
		{"ascii_val", q + "/config/id", &gnmi.TypedValue{Value: &gnmi.TypedValue_AsciiVal{AsciiVal: "1"}}, `a ascii_val value is not supported: send PROTO scalars, JSON or JSON_IETF`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			_, err := s.DecodeValue(entryAt(t, s, tt.path), tt.val)
			var ve *schema.ValueError
			if !errors.As(err, &ve) {
				t.Fatalf("DecodeValue: %v, want a *ValueError", err)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

// lexical9_3_1 is why a decimal64's string is refused.
const lexical9_3_1 = "a decimal64 in a string is written as decimal digits after an optional sign, then optionally a point and more digits (RFC 7950 §9.3.1)"

func nanVal() float64 { var z float64; return z / z }

// BenchmarkDecodeValue: the cost Set pays to accept every value form, for a
// leaf (gnmic's json_val number) and a queue's config subtree.
func BenchmarkDecodeValue(b *testing.B) {
	s, err := schema.New()
	if err != nil {
		b.Fatal(err)
	}
	const q = "/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=0]"
	for _, bc := range []struct {
		name, path string
		val        *gnmi.TypedValue
	}{
		{"leaf", q + "/config/alpha", jsonVal(`0.5`)},
		{"subtree", q + "/config", jsonVal(`{"id":0,"alpha":0.5,"v-growth":2500000000,"kmax-mode":"EXPLICIT","kmax":2000000}`)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			res, err := s.Resolve(store.MustPath(bc.path))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.DecodeValue(res.Entry, bc.val); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
