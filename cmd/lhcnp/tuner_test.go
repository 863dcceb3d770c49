package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/internal/cliconf"
	"github.com/lhcnp/lhcnp/tuner"
)

// TestTunerExampleConfig: examples/tuner.yaml loads and validates, and
// its values are the defaults (the file documents them).
func TestTunerExampleConfig(t *testing.T) {
	cfg := tuner.DefaultConfig()
	fs := flag.NewFlagSet("tuner", flag.ContinueOnError)
	cc, err := cliconf.Register(fs, &cfg, cliconf.WithEnviron(func() []string { return nil }), cliconf.WithEnvPrefix("LHCNP_TUNER_"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cc.Load("../../examples/tuner.yaml"); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("examples/tuner.yaml: %v", err)
	}
	want := tuner.DefaultConfig()
	want.DB, want.Switches = cfg.DB, cfg.Switches
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("examples/tuner.yaml differs from the defaults it documents (-defaults +file):\n%s", diff)
	}
}

// TestTunerLayers: flags win over LHCNP_TUNER_ variables, variables over
// the file.
func TestTunerLayers(t *testing.T) {
	cfg := tuner.DefaultConfig()
	fs := flag.NewFlagSet("tuner", flag.ContinueOnError)
	env := []string{"LHCNP_TUNER_POLICY_ALPHA_MAX=4", "LHCNP_TUNER_PERIOD=7s"}
	cc, err := cliconf.Register(fs, &cfg, cliconf.WithEnviron(func() []string { return env }), cliconf.WithEnvPrefix("LHCNP_TUNER_"))
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--period", "9s", "--dry-run"}); err != nil {
		t.Fatal(err)
	}
	if err := cc.Load("../../examples/tuner.yaml"); err != nil {
		t.Fatal(err)
	}
	if cfg.Policy.AlphaMax != 4 || cfg.Period != 9*time.Second || !cfg.DryRun {
		t.Errorf("alpha_max %v period %v dry_run %v; want 4 (variable), 9s (flag over variable), true (flag)",
			cfg.Policy.AlphaMax, cfg.Period, cfg.DryRun)
	}
}

// TestTunerBadInput: configuration mistakes and an unreachable database
// are one clear error naming the file and key, or the database.
func TestTunerBadInput(t *testing.T) {
	dir := t.TempDir()
	write := fileWriter(t, dir)
	good := "db: postgres://postgres@127.0.0.1:1/lhcnp?connect_timeout=2\nswitches:\n  - {name: n1, address: 127.0.0.1:9339, insecure: true}\n"
	tests := []struct {
		desc string
		args []string
		want []string
	}{
		{"unknown key", []string{"--config", write("unknown.yaml", good+"polcy: {}\n")},
			[]string{"unknown.yaml:4", "unknown key polcy"}},
		{"alpha bound outside the model", []string{"--config", write("alpha.yaml", good+"policy: {alpha_max: 5000}\n")},
			[]string{"alpha.yaml:4:21: policy.alpha_max: 5000 is outside the YANG range of alpha 0.001..1000"}},
		{"alpha bound from a flag", []string{"--config", write("flag.yaml", good), "--policy.alpha-max=5000"},
			[]string{"--policy.alpha-max: policy.alpha_max: 5000 is outside"}},
		{"no switches", []string{"--config", write("none.yaml", "db: postgres://x@127.0.0.1:1/y\n")},
			[]string{"none.yaml: switches: none"}},
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

// TestTunerWarnsOfSkipVerify: a switch with skip_verify is warned of on
// stderr at start, naming it; one with a CA or insecure is not. Before,
// the tuner sent its read-write password and Sets to whatever answered
// without a word. The database is unreachable: the start ends after the
// warnings (exit status 1).
func TestTunerWarnsOfSkipVerify(t *testing.T) {
	write := fileWriter(t, t.TempDir())
	ca := write("ca.pem", "")
	f := write("tuner.yaml", `db: postgres://u@127.0.0.1:1/lhcnp?connect_timeout=5
switches:
  - {name: n1, address: 192.0.2.1:9339, skip_verify: true, username: tuner, password: s3cret}
  - {name: n2, address: 192.0.2.2:9339, ca_file: `+ca+`}
  - {name: n3, address: 127.0.0.1:9339, insecure: true}
`)
	var stdout, stderr bytes.Buffer
	code := run([]string{"tuner", "--config", f}, &stdout, &stderr)
	const want = "lhcnp tuner: warning: switches[0].skip_verify (n1): the certificate of 192.0.2.1:9339 is not verified: " +
		"whoever answers there is sent the tuner's username, password and Sets; give ca_file\n"
	if code != 1 || !strings.HasPrefix(stderr.String(), want) || strings.Count(stderr.String(), "warning") != 1 ||
		strings.Contains(stderr.String(), "s3cret") {
		t.Errorf("exit status %d, stderr\n%s\nwant exit status 1 and first, alone\n%s", code, stderr.String(), want)
	}
}
