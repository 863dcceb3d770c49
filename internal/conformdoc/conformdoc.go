// Package conformdoc reads the tests docs/conformance.md names, for the
// tests that check the document (lhcnp's and fastcnp's TestConformanceDoc):
// a row naming a test, or a subtest, that was renamed or removed names
// nothing, and they fail.
package conformdoc

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Ref is a test the document names: `pkg.TestName`, `pkg.TestName/sub`
// (a subtest, each level of a nested one), or the shorthand `.../sub`,
// another subtest of the test named before it on the line.
type Ref struct {
	Pkg, Test, Sub string
	Line           int // 1-based, in the text given to Refs
}

func (r Ref) String() string {
	if r.Sub == "" {
		return r.Pkg + "." + r.Test
	}
	return r.Pkg + "." + r.Test + "/" + r.Sub
}

var refRE = regexp.MustCompile("`(?:([a-z0-9]+)\\.(Test[A-Za-z0-9_]+)(/[^`]*)?|\\.\\.\\./([^`]+))`")

// Refs returns the tests text names, in order, a shorthand resolved to the
// test before it on its line; a shorthand with none before it is an error.
func Refs(text string) ([]Ref, []error) {
	var refs []Ref
	var errs []error
	for i, line := range strings.Split(text, "\n") {
		var last *Ref
		for _, m := range refRE.FindAllStringSubmatch(line, -1) {
			if m[4] != "" {
				if last == nil {
					errs = append(errs, fmt.Errorf("line %d: `.../%s` follows no test on its line", i+1, m[4]))
					continue
				}
				refs = append(refs, Ref{Pkg: last.Pkg, Test: last.Test, Sub: m[4], Line: i + 1})
				continue
			}
			refs = append(refs, Ref{Pkg: m[1], Test: m[2], Sub: strings.TrimPrefix(m[3], "/"), Line: i + 1})
			last = &refs[len(refs)-1]
		}
	}
	return refs, errs
}

// stringLitRE finds the string literals of a test source.
var stringLitRE = regexp.MustCompile(`"((?:[^"\\\n]|\\.)*)"`)

// Check reports every ref of a package in dirs (its directory under root)
// whose test function does not exist in the package's test files, or
// whose subtest (each level) is not one of the package's string literals
// as go test names subtests (spaces as underscores). Refs of other
// packages are not checked.
func Check(root string, dirs map[string]string, refs []Ref) ([]error, error) {
	sources := map[string]string{}
	var errs []error
	for _, r := range refs {
		dir, ok := dirs[r.Pkg]
		if !ok {
			continue
		}
		src, ok := sources[r.Pkg]
		if !ok {
			files, err := filepath.Glob(filepath.Join(root, dir, "*_test.go"))
			if err != nil {
				return nil, err
			}
			var b strings.Builder
			for _, fn := range files {
				c, err := os.ReadFile(fn)
				if err != nil {
					return nil, err
				}
				b.Write(c)
			}
			src = b.String()
			sources[r.Pkg] = src
		}
		if !strings.Contains(src, "func "+r.Test+"(") {
			errs = append(errs, fmt.Errorf("line %d names %s.%s, which does not exist", r.Line, r.Pkg, r.Test))
			continue
		}
		for _, sub := range strings.Split(r.Sub, "/") {
			if sub != "" && !subtestNamed(src, sub) {
				errs = append(errs, fmt.Errorf("line %d names %s, but no subtest of %s is called %q", r.Line, r, r.Pkg, sub))
			}
		}
	}
	return errs, nil
}

// subtestNamed says whether sub is a subtest name of src: one of its string
// literals with spaces as underscores (go test's naming; a name made at
// run time is not found).
func subtestNamed(src, sub string) bool {
	for _, m := range stringLitRE.FindAllStringSubmatch(src, -1) {
		if strings.ReplaceAll(m[1], " ", "_") == sub {
			return true
		}
	}
	return false
}
