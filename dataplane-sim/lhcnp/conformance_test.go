package lhcnp

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// repoRoot is the module root, two directories up from this package.
const repoRoot = "../.."

// keywordRE finds the RFC 2119 keywords of the draft; MUST NOT before MUST.
var keywordRE = regexp.MustCompile(`\b(MUST NOT|MUST|SHOULD NOT|SHOULD|NOT RECOMMENDED|RECOMMENDED|MAY|REQUIRED|SHALL NOT|SHALL|OPTIONAL)\b`)

// draftKeywords counts the keywords of §5 to §9 of the draft, when the
// draft is found next to the repository (../shared/spec); nil otherwise.
func draftKeywords(t *testing.T) map[string]int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "..", "shared", "spec", "draft-tian-ccwg-long-haul-cnp-00.txt"))
	if err != nil {
		return nil
	}
	text := string(b)
	start := strings.Index(text, "\n5. Protocol Specification")
	end := strings.Index(text, "\n10. IANA Considerations")
	if start < 0 || end < start {
		t.Fatal("draft: §5 or §10 heading not found")
	}
	counts := map[string]int{}
	for _, m := range keywordRE.FindAllString(text[start:end], -1) {
		counts[m]++
	}
	return counts
}

// testFuncRE finds `pkg.TestName` (and `pkg.TestName/subtest`) in the doc.
var testFuncRE = regexp.MustCompile("`(lhcnp|wire|sim|dataplane|modeltest|scenario)\\.(Test[A-Za-z0-9_]+)(/[^`]*)?`")

var pkgDirs = map[string]string{
	"lhcnp": "dataplane-sim/lhcnp", "wire": "dataplane-sim/wire", "sim": "dataplane-sim/sim",
	"dataplane": "server/dataplane", "modeltest": "yang/modeltest", "scenario": "dataplane-sim/scenario",
}

// stringLitRE finds the string literals of a test source.
var stringLitRE = regexp.MustCompile(`"((?:[^"\\\n]|\\.)*)"`)

// subtestNamed says whether src has a string literal that go test names
// sub (its spaces as underscores).
func subtestNamed(src, sub string) bool {
	for _, m := range stringLitRE.FindAllStringSubmatch(src, -1) {
		if strings.ReplaceAll(m[1], " ", "_") == sub {
			return true
		}
	}
	return false
}

// TestConformanceDoc checks docs/conformance.md against the draft: one row
// per keyword of §5 to §9 (44 MUST, 1 MUST NOT, 21 SHOULD, 9 RECOMMENDED,
// 9 MAY, recounted from the draft when it is at hand), numbered in order,
// and every test the document names exists.
func TestConformanceDoc(t *testing.T) {
	f, err := os.Open(filepath.Join(repoRoot, "docs", "conformance.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rowRE := regexp.MustCompile(`^\| (\d+) \| [0-9.]+ \| ([A-Z ]+) \|`)
	got := map[string]int{}
	var refs [][3]string
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, m := range testFuncRE.FindAllStringSubmatch(line, -1) {
			refs = append(refs, [3]string{m[1], m[2], strings.TrimPrefix(m[3], "/")})
		}
		m := rowRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n++
		if m[1] != strconv.Itoa(n) {
			t.Errorf("row %s out of order, want %d", m[1], n)
		}
		got[m[2]]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"MUST": 44, "MUST NOT": 1, "SHOULD": 21, "RECOMMENDED": 9, "MAY": 9}
	if d := draftKeywords(t); d != nil {
		if diff := cmp.Diff(want, d); diff != "" {
			t.Errorf("keywords of §5-§9 in the draft (-stated +counted):\n%s", diff)
		}
		want = d
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows by keyword in docs/conformance.md (-draft +doc):\n%s", diff)
	}
	// Every named test exists in its package.
	sources := map[string]string{}
	for _, r := range refs {
		pkg, name := r[0], r[1]
		src, ok := sources[pkg]
		if !ok {
			files, _ := filepath.Glob(filepath.Join(repoRoot, pkgDirs[pkg], "*_test.go"))
			var b strings.Builder
			for _, fn := range files {
				c, err := os.ReadFile(fn)
				if err != nil {
					t.Fatal(err)
				}
				b.Write(c)
			}
			src = b.String()
			sources[pkg] = src
		}
		if !strings.Contains(src, "func "+name+"(") {
			t.Errorf("docs/conformance.md names %s.%s, which does not exist", pkg, name)
		}
		// A subtest named is one of the package's subtest names (each level
		// of a nested one): a renamed subtest does not leave the row naming
		// nothing.
		for _, sub := range strings.Split(r[2], "/") {
			if sub != "" && !subtestNamed(src, sub) {
				t.Errorf("docs/conformance.md names %s.%s/%s, but no subtest of %s is called %q", pkg, name, r[2], pkg, sub)
			}
		}
	}
}
