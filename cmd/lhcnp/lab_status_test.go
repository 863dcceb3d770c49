package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lhcnp/lhcnp/lab"
)

// TestLabStatusVariables: lhcnp lab status reads the LHCNP_LAB_ variables
// and the --config file as lhcnp lab does. LHCNP_LAB_STATE_DIR or the
// file's state_dir names the state directory (the variable wins over the
// file, --state-dir over both), another of the lab's keys is taken, and
// an unknown variable or key or a value not of its key's type is refused
// naming the variable or the file's line. Before, status read no
// variable (it looked in .lhcnp-lab whatever LHCNP_LAB_STATE_DIR said and
// took any name), nor a file (--config was an unknown flag).
func TestLabStatusVariables(t *testing.T) {
	dir := t.TempDir()
	b, err := json.Marshal(lab.Addresses{Dashboard: "http://127.0.0.1:18080/", PostgresDSN: "postgres://lhcnp@127.0.0.1:15432/lhcnp",
		Switches: map[string]string{"n1": "127.0.0.1:19339"}, Names: []string{"n1"}, StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, lab.AddressesFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir() // no lab started there
	write := fileWriter(t, t.TempDir())
	conf := write("lab.yaml", "speed: 0.1\nstate_dir: "+dir+"\n")
	confEmpty := write("empty.yaml", "state_dir: "+empty+"\n")
	bad := write("bad.yaml", "state_dirr: "+dir+"\n")
	stopped := "lab on " + dir + ": stopped"
	tests := []struct {
		desc string
		env  []string // NAME=VALUE
		args []string // after lab status
		code int
		want string // in stdout or stderr
	}{
		{desc: "LHCNP_LAB_STATE_DIR names the state directory", env: []string{"LHCNP_LAB_STATE_DIR=" + dir}, want: stopped},
		{desc: "--state-dir wins over the variable", env: []string{"LHCNP_LAB_STATE_DIR=" + empty},
			args: []string{"--state-dir", dir}, want: stopped},
		{desc: "--state-dir where no lab started", env: []string{"LHCNP_LAB_STATE_DIR=" + dir},
			args: []string{"--state-dir", empty}, code: 1, want: empty + ": no lab has started there"},
		{desc: "--config's state_dir names the state directory", args: []string{"--config", conf}, want: stopped},
		{desc: "the variable wins over the file", env: []string{"LHCNP_LAB_STATE_DIR=" + dir}, args: []string{"--config", confEmpty}, want: stopped},
		{desc: "--state-dir wins over the file", args: []string{"--config", confEmpty, "--state-dir", dir}, want: stopped},
		{desc: "the file's state directory where no lab started", args: []string{"--config", confEmpty}, code: 1, want: empty + ": no lab has started there"},
		{desc: "an unknown key in the file", args: []string{"--config", bad}, code: 2, want: bad + ":1:1: unknown key state_dirr"},
		{desc: "another of the lab's keys", env: []string{"LHCNP_LAB_SPEED=1", "LHCNP_LAB_HTTP=127.0.0.1:0"},
			args: []string{"--state-dir", dir}, want: stopped},
		{desc: "unknown variable", env: []string{"LHCNP_LAB_STATEDIR=" + dir}, args: []string{"--state-dir", dir},
			code: 2, want: "lhcnp lab status: environment: unknown variable LHCNP_LAB_STATEDIR (known: LHCNP_LAB_...)"},
		{desc: "a value not of its key's type", env: []string{"LHCNP_LAB_SPEED=fast"}, args: []string{"--state-dir", dir},
			code: 2, want: `LHCNP_LAB_SPEED="fast": not of type float64`},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			// Only the case's LHCNP_LAB_ variables, whatever the test's
			// environment holds.
			for _, kv := range os.Environ() {
				if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, labEnvPrefix) {
					t.Setenv(name, "")
					os.Unsetenv(name)
				}
			}
			for _, kv := range tt.env {
				name, val, _ := strings.Cut(kv, "=")
				t.Setenv(name, val)
			}
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"lab", "status"}, tt.args...), &stdout, &stderr)
			out := stdout.String() + stderr.String()
			if code != tt.code || !strings.Contains(out, tt.want) {
				t.Errorf("%s lhcnp lab status %s: exit %d (want %d), output lacks %q:\n%s",
					strings.Join(tt.env, " "), strings.Join(tt.args, " "), code, tt.code, tt.want, out)
			}
		})
	}
}

// TestLabStatusHidesPassword: the PostgreSQL of a lab started with
// --postgres holding a password is printed without it (the banner prints
// the same lines); lhcnp lab status printed the DSN whole.
func TestLabStatusHidesPassword(t *testing.T) {
	dir := t.TempDir()
	b, err := json.Marshal(lab.Addresses{PostgresDSN: "postgres://u:SECRET@db.example:5432/lhcnp?sslmode=require", StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, lab.AddressesFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"lab", "status", "--state-dir", dir}, &stdout, &stderr)
	out := stdout.String() + stderr.String()
	const want = "  postgresql  postgres://u:xxxxx@db.example:5432/lhcnp?sslmode=require\n"
	if code != 0 || !strings.Contains(out, want) || strings.Contains(out, "SECRET") {
		t.Errorf("lhcnp lab status: exit %d, output\n%s\nwant exit 0 and %q, no password", code, out, want)
	}
}
