package cliconf_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lhcnp/lhcnp/internal/cliconf"
)

// FuzzLoad feeds arbitrary files to Load: an error or a value, never a panic,
// and every error names the file.
func FuzzLoad(f *testing.F) {
	f.Add(file)
	f.Add("dsn: x\nbogus: 1\n")
	f.Add("writer: {batch_rows: -1, batch_interval: 1h}\nitems: [{name: a, tags: [1, 2]}]\n")
	f.Add("items: !!map {}\n")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body string) {
		p := filepath.Join(dir, "f.yaml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		got := defaults()
		c, err := cliconf.Register(flag.NewFlagSet("f", flag.ContinueOnError), &got)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Load(p); err != nil && !strings.Contains(err.Error(), p) {
			t.Errorf("error without the file name: %v", err)
		}
		// Any check's message, here the file's own lines, is located
		// without a panic, one line for each.
		msg := strings.ReplaceAll(body, "\r", "")
		if got := c.Locate(errors.New(msg)); strings.Count(got.Error(), "\n") != strings.Count(msg, "\n") {
			t.Errorf("Locate changed the number of lines: %q → %q", msg, got)
		}
	})
}

// FuzzEnv feeds arbitrary values to the variables of keys of every kind,
// their alias and a renamed flag's key: an error naming the variable, or
// a value, never a panic.
func FuzzEnv(f *testing.F) {
	f.Add("200", "2s", "0.25", "x")
	f.Add("many", "soon", "NaN", "")
	f.Add("-1", "1h", "1e400", "postgres://u@h/db")
	f.Add("200", "2s", "0.25", "") // an empty variable is unset: the default stands
	f.Fuzz(func(t *testing.T, rows, every, ratio, alias string) {
		env := []string{"T_WRITER_BATCH_ROWS=" + rows, "T_WRITER_BATCH_INTERVAL=" + every, "T_RATIO=" + ratio, "OLD_DSN=" + alias}
		got := defaults()
		c, err := cliconf.Register(flag.NewFlagSet("f", flag.ContinueOnError), &got, cliconf.WithEnvPrefix("T_"),
			cliconf.WithEnviron(func() []string { return env }), cliconf.WithEnvAlias("OLD_DSN", "dsn"))
		if err != nil {
			t.Fatal(err)
		}
		err = c.Load("")
		if err != nil && !strings.Contains(err.Error(), "T_") {
			t.Errorf("error without the variable: %v", err)
		}
		// An empty variable is unset (as for viper and gnmic), so the
		// default stands; any other value is the alias variable's.
		want := alias
		if alias == "" {
			want = defaults().DSN
		}
		if err == nil && got.DSN != want {
			t.Errorf("dsn %q, want %q (the alias variable %q)", got.DSN, want, alias)
		}
	})
}
