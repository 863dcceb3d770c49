package oracle

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire/wiretest"
)

// need returns the path of an oracle program, skipping the test when it is
// missing unless oracles are required.
func need(t *testing.T, prog string) string {
	t.Helper()
	p, err := exec.LookPath(prog)
	if err != nil {
		if os.Getenv("LHCNP_ORACLES") == "required" {
			t.Fatalf("%s not found and LHCNP_ORACLES=required (run scripts/deps.sh)", prog)
		}
		t.Skipf("%s not found", prog)
	}
	return p
}

// writeCorpus writes frames to a pcap in a temp dir and returns its path.
func writeCorpus(t *testing.T, frames []wiretest.Frame) string {
	t.Helper()
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
	path := filepath.Join(t.TempDir(), "corpus.pcap")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func corpus(t *testing.T) []wiretest.Frame {
	t.Helper()
	frames, err := wiretest.Frames()
	if err != nil {
		t.Fatal(err)
	}
	return frames
}

// TestTshark checks that tshark dissects every corpus frame as encoded: the
// IPv4, UDP and ICMPv6 checksums are Good wherever they are present, and the
// BTH opcode, DestQP and byte 4, the CM QPNs and the FCN port and flow label
// are exactly what the encoders wrote.
func TestTshark(t *testing.T) {
	tshark := need(t, "tshark")
	frames := corpus(t)
	// The damaged frames are negative controls: tshark must see the bad
	// ICMPv6 checksum, which shows the check can fail.
	frames = append(frames, wiretest.Broken(frames)...)
	pcap := writeCorpus(t, frames)

	// Field names of tshark 4.0; the statuses are 1 (Good), 0 (Bad), 2
	// (Unverified) or 3 (Not present).
	fields := []string{"ip.checksum.status", "udp.checksum", "udp.checksum.status", "icmpv6.checksum.status"}
	seen := map[string]bool{}
	for _, f := range frames {
		for k := range f.Expect {
			if !seen[k] {
				seen[k] = true
				fields = append(fields, k)
			}
		}
	}
	args := []string{"-r", pcap, "-n",
		"-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE",
		"-T", "fields", "-E", "separator=/t", "-E", "occurrence=l"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	cmd := exec.Command(tshark, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != len(frames) {
		t.Fatalf("tshark printed %d lines for %d frames:\n%s", len(lines), len(frames), out)
	}
	var udpGood, icmpGood, ipGood int
	for i, line := range lines {
		f := frames[i]
		got := map[string]string{}
		for j, v := range strings.Split(line, "\t") {
			got[fields[j]] = v
		}
		t.Run(f.Name, func(t *testing.T) {
			if f.Broken {
				if f.Name == "bad-icmpv6-checksum" && got["icmpv6.checksum.status"] != "0" {
					t.Errorf("tshark did not report the damaged icmpv6 checksum: status %q", got["icmpv6.checksum.status"])
				}
				return
			}
			if s := got["ip.checksum.status"]; s != "" {
				if s != "1" {
					t.Errorf("ip.checksum.status = %q, want 1 (Good)", s)
				}
				ipGood++
			}
			if c := got["udp.checksum"]; c != "" && c != "0x0000" {
				if s := got["udp.checksum.status"]; s != "1" {
					t.Errorf("udp.checksum %s: status %q, want 1 (Good)", c, s)
				}
				udpGood++
			}
			if s := got["icmpv6.checksum.status"]; s != "" {
				if s != "1" {
					t.Errorf("icmpv6.checksum.status = %q, want 1 (Good)", s)
				}
				icmpGood++
			}
			for k, want := range f.Expect {
				if got[k] != want {
					t.Errorf("%s = %q, want %q", k, got[k], want)
				}
			}
		})
	}
	// Guard against a corpus or field change that silently checks nothing.
	if ipGood < 5 || udpGood < 5 || icmpGood < 3 {
		t.Errorf("checked too few checksums: ip %d, udp %d, icmpv6 %d", ipGood, udpGood, icmpGood)
	}
}

// TestScapyICRC has scapy recompute the ICRC of every IPv4 RoCEv2 frame of
// the corpus (scapy computes it for IPv4 only) and compares with ours.
func TestScapyICRC(t *testing.T) {
	need(t, "tshark") // keeps the skip logic in one place for the oracle pair
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		py = need(t, "python3")
	}
	if err := exec.Command(py, "-c", "import scapy.contrib.roce").Run(); err != nil {
		if os.Getenv("LHCNP_ORACLES") == "required" {
			t.Fatalf("%s cannot import scapy.contrib.roce and LHCNP_ORACLES=required (install python3-scapy)", py)
		}
		t.Skip("scapy not importable")
	}
	frames := corpus(t)
	// The damaged frames are negative controls: scapy must disagree with
	// the ICRC of the frame whose extension field was flipped.
	frames = append(frames, wiretest.Broken(frames)...)
	pcap := writeCorpus(t, frames)
	script := filepath.Join(repoRoot(t), "scripts", "oracle", "scapy_icrc.py")
	cmd := exec.Command(py, script, pcap)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scapy: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != len(frames) {
		t.Fatalf("scapy printed %d lines for %d frames:\n%s", len(lines), len(frames), out)
	}
	judged := 0
	for i, line := range lines {
		parts := strings.Fields(line)
		if len(parts) == 3 && parts[1] == "skip" {
			continue
		}
		if len(parts) != 3 {
			t.Fatalf("scapy line %q", line)
		}
		if frames[i].Broken {
			if frames[i].Name == "bad-icrc" && parts[1] == parts[2] {
				t.Errorf("scapy accepted the icrc of the damaged frame %s", frames[i].Name)
			}
			continue
		}
		judged++
		if parts[1] != parts[2] {
			t.Errorf("%s: scapy computes icrc %s, frame carries %s", frames[i].Name, parts[1], parts[2])
		}
	}
	if judged < 8 {
		t.Errorf("scapy judged only %d frames", judged)
	}
	t.Logf("scapy agreed on the icrc of %d ipv4 frames", judged)
}

// repoRoot walks up from the package directory to the module root.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the package")
		}
		dir = parent
	}
}
