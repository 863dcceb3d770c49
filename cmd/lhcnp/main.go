// Command lhcnp is the one binary of the project, with a subcommand per role:
// switch, collector, tuner and lab (all of them in one process), sim (batch
// experiments), decode (read pcaps of our formats), migrate (the PostgreSQL
// schema) and passwd (a users-file line). Flags and wiring only: the logic
// lives in the packages.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sort"
	"syscall"

	"github.com/lhcnp/lhcnp/dataplane-sim/compare"
	"github.com/lhcnp/lhcnp/internal/cliconf"
	"github.com/lhcnp/lhcnp/server/fabric"
)

// command is one subcommand. run gets the arguments after the subcommand name.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	// subs are the command's subcommands (lhcnp tuner hold): an error of
	// one is printed under its whole name.
	subs []string
}

func commands() map[string]command {
	return map[string]command{
		"lab": {"run the whole lab in one process: PostgreSQL, switches, collector, tuner, dashboard (lab probe: a health check)", runLab,
			[]string{"probe", "status"}},
		"decode": {"print every frame of a pcap in lhcnp's formats (text or --json)", runDecode, nil},
		"sim":    {"run simulation scenarios (sim run SCENARIO --out DIR)", runSim, []string{"run", "compare", "phases", "generate", "eval"}},
		"tuner": {"tune K_max and V_growth from the collector's telemetry over gNMI Set (tuner --config FILE; tuner hold|release: an operator's hold of a queue)", runTuner,
			[]string{"hold", "release"}},
		"switch": {"run one switch: its dataplane paced to the wall clock and its gNMI server", runSwitch, nil},
		"passwd": {"print a users-file line for a user, role and the password read from stdin (typed twice without echo on a terminal)", func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			return runPasswd(ctx, args, os.Stdin, stdout, stderr)
		}, nil},
		"migrate": {"apply, undo or report the PostgreSQL schema (migrate [up|down|status] --db.dsn DSN)", runMigrate, nil},

		"collector": {"subscribe to every switch and store its telemetry in PostgreSQL", runCollector, nil},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: lhcnp COMMAND [flags] [args]")
	fmt.Fprintln(w, "\ncommands:")
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'lhcnp COMMAND -h' for a command's flags.")
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit status: 0 ok; 2 a
// mistake of the command line or the configuration, refused before the
// command starts its work (a usage error; a flag, variable or file key
// unknown, not of its type or out of range: cliconf.ErrConfig), as the
// flag package exits; 1 a failure of the work (docs/collector.md,
// "Exit status").
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "lhcnp: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.run(ctx, args[1:], stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		name := args[0]
		if len(args) > 1 && slices.Contains(cmd.subs, args[1]) {
			name += " " + args[1]
		}
		fmt.Fprintf(stderr, "lhcnp %s: %v\n", name, err)
		return exitStatus(err)
	}
	return 0
}

// exitStatus is the exit status of a command's error: 2 for a usage error
// or one of the configuration (a switch's startup or initial
// configuration that fabric.Check refuses is one, and so are a
// comparison's scenarios and mechanisms that package compare refuses
// before it runs them), 1 for the others.
func exitStatus(err error) int {
	var ue usageError
	if errors.As(err, &ue) || errors.Is(err, cliconf.ErrConfig) {
		return 2
	}
	if _, ok := errors.AsType[*fabric.ConfigError](err); ok {
		return 2
	}
	if _, ok := errors.AsType[*compare.ConfigError](err); ok {
		return 2
	}
	return 1
}

// usageError marks a mistake in the command line (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }
