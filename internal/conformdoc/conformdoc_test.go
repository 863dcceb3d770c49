package conformdoc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRefs(t *testing.T) {
	text := "| 1 | `p.TestA/x`, `.../y` and `q.TestB`, `.../z` |\n| 2 | `.../orphan` then `p.TestC` |"
	refs, errs := Refs(text)
	want := []Ref{
		{Pkg: "p", Test: "TestA", Sub: "x", Line: 1},
		{Pkg: "p", Test: "TestA", Sub: "y", Line: 1},
		{Pkg: "q", Test: "TestB", Line: 1},
		{Pkg: "q", Test: "TestB", Sub: "z", Line: 1},
		{Pkg: "p", Test: "TestC", Line: 2},
	}
	if diff := cmp.Diff(want, refs); diff != "" {
		t.Errorf("refs (-want +got):\n%s", diff)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "line 2: `.../orphan` follows no test") {
		t.Errorf("errors %v, want one for line 2's orphan shorthand", errs)
	}
}

func TestCheck(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := "package p\nfunc TestA(t *testing.T) { t.Run(\"a case\", nil); t.Run(\"b\", nil) }\n"
	if err := os.WriteFile(filepath.Join(root, "p", "a_test.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	refs, _ := Refs("`p.TestA/a_case`, `.../b`, `.../c`, `p.TestGone`, `other.TestX/y`")
	errs, err := Check(root, map[string]string{"p": "p"}, refs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	want := []string{
		`line 1 names p.TestA/c, but no subtest of p is called "c"`,
		"line 1 names p.TestGone, which does not exist",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
