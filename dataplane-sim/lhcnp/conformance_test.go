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

	"github.com/lhcnp/lhcnp/internal/conformdoc"
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

// pkgDirs are the packages whose tests docs/conformance.md names, by the
// name the document gives them (`package.TestFunc` in its prose is none).
var pkgDirs = map[string]string{
	"lhcnp": "dataplane-sim/lhcnp", "wire": "dataplane-sim/wire", "sim": "dataplane-sim/sim",
	"dataplane": "server/dataplane", "modeltest": "yang/modeltest", "scenario": "dataplane-sim/scenario",
	"fastcnp": "dataplane-sim/fastcnp", "rateadvice": "dataplane-sim/rateadvice", "switchcnp": "dataplane-sim/switchcnp",
	"fcn": "dataplane-sim/fcn", "udpwire": "dataplane-sim/udpwire", "fabric": "server/fabric", "schema": "gnmi/schema",
	"policy": "tuner/policy", "tuner": "tuner", "main": "cmd/lhcnp",
}

// TestConformanceDoc checks docs/conformance.md against the draft: one row
// per keyword of §5 to §9 (44 MUST, 1 MUST NOT, 21 SHOULD, 9 RECOMMENDED,
// 9 MAY, recounted from the draft when it is at hand), numbered in order,
// and every test and subtest the whole document names (every mechanism's
// table) exists.
func TestConformanceDoc(t *testing.T) {
	f, err := os.Open(filepath.Join(repoRoot, "docs", "conformance.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rowRE := regexp.MustCompile(`^\| (\d+) \| [0-9.]+ \| ([A-Z ]+) \|`)
	got := map[string]int{}
	var doc strings.Builder
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		doc.WriteString(line)
		doc.WriteByte('\n')
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
	// Every named test, and subtest, exists in its package (a row's
	// `.../sub` is a subtest of the test named before it).
	refs, errs := conformdoc.Refs(doc.String())
	missing, err := conformdoc.Check(repoRoot, pkgDirs, refs)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range append(errs, missing...) {
		t.Errorf("docs/conformance.md: %v", e)
	}
}
