package refsim

import (
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// Stored is one scenario whose reference outputs are stored, compared with
// our runs of it.
type Stored struct {
	Name string
	// DCQCN says whether the scenario's RNICs run DCQCN (the PFC-only
	// incasts do not).
	DCQCN   bool
	Fabric  bool
	Runs    int
	Figures []Figure
}

// StoredOption changes where CompareStored, CheckAllStored and
// CompareAllStored read their files from.
type StoredOption func(*storedOptions)

// storedOptions are the file systems of the stored runs and of the
// scenario files: nil for the operating system's files.
type storedOptions struct {
	ref, scenarios fs.FS
}

// WithStoredFS reads the stored reference runs from fsys (their
// directories slash-separated, as fs.FS wants) instead of the operating
// system's files: lhcnp's copy built into the binary (StoredFiles).
func WithStoredFS(fsys fs.FS) StoredOption {
	return func(o *storedOptions) { o.ref = fsys }
}

// WithScenarioFS reads the scenario files (and the CDF files they name)
// from fsys instead of the operating system's files.
func WithScenarioFS(fsys fs.FS) StoredOption {
	return func(o *storedOptions) { o.scenarios = fsys }
}

func storedOpts(opts []StoredOption) storedOptions {
	var o storedOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// join is filepath.Join for the operating system's files (fsys nil),
// path.Join for an fs.FS's.
func join(fsys fs.FS, elem ...string) string {
	if fsys == nil {
		return filepath.Join(elem...)
	}
	return path.Join(elem...)
}

// glob is filepath.Glob, or fs.Glob in fsys when not nil.
func glob(fsys fs.FS, pattern string) ([]string, error) {
	if fsys == nil {
		return filepath.Glob(pattern)
	}
	return fs.Glob(fsys, pattern)
}

// readFile is os.ReadFile, or fs.ReadFile from fsys when not nil.
func readFile(fsys fs.FS, name string) ([]byte, error) {
	if fsys == nil {
		return os.ReadFile(name)
	}
	return fs.ReadFile(fsys, name)
}

// CompareStored runs our side of the scenario whose reference runs are
// stored in dir (run*.json, each from refSource), with the scenario file
// scenarioDir/NAME.yaml and as many seeds as stored runs, and compares
// them figure by figure.
func CompareStored(dir, scenarioDir string, opts ...StoredOption) (*Stored, error) {
	return compareStored(dir, scenarioDir, storedOpts(opts))
}

func compareStored(dir, scenarioDir string, o storedOptions) (*Stored, error) {
	name := filepath.Base(dir)
	ref, sc, err := loadStored(dir, scenarioDir, o)
	if err != nil {
		return nil, err
	}
	st := &Stored{Name: name, DCQCN: sc.DCQCN.Enabled == nil || *sc.DCQCN.Enabled, Fabric: IsFabric(sc), Runs: len(ref)}
	seed, ecmpSeed := sc.Seed, sc.ECMP.Seed
	var ours []*Summary
	for k := range ref {
		sc.Seed = seed + int64(k)
		var s *Summary
		if st.Fabric {
			sc.ECMP.Seed = ecmpSeed + int64(k)
			s, err = RunOursFabric(sc)
		} else {
			s, err = RunOurs(sc, Bottleneck{Switch: "tor", Peer: "r"}, time.Duration(ref[k].StepNs))
		}
		if err != nil {
			return nil, fmt.Errorf("%s seed %d: %w", name, sc.Seed, err)
		}
		ours = append(ours, s)
	}
	if st.Fabric {
		st.Figures = CompareFabric(ours, ref)
	} else {
		st.Figures = Compare(ours, ref)
	}
	return st, nil
}

// loadStored reads the reference runs stored in dir and the scenario file
// of their name in scenarioDir, refusing runs of another simulator,
// source or scenario.
func loadStored(dir, scenarioDir string, o storedOptions) ([]*Summary, *scenario.Scenario, error) {
	name := filepath.Base(dir)
	ref, err := loadRuns(o.ref, dir)
	if err != nil {
		return nil, nil, err
	}
	for k, r := range ref {
		if r.Source != RefSource || r.Simulator != "reference" || r.Scenario != name {
			return nil, nil, fmt.Errorf("%s run %d: %s from %q (%s), want the reference's %s from %s", dir, k+1, r.Simulator, r.Source, r.Scenario, name, RefSource)
		}
	}
	var scOpts []scenario.Option
	if o.scenarios != nil {
		scOpts = append(scOpts, scenario.WithFS(o.scenarios))
	}
	sc, err := scenario.LoadFile(join(o.scenarios, scenarioDir, name+".yaml"), scOpts...)
	if err != nil {
		return nil, nil, err
	}
	return ref, sc, nil
}

// storedDirs returns the directories under refDir, in name order.
func storedDirs(fsys fs.FS, refDir string) ([]string, error) {
	dirs, err := glob(fsys, join(fsys, refDir, "*"))
	if err != nil {
		return nil, err
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("%s: no stored reference outputs", refDir)
	}
	slices.Sort(dirs)
	return dirs, nil
}

// CheckAllStored refuses what CompareAllStored refuses before its first
// run: no directory under refDir, a stored run it cannot read or of
// another simulator, source or scenario, a scenario file missing or
// refused. A command that compares after other runs checks before the
// first.
func CheckAllStored(refDir, scenarioDir string, opts ...StoredOption) error {
	o := storedOpts(opts)
	dirs, err := storedDirs(o.ref, refDir)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if _, _, err := loadStored(d, scenarioDir, o); err != nil {
			return err
		}
	}
	return nil
}

// CompareAllStored is CompareStored for every directory under refDir, in
// name order.
func CompareAllStored(refDir, scenarioDir string, opts ...StoredOption) ([]*Stored, error) {
	o := storedOpts(opts)
	dirs, err := storedDirs(o.ref, refDir)
	if err != nil {
		return nil, err
	}
	var out []*Stored
	for _, d := range dirs {
		st, err := compareStored(d, scenarioDir, o)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// DCQCNDistance is how far our DCQCN is from the reference over the
// stored scenarios that run DCQCN: the largest |difference| per kind of
// figure, and the figures beyond their tolerance.
type DCQCNDistance struct {
	Scenarios []string
	// Queue is the mean queue (single bottleneck) and the host ports'
	// mean queue (fabrics); Util utilisation and fairness; FCT the FCT
	// percentiles of the incasts and bursts; Slowdown the fabrics' FCT
	// slowdown percentiles by size; all relative.
	Queue, Util, FCT, SlowdownP50, SlowdownP99 float64
	// FirstCutNs is the largest |difference| of the mean time to the
	// first rate cut, in ns (0 and HaveFirstCut false without rate logs).
	FirstCutNs   float64
	HaveFirstCut bool
	// Beyond lists the figures beyond their tolerance: "scenario: figure
	// (difference)".
	Beyond []string
}

// DistanceOfDCQCN summarises the stored comparisons of the scenarios that
// run DCQCN.
func DistanceOfDCQCN(ss []*Stored) DCQCNDistance {
	var d DCQCNDistance
	for _, s := range ss {
		if !s.DCQCN {
			continue
		}
		d.Scenarios = append(d.Scenarios, s.Name)
		for _, f := range s.Figures {
			diff := math.Abs(f.Diff())
			switch {
			case strings.HasPrefix(f.Name, "time to first rate cut"):
				d.FirstCutNs, d.HaveFirstCut = max(d.FirstCutNs, math.Abs(f.Ours-f.Ref)), true
			case strings.HasPrefix(f.Name, "queue, mean"), strings.HasPrefix(f.Name, "queue towards hosts, time mean"):
				d.Queue = max(d.Queue, diff)
			case strings.HasPrefix(f.Name, "bottleneck utilisation"), strings.HasPrefix(f.Name, "Jain"):
				d.Util = max(d.Util, diff)
			case strings.HasPrefix(f.Name, "FCT p"):
				d.FCT = max(d.FCT, diff)
			case strings.HasPrefix(f.Name, "FCT slowdown p50"):
				d.SlowdownP50 = max(d.SlowdownP50, diff)
			case strings.HasPrefix(f.Name, "FCT slowdown p99"):
				d.SlowdownP99 = max(d.SlowdownP99, diff)
			}
			if !f.Within() {
				d.Beyond = append(d.Beyond, fmt.Sprintf("%s: %s (%+.0f %%)", s.Name, f.Name, 100*f.Diff()))
			}
		}
	}
	return d
}

// Cell is the distance in a few words, for a table cell.
func (d DCQCNDistance) Cell() string {
	s := fmt.Sprintf("queue %.0f %%, FCT %.0f %%, slowdown p50 %.0f %% / p99 %.0f %%", 100*d.Queue, 100*d.FCT, 100*d.SlowdownP50, 100*d.SlowdownP99)
	if d.HaveFirstCut {
		s += fmt.Sprintf(", 1st cut %.1f µs", d.FirstCutNs/1000)
	}
	return s
}

// FCTCell is the distance for an FCT table's cell: the FCT percentiles
// and the fat-trees' slowdowns.
func (d DCQCNDistance) FCTCell() string {
	return fmt.Sprintf("FCT %.0f %%, slowdown p50 %.0f %% / p99 %.0f %%", 100*d.FCT, 100*d.SlowdownP50, 100*d.SlowdownP99)
}

// PaperCell is the cell of the rows that run the DCQCN paper's timing.
const PaperCell = "paper timing: not in the reference (fluid model: queue +25–33 %)"

// Footnote explains the column of the results tables that shows the
// distance (docs/results.md).
func (d DCQCNDistance) Footnote() string {
	var b strings.Builder
	fmt.Fprintf(&b, "¹ How far our DCQCN is from the RDMA ns-3 that most RDMA congestion-control papers ran (HPCC's simulator, %s), "+
		"for every row whose RNICs react through DCQCN: the largest difference over the %d stored validation scenarios that run DCQCN "+
		"(%s; docs/validation.md), with NVIDIA's firmware timing as in these rows. "+
		"Mean queue (the bottleneck's while busy; the fat-trees' ports towards hosts) within %.1f %%, utilisation and fairness within %.1f %%, "+
		"FCT p50/p99 of the incasts and bursts within %.1f %%, FCT slowdown per flow size on the fat-tree web-search mixes within %.1f %% (p50) and %.1f %% (p99: "+
		"the reference's flows take one draw of its ECMP hash, and over 20 seeds of ours the reference's figures lie inside ours' range)",
		RefSource, len(d.Scenarios), strings.Join(d.Scenarios, ", "), 100*d.Queue, 100*d.Util, 100*d.FCT, 100*d.SlowdownP50, 100*d.SlowdownP99)
	if d.HaveFirstCut {
		fmt.Fprintf(&b, ", time to the first rate cut within %.1f µs", d.FirstCutNs/1000)
	}
	b.WriteString(".")
	if len(d.Beyond) > 0 {
		fmt.Fprintf(&b, " Beyond tolerance, explained in docs/validation.md: %s.", strings.Join(d.Beyond, "; "))
	}
	b.WriteString(" `make results` reruns our side of every stored scenario against the reference's stored summaries " +
		"(`dataplane-sim/refsim/testdata/ref`). The dcqcn:paper rows run the DCQCN paper's timing (alpha per CNP, a CNP interval), " +
		"which the reference cannot express: only the DCQCN fluid model checks it (our mean queue 25–33 % above its fixed point).")
	return b.String()
}
