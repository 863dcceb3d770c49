package cliconf

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// ParseInterspersed parses args with fs taking flags before, between and
// after the positional arguments (`lhcnp decode FILE.pcap --json` as well
// as `lhcnp decode --json FILE.pcap`), where fs.Parse stops at the first
// non-flag; it returns the positional arguments in order. After "--" every
// argument is positional, as for fs.Parse. An unknown flag or a value not
// of its flag's type is an error matching ErrConfig, printed by nobody:
// the flag package would print it and the usage, and the command prints
// it again, so the caller prints it, once. -h is fs.Parse's flag.ErrHelp,
// as it is, the usage printed (fs.Usage).
func ParseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	restore := func() { fs.SetOutput(out); fs.Usage = usage }
	defer restore()
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		restore()
		if usage != nil {
			usage()
		} else { // the flag package's default usage
			fmt.Fprintf(out, "Usage of %s:\n", fs.Name())
			fs.PrintDefaults()
		}
	}
	return pos, err
}

func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, badConfig(err)
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
