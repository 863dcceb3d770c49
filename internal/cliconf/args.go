package cliconf

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
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
			return nil, badConfig(flagError(fs, err))
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

// The flag package's messages for an unknown flag and a value it could not
// set (Go 1.26's flag.go, failf).
var (
	flagUnknown = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	flagInvalid = regexp.MustCompile(`(?s)^invalid (?:boolean )?value "(.*)" for (?:flag )?-+([^:]*): (.*)$`)
)

// flagError says the flag package's err as the variables' and the files'
// errors are said: the flag as it is written (--name), the value, and why,
// where the flag package says `invalid value "fast" for flag -speed: parse
// error`: `--speed="fast": not of type float64`, as LHCNP_LAB_SPEED="fast"
// is (a flag of a type of the flag package; a Value of one's own says its
// reason, kept, the value it repeats first said once: `--duration="abc":
// not a duration: …`, not `--duration="abc": "abc" is not a duration: …`).
// Any other error is err.
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if m := flagUnknown.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("unknown flag --%s (%s -h lists them)", m[1], strings.TrimSpace("lhcnp "+fs.Name()))
	}
	m := flagInvalid.FindStringSubmatch(msg)
	if m == nil {
		return err
	}
	value, name, why := m[1], m[2], m[3]
	// The flag package quoted the value (%q): unquoted here, it is quoted
	// once below, as a variable's is ("a\"b", not "a\\\"b").
	if v, err := strconv.Unquote(`"` + value + `"`); err == nil {
		value = v
	}
	if why == "parse error" || why == "value out of range" {
		if f := fs.Lookup(name); f != nil {
			if g, ok := f.Value.(flag.Getter); ok {
				why = fmt.Sprintf("not of type %T", g.Get())
				if m[3] == "value out of range" {
					why = fmt.Sprintf("out of the range of type %T", g.Get())
				}
			}
		}
	}
	return fmt.Errorf("--%s=%q: %s", name, value, saidOnce(why, strconv.Quote(value)))
}

// saidOnce is a Value's reason why without the value it begins with,
// quoted (as the flag package quotes it: %q), and the ": " or " is "
// after it: "\"abc\" is not a duration: …" is "not a duration: …",
// "\"0\": must be greater than zero" is "must be greater than zero". A
// reason that does not begin with the value is as it is.
func saidOnce(why, quoted string) string {
	rest, ok := strings.CutPrefix(why, quoted)
	if !ok {
		return why
	}
	for _, sep := range []string{": ", " is ", " "} {
		if r, ok := strings.CutPrefix(rest, sep); ok && r != "" {
			return r
		}
	}
	return why
}
