package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/lab"
	"github.com/lhcnp/lhcnp/tuner"
)

// TestConfigErrorExitStatus runs lhcnp (this test binary as the command,
// TestMain) with a bad configuration from each source (the --config file,
// a flag, an LHCNP_ variable) of each kind (a value not of its key's type,
// a key that does not exist, a value out of range), for each command whose
// keys come from all three: every one exits with status 2, the usage
// status, its last line "lhcnp CMD: " and a message naming the file's
// line, column and key, the flag or the variable. Before, the status
// depended on the source: the file's every mistake and a flag's or a
// variable's of type or name exited 1, a lab's or a switch's value out of
// range from a flag or a variable 2 (the collector's 1).
func TestConfigErrorExitStatus(t *testing.T) {
	const bogus = "bogus"
	for _, cmd := range []struct {
		name, prefix string
		// args get past the command's checks that come before the key's.
		args []string
		// file sets the key to VALUE; flag and env are its flag and variable.
		file, flag, env string
		// A value not of the key's type, and one of its type out of range.
		wrongType, outOfRange string
		// want is the message of each source and kind but an unknown key
		// (the same for every command), FILE standing for the file's path.
		want map[string]string
	}{
		{name: "collector", prefix: "LHCNP_COLLECTOR_", args: []string{"--db.dsn", "postgres://127.0.0.1:1/x"},
			file: "writer:\n  batch_rows: VALUE\n", flag: "writer.batch-rows", env: "LHCNP_COLLECTOR_WRITER_BATCH_ROWS",
			wrongType: "many", outOfRange: "0", want: map[string]string{
				"file/type":      "FILE:2:15: writer.batch_rows: cannot unmarshal !!str `many` into int",
				"file/range":     "FILE:2:15: writer.batch_rows: 0: must be positive",
				"flag/type":      `--writer.batch-rows="many": not of type int`,
				"flag/range":     "--writer.batch-rows: writer.batch_rows: 0: must be positive",
				"variable/type":  `LHCNP_COLLECTOR_WRITER_BATCH_ROWS="many": not of type int`,
				"variable/range": "LHCNP_COLLECTOR_WRITER_BATCH_ROWS: writer.batch_rows: 0: must be positive",
			}},
		{name: "lab", prefix: labEnvPrefix, file: "speed: VALUE\n", flag: "speed", env: "LHCNP_LAB_SPEED",
			wrongType: "fast", outOfRange: "-1", want: map[string]string{
				"file/type":      "FILE:1:8: speed: cannot unmarshal !!str `fast` into float64",
				"file/range":     "FILE:1:8: speed: -1: must not be negative",
				"flag/type":      `--speed="fast": not of type float64`,
				"flag/range":     "--speed: speed: -1: must not be negative",
				"variable/type":  `LHCNP_LAB_SPEED="fast": not of type float64`,
				"variable/range": "LHCNP_LAB_SPEED: speed: -1: must not be negative",
			}},
		{name: "switch", prefix: switchEnvPrefix, args: []string{"--insecure", "--switch", "n1", "--scenario", "../../scenarios/lab.yaml"},
			file: "speed: VALUE\n", flag: "speed", env: "LHCNP_SWITCH_SPEED",
			wrongType: "fast", outOfRange: "0", want: map[string]string{
				"file/type":      "FILE:1:8: speed: cannot unmarshal !!str `fast` into float64",
				"file/range":     "FILE:1:8: speed: 0: must be positive",
				"flag/type":      `--speed="fast": not of type float64`,
				"flag/range":     "--speed: speed: 0: must be positive",
				"variable/type":  `LHCNP_SWITCH_SPEED="fast": not of type float64`,
				"variable/range": "LHCNP_SWITCH_SPEED: speed: 0: must be positive",
			}},
	} {
		for _, source := range []string{"file", "flag", "variable"} {
			for _, kind := range []string{"type", "unknown", "range"} {
				t.Run(cmd.name+"/"+source+"/"+kind, func(t *testing.T) {
					value := map[string]string{"type": cmd.wrongType, "range": cmd.outOfRange}[kind]
					args := append([]string{cmd.name}, cmd.args...)
					var env []string
					path := ""
					switch source {
					case "file":
						body := strings.ReplaceAll(cmd.file, "VALUE", value)
						if kind == "unknown" {
							body = bogus + ": 1\n"
						}
						path = fileWriter(t, t.TempDir())(cmd.name+".yaml", body)
						args = append(args, "--config", path)
					case "flag":
						name := cmd.flag
						if kind == "unknown" {
							name, value = bogus, "1"
						}
						args = append(args, "--"+name+"="+value)
					case "variable":
						name := cmd.env
						if kind == "unknown" {
							name, value = cmd.prefix+strings.ToUpper(bogus), "1"
						}
						env = append(env, name+"="+value)
					}
					want := map[string]string{
						"file/unknown":     "FILE:1:1: unknown key " + bogus,
						"flag/unknown":     "unknown flag --" + bogus + " (lhcnp " + cmd.name + " -h lists them)",
						"variable/unknown": "environment: unknown variable " + cmd.prefix + strings.ToUpper(bogus) + " (known: " + cmd.prefix + "...)",
					}[source+"/"+kind]
					if want == "" {
						want = cmd.want[source+"/"+kind]
					}
					want = "lhcnp " + cmd.name + ": " + strings.ReplaceAll(want, "FILE", path)
					code, stderr := runLhcnp(t, cmd.prefix, env, args...)
					lines := strings.Split(strings.TrimSpace(stderr), "\n")
					if last := lines[len(lines)-1]; code != 2 || last != want {
						t.Errorf("%s lhcnp %s: exit status %d, last line\n  %s\nwant exit status 2 and\n  %s\nstderr:\n%s",
							strings.Join(env, " "), strings.Join(args, " "), code, last, want, stderr)
					}
				})
			}
		}
	}
}

// TestConfigErrorExitStatusOfFiles: a mistake in a file that a command's
// configuration names is the configuration's too: exit status 2 and one
// message, its last line (every line, for one of several lines) naming
// the key that names the file, where it was set, and the file's own line
// where it has one. Each case exited 1 before.
func TestConfigErrorExitStatusOfFiles(t *testing.T) {
	dir := t.TempDir()
	write := fileWriter(t, dir)
	sc, err := filepath.Abs("../../scenarios/lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	write("bad-scenario.yaml", "name: x\nbogus: 1\n")
	malformed := write("malformed.json", "{\"lhcnp:lhcnp\": {\n  \"interfaces\": x\n}}\n")
	// Initial configurations and startup files with a value the schema
	// refuses (alpha 0: out of its type's range) or the dataplane refuses
	// (an interface n1 does not have).
	n1Config, err := filepath.Abs("../../examples/lab-n1.json")
	if err != nil {
		t.Fatal(err)
	}
	n1, err := os.ReadFile(n1Config)
	if err != nil {
		t.Fatal(err)
	}
	alpha0 := strings.Replace(string(n1), `"alpha": "1.0"`, `"alpha": "0"`, 1)
	eth9 := `{"lhcnp:lhcnp": {"interfaces": {"interface": [{"name": "eth9", "config": {"name": "eth9"}}]}}}` + "\n"
	write("alpha0.json", alpha0)
	write("eth9.json", eth9)
	for _, d := range []string{"switch-startup", "lab-startup/switches"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("switch-startup/n1.json", eth9)
	write("lab-startup/switches/n1.json", alpha0)
	const noInterface = "rejected by the dataplane: /lhcnp/interfaces/interface[name=eth9]: no such interface on this switch (interfaces: t1-n1, wan): invalid configuration"
	const alphaOutOfRange = "lhcnp/interfaces/interface[name=wan]/queues/queue[id=0]/config/alpha: 0.0 is outside the range 0.001..1000.000 of its type"
	const correctIt = " (correct or remove the file, or start with --ignore-startup to start from the initial configuration)"
	// The lab refuses its fabric file before it starts anything: its
	// database (--postgres) is never reached.
	labAt := func(state, name, fabric string) []string {
		return []string{"lab", "--postgres", "postgres://x@127.0.0.1:1/x", "--state-dir", filepath.Join(dir, state),
			"--fabric", write(name, fabric)}
	}
	lab := func(name, fabric string) []string { return labAt("state", name, fabric) }
	for _, tt := range []struct {
		desc string
		args []string
		want string // DIR for the test's directory
	}{
		{desc: "sim eval --tuner-config's policy out of range",
			args: []string{"sim", "eval", "--family", "none.yaml", "--out", dir, "--tuner-config", write("policy.yaml", "policy:\n  alpha_start: -3\n")},
			want: "lhcnp sim eval: DIR/policy.yaml:2:16: policy.alpha_start: -3 is neither 0 nor an alpha in [alpha_min 0.1, alpha_max 10]"},
		{desc: "lab: the fabric's scenario does not parse", args: lab("fabric-scenario.yaml", "scenario: bad-scenario.yaml\nswitches:\n  - name: n1\n"),
			want: "lhcnp lab: DIR/fabric-scenario.yaml:1:11: scenario: DIR/bad-scenario.yaml:1:1: duration: missing required field\n" +
				"DIR/fabric-scenario.yaml:1:11: scenario: DIR/bad-scenario.yaml:1:1: sample_interval: missing required field\n" +
				"DIR/fabric-scenario.yaml:1:11: scenario: DIR/bad-scenario.yaml:1:1: topology: missing required field\n" +
				"DIR/fabric-scenario.yaml:1:11: scenario: DIR/bad-scenario.yaml:2:1: bogus: unknown field (want one of: name, description, seed, duration, sample_interval, topology, queue, mechanism, dcqcn, nic, traffic, events, tuner)"},
		{desc: "lab: the fabric's scenario missing", args: lab("fabric-no-scenario.yaml", "scenario: none.yaml\nswitches:\n  - name: n1\n"),
			want: "lhcnp lab: DIR/fabric-no-scenario.yaml:1:11: scenario: open DIR/none.yaml: no such file or directory"},
		{desc: "lab: a switch's initial configuration missing", args: lab("fabric-no-config.yaml", "scenario: "+sc+"\nswitches:\n  - name: n1\n    config: none.json\n"),
			want: "lhcnp lab: DIR/fabric-no-config.yaml:4:13: switches[0].config: open DIR/none.json: no such file or directory"},
		{desc: "lab: a switch's initial configuration malformed", args: lab("fabric-malformed.yaml", "scenario: "+sc+"\nswitches:\n  - name: n1\n    config: "+malformed+"\n"),
			want: "lhcnp lab: DIR/fabric-malformed.yaml:4:13: switches[0].config: DIR/malformed.json:2:9: malformed JSON: invalid character 'x' looking for beginning of value"},
		{desc: "lab: a switch the scenario lacks", args: lab("fabric-n9.yaml", "scenario: "+sc+"\nswitches:\n  - name: n1\n  - name: n9\n"),
			want: `lhcnp lab: DIR/fabric-n9.yaml:4:11: switches[1].name: scenario lab has no switch "n9" (switches: t1, n1, n2)`},
		{desc: "lab: an interface of a link the switch lacks", args: lab("fabric-nope.yaml", "scenario: "+sc+"\nswitches:\n  - name: n1\n    interfaces: {wan0: nope}\n"),
			want: `lhcnp lab: DIR/fabric-nope.yaml:4:24: switches[0].interfaces.wan0: switch n1 has no link "nope" (links: t1-n1, wan)`},
		{desc: "switch: the scenario does not parse", args: []string{"switch", "--insecure", "--state-dir", filepath.Join(dir, "switch-state"), "--config", write("switch-scenario.yaml", "switch: n1\nscenario: bad-scenario.yaml\n")},
			want: "lhcnp switch: DIR/switch-scenario.yaml:2:11: scenario: DIR/bad-scenario.yaml:1:1: duration: missing required field\n" +
				"DIR/switch-scenario.yaml:2:11: scenario: DIR/bad-scenario.yaml:1:1: sample_interval: missing required field\n" +
				"DIR/switch-scenario.yaml:2:11: scenario: DIR/bad-scenario.yaml:1:1: topology: missing required field\n" +
				"DIR/switch-scenario.yaml:2:11: scenario: DIR/bad-scenario.yaml:2:1: bogus: unknown field (want one of: name, description, seed, duration, sample_interval, topology, queue, mechanism, dcqcn, nic, traffic, events, tuner)"},
		{desc: "lab: a switch's initial configuration the dataplane refuses", args: lab("fabric-eth9.yaml", "scenario: "+sc+"\nswitches:\n  - name: n1\n    config: eth9.json\n"),
			want: "lhcnp lab: DIR/fabric-eth9.yaml:4:13: switches[0].config: DIR/eth9.json:1:47: " + noInterface},
		{desc: "lab: a switch's startup file with a value out of range",
			args: labAt("lab-startup", "fabric-lab-n1.yaml", "scenario: "+sc+"\nswitches:\n  - name: n1\n    config: "+n1Config+"\n"),
			want: "lhcnp lab: switch n1: startup configuration DIR/lab-startup/switches/n1.json:26:56: " + alphaOutOfRange + correctIt},
		{desc: "switch: a value of the initial configuration out of range", args: []string{"switch", "--insecure", "--state-dir", filepath.Join(dir, "switch-state"), "--config", write("switch-alpha.yaml", "switch: n1\nscenario: "+sc+"\nconfig: alpha0.json\n")},
			want: "lhcnp switch: DIR/switch-alpha.yaml:3:9: config: DIR/alpha0.json:26:56: " + alphaOutOfRange},
		{desc: "switch: a startup file the dataplane refuses", args: []string{"switch", "--insecure", "--state-dir", filepath.Join(dir, "switch-startup"), "--config", write("switch-n1.yaml", "switch: n1\nscenario: "+sc+"\n")},
			want: "lhcnp switch: switch n1: startup configuration DIR/switch-startup/n1.json:1:47: " + noInterface + correctIt},
		{desc: "switch: the initial configuration malformed", args: []string{"switch", "--insecure", "--state-dir", filepath.Join(dir, "switch-state"), "--config", write("switch.yaml", "switch: n1\nscenario: "+sc+"\nconfig: malformed.json\n")},
			want: "lhcnp switch: DIR/switch.yaml:3:9: config: DIR/malformed.json:2:9: malformed JSON: invalid character 'x' looking for beginning of value"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			want := strings.ReplaceAll(tt.want, "DIR", dir)
			if got := strings.TrimSuffix(stderr.String(), "\n"); code != 2 || got != want {
				t.Errorf("lhcnp %s: exit status %d, stderr\n%s\nwant exit status 2 and\n%s", strings.Join(tt.args, " "), code, got, want)
			}
		})
	}
}

// TestConfigErrorOfUnreadableFiles: a file that cannot be read (missing,
// a directory), named by a command's --config or by a key, is named at the
// flag, or at the key and where its value came from (the file's line and
// column, the flag, the variable), exit status 2: os's error named the
// path alone (`lhcnp lab: open /missing.yaml: no such file or
// directory`), and the lab's fabric from the file or a variable was named
// as --fabric. Every command with a --config, and every key naming a file
// not covered by TestConfigErrorExitStatusOfFiles,
// TestGNMIFilesAreConfiguration and TestSwitchConfErrors.
func TestConfigErrorOfUnreadableFiles(t *testing.T) {
	dir := t.TempDir()
	write := fileWriter(t, dir)
	none := filepath.Join(dir, "none.yaml")
	q := []string{"--target", "n1", "--interface", "wan", "--queue", "0"}
	// The lab with its database never reached: a missing file is
	// refused before it starts.
	lab := func(args ...string) []string {
		return append([]string{"lab", "--postgres", "postgres://x@127.0.0.1:1/x", "--state-dir", filepath.Join(dir, "lab-state")}, args...)
	}
	const open = "open DIR/none.yaml: no such file or directory"
	const runFromRepo = " (run from the repository, or give the lab topology's fabric file)"
	fabric, err := filepath.Abs("../../examples/lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		desc string
		args []string
		env  string // NAME=VALUE, if any
		want string // DIR for the test's directory
	}{
		{desc: "collector --config", args: []string{"collector", "--config", none}, want: "lhcnp collector: --config: " + open},
		{desc: "tuner --config", args: []string{"tuner", "--config", none}, want: "lhcnp tuner: --config: " + open},
		{desc: "tuner hold --config", args: append([]string{"tuner", "hold", "--config", none}, q...), want: "lhcnp tuner hold: --config: " + open},
		{desc: "tuner release --config", args: append([]string{"tuner", "release", "--config", none}, q...), want: "lhcnp tuner release: --config: " + open},
		{desc: "migrate --config", args: []string{"migrate", "status", "--config", none}, want: "lhcnp migrate: --config: " + open},
		{desc: "switch --config", args: []string{"switch", "--config", none}, want: "lhcnp switch: --config: " + open},
		{desc: "lab --config", args: lab("--config", none), want: "lhcnp lab: --config: " + open},
		{desc: "lab --config a directory", args: lab("--config", dir), want: "lhcnp lab: --config: read DIR: is a directory"},
		{desc: "lab status --config", args: []string{"lab", "status", "--config", none}, want: "lhcnp lab status: --config: " + open},
		{desc: "lab --fabric", args: lab("--fabric", none), want: "lhcnp lab: --fabric: fabric: " + open + runFromRepo},
		{desc: "lab fabric of a variable", args: lab(), env: "LHCNP_LAB_FABRIC=" + none, want: "lhcnp lab: LHCNP_LAB_FABRIC: fabric: " + open + runFromRepo},
		{desc: "lab fabric of the file", args: lab("--config", write("lab-fabric.yaml", "speed: 1\nfabric: "+none+"\n")),
			want: "lhcnp lab: DIR/lab-fabric.yaml:2:9: fabric: " + open + runFromRepo},
		{desc: "lab --tuner-config", args: lab("--fabric", fabric, "--tuner-config", none), want: "lhcnp lab: --tuner-config: tuner_config: " + open},
		{desc: "lab tuner_config of a variable", args: lab("--fabric", fabric), env: "LHCNP_LAB_TUNER_CONFIG=" + none,
			want: "lhcnp lab: LHCNP_LAB_TUNER_CONFIG: tuner_config: " + open},
		{desc: "lab tuner_config of the file", args: lab("--fabric", fabric, "--config", write("lab-tuner.yaml", "tuner_config: "+none+"\n")),
			want: "lhcnp lab: DIR/lab-tuner.yaml:1:15: tuner_config: " + open},
		{desc: "sim eval --tuner-config", args: []string{"sim", "eval", "--family", "none.yaml", "--out", dir, "--tuner-config", none},
			want: "lhcnp sim eval: --tuner-config: " + open},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if name, value, ok := strings.Cut(tt.env, "="); ok {
				t.Setenv(name, value)
			}
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			want := strings.ReplaceAll(tt.want, "DIR", dir)
			if got := strings.TrimSuffix(stderr.String(), "\n"); code != 2 || got != want {
				t.Errorf("lhcnp %s: exit status %d, stderr\n%s\nwant exit status 2 and\n%s", strings.Join(tt.args, " "), code, got, want)
			}
		})
	}
}

// TestConfigEmptyVariable: a variable set to "" is as if it were not set
// (internal/cliconf), for every command: LHCNP_TUNER_DB= (compose's
// ${VAR} of an unset VAR) left the --config file's db, where it blanked
// it and the tuner said `db: missing`. The tuner's and the lab's here;
// the rule is cliconf's, every command's (TestEmptyVariableIsUnset).
func TestConfigEmptyVariable(t *testing.T) {
	write := fileWriter(t, t.TempDir())
	const dsn = "postgres://lhcnp@127.0.0.1:1/lhcnp"
	tunerFile := write("tuner.yaml", "db: "+dsn+"\nswitches:\n  - {name: n1, address: 127.0.0.1:1, insecure: true}\n")
	empty := func(names ...string) func() []string {
		return func() []string {
			var env []string
			for _, n := range names {
				env = append(env, n+"=")
			}
			return env
		}
	}
	ta, err := parseTuner([]string{"--config", tunerFile}, empty("LHCNP_TUNER_DB", "LHCNP_TUNER_PERIOD"), io.Discard)
	if err != nil {
		t.Fatalf("tuner: %v", err)
	}
	if ta.cfg.DB != dsn || ta.dbFrom != tunerFile+": db" || ta.cfg.Period != tuner.DefaultConfig().Period {
		t.Errorf("tuner: db %q from %q, period %v; want the file's %q, the default period", ta.cfg.DB, ta.dbFrom, ta.cfg.Period, dsn)
	}
	labFile := write("lab.yaml", "state_dir: "+filepath.Dir(tunerFile)+"\nspeed: 0.2\n")
	lf, err := parseLab([]string{"--config", labFile}, empty("LHCNP_LAB_STATE_DIR", "LHCNP_LAB_SPEED", "LHCNP_LAB_NORTHBOUND"), io.Discard)
	if err != nil {
		t.Fatalf("lab: %v", err)
	}
	if lf.StateDir != filepath.Dir(tunerFile) || lf.Speed != 0.2 || lf.Northbound != lab.DefaultNorthboundAddr {
		t.Errorf("lab: state_dir %q, speed %g, northbound %q; want the file's, the default northbound", lf.StateDir, lf.Speed, lf.Northbound)
	}
}

// TestCollectorDSNExitStatus: a db.dsn that does not parse, from the
// file, a flag or a variable, is refused while the configuration is
// loaded, named where it came from, exit status 2, as lhcnp migrate's is;
// it was refused by collector.New alone, exit status 1, naming the key
// only. The password is hidden (pgx).
func TestCollectorDSNExitStatus(t *testing.T) {
	const dsn = "postgres://u:secret@h:notaport/db"
	const why = "db.dsn: cannot parse `postgres://u:xxxxx@h:notaport/db`: invalid port"
	state := t.TempDir()
	path := fileWriter(t, t.TempDir())("collector.yaml", "db:\n  dsn: "+dsn+"\nstate_dir: "+state+"\n")
	for _, tt := range []struct {
		desc string
		args []string
		env  string // LHCNP_COLLECTOR_DB_DSN's value, if any
		want string
	}{
		{desc: "file", args: []string{"--config", path}, want: path + ":2:8: " + why},
		{desc: "flag", args: []string{"--state-dir", state, "--db.dsn", dsn}, want: "--db.dsn: " + why},
		{desc: "variable", args: []string{"--state-dir", state}, env: dsn, want: "LHCNP_COLLECTOR_DB_DSN: " + why},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv("LHCNP_COLLECTOR_DB_DSN", tt.env)
			}
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"collector"}, tt.args...), &stdout, &stderr)
			want := "lhcnp collector: " + tt.want
			if got := strings.TrimSuffix(stderr.String(), "\n"); code != 2 || got != want {
				t.Errorf("exit status %d, stderr\n%s\nwant exit status 2 and\n%s", code, got, want)
			}
		})
	}
}

// TestDSNExitStatus: a PostgreSQL connection string that does not parse,
// of every command but the collector's (TestCollectorDSNExitStatus) and
// from each source, is refused while the configuration is loaded, named
// where it came from (the file's line and column, the flag, the
// variable), exit status 2, the password hidden (pgx). The tuner's (and
// the lab's --postgres) was refused by the pool at start, exit status 1,
// naming the key only (the lab's after it had started); migrate's named
// the file without its line and column.
func TestDSNExitStatus(t *testing.T) {
	const dsn = "postgres://u:secret@h:notaport/db"
	const why = "cannot parse `postgres://u:xxxxx@h:notaport/db`: invalid port"
	write := fileWriter(t, t.TempDir())
	switches := "switches:\n  - {name: n1, address: 127.0.0.1:1, insecure: true}\n"
	tunerFile := write("tuner.yaml", "db: "+dsn+"\n"+switches)
	tunerNoDB := write("tuner-no-db.yaml", switches)
	migrateFile := write("migrate.yaml", "db:\n  dsn: "+dsn+"\n")
	labFile := write("lab.yaml", "postgres: "+dsn+"\n")
	hold := []string{"--target", "n1", "--interface", "wan", "--queue", "0"}
	// The lab otherwise ready to start, on free ports: it started, and
	// failed at the database.
	lab := func(args ...string) []string {
		return append([]string{"lab", "--fabric", "../../examples/lab.yaml", "--state-dir", t.TempDir(), "--http", "127.0.0.1:0",
			"--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--northbound", "127.0.0.1:0"}, args...)
	}
	for _, tt := range []struct {
		desc string
		args []string
		env  string // NAME=VALUE, if any
		want string
	}{
		{desc: "tuner: file", args: []string{"tuner", "--config", tunerFile}, want: "lhcnp tuner: " + tunerFile + ":1:5: db: " + why},
		{desc: "tuner: flag", args: []string{"tuner", "--config", tunerNoDB, "--db", dsn}, want: "lhcnp tuner: --db: db: " + why},
		{desc: "tuner: variable", args: []string{"tuner", "--config", tunerNoDB}, env: "LHCNP_TUNER_DB=" + dsn, want: "lhcnp tuner: LHCNP_TUNER_DB: db: " + why},
		{desc: "tuner hold: file", args: append([]string{"tuner", "hold", "--config", tunerFile}, hold...), want: "lhcnp tuner hold: " + tunerFile + ":1:5: db: " + why},
		{desc: "tuner release: flag", args: append([]string{"tuner", "release", "--db", dsn}, hold...), want: "lhcnp tuner release: --db: db: " + why},
		{desc: "migrate: file", args: []string{"migrate", "status", "--config", migrateFile}, want: "lhcnp migrate: " + migrateFile + ":2:8: db.dsn: " + why},
		{desc: "migrate: flag", args: []string{"migrate", "status", "--db.dsn", dsn}, want: "lhcnp migrate: --db.dsn: db.dsn: " + why},
		{desc: "migrate: the older flag", args: []string{"migrate", "status", "--db", dsn}, want: "lhcnp migrate: --db: db.dsn: " + why},
		{desc: "migrate: variable", args: []string{"migrate", "status"}, env: "LHCNP_MIGRATE_DB_DSN=" + dsn, want: "lhcnp migrate: LHCNP_MIGRATE_DB_DSN: db.dsn: " + why},
		{desc: "migrate: the older variable", args: []string{"migrate", "status"}, env: "LHCNP_DB=" + dsn, want: "lhcnp migrate: LHCNP_DB: db.dsn: " + why},
		{desc: "lab: file", args: lab("--config", labFile), want: "lhcnp lab: " + labFile + ":1:11: postgres: " + why},
		{desc: "lab: flag", args: lab("--postgres", dsn), want: "lhcnp lab: --postgres: postgres: " + why},
		{desc: "lab: variable", args: lab(), env: "LHCNP_LAB_POSTGRES=" + dsn, want: "lhcnp lab: LHCNP_LAB_POSTGRES: postgres: " + why},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if name, value, ok := strings.Cut(tt.env, "="); ok {
				t.Setenv(name, value)
			}
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			if got := strings.TrimSuffix(stderr.String(), "\n"); code != 2 || got != tt.want {
				t.Errorf("lhcnp %s: exit status %d, stderr\n%s\nwant exit status 2 and\n%s", strings.Join(tt.args, " "), code, got, tt.want)
			}
		})
	}
}

// TestDSNPasswordHidden: a keyword/value connection string with white
// space around a password's '=' (libpq's grammar allows it) that does not
// parse is refused by every command that takes one without its password:
// pgx's masking left "password = SECRET" in the line printed.
func TestDSNPasswordHidden(t *testing.T) {
	const dsn = "host=h password = SECRET sslmode=bogus"
	const why = "cannot parse `host=h password=xxxxx sslmode=bogus`: failed to configure TLS (sslmode is invalid)"
	write := fileWriter(t, t.TempDir())
	tunerFile := write("tuner.yaml", "switches:\n  - {name: n1, address: 127.0.0.1:1, insecure: true}\n")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"collector", "--state-dir", t.TempDir(), "--db.dsn", dsn}, "lhcnp collector: --db.dsn: db.dsn: " + why},
		{[]string{"migrate", "status", "--db", dsn}, "lhcnp migrate: --db: db.dsn: " + why},
		{[]string{"tuner", "--config", tunerFile, "--db", dsn}, "lhcnp tuner: --db: db: " + why},
	} {
		t.Run(tt.args[0], func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			if got := strings.TrimSuffix(stderr.String(), "\n"); code != 2 || got != tt.want || strings.Contains(stdout.String(), "SECRET") {
				t.Errorf("lhcnp %s: exit status %d, stderr\n%s\nwant exit status 2 and\n%s", strings.Join(tt.args, " "), code, got, tt.want)
			}
		})
	}
}

// TestBadFlagOnce: a flag unknown, or its value not of its type, is said
// once, in the one line of every configuration error, and nothing else is
// printed (as gnmic says "Error: unknown flag: --nope" alone); the flag
// package printed it first, then the whole usage (up to 45 lines), and the
// command the same error after them. -h still prints the usage
// (TestEveryFlagHasHelp). Every command and subcommand, as a user runs it.
func TestBadFlagOnce(t *testing.T) {
	var cmds [][]string
	for name, cmd := range commands() {
		if name != "sim" { // sim is its subcommands alone
			cmds = append(cmds, []string{name})
		}
		for _, sub := range cmd.subs {
			cmds = append(cmds, []string{name, sub})
		}
	}
	slices.SortFunc(cmds, func(a, b []string) int { return strings.Compare(strings.Join(a, " "), strings.Join(b, " ")) })
	type badFlag struct {
		args []string
		want string // the whole stderr
	}
	var tests []badFlag
	for _, cmd := range cmds {
		tests = append(tests, badFlag{append(slices.Clone(cmd), "--nope"),
			"lhcnp " + strings.Join(cmd, " ") + ": unknown flag --nope (lhcnp " + strings.Join(cmd, " ") + " -h lists them)\n"})
	}
	tests = append(tests, badFlag{[]string{"collector", "--writer.batch-rows", "many"},
		"lhcnp collector: --writer.batch-rows=\"many\": not of type int\n"})
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			if code != 2 || stderr.String() != tt.want || stdout.Len() > 0 {
				t.Errorf("lhcnp %s: exit status %d, stderr\n%s\nstdout\n%s\nwant exit status 2, stderr\n%s",
					strings.Join(tt.args, " "), code, stderr.String(), stdout.String(), tt.want)
			}
		})
	}
}

// runLhcnp runs lhcnp as its own process (this test binary as the command,
// TestMain) with args, without the test's variables of prefix and with
// env, and returns its exit status and stderr.
func runLhcnp(t *testing.T, prefix string, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, prefix) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(append(cmd.Env, "LHCNP_TEST_AS_LHCNP=1"), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("lhcnp %s: %v", strings.Join(args, " "), err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// TestInsecureWithTLSKeysRefused: insecure with ca_file, a collector's
// target's or a tuner's switch's, is refused at start, exit status 2, its
// last line naming the file's line and the key. Before, the tuner dialled
// plain gRPC and ignored ca_file, cert_file, key_file, server_name and
// skip_verify without a word (the collector refused them already).
func TestInsecureWithTLSKeysRefused(t *testing.T) {
	const refusal = "insecure: set together with TLS keys (ca_file, cert_file"
	checkRefusedWithCA(t, "insecure: true",
		"FILE:5:15: targets[a]."+refusal+", skip_verify)",
		"FILE:5:15: switches[0]."+refusal+", key_file, server_name, skip_verify)")
}

// TestSkipVerifyWithCARefused: skip_verify with ca_file, a collector's
// target's or a tuner's switch's, is refused at start, exit status 2, its
// last line naming the file's line and the key. Before, both started and
// verified nothing, the CA file read and ignored.
func TestSkipVerifyWithCARefused(t *testing.T) {
	const refusal = "skip_verify: set together with ca_file: the certificate would not be verified, the CA ignored; give one of them"
	checkRefusedWithCA(t, "skip_verify: true", "FILE:5:18: targets[a]."+refusal, "FILE:5:18: switches[0]."+refusal)
}

// checkRefusedWithCA starts a collector with one target and a tuner with one
// switch, each with line (a key: value) and a ca_file, and wants exit status
// 2 and the last line of stderr collectorWant and tunerWant (FILE the
// file's path).
func checkRefusedWithCA(t *testing.T, line, collectorWant, tunerWant string) {
	t.Helper()
	write := fileWriter(t, t.TempDir())
	ca := write("ca.pem", "")
	for _, tt := range []struct {
		desc, cmd, prefix, file, want string
	}{
		{"collector", "collector", "LHCNP_COLLECTOR_",
			"db: {dsn: 'postgres://127.0.0.1:1/x'}\ntargets:\n  - name: a\n    address: h:1\n    " + line + "\n    ca_file: " + ca + "\n",
			collectorWant},
		{"tuner", "tuner", "LHCNP_TUNER_",
			"db: postgres://127.0.0.1:1/x\nswitches:\n  - name: n1\n    address: h:1\n    " + line + "\n    ca_file: " + ca + "\n",
			tunerWant},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			path := write(tt.cmd+".yaml", tt.file)
			code, stderr := runLhcnp(t, tt.prefix, nil, tt.cmd, "--config", path)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			want := "lhcnp " + tt.cmd + ": " + strings.ReplaceAll(tt.want, "FILE", path)
			if last := lines[len(lines)-1]; code != 2 || last != want {
				t.Errorf("exit status %d, last line\n  %s\nwant exit status 2 and\n  %s\nstderr:\n%s", code, last, want, stderr)
			}
		})
	}
}
