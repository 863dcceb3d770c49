package schema_test

import (
	"errors"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/openconfig/goyang/pkg/yang"
)

// TestDecimal64RangeEdges: every decimal64 leaf of the model takes the
// ends of its range exactly, as a JSON string (RFC 7951) and as a JSON
// number, and refuses one unit of its last fraction digit beyond either
// end and one fraction digit more than its type has. Read through a
// float64, engine-speed's top (9223372036.854775807, 19 digits) became
// 9223372036.854776 and the value one above it was taken.
func TestDecimal64RangeEdges(t *testing.T) {
	s := newSchema(t)
	leaves := decimal64Leaves(s.Root(), "")
	if len(leaves) < 6 {
		t.Fatalf("%d decimal64 leaves, want every one of the model's (at least 6): %v", len(leaves), slices.Collect(func(yield func(string) bool) {
			for _, l := range leaves {
				yield(l.path)
			}
		}))
	}
	for _, l := range leaves {
		typ := l.e.Type
		fd := typ.FractionDigits
		ranges := typ.Range
		if len(ranges) == 0 { // the whole decimal64 of fd digits
			ranges = yang.YangRange{{Min: yang.Number{Value: 1 << 63, FractionDigits: uint8(fd), Negative: true},
				Max: yang.Number{Value: 1<<63 - 1, FractionDigits: uint8(fd)}}}
		}
		for _, r := range ranges {
			lo, hi := scaled(r.Min, fd), scaled(r.Max, fd)
			one := big.NewInt(1)
			for _, tt := range []struct {
				desc string
				v    *big.Int // the value × 10^fd
				fd   int      // fraction digits to write
				ok   bool
			}{
				{"bottom", lo, fd, true},
				{"top", hi, fd, true},
				{"below the bottom", new(big.Int).Sub(lo, one), fd, false},
				{"above the top", new(big.Int).Add(hi, one), fd, false},
				{"a fraction digit more", new(big.Int).Add(new(big.Int).Mul(lo, big.NewInt(10)), big.NewInt(5)), fd + 1, false},
			} {
				text := decimalText(tt.v, tt.fd)
				for _, form := range []string{`"` + text + `"`, text} {
					t.Run(l.path+" "+tt.desc+" "+form, func(t *testing.T) {
						got, err := schema.DecodeJSON(l.e, []byte(form))
						var ve *schema.ValueError
						switch {
						case tt.ok && err != nil:
							t.Fatalf("DecodeJSON(%s): %v", form, err)
						case tt.ok && string(got) != `"`+canonical(text)+`"`:
							t.Errorf("DecodeJSON(%s) = %s, want %q", form, got, canonical(text))
						case !tt.ok && !errors.As(err, &ve):
							t.Fatalf("DecodeJSON(%s) = %s, %v; want a *ValueError", form, got, err)
						case !tt.ok && !strings.Contains(ve.Reason, "range") && !strings.Contains(ve.Reason, "fraction digits"):
							t.Errorf("DecodeJSON(%s): %v, want the range or the fraction digits named", form, err)
						}
					})
				}
			}
		}
	}
}

type decimal64Leaf struct {
	path string
	e    *yang.Entry
}

// decimal64Leaves lists the decimal64 leaves below e, config and state.
func decimal64Leaves(e *yang.Entry, path string) []decimal64Leaf {
	var out []decimal64Leaf
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range e.Dir {
			if !yield(k) {
				return
			}
		}
	}) {
		c := e.Dir[name]
		p := path + "/" + name
		switch {
		case c.IsDir():
			out = append(out, decimal64Leaves(c, p)...)
		case c.Type != nil && c.Type.Kind == yang.Ydecimal64:
			out = append(out, decimal64Leaf{p, c})
		}
	}
	return out
}

// scaled is n × 10^fd, exactly.
func scaled(n yang.Number, fd int) *big.Int {
	v := new(big.Int).SetUint64(n.Value)
	if n.IsDecimal() {
		v.Mul(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(fd-int(n.FractionDigits))), nil))
	} else {
		v.Mul(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(fd)), nil))
	}
	if n.Negative {
		v.Neg(v)
	}
	return v
}

// decimalText writes v × 10^-fd with all fd fraction digits.
func decimalText(v *big.Int, fd int) string {
	return new(big.Rat).SetFrac(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(fd)), nil)).FloatString(fd)
}

// canonical is a decimal with all its fraction digits in the canonical
// form of RFC 7950 §9.3.2, as DecodeJSON writes it: trailing fraction
// zeros dropped but one digit kept after the point, no negative zero.
func canonical(s string) string {
	s = strings.TrimRight(s, "0")
	if strings.HasSuffix(s, ".") {
		s += "0"
	}
	if s == "-0.0" {
		return "0.0"
	}
	return s
}
