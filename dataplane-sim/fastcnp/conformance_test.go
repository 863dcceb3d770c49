package fastcnp

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/internal/conformdoc"
)

const repoRoot = "../.."

var (
	keywordRE  = regexp.MustCompile(`\b(MUST NOT|MUST|SHOULD NOT|SHOULD|NOT RECOMMENDED|RECOMMENDED|MAY|REQUIRED|SHALL NOT|SHALL|OPTIONAL)\b`)
	rowRE      = regexp.MustCompile(`^\| FC-(\d+) \| [0-9.]+ \| ([A-Z ]+) \|`)
	tagRE      = regexp.MustCompile(`<[^>]*>`)
	pkgDirByID = map[string]string{"fastcnp": "dataplane-sim/fastcnp", "wire": "dataplane-sim/wire",
		"sim": "dataplane-sim/sim", "dataplane": "server/dataplane", "rateadvice": "dataplane-sim/rateadvice",
		"switchcnp": "dataplane-sim/switchcnp", "fcn": "dataplane-sim/fcn", "lhcnp": "dataplane-sim/lhcnp"}
)

// TestConformanceDoc checks the Fast CNP table of docs/conformance.md: one
// row per keyword of §3 to §5 of the draft (recounted from the draft when
// it is at hand), numbered in order, and every test it names exists.
func TestConformanceDoc(t *testing.T) {
	want := map[string]int{"MUST": 9, "MUST NOT": 1, "RECOMMENDED": 1, "MAY": 1}
	if b, err := os.ReadFile(filepath.Join(repoRoot, "..", "shared", "spec", "draft-xiao-rtgwg-rocev2-fast-cnp-01.xml")); err == nil {
		s := string(b)
		start := strings.Index(s, `title="RoCEv2 Data Packet and CNP formats"`)
		end := strings.Index(s, `title="IANA Considerations"`)
		if start < 0 || end < start {
			t.Fatal("draft: section titles not found")
		}
		got := map[string]int{}
		for _, m := range keywordRE.FindAllString(tagRE.ReplaceAllString(s[start:end], ""), -1) {
			got[m]++
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("keywords of §3-§5 in the draft (-stated +counted):\n%s", diff)
		}
	}
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "conformance.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "# Conformance: draft-xiao-rtgwg-rocev2-fast-cnp-01")
	if i < 0 {
		t.Fatal("docs/conformance.md has no Fast CNP section")
	}
	section := doc[i:]
	if j := strings.Index(section[1:], "\n# "); j >= 0 {
		section = section[:j+1]
	}
	rows := map[string]int{}
	n := 0
	for _, line := range strings.Split(section, "\n") {
		m := rowRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n++
		if m[1] != strconv.Itoa(n) {
			t.Errorf("row FC-%s out of order, want FC-%d", m[1], n)
		}
		rows[m[2]]++
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("rows by keyword (-draft +doc):\n%s", diff)
	}
	// The tests and subtests every mechanism's table names (this section
	// and those after it: Rate Advice, the white paper, FCN) exist.
	refs, errs := conformdoc.Refs(doc[i:])
	missing, err := conformdoc.Check(repoRoot, pkgDirByID, refs)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range append(errs, missing...) {
		t.Errorf("docs/conformance.md (from its Fast CNP section): %v", e)
	}
}
