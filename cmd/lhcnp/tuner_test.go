package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTunerExampleConfig: examples/tuner.yaml loads and validates.
func TestTunerExampleConfig(t *testing.T) {
	cfg, err := loadTunerFile("../../examples/tuner.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("examples/tuner.yaml: %v", err)
	}
}

// TestTunerBadInput: configuration mistakes and an unreachable database
// are one clear error naming the file and key, or the database.
func TestTunerBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := "db: postgres://postgres@127.0.0.1:1/lhcnp?connect_timeout=2\nswitches:\n  - {name: n1, address: 127.0.0.1:9339, insecure: true}\n"
	tests := []struct {
		desc string
		args []string
		want []string
	}{
		{"unknown key", []string{"--config", write("unknown.yaml", good+"polcy: {}\n")},
			[]string{"unknown.yaml", "line 4", "polcy"}},
		{"alpha bound outside the model", []string{"--config", write("alpha.yaml", good+"policy: {alpha_max: 5000}\n")},
			[]string{"alpha.yaml", "policy.alpha_max: 5000 is outside the YANG range of alpha 0.001..1000"}},
		{"no switches", []string{"--config", write("none.yaml", "db: postgres://x@127.0.0.1:1/y\n")},
			[]string{"none.yaml", "switches: none"}},
		{"database unreachable", []string{"--config", write("good.yaml", good)},
			[]string{"db:", "127.0.0.1"}},
		{"no config", nil, []string{"--config FILE is required"}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			err := runTuner(context.Background(), tt.args, io.Discard, io.Discard)
			if err == nil {
				t.Fatal("runTuner succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
