package yangstyle

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite ../../docs/yang-tree.txt from yanglint")

// The lhcnp modules, relative to this package.
var lhcnpModules = []string{"../lhcnp.yang", "../lhcnp-types.yang"}

func TestLhcnpModulesFollowStyle(t *testing.T) {
	probs, err := Check(lhcnpModules, "..")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Errorf("%v", p)
	}
}

// The testdata modules (good.yang, bad-*.yang) are small "widgets"
// modules of their own (namespace urn:lhcnp:test:*), not copies of the
// lhcnp modules: each has one revision, 2026-03-01, the lhcnp modules'
// first, and keeps it when lhcnp.yang gets a new one (2026-12-03,
// 2026-12-06, 2026-12-07). No rule reads a revision statement, so their
// date says nothing about the model; the model itself is checked by
// TestLhcnpModulesFollowStyle.
func TestGoodModule(t *testing.T) {
	probs, err := Check([]string{"testdata/good.yang"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Errorf("unexpected problem in good.yang: %v", p)
	}
}

// TestBadModules checks that each rule catches the module that breaks it and
// names the node at fault.
func TestBadModules(t *testing.T) {
	for _, tt := range []struct {
		file     string
		rule     Rule
		wantNode string
	}{
		{"bad-description.yang", RuleDescription, "grouping widget-config / leaf size"},
		{"bad-name.yang", RuleName, "grouping widget-config / leaf Size"},
		{"bad-enum.yang", RuleEnumName, "typedef colour / type enumeration / enum dark-red"},
		{"bad-grouping.yang", RuleGroupingName, "grouping widgets-stuff"},
		{"bad-content.yang", RuleContainerContent, "container state"},
		{"bad-placement.yang", RuleLeafPlacement, "/widgets/widget/note"},
		{"bad-config-false.yang", RuleConfigState, "/widgets/widget/state"},
		{"bad-repeat.yang", RuleStateRepeatsConfig, "/widgets/widget/state/size"},
		{"bad-key-type.yang", RuleListKey, "/widgets/widget/name"},
		{"bad-key-path.yang", RuleListKey, "/widgets/widget/name"},
		{"bad-list-container.yang", RuleListContainer, "/widgets/widget"},
		{"bad-units.yang", RuleUnits, "/widgets/widget/config/size"},
		{"bad-counter-place.yang", RuleCounters, "/widgets/widget/state/stray-frobs"},
		{"bad-counter-type.yang", RuleCounters, "/widgets/widget/state/counters/frobs"},
		{"bad-timestamp.yang", RuleTimestamp, "/widgets/widget/state/last-change-time"},
		{"bad-timestamp-units.yang", RuleTimestamp, "/widgets/widget/state/last-change-time"},
	} {
		t.Run(tt.file, func(t *testing.T) {
			probs, err := Check([]string{filepath.Join("testdata", tt.file)})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, p := range probs {
				if p.Rule == tt.rule && strings.Contains(p.Node, tt.wantNode) {
					found = true
				}
				if !strings.Contains(p.String(), p.Node) {
					t.Errorf("message %q does not name the node", p)
				}
			}
			if !found {
				t.Errorf("no %s problem naming %q; got %v", tt.rule, tt.wantNode, probs)
			}
			if len(probs) > 3 {
				t.Errorf("one breach reported as %d problems, fixture breaks more than its rule? %v", len(probs), probs)
			}
		})
	}
}

func TestCheckReportsUnparsable(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "broken.yang")
	if err := os.WriteFile(f, []byte("module broken { leaf x { type nosuchtype; } "), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Check([]string{f}); err == nil {
		t.Error("Check accepted a module that does not parse")
	}
}

func yanglint(t *testing.T) string {
	t.Helper()
	yl, err := exec.LookPath("yanglint")
	if err != nil {
		if os.Getenv("LHCNP_ORACLES") == "required" {
			t.Fatal("yanglint not installed and LHCNP_ORACLES=required (run scripts/deps.sh)")
		}
		t.Skip("yanglint not installed; scripts/yanglint.sh installs it")
	}
	return yl
}

// TestYanglintClean runs libyang over the modules: no error and no warning.
func TestYanglintClean(t *testing.T) {
	yl := yanglint(t)
	cmd := exec.Command(yl, append([]string{"-p", ".."}, lhcnpModules...)...)
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Errorf("yanglint: %v\n%s", err, out)
	}
}

// TestYanglintTreeCurrent checks that docs/yang-tree.txt is what yanglint
// prints for the modules now; -update rewrites it.
func TestYanglintTreeCurrent(t *testing.T) {
	yl := yanglint(t)
	cmd := exec.Command(yl, "-p", "..", "-f", "tree", "../lhcnp.yang")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	got, err := cmd.Output()
	if err != nil || stderr.Len() != 0 {
		t.Fatalf("yanglint -f tree: %v\n%s", err, stderr.String())
	}
	const golden = "../../docs/yang-tree.txt"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (scripts/yanglint.sh -u or go test -update writes it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s is stale: run scripts/yanglint.sh -u (or go test ./yang/yangstyle -update)", golden)
	}
}
