package cliconf_test

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/internal/cliconf"
)

func TestParseInterspersed(t *testing.T) {
	type got struct {
		Pos  []string
		JSON bool
		Out  string
	}
	tests := []struct {
		desc string
		args []string
		want got
	}{
		{desc: "flags first", args: []string{"--json", "--out", "d", "a.pcap"}, want: got{Pos: []string{"a.pcap"}, JSON: true, Out: "d"}},
		{desc: "flags after", args: []string{"a.pcap", "--json", "--out", "d"}, want: got{Pos: []string{"a.pcap"}, JSON: true, Out: "d"}},
		{desc: "flags between", args: []string{"a", "--out=d", "b", "-json", "c"}, want: got{Pos: []string{"a", "b", "c"}, JSON: true, Out: "d"}},
		{desc: "no flags", args: []string{"a", "b"}, want: got{Pos: []string{"a", "b"}}},
		{desc: "nothing", args: nil, want: got{}},
		{desc: "after -- all positional", args: []string{"a", "--", "--json", "b"}, want: got{Pos: []string{"a", "--json", "b"}}},
		{desc: "a lone dash is positional", args: []string{"-", "--json"}, want: got{Pos: []string{"-"}, JSON: true}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var g got
			fs.BoolVar(&g.JSON, "json", false, "")
			fs.StringVar(&g.Out, "out", "", "")
			pos, err := cliconf.ParseInterspersed(fs, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			g.Pos = pos
			if diff := cmp.Diff(tt.want, g); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := cliconf.ParseInterspersed(fs, []string{"a", "--nope"}); err == nil {
		t.Error("an unknown flag after an argument: no error")
	}
}

// TestParseInterspersedPrints: a bad flag is returned, not printed (its
// caller prints it once: the flag package printed it and the usage before
// returning it); -h prints the usage, fs.Usage or the flag package's own.
func TestParseInterspersedPrints(t *testing.T) {
	for _, tt := range []struct {
		desc     string
		args     []string
		usage    bool // fs.Usage set
		wantOut  string
		wantHelp bool
	}{
		{desc: "an unknown flag", args: []string{"a", "--nope"}, usage: true},
		{desc: "a value not of its type", args: []string{"--n=x"}, usage: true},
		{desc: "an unknown flag, the default usage", args: []string{"--nope"}},
		{desc: "-h", args: []string{"a", "-h"}, usage: true, wantOut: "usage: t\n", wantHelp: true},
		{desc: "-h, the default usage", args: []string{"-h"}, wantOut: "Usage of t:\n  -n int\n    \ta number\n", wantHelp: true},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var out strings.Builder
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(&out)
			fs.Int("n", 0, "a number")
			if tt.usage {
				fs.Usage = func() { fmt.Fprintln(fs.Output(), "usage: t") }
			}
			_, err := cliconf.ParseInterspersed(fs, tt.args)
			if err == nil || errors.Is(err, flag.ErrHelp) != tt.wantHelp || errors.Is(err, cliconf.ErrConfig) == tt.wantHelp {
				t.Errorf("error %v: want ErrHelp %v, else ErrConfig", err, tt.wantHelp)
			}
			if out.String() != tt.wantOut {
				t.Errorf("printed %q, want %q", out.String(), tt.wantOut)
			}
			if fs.Output() != &out {
				t.Error("the flag set's output is not restored")
			}
		})
	}
}

// TestFlagErrorSaid: the flag package's errors are said as the variables'
// are, the flag written as given (--name), its value and why: the type for
// the flag package's own types (it said "parse error"), the Value's own
// reason otherwise; an unknown flag names where the list is.
func TestFlagErrorSaid(t *testing.T) {
	fs := flag.NewFlagSet("sim run", flag.ContinueOnError)
	fs.Bool("insecure", false, "")
	fs.Int("n", 0, "")
	fs.Float64("speed", 1, "")
	fs.Duration("every", 0, "")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--insecure=maybe"}, `--insecure="maybe": not of type bool`},
		{[]string{"-n", "x"}, `--n="x": not of type int`},
		{[]string{"--n", "99999999999999999999"}, `--n="99999999999999999999": out of the range of type int`},
		{[]string{"--speed", "fast"}, `--speed="fast": not of type float64`},
		{[]string{"--every", "soon"}, `--every="soon": not of type time.Duration`},
		// Quoted once, as a variable's value is (it was "a\\\"b\\\\c").
		{[]string{"--speed", `a"b\c`}, `--speed="a\"b\\c": not of type float64`},
		{[]string{"--speed", "5µs"}, `--speed="5µs": not of type float64`},
		{[]string{"-bogus"}, `unknown flag --bogus (lhcnp sim run -h lists them)`},
	} {
		_, err := cliconf.ParseInterspersed(fs, tt.args)
		if err == nil || err.Error() != tt.want || !errors.Is(err, cliconf.ErrConfig) {
			t.Errorf("%v: %v, want %q matching ErrConfig", tt.args, err, tt.want)
		}
	}
	fs.Var(stringFunc(func(string) error { return errors.New("want a colour") }), "colour", "")
	if _, err := cliconf.ParseInterspersed(fs, []string{"--colour", "loud"}); err == nil || err.Error() != `--colour="loud": want a colour` {
		t.Errorf("a Value's own reason: %v", err)
	}
	// A Value's reason that begins with the value (the scenario grammar's
	// do: `"abc" is not a duration: …`) says it once, after the flag.
	fs.Var(stringFunc(func(s string) error {
		switch s {
		case "0":
			return fmt.Errorf("%q: must be greater than zero", s)
		case "5":
			return fmt.Errorf("%q has no unit: want one of ns, us, ms, s", s)
		case "-1s":
			return errors.New("negative values are not allowed")
		case "abcd":
			return fmt.Errorf("%q", s)
		}
		return fmt.Errorf("%q is not a duration: want a number followed by a unit", s)
	}), "every-d", "")
	for _, tt := range []struct{ arg, want string }{
		{"abc", `--every-d="abc": not a duration: want a number followed by a unit`},
		{"0", `--every-d="0": must be greater than zero`},
		{"5", `--every-d="5": has no unit: want one of ns, us, ms, s`},
		{"-1s", `--every-d="-1s": negative values are not allowed`},
		{"abcd", `--every-d="abcd": "abcd"`}, // nothing but the value: kept
	} {
		if _, err := cliconf.ParseInterspersed(fs, []string{"--every-d", tt.arg}); err == nil || err.Error() != tt.want {
			t.Errorf("--every-d %s: %v, want %q", tt.arg, err, tt.want)
		}
	}
}

type stringFunc func(string) error

func (f stringFunc) String() string     { return "" }
func (f stringFunc) Set(s string) error { return f(s) }
