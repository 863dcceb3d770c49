package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// runGenerate implements `lhcnp sim generate --family FILE --set train|test
// --out DIR`: every scenario of the family's seed set, one file per seed
// (dataplane-sim/family, docs/tuner.md "A family of scenarios").
func runGenerate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sim generate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fam := newFamilySetFlags(fs, "train", false, "directory for the scenario files")
	fs.Usage = flagUsage(stderr, fs, "usage: lhcnp sim generate --family FILE --set train|test --out DIR", "",
		"Writes one scenario file per seed of the family's seed set.")
	if err := fam.parse(fs, args); err != nil {
		return err
	}
	s, sets, err := fam.load()
	if err != nil {
		return err
	}
	set, out := sets[0], *fam.out
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, seed := range s.Sets()[set].List() {
		d, text, sc, err := s.Generate(set, seed)
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
