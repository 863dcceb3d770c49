package refsim

import (
	"math"
	"path/filepath"
	"testing"
)

// known are the figures beyond their tolerance that docs/validation.md
// explains, each with the bound on |difference| it was explained at, so
// that a change that widens a known difference fails as well.
var known = map[[2]string]float64{
	{"incast-2-dcqcn", "queue series distance (mean abs. difference / ref. mean)"}: 0.40,
	{"incast-8-dcqcn", "queue series distance (mean abs. difference / ref. mean)"}: 0.45,
	// The fat-trees: the reference's flows take one draw of its ECMP hash
	// in every run; ours over 20 seeds of our hash span the reference's
	// figures (docs/validation.md).
	{"fattree-websearch-30", "queue towards hosts, time p99.9 (B)"}: 0.45,
	{"fattree-websearch-30", "FCT slowdown p50, 100 KB - 1 MB"}:     0.25,
	{"fattree-websearch-50", "FCT slowdown p99, < 100 KB"}:          0.55,
	{"fattree-websearch-50", "FCT slowdown p50, 100 KB - 1 MB"}:     0.25,
	{"fattree-websearch-50", "FCT slowdown p99, 100 KB - 1 MB"}:     0.55,
	// At the edge of its tolerance (-19.3 %); an order of events at one
	// nanosecond changed (docs/engine.md, "One thread, seventh pass")
	// and it is -20.4 %, its mean over 20 seeds unchanged.
	{"fattree-websearch-30", "queue towards hosts, time mean (B)"}: 0.25,
}

// TestAgainstReference runs our side of every scenario whose reference
// outputs are stored in testdata/ref (the RDMA ns-3: 20 runs of each
// single-switch scenario with DCQCN's random marking, 5 of the others and
// of each fat-tree; the command line and the simulator's repository and
// commit are in each file) with as many seeds, and checks every figure
// against its tolerance or its documented difference.
func TestAgainstReference(t *testing.T) {
	dirs, err := filepath.Glob("testdata/ref/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no stored reference outputs: %v", err)
	}
	for _, dir := range dirs {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			st, err := CompareStored(dir, "../../scenarios/refsim")
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range st.Figures {
				t.Logf("%-42s ours %12.5g ref %12.5g diff %+7.1f%% tol %3.0f%%", f.Name, f.Ours, f.Ref, 100*f.Diff(), 100*f.Tol)
				if f.Within() {
					continue
				}
				bound, ok := known[[2]string{name, f.Name}]
				if !ok {
					t.Errorf("%s: ours %g, reference %g: %+.1f %% beyond the tolerance of %.0f %% (and not a documented difference)",
						f.Name, f.Ours, f.Ref, 100*f.Diff(), 100*f.Tol)
				} else if math.Abs(f.Diff()) > bound {
					t.Errorf("%s: %+.1f %%, past the documented difference's bound of %.0f %%", f.Name, 100*f.Diff(), 100*bound)
				}
			}
		})
	}
}

// The figures of two identical sets of runs are all within tolerance.
func TestCompareSelf(t *testing.T) {
	ref, err := LoadRuns("testdata/ref/incast-2-pfc")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Compare(ref, ref) {
		if f.Diff() != 0 {
			t.Errorf("%s: %g against itself", f.Name, f.Diff())
		}
	}
}
