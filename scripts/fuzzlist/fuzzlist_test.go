// Package fuzzlist checks scripts/fuzz.sh's listing of the module's fuzz
// targets: make test fuzzes what the script lists, so a target it missed
// would never be fuzzed.
package fuzzlist

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestFuzzListing: `fuzz.sh --list` names every fuzz target Go's parser
// finds in the module's test files (a func FuzzXxx taking one *testing.F),
// each with its package directory, and nothing else.
func TestFuzzListing(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Fuzz") || len(fn.Type.Params.List) != 1 {
				continue
			}
			star, ok := fn.Type.Params.List[0].Type.(*ast.StarExpr)
			if !ok {
				continue
			}
			sel, ok := star.X.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "F" {
				continue
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "testing" {
				continue
			}
			want = append(want, "./"+filepath.ToSlash(rel)+" "+fn.Name.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	want = slices.Compact(want)
	if len(want) == 0 {
		t.Fatal("the parser found no fuzz target: the walk is wrong")
	}

	cmd := exec.Command("bash", "scripts/fuzz.sh", "--list")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("fuzz.sh --list: %v\n%s", err, out)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("fuzz.sh does not list %s", w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("fuzz.sh lists %s, which is not a fuzz target", g)
		}
	}
}
