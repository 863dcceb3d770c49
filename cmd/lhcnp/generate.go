//go:build !lhcnpstub

package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/lhcnp/lhcnp/dataplane-sim/family"
	"github.com/lhcnp/lhcnp/internal/cliconf"
)

// runGenerate implements `lhcnp sim generate --family FILE --set train|test
// --out DIR`: every scenario of the family's seed set, one file per seed
// (dataplane-sim/family, docs/tuner.md "A family of scenarios").
func runGenerate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sim generate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	spec := fs.String("family", "scenarios/family/tuner.yaml", "the family spec")
	set := fs.String("set", "train", "the seed set: train or test")
	out := fs.String("out", "", "directory for the scenario files (created if needed); required")
	fs.Usage = flagUsage(stderr, fs, "usage: lhcnp sim generate --family FILE --set train|test --out DIR", "",
		"Writes one scenario file per seed of the family's seed set.")
	rest, err := cliconf.ParseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", rest[0])}
	}
	if *out == "" {
		fs.Usage()
		return usageError{"--out DIR is required"}
	}
	s, err := family.LoadFile(*spec)
	if err != nil {
		return err
	}
	seeds, ok := s.Sets()[*set]
	if !ok {
		return usageError{fmt.Sprintf("--set %q: want train or test", *set)}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	for _, seed := range seeds.List() {
		d, text, sc, err := s.Generate(*set, seed)
		if err != nil {
			return err
		}
		p := filepath.Join(*out, sc.Name+".yaml")
		if err := os.WriteFile(p, text, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %s\n", p, d.Short())
	}
	return nil
}
