package refsim

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

var update = flag.Bool("update", false, "rewrite the golden translations in testdata/translate")

// The translation of a scenario is golden: a change to it changes what the
// stored reference outputs mean.
func TestTranslateGolden(t *testing.T) {
	for _, name := range []string{"incast-2-dcqcn", "incast-8-pfc", "long-10ms-bursts", "fattree-websearch-30"} {
		t.Run(name, func(t *testing.T) {
			sc, err := scenario.LoadFile(filepath.Join("../../scenarios/refsim", name+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			tr, err := Translate(sc, "DIR", Bottleneck{Switch: "tor", Peer: "r"})
			if err != nil {
				t.Fatal(err)
			}
			files := map[string]string{"notes.txt": strings.Join(tr.Notes, "\n") + "\n"}
			for k, v := range tr.Files {
				files[k] = v
			}
			dir := filepath.Join("testdata/translate", name)
			names := make([]string, 0, len(files))
			for k := range files {
				names = append(names, k)
			}
			slices.Sort(names)
			for _, k := range names {
				path := filepath.Join(dir, k)
				if *update {
					if err := os.MkdirAll(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, []byte(files[k]), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(string(want), files[k]); diff != "" {
					t.Errorf("%s (-want +got):\n%s", k, diff)
				}
			}
		})
	}
}

// Parameters the reference cannot express are errors naming the key.
func TestTranslateRejects(t *testing.T) {
	base, err := os.ReadFile("../../scenarios/refsim/incast-2-dcqcn.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		desc, from, to, want string
	}{
		{"byte counter", "byte_reset: 0B", "byte_reset: 10MB", "dcqcn.byte_reset"},
		{"paper alpha timing", "g: 1020", "g: 1020\n  alpha_per_cnp: true", "dcqcn.alpha_per_cnp"},
		{"cnp interval", "cnp_interval: 0s", "cnp_interval: 50us", "dcqcn.cnp_interval"},
		{"initial alpha", "initial_alpha: 1024", "initial_alpha: 1023", "dcqcn.initial_alpha"},
		{"kmin not whole KB", "k_min: 100KB", "k_min: 100KiB", "whole KB"},
		{"flow rate", "size: 20MB}", "size: 20MB, rate: 1Gbps}", "flow s0"},
		{"ecmp", "topology:\n", "topology:\n  ecmp: {enabled: true}\n", "topology.ecmp"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			text := strings.Replace(string(base), tt.from, tt.to, 1)
			sc, err := scenario.Parse("x.yaml", []byte(text))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Translate(sc, "DIR", Bottleneck{Switch: "tor", Peer: "r"})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Translate: %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// A generated fabric translates with its ECMP and its shared buffer in
// whole MiB (the reference's unit), tracing the switches with host ports;
// a shared buffer in other units, or ECMP on a hand-written topology, is
// refused naming the key.
func TestTranslateFabric(t *testing.T) {
	sc, err := scenario.LoadFile("../../scenarios/refsim/fattree-websearch-30.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Translate(sc, "DIR", Bottleneck{})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Fabric || len(tr.HostPorts) != 16 || !strings.Contains(tr.Files["config.txt"], "BUFFER_SIZE 16\n") ||
		tr.Files["trace.txt"] != "8\n22 23 26 27 30 31 34 35\n" {
		t.Errorf("fabric %v, %d host ports, trace %q, config:\n%s", tr.Fabric, len(tr.HostPorts), tr.Files["trace.txt"], tr.Files["config.txt"])
	}
	for _, tt := range []struct{ text, want string }{
		{`duration: 1ms
sample_interval: 100us
topology:
  fabrics:
    - {name: f, kind: fat-tree, k: 2, rate: 100G, delay: 1us, shared_buffer: {size: 8MB}}
`, "shared_buffer"},
		{`duration: 1ms
sample_interval: 100us
topology:
  hosts: [{name: a}, {name: b}]
  switches: [{name: s}]
  links: [{a: a, b: s, rate: 1G, delay: 1us}, {a: b, b: s, rate: 1G, delay: 1us}]
  ecmp: {enabled: true}
`, "topology.ecmp"},
	} {
		sc, err := scenario.Parse("x.yaml", []byte(tt.text))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Translate(sc, "DIR", Bottleneck{Switch: "s", Peer: "a"}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Translate: %v, want an error with %q", err, tt.want)
		}
	}
}

// A scenario without loss recovery translates with a note: the reference
// always goes back N, so a packet lost there is resent and here not.
func TestTranslateNotesNoLossRecovery(t *testing.T) {
	base, err := os.ReadFile("../../scenarios/refsim/incast-2-dcqcn.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		nic  string
		note bool
	}{{"", false}, {"  loss_recovery: go-back-n\n", false}, {"  loss_recovery: none\n", true}} {
		text := strings.Replace(string(base), "\nnic:\n", "\nnic:\n"+tt.nic, 1)
		sc, err := scenario.Parse("incast-2-dcqcn.yaml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		tr, err := Translate(sc, "DIR", Bottleneck{Switch: "tor", Peer: "r"})
		if err != nil {
			t.Fatal(err)
		}
		got := slices.ContainsFunc(tr.Notes, func(n string) bool { return strings.HasPrefix(n, "nic.loss_recovery none:") })
		if got != tt.note {
			t.Errorf("%q: a note on loss recovery %v, want %v (notes %q)", tt.nic, got, tt.note, tr.Notes)
		}
	}
}
