package main

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// flagLine is the first line of a flag in the flag package's listing
// (FlagSet.PrintDefaults): "  -name type", or "  -x\tusage" for a
// one-letter flag.
var flagLine = regexp.MustCompile(`^  -([^\s]+)(?: [^\s]+)?(?:\t(.*))?$`)

// listedFlags reads the flags of a -h output and the usage of each, as
// PrintDefaults writes them: the flag's line, then its usage on lines
// starting "    \t", the default appended as " (default V)". An empty
// usage leaves the default alone, starting with its space: that is the
// flag listed with nothing to say what it is, returned as "".
func listedFlags(out string) map[string]string {
	flags := map[string]string{}
	var name string
	for _, l := range strings.Split(out, "\n") {
		if m := flagLine.FindStringSubmatch(l); m != nil {
			name = m[1]
			flags[name] = m[2]
			continue
		}
		if rest, ok := strings.CutPrefix(l, "    \t"); ok && name != "" {
			flags[name] += rest
			continue
		}
		name = ""
	}
	for n, u := range flags {
		if strings.TrimSpace(u) == "" || strings.HasPrefix(u, " (default ") {
			flags[n] = ""
		}
	}
	return flags
}

// subcommandWord matches "lhcnp CMD WORD" in a usage line, WORD a
// subcommand or several (hold|release), or a choice of them in brackets
// ([up|down|status]; not [flags]).
var subcommandWord = regexp.MustCompile(`lhcnp ([a-z]+) (?:\[([a-z]+(?:\|[a-z]+)+)\]|([a-z]+(?:\|[a-z]+)*)\b)`)

// TestEveryFlagHasHelp: `lhcnp CMD -h` says what every flag of every
// subcommand is: each flag the command registers (the keys of its
// configuration struct through internal/cliconf, which takes a key's
// `help` tag, and its own flags) has a usage. The commands are those of
// commands() and the subcommands their usage names (sim run, tuner hold,
// lab status...), run through the binary's run as a user runs them. No
// flag is listed as taking a "value" (sim's --duration and --phase-step
// were: durations), and the help's text names no flag the command lacks.
func TestEveryFlagHasHelp(t *testing.T) {
	help := func(args ...string) (string, int) {
		var stdout, stderr bytes.Buffer
		code := run(append(slices.Clone(args), "-h"), &stdout, &stderr)
		return stdout.String() + stderr.String(), code
	}
	var cmds [][]string
	seen := map[string]bool{}
	for name := range commands() {
		cmds = append(cmds, []string{name})
		out, _ := help(name)
		for _, m := range subcommandWord.FindAllStringSubmatch(out, -1) {
			if m[1] != name {
				continue
			}
			for _, sub := range strings.Split(m[2]+m[3], "|") {
				if !seen[name+" "+sub] {
					seen[name+" "+sub] = true
					cmds = append(cmds, []string{name, sub})
				}
			}
		}
	}
	sort.Slice(cmds, func(i, j int) bool { return strings.Join(cmds[i], " ") < strings.Join(cmds[j], " ") })
	// The usages' words found must include these, or the reading of the
	// usage lines above has gone wrong.
	for _, want := range []string{"lab probe", "lab status", "migrate status", "sim compare", "sim eval", "sim generate",
		"sim phases", "sim run", "tuner hold", "tuner release"} {
		if !seen[want] {
			t.Errorf("lhcnp %s: not found in its command's usage", want)
		}
	}
	for _, args := range cmds {
		cmd := strings.Join(args, " ")
		t.Run(cmd, func(t *testing.T) {
			out, code := help(args...)
			if code != 0 {
				t.Fatalf("lhcnp %s -h: exit %d:\n%s", cmd, code, out)
			}
			// Every help starts as the others do, saying how to call it
			// (passwd printed Go's bare "Usage of passwd:").
			if first, _, _ := strings.Cut(strings.TrimSpace(out), "\n"); !strings.HasPrefix(first, "usage: lhcnp "+args[0]) {
				t.Errorf("lhcnp %s -h starts %q, want \"usage: lhcnp %s ...\"", cmd, first, args[0])
			}
			flags := listedFlags(out)
			if len(flags) == 0 && cmd != "sim" { // sim only dispatches to its subcommands
				t.Fatalf("lhcnp %s -h lists no flag:\n%s", cmd, out)
			}
			var bare []string
			for name, usage := range flags {
				if usage == "" {
					bare = append(bare, "-"+name)
				}
			}
			sort.Strings(bare)
			if len(bare) > 0 {
				t.Errorf("lhcnp %s -h: %d flags say nothing of what they are (a help tag on the key, or the flag's usage): %s",
					cmd, len(bare), strings.Join(bare, " "))
			}
			// The text names only flags the command has: a line of
			// another form (lhcnp tuner -h's hold|release line) aside.
			// sim phases, generate and eval said --validation's files
			// were read as their defaults, a flag of compare's alone.
			for _, l := range strings.Split(out, "\n") {
				if flagLine.MatchString(l) || strings.HasPrefix(l, "    \t") {
					continue
				}
				if m := subcommandWord.FindStringSubmatch(l); m != nil && m[1] == args[0] && (len(args) < 2 || m[2]+m[3] != args[1]) {
					continue
				}
				for _, m := range namedFlag.FindAllStringSubmatch(l, -1) {
					if _, ok := flags[m[1]]; !ok {
						t.Errorf("lhcnp %s -h names --%s, not one of its flags: %s", cmd, m[1], l)
					}
				}
			}
			// A flag of a Value of lhcnp's own names what it takes (a
			// `word` in its usage): the flag package writes "value".
			if untyped := valueFlag.FindAllString(out, -1); len(untyped) > 0 {
				t.Errorf("lhcnp %s -h: flags listed as taking a \"value\", no type: %s", cmd, strings.Join(untyped, ", "))
			}
		})
	}
}

// namedFlag matches a flag named in a help's text: --name.
var namedFlag = regexp.MustCompile(`--([a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)`)

// valueFlag matches a flag PrintDefaults lists with the word it gives a
// Value whose usage names no type: "  -duration value".
var valueFlag = regexp.MustCompile(`(?m)^  -\S+ value$`)

// TestListedFlags: the reading of PrintDefaults's listing, a flag without
// usage told from one with, defaults or not, one-letter flags included.
func TestListedFlags(t *testing.T) {
	out := "usage: lhcnp x [flags]\n" +
		"  -a duration\n    \t (default 1m0s)\n" +
		"  -b\n    \t\n" +
		"  -c string\n    \tthe c\n    \tover two lines (default \"x\")\n" +
		"  -v\tlog debug messages\n" +
		"  -w\t\n" +
		"  -policy.alpha-max float\n    \thighest alpha (default 10)\n"
	got := listedFlags(out)
	want := map[string]string{"a": "", "b": "", "c": "the cover two lines (default \"x\")", "v": "log debug messages", "w": "",
		"policy.alpha-max": "highest alpha (default 10)"}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for n, u := range want {
		if (got[n] == "") != (u == "") {
			t.Errorf("-%s: usage %q, want %q", n, got[n], u)
		}
	}
}

// TestSimFlagsDocumented: every flag of sim compare, phases, generate and
// eval (their FlagSets, as -h lists them: PrintDefaults walks VisitAll) is
// in its table of docs/scenarios.md, with its default where it has one;
// the page's flag table was sim run's alone.
func TestSimFlagsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/scenarios.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"compare", "phases", "generate", "eval"} {
		t.Run(sub, func(t *testing.T) {
			// The command's section: its heading to the next one.
			_, sec, ok := strings.Cut(string(doc), "#### `lhcnp sim "+sub+" ")
			if !ok {
				t.Fatalf("docs/scenarios.md has no section \"#### `lhcnp sim %s ...`\"", sub)
			}
			sec, _, _ = strings.Cut(sec, "\n#")
			var stdout, stderr bytes.Buffer
			if code := run([]string{"sim", sub, "-h"}, &stdout, &stderr); code != 0 {
				t.Fatalf("lhcnp sim %s -h: exit %d", sub, code)
			}
			flags := listedFlags(stderr.String())
			if len(flags) == 0 {
				t.Fatalf("lhcnp sim %s -h lists no flag", sub)
			}
			for name, usage := range flags {
				row := regexp.MustCompile("(?m)^\\| `--" + regexp.QuoteMeta(name) + "[ `].*$").FindString(sec)
				if row == "" {
					t.Errorf("--%s: not in the table of sim %s", name, sub)
					continue
				}
				// A short default is quoted in the row as it is (a list
				// as long as --mechanisms' is described instead).
				if m := defaultOf.FindStringSubmatch(usage); m != nil && len(m[1]) < 80 && !strings.Contains(row, m[1]) {
					t.Errorf("--%s: its default %s is not in its row: %s", name, m[1], row)
				}
			}
		})
	}
}

// defaultOf is the default PrintDefaults appends to a usage, unquoted.
var defaultOf = regexp.MustCompile(`\(default "?([^"]*?)"?\)$`)
