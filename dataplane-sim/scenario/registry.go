package scenario

// The mechanism kinds the loader knows: each registers itself (from an
// init function) with its name, where it runs and the reader of its params
// block, and the loader looks kinds up here; it holds no case per kind.
// The kinds of this package (dcqcn and none in mechanism.go, the five node
// mechanisms in files of their own) register like any other; a kind of
// another package registers through package install, which also gives the
// batch runner its installer (docs/architecture.md, "where a new mechanism
// goes").

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// A MechanismSpec is what the loader knows of one mechanism kind.
type MechanismSpec struct {
	Kind MechanismKind
	// Nodeless: the kind runs at the hosts only (dcqcn, none): it names
	// no congestion-aware nodes and is no mechanism.with block.
	Nodeless bool
	// Beside: the kind runs beside any other kind on a node (Rate
	// Advice); two kinds that are not both beside the other refuse to
	// share a node (CanCoexist).
	Beside bool
	// Params reads the kind's params block and returns its params
	// (Mechanism.Params), defaults filled in; called once per block,
	// with or without a params block in the file. Nil: the kind takes no
	// params and a non-empty block is an error.
	Params func(b ParamsBlock) any
}

// A ParamsBlock is one mechanism block's params as its kind's reader sees
// them. The setters assign only a value that is present and valid, so
// that defaults survive an absent key, and report a mistake with the
// file, line and key ("scenarios/x.yaml:12:14: mechanism.params.k_max:
// ..."); the loader goes on to find every mistake of the file.
type ParamsBlock interface {
	// Nodes are the block's congestion-aware switches, in file order.
	Nodes() []string
	// Keys declares the keys the block may hold: any other is an error.
	// It reports whether there is a block to read (false when the file
	// has none, or when it is not a mapping, which is reported); call it
	// once, before the setters.
	Keys(keys ...string) bool
	// Has reports whether the block sets key.
	Has(key string) bool
	Size(key string, dst *Size, positive bool)
	Rate(key string, dst *Rate, positive bool)
	Duration(key string, dst *time.Duration, positive bool)
	Float(key string, dst *float64, lo, hi float64)
	Int(key string, dst *int, lo, hi int64)
	Bool(key string, dst *bool)
	// OneOf sets dst to key's value, which must be one of values; what
	// names the value in the error ("unknown format %q (want a or b)").
	OneOf(key string, dst *string, what string, values ...string)
	// Strings returns key's list of plain values, each accepted by check
	// (a refusal is reported at the item), and the number of items the
	// list holds.
	Strings(key string, check func(string) error) (vals []string, items int)
	// Errorf reports a mistake at key (at the block itself for key "").
	Errorf(key, format string, args ...any)
}

// mechanisms holds the registered kinds; written only by
// RegisterMechanism, from init functions.
var mechanisms = map[MechanismKind]MechanismSpec{}

// RegisterMechanism adds a mechanism kind to those a scenario may name
// (from an init function; package install's Register calls it). It panics
// on an empty or duplicate kind.
func RegisterMechanism(s MechanismSpec) {
	if s.Kind == "" {
		panic("scenario: mechanism kind without a name")
	}
	if _, dup := mechanisms[s.Kind]; dup {
		panic(fmt.Sprintf("scenario: mechanism %s registered twice", s.Kind))
	}
	mechanisms[s.Kind] = s
}

// MechanismKinds returns the registered kinds in name order.
func MechanismKinds() []MechanismKind { return slices.Sorted(maps.Keys(mechanisms)) }

// DefaultParams returns the params of a block of the given kind on nodes
// whose file sets none (nil for an unknown kind or one without params).
func DefaultParams(kind MechanismKind, nodes []string) any {
	s, ok := mechanisms[kind]
	if !ok || s.Params == nil {
		return nil
	}
	return s.Params(&paramsBlock{d: &decoder{}, nodes: nodes})
}

// paramsBlock is the loader's ParamsBlock.
type paramsBlock struct {
	d     *decoder
	n     *yaml.Node // the params value; nil when the file has none
	path  string
	nodes []string
	o     *object
}

func (b *paramsBlock) Nodes() []string { return b.nodes }

func (b *paramsBlock) Keys(keys ...string) bool {
	if b.n == nil {
		return false
	}
	if keys == nil {
		keys = []string{} // nil would allow any key
	}
	b.o = b.d.object(b.n, b.path, keys...)
	return b.o != nil
}

func (b *paramsBlock) Has(key string) bool { return b.o.get(key) != nil }

func (b *paramsBlock) Size(key string, dst *Size, positive bool) { b.o.setSize(key, dst, positive) }
func (b *paramsBlock) Rate(key string, dst *Rate, positive bool) { b.o.setRate(key, dst, positive) }
func (b *paramsBlock) Duration(key string, dst *time.Duration, positive bool) {
	b.o.setDuration(key, dst, positive)
}
func (b *paramsBlock) Float(key string, dst *float64, lo, hi float64) { b.o.setFloat(key, dst, lo, hi) }
func (b *paramsBlock) Int(key string, dst *int, lo, hi int64)         { b.o.setInt(key, dst, lo, hi) }
func (b *paramsBlock) Bool(key string, dst *bool)                     { b.o.setBool(key, dst) }

func (b *paramsBlock) OneOf(key string, dst *string, what string, values ...string) {
	n := b.o.get(key)
	if n == nil {
		return
	}
	s, ok := b.d.scalar(n, b.field(key))
	if !ok {
		return
	}
	if !contains(values, s) {
		want := values[len(values)-1]
		if len(values) > 1 {
			want = strings.Join(values[:len(values)-1], ", ") + " or " + want
		}
		b.d.errAt(n, b.field(key), "unknown %s %q (want %s)", what, s, want)
		return
	}
	*dst = s
}

func (b *paramsBlock) Strings(key string, check func(string) error) ([]string, int) {
	n := b.o.get(key)
	if n == nil {
		return nil, 0
	}
	var out []string
	for i, x := range b.d.list(n, b.field(key)) {
		field := index(b.field(key), i)
		s, ok := b.d.scalar(x, field)
		if !ok {
			continue
		}
		if err := check(s); err != nil {
			b.d.errAt(x, field, "%v", err)
			continue
		}
		out = append(out, s)
	}
	return out, len(n.Content)
}

func (b *paramsBlock) Errorf(key, format string, args ...any) {
	if key == "" {
		at := b.n
		if b.o != nil {
			at = b.o.node
		}
		b.d.errAt(at, b.path, format, args...)
		return
	}
	b.d.errAt(b.o.get(key), b.field(key), format, args...)
}

func (b *paramsBlock) field(key string) string { return join(b.path, key) }
