// Command refsim compares our models with the RDMA ns-3 simulator (the HPCC
// simulator, scratch/third) on one of our scenarios (package
// dataplane-sim/refsim). It never builds that simulator: give it the path
// of a build of its public source (docs/validation.md names the repository
// and commit; the build is not in this repository, by workplace rule).
//
//	refsim translate -scenario S -bottleneck tor:r -dir D
//	    writes D/config.txt, topology.txt, flow.txt, trace.txt and notes.txt
//	refsim run -scenario S -bottleneck tor:r -dir D -bin PATH/third -source REPO@COMMIT -runs N -o REFDIR
//	    translates, runs PATH/third D/config.txt N times (RngRun 1..N, timed)
//	    and summarises each run's outputs into REFDIR/run1.json ...
//	refsim ours -scenario S -bottleneck tor:r -runs N -o OURSDIR
//	    runs the scenario on our models N times (seeds seed..seed+N-1) and
//	    summarises each run the same way
//	-first K (run, ours) numbers the runs K..K+N-1 (RngRun K..; our seeds
//	    seed+K-1..), to add runs to stored ones
//	refsim compare -ours OURSDIR -ref REFDIR -name NAME
//	    prints the figures of docs/validation.md's table for one scenario
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/refsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/internal/gcgoal"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "refsim:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: refsim translate|run|ours [flags] (refsim CMD -h)")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	scPath := fs.String("scenario", "", "scenario file")
	bnFlag := fs.String("bottleneck", "tor:r", "bottleneck port: SWITCH:PEER")
	dir := fs.String("dir", "", "directory of the reference's input and output files")
	bin := fs.String("bin", "", "the reference's built program (scratch/third)")
	source := fs.String("source", "", "the reference's repository@commit, recorded in the summary")
	out := fs.String("o", "", "directory of the run summaries to write")
	runs := fs.Int("runs", 1, "runs (seeds)")
	first := fs.Int("first", 1, "number of the first run: runs first..first+runs-1 (to add runs to stored ones)")
	oursDir := fs.String("ours", "", "compare: our run summaries")
	refDir := fs.String("ref", "", "compare: the reference's run summaries")
	name := fs.String("name", "", "compare: the scenario's name in the table")
	step := fs.Duration("step", 0, "time step of the summarised series (0: a hundredth of the duration)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if args[0] == "compare" {
		o, err := refsim.LoadRuns(*oursDir)
		if err != nil {
			return err
		}
		r, err := refsim.LoadRuns(*refDir)
		if err != nil {
			return err
		}
		if len(r) > 0 && r[0].HostPortQueueNs != nil {
			fmt.Print(refsim.Table(*name, refsim.CompareFabric(o, r)))
			return nil
		}
		fmt.Print(refsim.Table(*name, refsim.Compare(o, r)))
		return nil
	}
	if *scPath == "" {
		return errors.New("-scenario is required")
	}
	if args[0] != "translate" {
		if *out == "" {
			return errors.New("-o is required")
		}
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
	}
	sc, err := scenario.LoadFile(*scPath)
	if err != nil {
		return err
	}
	if *step <= 0 {
		*step = sc.Duration / 100
	}
	// A generated fabric has no single bottleneck: -bottleneck is ignored.
	sw, peer, ok := strings.Cut(*bnFlag, ":")
	if !ok && !refsim.IsFabric(sc) {
		return fmt.Errorf("-bottleneck %q: want SWITCH:PEER", *bnFlag)
	}
	bn := refsim.Bottleneck{Switch: sw, Peer: peer}
	switch args[0] {
	case "ours":
		defer gcgoal.Start()() // as `lhcnp sim` runs (internal/gcgoal)
		seed, ecmpSeed := sc.Seed, sc.ECMP.Seed
		for k := *first; k < *first+*runs; k++ {
			sc.Seed = seed + int64(k-1)
			var s *refsim.Summary
			var err error
			if refsim.IsFabric(sc) {
				// Our ECMP hash moves with the run too (the reference's is
				// seeded by switch: one set of paths); flows stay.
				sc.ECMP.Seed = ecmpSeed + int64(k-1)
				s, err = refsim.RunOursFabric(sc)
			} else {
				s, err = refsim.RunOurs(sc, bn, *step)
			}
			if err != nil {
				return err
			}
			s.Command = fmt.Sprintf("refsim %s (seed %d)", strings.Join(args, " "), sc.Seed)
			if err := write(*out, k, s); err != nil {
				return err
			}
		}
		return nil
	case "translate", "run":
	default:
		return fmt.Errorf("unknown command %q", args[0])
	}
	if *dir == "" {
		return errors.New("-dir is required")
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	t, err := refsim.Translate(sc, abs, bn)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return err
	}
	for name, text := range t.Files {
		if err := os.WriteFile(filepath.Join(abs, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(abs, "notes.txt"), []byte(strings.Join(t.Notes, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	if args[0] == "translate" {
		return nil
	}
	if *bin == "" {
		return errors.New("-bin is required for run")
	}
	for k := *first; k < *first+*runs; k++ {
		s, err := runReference(*bin, abs, sc, t, k, *step)
		if err != nil {
			return err
		}
		s.Source = *source
		s.Command = fmt.Sprintf("NS_GLOBAL_VALUE=RngRun=%d refsim %s", k, strings.Join(args, " "))
		if err := write(*out, k, s); err != nil {
			return err
		}
	}
	return nil
}

// runReference runs the reference once with ns-3's RngRun = k (the ECN
// marking decisions) and summarises its outputs.
func runReference(bin, dir string, sc *scenario.Scenario, t *refsim.Translation, k int, step time.Duration) (*refsim.Summary, error) {
	cmd := exec.CommandContext(context.Background(), bin, filepath.Join(dir, "config.txt"))
	cmd.Env = append(os.Environ(), fmt.Sprintf("NS_GLOBAL_VALUE=RngRun=%d", k))
	log, err := os.Create(filepath.Join(dir, "stdout.txt")) // read back below
	if err != nil {
		return nil, err
	}
	defer log.Close()
	// Standard error apart: a build that counts its events prints the
	// count there at exit, which would cut into the rate log's last line.
	errLog, err := os.Create(filepath.Join(dir, "stderr.txt"))
	if err != nil {
		return nil, err
	}
	defer errLog.Close()
	cmd.Stdout, cmd.Stderr = log, errLog
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w (see %s and %s)", bin, err, log.Name(), errLog.Name())
	}
	wall := time.Since(start)
	files := map[string]*os.File{}
	for _, n := range []string{"mix.tr", "fct.txt", "pfc.txt"} {
		f, err := os.Open(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		files[n] = f
	}
	s, err := refsim.SummariseReference(sc.Name, t, files["mix.tr"], files["fct.txt"], files["pfc.txt"], sc.Duration, step)
	if err != nil {
		return nil, err
	}
	s.WallSec = wall.Seconds()
	// A build with its rate log on prints each rate decrease: the time to
	// each flow's first cut (docs/validation.md).
	if _, err := log.Seek(0, 0); err != nil {
		return nil, err
	}
	cuts, err := refsim.ReadRateLog(log, t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", log.Name(), err)
	}
	for i := range s.Flows {
		s.Flows[i].FirstCutNs = cuts[s.Flows[i].Name]
	}
	return s, nil
}

func write(dir string, k int, s *refsim.Summary) error {
	return refsim.WriteSummary(filepath.Join(dir, fmt.Sprintf("run%d.json", k)), s)
}
