package cliconf_test

import (
	"flag"
	"io"
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
