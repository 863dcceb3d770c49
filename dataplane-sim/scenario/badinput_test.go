package scenario

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadInput: the mistakes users make in a scenario file, each written
// into testdata/good.yaml, are refused with the file, the line, the column
// and the key path first (file:line:col: field: reason), never a panic and
// never a silent default.
func TestBadInput(t *testing.T) {
	const file = "testdata/good.yaml"
	base, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		desc, from, to string
		want           string // the first error's text, or its start
	}{
		{"unknown key", "sample_interval:", "sample_intervall:", file + ":2:1: sample_interval: missing required field"},
		{"name a path", "name: good", "name: ../../x", file + `:2:7: name: "../../x": a scenario's name names its output files and directories: want one without slashes, not . or ..`},
		{"name a directory", "name: good", "name: ..", file + `:2:7: name: "..": a scenario's name names its output files and directories: want one without slashes, not . or ..`},
		{"seed quoted", "seed: 3", `seed: "3"`, file + `:3:7: seed: want an integer, got "3"`},
		{"seed overflowing int64", "seed: 3", "seed: 99999999999999999999", file + `:3:7: seed: want an integer, got "99999999999999999999"`},
		{"seed negative", "seed: 3", "seed: -3", file + ":3:7: seed: negative value -3"},
		{"duration a word", "duration: 10ms", "duration: fast", file + `:4:11: duration: "fast" is not a duration`},
		{"duration without unit", "duration: 10ms", "duration: 5", file + `:4:11: duration: "5" has no unit`},
		{"duration in minutes", "duration: 10ms", "duration: 1m", file + `:4:11: duration: "1m": unknown duration unit "m"`},
		{"duration overflowing", "duration: 10ms", "duration: 9999999999s", file + `:4:11: duration: "9999999999s" is too large`},
		{"rate in bytes", "rate: 25G,", "rate: 10GB,", file + `:16:28: topology.links[0].rate: "10GB": unknown rate unit "GB"`},
		{"rate without unit", "rate: 25G,", "rate: 10,", file + `:16:28: topology.links[0].rate: "10" has no unit`},
		{"rate NaN", "rate: 25G,", "rate: .nan,", file + `:16:28: topology.links[0].rate: ".nan" is not a rate`},
		{"size a list", "buffer: 1MiB", "buffer: [1MiB]", file + ":16:53: topology.links[0].buffer: want a single value, got a list"},
		{"probability NaN", "p_max: 0.01", "p_max: .nan", file + `:23:57: queue.ecn.p_max: want a number, got ".nan"`},
		{"probability infinite", "p_max: 0.01", "p_max: .inf", file + `:23:57: queue.ecn.p_max: want a number, got ".inf"`},
		{"probability quoted", "p_max: 0.01", `p_max: "0.01"`, file + `:23:57: queue.ecn.p_max: want a number, got "0.01"`},
		{"probability a percent", "p_max: 0.01", "p_max: 1%", file + `:23:57: queue.ecn.p_max: want a number, got "1%"`},
		{"probability above one", "p_max: 0.01", "p_max: 2", file + ":23:57: queue.ecn.p_max: 2 is out of range [0, 1]"},
		{"bool yes", "ecn: {enabled: true", "ecn: {enabled: yes", file + `:23:18: queue.ecn.enabled: want true or false, got "yes"`},
		{"two nodes of one name", "- {name: h2}", "- {name: h1}", file + `:9:14: topology.hosts[1].name: duplicate node name "h1" (first defined at line 8)`},
		{"link to an undefined node", "- {a: h2, b: s1,", "- {a: h2, b: s9,", file + ":9:14: topology.hosts[1].name: host h2 has no link"},
		{"hosts a mapping", "  hosts:\n    - {name: h1}\n    - {name: h2}\n    - {name: h3, ip: 10.0.0.1}", "  hosts: {h1: {}, h2: {}, h3: {ip: 10.0.0.1}}", file + ":7:10: topology.hosts: want a list, got a mapping"},
		{"route through an undefined node", "path: [h1, s1, s2, h3]", "path: [h1, s1, s9, h3]", file + `:21:41: topology.routes[0].path[2]: undefined node "s9"`},
		{"flow from an undefined node", "{name: long, src: h1", "{name: long, src: h9", file + `:36:25: traffic.flows[0].src: undefined node "h9"`},
		{"flow queue pair overflowing", "src_qp: 7", "src_qp: 99999999999999999999", file + `:36:46: traffic.flows[0].src_qp: want an integer, got "99999999999999999999"`},
		{"flow queue pair out of range", "src_qp: 7", "src_qp: 16777216", file + ":36:46: traffic.flows[0].src_qp: 16777216 is out of range [1, 16777215]"},
		{"flow size without unit", "size: 64KiB", "size: 65536", file + `:37:57: traffic.flows[1].size: "65536" has no unit`},
		{"load NaN", "load: 0.3", "load: .nan", file + `:45:13: traffic.generated[0].load: want a number, got ".nan"`},
		{"CDF point NaN", "[10KB, 0.5]", "[10KB, .nan]", file + `:46:30: traffic.generated[0].cdf[1][1]: want a number, got ".nan"`},
		{"CDF point too large", "[100000, 1]", "[1e300, 1]", file + ":46:36: traffic.generated[0].cdf[2]: size 1e300 is too large (at most 2305843009213693951 bytes)"},
		{"generated stop before start", "start: 1ms\n      stop: 3ms", "start: 3ms\n      stop: 1ms", file + ":49:13: traffic.generated[0].stop: stop (1ms) must be after start (3ms)"},
		{"event on an undefined flow", "kind: flow-stop, target: long}", "kind: flow-stop, target: lon}", file + `:54:40: events[3].target: undefined flow "lon"`},
		{"mechanism param typo", "params: {k_max: 50KB", "params: {kmax: 50KB", file + ":27:12: mechanism.params.kmax: unknown field"},
		{"mechanism param duration without unit", "cnp_interval: 2us, capable", "cnp_interval: 5, capable", file + `:27:39: mechanism.params.cnp_interval: "5" has no unit`},
		{"mechanism params a list", "params: {k_max: 50KB, cnp_interval: 2us, capable_senders: none}", "params: [k_max]", file + ":27:11: mechanism.params: want a mapping, got a list"},
		{"dcqcn integer quoted", "g: 1000", `g: "1000"`, file + `:30:6: dcqcn.g: want an integer, got "1000"`},
		{"dcqcn key typo", "rate_ai: 5Mbps", "rateai: 5Mbps", file + ":29:3: dcqcn.rateai: unknown field"},
		{"MTU of a byte", "mtu: 1024B", "mtu: 1B", file + ":33:8: nic.mtu: 1B is outside 256B..64KiB (RoCEv2's path MTUs are 256B..4KiB; above, the simulator's coarse packets)"},
		{"MTU below RoCEv2's", "mtu: 1024B", "mtu: 255B", file + ":33:8: nic.mtu: 255B is outside 256B..64KiB"},
		{"MTU above 64KiB", "mtu: 1024B", "mtu: 65537B", file + ":33:8: nic.mtu: 65537B is outside 256B..64KiB"},
		{"loss recovery unknown", "mtu: 1024B", "mtu: 1024B\n  loss_recovery: selective", file + `:34:18: nic.loss_recovery: unknown loss recovery "selective" (want none or go-back-n)`},
		{"ack timeout of none", "mtu: 1024B", "mtu: 1024B\n  local_ack_timeout: 0", file + ":34:22: nic.local_ack_timeout: 0 is out of range [1, 31]"},
		{"ack timeout a duration", "mtu: 1024B", "mtu: 1024B\n  local_ack_timeout: 67ms", file + `:34:22: nic.local_ack_timeout: want an integer, got "67ms"`},
		{"flow above its NIC's line rate", "size: 64KiB, rate: 10Gbps", "size: 64KiB, rate: 25.5Gbps",
			file + ":37:70: traffic.flows[1].rate: 25500Mbps is above the line rate of h2's NIC (link h2-s1: 25Gbps)"},
		{"incast above a sender's line rate", "size: 1MB, start: 5ms}", "size: 1MB, start: 5ms, rate: 40Gbps}",
			file + ":40:83: traffic.incasts[0].rate: 40Gbps is above the line rate of h1's NIC (link h1-s1: 25Gbps)"},
		{"tab in the indentation", "  hosts:\n    - {name: h1}", "  hosts:\n\t- {name: h1}", file + ":8:1: a tab in the indentation (YAML indents with spaces only)"},
		// yaml.v3 names line 7, the block above the tab.
		{"tab after spaces", "    - {name: h2}", "  \t- {name: h2}", file + ":9:3: a tab in the indentation (YAML indents with spaces only)"},
		// yaml.v3 names line 28, the line above the bracket.
		{"unclosed bracket", "rate_ai: 5Mbps", "rate_ai: [5Mbps", file + ":29:1: did not find expected ',' or ']'"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			text := strings.Replace(string(base), tt.from, tt.to, 1)
			if text == string(base) {
				t.Fatalf("%q not in %s", tt.from, file)
			}
			_, err := Parse(file, []byte(text))
			if err == nil {
				t.Fatalf("Parse succeeded, want %q", tt.want)
			}
			if first := Errors(err)[0].Error(); !strings.HasPrefix(first, tt.want) {
				t.Errorf("first error %q, want %q\nall: %v", first, tt.want, err)
			}
		})
	}
}

// TestBadCDFFile: a flow-size distribution file (cdf_file) is refused at
// its own line, with the scenario's key; a line that is not two numbers is
// the error, not a CDF of the points left.
func TestBadCDFFile(t *testing.T) {
	base, err := os.ReadFile("testdata/good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		desc, cdf, want string
	}{
		{"empty", "", "cdf.txt: traffic.generated[0].cdf_file: a CDF needs at least two points"},
		{"sizes with units", "0 0\n10KB 100\n", `cdf.txt:2:1: traffic.generated[0].cdf_file: not two numbers: "10KB 100"`},
		{"commas", "0,0\n100,100\n", "cdf.txt:1:1: traffic.generated[0].cdf_file: want two columns: size_bytes cumulative_probability"},
		{"NaN", "0 0\nNaN 100\n", `cdf.txt:2:1: traffic.generated[0].cdf_file: not two numbers: "NaN 100"`},
		{"not monotonic", "0 0\n20 50\n10 100\n", "cdf.txt:3:1: traffic.generated[0].cdf_file: CDF not monotonic"},
		{"not ending at 1", "0 0\n10 0.5\n", "cdf.txt:2:1: traffic.generated[0].cdf_file: the last cumulative probability is 0.5"},
		// A size that does not fit an int64 of bytes was drawn as a
		// size that wrapped around.
		{"size too large", "0 0\n1e300 100\n", "cdf.txt:2:1: traffic.generated[0].cdf_file: size 1e300 is too large (at most 2305843009213693951 bytes)"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "cdf.txt"), []byte(tt.cdf), 0o644); err != nil {
				t.Fatal(err)
			}
			text := strings.Replace(string(base), "cdf: [[1KB, 0], [10KB, 0.5], [100000, 1]]", "cdf_file: cdf.txt", 1)
			_, err := Parse(filepath.Join(dir, "s.yaml"), []byte(text))
			if err == nil {
				t.Fatalf("Parse succeeded, want %q", tt.want)
			}
			want := filepath.Join(dir, tt.want)
			if first := Errors(err)[0].Error(); !strings.HasPrefix(first, want) {
				t.Errorf("first error %q, want %q\nall: %v", first, want, err)
			}
		})
	}
}

// TestGeneratedGapBeyondTheRun: a small load of very large flows (each a
// valid size) draws gaps past int64 nanoseconds; they are past the end of
// the run, where they used to wrap around to flows that start 292 years
// before it.
func TestGeneratedGapBeyondTheRun(t *testing.T) {
	base, err := os.ReadFile("testdata/good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(base), "cdf: [[1KB, 0], [10KB, 0.5], [100000, 1]]", "cdf: [[0, 0], [2000000TB, 1]]", 1)
	text = strings.Replace(text, "load: 0.3", "load: 0.001", 1)
	sc, err := Parse("s.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range sc.Flows {
		if f.Start < 0 || f.Group == "mix" {
			t.Errorf("flow %s starts at %v: a gap past the run starts no flow", f.Name, f.Start)
		}
	}
}

// TestNICBounds: the bounds of nic.mtu and of a flow's rate are taken:
// RoCEv2's smallest path MTU, the simulator's largest packet, a flow and
// an incast at their senders' line rate.
func TestNICBounds(t *testing.T) {
	const file = "testdata/good.yaml"
	base, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ desc, from, to string }{
		{"MTU 256B", "mtu: 1024B", "mtu: 256B"},
		{"MTU 64KiB", "mtu: 1024B", "mtu: 64KiB"},
		{"a flow at its line rate", "size: 64KiB, rate: 10Gbps", "size: 64KiB, rate: 25Gbps"},
		{"an incast at its line rate", "size: 1MB, start: 5ms}", "size: 1MB, start: 5ms, rate: 25Gbps}"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			text := strings.Replace(string(base), tt.from, tt.to, 1)
			if text == string(base) {
				t.Fatalf("%q not in %s", tt.from, file)
			}
			if _, err := Parse(file, []byte(text)); err != nil {
				t.Errorf("Parse: %v", err)
			}
		})
	}
}

// TestLoadFileUnreadable: a file that cannot be read is named once, with
// the system's reason ("DIR: is a directory"), and the error still wraps
// the system's. It said "DIR: read DIR: is a directory".
func TestLoadFileUnreadable(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	for _, tt := range []struct {
		desc, path, want string
		is               error
	}{
		{"a directory", dir, dir + ": is a directory", nil},
		{"missing", missing, missing + ": no such file or directory", fs.ErrNotExist},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			_, err := LoadFile(tt.path)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("LoadFile: %v, want %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("LoadFile: %v is not %v", err, tt.is)
			}
		})
	}
}
