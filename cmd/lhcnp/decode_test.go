package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire/wiretest"
)

var update = flag.Bool("update", false, "rewrite the shipped capture and the golden files")

const capturePath = "../../captures/all-formats.pcap"

// corpusPcap builds the capture from the wire corpus: every format, then the
// damaged frames.
func corpusPcap(t *testing.T) []byte {
	t.Helper()
	frames, err := wiretest.Frames()
	if err != nil {
		t.Fatal(err)
	}
	frames = append(frames, wiretest.Broken(frames)...)
	var buf bytes.Buffer
	w, err := wire.NewPcapWriter(&buf, true)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		if err := w.WritePacket(wiretest.Epoch.Add(time.Duration(i)*time.Microsecond), f.Bytes); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// TestShippedCapture keeps captures/all-formats.pcap equal to what the
// encoders write today.
func TestShippedCapture(t *testing.T) {
	want := corpusPcap(t)
	if *update {
		if err := os.MkdirAll(filepath.Dir(capturePath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(capturePath, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(capturePath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the encoders write; run go test ./cmd/lhcnp -update", capturePath)
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run with -update after checking):\n%s", path, got)
	}
}

func TestDecodeText(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"decode", capturePath}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	golden(t, "decode.txt", out.Bytes())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	frames, _ := wiretest.Frames()
	if len(lines) != len(frames)+3 {
		t.Fatalf("%d lines for %d frames", len(lines), len(frames)+3)
	}
	// Every good frame decodes without error, with its format named; the
	// damaged ones say what is wrong, and decoding went on past them.
	for i, f := range frames {
		if strings.Contains(lines[i], "error=") || strings.Contains(lines[i], "format=other") {
			t.Errorf("frame %d (%s): %s", i+1, f.Name, lines[i])
		}
	}
	for i, want := range []string{"bad icrc", "bad checksum", "truncated"} {
		if l := lines[len(frames)+i]; !strings.Contains(l, want) {
			t.Errorf("damaged frame %d: want %q in %s", len(frames)+i+1, want, l)
		}
	}
	if !strings.Contains(errOut.String(), "3 with errors") {
		t.Errorf("summary: %s", errOut.String())
	}
}

func TestDecodeJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"decode", "--json", capturePath}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	golden(t, "decode.jsonl", out.Bytes())
	var first map[string]any
	line, _, _ := strings.Cut(out.String(), "\n")
	if err := json.Unmarshal([]byte(line), &first); err != nil {
		t.Fatal(err)
	}
	// The §7 Long-haul CNP, field by field.
	for k, want := range map[string]any{
		"format": "long-haul-cnp-icmpv6", "icmpv6.type": 200.0, "icmpv6.checksum_status": "good",
		"longhaul.action": "rate-reduce", "longhaul.parameter": 30.0, "longhaul.source_qp": 100.0,
		"longhaul.cong_level": 180.0, "longhaul.metric_value": 130000.0,
	} {
		if first[k] != want {
			t.Errorf("%s = %v, want %v", k, first[k], want)
		}
	}
}

// TestDecodeBadInput: a mistake of the command line is exit status 2; a
// capture that cannot be read, a missing one included, is 1: the capture
// is the command's data, not its configuration (docs/wire.md, "pcap").
func TestDecodeBadInput(t *testing.T) {
	dir := t.TempDir()
	notPcap := filepath.Join(dir, "x.pcap")
	os.WriteFile(notPcap, []byte("not a capture at all"), 0o644)
	cut := filepath.Join(dir, "cut.pcap")
	full, _ := os.ReadFile(capturePath)
	os.WriteFile(cut, full[:len(full)-10], 0o644)
	for _, tt := range []struct {
		desc string
		args []string
		code int
		want string
	}{
		{"no file", []string{"decode"}, 2, "want exactly one pcap file"},
		{"missing", []string{"decode", filepath.Join(dir, "nope.pcap")}, 1, "no such file"},
		{"a directory", []string{"decode", dir}, 1, "lhcnp decode: " + dir + ": is a directory\n"},
		{"not a pcap", []string{"decode", notPcap}, 1, notPcap},
		{"cut short", []string{"decode", cut}, 1, "after frame"},
		{"bad flag value", []string{"decode", "--icmpv6-type", "300", capturePath}, 2, "--icmpv6-type: 300: must be 0-255"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(tt.args, &out, &errOut)
			// A whole line is wanted whole: the directory's name came twice.
			if code != tt.code || !strings.Contains(errOut.String(), tt.want) ||
				strings.HasSuffix(tt.want, "\n") && errOut.String() != tt.want {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errOut.String(), tt.code, tt.want)
			}
		})
	}
}

// TestSimFlagValueWording (lhcnp decode, sim run, phases, generate, eval): a single bad value of a flag that is not a
// configuration key reads as the rule's `--flag: value: why` (docs/collector.md,
// Exit status), exit status 2, one line.
func TestSimFlagValueWording(t *testing.T) {
	spec := filepath.Join("..", "..", "scenarios", "family", "tuner.yaml")
	out := t.TempDir()
	for _, tt := range []struct {
		desc string
		args []string
		want string
	}{
		{"decode byte", []string{"decode", "--class-num", "256", capturePath}, "lhcnp decode: --class-num: 256: must be 0-255\n"},
		{"decode port", []string{"decode", "--fcn-port", "70000", capturePath}, "lhcnp decode: --fcn-port: 70000: must be 0-65535\n"},
		{"generate sim seed", []string{"sim", "generate", "--family", spec, "--seed", "3", "--sim-seed", "21", "--out", out},
			"lhcnp sim generate: --sim-seed: 21: want 0..20\n"},
		{"generate set", []string{"sim", "generate", "--family", spec, "--set", "both", "--out", out},
			`lhcnp sim generate: --set: "both": want train or test` + "\n"},
		{"eval sim seeds", []string{"sim", "eval", "--family", spec, "--sim-seeds", "21", "--out", out},
			"lhcnp sim eval: --sim-seeds: 21: want 1..20 (0: the family's sim_seeds)\n"},
		{"eval set", []string{"sim", "eval", "--family", spec, "--set", "dev", "--out", out},
			`lhcnp sim eval: --set: "dev": want train, test or both` + "\n"},
		{"generate seed of no set", []string{"sim", "generate", "--family", spec, "--seed", "49", "--out", out},
			"lhcnp sim generate: --seed: seed 49 is not in " + spec + "'s train_seeds 1..48\n"},
		{"generate fresh held-out seed", []string{"sim", "generate", "--family", spec, "--set", "test", "--seed", "25005", "--out", out},
			"lhcnp sim generate: --seed: seed 25005 is of " + spec + "'s test_seeds 25001..25032, the fresh held-out set: it is read once, by the full evaluation (`make tuner-eval`), never in development; retire it first\n"},
		{"run negative seed", []string{"sim", "run", "a.yaml", "--out", out, "--seed", "-3"}, "lhcnp sim run: --seed: -3: want 0..4611686018427387904\n"},
		{"eval jobs", []string{"sim", "eval", "--family", spec, "--jobs", "0", "--out", out}, "lhcnp sim eval: --jobs: 0: want at least 1\n"},
		{"eval seeds", []string{"sim", "eval", "--family", spec, "--seeds", "-1", "--out", out}, "lhcnp sim eval: --seeds: -1: want 0 or more (0: all)\n"},
		{"run duration below the sample interval", []string{"sim", "run", "../../scenarios/incast-dcqcn.yaml", "--out", out, "--duration", "5us"},
			"lhcnp sim run: --duration: 5µs: shorter than the sample_interval 10µs of ../../scenarios/incast-dcqcn.yaml\n"},
		{"compare duration below the sample interval", []string{"sim", "compare", "../../scenarios/incast-dcqcn.yaml", "--out", out, "--mechanisms", "dcqcn", "--duration", "5us"},
			"lhcnp sim compare: --duration: 5µs: shorter than the sample_interval 10µs of ../../scenarios/incast-dcqcn.yaml\n"},
		{"phases duration below the sample interval", []string{"sim", "phases", "../../scenarios/incast-dcqcn.yaml", "--out", out, "--duration", "5us"},
			"lhcnp sim phases: --duration: 5µs: shorter than the sample_interval 10µs of ../../scenarios/incast-dcqcn.yaml\n"},
		{"run threads", []string{"sim", "run", "a.yaml", "--out", out, "--threads", "0"}, "lhcnp sim run: --threads: 0: want at least 1\n"},
		{"phases phases", []string{"sim", "phases", "a.yaml", "--out", out, "--phases", "1"}, "lhcnp sim phases: --phases: 1: want at least 2\n"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tt.args, &stdout, &stderr); code != 2 || stderr.String() != tt.want {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr.String(), tt.want)
			}
		})
	}
}
