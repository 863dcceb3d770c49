package layering

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/lhcnp/lhcnp/"

// rules: a package under from may import a package of the module under one
// of allowed only (its own room is always allowed; test files are not
// checked: a test may start whatever it checks against). Rooms not listed
// (cmd/, lab/) wire everything together.
var rules = []struct {
	desc    string
	from    string
	allowed []string
}{
	{"the dataplane knows nothing of gNMI, YANG or the services", "dataplane-sim/", []string{"dataplane-sim/", "internal/"}},
	{"the batch runner's closed loop uses the pure policy", "dataplane-sim/sim", []string{"dataplane-sim/", "internal/", "tuner/policy"}},
	{"comparisons run the closed loop too", "dataplane-sim/compare", []string{"dataplane-sim/", "internal/", "tuner/policy"}},
	{"the gNMI libraries know no switch, collector or tuner", "gnmi/", []string{"gnmi/", "gen/", "internal/"}},
	{"the schema calls the node's rules, in the node's types", "gnmi/schema", []string{"gnmi/", "gen/", "internal/", "dataplane-sim/lhcnp", "dataplane-sim/wire"}},
	{"a switch is the gNMI libraries over a dataplane", "server/", []string{"server/", "gnmi/", "gen/", "internal/", "dataplane-sim/"}},
	{"the collector talks gNMI, not to a switch's insides", "collector/", []string{"collector/", "gnmi/", "gen/", "internal/", "yang"}},
	{"the tuner sees telemetry and gNMI only", "tuner/", []string{"tuner/", "gnmi/", "gen/", "internal/"}},
	{"the policy is pure: the node's formulas only (and the wording of a count)", "tuner/policy", []string{"tuner/policy", "dataplane-sim/lhcnp", "dataplane-sim/engine", "dataplane-sim/wire", "internal/plural"}},
}

// under says whether pkg is the room or below it ("tuner/" and "tuner" are
// both the tuner and its packages).
func under(pkg, room string) bool {
	room = strings.TrimSuffix(room, "/")
	return pkg == room || strings.HasPrefix(pkg, room+"/")
}

// rule returns the most specific rule for pkg (the longest from).
func rule(pkg string) (desc string, allowed []string, ok bool) {
	best := -1
	for i, r := range rules {
		if under(pkg, r.from) && (best < 0 || len(r.from) > len(rules[best].from)) {
			best = i
		}
	}
	if best < 0 {
		return "", nil, false
	}
	return rules[best].desc, rules[best].allowed, true
}

func TestImportsFollowThePicture(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		pkg := strings.TrimPrefix(f[0], module)
		desc, allowed, ok := rule(pkg)
		if !ok {
			continue
		}
		checked++
	imports:
		for _, imp := range f[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			imp = strings.TrimPrefix(imp, module)
			for _, a := range allowed {
				if under(imp, a) {
					continue imports
				}
			}
			t.Errorf("%s imports %s: %s (docs/architecture.md)", pkg, imp, desc)
		}
	}
	if checked < 40 {
		t.Fatalf("checked %d packages: go list found too few", checked)
	}
}

func TestRuleOf(t *testing.T) {
	for _, tt := range []struct{ pkg, wantFrom string }{
		{"dataplane-sim/netsim", "dataplane-sim/"},
		{"dataplane-sim/sim", "dataplane-sim/sim"},
		{"gnmi/schema", "gnmi/schema"},
		{"gnmi/store", "gnmi/"},
		{"tuner", "tuner/"},
		{"tuner/policy", "tuner/policy"},
		{"collector/writer", "collector/"},
	} {
		desc, _, ok := rule(tt.pkg)
		var want string
		for _, r := range rules {
			if r.from == tt.wantFrom {
				want = r.desc
			}
		}
		if !ok || desc != want {
			t.Errorf("rule(%s) = %q, want the rule of %s (%q)", tt.pkg, desc, tt.wantFrom, want)
		}
	}
	if _, _, ok := rule("cmd/lhcnp"); ok {
		t.Errorf("cmd/lhcnp has a rule; it wires everything")
	}
}
