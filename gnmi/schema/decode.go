package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/lhcnp/lhcnp/gnmi/jsonval"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/internal/jsonpos"
	"github.com/lhcnp/lhcnp/internal/plural"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/goyang/pkg/yang"
)

// ValueError is a value that does not fit the schema node it was sent for.
// Path is where in the value the fault is, relative to the node the value
// was sent for ("" for the node itself, "queues/queue[id=3]/config/alpha"
// inside a subtree), so that the caller can prefix the request's path.
type ValueError struct {
	Path   string
	Reason string
	// At is Path with the list entry at fault selected by its index
	// ("interfaces/interface[1]") when Path's keys select another entry
	// first (a second entry with the keys of one before it): where in
	// the document the fault is. "" when Path is.
	At string
}

// Error names the path and the reason each cut as store.ErrorText cuts a
// request's path: a value a client sent may be megabytes (a string given
// for a boolean, an unknown member's name), which the reason quotes.
func (e *ValueError) Error() string {
	if e.Path == "" {
		return store.ErrorText(e.Reason)
	}
	return store.ErrorText(e.Path) + ": " + store.ErrorText(e.Reason)
}

// DecodeValue checks a value a client sent for the schema node e (a leaf, a
// container or one list entry) and returns it as the RFC 7951 JSON that
// ygot unmarshals, as a json_ietf_val. It is liberal in what it accepts, as
// common targets are:
//
//   - json_val (the JSON encoding, gnmic's default) and json_ietf_val alike,
//     for leaves and subtrees; member names with or without a module prefix
//     (one of our modules);
//   - for 64-bit integers and decimal64 a JSON number or a string (RFC 7951
//     wants a string; JSON and most clients send a number); for the other
//     integer types a number or a string of digits; for booleans true/false
//     or the strings "true"/"false"; for strings and enumerations a string
//     (a number is taken as its text);
//   - PROTO scalars of any numeric kind for a numeric leaf, a string_val of
//     digits, a decimal_val, a double_val.
//
// It is strict about what the YANG type allows: an integer must be an
// integer within the range of its type (0.5 is not a uint8, whatever
// float-to-int conversion would make of it), a decimal64 is read exactly
// (never through a float64) and must have at most the type's fraction
// digits, a string of one RFC 7950 §9.3.1's form (a JSON number may have
// an exponent); a member must be in the schema.
// Ranges and patterns of the model are left to ygot's validation.
func (s *Schema) DecodeValue(e *yang.Entry, v *gnmi.TypedValue) (*gnmi.TypedValue, error) {
	var text []byte
	switch x := v.GetValue().(type) {
	case *gnmi.TypedValue_JsonVal:
		text = x.JsonVal
	case *gnmi.TypedValue_JsonIetfVal:
		text = x.JsonIetfVal
	case *gnmi.TypedValue_AnyVal, *gnmi.TypedValue_AsciiVal, *gnmi.TypedValue_ProtoBytes:
		return nil, &ValueError{Reason: fmt.Sprintf("a %s value is not supported: send PROTO scalars, JSON or JSON_IETF", valueKind(v))}
	default:
		b, err := jsonval.Marshal(v, jsonval.Style{})
		if err != nil {
			return nil, &ValueError{Reason: err.Error()}
		}
		text = b
	}
	out, err := DecodeJSON(e, text)
	if err != nil {
		return nil, err
	}
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: out}}, nil
}

func valueKind(v *gnmi.TypedValue) string {
	switch v.GetValue().(type) {
	case *gnmi.TypedValue_AnyVal:
		return "any_val"
	case *gnmi.TypedValue_AsciiVal:
		return "ascii_val"
	case *gnmi.TypedValue_ProtoBytes:
		return "proto_bytes"
	}
	return fmt.Sprintf("%T", v.GetValue())
}

// DecodeJSON is DecodeValue for JSON text: it parses data as the value of
// the schema node e and writes it back in RFC 7951 form (64-bit integers and
// decimal64 as strings, other numbers as numbers, member names without
// module prefixes). A malformed document or one that does not fit the
// schema is a *ValueError; it never panics.
func DecodeJSON(e *yang.Entry, data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, &ValueError{Reason: "malformed JSON: " + jsonErr(err)}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &ValueError{Reason: "malformed JSON: data after the value"}
	}
	var out any
	var err error
	if e.IsDir() {
		// A container, the root, or one list entry (a path with every
		// key): an object of members.
		out, err = decodeDir(e, v, "")
	} else {
		out, err = decodeNode(e, v, "")
	}
	if err != nil {
		return nil, err
	}
	// A member given twice in one object: encoding/json kept the last
	// one silently ({"alpha": "0.5", "alpha": "0.7"} set 0.7). RFC 8259
	// §4 leaves what such an object means to the receiver, and a YANG
	// leaf or container is one member of its parent's object (RFC 7951
	// §5.1, §5.3): the client meant one of the two, and which is not
	// ours to guess. Checked after the schema's checks, which name the
	// same member with and without its module prefix in their words.
	var dup *jsonpos.Error
	if errors.As(jsonpos.Check(data), &dup) && dup.Path != "" {
		return nil, &ValueError{Path: dup.Path, Reason: fmt.Sprintf("member %q given twice in one object (RFC 8259 §4: the names in an object should be unique; which one was meant is not known)", dup.Path[strings.LastIndexByte(dup.Path, '/')+1:])}
	}
	b, merr := json.Marshal(out)
	if merr != nil {
		return nil, &ValueError{Reason: merr.Error()}
	}
	return b, nil
}

func jsonErr(err error) string {
	if errors.Is(err, io.EOF) {
		return "empty value"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "/" + name
}

// decodeNode decodes the value of a member whose schema node is e.
func decodeNode(e *yang.Entry, v any, path string) (any, error) {
	switch {
	case e.IsList():
		arr, ok := v.([]any)
		if !ok {
			return nil, &ValueError{Path: path, Reason: fmt.Sprintf("list %s takes a JSON array of entries, not %s", e.Name, jsonKind(v))}
		}
		out := make([]any, len(arr))
		seen := make(map[string]int, len(arr)) // entry's keys → its index
		for i, el := range arr {
			label := listLabel(e, el, i)
			d, err := decodeDir(e, el, path+label)
			if err != nil {
				return nil, err
			}
			if e.Key == "" { // a keyless (state) list: entries are not told apart
				out[i] = d
				continue
			}
			keys, missing := entryKeys(e, d)
			if len(missing) > 0 {
				return nil, &ValueError{Path: path + label, Reason: fmt.Sprintf("a list entry without its %s %s", plural.Noun(len(missing), "key"), quoteAll(missing))}
			}
			// RFC 7950 §7.8.2, RFC 7951 §5.4: a list's keys are
			// unique. ygot kept the last entry silently.
			if j, dup := seen[keys]; dup {
				return nil, &ValueError{Path: path + label, At: fmt.Sprintf("%s[%d]", path, i),
					Reason: fmt.Sprintf("list entry given twice (entries %d and %d of the array): a list's keys are unique (RFC 7950 §7.8.2)", j, i)}
			}
			seen[keys] = i
			out[i] = d
		}
		return out, nil
	case e.IsDir():
		return decodeDir(e, v, path)
	case e.IsLeafList():
		arr, ok := v.([]any)
		if !ok {
			return nil, &ValueError{Path: path, Reason: fmt.Sprintf("leaf-list %s takes a JSON array, not %s", e.Name, jsonKind(v))}
		}
		out := make([]any, len(arr))
		for i, el := range arr {
			d, err := decodeLeaf(resolveType(e), el, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out[i] = d
		}
		return out, nil
	case e.IsLeaf():
		return decodeLeaf(resolveType(e), v, path)
	}
	return v, nil
}

// listLabel names a list entry in errors by its keys when the entry has
// them ("[name=wan0]"), else by its index ("[2]").
func listLabel(e *yang.Entry, el any, i int) string {
	obj, _ := el.(map[string]any)
	var kv []string
	for _, k := range strings.Fields(e.Key) {
		for name, v := range obj {
			if stripModule(name) == k {
				kv = append(kv, fmt.Sprintf("%s=%v", k, v))
			}
		}
	}
	if len(kv) == 0 {
		return fmt.Sprintf("[%d]", i)
	}
	return "[" + strings.Join(kv, ",") + "]"
}

// entryKeys returns the values of the keys of the list e in d, a decoded
// entry (member names without module prefixes, keys in their canonical
// form), as one string that is the same for two entries exactly when
// their keys are; missing names the keys d lacks.
func entryKeys(e *yang.Entry, d any) (keys string, missing []string) {
	obj, _ := d.(map[string]any)
	var b strings.Builder
	for _, k := range strings.Fields(e.Key) {
		v, ok := obj[k]
		if !ok {
			missing = append(missing, k)
			continue
		}
		fmt.Fprintf(&b, "%q ", fmt.Sprint(v))
	}
	return b.String(), missing
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// decodeDir decodes an object whose members are e's children.
func decodeDir(e *yang.Entry, v any, path string) (any, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		what := "container"
		if e.IsList() {
			what = "list entry"
		}
		return nil, &ValueError{Path: path, Reason: fmt.Sprintf("%s %s takes a JSON object, not %s", what, e.Name, jsonKind(v))}
	}
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	sort.Strings(names) // deterministic errors
	out := make(map[string]any, len(obj))
	for _, member := range names {
		name := member
		if i := strings.IndexByte(member, ':'); i >= 0 {
			mod := member[:i]
			if mod != ModuleName {
				return nil, &ValueError{Path: join(path, member), Reason: moduleErr(mod)}
			}
			name = member[i+1:]
		}
		c := e.Dir[name]
		if c == nil {
			return nil, &ValueError{Path: join(path, name), Reason: ErrUnknown.Error()}
		}
		if _, dup := out[name]; dup {
			return nil, &ValueError{Path: join(path, name), Reason: "member given twice (with and without module prefix)"}
		}
		d, err := decodeNode(c, obj[member], join(path, name))
		if err != nil {
			return nil, err
		}
		if err := checkKeyForm(e, c, obj[member], d, join(path, name)); err != nil {
			return nil, err
		}
		out[name] = d
	}
	return out, nil
}

// checkKeyForm refuses a list entry's key member c of e whose value v is
// a number in another form than its canonical one d ("03", "+3" for 3):
// a key is a path element, compared as text, as a path's key in that
// form is refused (checkKeyValue).
func checkKeyForm(e, c *yang.Entry, v, d any, path string) error {
	if !e.IsList() || !slices.Contains(strings.Fields(e.Key), c.Name) {
		return nil
	}
	var text string
	switch x := v.(type) {
	case json.Number:
		text = string(x)
	case string:
		text = x
	default:
		return nil
	}
	if canon := fmt.Sprint(d); canon != text {
		return &ValueError{Path: path, Reason: fmt.Sprintf("key %s: %s is not a %s in its canonical form (%s)", c.Name, jsonKind(v), resolveType(c).Kind, canon)}
	}
	return nil
}

func jsonKind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "the number " + string(x)
	case string:
		return fmt.Sprintf("the string %q", x)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// decodeLeaf checks a scalar against the leaf's type and returns it in
// RFC 7951 form.
func decodeLeaf(t *yang.YangType, v any, path string) (any, error) {
	if t == nil {
		return v, nil
	}
	bad := func(format string, args ...any) error {
		return &ValueError{Path: path, Reason: fmt.Sprintf(format, args...)}
	}
	// A number or a string of one: the text of the number. A string is
	// the number's lexical form (RFC 7951 §6.1, RFC 7950 §9.2.1: a sign,
	// digits), without spaces, which a key's value cannot have either;
	// the value is returned in its canonical form (§9.2.2), which is also
	// the only one JSON's numbers take ("05" and "+5" are 5).
	numText := func() (string, bool) {
		switch x := v.(type) {
		case json.Number:
			return string(x), true
		case string:
			return x, true
		}
		return "", false
	}
	spaced := func(s, what string) error {
		if strings.TrimSpace(s) == s {
			return nil
		}
		return bad("%s is not a %s: a number in a string is written without spaces (RFC 7951 §6.1)", jsonKind(v), what)
	}
	switch t.Kind {
	case yang.Yint8, yang.Yint16, yang.Yint32, yang.Yint64,
		yang.Yuint8, yang.Yuint16, yang.Yuint32, yang.Yuint64:
		s, ok := numText()
		if !ok {
			return nil, bad("%s is not a %s", jsonKind(v), t.Kind)
		}
		if err := spaced(s, t.Kind.String()); err != nil {
			return nil, err
		}
		c, lexical := canonicalIntText(s)
		if !lexical {
			if _, ferr := strconv.ParseFloat(s, 64); ferr == nil {
				return nil, bad("%s is not an integer (%s)", s, t.Kind)
			}
			if _, isString := v.(string); isString && strings.ContainsAny(s, "0123456789") {
				return nil, bad("%s is not a %s: an integer is written as decimal digits after an optional sign (RFC 7950 §9.2.1)", jsonKind(v), t.Kind)
			}
			return nil, bad("%s is not a %s", jsonKind(v), t.Kind)
		}
		// c is digits after an optional "-": what strconv refuses is
		// out of the type's range, a negative unsigned included.
		bits, signed := intType(t.Kind)
		var err error
		if signed {
			_, err = strconv.ParseInt(c, 10, bits)
		} else {
			_, err = strconv.ParseUint(c, 10, bits)
		}
		if err != nil {
			return nil, bad("%s is out of the range of %s", s, t.Kind)
		}
		if err := checkRange(t, c); err != nil {
			return nil, &ValueError{Path: path, Reason: err.Error()}
		}
		if bits == 64 {
			return c, nil // RFC 7951 §6.1: a string
		}
		return json.Number(c), nil
	case yang.Ydecimal64:
		s, ok := numText()
		if !ok {
			return nil, bad("%s is not a decimal64 number", jsonKind(v))
		}
		if err := spaced(s, "decimal64 number"); err != nil {
			return nil, err
		}
		_, isNumber := v.(json.Number)
		d, lexical := parseDecimal(s, isNumber)
		if !lexical {
			if f, ferr := strconv.ParseFloat(s, 64); ferr == nil && (math.IsInf(f, 0) || math.IsNaN(f)) {
				return nil, bad("%s is not a finite decimal64 number", s) // "NaN": a double_val's
			}
			if strings.ContainsAny(s, "0123456789") {
				return nil, bad("%s is not a decimal64 number: a decimal64 in a string is written as decimal digits after an optional sign, then optionally a point and more digits (RFC 7950 §9.3.1)", jsonKind(v))
			}
			return nil, bad("%s is not a decimal64 number", jsonKind(v))
		}
		text, err := d.check(t, s)
		if err != nil {
			return nil, &ValueError{Path: path, Reason: err.Error()}
		}
		return text, nil
	case yang.Ybool:
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			if b, err := strconv.ParseBool(x); err == nil && (x == "true" || x == "false") {
				return b, nil
			}
		}
		return nil, bad("%s is not a boolean", jsonKind(v))
	case yang.Ystring, yang.Yenum, yang.Yunion:
		switch x := v.(type) {
		case string:
			if t.Kind == yang.Yenum && t.Enum != nil && !t.Enum.IsDefined(x) {
				names := t.Enum.Names()
				sort.Strings(names)
				return nil, bad("%q is not one of %s", x, strings.Join(names, ", "))
			}
			return x, nil
		case json.Number:
			if t.Kind == yang.Yenum {
				return nil, bad("%s is not an enumeration name", jsonKind(v))
			}
			return string(x), nil
		}
		return nil, bad("%s is not a %s", jsonKind(v), t.Kind)
	}
	return v, nil
}

// checkRange checks an integer's text against the type's YANG range (the
// model's, as "0..100"); a number goyang cannot parse is left to ygot.
// A decimal64's is decimal.check's.
func checkRange(t *yang.YangType, s string) error {
	if len(t.Range) == 0 {
		return nil
	}
	n, err := yang.ParseInt(s)
	if err != nil || t.Range.Contains(yang.YangRange{{Min: n, Max: n}}) {
		return nil
	}
	return fmt.Errorf("%s is outside the range %s of its type", s, t.Range)
}

// canonicalIntText is the canonical form (RFC 7950 §9.2.2: no "+", no
// leading zeros, 0 unsigned) of s, an integer in its lexical form
// (§9.2.1: an optional sign and decimal digits, leading zeros allowed);
// false when s is not in that form. Its range is not checked.
func canonicalIntText(s string) (string, bool) {
	neg := false
	switch {
	case strings.HasPrefix(s, "-"):
		neg, s = true, s[1:]
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	}
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return "", false
	}
	if s = strings.TrimLeft(s, "0"); s == "" {
		return "0", true
	}
	if neg {
		return "-" + s, true
	}
	return s, true
}

func intType(k yang.TypeKind) (bits int, signed bool) {
	switch k {
	case yang.Yint8:
		return 8, true
	case yang.Yint16:
		return 16, true
	case yang.Yint32:
		return 32, true
	case yang.Yint64:
		return 64, true
	case yang.Yuint8:
		return 8, false
	case yang.Yuint16:
		return 16, false
	case yang.Yuint32:
		return 32, false
	}
	return 64, false
}
