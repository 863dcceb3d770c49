package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/gnmi/schema"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmi/proto/gnmi_ext"
	"google.golang.org/protobuf/types/known/durationpb"
)

// The two leaves every Set of these tests writes together: generation k
// is alpha "k.5" with v-growth vGrowthBase+k, so a configuration read back
// names its generation, and a mix of two would show.
const vGrowthBase = 1_000_000_000

func queueLeaf(leaf string) *gnmi.Path {
	return &gnmi.Path{Origin: "lhcnp", Elem: []*gnmi.PathElem{{Name: "lhcnp"}, {Name: "interfaces"},
		{Name: "interface", Key: map[string]string{"name": "wan0"}}, {Name: "queues"},
		{Name: "queue", Key: map[string]string{"id": "0"}}, {Name: "config"}, {Name: leaf}}}
}

func generationSet(k int) *gnmi.SetRequest {
	ietfVal := func(s string) *gnmi.TypedValue {
		return &gnmi.TypedValue{Value: &gnmi.TypedValue_JsonIetfVal{JsonIetfVal: []byte(strconv.Quote(s))}}
	}
	return &gnmi.SetRequest{Update: []*gnmi.Update{
		{Path: queueLeaf("alpha"), Val: ietfVal(fmt.Sprintf("%d.5", k))},
		{Path: queueLeaf("v-growth"), Val: ietfVal(strconv.Itoa(vGrowthBase + k))},
	}}
}

// generation reads the switch's configuration back with Get CONFIG: the
// generation it holds (0: the initial configuration, alpha 1.0), an error
// when alpha and v-growth are of different generations.
func generation(ctx context.Context, c gnmi.GNMIClient) (int, error) {
	resp, err := c.Get(ctx, &gnmi.GetRequest{Path: []*gnmi.Path{queueLeaf("alpha"), queueLeaf("v-growth")},
		Type: gnmi.GetRequest_CONFIG, Encoding: gnmi.Encoding_JSON_IETF})
	if err != nil {
		return 0, err
	}
	var vals []string
	for _, n := range resp.GetNotification() {
		for _, u := range n.GetUpdate() {
			var s string
			if err := json.Unmarshal(u.GetVal().GetJsonIetfVal(), &s); err != nil {
				return 0, err
			}
			vals = append(vals, s)
		}
	}
	if len(vals) != 2 {
		return 0, fmt.Errorf("read %q, want alpha and v-growth", vals)
	}
	if vals[0] == "1.0" && vals[1] == "1250000000" { // alpha in decimal64's canonical form (RFC 7950 §9.3.2)
		return 0, nil
	}
	k, err := strconv.Atoi(strings.TrimSuffix(vals[0], ".5"))
	if err != nil {
		return 0, fmt.Errorf("alpha %s is no generation's", vals[0])
	}
	if vals[1] != strconv.Itoa(vGrowthBase+k) {
		return 0, fmt.Errorf("alpha %s with v-growth %s: a mix of two configurations", vals[0], vals[1])
	}
	return k, nil
}

// switchProc starts lhcnp switch (examples/switch.yaml) as a process of its
// own with its startup configurations in stateDir, and returns it with a
// client once it listens.
func switchProc(ctx context.Context, t *testing.T, stateDir string, extra ...string) (*proc, gnmi.GNMIClient) {
	t.Helper()
	p := startSwitchProc(t, append([]string{"--config", "../../examples/switch.yaml", "--listen", "127.0.0.1:0", "--speed", "0.01",
		"--insecure", "--state-dir", stateDir}, extra...)...)
	addr := p.addrs(ctx, t, 1)["n1"]
	return p, gnmi.NewGNMIClient(dialGNMI(t, addr))
}

// TestSwitchConfigSurvivesKill: a real lhcnp switch process takes Sets one
// after the other (each writes two leaves of a new generation) and is
// killed (SIGKILL) at seeded random instants, often during a Set; started
// again, it runs either the last acknowledged configuration or the one
// whose Set was in flight, never a mix of two and never an older one; and
// what it runs is what its startup file holds.
func TestSwitchConfigSurvivesKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	state := t.TempDir()
	rng := rand.New(rand.NewPCG(28, 2))
	acked := 0 // the last generation whose Set succeeded
	next := 1
	for round := range 8 {
		p, c := switchProc(ctx, t, state)
		got, err := generation(ctx, c)
		if err != nil {
			t.Fatalf("round %d: after the restart: %v", round, err)
		}
		// The Set in flight at the kill may or may not have been kept.
		if got != acked && got != acked+1 {
			t.Fatalf("round %d: restarted with generation %d; the last acknowledged is %d, %d was in flight", round, got, acked, acked+1)
		}
		checkStartupFile(ctx, t, c, filepath.Join(state, "n1.json"))
		if round > 0 {
			t.Logf("round %d: restarted with generation %d (the Set in flight at the kill kept: %v)", round, got, got == acked+1)
		}
		acked = got
		next = max(next, got+1)

		// Sets back to back; the kill comes after a seeded delay.
		type result struct {
			k   int
			err error
		}
		results := make(chan result, 1024)
		stop := make(chan struct{})
		go func() {
			for k := next; ; k++ {
				select {
				case <-stop:
					close(results)
					return
				default:
				}
				_, err := c.Set(ctx, generationSet(k))
				results <- result{k, err}
				if err != nil {
					close(results)
					return
				}
			}
		}()
		delay := time.Duration(rng.IntN(60)) * time.Millisecond
		// Let at least one Set through, then kill after the delay.
		first := <-results
		if first.err != nil {
			t.Fatalf("round %d: Set: %v", round, first.err)
		}
		acked = first.k
		select { // the crash comes at a random instant: nothing is awaited
		case <-time.After(delay):
		case <-ctx.Done():
		}
		p.kill()
		close(stop)
		for r := range results {
			if r.err == nil {
				acked = r.k
			}
			next = r.k + 1
		}
		t.Logf("round %d: killed %v after the first Set; last acknowledged generation %d", round, delay, acked)
	}
}

// checkStartupFile: the startup file holds what was set, and Get CONFIG of
// / returns it with the YANG defaults in use filled in (schema.ConfigInUse).
func checkStartupFile(ctx context.Context, t *testing.T, c gnmi.GNMIClient, file string) {
	t.Helper()
	resp, err := c.Get(ctx, &gnmi.GetRequest{Type: gnmi.GetRequest_CONFIG, Encoding: gnmi.Encoding_JSON_IETF})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	ietf, err := schema.DecodeJSON(s.Root(), b)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	root := &oc.Root{}
	if err := oc.Unmarshal(ietf, root); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	inUse, err := s.ConfigInUse(root)
	if err != nil {
		t.Fatal(err)
	}
	full, err := s.Build(inUse)
	if err != nil {
		t.Fatal(err)
	}
	tv, err := s.EncodeNode(full, &gnmi.Path{}, gnmi.Encoding_JSON_IETF)
	if err != nil {
		t.Fatal(err)
	}
	var want, got bytes.Buffer
	if err := json.Compact(&want, resp.GetNotification()[0].GetUpdate()[0].GetVal().GetJsonIetfVal()); err != nil {
		t.Fatal(err)
	}
	if err := json.Compact(&got, tv.GetJsonIetfVal()); err != nil {
		t.Fatal(err)
	}
	if want.String() != got.String() {
		t.Errorf("%s holds, with its defaults\n%s\nGet CONFIG of / returns\n%s", file, got.String(), want.String())
	}
}

// TestSwitchStartupProcess: across restarts of a real process, a confirmed
// commit is kept, a commit pending at a kill is not (the startup file is
// left as it was), --ignore-startup starts from the initial configuration,
// and a corrupt startup file stops the start with an error naming the
// file and the reason.
func TestSwitchStartupProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	commit := func(t *testing.T, c gnmi.GNMIClient, id string, k int) {
		t.Helper()
		req := generationSet(k)
		req.Extension = []*gnmi_ext.Extension{{Ext: &gnmi_ext.Extension_Commit{Commit: &gnmi_ext.Commit{Id: id,
			Action: &gnmi_ext.Commit_Commit{Commit: &gnmi_ext.CommitRequest{RollbackDuration: durationpb.New(time.Hour)}}}}}}
		if _, err := c.Set(ctx, req); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	confirm := func(t *testing.T, c gnmi.GNMIClient, id string) {
		t.Helper()
		req := &gnmi.SetRequest{Extension: []*gnmi_ext.Extension{{Ext: &gnmi_ext.Extension_Commit{Commit: &gnmi_ext.Commit{Id: id,
			Action: &gnmi_ext.Commit_Confirm{Confirm: &gnmi_ext.CommitConfirm{}}}}}}}
		if _, err := c.Set(ctx, req); err != nil {
			t.Fatalf("confirm: %v", err)
		}
	}
	tests := []struct {
		desc    string
		change  func(t *testing.T, c gnmi.GNMIClient)
		restart []string // extra flags of the restart
		want    int      // generation after the restart
	}{
		{desc: "a confirmed commit is kept", change: func(t *testing.T, c gnmi.GNMIClient) {
			commit(t, c, "c1", 3)
			confirm(t, c, "c1")
		}, want: 3},
		{desc: "a commit pending at the kill is not", change: func(t *testing.T, c gnmi.GNMIClient) {
			if _, err := c.Set(ctx, generationSet(2)); err != nil {
				t.Fatal(err)
			}
			commit(t, c, "c1", 3)
		}, want: 2},
		{desc: "--ignore-startup starts from the initial configuration", change: func(t *testing.T, c gnmi.GNMIClient) {
			if _, err := c.Set(ctx, generationSet(2)); err != nil {
				t.Fatal(err)
			}
		}, restart: []string{"--ignore-startup"}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			state := t.TempDir()
			p, c := switchProc(ctx, t, state)
			tt.change(t, c)
			before, err := os.ReadFile(filepath.Join(state, "n1.json"))
			if err != nil {
				t.Fatal(err)
			}
			p.kill()
			_, c = switchProc(ctx, t, state, tt.restart...)
			got, err := generation(ctx, c)
			if err != nil || got != tt.want {
				t.Errorf("after the restart: generation %d (%v), want %d", got, err, tt.want)
			}
			if tt.restart == nil {
				after, err := os.ReadFile(filepath.Join(state, "n1.json"))
				if err != nil || !bytes.Equal(before, after) {
					t.Errorf("startup file changed by the restart (%v):\nbefore %s\nafter %s", err, before, after)
				}
			}
			checkStartupFile(ctx, t, c, filepath.Join(state, "n1.json"))
		})
	}

	t.Run("a corrupt startup file", func(t *testing.T) {
		state := t.TempDir()
		file := filepath.Join(state, "n1.json")
		if err := os.WriteFile(file, []byte(`{"lhcnp:lhcnp": {"global": {"config": {"enabled": "maybe"}}}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		p := startSwitchProc(t, "--config", "../../examples/switch.yaml", "--listen", "127.0.0.1:0", "--insecure", "--state-dir", state)
		select {
		case <-p.done:
		case <-ctx.Done():
			t.Fatal("the switch started with a corrupt startup file")
		}
		msg := p.stderr.String()
		for _, want := range []string{"startup configuration " + file, "global/config/enabled", "--ignore-startup"} {
			if !strings.Contains(msg, want) {
				t.Errorf("stderr %q does not contain %q", msg, want)
			}
		}
		if p.cmd.ProcessState.ExitCode() == 0 {
			t.Error("exit status 0")
		}
	})
}

// TestDefaultStateDir: without state_dir, each scenario's switches keep
// their startup files apart (the n1 of switch.yaml is not the lab's n1).
func TestDefaultStateDir(t *testing.T) {
	for _, tt := range []struct {
		desc, scenario, want string
	}{
		{desc: "a scenario's name", scenario: "lab", want: "lhcnp-switch/lab"},
		{desc: "no name", scenario: "", want: "lhcnp-switch/scenario"},
		{desc: "a name that is a path", scenario: "../x", want: "lhcnp-switch/scenario"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if got := defaultStateDir(tt.scenario); got != tt.want {
				t.Errorf("defaultStateDir(%q) = %q, want %q", tt.scenario, got, tt.want)
			}
		})
	}
}
