package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/gnmi/jsonval"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/goyang/pkg/yang"
	"github.com/openconfig/ygot/ygot"
	"github.com/openconfig/ygot/ytypes"
)

// Value is one leaf: its full data path and its typed (PROTO) value.
type Value struct {
	Path *gnmi.Path
	Val  *gnmi.TypedValue
}

// Values flattens a tree into its leaves, with PROTO-typed values: unsigned
// integers as uint_val, signed as int_val, decimal64 as double_val,
// enumerations as their YANG names in string_val (what
// ygot.TogNMINotifications gives, faster; see flatten).
func (s *Schema) Values(root *oc.Root) ([]Value, error) {
	var out []Value
	err := flatten(reflect.ValueOf(root), nil, func(p *gnmi.Path, tv *gnmi.TypedValue) {
		out = append(out, Value{Path: p, Val: tv})
	})
	if err != nil {
		return nil, fmt.Errorf("schema: flatten: %w", err)
	}
	return out, nil
}

// ConfigInUse returns the config leaves in use in root: those set, and
// every other one that has a YANG default, at its default. The model's
// containers are all non-presence, so they exist, with their defaults,
// wherever their parent does (everywhere but in absent list entries). gNMI
// 3.3.4 and 3.5.2.4: a Get or a Subscribe of a leaf whose default is in
// use returns the default; 3.5.2.3: a leaf going back to its default is
// streamed as an update with it, not a delete. root is not modified.
func (s *Schema) ConfigInUse(root *oc.Root) ([]Value, error) {
	c, err := ygot.DeepCopy(root)
	if err != nil {
		return nil, fmt.Errorf("schema: copy: %w", err)
	}
	full := c.(*oc.Root)
	full.PopulateDefaults()
	vals, err := s.Values(full)
	if err != nil {
		return nil, err
	}
	out := vals[:0]
	for _, v := range vals {
		// PopulateDefaults builds the state containers too: the state
		// tree is the dataplane's to report.
		if l, ok := s.LeafAt(v.Path); ok && l.Class == ClassConfig {
			out = append(out, v)
		}
	}
	return out, nil
}

// Build makes a tree from leaves (the inverse of Values).
func (s *Schema) Build(vals []Value) (*oc.Root, error) {
	root := &oc.Root{}
	for _, v := range vals {
		if err := s.SetLeaf(root, v.Path, v.Val); err != nil {
			return nil, err
		}
	}
	return root, nil
}

// SetLeaf sets one leaf in a tree, creating the containers and list entries
// on the way.
func (s *Schema) SetLeaf(root *oc.Root, p *gnmi.Path, v *gnmi.TypedValue) error {
	if err := ytypes.SetNode(s.root, root, p, v, &ytypes.InitMissingElements{}); err != nil {
		return fmt.Errorf("schema: %s: %w", ErrorPath(p), err)
	}
	return nil
}

// Encoding reports whether enc is one the target serves.
func Encoding(enc gnmi.Encoding) bool {
	return enc == gnmi.Encoding_JSON || enc == gnmi.Encoding_JSON_IETF || enc == gnmi.Encoding_PROTO
}

// EncodeLeaf encodes a leaf's stored (PROTO) value in enc. For JSON_IETF it
// follows RFC 7951 §6: 64-bit integers and decimal64 as strings,
// enumerations by name.
func (s *Schema) EncodeLeaf(l *Leaf, v *gnmi.TypedValue, enc gnmi.Encoding) (*gnmi.TypedValue, error) {
	switch enc {
	case gnmi.Encoding_PROTO:
		return v, nil
	case gnmi.Encoding_JSON:
		b, err := leafJSON(l, v, false)
		if err != nil {
			return nil, err
		}
		return &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonVal{JsonVal: b}}, nil
	case gnmi.Encoding_JSON_IETF:
		b, err := leafJSON(l, v, true)
		if err != nil {
			return nil, err
		}
		return &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: b}}, nil
	}
	return nil, fmt.Errorf("encoding %v is not supported", enc)
}

// leafJSON writes v as JSON in the style RFC 7951 gives l's YANG type for
// JSON_IETF (64-bit integers and decimal64 as strings), or as plain JSON.
// A decimal64 held as a double_val (what the store holds) is written in
// its canonical form, "1.0" and not "1" (RFC 7950 §9.3.2).
func leafJSON(l *Leaf, v *gnmi.TypedValue, ietf bool) ([]byte, error) {
	var kind yang.TypeKind
	if l != nil && l.Type != nil {
		kind = l.Type.Kind
	}
	if f, ok := v.GetValue().(*gnmi.TypedValue_DoubleVal); ok && kind == yang.Ydecimal64 {
		if text, ok := canonicalDecimal(f.DoubleVal, l.Type.FractionDigits); ok {
			if ietf {
				return []byte(`"` + text + `"`), nil
			}
			return []byte(text), nil
		}
	}
	var st jsonval.Style
	if ietf {
		st = jsonval.Style{
			QuoteUint:    kind == yang.Yuint64 || kind == yang.Ydecimal64,
			QuoteInt:     kind == yang.Yint64 || kind == yang.Ydecimal64,
			QuoteFloat:   kind == yang.Ydecimal64,
			QuoteDecimal: true,
		}
	}
	return jsonval.Marshal(v, st)
}

// EncodeNode encodes the subtree at the concrete data path p of root as one
// JSON or JSON_IETF value (module-qualified member names for JSON_IETF, as
// RFC 7951 wants at the top level). A leaf is encoded like EncodeLeaf.
func (s *Schema) EncodeNode(root *oc.Root, p *gnmi.Path, enc gnmi.Encoding) (*gnmi.TypedValue, error) {
	var data any = root
	if len(p.GetElem()) > 0 {
		nodes, err := ytypes.GetNode(s.root, root, p)
		if err != nil {
			return nil, fmt.Errorf("schema: %s: %w", ErrorPath(p), err)
		}
		if len(nodes) != 1 {
			return nil, fmt.Errorf("schema: %s: %d nodes, want 1", ErrorPath(p), len(nodes))
		}
		data = nodes[0].Data
	}
	gs, ok := data.(ygot.GoStruct)
	if !ok {
		l, isLeaf := s.LeafAt(p)
		if !isLeaf {
			return nil, fmt.Errorf("schema: %s: neither a container nor a leaf", ErrorPath(p))
		}
		tv, err := ygot.EncodeTypedValue(data, gnmi.Encoding_PROTO)
		if err != nil {
			return nil, fmt.Errorf("schema: %s: %w", ErrorPath(p), err)
		}
		return s.EncodeLeaf(l, tv, enc)
	}
	var (
		b   []byte
		err error
	)
	switch enc {
	case gnmi.Encoding_JSON_IETF:
		b, err = ygot.Marshal7951(gs, &ygot.RFC7951JSONConfig{AppendModuleName: true})
	case gnmi.Encoding_JSON:
		// The shape of RFC 7951 (lists as arrays of entries, which Set
		// takes back as it is), without module names and with every
		// number a JSON number. ygot's own JSON form (lists as objects
		// keyed by their keys) is its internal one, which no client reads.
		b, err = ygot.Marshal7951(gs)
	default:
		return nil, fmt.Errorf("encoding %v has no subtree form", enc)
	}
	if err != nil {
		return nil, fmt.Errorf("schema: %s: %w", ErrorPath(p), err)
	}
	e, err := s.entryAt(p)
	if err != nil {
		return nil, err
	}
	if b, err = rewriteJSON(e, b, enc == gnmi.Encoding_JSON_IETF); err != nil {
		return nil, fmt.Errorf("schema: %s: %w", ErrorPath(p), err)
	}
	if enc == gnmi.Encoding_JSON {
		return &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonVal{JsonVal: b}}, nil
	}
	return &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: b}}, nil
}

// ValueEncoder encodes stored leaf values for one encoding with the schema's
// types; it has the method set of gnmi/subscribe's ValueEncoder, so the
// Subscribe handler can send schema-correct JSON_IETF.
type ValueEncoder struct {
	s   *Schema
	enc gnmi.Encoding
}

// ValueEncoder returns the encoder of enc.
func (s *Schema) ValueEncoder(enc gnmi.Encoding) ValueEncoder { return ValueEncoder{s: s, enc: enc} }

// EncodeValue encodes the value of the leaf at p.
func (e ValueEncoder) EncodeValue(p *gnmi.Path, v *gnmi.TypedValue) (*gnmi.TypedValue, error) {
	l, _ := e.s.LeafAt(p)
	return e.s.EncodeLeaf(l, v, e.enc)
}

// entryAt returns the schema node of a concrete data path.
func (s *Schema) entryAt(p *gnmi.Path) (*yang.Entry, error) {
	e := s.root
	for _, el := range p.GetElem() {
		if e = e.Dir[el.GetName()]; e == nil {
			return nil, fmt.Errorf("schema: %s: %w", ErrorPath(p), ErrUnknown)
		}
	}
	return e, nil
}

// rewriteJSON rewrites ygot's RFC 7951 JSON of the node e into the
// target's: every decimal64 in its canonical form (RFC 7950 §9.3.2: ygot
// writes a float64 with %v, "1" for 1.0 and "1e-05" for 0.00001, which is
// not even a decimal64's lexical form, so that a Get's value could not be
// sent back in a Set); every list's entries in path order (sortEntries);
// for the JSON encoding (not ietf), the numbers RFC 7951 quotes (64-bit
// integers, decimal64) as JSON numbers.
func rewriteJSON(e *yang.Entry, data []byte, ietf bool) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var walk func(e *yang.Entry, v any) any
	walk = func(e *yang.Entry, v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if ce := e.Dir[stripModule(k)]; ce != nil {
					x[k] = walk(ce, c)
				}
			}
		case []any:
			for i, c := range x {
				x[i] = walk(e, c)
			}
			if e.IsList() {
				sortEntries(e, x)
			}
		case string, json.Number:
			if !e.IsLeaf() && !e.IsLeafList() {
				return v
			}
			text := fmt.Sprint(x)
			t := resolveType(e)
			switch t.Kind {
			case yang.Ydecimal64:
				f, err := strconv.ParseFloat(text, 64)
				if err != nil {
					return v
				}
				if c, ok := canonicalDecimal(f, t.FractionDigits); ok {
					text = c
				}
			case yang.Yint64, yang.Yuint64:
				if _, err := strconv.ParseFloat(text, 64); err != nil {
					return v
				}
			default:
				return v
			}
			if ietf {
				return text
			}
			return json.Number(text)
		}
		return v
	}
	return json.Marshal(walk(e, v))
}

// sortEntries puts the entries of the list e in the order of their paths
// (ComparePaths: a number key by its value, queue[id=2] before
// queue[id=10]), the order of a notification's updates and of Set's
// errors. ygot orders them by their keys' text (render.go mapJSON sorts
// with strings.Compare, and has no option), which put 10 before 2. RFC
// 7951 §5.4 leaves the order to the writer. The keys are compared as a
// path writes them: every key of e, by name, as store.PathString does.
func sortEntries(e *yang.Entry, entries []any) {
	names := strings.Fields(e.Key)
	if len(names) == 0 || len(entries) < 2 {
		return
	}
	slices.Sort(names)
	type keyed struct {
		path  string // the entry's keys as a path element writes them
		entry any
	}
	ks := make([]keyed, len(entries))
	for i, en := range entries {
		ks[i] = keyed{path: entryPath(en, names), entry: en}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return ComparePaths(a.path, b.path) })
	for i := range ks {
		entries[i] = ks[i].entry
	}
}

// entryPath is a list entry's keys as a path element writes them
// ("[a=x][b=y]", names sorted, "]" and "\" escaped), from its JSON members
// (with or without a module prefix).
func entryPath(entry any, names []string) string {
	m, _ := entry.(map[string]any)
	var b strings.Builder
	for _, name := range names {
		var v any
		for k, mv := range m {
			if stripModule(k) == name {
				v = mv
				break
			}
		}
		b.WriteByte('[')
		b.WriteString(name)
		b.WriteByte('=')
		for _, r := range fmt.Sprint(v) {
			if r == ']' || r == '\\' {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
		b.WriteByte(']')
	}
	return b.String()
}
