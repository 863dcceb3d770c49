package scenario

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWithCoexists: Rate Advice runs beside a notification mechanism on the
// same node (a CNP still cuts below the advice), and every block's nodes
// are congestion-aware.
func TestWithCoexists(t *testing.T) {
	sc, err := Parse("with.yaml", []byte(threeSwitches+`  kind: long-haul-cnp
  nodes: [s1]
  with:
    - {kind: rate-advice, nodes: [s1, s3]}
`))
	if err != nil {
		t.Fatal(err)
	}
	type block struct {
		Kind  MechanismKind
		Nodes []string
	}
	got := []block{{sc.Mechanism.Kind, sc.Mechanism.Nodes}}
	for _, w := range sc.Mechanism.With {
		got = append(got, block{w.Kind, w.Nodes})
	}
	want := []block{{MechanismLongHaulCNP, []string{"s1"}}, {MechanismRateAdvice, []string{"s1", "s3"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("blocks (-want +got):\n%s", diff)
	}
	var aware []string
	for _, s := range sc.Switches {
		if s.CongestionAware {
			aware = append(aware, s.Name)
		}
	}
	if diff := cmp.Diff([]string{"s1", "s3"}, aware); diff != "" {
		t.Errorf("congestion-aware switches (-want +got):\n%s", diff)
	}
}

// TestCanCoexist is the table behind the refusal.
func TestCanCoexist(t *testing.T) {
	kinds := []MechanismKind{MechanismLongHaulCNP, MechanismFastCNP, MechanismFCN, MechanismRateAdvice}
	var got []string
	for _, a := range kinds {
		for _, b := range kinds {
			if CanCoexist(a, b) {
				got = append(got, string(a)+"+"+string(b))
			}
		}
	}
	want := []string{"long-haul-cnp+rate-advice", "fast-cnp+rate-advice", "fcn+rate-advice",
		"rate-advice+long-haul-cnp", "rate-advice+fast-cnp", "rate-advice+fcn"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pairs that coexist (-want +got):\n%s", diff)
	}
	if r := coexistReason(MechanismFastCNP, MechanismFastCNP); !strings.Contains(r, "twice") {
		t.Errorf("reason for the same kind twice: %q", r)
	}
}
