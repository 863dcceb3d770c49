package main

import (
	"os"
	"path/filepath"
	"testing"
)

// fileWriter returns a function that writes body to name in dir and
// returns its path (the configuration files of the bad-input tests).
func fileWriter(t *testing.T, dir string) func(name, body string) string {
	t.Helper()
	return func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
}
