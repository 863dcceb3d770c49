package fabric

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/server/startup"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmi/proto/gnmi_ext"
	"google.golang.org/protobuf/types/known/durationpb"
)

const wanQ0 = "/lhcnp/interfaces/interface[name=wan]/queues/queue[id=0]/config/alpha"

// startN1 builds (without running) a fabric of n1 with its lab
// configuration and the startup files in dir.
func startN1(t *testing.T, dir string, ignore bool) (*Fabric, error) {
	t.Helper()
	f, err := New(context.Background(), n1Config(t, dir, ignore, readFile(t, "../../examples/lab-n1.json")))
	if err == nil {
		t.Cleanup(f.Close)
	}
	return f, err
}

// n1Config is a fabric of n1 with the initial configuration initial
// (lab-n1.json) and the startup files in dir.
func n1Config(t *testing.T, dir string, ignore bool, initial []byte) Config {
	return Config{Scenario: loadLab(t), Schema: labSchema, Speed: 0.02, StartupDir: dir, IgnoreStartup: ignore,
		TargetOptions: []service.Option{service.WithInsecure()},
		Switches:      []Switch{{Name: "n1", Listen: "127.0.0.1:0", Config: initial, ConfigName: "lab-n1.json"}}}
}

// checkLikeNew checks that Check refuses cfg as New refused it (newErr):
// a *ConfigError of n1's startup file (startup) or initial configuration,
// with New's message, so that a command can refuse it before it starts.
func checkLikeNew(t *testing.T, cfg Config, newErr error, startup bool) {
	t.Helper()
	err := Check(context.Background(), cfg)
	ce, ok := errors.AsType[*ConfigError](err)
	if !ok || ce.Switch != "n1" || ce.Startup != startup || err.Error() != newErr.Error() {
		t.Errorf("Check: %v (%T)\nwant a *ConfigError of n1 (startup %v) saying New's\n%v", err, err, startup, newErr)
	}
}

func alphaPath(t *testing.T) *gnmi.Path {
	return path(t, "lhcnp", "interfaces", "interface[name=wan]", "queues", "queue[id=0]", "config", "alpha")
}

// alphaOf reads n1's WAN queue alpha with Get (type CONFIG).
func alphaOf(t *testing.T, f *Fabric) string {
	t.Helper()
	resp, err := f.Switch("n1").Handler.Get(context.Background(), &gnmi.GetRequest{Path: []*gnmi.Path{alphaPath(t)},
		Type: gnmi.GetRequest_CONFIG, Encoding: gnmi.Encoding_JSON_IETF})
	if err != nil {
		t.Fatalf("Get alpha: %v", err)
	}
	var a string
	if err := json.Unmarshal(resp.GetNotification()[0].GetUpdate()[0].GetVal().GetJsonIetfVal(), &a); err != nil {
		t.Fatal(err)
	}
	return a
}

func alphaUpdate(t *testing.T, v string) []*gnmi.Update {
	return []*gnmi.Update{{Path: alphaPath(t), Val: &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(`"` + v + `"`)}}}}
}

func commitExt(c *gnmi_ext.Commit) []*gnmi_ext.Extension {
	return []*gnmi_ext.Extension{{Ext: &gnmi_ext.Extension_Commit{Commit: c}}}
}

// TestStartupConfiguration: a switch with a state directory starts from
// the configuration it was last committed with: a Set and a confirmed
// commit survive a restart, a commit never confirmed does not,
// IgnoreStartup starts from the initial configuration (and keeps that).
func TestStartupConfiguration(t *testing.T) {
	set := func(t *testing.T, f *Fabric, req *gnmi.SetRequest) {
		t.Helper()
		if _, err := f.Switch("n1").Handler.Set(context.Background(), req); err != nil {
			t.Fatalf("Set: %v", err)
		}
	}
	commit := func(t *testing.T, f *Fabric, v string) {
		set(t, f, &gnmi.SetRequest{Update: alphaUpdate(t, v), Extension: commitExt(&gnmi_ext.Commit{Id: "c1",
			Action: &gnmi_ext.Commit_Commit{Commit: &gnmi_ext.CommitRequest{RollbackDuration: durationpb.New(time.Hour)}}})})
	}
	tests := []struct {
		desc   string
		change func(t *testing.T, f *Fabric)
		ignore bool // the restart ignores the startup file
		want   string
	}{
		{desc: "nothing changed", change: func(*testing.T, *Fabric) {}, want: "1.0"},
		{desc: "a set", change: func(t *testing.T, f *Fabric) { set(t, f, &gnmi.SetRequest{Update: alphaUpdate(t, "0.5")}) }, want: "0.5"},
		{desc: "a confirmed commit", change: func(t *testing.T, f *Fabric) {
			commit(t, f, "0.5")
			set(t, f, &gnmi.SetRequest{Extension: commitExt(&gnmi_ext.Commit{Id: "c1", Action: &gnmi_ext.Commit_Confirm{Confirm: &gnmi_ext.CommitConfirm{}}})})
		}, want: "0.5"},
		{desc: "a commit never confirmed", change: func(t *testing.T, f *Fabric) {
			set(t, f, &gnmi.SetRequest{Update: alphaUpdate(t, "0.75")})
			commit(t, f, "0.5")
		}, want: "0.75"},
		{desc: "a cancelled commit", change: func(t *testing.T, f *Fabric) {
			commit(t, f, "0.5")
			set(t, f, &gnmi.SetRequest{Extension: commitExt(&gnmi_ext.Commit{Id: "c1", Action: &gnmi_ext.Commit_Cancel{Cancel: &gnmi_ext.CommitCancel{}}})})
		}, want: "1.0"},
		{desc: "a set, restarted ignoring it", change: func(t *testing.T, f *Fabric) { set(t, f, &gnmi.SetRequest{Update: alphaUpdate(t, "0.5")}) },
			ignore: true, want: "1.0"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "switches")
			f, err := startN1(t, dir, false)
			if err != nil {
				t.Fatal(err)
			}
			tt.change(t, f)
			f.Close()
			again, err := startN1(t, dir, tt.ignore)
			if err != nil {
				t.Fatalf("restart: %v", err)
			}
			if got := alphaOf(t, again); got != tt.want {
				t.Errorf("alpha after the restart = %s, want %s", got, tt.want)
			}
			again.Close()
			// What the switch runs is what it starts from next time.
			third, err := startN1(t, dir, false)
			if err != nil {
				t.Fatalf("second restart: %v", err)
			}
			if got := alphaOf(t, third); got != tt.want {
				t.Errorf("alpha after a second restart = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestStartupFileInUse: a second fabric running the same switch with the
// same startup file is refused; once the first is closed, it starts.
func TestStartupFileInUse(t *testing.T) {
	dir := t.TempDir()
	first, err := startN1(t, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = startN1(t, dir, false)
	if !errors.Is(err, startup.ErrInUse) || !strings.Contains(err.Error(), "another state directory") {
		t.Fatalf("second start: %v, want ErrInUse", err)
	}
	first.Close()
	if _, err := startN1(t, dir, false); err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
}

// TestBadStartupFile: a startup file that does not load stops the start
// with an error naming the file, the line and column, and the path or
// reason; it never falls back to defaults silently. A member given twice
// is refused (encoding/json kept the last).
func TestBadStartupFile(t *testing.T) {
	good := string(readFile(t, "../../examples/lab-n1.json"))
	tests := []struct {
		desc string
		file string
		at   string   // :LINE:COL after the file's name
		want []string // in the error
	}{
		{desc: "truncated", file: good[:len(good)/2], at: ":22:1", want: []string{"malformed JSON: unexpected end of the document"}},
		{desc: "a comma too many", file: strings.Replace(good, `"alpha": "1.0",`, `"alpha": "1.0",,`, 1), at: ":26:71",
			want: []string{"malformed JSON: invalid character ',' looking for beginning of object key string"}},
		{desc: "empty", file: "", at: ":1:1", want: []string{"malformed JSON: empty document"}},
		{desc: "data after the document", file: good + "{}\n", at: ":40:1", want: []string{"malformed JSON: data after the value"}},
		{desc: "a member twice", file: strings.Replace(good, `"alpha": "1.0"`, `"alpha": "1.0", "alpha": "2.0"`, 1), at: ":26:72",
			want: []string{"lhcnp/interfaces/interface[0]/queues/queue[0]/config/alpha: member given twice"}},
		{desc: "a value of the wrong type", file: strings.Replace(good, `"alpha": "1.0"`, `"alpha": "fast"`, 1), at: ":26:56",
			want: []string{`lhcnp/interfaces/interface[name=wan]/queues/queue[id=0]/config/alpha: the string "fast" is not a decimal64 number`}},
		{desc: "a value out of range", file: strings.Replace(good, `"alpha": "1.0"`, `"alpha": "-5"`, 1), at: ":26:56",
			want: []string{"config/alpha: -5.0 is outside the range 0.001..1000.000 of its type"}},
		{desc: "an integer out of range", file: strings.Replace(good, `"rtt-est": 10000`, `"rtt-est": 99999999999`, 1), at: ":21:61",
			want: []string{"interface[name=wan]/config/rtt-est: 99999999999 is out of the range of uint32"}},
		{desc: "an unknown leaf", file: strings.Replace(good, `"alpha": "1.0"`, `"alfa": "1.0"`, 1), at: ":26:56", want: []string{"config/alfa: not in the schema"}},
		{desc: "a list for a container", file: strings.Replace(good, `"action-policy": {`, `"action-policy": [], "x": {`, 1), at: ":27:17",
			want: []string{"queue[id=0]/action-policy: container action-policy takes a JSON object, not an array"}},
		{desc: "a rule of the model", file: strings.Replace(good, `"k-base": "65536"`, `"k-base": "65536", "kmax-mode": "EXPLICIT"`, 1), at: ":26:17",
			want: []string{"/config/kmax: must be set"}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "n1.json")
			if err := os.WriteFile(file, []byte(tt.file), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := startN1(t, dir, false)
			if err == nil {
				t.Fatal("start with a bad startup file succeeded")
			}
			t.Logf("error: %v", err)
			for _, w := range append([]string{"switch n1: startup configuration " + file + tt.at + ": ", "--ignore-startup"}, tt.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			checkLikeNew(t, n1Config(t, dir, false, readFile(t, "../../examples/lab-n1.json")), err, true)
			if err := Check(context.Background(), n1Config(t, dir, true, readFile(t, "../../examples/lab-n1.json"))); err != nil {
				t.Errorf("Check ignoring the bad file: %v", err)
			}
			// The file is left as it was, for the operator to read.
			if diff := cmp.Diff(tt.file, string(readFile(t, file))); diff != "" {
				t.Errorf("bad file changed (-before +after):\n%s", diff)
			}
			// Started ignoring it, the switch runs its initial configuration.
			f, err := startN1(t, dir, true)
			if err != nil {
				t.Fatalf("start ignoring the bad file: %v", err)
			}
			if got := alphaOf(t, f); got != "1.0" {
				t.Errorf("alpha = %s, want the initial 1.0", got)
			}
		})
	}
}

// TestBadInitialConfig: an initial configuration that does not load is an
// error naming its file, line and column and the path (it named the file
// and the path only).
func TestBadInitialConfig(t *testing.T) {
	good := readFile(t, "../../examples/lab-n1.json")
	bad := strings.Replace(string(good), `"alpha": "1.0"`, `"alpha": "0"`, 1)
	_, err := New(context.Background(), n1Config(t, "", false, []byte(bad)))
	want := "switch n1: initial configuration lab-n1.json:26:56: lhcnp/interfaces/interface[name=wan]/queues/queue[id=0]/config/alpha: 0.0 is outside the range 0.001..1000.000 of its type"
	if err == nil || err.Error() != want {
		t.Fatalf("New: %v\nwant %s", err, want)
	}
	checkLikeNew(t, n1Config(t, "", false, []byte(bad)), err, false)
	// With a startup file, that is what loads: the initial configuration
	// is not checked (New does not load it).
	dir := t.TempDir()
	if err := os.WriteFile(startup.FileName(dir, "n1"), good, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Check(context.Background(), n1Config(t, dir, false, []byte(bad))); err != nil {
		t.Errorf("Check with a good startup file: %v", err)
	}
}

// TestCheckChangesNothing: Check loads the configurations without a
// trace: a state directory that does not exist is not made, a startup
// file and a write in progress beside it (its temporary file) are left,
// no lock is taken; and a good configuration passes.
func TestCheckChangesNothing(t *testing.T) {
	good := readFile(t, "../../examples/lab-n1.json")
	none := filepath.Join(t.TempDir(), "none")
	if err := Check(context.Background(), n1Config(t, none, false, good)); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if _, err := os.Stat(none); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Check made the state directory: %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(startup.FileName(dir, "n1"), good, 0o644); err != nil {
		t.Fatal(err)
	}
	temp := filepath.Join(dir, ".n1.json.tmp-1") // atomicfile.TempPrefix
	if err := os.WriteFile(temp, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(context.Background(), n1Config(t, dir, false, good)); err != nil {
		t.Fatalf("Check: %v", err)
	}
	after, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := func(es []os.DirEntry) (n []string) {
		for _, e := range es {
			n = append(n, e.Name())
		}
		return n
	}
	if diff := cmp.Diff(names(before), names(after)); diff != "" {
		t.Errorf("Check changed the state directory (-before +after):\n%s", diff)
	}
}

// TestBadStartupPolicy: a startup file whose value ygot's validation of
// the whole configuration refuses, in an entry of a keyed list (a policy's
// source-prefix), is named with the entry's keys at the file's line and
// column, the whole line a switch's user reads; it was the schema path
// without keys (…/policies/policy/config/source-prefix) at the file alone.
func TestBadStartupPolicy(t *testing.T) {
	dir := t.TempDir()
	path := startup.FileName(dir, "n1")
	doc := "{\"lhcnp:lhcnp\": {\n  \"rate-advice\": {\"policies\": {\"policy\": [\n" +
		"    {\"name\": \"p0\", \"config\": {\"name\": \"p0\", \"source-prefix\": \"10.0.0.0/8\"}},\n" +
		"    {\"name\": \"p1\", \"config\": {\"name\": \"p1\", \"source-prefix\": \"10.0.0.0/33\"}}\n  ]}}\n}}\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := startN1(t, dir, false)
	if err != nil {
		checkLikeNew(t, n1Config(t, dir, false, readFile(t, "../../examples/lab-n1.json")), err, true)
	}
	want := "switch n1: startup configuration " + path + ":4:45: validation: /lhcnp/rate-advice/policies/policy[name=p1]/config/source-prefix: " +
		`"10.0.0.0/33" does not match regular expression pattern "^(((:|[0-9a-fA-F]{0,4}):)([0-9a-fA-F]{0,4}:){0,5}((([0-9a-fA-F]{0,4}:)?(:|[0-9a-fA-F]{0,4}))|(((25[0-5]|2[0-4][0-9]|[01]?[0-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|[01]?[0-9]?[0-9])))(/(([0-9])|([0-9]{2})|(1[0-1][0-9])|(12[0-8]))))$"` +
		" (correct or remove the file, or start with --ignore-startup to start from the initial configuration)"
	if err == nil || err.Error() != want {
		t.Errorf("New: %v\nwant %s", err, want)
	}
}
