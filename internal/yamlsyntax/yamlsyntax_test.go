package yamlsyntax

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// TestLocate runs yaml.v3 on each document and checks where its error is
// placed: a tab at the line and column where it is, not at the line of
// the block above it that yaml.v3 names; a parser error at its line, not
// the one above (yaml.v3 prints it 0-based), and one on the first line at
// line 1 (yaml.v3 prints none).
func TestLocate(t *testing.T) {
	type place struct {
		Line, Col int
		Reason    string
	}
	for _, tt := range []struct {
		desc, doc string
		want      place
	}{
		{"tab under a nested key", "a:\n  b: 1\n\tc: 2\n", place{3, 1, "a tab in the indentation (YAML indents with spaces only)"}},
		{"tab after spaces", "x: 1\na:\n    b: 1\n  \tc: 2\n", place{4, 3, "a tab in the indentation (YAML indents with spaces only)"}},
		{"tab before a list item", "a:\n  - x\n\t- y\n", place{3, 1, "a tab in the indentation (YAML indents with spaces only)"}},
		{"tab on the first line", "\ta: 1\n", place{1, 1, "a tab in the indentation (YAML indents with spaces only)"}},
		{"tab as the only indentation", "a:\n\tb: 1\n", place{2, 1, "a tab in the indentation (YAML indents with spaces only)"}},
		{"unclosed list", "a: 1\nb: 2\nc: [1, 2\nd: 4\n", place{3, 1, "did not find expected ',' or ']'"}},
		{"list item among keys", "a: 1\nb: 2\n- c\nd: 4\n", place{3, 1, "did not find expected key"}},
		{"unclosed mapping", "a: 1\nb: 2\nc: {x: 1\nd: 4\n", place{3, 1, "did not find expected ',' or '}'"}},
		{"a scanner's line", "a: 1\nb: 2\nc: d: e\nf: 4\n", place{3, 1, "mapping values are not allowed in this context"}},
		{"on the first line", "a: b: c\n", place{1, 1, "mapping values are not allowed in this context"}},
		{"no line", "a: *x\n", place{0, 0, "unknown anchor 'x' referenced"}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var n yaml.Node
			err := yaml.Unmarshal([]byte(tt.doc), &n)
			if err == nil {
				t.Fatalf("yaml.Unmarshal(%q) succeeded", tt.doc)
			}
			var got place
			got.Line, got.Col, got.Reason = Locate([]byte(tt.doc), err.Error())
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Locate(%q, %q) (-want, +got):\n%s", tt.doc, err, diff)
			}
		})
	}
}

// TestKindName: the words the scenario loader and cliconf name a node by
// where they wanted another kind.
func TestKindName(t *testing.T) {
	for _, tt := range []struct{ desc, doc, want string }{
		{"mapping", "{a: 1}", "a mapping"},
		{"list", "[1, 2]", "a list"},
		{"scalar", "fast", `"fast"`},
		{"quoted scalar", `"1"`, `"1"`},
		{"null", "~", "empty"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(tt.doc), &doc); err != nil {
				t.Fatal(err)
			}
			if got := KindName(doc.Content[0]); got != tt.want {
				t.Errorf("KindName(%s) = %s, want %s", tt.doc, got, tt.want)
			}
		})
	}
	if got := KindName(&yaml.Node{Kind: yaml.AliasNode}); got != "unexpected yaml" {
		t.Errorf("KindName(an alias) = %s", got)
	}
}
