package store

import (
	"fmt"
	"math"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/protobuf/proto"
)

// Wildcards in subscription paths: Wildcard matches one element (as a name)
// or any key value; MultiLevel matches any number of elements, none included.
const (
	Wildcard   = "*"
	MultiLevel = "..."
)

// Pattern is a compiled subscription path: prefix and path joined, with
// "*" names, "*" or omitted keys, and "..." levels. A Pattern matches every
// leaf at or below the nodes it names.
type Pattern struct {
	elems []pelem
}

type pelem struct {
	name   string
	multi  bool
	keys   map[string]string // without wildcard keys
	exact  bool              // no wildcard key was given: a direct lookup may hit
	keyStr string
}

// matches reports whether a concrete element satisfies the pattern element's
// name-independent key filter: every key given must be present and equal.
func (e *pelem) matches(pe *gnmi.PathElem) bool {
	for k, v := range e.keys {
		if got, ok := pe.GetKey()[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// PatternError is a path NewPattern refuses. Path names the part at fault
// (the prefix or the path, ErrorPath), for a caller that names it itself
// ("path /a/b: ..."): that caller reports Why. At is prefix + path up to the
// element at fault when that ends before them, "" else (docs/gnmi.md,
// "Errors": a path is named once, the part at fault only when shorter).
type PatternError struct {
	Path   string
	At     string
	Reason string
}

func (e *PatternError) Error() string {
	if e.Path == "" {
		return e.Why()
	}
	return e.Path + ": " + e.Why()
}

// Why is the error without Path: Reason, after At when there is one.
func (e *PatternError) Why() string {
	if e.At == "" {
		return e.Reason
	}
	return e.At + ": " + e.Reason
}

// NewPattern compiles prefix + p (either may be nil). Origin and target are
// ignored; the caller checks them. An error is a *PatternError.
func NewPattern(prefix, p *gnmi.Path) (Pattern, error) {
	var pat Pattern
	for _, part := range []*gnmi.Path{prefix, p} {
		refuse := func(reason string) (Pattern, error) {
			return Pattern{}, &PatternError{Path: ErrorPath(part), Reason: reason}
		}
		if len(part.GetElement()) > 0 && len(part.GetElem()) == 0 {
			return refuse("the deprecated element field is not supported")
		}
		for _, pe := range part.GetElem() {
			// refuseAt names prefix + p up to pe, unless pe is their last.
			refuseAt := func(reason string) (Pattern, error) {
				_, err := refuse(reason)
				if at, total := len(pat.elems)+1, len(prefix.GetElem())+len(p.GetElem()); at < total {
					elems := append(append([]*gnmi.PathElem(nil), prefix.GetElem()...), p.GetElem()...)
					err.(*PatternError).At = ErrorPath(&gnmi.Path{Elem: elems[:at]})
				}
				return Pattern{}, err
			}
			switch pe.GetName() {
			case "":
				return refuseAt("empty element name")
			case MultiLevel:
				if len(pe.GetKey()) > 0 {
					return refuseAt(fmt.Sprintf("%q cannot have keys", MultiLevel))
				}
				pat.elems = append(pat.elems, pelem{name: MultiLevel, multi: true})
				continue
			}
			e := pelem{name: pe.GetName(), exact: true}
			for k, v := range pe.GetKey() {
				if v == Wildcard {
					e.exact = false
					continue
				}
				if e.keys == nil {
					e.keys = map[string]string{}
				}
				e.keys[k] = v
			}
			if e.exact {
				e.keyStr = keyString(e.keys)
			}
			pat.elems = append(pat.elems, e)
		}
	}
	return pat, nil
}

// MustPattern is NewPattern for tests and constant paths; it panics on error.
func MustPattern(prefix, p *gnmi.Path) Pattern {
	pat, err := NewPattern(prefix, p)
	if err != nil {
		panic(err)
	}
	return pat
}

// Concrete reports whether the pattern names exactly one node: no wildcard,
// no "...". (Omitted keys cannot be told from an unkeyed element without the
// schema, so a Concrete pattern may still match several list entries.)
func (p Pattern) Concrete() bool {
	for _, e := range p.elems {
		if e.multi || e.name == Wildcard || !e.exact {
			return false
		}
	}
	return true
}

// String renders the pattern like PathString ("/a/b[k=v]/*/..."), keys
// sorted and wildcard keys left out (they match like omitted ones), so
// patterns that match the same leaves render the same.
func (p Pattern) String() string {
	path := &gnmi.Path{Elem: make([]*gnmi.PathElem, len(p.elems))}
	for i, e := range p.elems {
		path.Elem[i] = &gnmi.PathElem{Name: e.name, Key: e.keys}
	}
	return PathString(path)
}

// Len returns the number of elements in the pattern.
func (p Pattern) Len() int { return len(p.elems) }

// EqualValues reports whether two typed values are equal, with fast paths for
// the scalar types that telemetry uses. Floats compare by bits, so a NaN that
// stays NaN is no change.
func EqualValues(a, b *gnmi.TypedValue) bool {
	switch av := a.GetValue().(type) {
	case *gnmi.TypedValue_UintVal:
		bv, ok := b.GetValue().(*gnmi.TypedValue_UintVal)
		return ok && av.UintVal == bv.UintVal
	case *gnmi.TypedValue_IntVal:
		bv, ok := b.GetValue().(*gnmi.TypedValue_IntVal)
		return ok && av.IntVal == bv.IntVal
	case *gnmi.TypedValue_StringVal:
		bv, ok := b.GetValue().(*gnmi.TypedValue_StringVal)
		return ok && av.StringVal == bv.StringVal
	case *gnmi.TypedValue_BoolVal:
		bv, ok := b.GetValue().(*gnmi.TypedValue_BoolVal)
		return ok && av.BoolVal == bv.BoolVal
	case *gnmi.TypedValue_DoubleVal:
		bv, ok := b.GetValue().(*gnmi.TypedValue_DoubleVal)
		return ok && math.Float64bits(av.DoubleVal) == math.Float64bits(bv.DoubleVal)
	}
	return proto.Equal(a, b)
}
