// Package dbschema describes the series the collector stores in
// PostgreSQL: for a leaf's schema path (keys removed, e.g.
// /lhcnp/interfaces/interface/queues/queue/state/queue-depth) its YANG type
// and unit, written once into series.yang_type and series.unit when the
// series first appears. The units come from the YANG `units` statements, on
// the leaf or its typedef (the style rules of yang/yangstyle require one on
// every numeric leaf); the generated schema in gen/ drops them, so the
// modules embedded in yang/ are parsed with goyang.
//
// It depends on goyang and the embedded modules only.
package dbschema

import (
	"fmt"
	"io/fs"
	"strings"

	goyang "github.com/openconfig/goyang/pkg/yang"

	"github.com/lhcnp/lhcnp/yang"
)

// Leaf is what the database records about a leaf.
type Leaf struct {
	// YangType is the leaf's type: a built-in type ("uint8", "boolean",
	// "string"), or a typedef with its built-in base ("counter64 (uint64)",
	// "cnp-action (enumeration)"). Leafrefs are followed to their target.
	YangType string
	// Unit is the YANG units of the leaf or its typedef; "" when it has
	// none (strings, enumerations, booleans).
	Unit string
}

// Catalog maps schema paths to leaves. It is immutable and safe for
// concurrent use.
type Catalog struct {
	leaves map[string]Leaf
}

// New parses the embedded lhcnp modules.
func New() (*Catalog, error) {
	ms := goyang.NewModules()
	files, err := fs.Glob(yang.Modules, "*.yang")
	if err != nil {
		return nil, err
	}
	var modules []string
	for _, f := range files {
		src, err := fs.ReadFile(yang.Modules, f)
		if err != nil {
			return nil, err
		}
		if err := ms.Parse(string(src), f); err != nil {
			return nil, fmt.Errorf("dbschema: %s: %w", f, err)
		}
		modules = append(modules, strings.TrimSuffix(f, ".yang"))
	}
	if errs := ms.Process(); len(errs) > 0 {
		return nil, fmt.Errorf("dbschema: %v", errs)
	}
	c := &Catalog{leaves: map[string]Leaf{}}
	for _, name := range modules {
		mod, errs := ms.GetModule(name)
		if len(errs) > 0 {
			return nil, fmt.Errorf("dbschema: module %s: %v", name, errs)
		}
		for _, e := range mod.Dir {
			c.index(e, "")
		}
	}
	return c, nil
}

// index records the leaves under e, whose parent's schema path is parent.
// Choices and cases are not path elements.
func (c *Catalog) index(e *goyang.Entry, parent string) {
	path := parent
	if !e.IsChoice() && !e.IsCase() {
		path = parent + "/" + e.Name
	}
	if e.IsLeaf() || e.IsLeafList() {
		c.leaves[path] = describe(e)
		return
	}
	for _, child := range e.Dir {
		c.index(child, path)
	}
}

func describe(e *goyang.Entry) Leaf {
	unit := unitsOf(e)
	t := e.Type
	// A leafref has the type (and, lacking its own, the units) of its target.
	for i := 0; t != nil && t.Kind == goyang.Yleafref && i < 8; i++ {
		target := e.Find(t.Path)
		if target == nil {
			break
		}
		e, t = target, target.Type
		if unit == "" {
			unit = unitsOf(e)
		}
	}
	if t == nil {
		return Leaf{Unit: unit}
	}
	if unit == "" {
		unit = t.Units
	}
	typ := t.Kind.String()
	if t.Name != "" && t.Name != typ {
		typ = t.Name + " (" + typ + ")"
	}
	return Leaf{YangType: typ, Unit: unit}
}

// unitsOf is the units statement of a leaf or leaf-list. goyang does not
// copy it into Entry.Units for leaves, so it is read from the statement.
func unitsOf(e *goyang.Entry) string {
	if e.Units != "" {
		return e.Units
	}
	var v *goyang.Value
	switch n := e.Node.(type) {
	case *goyang.Leaf:
		v = n.Units
	case *goyang.LeafList:
		v = n.Units
	}
	if v == nil {
		return ""
	}
	return v.Name
}

// Lookup describes the leaf at schemaPath; false when no leaf has that
// path.
func (c *Catalog) Lookup(schemaPath string) (Leaf, bool) {
	l, ok := c.leaves[schemaPath]
	return l, ok
}

// Len is the number of leaves in the catalog.
func (c *Catalog) Len() int { return len(c.leaves) }
