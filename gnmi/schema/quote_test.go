package schema

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/goyang/pkg/yang"
)

// TestRequestTextQuotedOnce: a name, key or value a request gave reads in an
// error as %q writes it, as decode.go's value errors do: a newline escaped
// once (\n, not \\n as %q of store.ErrorText's text gave) and a quote as \".
// Each message that quotes such text, with an element holding a newline and
// one holding a quote.
func TestRequestTextQuotedOnce(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	resolve := func(list string, key map[string]string) func() error {
		return func() error {
			p := &gnmi.Path{}
			for _, n := range strings.Split(strings.TrimPrefix(list, "/"), "/") {
				p.Elem = append(p.Elem, &gnmi.PathElem{Name: n})
			}
			p.Elem[len(p.Elem)-1].Key = key
			_, err := s.Resolve(p)
			return err
		}
	}
	keyed := func(typ *yang.YangType, v string) func() error {
		e := &yang.Entry{Name: "l", Key: "k", Dir: map[string]*yang.Entry{"k": {Name: "k", Type: typ}}}
		return func() error { return checkKeyValue(e, "k", v) }
	}
	enum := yang.NewEnumType()
	if err := enum.Set("ONE", 1); err != nil {
		t.Fatal(err)
	}
	enumType := &yang.YangType{Kind: yang.Yenum, Enum: enum}
	patternType := &yang.YangType{Name: "word", Kind: yang.Ystring, Pattern: []string{"[a-z]+"}}
	const ifaces, receivers = "/lhcnp/interfaces/interface", "/lhcnp/global/rocev2-receivers/receiver"
	const policies, queues = "/lhcnp/rate-advice/policies/policy", ifaces + "/queues/queue"
	long := strings.Repeat("x", 63)
	for _, tt := range []struct {
		desc string
		err  func() error
		want string
	}{
		{"no such key, newline", resolve(ifaces, map[string]string{"a\nb": "x"}),
			`malformed path: interface has no key "a\nb" (keys: name)`},
		{"no such key, quote", resolve(ifaces, map[string]string{`a"b`: "x"}),
			`malformed path: interface has no key "a\"b" (keys: name)`},
		{"not an enumeration name, newline", keyed(enumType, "a\nb"), `"a\nb" is not one of ONE`},
		{"not an enumeration name, quote", keyed(enumType, `a"b`), `"a\"b" is not one of ONE`},
		{"not of the key's type, newline", resolve(queues, map[string]string{"id": "a\nb"}),
			`malformed path: queue key id: "a\nb" is not a uint8 in 0..15`},
		{"not of the key's type, quote", resolve(queues, map[string]string{"id": `1"`}),
			`malformed path: queue key id: "1\"" is not a uint8 in 0..15`},
		{"outside the length, newline", resolve(policies, map[string]string{"name": "a\n" + long}),
			`malformed path: policy key name: "a\n` + long + `" is outside the length 1..64 of its type`},
		{"outside the length, quote", resolve(policies, map[string]string{"name": `a"` + long}),
			`malformed path: policy key name: "a\"` + long + `" is outside the length 1..64 of its type`},
		{"outside the pattern, newline", keyed(patternType, "a\nb"), `"a\nb" does not match the pattern of word`},
		{"outside the pattern, quote", keyed(patternType, `a"b`), `"a\"b" does not match the pattern of word`},
		{"no member of the union, newline", resolve(receivers, map[string]string{"prefix": "a\nb"}),
			`malformed path: receiver key prefix: "a\nb" is not of type ip-prefix (ipv4-prefix or ipv6-prefix)`},
		{"no member of the union, quote", resolve(receivers, map[string]string{"prefix": `a"b`}),
			`malformed path: receiver key prefix: "a\"b" is not of type ip-prefix (ipv4-prefix or ipv6-prefix)`},
		{"origin not served, newline", func() error { return CheckOrigin("a\nb") },
			`origin "a\nb" is not served (use "lhcnp", "openconfig" or none)`},
		{"origin not served, quote", func() error { return CheckOrigin(`a"b`) },
			`origin "a\"b" is not served (use "lhcnp", "openconfig" or none)`},
		{"origin twice", func() error {
			return CheckPathOrigin(&gnmi.Path{Origin: "openconfig"}, &gnmi.Path{Origin: "lhcnp"})
		}, `origin "lhcnp" in the path and "openconfig" in the prefix: give it in one of them (gNMI 2.7)`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			err := tt.err()
			if err == nil {
				t.Fatal("no error")
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error (-want, +got):\n%s", diff)
			}
		})
	}
}

// TestQuoteCut: quote cuts as store.ErrorText does, counting the escaped
// text and at a character's start, and says how long the text was.
func TestQuoteCut(t *testing.T) {
	x := strings.Repeat("x", 511)
	for _, tt := range []struct {
		desc, in, want string
	}{
		{"short", "a\x00\xff\u2028\\", `"a\x00\xff\u2028\\"`},
		{"at the bound", x + "y", `"` + x + `y"`},
		{"over the bound", x + "yz", `"` + x + `y"… (513 bytes)`},
		{"an escape across the bound", x + "\n", `"` + x + `"… (512 bytes)`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, quote(tt.in)); diff != "" {
				t.Errorf("quote (-want, +got):\n%s", diff)
			}
		})
	}
}
