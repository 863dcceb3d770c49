package scenario

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lhcnp/lhcnp/internal/yamlsyntax"
)

// decoder walks yaml nodes, converts scalars and collects every error with
// its position and field path. It never stops at the first mistake: one run
// of Load reports all of them.
type decoder struct {
	file string
	errs ErrorList
	// merging holds the mappings a YAML merge is reading, to refuse one
	// that merges itself (&a {<<: *a}) instead of recursing forever.
	merging map[*yaml.Node]bool
}

func (d *decoder) errAt(n *yaml.Node, field, format string, args ...any) {
	e := &Error{File: d.file, Field: field, Reason: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Col = n.Line, n.Column
	}
	d.errs = append(d.errs, e)
}

func (d *decoder) wrapAt(n *yaml.Node, field string, err error) {
	e := &Error{File: d.file, Field: field, Reason: err.Error(), Err: err}
	if n != nil {
		e.Line, e.Col = n.Line, n.Column
	}
	d.errs = append(d.errs, e)
}

// sorted returns the errors in file order (the checks run in a fixed order
// that is not the order of the file). Errors in other files (CDF files)
// keep their place after those of the scenario.
func (d *decoder) sorted() ErrorList {
	sort.SliceStable(d.errs, func(i, j int) bool {
		a, b := d.errs[i], d.errs[j]
		if (a.File == d.file) != (b.File == d.file) {
			return a.File == d.file
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	return d.errs
}

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// object is a yaml mapping whose keys have been checked against the
// allowed set.
type object struct {
	d     *decoder
	node  *yaml.Node
	path  string
	vals  map[string]*yaml.Node
	order []string
}

// object checks that n is a mapping with only the allowed keys, each once
// (allowed nil: any key).
// It returns nil (after reporting) when n is not a mapping; the methods of a
// nil *object return nothing, so callers need not check.
func (d *decoder) object(n *yaml.Node, path string, allowed ...string) *object {
	n = resolve(n)
	if n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.errAt(n, path, "want a mapping, got %s", yamlsyntax.KindName(n))
		return nil
	}
	o := &object{d: d, node: n, path: path, vals: map[string]*yaml.Node{}}
	seen := map[string]*yaml.Node{}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		field := join(path, key)
		if k.Kind != yaml.ScalarNode {
			d.errAt(k, path, "keys must be plain names")
			continue
		}
		if k.Tag == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if prev, dup := seen[key]; dup {
			d.errAt(k, field, "duplicate field (first at line %d)", prev.Line)
			continue
		}
		seen[key] = k
		if allowed != nil && !contains(allowed, key) {
			d.errAt(k, field, "unknown field (want one of: %s)", strings.Join(allowed, ", "))
			continue
		}
		o.vals[key] = resolve(v)
		o.order = append(o.order, key)
	}
	for _, m := range merges {
		d.merge(o, m, allowed)
	}
	return o
}

// merge adds to o the keys of a YAML merge (`<<: *anchor`, or a list of
// them) that o does not set itself: its own keys win, and among the
// merged mappings the first that sets a key (YAML's merge key type). A
// merged mapping's keys are checked as o's, at their own lines.
func (d *decoder) merge(o *object, v *yaml.Node, allowed []string) {
	v = resolve(v)
	maps := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		maps = v.Content
	}
	for _, m := range maps {
		if m = resolve(m); m.Kind != yaml.MappingNode {
			d.errAt(m, join(o.path, "<<"), "want a mapping or a list of mappings to merge, got %s", yamlsyntax.KindName(m))
			continue
		}
		if d.merging[m] {
			d.errAt(m, join(o.path, "<<"), "the mapping merges itself")
			continue
		}
		if d.merging == nil {
			d.merging = map[*yaml.Node]bool{}
		}
		d.merging[m] = true
		from := d.object(m, o.path, allowed...)
		delete(d.merging, m)
		for _, key := range from.order {
			if _, set := o.vals[key]; !set {
				o.vals[key] = from.vals[key]
				o.order = append(o.order, key)
			}
		}
	}
}

func (o *object) field(key string) string { return join(o.path, key) }

// get returns the value of key, or nil when absent or null.
func (o *object) get(key string) *yaml.Node {
	if o == nil {
		return nil
	}
	v := o.vals[key]
	if v != nil && v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil
	}
	return v
}

// must returns the value of key and reports it missing otherwise.
func (o *object) must(key string) *yaml.Node {
	if o == nil {
		return nil
	}
	v := o.get(key)
	if v == nil {
		o.d.errAt(o.node, o.field(key), "missing required field")
	}
	return v
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func (d *decoder) scalar(n *yaml.Node, field string) (string, bool) {
	if n == nil {
		return "", false
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.errAt(n, field, "want a single value, got %s", yamlsyntax.KindName(n))
		return "", false
	}
	return n.Value, true
}

func (d *decoder) name(n *yaml.Node, field string) (string, bool) {
	s, ok := d.scalar(n, field)
	if !ok {
		return "", false
	}
	if s == "" {
		d.errAt(n, field, "empty name")
		return "", false
	}
	if strings.ContainsAny(s, " \t,\"\n") {
		d.errAt(n, field, "name %q contains a space, comma or quote", s)
		return "", false
	}
	return s, true
}

func (d *decoder) list(n *yaml.Node, field string) []*yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.errAt(n, field, "want a list, got %s", yamlsyntax.KindName(n))
		return nil
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		out[i] = resolve(c)
	}
	return out
}

func (d *decoder) quantity(n *yaml.Node, field string, parse func(string) (int64, error)) (int64, bool) {
	s, ok := d.scalar(n, field)
	if !ok {
		return 0, false
	}
	v, err := parse(s)
	if err != nil {
		if errors.Is(err, ErrNegative) {
			d.errAt(n, field, "negative value %q is not allowed", s)
			d.errs[len(d.errs)-1].Err = err
			return 0, false
		}
		d.wrapAt(n, field, err)
		return 0, false
	}
	return v, true
}

func (d *decoder) rate(n *yaml.Node, field string) (Rate, bool) {
	v, ok := d.quantity(n, field, func(s string) (int64, error) { r, err := ParseRate(s); return int64(r), err })
	return Rate(v), ok
}

func (d *decoder) size(n *yaml.Node, field string) (Size, bool) {
	v, ok := d.quantity(n, field, func(s string) (int64, error) { r, err := ParseSize(s); return int64(r), err })
	return Size(v), ok
}

func (d *decoder) duration(n *yaml.Node, field string) (time.Duration, bool) {
	v, ok := d.quantity(n, field, func(s string) (int64, error) { r, err := ParseDuration(s); return int64(r), err })
	return time.Duration(v), ok
}

// positive rates, sizes and durations: zero is as wrong as negative where
// the field is used as a divisor or a period.
func (d *decoder) positiveRate(n *yaml.Node, field string) (Rate, bool) {
	v, ok := d.rate(n, field)
	if ok && v == 0 {
		d.errAt(n, field, "must be greater than zero")
		return 0, false
	}
	return v, ok
}

func (d *decoder) positiveSize(n *yaml.Node, field string) (Size, bool) {
	v, ok := d.size(n, field)
	if ok && v == 0 {
		d.errAt(n, field, "must be greater than zero")
		return 0, false
	}
	return v, ok
}

func (d *decoder) positiveDuration(n *yaml.Node, field string) (time.Duration, bool) {
	v, ok := d.duration(n, field)
	if ok && v == 0 {
		d.errAt(n, field, "must be greater than zero")
		return 0, false
	}
	return v, ok
}

// float parses a plain number within [lo, hi]. Quantities with units are
// not floats: a rate written as 1e9 is reported here only if a float field
// gets it.
func (d *decoder) float(n *yaml.Node, field string, lo, hi float64) (float64, bool) {
	s, ok := d.scalar(n, field)
	if !ok {
		return 0, false
	}
	if n.Tag != "!!float" && n.Tag != "!!int" {
		d.errAt(n, field, "want a number, got %q", s)
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		d.errAt(n, field, "want a number, got %q", s)
		return 0, false
	}
	if v < 0 && lo >= 0 {
		d.errAt(n, field, "negative value %s", s)
		return 0, false
	}
	if v < lo || v > hi {
		d.errAt(n, field, "%s is out of range [%g, %g]", s, lo, hi)
		return 0, false
	}
	return v, true
}

func (d *decoder) integer(n *yaml.Node, field string, lo, hi int64) (int64, bool) {
	s, ok := d.scalar(n, field)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 0, 64)
	if n.Tag != "!!int" || err != nil {
		d.errAt(n, field, "want an integer, got %q", s)
		return 0, false
	}
	if v < 0 && lo >= 0 {
		d.errAt(n, field, "negative value %d", v)
		return 0, false
	}
	if v < lo || v > hi {
		d.errAt(n, field, "%d is out of range [%d, %d]", v, lo, hi)
		return 0, false
	}
	return v, true
}

func (d *decoder) boolean(n *yaml.Node, field string) (bool, bool) {
	s, ok := d.scalar(n, field)
	if !ok {
		return false, false
	}
	if n.Tag != "!!bool" {
		d.errAt(n, field, "want true or false, got %q", s)
		return false, false
	}
	return s == "true" || s == "True" || s == "TRUE", true
}

// Setters: assign only when the field is present and valid, so that
// defaults survive an absent field.

func (o *object) setRate(key string, dst *Rate, positive bool) {
	if n := o.get(key); n != nil {
		f := o.d.rate
		if positive {
			f = o.d.positiveRate
		}
		if v, ok := f(n, o.field(key)); ok {
			*dst = v
		}
	}
}

func (o *object) setSize(key string, dst *Size, positive bool) {
	if n := o.get(key); n != nil {
		f := o.d.size
		if positive {
			f = o.d.positiveSize
		}
		if v, ok := f(n, o.field(key)); ok {
			*dst = v
		}
	}
}

func (o *object) setDuration(key string, dst *time.Duration, positive bool) {
	if n := o.get(key); n != nil {
		f := o.d.duration
		if positive {
			f = o.d.positiveDuration
		}
		if v, ok := f(n, o.field(key)); ok {
			*dst = v
		}
	}
}

func (o *object) setFloat(key string, dst *float64, lo, hi float64) {
	if n := o.get(key); n != nil {
		if v, ok := o.d.float(n, o.field(key), lo, hi); ok {
			*dst = v
		}
	}
}

func (o *object) setInt(key string, dst *int, lo, hi int64) {
	if n := o.get(key); n != nil {
		if v, ok := o.d.integer(n, o.field(key), lo, hi); ok {
			*dst = int(v)
		}
	}
}

func (o *object) setBool(key string, dst *bool) {
	if n := o.get(key); n != nil {
		if v, ok := o.d.boolean(n, o.field(key)); ok {
			*dst = v
		}
	}
}
