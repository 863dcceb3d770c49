// Command refsim compares our models with the RDMA ns-3 simulator (the HPCC
// simulator, scratch/third) on one of our scenarios (package
// dataplane-sim/refsim). It never builds that simulator: give it the path
// of a build of its public source (docs/validation.md names the repository
// and commit; the build is not in this repository, by workplace rule).
//
//	refsim translate -scenario S -bottleneck tor:r -dir D
//	    writes D/config.txt, topology.txt, flow.txt, trace.txt and notes.txt
//	refsim run -scenario S -bottleneck tor:r -dir D -bin PATH/third -source REPO@COMMIT -o REF.json
//	    translates, runs PATH/third D/config.txt (timed) and summarises its outputs
//	refsim ours -scenario S -bottleneck tor:r -o OURS.json
//	    runs the scenario on our models and summarises it the same way
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
	out := fs.String("o", "", "summary JSON to write")
	step := fs.Duration("step", 100*time.Microsecond, "time step of the summarised series")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *scPath == "" {
		return errors.New("-scenario is required")
	}
	sc, err := scenario.LoadFile(*scPath)
	if err != nil {
		return err
	}
	sw, peer, ok := strings.Cut(*bnFlag, ":")
	if !ok {
		return fmt.Errorf("-bottleneck %q: want SWITCH:PEER", *bnFlag)
	}
	bn := refsim.Bottleneck{Switch: sw, Peer: peer}
	switch args[0] {
	case "ours":
		s, err := refsim.RunOurs(sc, bn, *step)
		if err != nil {
			return err
		}
		s.Command = "refsim " + strings.Join(args, " ")
		return write(*out, s)
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
	cmd := exec.CommandContext(context.Background(), *bin, filepath.Join(abs, "config.txt"))
	log, err := os.Create(filepath.Join(abs, "stdout.txt"))
	if err != nil {
		return err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w (see %s)", *bin, err, log.Name())
	}
	wall := time.Since(start)
	files := map[string]*os.File{}
	for _, n := range []string{"mix.tr", "fct.txt", "pfc.txt"} {
		f, err := os.Open(filepath.Join(abs, n))
		if err != nil {
			return err
		}
		defer f.Close()
		files[n] = f
	}
	s, err := refsim.SummariseReference(sc.Name, t, files["mix.tr"], files["fct.txt"], files["pfc.txt"], sc.Duration, *step)
	if err != nil {
		return err
	}
	s.WallSec = wall.Seconds()
	s.Source = *source
	s.Command = "refsim " + strings.Join(args, " ")
	return write(*out, s)
}

func write(path string, s *refsim.Summary) error {
	if path == "" {
		return errors.New("-o is required")
	}
	return refsim.WriteSummary(path, s)
}
