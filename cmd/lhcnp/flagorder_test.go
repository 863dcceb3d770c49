package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagsAfterArguments: every subcommand takes its flags after its
// positional arguments as well as before (`lhcnp decode FILE.pcap --json`,
// as README writes it), and one that takes none names a stray argument
// wherever it is. Every command of commands() has a case.
func TestFlagsAfterArguments(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer ok.Close()
	scen := filepath.Join("..", "..", "scenarios", "incast-dcqcn.yaml")
	simOut := t.TempDir()
	tests := []struct {
		desc string
		args []string // lhcnp's arguments, flags after the positional ones
		// orig, when set, is the same command with the flags first: its
		// output must be the same.
		orig []string
		// want: the exit status and a string stdout or stderr holds.
		code int
		want string
	}{
		{desc: "decode FILE --json", args: []string{"decode", capturePath, "--json"},
			orig: []string{"decode", "--json", capturePath}, want: `{"`},
		{desc: "decode FILE --no-icrc --json", args: []string{"decode", capturePath, "--no-icrc", "--json"},
			orig: []string{"decode", "--no-icrc", "--json", capturePath}, want: `{"`},
		{desc: "sim run SCENARIO --out DIR ...", args: []string{"sim", "run", scen, "--out", simOut, "--duration", "200us", "--seed", "3", "--no-plots"},
			orig: []string{"sim", "run", "--out", simOut, "--duration", "200us", "--seed", "3", "--no-plots", scen}, want: "incast-dcqcn: dcqcn"},
		{desc: "migrate status --db DSN: the action, then flags", code: 1,
			args: []string{"migrate", "status", "--db", "postgres://127.0.0.1:1/x?connect_timeout=2", "--timeout", "5s"}, want: "127.0.0.1"},
		{desc: "migrate --db DSN bogus: the action anywhere, checked", code: 2,
			args: []string{"migrate", "--db", "postgres://127.0.0.1:1/x", "bogus"}, want: `unknown action "bogus"`},
		{desc: "migrate status extra: one action at most", code: 2,
			args: []string{"migrate", "status", "extra", "--db", "postgres://127.0.0.1:1/x"}, want: `unexpected argument "extra"`},
		{desc: "lab probe --http URL", args: []string{"lab", "probe", "--http", ok.URL, "--timeout", "5s"}},
		{desc: "lab probe extra --http URL", code: 2, args: []string{"lab", "probe", "extra", "--http", ok.URL}, want: `unexpected argument "extra"`},
		{desc: "lab extra --speed 1", code: 2, args: []string{"lab", "extra", "--speed", "1"}, want: `unexpected argument "extra"`},
		{desc: "collector extra --v", code: 2, args: []string{"collector", "extra", "--v"}, want: `unexpected argument "extra"`},
		{desc: "tuner extra --config FILE", code: 2, args: []string{"tuner", "extra", "--config", "../../examples/tuner.yaml"}, want: `unexpected argument "extra"`},
		{desc: "switch extra --insecure", code: 2, args: []string{"switch", "extra", "--insecure"}, want: `unexpected argument "extra"`},
		{desc: "passwd extra --user ann", code: 2, args: []string{"passwd", "extra", "--user", "ann"}, want: "want: passwd --user NAME"},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.args[0]] = true
		t.Run(tt.desc, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stdout.String()+stderr.String(), tt.want) {
				t.Fatalf("lhcnp %s: exit %d (want %d), output lacks %q:\n%s%s", strings.Join(tt.args, " "), code, tt.code, tt.want,
					stdout.String(), stderr.String())
			}
			if tt.orig == nil {
				return
			}
			var stdout0, stderr0 bytes.Buffer
			if code := run(tt.orig, &stdout0, &stderr0); code != tt.code || stdout0.String() != stdout.String() {
				t.Errorf("flags first: exit %d, output differs from flags after:\n%.500s\n---\n%.500s", code, stdout0.String(), stdout.String())
			}
		})
	}
	for name := range commands() {
		if !covered[name] {
			t.Errorf("command %s has no case here", name)
		}
	}
}
