package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/lhcnp/lhcnp/dataplane-sim/compare"
	"github.com/lhcnp/lhcnp/dataplane-sim/family"
)

// simGenerateUsage is sim generate's usage line (its -h's and sim -h's).
const simGenerateUsage = "lhcnp sim generate [--family FILE] [--set train|test] --out DIR [--seed N [--sim-seed K]]"

// runGenerate implements `lhcnp sim generate [--family FILE] [--set train|test]
// --out DIR`: every scenario of the family's seed set, one file per seed
// (dataplane-sim/family, docs/tuner.md "A family of scenarios"). With
// --seed N [--sim-seed K] it writes one scenario, as the development runs
// make it (compare.DevSpec: a train seed, or with --set test a seed of a
// retired held-out set, never of the fresh one) at simulation seed K (the
// file's and its web-search blocks' seeds, family.SimSeed): the file a
// tuned or static run of `sim eval` ran, to trace it alone.
func runGenerate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sim generate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fam := newFamilySetFlags(fs, "train", false, "directory for the scenario files")
	one := fs.Int64("seed", 0, "only this seed: of the train set, or with --set test of a retired held-out set (the fresh one is refused)")
	k := fs.Int("sim-seed", 0, fmt.Sprintf("with --seed: the k-th simulation seed's file (seed + k·%d), as sim eval runs it", family.SimSeedStride))
	fs.Usage = flagUsage(stderr, fs, "usage: "+simGenerateUsage, "",
		"Writes one scenario file per seed of the family's seed set, or the one --seed names.", defaultFilesNote(fs))
	if err := fam.parse(fs, args); err != nil {
		return err
	}
	if *k != 0 && *one == 0 {
		return usageError{"--sim-seed is for --seed"}
	}
	if *k < 0 || *k > family.MaxSimSeeds {
		return usageError{fmt.Sprintf("--sim-seed: %d: want 0..%d", *k, family.MaxSimSeeds)}
	}
	s, sets, err := fam.load()
	if err != nil {
		return err
	}
	set, out := sets[0], *fam.out
	seeds := s.Sets()[set].List()
	if *one != 0 {
		if s, err = compare.DevSpec(s, set, *one); err != nil {
			// A seed of no development set: the command line's mistake.
			return usageError{"--seed: " + err.Error()}
		}
		seeds = []int64{*one}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, seed := range seeds {
		d, text, sc, err := s.GenerateAt(set, seed, *k)
		if err != nil {
			return err
		}
		p := filepath.Join(out, sc.Name+".yaml")
		if err := os.WriteFile(p, text, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %s\n", p, d.Short())
	}
	return nil
}
