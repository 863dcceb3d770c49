package main

import (
	"flag"
	"fmt"

	"github.com/lhcnp/lhcnp/dataplane-sim/family"
	"github.com/lhcnp/lhcnp/internal/cliconf"
)

// familySetFlags are the flags of the commands that work on a seed set of
// a scenario family (sim generate, sim eval): --family FILE, --set NAME and
// --out DIR.
type familySetFlags struct {
	spec, set, out *string
	both           bool // --set both is accepted: train, then test
	specGiven      bool // --family was given: not its default (fileSource)
}

// newFamilySetFlags defines them on fs: set is the default of --set, both
// whether it accepts "both", out what --out is for.
func newFamilySetFlags(fs *flag.FlagSet, set string, both bool, out string) *familySetFlags {
	sets := "train or test"
	if both {
		sets = "train, test or both"
	}
	return &familySetFlags{
		spec: fs.String("family", "scenarios/family/tuner.yaml", "the family spec"),
		set:  fs.String("set", set, "the seed set: "+sets),
		out:  fs.String("out", "", out+" (created if needed); required"),
		both: both,
	}
}

// parse parses args, flags anywhere among them: no other argument, and
// --out given.
func (f *familySetFlags) parse(fs *flag.FlagSet, args []string) error {
	rest, err := cliconf.ParseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", rest[0])}
	}
	f.specGiven = givenFlags(fs)["family"]
	if err := checkOutDir(fs, *f.out); err != nil {
		return err
	}
	return nil
}

// load reads the family spec and returns it with the names of the seed
// sets --set chose, in order.
func (f *familySetFlags) load() (*family.Spec, []string, error) {
	s, err := f.loadSpec()
	if err != nil {
		return nil, nil, err
	}
	if f.both && *f.set == "both" {
		return s, []string{"train", "test"}, nil
	}
	if _, ok := s.Sets()[*f.set]; !ok {
		want := "train or test"
		if f.both {
			want = "train, test or both"
		}
		return nil, nil, usageError{fmt.Sprintf("--set: %q: want %s", *f.set, want)}
	}
	return s, []string{*f.set}, nil
}

// loadSpec reads the family spec of --family (its default built into
// lhcnp when the working directory has none: fileSource).
func (f *familySetFlags) loadSpec() (*family.Spec, error) {
	return loadFamily(*f.spec, !f.specGiven)
}
