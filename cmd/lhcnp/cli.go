package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/internal/cliconf"
	"github.com/lhcnp/lhcnp/internal/pgdsn"
)

// cmdLine is the command line of one of lhcnp's configured commands (collector,
// tuner, lab, switch, migrate): a flag set holding a flag for every scalar
// key of the command's configuration struct (internal/cliconf) and the
// command's own flags, --config naming the file, the command's variables
// (its LHCNP_NAME_ prefix) and its usage lines. Each command's parseX
// builds one, and the tests call the same parseX (compose_test: every
// service's command line), so a command line and its check cannot drift.
type cmdLine struct {
	fs     *flag.FlagSet
	cc     *cliconf.Config
	config string   // the --config file, "" for none
	args   []string // the positional arguments, set by parseArgs
	usage  string   // the usage's first line (usage: lhcnp NAME ...)
}

// cliSpec describes a command's command line.
type cliSpec struct {
	name       string   // the subcommand
	prefix     string   // its variables' prefix, LHCNP_NAME_
	configHelp string   // the help of --config
	usage      []string // lines printed before the flags
	opts       []cliconf.Option
	// shown, when set, are the only flags -h lists (with --config and
	// the command's own flags, which newCLI's caller adds: name them
	// too), for a command that reads a few keys of a large
	// configuration; the others are still accepted, and a last line
	// says so.
	shown []string
}

// newCLI registers the keys of *cfg (a pointer to the configuration
// struct, holding the defaults) and --config on a new flag set writing to
// stderr; environ gives the variables (os.Environ, or a test's). The
// caller adds its own flags to c.fs before parse.
func newCLI(spec cliSpec, cfg any, environ func() []string, stderr io.Writer) (*cmdLine, error) {
	c := &cmdLine{fs: flag.NewFlagSet(spec.name, flag.ContinueOnError)}
	if len(spec.usage) > 0 {
		c.usage = spec.usage[0]
	}
	c.fs.SetOutput(stderr)
	c.fs.StringVar(&c.config, "config", "", spec.configHelp)
	opts := append([]cliconf.Option{cliconf.WithEnvPrefix(spec.prefix), cliconf.WithEnviron(environ)}, spec.opts...)
	var err error
	if c.cc, err = cliconf.Register(c.fs, cfg, opts...); err != nil {
		return nil, err
	}
	c.fs.Usage = func() {
		for _, l := range spec.usage {
			fmt.Fprintln(stderr, l)
		}
		if len(spec.shown) == 0 {
			c.fs.PrintDefaults()
			return
		}
		few := flag.NewFlagSet(spec.name, flag.ContinueOnError)
		few.SetOutput(stderr)
		hidden := 0
		c.fs.VisitAll(func(f *flag.Flag) {
			if !slices.Contains(spec.shown, f.Name) {
				hidden++
				return
			}
			few.Var(f.Value, f.Name, f.Usage)
			few.Lookup(f.Name).DefValue = f.DefValue
		})
		few.PrintDefaults()
		if hidden > 0 {
			fmt.Fprintf(stderr, "The %d other keys of the configuration are flags too (their list: lhcnp %s -h); this command reads none of them.\n",
				hidden, strings.Fields(spec.name)[0])
		}
	}
	return c, nil
}

// parse parses args, refuses positional arguments, runs check (if set:
// checks of the command's own flags that need no file), and layers the
// file < the variables < the flags onto the configuration struct.
func (c *cmdLine) parse(args []string, check func() error) error {
	return c.parseArgs(args, 0, check)
}

// parseArgs is parse taking up to maxArgs positional arguments, in c.args
// when check runs. Flags may come before, between and after them
// (cliconf.ParseInterspersed), as for every subcommand.
func (c *cmdLine) parseArgs(args []string, maxArgs int, check func() error) error {
	pos, err := cliconf.ParseInterspersed(c.fs, args)
	if err != nil {
		return err
	}
	if len(pos) > maxArgs {
		return c.usageError(fmt.Sprintf("unexpected argument %q", pos[maxArgs]))
	}
	c.args = pos
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	return unreadable(c.cc.Load(c.config), c.config, func(err error) error { return fmt.Errorf("--config: %w", err) })
}

// unreadable is err with at applied when err is path's that cannot be
// read (missing, a directory, no permission): os's error names the path
// alone, not the key or flag that gave it (docs/collector.md, "Exit
// status"). Other errors, nil too, are returned as they are: those of a
// file read name it, its line and its key.
func unreadable(err error, path string, at func(error) error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok && path != "" && pe.Path == path {
		return at(err)
	}
	return err
}

// usageError prints the usage and returns a usage error (exit status 2)
// saying msg.
func (c *cmdLine) usageError(msg string) error {
	c.fs.Usage()
	return usageError{msg}
}

// missing is the usage error (exit status 2) for required flags not
// given, in one line with the usage's first: a bad flag is said once
// (TestBadFlagOnce), not after the command's whole flag list (the tuner's
// is about 120 lines), which -h prints.
func (c *cmdLine) missing(flags ...string) error {
	msg := flags[0] + " is required"
	if n := len(flags); n > 1 {
		msg = strings.Join(flags[:n-1], ", ") + " and " + flags[n-1] + " are required"
	}
	if c.usage != "" {
		msg += " (" + c.usage + ")"
	}
	return usageError{msg}
}

// from names where key's value came from, for a message about using it
// (a connection that failed): the flag or variable the user gave, "FILE:
// key" for the --config file, the key for its default.
func (c *cmdLine) from(key string) string {
	switch o := c.cc.Origin(key); {
	case o == "":
		return key
	case c.cc.InFile(key) && o == c.config:
		return c.config + ": " + key
	default:
		return o
	}
}

// badValue is the error for key's value v, refused for why, in the one
// form every command's value errors take (the collector's, cliconf.Locate):
// "ORIGIN: key: v: why", ORIGIN the file's line and column, the flag or
// the variable that set it. A value left at its default names no origin
// (a usage error).
func badValue(cc *cliconf.Config, key string, v any, why string) error {
	err := fmt.Errorf("%s: %v: %s", key, v, why)
	if cc.Origin(key) == "" {
		return usageError{err.Error()}
	}
	return cc.Locate(err)
}

// keysError is the error for keys whose values do not go together,
// refused for why: "key (ORIGIN), key (ORIGIN): why", each key named with
// where its value came from as badValue names a single one (where), a key
// left at its default "key (default)". The values are not shown: a
// combination is refused for which keys are set, and one of them may be
// a connection string with its password. path is the file of the last
// Load ("" for none).
func keysError(cc *cliconf.Config, path, why string, keys ...string) usageError {
	named := make([]string, len(keys))
	for i, k := range keys {
		named[i] = namedKey(cc, path, k)
	}
	return usageError{strings.Join(named, ", ") + ": " + why}
}

// namedKey is key named with where its value came from, "key (ORIGIN)"
// (where), "key (default)" for a key left at its default: as keysError
// and listenersApart name each of theirs.
func namedKey(cc *cliconf.Config, path, key string) string {
	return key + " (" + cmp.Or(where(cc, path, key), "default") + ")"
}

// where names where key's value came from as cc.Locate names it
// (FILE:LINE:COL, --flag or LHCNP_VARIABLE), "" for a key left at its
// default: the one rule, so a combination's keys and a single value's
// cannot be named differently.
func where(cc *cliconf.Config, path, key string) string {
	if cc.Origin(key) == "" && slices.Contains(cc.Keys(), key) {
		return "" // a scalar key at its default (not a parent's line)
	}
	o, ok := strings.CutSuffix(cc.Locate(errors.New(key+": ")).Error(), ": "+key+": ")
	if !ok || o == path {
		return ""
	}
	return o
}

// parseDSN parses dsn, the PostgreSQL connection string of key, as the
// pool that uses it parses it (pgxpool.ParseConfig, as collector.Check
// the collector's db.dsn), for the command to open its pool with
// (pgxpool.NewWithConfig): the check and the use are the one parse. Its
// error is "KEY: cannot parse `DSN`: ...", one line, the passwords hidden
// (pgdsn), for the command's cc.Locate to name where it came from (exit
// status 2).
func parseDSN(key, dsn string) (*pgxpool.Config, error) {
	pc, err := pgxpool.ParseConfig(pgdsn.LowerScheme(dsn))
	if err != nil {
		return nil, fmt.Errorf("%s: %s", key, pgdsn.ErrorString(err))
	}
	return pc, nil
}

// parseFlagsOnly parses the flags of a command that takes no positional
// argument (before or after a stray one, which is refused by name), its
// usage the line and fs's flags.
func parseFlagsOnly(fs *flag.FlagSet, args []string, stderr io.Writer, usage string) error {
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
	}
	pos, err := cliconf.ParseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fs.Usage()
		return usageError{fmt.Sprintf("unexpected argument %q", pos[0])}
	}
	return nil
}
