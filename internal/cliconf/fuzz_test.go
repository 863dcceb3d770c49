package cliconf_test

import (
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
	})
}
