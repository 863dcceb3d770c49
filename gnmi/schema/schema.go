// Package schema binds the gNMI target to the lhcnp YANG model: it checks
// request paths against the schema tree of gen/oc, says what every leaf is
// (configuration, applied configuration, operational state; counter, gauge
// or discrete value), turns GoStructs into leaves and leaves back into
// GoStructs, and encodes values and subtrees in JSON, JSON_IETF and PROTO.
//
// It knows the schema and the node's rules, not RPCs or a running
// dataplane: the model's rules (K_min below K_max, which actions a trigger
// may take) are the node's own (dataplane-sim/lhcnp), applied here to the
// YANG leaves through the one YANG-to-node action table (NodeAction), so
// that errors name the path; status codes are chosen by the caller
// (gnmi/service), and the only data it touches is what it is given.
package schema

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/goyang/pkg/yang"
	"github.com/openconfig/ygot/ytypes"
)

// Wildcards in paths (gNMI path conventions): "*" matches one element or any
// key value, "..." any number of elements.
const (
	Wildcard   = "*"
	MultiLevel = "..."
)

// Origin is the origin of our paths besides "" (the module name, as with
// OpenConfig's "openconfig").
const Origin = "lhcnp"

// Class says which data type of GetRequest a leaf belongs to.
type Class uint8

// The classes of leaf.
const (
	// ClassConfig is read-write data (YANG config true): GetRequest CONFIG.
	ClassConfig Class = iota + 1
	// ClassApplied is a state leaf that repeats a config leaf (the value in
	// effect): STATE, not OPERATIONAL.
	ClassApplied
	// ClassOperational is derived state, counters and read-only lists:
	// STATE and OPERATIONAL.
	ClassOperational
)

func (c Class) String() string {
	switch c {
	case ClassConfig:
		return "config"
	case ClassApplied:
		return "applied-config"
	case ClassOperational:
		return "operational"
	}
	return "unknown"
}

// In reports whether the class is served for the data type.
func (c Class) In(dt gnmi.GetRequest_DataType) bool {
	switch dt {
	case gnmi.GetRequest_CONFIG:
		return c == ClassConfig
	case gnmi.GetRequest_STATE:
		return c == ClassApplied || c == ClassOperational
	case gnmi.GetRequest_OPERATIONAL:
		return c == ClassOperational
	}
	return true
}

// Leaf describes one leaf of the schema.
type Leaf struct {
	// SchemaPath is the path without keys, e.g.
	// "/lhcnp/interfaces/interface/queues/queue/config/kmax".
	SchemaPath string
	Entry      *yang.Entry
	Class      Class
	// Kind is what the store and TARGET_DEFINED subscriptions treat the
	// leaf as.
	Kind store.Kind
	// Type is the leaf's type with leafrefs resolved to their target.
	Type *yang.YangType
}

// Errors of path resolution. ErrUnknown: an element is not in the schema;
// ErrBadPath: the path is malformed (empty name, deprecated element field,
// keys on a non-list, unknown key names).
var (
	ErrUnknown = errors.New("not in the schema")
	ErrBadPath = errors.New("malformed path")
)

// Schema is the lhcnp schema tree with an index of its leaves. It is
// immutable and safe for concurrent use.
type Schema struct {
	ys     *ytypes.Schema
	root   *yang.Entry // the "Root" entry (the device root)
	leaves map[string]*Leaf
	trie   *trieNode // the leaves by element names, for LeafAt without allocation
}

type trieNode struct {
	children map[string]*trieNode
	leaf     *Leaf
}

// New loads the generated schema.
func New() (*Schema, error) {
	ys, err := oc.Schema()
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	s := &Schema{ys: ys, root: ys.RootSchema(), leaves: map[string]*Leaf{}, trie: &trieNode{}}
	if s.root == nil {
		return nil, errors.New("schema: no root entry")
	}
	s.index(s.root, "")
	return s, nil
}

// Root returns the schema entry of the root (the device).
func (s *Schema) Root() *yang.Entry { return s.root }

// YTypes returns the ytypes schema (its Root is a fresh *oc.Root that callers
// must not share).
func (s *Schema) YTypes() *ytypes.Schema { return s.ys }

func (s *Schema) index(e *yang.Entry, path string) {
	for name, c := range e.Dir {
		p := path + "/" + name
		if c.IsLeaf() || c.IsLeafList() {
			l := s.describe(c, p)
			s.leaves[p] = l
			n := s.trie
			for _, name := range strings.Split(p[1:], "/") {
				if n.children == nil {
					n.children = map[string]*trieNode{}
				}
				c := n.children[name]
				if c == nil {
					c = &trieNode{}
					n.children[name] = c
				}
				n = c
			}
			n.leaf = l
			continue
		}
		s.index(c, p)
	}
}

func (s *Schema) describe(e *yang.Entry, path string) *Leaf {
	l := &Leaf{SchemaPath: path, Entry: e, Type: resolveType(e)}
	parent := e.Parent
	switch {
	case !e.ReadOnly():
		l.Class = ClassConfig
	case parent != nil && parent.Name == "state" && parent.Parent != nil &&
		parent.Parent.Dir["config"] != nil && parent.Parent.Dir["config"].Dir[e.Name] != nil:
		l.Class = ClassApplied
	default:
		l.Class = ClassOperational
	}
	l.Kind = kindOf(l, path)
	return l
}

// resolveType follows leafrefs to the type of the leaf they point at.
func resolveType(e *yang.Entry) *yang.YangType {
	t := e.Type
	for i := 0; t != nil && t.Kind == yang.Yleafref && i < 8; i++ {
		target := e.Find(t.Path)
		if target == nil {
			break
		}
		e, t = target, target.Type
	}
	return t
}

// kindOf chooses the store kind: config leaves are Config, the applied copy
// of config and everything that names or dates something is discrete,
// counter64 typedefs are counters and other operational numbers gauges.
func kindOf(l *Leaf, path string) store.Kind {
	switch l.Class {
	case ClassConfig:
		return store.Config
	case ClassApplied:
		return store.DiscreteState
	}
	name := l.Entry.Name
	typ := l.Entry.Type
	switch {
	case typ.Name == "counter64":
		return store.Counter
	case typ.Kind == yang.Yleafref, strings.Contains(path, "/last-cnp/"),
		strings.HasPrefix(name, "effective-"), strings.HasSuffix(name, "-qp"),
		name == "egress-queue", name == "flow-label",
		typ.Name == "timeticks64", typ.Name == "qp-number", typ.Name == "flow-label":
		return store.DiscreteState
	}
	switch l.Type.Kind {
	case yang.Yint8, yang.Yint16, yang.Yint32, yang.Yint64,
		yang.Yuint8, yang.Yuint16, yang.Yuint32, yang.Yuint64, yang.Ydecimal64:
		return store.Gauge
	}
	return store.DiscreteState
}

// Leaves returns the number of leaves in the schema.
func (s *Schema) Leaves() int { return len(s.leaves) }

// LeafAt describes the leaf at a data path (keys are ignored; origin and
// target too). It reports false when the path does not name a leaf.
func (s *Schema) LeafAt(p *gnmi.Path) (*Leaf, bool) {
	n := s.trie
	for _, e := range p.GetElem() {
		if n = n.children[e.GetName()]; n == nil {
			return nil, false
		}
	}
	return n.leaf, n.leaf != nil
}

// LeafBySchemaPath describes the leaf at a schema path ("/lhcnp/global/config/enabled").
func (s *Schema) LeafBySchemaPath(path string) (*Leaf, bool) {
	l, ok := s.leaves[path]
	return l, ok
}

// KeyEntry reports whether the data path p names a key leaf of a list
// entry, /…/list[k=v]/k, or its config copy, /…/list[k=v]/config/k (the
// OpenConfig key is a leafref to it), and returns the entry's path. Such a
// leaf exists as long as its entry (RFC 7950 §7.8.2): only a delete of the
// entry removes it.
func (s *Schema) KeyEntry(p *gnmi.Path) (*gnmi.Path, bool) {
	e, err := s.entryAt(p)
	if err != nil || !e.IsLeaf() {
		return nil, false
	}
	list, up := e.Parent, 1
	if list != nil && !list.IsList() && list.Name == "config" {
		list, up = list.Parent, 2
	}
	if list == nil || !list.IsList() || !contains(strings.Fields(list.Key), e.Name) {
		return nil, false
	}
	return &gnmi.Path{Elem: p.GetElem()[:len(p.GetElem())-up]}, true
}

// Resolved is a path checked against the schema.
type Resolved struct {
	// Entry is the schema node the path names; nil when the path has
	// wildcards in element names or "...".
	Entry *yang.Entry
	// Wildcard is true when the path can match more than one data node: a
	// "*" or "..." element, a "*" key value, or a list element with keys
	// left out.
	Wildcard bool
	// PartialKeys is true when some list element names only some of its
	// keys (an error for update and replace, gNMI 3.4.5).
	PartialKeys bool
	// ReadOnly is true when every node the path can reach is config false.
	ReadOnly bool
}

// Resolve checks a path (prefix and path joined by the caller) against the
// schema. Wildcards are allowed; every named element must exist, keys must
// be given only to lists and only by their key names. An error names the
// path up to the element at fault when that is not the last one (not in
// the schema: /lhcnp/nope); the caller names the whole path, so an error
// about the last element does not repeat it.
func (s *Schema) Resolve(p *gnmi.Path) (Resolved, error) {
	if err := CheckElement(p); err != nil {
		return Resolved{}, err
	}
	var r Resolved
	entries := []*yang.Entry{s.root}
	for i, pe := range p.GetElem() {
		name := pe.GetName()
		at := func() string {
			if i == len(p.GetElem())-1 {
				return ""
			}
			return ": " + ErrorPath(&gnmi.Path{Elem: p.GetElem()[:i+1]})
		}
		if name == "" {
			return Resolved{}, fmt.Errorf("%w%s: empty element name", ErrBadPath, at())
		}
		var next []*yang.Entry
		switch name {
		case MultiLevel:
			if len(pe.GetKey()) > 0 {
				return Resolved{}, fmt.Errorf("%w%s: %s cannot have keys", ErrBadPath, at(), quote(MultiLevel))
			}
			r.Wildcard = true
			for _, e := range entries {
				next = appendDescendants(next, e)
			}
		case Wildcard:
			r.Wildcard = true
			for _, e := range entries {
				for _, c := range e.Dir {
					next = append(next, c)
				}
			}
		default:
			for _, e := range entries {
				if c := e.Dir[stripModule(name)]; c != nil {
					next = append(next, c)
				}
			}
			if len(next) == 0 {
				if mod, _, ok := strings.Cut(name, ":"); ok && mod != ModuleName {
					return Resolved{}, fmt.Errorf("%w%s: %s", ErrUnknown, at(), moduleErr(mod))
				}
				return Resolved{}, fmt.Errorf("%w%s", ErrUnknown, at())
			}
		}
		if len(pe.GetKey()) > 0 || hasList(next) {
			var err error
			next, err = checkKeys(next, pe, at, &r)
			if err != nil {
				return Resolved{}, err
			}
		}
		entries = next
	}
	if len(entries) == 1 && !r.Wildcard {
		r.Entry = entries[0]
	}
	r.ReadOnly = len(entries) > 0
	for _, e := range entries {
		if !e.ReadOnly() {
			r.ReadOnly = false
			break
		}
	}
	return r, nil
}

// CheckElement refuses a path given only in the deprecated element field
// (gNMI 0.4): Join and Normalize, which read elem, would take it for the
// root, and a Get of it answer the whole tree, a delete of it delete
// everything. The caller checks the prefix and the path as sent, before
// joining them; ErrorPath names such a path by its elements.
func CheckElement(p *gnmi.Path) error {
	if len(p.GetElem()) == 0 && len(p.GetElement()) > 0 {
		return fmt.Errorf("%w: the deprecated element field is not supported, use elem", ErrBadPath)
	}
	return nil
}

func hasList(es []*yang.Entry) bool {
	for _, e := range es {
		if e.IsList() {
			return true
		}
	}
	return false
}

// checkKeys keeps the entries that accept the element's keys and notes
// wildcards and partial keys; at is Resolve's (": /path" or nothing).
func checkKeys(es []*yang.Entry, pe *gnmi.PathElem, at func() string, r *Resolved) ([]*yang.Entry, error) {
	var out []*yang.Entry
	var lastErr error
	for _, e := range es {
		if !e.IsList() {
			if len(pe.GetKey()) == 0 {
				out = append(out, e)
				continue
			}
			lastErr = fmt.Errorf("%w%s: %s is not a list and takes no keys", ErrBadPath, at(), e.Name)
			continue
		}
		names := strings.Fields(e.Key)
		ok := true
		for k := range pe.GetKey() {
			if !contains(names, k) {
				lastErr = fmt.Errorf("%w%s: %s has no key %s (keys: %s)", ErrBadPath, at(), e.Name, quote(k), strings.Join(names, ", "))
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		given := 0
		for _, k := range names {
			v, has := pe.GetKey()[k]
			if has && v != Wildcard {
				given++
				if err := checkKeyValue(e, k, v); err != nil {
					lastErr = fmt.Errorf("%w%s: %s key %s: %v", ErrBadPath, at(), e.Name, k, err)
					ok = false
					break
				}
			}
			if !has || v == Wildcard {
				r.Wildcard = true
			}
		}
		if !ok {
			continue
		}
		if given > 0 && given < len(names) {
			r.PartialKeys = true
		}
		if given == 0 && len(pe.GetKey()) == 0 {
			// A list element without keys: every entry.
			r.Wildcard = true
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		if lastErr == nil {
			lastErr = fmt.Errorf("%w%s", ErrUnknown, at())
		}
		return nil, lastErr
	}
	return out, nil
}

// checkKeyValue checks a key value of a path against the type of the list
// e's key leaf k, as a value of that leaf would be (its range, length and
// patterns included): ygot would otherwise refuse it in gRPC's words at a
// Set ("rpc error: code = InvalidArgument desc = cannot convert key"), or
// in its validation's (a pattern), and Get find no data under it.
func checkKeyValue(e *yang.Entry, k, v string) error {
	leaf := e.Dir[k]
	if leaf == nil {
		return nil // a key the model does not declare as a leaf: ygot's to refuse
	}
	t := resolveType(leaf)
	if t == nil {
		return nil
	}
	// A number's key in any other form than its canonical one ("00",
	// " 0" for 0) is another key to the lists (a Get found no data under
	// it) while ygot reads it as the number (a Set changed entry 0):
	// refused, naming the form to write when that is one of the type.
	if c, ok := canonicalInt(t.Kind, v); ok && c != v {
		if _, err := decodeLeaf(t, c, ""); err == nil {
			return fmt.Errorf("%s is not a %s in its canonical form (%s)", quote(v), t.Kind, c)
		}
	}
	if _, err := decodeLeaf(t, v, ""); err == nil {
		return checkRestrictions(t, v)
	}
	switch t.Kind {
	case yang.Yenum:
		if t.Enum != nil {
			names := t.Enum.Names()
			sort.Strings(names)
			return fmt.Errorf("%s is not one of %s", quote(v), strings.Join(names, ", "))
		}
	}
	typ := t.Kind.String()
	if len(t.Range) > 0 {
		typ += " in " + t.Range.String()
	}
	return fmt.Errorf("%s is not a %s", quote(v), typ)
}

// canonicalInt is the canonical form (RFC 7950 §9.2.2: no sign for a
// positive number, no leading zeros, no spaces) of v, a number of the
// integer type kind in any lexical form (§9.2.1); false for another kind
// or not a number.
func canonicalInt(kind yang.TypeKind, v string) (string, bool) {
	switch kind {
	case yang.Yint8, yang.Yint16, yang.Yint32, yang.Yint64,
		yang.Yuint8, yang.Yuint16, yang.Yuint32, yang.Yuint64:
		return canonicalIntText(strings.TrimSpace(v))
	}
	return "", false
}

// checkRestrictions checks a string value against the length and pattern
// restrictions of t, which decodeLeaf leaves to ygot's validation, with
// ygot's own check (its reading of YANG's XSD patterns, or of the model's
// POSIX ones) so that a key value and a leaf's value are judged alike; a
// union's value passes when one of its member types takes it.
func checkRestrictions(t *yang.YangType, v string) error {
	switch t.Kind {
	case yang.Ystring:
		if err := ytypes.ValidateStringRestrictions(t, v); err != nil {
			if len(t.Length) > 0 && ytypes.ValidateStringRestrictions(&yang.YangType{Kind: yang.Ystring, Length: t.Length}, v) != nil {
				return fmt.Errorf("%s is outside the length %s of its type", quote(v), t.Length)
			}
			return fmt.Errorf("%s does not match the pattern of %s", quote(v), typeName(t))
		}
	case yang.Yunion:
		var names []string
		for _, m := range t.Type {
			if _, err := decodeLeaf(m, v, ""); err == nil && checkRestrictions(m, v) == nil {
				return nil
			}
			names = append(names, typeName(m))
		}
		return fmt.Errorf("%s is not of type %s (%s)", quote(v), typeName(t), strings.Join(names, " or "))
	}
	return nil
}

// typeName is a type's typedef name, or its built-in kind's.
func typeName(t *yang.YangType) string {
	if t.Name != "" {
		return t.Name
	}
	return t.Kind.String()
}

// quote is s, a name, key or value a request gave, for an error message
// as %q writes it, as the package's other errors quote a value (decode.go),
// cut as a path is (store.ErrorQuote). (%q of ErrorText's text escaped a
// line break twice, "\\n".)
func quote(s string) string { return store.ErrorQuote(s) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// appendDescendants adds e and every node below it ("..." matches zero or
// more levels).
func appendDescendants(out []*yang.Entry, e *yang.Entry) []*yang.Entry {
	out = append(out, e)
	for _, c := range e.Dir {
		out = appendDescendants(out, c)
	}
	return out
}

// stripModule removes our module's qualifier from an element name (clients
// such as gnmic may send "lhcnp:lhcnp"). Another module's stays, so that
// the name is not found: every data node of the model is in module lhcnp
// (RFC 7951 §4 qualifies a name with the module that defines it), and
// "foo:lhcnp" or "lhcnp-types:enabled" is a client's mistake, not
// lhcnp's node (they were taken as it, in paths of Get, Set and Subscribe).
func stripModule(name string) string {
	if rest, ok := strings.CutPrefix(name, ModuleName+":"); ok {
		return rest
	}
	return name
}

// moduleErr is the reason a name qualified with module mod (not ours) is
// refused, in a path as in a JSON member name.
func moduleErr(mod string) string {
	if mod == TypesModuleName {
		return fmt.Sprintf("module %q defines types, no data nodes (every data node is in %q: use %q or no prefix)", mod, ModuleName, ModuleName)
	}
	return fmt.Sprintf("module %s is not served (use %q or no prefix)", quote(mod), ModuleName)
}

// PathString renders a path in the store's canonical form ("/a/b[k=v]/c").
func PathString(p *gnmi.Path) string { return store.PathString(p) }

// ErrorPath is PathString cut for an error message (store.ErrorPath).
func ErrorPath(p *gnmi.Path) string { return store.ErrorPath(p) }

// Join returns prefix + p as one path (elements of both, origin of p or
// else of prefix, no target). Neither argument is modified.
func Join(prefix, p *gnmi.Path) *gnmi.Path {
	out := &gnmi.Path{Origin: p.GetOrigin()}
	if out.Origin == "" {
		out.Origin = prefix.GetOrigin()
	}
	out.Elem = make([]*gnmi.PathElem, 0, len(prefix.GetElem())+len(p.GetElem()))
	out.Elem = append(out.Elem, prefix.GetElem()...)
	out.Elem = append(out.Elem, p.GetElem()...)
	return out
}

// Normalize returns p with our module's qualifiers stripped from element
// names ("lhcnp:lhcnp" → "lhcnp"; another module's stays, for Resolve to
// refuse), origin and target cleared. p is not modified.
func Normalize(p *gnmi.Path) *gnmi.Path {
	out := &gnmi.Path{Elem: make([]*gnmi.PathElem, len(p.GetElem()))}
	for i, e := range p.GetElem() {
		n := stripModule(e.GetName())
		if n == e.GetName() {
			out.Elem[i] = e
			continue
		}
		out.Elem[i] = &gnmi.PathElem{Name: n, Key: e.GetKey()}
	}
	return out
}

// StripModules returns p with module qualifiers stripped from element names
// ("lhcnp:lhcnp" → "lhcnp"), origin and target kept; p is returned as it is
// when it has none. p is not modified.
func StripModules(p *gnmi.Path) *gnmi.Path {
	for _, e := range p.GetElem() {
		if strings.HasPrefix(e.GetName(), ModuleName+":") {
			out := Normalize(p)
			out.Origin, out.Target = p.GetOrigin(), p.GetTarget()
			return out
		}
	}
	return p
}

// OpenConfigOrigin is accepted as a synonym of ours: ygnmi sends it for
// every path of a generated schema whose paths have no origin of their own
// (gen/oc/ocpath), as gnmic does by default for OpenConfig-style paths.
const OpenConfigOrigin = "openconfig"

// CheckOrigin accepts the empty origin, ours and "openconfig".
func CheckOrigin(origin string) error {
	if origin == "" || origin == Origin || origin == OpenConfigOrigin {
		return nil
	}
	return fmt.Errorf("origin %s is not served (use %q, %q or none)", quote(origin), Origin, OpenConfigOrigin)
}

// CheckPathOrigin checks the origin of a path sent under prefix: one we
// serve (CheckOrigin), and not given in both (gNMI 2.7: "A single request
// MUST NOT specify origin in both prefix and path fields in any RPC payload
// messages").
func CheckPathOrigin(prefix, p *gnmi.Path) error {
	if err := CheckOrigin(p.GetOrigin()); err != nil {
		return err
	}
	if p.GetOrigin() != "" && prefix.GetOrigin() != "" {
		return fmt.Errorf("origin %s in the path and %s in the prefix: give it in one of them (gNMI 2.7)", quote(p.GetOrigin()), quote(prefix.GetOrigin()))
	}
	return nil
}

// MatchPrefix reports whether the pattern pat (wildcards allowed) matches
// the concrete path p or one of its ancestors, and returns the length of the
// matched node's path: the node a Get or a delete of pat addresses. A
// trailing "..." addresses the node before it; "..." elsewhere matches as
// few levels as it can.
func MatchPrefix(pat, p *gnmi.Path) (int, bool) {
	return matchFrom(pat.GetElem(), p.GetElem(), 0, 0)
}

func matchFrom(pat, p []*gnmi.PathElem, pi, li int) (int, bool) {
	if pi == len(pat) {
		return li, true
	}
	pe := pat[pi]
	if pe.GetName() == MultiLevel {
		if pi == len(pat)-1 {
			return li, true
		}
		for k := li; k <= len(p); k++ {
			if n, ok := matchFrom(pat, p, pi+1, k); ok {
				return n, true
			}
		}
		return 0, false
	}
	if li == len(p) {
		return 0, false
	}
	e := p[li]
	if name := pe.GetName(); name != Wildcard && stripModule(name) != e.GetName() {
		return 0, false
	}
	for k, v := range pe.GetKey() {
		if v == Wildcard {
			continue
		}
		if got, ok := e.GetKey()[k]; !ok || got != v {
			return 0, false
		}
	}
	return matchFrom(pat, p, pi+1, li+1)
}
