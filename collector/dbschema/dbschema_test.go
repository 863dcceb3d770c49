package dbschema

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	goyang "github.com/openconfig/goyang/pkg/yang"

	"github.com/lhcnp/lhcnp/gen/oc"
)

func TestLookup(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	const q = "/lhcnp/interfaces/interface/queues/queue/"
	for _, tt := range []struct {
		desc, path string
		want       Leaf
	}{
		{"gauge", q + "state/queue-depth", Leaf{"gauge64 (uint64)", "bytes"}},
		{"counter", q + "state/counters/cnp-notify-sent", Leaf{"counter64 (uint64)", "packets"}},
		{"decimal typedef", q + "state/ecn-marking-rate", Leaf{"decimal-percentage (decimal64)", "percent"}},
		{"signed", q + "state/queue-growth-rate", Leaf{"int64", "bytes-per-second"}},
		{"config decimal", q + "config/alpha", Leaf{"decimal64", "ratio"}},
		{"enum", q + "state/last-cnp/action", Leaf{"cnp-action (enumeration)", ""}},
		{"timestamp", q + "state/last-cnp/timestamp", Leaf{"timeticks64 (uint64)", "nanoseconds"}},
		{"boolean", q + "state/ecn-marking-active", Leaf{"boolean", ""}},
		{"interface rate", "/lhcnp/interfaces/interface/state/effective-port-rate", Leaf{"uint64", "bits-per-second"}},
		{"list key leafref", q + "id", Leaf{"uint8", "identifier"}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			got, ok := c.Lookup(tt.path)
			if !ok {
				t.Fatalf("Lookup(%s): not found", tt.path)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Lookup(%s) (-want +got):\n%s", tt.path, diff)
			}
		})
	}
	if _, ok := c.Lookup(q + "state/no-such-leaf"); ok {
		t.Error("Lookup of an unknown path succeeded")
	}
	if _, ok := c.Lookup(q + "state"); ok {
		t.Error("Lookup of a container succeeded")
	}
}

// TestMatchesGenerated: the catalog has exactly the leaves of the generated
// schema the switches serve, and every numeric one has a unit.
func TestMatchesGenerated(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	ys, err := oc.Schema()
	if err != nil {
		t.Fatal(err)
	}
	var generated []string
	var walk func(e *goyang.Entry, path string)
	walk = func(e *goyang.Entry, path string) {
		for name, child := range e.Dir {
			p := path + "/" + name
			if child.IsLeaf() || child.IsLeafList() {
				generated = append(generated, p)
				continue
			}
			walk(child, p)
		}
	}
	walk(ys.RootSchema(), "")
	if len(generated) == 0 {
		t.Fatal("no leaves in the generated schema")
	}
	if len(generated) != c.Len() {
		t.Errorf("catalog has %d leaves, the generated schema %d", c.Len(), len(generated))
	}
	for _, p := range generated {
		l, ok := c.Lookup(p)
		if !ok {
			t.Errorf("%s: in the generated schema, not in the catalog", p)
			continue
		}
		numeric := strings.Contains(l.YangType, "int") || strings.Contains(l.YangType, "decimal64")
		if numeric && l.Unit == "" {
			t.Errorf("%s: numeric (%s) without a unit", p, l.YangType)
		}
	}
}
