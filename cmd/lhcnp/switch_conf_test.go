package main

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openconfig/gnmi/proto/gnmi"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// switchLayerFile is a one-switch file beside its scenario: relative
// paths from it are relative to its directory.
const switchLayerFile = `switch: n1
scenario: sc.yaml
config: n1.json
listen: 127.0.0.1:9339
speed: 0.1
publish_interval: 100ms
`

// TestSwitchLayers: lhcnp switch layers its file < LHCNP_SWITCH_
// variables < flags for every scalar key (speed and publish_interval
// here), paths from the file are relative to it and those from a flag or
// variable are not, and a fabric file takes a listen from a flag or
// variable as the override it always was.
func TestSwitchLayers(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "switch.yaml")
	if err := os.WriteFile(file, []byte(switchLayerFile), 0o644); err != nil {
		t.Fatal(err)
	}
	fabricFile := filepath.Join(dir, "fabric.yaml")
	if err := os.WriteFile(fabricFile, []byte("scenario: sc.yaml\nswitches: [{name: n1, listen: 127.0.0.1:1}, {name: n2, listen: 127.0.0.1:2}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type got struct {
		Speed           float64
		PublishInterval time.Duration
		Scenario        string
		Switches        []fileSwitch
		SpeedFrom       string
	}
	one := func(config, listen string) []fileSwitch {
		return []fileSwitch{{Name: "n1", Listen: listen, Config: config}}
	}
	j := func(p string) string { return filepath.Join(dir, p) }
	for _, tt := range []struct {
		desc  string
		env   []string
		flags []string
		want  got
	}{
		{desc: "file", flags: []string{"--config", file},
			want: got{0.1, 100 * time.Millisecond, j("sc.yaml"), one(j("n1.json"), "127.0.0.1:9339"), file}},
		{desc: "variables over the file", flags: []string{"--config", file},
			env:  []string{"LHCNP_SWITCH_SPEED=0.5", "LHCNP_SWITCH_PUBLISH_INTERVAL=250ms", "LHCNP_SWITCH_CONFIG=other.json", "OTHER_SPEED=9"},
			want: got{0.5, 250 * time.Millisecond, j("sc.yaml"), one("other.json", "127.0.0.1:9339"), "LHCNP_SWITCH_SPEED"}},
		{desc: "flags over variables", flags: []string{"--config", file, "--speed", "2", "--publish-interval=1s", "--initial-config", "flag.json", "--listen", "127.0.0.1:0"},
			env:  []string{"LHCNP_SWITCH_SPEED=0.5", "LHCNP_SWITCH_PUBLISH_INTERVAL=250ms", "LHCNP_SWITCH_CONFIG=other.json"},
			want: got{2, time.Second, j("sc.yaml"), one("flag.json", "127.0.0.1:0"), "--speed"}},
		{desc: "a variable's scenario is not relative to the file", flags: []string{"--config", file},
			env:  []string{"LHCNP_SWITCH_SCENARIO=scenarios/lab.yaml"},
			want: got{0.1, 100 * time.Millisecond, "scenarios/lab.yaml", one(j("n1.json"), "127.0.0.1:9339"), file}},
		{desc: "no file: flags and variables only", flags: []string{"--switch", "n1", "--scenario", "s.yaml"},
			env:  []string{"LHCNP_SWITCH_PUBLISH_INTERVAL=50ms"},
			want: got{1, 50 * time.Millisecond, "s.yaml", one("", ""), ""}},
		{desc: "fabric file: a variable's listen is kept for the override", flags: []string{"--config", fabricFile},
			env: []string{"LHCNP_SWITCH_LISTEN=127.0.0.1:0"},
			want: got{1, 100 * time.Millisecond, j("sc.yaml"),
				[]fileSwitch{{Name: "n1", Listen: "127.0.0.1:1"}, {Name: "n2", Listen: "127.0.0.1:2"}}, ""}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			f, _, cc, err := parseSwitchArgs(append(tt.flags, "--insecure"), func() []string { return tt.env }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			g := got{f.Speed, f.PublishInterval, f.Scenario, f.Switches, cc.Origin("speed")}
			if d := cmp.Diff(tt.want, g); d != "" {
				t.Errorf("configuration (-want +got):\n%s", d)
			}
			if strings.Contains(tt.desc, "listen") && f.Listen != "127.0.0.1:0" {
				t.Errorf("listen override %q, want 127.0.0.1:0", f.Listen)
			}
		})
	}
}

// TestSwitchLayerErrors: unknown keys and variables, and values that do
// not fit the file, named with where they came from.
func TestSwitchLayerErrors(t *testing.T) {
	dir := t.TempDir()
	write := fileWriter(t, dir)
	one := write("one.yaml", "switch: n1\nscenario: sc.yaml\n")
	fab := write("fabric.yaml", "scenario: sc.yaml\nswitches: [{name: n1}]\n")
	bogus := write("bogus.yaml", "switch: n1\nscenario: sc.yaml\npublish_intervall: 1s\n")
	nested := write("nested.yaml", "scenario: sc.yaml\nswitches:\n  - name: n1\n    listn: x\n")
	slow := write("slow.yaml", "switch: n1\nscenario: sc.yaml\nspeed: -1\n")
	endless := write("endless.yaml", "switch: n1\nscenario: sc.yaml\nspeed: .inf\n")
	never := write("never.yaml", "switch: n1\nscenario: sc.yaml\npublish_interval: -5ms\n")
	typed := write("typed.yaml", "switch: n1\nscenario: sc.yaml\npublish_interval: fast\n")
	tab := write("tab.yaml", "switch: n1\nscenario: sc.yaml\ninterfaces:\n  wan0: wan\n\twan1: x\n")
	unlimited := write("unlimited.yaml", "switch: n1\nscenario: sc.yaml\nmax_streams_per_user: 0\n")
	for _, tt := range []struct {
		desc  string
		env   []string
		flags []string
		want  string
		usage bool
	}{
		{desc: "unknown key", flags: []string{"--config", bogus}, want: bogus + ":3:1: unknown key publish_intervall"},
		{desc: "unknown key in switches", flags: []string{"--config", nested}, want: nested + ":4:5: unknown key switches[0].listn"},
		{desc: "unknown variable", flags: []string{"--config", one}, env: []string{"LHCNP_SWITCH_PUBLISH_INTERVALL=1s"},
			want: "environment: unknown variable LHCNP_SWITCH_PUBLISH_INTERVALL (known: LHCNP_SWITCH_...)"},
		{desc: "bad variable", flags: []string{"--config", one}, env: []string{"LHCNP_SWITCH_SPEED=fast"}, want: `LHCNP_SWITCH_SPEED="fast": not of type float64`},
		{desc: "zero speed", flags: []string{"--config", one}, env: []string{"LHCNP_SWITCH_SPEED=0"},
			want: "LHCNP_SWITCH_SPEED: speed: 0: must be positive"},
		// The file's bad values at their line: the speed and the interval
		// were named without the file, an infinite speed by the fabric
		// only, and a negative interval was the default.
		{desc: "negative speed in the file", flags: []string{"--config", slow}, want: slow + ":3:8: speed: -1: must be positive"},
		{desc: "infinite speed in the file", flags: []string{"--config", endless}, want: endless + ":3:8: speed: +Inf: outside 1e-09..9e+09"},
		{desc: "negative interval in the file", flags: []string{"--config", never}, want: never + ":3:19: publish_interval: -5ms: must be positive"},
		{desc: "negative interval flag", flags: []string{"--config", one, "--publish-interval", "-1s"}, want: "--publish-interval: publish_interval: -1s: must be positive"},
		{desc: "zero target-defined interval flag", flags: []string{"--config", one, "--target-defined-interval", "0s"},
			want: "--target-defined-interval: target_defined_interval: 0s: must be positive"},
		{desc: "interval not a duration", flags: []string{"--config", typed}, want: typed + ":3:19: publish_interval: cannot unmarshal !!str `fast` into time.Duration"},
		// The limits (0 would be none): in the file, a flag, a variable.
		{desc: "no stream limit per user in the file", flags: []string{"--config", unlimited}, want: unlimited + ":3:23: max_streams_per_user: 0: must be positive"},
		{desc: "negative stream limit flag", flags: []string{"--config", one, "--max-streams", "-1"}, want: "--max-streams: max_streams: -1: must be positive"},
		{desc: "connection limit over uint32", flags: []string{"--config", one}, env: []string{"LHCNP_SWITCH_MAX_STREAMS_PER_CONNECTION=4294967296"},
			want: "LHCNP_SWITCH_MAX_STREAMS_PER_CONNECTION: max_streams_per_connection: 4294967296: at most 4294967295"},
		{desc: "tab in the file", flags: []string{"--config", tab}, want: tab + ":5:1: a tab in the indentation (YAML indents with spaces only)"},
		{desc: "switch over a fabric", flags: []string{"--config", fab, "--switch", "n1"},
			want: "switch (--switch), switches (" + fab + ":2:1): the file lists switches: choose among them with --switches", usage: true},
		{desc: "config over a fabric", flags: []string{"--config", fab}, env: []string{"LHCNP_SWITCH_CONFIG=x.json"},
			want: "config (LHCNP_SWITCH_CONFIG), switches (" + fab + ":2:1): the file lists switches: each entry has its own config", usage: true},
		{desc: "no file, no scenario", flags: []string{"--switch", "n1"},
			want: "--config FILE, or --scenario: the scenario file with the topology and traffic, is required", usage: true},
		{desc: "the file's list switches: has no variable (the key run does)", flags: []string{"--config", one}, env: []string{"LHCNP_SWITCH_SWITCHES=n1"},
			want: "environment: unknown variable LHCNP_SWITCH_SWITCHES (known: LHCNP_SWITCH_...)"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			_, _, _, err := parseSwitchArgs(append(tt.flags, "--insecure"), func() []string { return tt.env }, io.Discard)
			if err == nil || err.Error() != tt.want || exitStatus(err) != 2 {
				t.Fatalf("parseSwitchArgs: %v, want exit status 2 and\n%s", err, tt.want)
			}
			if _, ok := err.(usageError); ok != tt.usage {
				t.Errorf("usage error %v, want %v", ok, tt.usage)
			}
		})
	}
}

// TestSwitchReadsEnvironment: runSwitch itself reads LHCNP_SWITCH_
// variables (the process environment), under the flags.
func TestSwitchReadsEnvironment(t *testing.T) {
	t.Setenv("LHCNP_SWITCH_SPEED", "0.02")
	t.Setenv("LHCNP_SWITCH_LISTEN", "127.0.0.1:0")
	r := startSwitchArgs(t, "--config", "../../examples/switch.yaml", "--insecure")
	// Served, then stopped: a request answered before the stop.
	if _, err := gnmi.NewGNMIClient(dialGNMI(t, r.addr)).Capabilities(testCtx(t), &gnmi.CapabilityRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	out := r.out
	out.mu.Lock()
	defer out.mu.Unlock()
	if s := out.buf.String(); !strings.Contains(s, ", speed 0.02, ") || strings.Contains(s, ":9339") {
		t.Errorf("output %q: want the speed and listen of LHCNP_SWITCH_SPEED and LHCNP_SWITCH_LISTEN", s)
	}
}

// TestSwitchEveryFlagHasAVariable: every flag of lhcnp switch but --config
// (the file itself) is a key, with an LHCNP_SWITCH_ variable layered under
// the flags and over the file: the transport (TLS, mutual TLS, insecure),
// the users file, the wires' captures, the metrics address and the choice
// of switches too. A path from a variable stays as given; the same key
// from the file is relative to the file.
func TestSwitchEveryFlagHasAVariable(t *testing.T) {
	var usage strings.Builder
	if _, _, _, err := parseSwitchArgs([]string{"-h"}, func() []string { return nil }, &usage); err == nil {
		t.Fatal("-h: no error")
	}
	_, _, cc, err := parseSwitchArgs([]string{"--switch", "n1", "--scenario", "s.yaml", "--insecure"}, func() []string { return nil }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	byFlag := map[string]string{}
	for _, k := range cc.Keys() {
		byFlag[cc.Flag(k)] = k
	}
	var flags []string
	for _, l := range strings.Split(usage.String(), "\n") {
		if name, ok := strings.CutPrefix(l, "  -"); ok {
			name, _, _ = strings.Cut(name, " ")
			flags = append(flags, name)
		}
	}
	if len(flags) < 15 {
		t.Fatalf("read %d flags from the usage, want them all:\n%s", len(flags), usage.String())
	}
	for _, fl := range flags {
		if _, ok := byFlag[fl]; !ok && fl != "config" {
			t.Errorf("flag --%s has no key, so no %s variable", fl, switchEnvPrefix)
		}
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "fabric.yaml")
	body := "scenario: sc.yaml\nswitches: [{name: n1}, {name: n2}]\ntls_cert: c.pem\ntls_key: k.pem\nusers: users.txt\n"
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	type got struct {
		Run, TLSCert, TLSKey, ClientCA, Users, Capture, Metrics string
		Insecure                                                bool
	}
	j := func(p string) string { return filepath.Join(dir, p) }
	for _, tt := range []struct {
		desc  string
		env   []string
		flags []string
		want  got
	}{
		{desc: "the file's, relative to it", want: got{TLSCert: j("c.pem"), TLSKey: j("k.pem"), Users: j("users.txt")}},
		{desc: "variables over the file",
			env: []string{"LHCNP_SWITCH_RUN=n2", "LHCNP_SWITCH_TLS_CERT=/etc/c.pem", "LHCNP_SWITCH_TLS_KEY=k2.pem",
				"LHCNP_SWITCH_CLIENT_CA=ca.pem", "LHCNP_SWITCH_USERS=u", "LHCNP_SWITCH_CAPTURE=pcaps", "LHCNP_SWITCH_METRICS=127.0.0.1:9464"},
			want: got{Run: "n2", TLSCert: "/etc/c.pem", TLSKey: "k2.pem", ClientCA: "ca.pem", Users: "u", Capture: "pcaps", Metrics: "127.0.0.1:9464"}},
		// An empty variable is unset (internal/cliconf): the file's TLS
		// is blanked by flags.
		{desc: "plain gRPC from a variable", env: []string{"LHCNP_SWITCH_INSECURE=true", "LHCNP_SWITCH_TLS_CERT=", "LHCNP_SWITCH_TLS_KEY="},
			flags: []string{"--tls-cert=", "--tls-key="}, want: got{Insecure: true, Users: j("users.txt")}},
		{desc: "flags over variables", env: []string{"LHCNP_SWITCH_RUN=n2", "LHCNP_SWITCH_METRICS=127.0.0.1:1"},
			flags: []string{"--switches", "n1", "--metrics", "127.0.0.1:2", "--users", "f.txt"},
			want:  got{Run: "n1", TLSCert: j("c.pem"), TLSKey: j("k.pem"), Users: "f.txt", Metrics: "127.0.0.1:2"}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			f, _, _, err := parseSwitchArgs(append([]string{"--config", file}, tt.flags...), func() []string { return tt.env }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			g := got{f.Run, f.TLSCert, f.TLSKey, f.ClientCA, f.Users, f.Capture, f.Metrics, f.Insecure}
			if d := cmp.Diff(tt.want, g); d != "" {
				t.Errorf("configuration (-want +got):\n%s", d)
			}
		})
	}
}

// TestSwitchListenDefault: the address a switch listens on when nothing
// gives one is written once (switchListen), and the help of --listen says
// it.
func TestSwitchListenDefault(t *testing.T) {
	var usage strings.Builder
	if _, _, _, err := parseSwitchArgs([]string{"-h"}, func() []string { return nil }, &usage); err == nil {
		t.Fatal("-h: no error")
	}
	_, help, ok := strings.Cut(usage.String(), "  -listen")
	help, _, _ = strings.Cut(help, "\n  -")
	if !ok || !strings.Contains(help, "(default "+switchListen+")") || strings.Count(usage.String(), switchListen) != 1 {
		t.Errorf("--listen's help %q, want its default %s once", help, switchListen)
	}
}

// TestSwitchScenarioErrors: what a switch file names that the scenario
// does not have (a switch, an interface's link, a wire's link), an
// address that is not host:port, and a file it names that is missing,
// named at the key's line: the dataplane's and net.Listen's errors named
// neither the file nor the key.
func TestSwitchScenarioErrors(t *testing.T) {
	dir := t.TempDir()
	write := fileWriter(t, dir)
	sc, err := filepath.Abs("../../examples/switch-scenario.yaml")
	if err != nil {
		t.Fatal(err)
	}
	head := "scenario: " + sc + "\n"
	for _, tt := range []struct {
		desc  string
		file  string
		flags []string
		want  string // FILE for the file's path
	}{
		{desc: "no such switch", file: "switch: n9\n" + head,
			want: `FILE:1:9: switch: scenario switch-example has no switch "n9" (switches: n1, n2)`},
		{desc: "no such switch in the list", file: head + "switches:\n  - name: n1\n  - name: n7\n",
			want: `FILE:4:11: switches[1].name: scenario switch-example has no switch "n7" (switches: n1, n2)`},
		{desc: "no such switch from a flag", file: "switch: n1\n" + head, flags: []string{"--switch", "n5"},
			want: `--switch: switch: scenario switch-example has no switch "n5" (switches: n1, n2)`},
		{desc: "interface of no link", file: "switch: n1\n" + head + "interfaces:\n  wan0: wann\n",
			want: `FILE:4:9: interfaces.wan0: switch n1 has no link "wann" (links: source-n1, a1-n1, a2-n1, wan)`},
		{desc: "interface of no link in the list", file: head + "switches:\n  - name: n1\n    interfaces: {wan0: nope}\n",
			want: `FILE:4:24: switches[0].interfaces.wan0: switch n1 has no link "nope" (links: source-n1, a1-n1, a2-n1, wan)`},
		{desc: "a link named twice", file: "switch: n1\n" + head + "interfaces:\n  wan0: wan\n  wan1: wan\n",
			want: `FILE:5:9: interfaces.wan1: link "wan" named twice (wan0 and wan1)`},
		{desc: "wire of no link", file: head + "switches: [{name: n1}]\nwires:\n  - {link: wann, a: \"127.0.0.1:1\", b: \"127.0.0.1:2\"}\n",
			want: `FILE:4:12: wires[0].link: scenario switch-example has no link "wann"`},
		{desc: "a wire twice", file: head + "switches: [{name: n1}]\nwires:\n  - {link: wan, a: \"127.0.0.1:1\", b: \"127.0.0.1:2\"}\n  - {link: wan, a: \"127.0.0.1:3\", b: \"127.0.0.1:4\"}\n",
			want: `FILE:5:12: wires[1].link: link "wan" is wires[0] already`},
		{desc: "port out of range", file: "switch: n1\n" + head + "listen: 127.0.0.1:99999\n",
			want: `FILE:3:9: listen: "127.0.0.1:99999": invalid port "99999"`},
		{desc: "no port", file: "switch: n1\n" + head + "listen: localhost\n",
			want: `FILE:3:9: listen: "localhost": missing port in address (want host:port)`},
		{desc: "no port from a flag", file: "switch: n1\n" + head, flags: []string{"--listen", "1:2:3"},
			want: `--listen: listen: "1:2:3": too many colons in address (want host:port)`},
		{desc: "a listed switch's port", file: head + "switches:\n  - name: n1\n    listen: 127.0.0.1:x\n",
			want: `FILE:4:13: switches[0].listen: "127.0.0.1:x": invalid port "x"`},
		{desc: "a wire's end without a port", file: head + "switches: [{name: n1}]\nwires:\n  - link: wan\n    a: 10.0.0.1\n    b: 10.0.0.2:4789\n",
			want: `FILE:5:8: wires[0].a: "10.0.0.1": missing port in address (want host:port)`},
		{desc: "a wire's end on port 0", file: head + "switches: [{name: n1}]\nwires:\n  - link: wan\n    a: 127.0.0.1:0\n    b: 10.0.0.2:4789\n",
			want: `FILE:5:8: wires[0].a: "127.0.0.1:0": port 0: each end of a wire needs a fixed port, the other end sends to it`},
		{desc: "a wire's far end on port 0", file: head + "switches: [{name: n1}]\nwires:\n  - link: wan\n    a: 127.0.0.1:4789\n    b: 10.0.0.2:0\n",
			want: `FILE:6:8: wires[0].b: "10.0.0.2:0": port 0: each end of a wire needs a fixed port, the other end sends to it`},
		{desc: "metrics without a port", file: "switch: n1\n" + head + "metrics: localhost\n",
			want: `FILE:3:10: metrics: "localhost": missing port in address (want host:port)`},
		{desc: "missing initial configuration", file: "switch: n1\n" + head + "config: nothere.json\n",
			want: "FILE:3:9: config: open DIR/nothere.json: no such file or directory"},
		{desc: "missing scenario", file: "switch: n1\nscenario: nothere.yaml\n",
			want: "FILE:2:11: scenario: DIR/nothere.yaml: no such file or directory"},
		{desc: "switch to run not in the file", file: "switch: n1\n" + head + "run: n2\n",
			want: `FILE:3:6: run: FILE has no switch "n2"`},
		{desc: "a switch to run twice", file: head + "switches: [{name: n1}, {name: n2}]\nrun: n1,n2,n1\n",
			want: `FILE:3:6: run: switch "n1" listed twice`},
		{desc: "a switch to run twice from a flag", file: head + "switches: [{name: n1}, {name: n2}]\n", flags: []string{"--switches", "n2,n2"},
			want: `--switches: run: switch "n2" listed twice`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			file := write(strings.ReplaceAll(tt.desc, " ", "_")+".yaml", tt.file)
			args := append([]string{"--config", file, "--insecure", "--state-dir", t.TempDir()}, tt.flags...)
			err := runSwitch(testCtx(t), args, io.Discard, io.Discard)
			want := strings.NewReplacer("FILE", file, "DIR", dir).Replace(tt.want)
			if err == nil || err.Error() != want {
				t.Errorf("runSwitch: %v\nwant %s", err, want)
			}
		})
	}
}

// TestSwitchAddressesApart: two of lhcnp switch's listeners on one port
// (the gNMI target of a switch it runs, the metrics) are refused before
// anything starts, both keys named where their values came from, exit
// status 2. The second failed the start with "bind: address already in
// use", naming a switch but neither key.
func TestSwitchAddressesApart(t *testing.T) {
	withoutEnv(t, switchEnvPrefix)
	sc, err := filepath.Abs("../../scenarios/lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	write := fileWriter(t, t.TempDir())
	fabric := write("fabric.yaml", "scenario: "+sc+"\nswitches:\n  - name: t1\n    listen: 127.0.0.1:9341\n"+
		"  - name: n1\n    listen: 127.0.0.1:9339\n  - name: n2\n    listen: 127.0.0.1:9340\n")
	unlisted := write("unlisted.yaml", "scenario: "+sc+"\nswitches:\n  - name: t1\n  - name: n1\n")
	one := write("one.yaml", "switch: n1\nscenario: "+sc+"\nmetrics: 127.0.0.1:9500\n")
	const apart = ": each of lhcnp switch's listeners needs an address of its own (port 0: a free one each)"
	for _, tt := range []struct {
		desc string
		args []string // after --config FABRIC, unless they give one
		env  string   // NAME=VALUE, if any
		want string   // FABRIC, UNLISTED, ONE for the files; "" for a configuration taken
	}{
		{desc: "the metrics on a switch's", args: []string{"--metrics", "127.0.0.1:9339"},
			want: "switches[1].listen (FABRIC:6:13), metrics (--metrics): both 127.0.0.1:9339" + apart},
		{desc: "every interface's metrics of a variable over a switch's loopback", env: "LHCNP_SWITCH_METRICS=0.0.0.0:9340",
			want: "switches[2].listen (FABRIC:8:13), metrics (LHCNP_SWITCH_METRICS): 127.0.0.1:9340 and 0.0.0.0:9340 take one port" + apart},
		{desc: "two switches of the file without a listen", args: []string{"--config", unlisted},
			want: "switches[0].listen (default), switches[1].listen (default): both " + switchListen + apart},
		{desc: "the one switch's listen flag on the file's metrics", args: []string{"--config", one, "--listen", "127.0.0.1:9500"},
			want: "listen (--listen), metrics (ONE:3:10): both 127.0.0.1:9500" + apart},
		{desc: "the metrics on the one switch's default", args: []string{"--config", one, "--metrics", switchListen},
			want: "listen (default), metrics (--metrics): both " + switchListen + apart},
		{desc: "the metrics on localhost, a switch's on 127.0.0.1", args: []string{"--metrics", "localhost:9339"},
			want: "switches[1].listen (FABRIC:6:13), metrics (--metrics): 127.0.0.1:9339 and localhost:9339 take one port" + apart},
		{desc: "the file's addresses"},
		{desc: "the metrics on the address of a switch not run", args: []string{"--switches", "n1", "--metrics", "127.0.0.1:9340"}},
		{desc: "one of two switches without a listen", args: []string{"--config", unlisted, "--switches", "n1"}},
		{desc: "free ports", args: []string{"--config", unlisted, "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0"}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			args := append([]string{"--insecure", "--config", fabric}, tt.args...)
			var env []string
			if tt.env != "" {
				env = []string{tt.env}
			}
			f, config, cc, err := parseSwitchArgs(args, func() []string { return env }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			run, err := f.toRun(cc, config)
			if err != nil {
				t.Fatal(err)
			}
			err = f.addressesApart(cc, config, run)
			if tt.want == "" {
				if err != nil {
					t.Errorf("addressesApart(%q) = %v, want it taken", args, err)
				}
				return
			}
			want := strings.NewReplacer("FABRIC", fabric, "UNLISTED", unlisted, "ONE", one).Replace(tt.want)
			if err == nil || err.Error() != want || exitStatus(err) != 2 {
				t.Errorf("addressesApart(%q) = %v (exit status %d), want exit status 2 and\n%s", args, err, exitStatus(err), want)
			}
		})
	}
	// The command as a user runs it: the one line, nothing on stdout,
	// nothing started (a switch's line would be on stdout).
	var stdout, stderr bytes.Buffer
	code := run([]string{"switch", "--config", fabric, "--insecure", "--state-dir", t.TempDir(), "--metrics", "127.0.0.1:9339"}, &stdout, &stderr)
	want := "lhcnp switch: switches[1].listen (" + fabric + ":6:13), metrics (--metrics): both 127.0.0.1:9339" + apart + "\n"
	if code != 2 || stderr.String() != want || stdout.Len() != 0 {
		t.Errorf("exit status %d, stdout %q, stderr\n%s\nwant exit status 2, nothing on stdout and\n%s", code, stdout.String(), stderr.String(), want)
	}
}

// TestWireEndsApart: two ends of the wires of one process (the ends it
// binds, the far ends it sends to) on one UDP address are refused, both
// keys and wires named; port 0 is never shared, every interface's host
// shares a port with any host, two named hosts share none.
func TestWireEndsApart(t *testing.T) {
	const apart = " on one UDP port: each end of a wire needs an address of its own"
	here := func(link, addr, named string) wireEnd { return wireEnd{addr, named, link, true} }
	far := func(link, addr, named string) wireEnd { return wireEnd{addr, named, link, false} }
	for _, tt := range []struct {
		desc string
		ends []wireEnd
		want string // "" for ends apart
	}{
		{desc: "two wires on one port in this process",
			ends: []wireEnd{here("t1-n1", "127.0.0.1:47002", "B0"), far("t1-n1", "127.0.0.1:47001", "A0"),
				here("wan", "127.0.0.1:47002", "A1"), far("wan", "127.0.0.1:47004", "B1")},
			want: "B0, A1: both 127.0.0.1:47002: the ends of wires t1-n1 and wan in this process" + apart},
		{desc: "a wire sending to another's port in this process",
			ends: []wireEnd{here("t1-n1", "127.0.0.1:47002", "B0"), far("t1-n1", "127.0.0.1:47001", "A0"),
				here("wan", "127.0.0.1:47003", "A1"), far("wan", "127.0.0.1:47002", "B1")},
			want: "B0, B1: both 127.0.0.1:47002: wire t1-n1's end in this process and wire wan's far end" + apart},
		{desc: "a far end on a port of this process's",
			ends: []wireEnd{here("t1-n1", "127.0.0.1:47002", "B0"), far("t1-n1", "127.0.0.1:47003", "A0"),
				here("wan", "127.0.0.1:47003", "A1"), far("wan", "127.0.0.1:47004", "B1")},
			want: "A0, A1: both 127.0.0.1:47003: wire t1-n1's far end and wire wan's end in this process" + apart},
		{desc: "two wires to one far end",
			ends: []wireEnd{here("t1-n1", "127.0.0.1:47002", "B0"), far("t1-n1", "127.0.0.1:47001", "A0"),
				here("wan", "127.0.0.1:47003", "A1"), far("wan", "127.0.0.1:47001", "B1")},
			want: "A0, B1: both 127.0.0.1:47001: the far ends of wires t1-n1 and wan" + apart},
		{desc: "one wire's two ends",
			ends: []wireEnd{here("wan", "127.0.0.1:47003", "A1"), far("wan", "127.0.0.1:47003", "B1")},
			want: "A1, B1: both 127.0.0.1:47003: the two ends of wire wan" + apart},
		{desc: "every interface here, a named host's far end",
			ends: []wireEnd{here("t1-n1", "0.0.0.0:47001", "B0"), far("t1-n1", "t1:47001", "A0")},
			want: "B0, A0: 0.0.0.0:47001 and t1:47001: the two ends of wire t1-n1" + apart},
		{desc: "every interface without a host and the loopback",
			ends: []wireEnd{here("t1-n1", ":47002", "B0"), far("t1-n1", "127.0.0.1:47001", "A0"),
				here("wan", "127.0.0.1:47002", "A1"), far("wan", "127.0.0.1:47004", "B1")},
			want: "B0, A1: :47002 and 127.0.0.1:47002: the ends of wires t1-n1 and wan in this process" + apart},
		{desc: "localhost and 127.0.0.1 on one port",
			ends: []wireEnd{here("t1-n1", "localhost:47002", "B0"), far("t1-n1", "127.0.0.1:47001", "A0"),
				here("wan", "127.0.0.1:47002", "A1"), far("wan", "127.0.0.1:47004", "B1")},
			want: "B0, A1: localhost:47002 and 127.0.0.1:47002: the ends of wires t1-n1 and wan in this process" + apart},
		{desc: "the lab's wires on loopback",
			ends: []wireEnd{here("t1-n1", "127.0.0.1:47002", "B0"), far("t1-n1", "127.0.0.1:47001", "A0"),
				here("wan", "127.0.0.1:47003", "A1"), far("wan", "127.0.0.1:47004", "B1")}},
		{desc: "named hosts on one port",
			ends: []wireEnd{here("t1-n1", "n1:47001", "B0"), far("t1-n1", "t1:47001", "A0"),
				here("wan", "n1:47002", "A1"), far("wan", "n2:47002", "B1")}},
		{desc: "two addresses of the loopback on one port",
			ends: []wireEnd{here("t1-n1", "127.0.0.1:47001", "B0"), far("t1-n1", "127.0.0.2:47001", "A0")}},
		{desc: "port 0",
			ends: []wireEnd{here("t1-n1", "127.0.0.1:0", "B0"), far("t1-n1", "127.0.0.1:47001", "A0"),
				here("wan", "127.0.0.1:0", "A1"), far("wan", "0.0.0.0:0", "B1")}},
		{desc: "no wires"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			err := wireEndsApart(tt.ends)
			if tt.want == "" {
				if err != nil {
					t.Errorf("wireEndsApart = %v, want the ends apart", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want || exitStatus(err) != 2 {
				t.Errorf("wireEndsApart = %v (exit status %d), want exit status 2 and\n%s", err, exitStatus(err), tt.want)
			}
		})
	}
}

// TestSwitchWiresApart: lhcnp switch refuses a fabric file whose wires
// would have this process bind one UDP port twice, or send a wire's
// frames to a port of its own, before anything starts: both keys named
// at their line and column, both wires, exit status 2, nothing bound.
// n1 bound its gNMI target, then failed its second wire with "udpwire:
// link wan: listen udp 127.0.0.1:P: bind: address already in use", exit
// status 1. A wire's UDP port on the number of a TCP listener is apart
// from it.
func TestSwitchWiresApart(t *testing.T) {
	withoutEnv(t, switchEnvPrefix)
	sc := labScenarioPath(t)
	write := fileWriter(t, t.TempDir())
	p := freeUDP(t, 4) // 127.0.0.1:PORT each
	// n1's listen on line 5; wires[0].a and .b on lines 9 and 10,
	// wires[1]'s on 12 and 13, each value at column 8.
	fabric := func(name, listen, a0, b0, a1, b1 string) string {
		return write(name, "scenario: "+sc+"\nswitches:\n  - name: t1\n  - name: n1\n    listen: "+listen+"\n  - name: n2\n"+
			"wires:\n  - link: t1-n1\n    a: "+a0+"\n    b: "+b0+"\n  - link: wan\n    a: "+a1+"\n    b: "+b1+"\n")
	}
	twice := fabric("twice.yaml", "127.0.0.1:0", p[0], p[1], p[1], p[2])
	const apart = " on one UDP port: each end of a wire needs an address of its own"
	for _, tt := range []struct {
		desc, file string
		run        string // --switches
		want       string // "" for a configuration taken
	}{
		{desc: "two wires of n1 on one port", file: twice, run: "n1",
			want: "wires[0].b (" + twice + ":10:8), wires[1].a (" + twice + ":12:8): both " + p[1] + ": the ends of wires t1-n1 and wan in this process" + apart},
		{desc: "t1 of that file: its one wire's ends apart", file: twice, run: "t1"},
		{desc: "a wire of n2 to its own port", file: fabric("self.yaml", "127.0.0.1:0", p[0], p[1], p[2], p[2]), run: "n2",
			want: "wires[1].b (DIR/self.yaml:13:8), wires[1].a (DIR/self.yaml:12:8): both " + p[2] + ": the two ends of wire wan" + apart},
		{desc: "n1 with t1: t1-n1 a link of the engine, not a wire", file: twice, run: "t1,n1"},
		{desc: "a wire's UDP port on the number of n1's gNMI target", run: "n1",
			file: fabric("tcp.yaml", p[1], p[0], p[1], p[2], p[3])},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			err := checkWires(t, tt.file, tt.run)
			if tt.want == "" {
				if err != nil {
					t.Errorf("wiresApart(%s, --switches %s) = %v, want it taken", tt.file, tt.run, err)
				}
				return
			}
			want := strings.ReplaceAll(tt.want, "DIR", filepath.Dir(tt.file))
			if err == nil || err.Error() != want || exitStatus(err) != 2 {
				t.Errorf("wiresApart(%s, --switches %s) = %v (exit status %d), want exit status 2 and\n%s", tt.file, tt.run, err, exitStatus(err), want)
			}
		})
	}
	// The shipped fabric files, a process per switch: taken (the
	// containers' ends share port numbers on hosts of their own).
	for _, file := range []string{"../../examples/lab.yaml", "../../examples/lab-containers.yaml"} {
		for _, sw := range []string{"t1", "n1", "n2"} {
			if err := checkWires(t, file, sw); err != nil {
				t.Errorf("wiresApart(%s, --switches %s) = %v, want it taken", file, sw, err)
			}
		}
	}
	// docs/lab.md's example: examples/lab.yaml with wan's a on n1's end
	// of t1-n1, its lines and columns kept.
	example, err := os.ReadFile("../../examples/lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.NewReplacer("{link: wan, a: 127.0.0.1:47003", "{link: wan, a: 127.0.0.1:47002",
		"scenario: ../scenarios/lab.yaml", "scenario: "+sc).Replace(string(example))
	if strings.Count(edited, "127.0.0.1:47002") != 2 || !strings.Contains(edited, sc) {
		t.Fatalf("examples/lab.yaml has no longer wan's a at 127.0.0.1:47003 and its scenario at ../scenarios/lab.yaml")
	}
	file := write("lab.yaml", edited)
	if err := checkWires(t, file, "n1"); err == nil {
		t.Error("wiresApart(examples/lab.yaml with wan's a at 127.0.0.1:47002, --switches n1) took it")
	} else {
		docsLabSays(t, strings.ReplaceAll(err.Error(), file, "examples/lab.yaml"), "lhcnp switch --switches n1 on it")
	}
	// The command as a user runs it: the one line, nothing on stdout (a
	// switch's line would be there), and the port is free: nothing bound
	// it and nothing holds it.
	var stdout, stderr bytes.Buffer
	code := run([]string{"switch", "--config", twice, "--switches", "n1", "--insecure", "--state-dir", t.TempDir()}, &stdout, &stderr)
	want := "lhcnp switch: wires[0].b (" + twice + ":10:8), wires[1].a (" + twice + ":12:8): both " + p[1] +
		": the ends of wires t1-n1 and wan in this process" + apart + "\n"
	if code != 2 || stderr.String() != want || stdout.Len() != 0 {
		t.Errorf("exit status %d, stdout %q, stderr\n%s\nwant exit status 2, nothing on stdout and\n%s", code, stdout.String(), stderr.String(), want)
	}
	pc, err := net.ListenPacket("udp", p[1])
	if err != nil {
		t.Fatalf("the wires' port after the refusal: %v", err)
	}
	pc.Close()
}

// checkWires checks the wires of lhcnp switch --config file --switches run
// as the command does before anything starts, after its listeners
// (addressesApart), and returns wiresApart's error.
func checkWires(t *testing.T, file, run string) error {
	t.Helper()
	args := []string{"--insecure", "--config", file, "--switches", run}
	f, config, cc, err := parseSwitchArgs(args, func() []string { return nil }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	switches, err := f.toRun(cc, config)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.LoadFile(f.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.addressesApart(cc, config, switches); err != nil {
		t.Fatalf("addressesApart(%q) = %v", args, err)
	}
	wires, err := localWires(sc, f, switches, cc)
	if err != nil {
		t.Fatal(err)
	}
	return wiresApart(cc, config, wires)
}
