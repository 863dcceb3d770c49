package main

import (
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFamilySetFlags: the flags sim generate and sim eval share, parsed by
// one helper: the sets --set chooses (eval's "both": train, then test), and
// the errors of each command in its own words.
func TestFamilySetFlags(t *testing.T) {
	spec := filepath.Join("..", "..", "scenarios", "family", "tuner.yaml")
	for _, tt := range []struct {
		desc     string
		eval     bool // sim eval's flags: --set both, the default
		args     []string
		want     []string
		wantErr  string
		wantHelp bool // the usage printed
	}{
		{desc: "generate: the default set", args: []string{"--out", "o"}, want: []string{"train"}},
		{desc: "generate: test", args: []string{"--set", "test", "--out", "o"}, want: []string{"test"}},
		{desc: "generate: not both", args: []string{"--set", "both", "--out", "o"}, wantErr: `--set: "both": want train or test`},
		{desc: "eval: the default, both", eval: true, args: []string{"--out", "o"}, want: []string{"train", "test"}},
		{desc: "eval: train", eval: true, args: []string{"--out", "o", "--set", "train"}, want: []string{"train"}},
		{desc: "eval: an unknown set", eval: true, args: []string{"--set", "dev", "--out", "o"}, wantErr: `--set: "dev": want train, test or both`},
		{desc: "no --out", args: nil, wantErr: "--out DIR is required", wantHelp: true},
		{desc: "an argument", eval: true, args: []string{"extra", "--out", "o"}, wantErr: `unexpected argument "extra"`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			fs := flag.NewFlagSet("sim", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			help := false
			fs.Usage = func() { help = true }
			set := "train"
			if tt.eval {
				set = "both"
			}
			f := newFamilySetFlags(fs, set, tt.eval, "directory")
			err := f.parse(fs, append([]string{"--family", spec}, tt.args...))
			var got []string
			if err == nil {
				_, got, err = f.load()
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				if _, ok := err.(usageError); !ok {
					t.Errorf("%v: not a usage error", err)
				}
				if help != tt.wantHelp {
					t.Errorf("usage printed %v, want %v", help, tt.wantHelp)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("sets (-want +got):\n%s", d)
			}
		})
	}
}
