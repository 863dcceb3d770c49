package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/gen/oc/ocpath"
	"github.com/lhcnp/lhcnp/gnmi/auth"
	"github.com/lhcnp/lhcnp/gnmi/store"
	"github.com/lhcnp/lhcnp/internal/oracle"
	"github.com/lhcnp/lhcnp/internal/pgtest"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/ygnmi/ygnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// addrWriter is the stdout of runSwitch: it hands the listen address of the
// first line to the test.
type addrWriter struct {
	mu   sync.Mutex
	buf  strings.Builder
	addr chan string
	sent bool
	re   *regexp.Regexp // the address line; default listenRE (the first switch)
}

var listenRE = regexp.MustCompile(`gNMI on (\S+),`)

func (w *addrWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	re := w.re
	if re == nil {
		re = listenRE
	}
	if m := re.FindStringSubmatch(w.buf.String()); m != nil && !w.sent {
		w.sent = true
		w.addr <- m[1]
	}
	return len(p), nil
}

type running struct {
	addr   string
	stop   func() error  // cancels the context and returns runSwitch's error
	out    *addrWriter   // its stdout
	stderr *lockedBuffer // its stderr
}

// startSwitch runs `lhcnp switch` on the example configuration, on a free
// port, at a speed low enough for a shared test machine.
func startSwitch(t *testing.T, extra ...string) *running {
	t.Helper()
	args := append([]string{"--config", "../../examples/switch.yaml", "--listen", "127.0.0.1:0", "--speed", "0.01"}, extra...)
	if !slices.Contains(extra, "--tls-cert") {
		args = append(args, "--insecure")
	}
	return startSwitchArgs(t, args...)
}

// startSwitchArgs runs `lhcnp switch` with args (and a state directory of
// the test's own unless args give one) and waits for its first switch to
// listen; it is stopped at the end of the test. Its stderr is kept.
func startSwitchArgs(t *testing.T, args ...string) *running {
	t.Helper()
	args = withStateDir(t, args)
	ctx, cancel := context.WithCancel(context.Background())
	out := &addrWriter{addr: make(chan string, 1)}
	stderr := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- runSwitch(ctx, args, out, stderr) }()
	var addr string
	select {
	case addr = <-out.addr:
	case err := <-done:
		cancel()
		t.Fatalf("runSwitch returned before listening: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("runSwitch did not start listening within 30s")
	}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(20 * time.Second):
			return fmt.Errorf("runSwitch did not return within 20s of cancel")
		}
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return &running{addr: addr, stop: stop, out: out, stderr: stderr}
}

func dialGNMI(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestSwitchServesAndStops(t *testing.T) {
	r := startSwitch(t)
	c := gnmi.NewGNMIClient(dialGNMI(t, r.addr))
	caps, err := c.Capabilities(testCtx(t), &gnmi.CapabilityRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(caps.GetSupportedModels()) == 0 || caps.GetGNMIVersion() == "" {
		t.Errorf("capabilities: %v", caps)
	}
	resp, err := c.Get(testCtx(t), &gnmi.GetRequest{
		Path:     []*gnmi.Path{{Elem: []*gnmi.PathElem{{Name: "lhcnp"}, {Name: "interfaces"}, {Name: "interface", Key: map[string]string{"name": "wan0"}}, {Name: "state"}, {Name: "effective-rtt-est"}}}},
		Encoding: gnmi.Encoding_PROTO,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetNotification()[0].GetUpdate()[0].GetVal().GetUintVal(); got != 10000 {
		t.Errorf("effective-rtt-est = %d, want 10000 (switch.json)", got)
	}
	if err := r.stop(); err != nil {
		t.Fatalf("runSwitch after cancel: %v", err)
	}
	if _, err := c.Capabilities(testCtx(t), &gnmi.CapabilityRequest{}, grpc.WaitForReady(false)); status.Code(err) != codes.Unavailable {
		t.Errorf("after stop: %v, want Unavailable", err)
	}
}

// TestSwitchTargetDefinedInterval: target_defined_interval
// (--target-defined-interval) is how often a TARGET_DEFINED subscription
// samples a counter: at 200 ms a counter comes again within seconds, where
// the default (10 s) would not. It failed before: no such key, every
// switch sampled at 10 s.
func TestSwitchTargetDefinedInterval(t *testing.T) {
	r := startSwitch(t, "--target-defined-interval", "200ms")
	c := gnmi.NewGNMIClient(dialGNMI(t, r.addr))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sc, err := c.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	counter := "/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=0]/state/counters/cnp-rate-reduce-sent"
	if err := sc.Send(&gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
		Mode: gnmi.SubscriptionList_STREAM, Encoding: gnmi.Encoding_PROTO,
		Subscription: []*gnmi.Subscription{{Path: store.MustPath(counter), Mode: gnmi.SubscriptionMode_TARGET_DEFINED}}}}}); err != nil {
		t.Fatal(err)
	}
	synced := false
	for start := time.Now(); ; {
		resp, err := sc.Recv()
		if err != nil {
			t.Fatalf("no sample of %s after the first within %v: %v", counter, time.Since(start).Round(time.Millisecond), err)
		}
		if resp.GetSyncResponse() {
			synced = true
			continue
		}
		if synced && len(resp.GetUpdate().GetUpdate()) > 0 {
			return
		}
	}
}

func TestSwitchUsage(t *testing.T) {
	for _, tc := range []struct {
		desc string
		args []string
	}{
		{"no config", []string{"--insecure"}},
		{"no transport", []string{"--config", "../../examples/switch.yaml"}},
		{"both transports", []string{"--config", "../../examples/switch.yaml", "--insecure", "--tls-cert", "c", "--tls-key", "k"}},
		{"argument", []string{"--config", "x", "--insecure", "extra"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			err := runSwitch(context.Background(), tc.args, io.Discard, io.Discard)
			if _, ok := err.(usageError); !ok {
				t.Errorf("runSwitch(%q) = %v, want a usage error", tc.args, err)
			}
		})
	}
}

// TestSwitchRefusalsStandAlone: a flag missing is a usage mistake, the
// usage printed before the message; a refused combination of flags, or a
// bad value of a flag or a variable, is the one message naming them (the
// 45 lines of usage buried it), exit status 2 still: a value as
// "ORIGIN: key: value: why" (badValue), a combination as "key (ORIGIN),
// key (ORIGIN): why" (keysError), whatever layer set each key.
func TestSwitchRefusalsStandAlone(t *testing.T) {
	const sw = "../../examples/switch.yaml"
	dir := t.TempDir()
	fab := fileWriter(t, dir)("fabric.yaml", "scenario: sc.yaml\nswitches: [{name: n1}]\n")
	for _, tt := range []struct {
		desc  string
		args  []string
		env   []string
		want  string
		usage bool
	}{
		{desc: "no transport", args: []string{"--config", sw}, want: "insecure (default), tls_cert (default), tls_key (default): choose --insecure or --tls-cert with --tls-key", usage: true},
		{desc: "no scenario", args: []string{"--switch", "n1", "--insecure"}, want: "--config FILE, or --scenario: the scenario file with the topology and traffic, is required", usage: true},
		{desc: "an argument", args: []string{"--config", sw, "--insecure", "extra"}, want: `unexpected argument "extra"`, usage: true},
		{desc: "TLS without users or client CA", args: []string{"--config", sw, "--tls-cert", "c.pem", "--tls-key", "k.pem"},
			want: "tls_cert (--tls-cert), users (default), client_ca (default): TLS without users or a client CA would let every client Set as the anonymous read-write user: give a users file (lhcnp passwd), a client CA, or both"},
		{desc: "both transports", args: []string{"--config", sw, "--insecure", "--tls-cert", "c.pem", "--tls-key", "k.pem"},
			want: "insecure (--insecure), tls_cert (--tls-cert), tls_key (--tls-key): choose --insecure or --tls-cert with --tls-key"},
		{desc: "both transports, one of a variable", args: []string{"--config", sw, "--tls-cert", "c.pem", "--tls-key", "k.pem"}, env: []string{"LHCNP_SWITCH_INSECURE=true"},
			want: "insecure (LHCNP_SWITCH_INSECURE), tls_cert (--tls-cert), tls_key (--tls-key): choose --insecure or --tls-cert with --tls-key"},
		{desc: "a certificate without its key", args: []string{"--config", sw, "--tls-cert", "c.pem", "--users", "u"},
			want: "insecure (default), tls_cert (--tls-cert), tls_key (default): choose --insecure or --tls-cert with --tls-key"},
		{desc: "client CA without TLS", args: []string{"--config", sw, "--insecure", "--client-ca", "ca.pem"}, want: "client_ca (--client-ca), insecure (--insecure): a client CA needs TLS"},
		{desc: "switch over a fabric", args: []string{"--config", fab, "--insecure", "--switch", "n1"},
			want: "switch (--switch), switches (" + fab + ":2:1): the file lists switches: choose among them with --switches"},
		{desc: "speed of a variable", args: []string{"--config", sw, "--insecure"}, env: []string{"LHCNP_SWITCH_SPEED=0"},
			want: "LHCNP_SWITCH_SPEED: speed: 0: must be positive"},
		{desc: "listen of a flag", args: []string{"--config", sw, "--insecure", "--listen", "x:99999"}, want: `--listen: listen: "x:99999": invalid port "99999"`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var stderr strings.Builder
			_, _, _, err := parseSwitchArgs(tt.args, func() []string { return tt.env }, &stderr)
			if err == nil || err.Error() != tt.want || exitStatus(err) != 2 {
				t.Fatalf("parseSwitchArgs(%q) = %v, want exit status 2 and\n%s", tt.args, err, tt.want)
			}
			if printed := strings.Contains(stderr.String(), "usage: lhcnp switch"); printed != tt.usage {
				t.Errorf("usage printed %v, want %v; stderr:\n%s", printed, tt.usage, stderr.String())
			}
		})
	}
}

// TestSwitchTLSNeedsUsersOrClientCA: TLS alone would let every client Set
// as the anonymous read-write user; lhcnp switch wants users, a client CA,
// or both, and says so.
func TestSwitchTLSNeedsUsersOrClientCA(t *testing.T) {
	tls := []string{"--config", "../../examples/switch.yaml", "--tls-cert", "c.pem", "--tls-key", "k.pem"}
	for _, tt := range []struct {
		desc    string
		args    []string
		wantErr string
	}{
		{"TLS alone", tls, "tls_cert (--tls-cert), users (default), client_ca (default): TLS without users or a client CA would let every client Set as the anonymous read-write user"},
		{"TLS and users", append(slices.Clone(tls), "--users", "u"), ""},
		{"mutual TLS", append(slices.Clone(tls), "--client-ca", "ca.pem"), ""},
		{"plaintext alone (labs)", []string{"--config", "../../examples/switch.yaml", "--insecure"}, ""},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			_, _, _, err := parseSwitchArgs(tt.args, func() []string { return nil }, io.Discard)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("parseSwitchArgs(%q) = %v, want %q", tt.args, err, tt.wantErr)
			}
		})
	}
}

func TestSwitchBadConfigFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "switch.yaml")
	if err := os.WriteFile(bad, []byte("switch: n1\nscenario: ../../examples/switch-scenario.yaml\nbogus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := runSwitch(context.Background(), []string{"--config", bad, "--insecure"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("runSwitch: %v, want an error naming the unknown key", err)
	}
}

// gnmiCLIDir is the directory gnmiCLI built the client in ("" before it
// ran): TestMain removes it.
var gnmiCLIDir string

// gnmiCLI builds the reference client once per test binary.
var gnmiCLI = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "lhcnp-gnmi-cli")
	if err != nil {
		return "", err
	}
	gnmiCLIDir = dir
	bin := filepath.Join(dir, "gnmi_cli")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/openconfig/gnmi/cmd/gnmi_cli")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build gnmi_cli: %v\n%s", err, out)
	}
	return bin, nil
})

// withStateDir adds a state directory of the test's own to lhcnp switch's
// args unless they give one: no test starts from another's startup
// configuration.
func withStateDir(t *testing.T, args []string) []string {
	if slices.Contains(args, "--state-dir") {
		return args
	}
	return append(slices.Clone(args), "--state-dir", t.TempDir())
}

func TestMain(m *testing.M) {
	// The test binary doubles as the lhcnp command, for tests that run
	// switches as separate processes (fabric_test.go).
	if os.Getenv("LHCNP_TEST_AS_LHCNP") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	// A switch started without --state-dir keeps its startup
	// configuration here, not in the package's directory. (os.Exit runs
	// no deferred call: the directories are removed before it.)
	var stateDir string
	if os.Getenv(switchEnvPrefix+"STATE_DIR") == "" {
		dir, err := os.MkdirTemp("", "lhcnp-switch-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Setenv(switchEnvPrefix+"STATE_DIR", dir)
		stateDir = dir
	}
	code := m.Run()
	// The private clusters' seeds (pgtest.Private).
	if err := pgtest.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
	}
	for _, dir := range []string{stateDir, gnmiCLIDir} {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}

func cli(t *testing.T, addr string, args ...string) string {
	t.Helper()
	bin, err := gnmiCLI()
	if err != nil {
		oracle.Missing(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-address", addr, "-insecure", "-timeout", "20s"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gnmi_cli %q: %v\n%s", args, err, out)
	}
	return string(out)
}

var spaces = regexp.MustCompile(`\s+`)

// wantAll checks that out holds every sub, whitespace runs counting as one
// space (prototext varies its spacing on purpose).
func wantAll(t *testing.T, what, out string, subs ...string) {
	t.Helper()
	flat := spaces.ReplaceAllString(out, " ")
	for _, s := range subs {
		if !strings.Contains(flat, spaces.ReplaceAllString(s, " ")) {
			t.Errorf("%s: output lacks %q:\n%s", what, s, out)
		}
	}
}

// TestInteropGNMICLI drives the switch with the reference client.
func TestInteropGNMICLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gnmi_cli")
	}
	r := startSwitch(t)
	q0 := `elem: <name: "lhcnp"> elem: <name: "interfaces"> elem: <name: "interface" key: <key: "name" value: "wan0">> elem: <name: "queues"> elem: <name: "queue" key: <key: "id" value: "0">>`

	t.Run("capabilities", func(t *testing.T) {
		out := cli(t, r.addr, "-capabilities")
		wantAll(t, "capabilities", out, `name: "lhcnp"`, `organization: "The lhcnp project"`, `version: "2026-12-07"`,
			"JSON_IETF", "PROTO", `gNMI_version: "0.10.0"`)
	})
	t.Run("get", func(t *testing.T) {
		out := cli(t, r.addr, "-get", "-proto",
			`prefix: <target: "n1"> path: <`+q0+` elem: <name: "config">> type: CONFIG encoding: JSON_IETF`)
		wantAll(t, "get", out, `target: "n1"`, `json_ietf_val`, `\"lhcnp:v-growth\":\"1250000000\"`)
	})
	t.Run("set", func(t *testing.T) {
		out := cli(t, r.addr, "-set", "-proto",
			`update: <path: <`+q0+` elem: <name: "config"> elem: <name: "v-growth">> val: <uint_val: 2500000000>>`)
		wantAll(t, "set", out, "op: UPDATE", "timestamp:")
		out = cli(t, r.addr, "-get", "-proto",
			`path: <`+q0+` elem: <name: "state"> elem: <name: "v-growth">> encoding: PROTO`)
		wantAll(t, "get after set", out, "uint_val: 2500000000")
	})
	t.Run("set error", func(t *testing.T) {
		bin, err := gnmiCLI()
		if err != nil {
			oracle.Missing(t, err)
		}
		cmd := exec.Command(bin, "-address", r.addr, "-insecure", "-set", "-proto",
			`update: <path: <`+q0+` elem: <name: "config"> elem: <name: "kmin-mode">> val: <string_val: "EXPLICIT">>`)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("gnmi_cli set accepted an EXPLICIT kmin-mode without kmin:\n%s", out)
		}
		wantAll(t, "set error", string(out), "InvalidArgument", "config/kmin", "must be set when kmin-mode is EXPLICIT")
	})
	t.Run("subscribe once", func(t *testing.T) {
		out := cli(t, r.addr, "-qt", "once", "-dt", "p", "-q", "lhcnp/interfaces/interface[name=wan0]/state/effective-rtt-est")
		wantAll(t, "subscribe once", out, "effective-rtt-est", `json_val: "10000"`, "sync_response: true")
	})
	t.Run("subscribe poll", func(t *testing.T) {
		// The group display redraws the tree after every poll (the proto
		// display of gnmi_cli shows the first response only).
		out := cliUntil(t, r.addr, 2, `"enabled":`,
			"-qt", "p", "-pi", "200ms", "-dt", "g", "-q", "lhcnp/global/state/enabled")
		wantAll(t, "subscribe poll", out, `"enabled": {Deprecated TypedValue_JsonVal true}`)
	})
	t.Run("subscribe stream", func(t *testing.T) {
		out := cliUntil(t, r.addr, 1, "sync_response: true", "-qt", "s", "-dt", "p",
			"-q", "lhcnp/interfaces/interface[name=wan0]/queues/queue[id=0]/state/effective-kmax")
		wantAll(t, "subscribe stream", out, "effective-kmax", `json_val: "12500000"`)
	})
}

// cliUntil runs gnmi_cli until its output holds marker n times, then stops
// it (polling clients never end on their own).
func cliUntil(t *testing.T, addr string, n int, marker string, args ...string) string {
	t.Helper()
	bin, err := gnmiCLI()
	if err != nil {
		oracle.Missing(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-address", addr, "-insecure"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	sc := bufio.NewScanner(stdout)
	seen := 0
	for sc.Scan() {
		sb.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), marker) {
			if seen++; seen == n {
				break
			}
		}
	}
	cancel()
	_ = cmd.Wait()
	if seen < n {
		t.Fatalf("gnmi_cli %q: %d of %d %q before exit:\n%s", args, seen, n, marker, sb.String())
	}
	return sb.String()
}

// TestInteropYgnmi drives the switch with the typed client over gen/.
func TestInteropYgnmi(t *testing.T) {
	c, ctx, q := ygnmiSetup(t, startSwitch(t).addr)

	// Get over Subscribe ONCE (ygnmi's default) and over Get. (With
	// uncompressed paths ygnmi marks every query as state, so WithUseGet
	// asks for type STATE even for config/ leaves, which the spec keeps out
	// of STATE: config leaves are read over Subscribe.)
	vg, err := ygnmi.Get(ctx, c, q.Config().VGrowth())
	if err != nil || vg != 1_250_000_000 {
		t.Errorf("Get config v-growth = %d, %v; want 1250000000", vg, err)
	}
	for _, opts := range [][]ygnmi.Option{nil, {ygnmi.WithUseGet()}} {
		kmax, err := ygnmi.Get(ctx, c, q.State().EffectiveKmax(), opts...)
		if err != nil || kmax != 12_500_000 {
			t.Errorf("Get effective-kmax %v = %d, %v; want 12500000 (10 Gb/s x 10 ms)", opts, kmax, err)
		}
	}

	// Replace and Update a leaf; the state follows.
	if _, err := ygnmi.Replace(ctx, c, q.Config().Alpha(), 0.5); err != nil {
		t.Fatal(err)
	}
	if kmax, err := ygnmi.Get(ctx, c, q.State().EffectiveKmax()); err != nil || kmax != 6_250_000 {
		t.Errorf("effective-kmax after alpha 0.5 = %d, %v; want 6250000", kmax, err)
	}
	if _, err := ygnmi.Update(ctx, c, q.Config().VGrowth(), uint64(3_000_000_000)); err != nil {
		t.Fatal(err)
	}
	if vg, err := ygnmi.Get(ctx, c, q.State().VGrowth()); err != nil || vg != 3_000_000_000 {
		t.Errorf("state v-growth = %d, %v; want 3000000000", vg, err)
	}

	// A whole container: Update creates queue 3 with an explicit K_max.
	cfg := &oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue_Config{
		Id: ygnmiPtr(uint8(3)), KmaxMode: oc.LhcnpTypes_KmaxMode_EXPLICIT, Kmax: ygnmiPtr(uint64(2_000_000)),
	}
	q3 := ocpath.Root().Lhcnp().Interfaces().Interface("wan0").Queues().Queue(3)
	if _, err := ygnmi.Update(ctx, c, q3.Config(), cfg); err != nil {
		t.Fatal(err)
	}
	if kmax, err := ygnmi.Get(ctx, c, q3.State().EffectiveKmax()); err != nil || kmax != 2_000_000 {
		t.Errorf("queue 3 effective-kmax = %d, %v; want 2000000", kmax, err)
	}

	// Delete the leaf: the default comes back, and Get says so (gNMI 3.3.4).
	if _, err := ygnmi.Delete(ctx, c, q.Config().Alpha()); err != nil {
		t.Fatal(err)
	}
	if v, err := ygnmi.Get(ctx, c, q.Config().Alpha()); err != nil || v != 1.0 {
		t.Errorf("config alpha after Delete = %v, %v; want its default 1.0", v, err)
	}
	if kmax, err := ygnmi.Get(ctx, c, q.State().EffectiveKmax()); err != nil || kmax != 12_500_000 {
		t.Errorf("effective-kmax after deleting alpha = %d, %v; want 12500000", kmax, err)
	}

	// A rule violation comes back as InvalidArgument naming the leaf.
	_, err = ygnmi.Replace(ctx, c, q.Config().KminMode(), oc.LhcnpTypes_KminMode_EXPLICIT)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "config/kmin") {
		t.Errorf("EXPLICIT kmin-mode without kmin: %v, want InvalidArgument naming config/kmin", err)
	}
}

func ygnmiPtr[T any](v T) *T { return &v }

func TestPasswd(t *testing.T) {
	var out strings.Builder
	err := runPasswd(context.Background(), []string{"--user", "ops", "--role", "rw"}, strings.NewReader("s3cret\n"), &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	u, err := auth.ParseUsers(strings.NewReader(out.String()))
	if err != nil || u.Len() != 1 || !strings.HasPrefix(out.String(), "ops:read-write:$2") {
		t.Errorf("passwd wrote %q (%v)", out.String(), err)
	}
	if err := runPasswd(context.Background(), nil, strings.NewReader("x\n"), io.Discard, io.Discard); err == nil {
		t.Error("passwd without --user succeeded")
	}
	// A name the users file cannot hold is a mistake of the command line
	// (exit status 2), said before the password is read: here there is
	// none to read. It was exit status 1, after the password.
	var stdin readCounter
	err = runPasswd(context.Background(), []string{"--user", "ops:x"}, &stdin, io.Discard, io.Discard)
	if want := `--user: "ops:x": must be non-empty without ':', '#' or spaces`; err == nil || err.Error() != want || exitStatus(err) != 2 || stdin.reads > 0 {
		t.Errorf("passwd --user ops:x: %v (exit status %d, %d reads of stdin), want exit status 2, no read and %q", err, exitStatus(err), stdin.reads, want)
	}
}

// TestPasswdLength: an empty password, or one longer than bcrypt reads,
// is bad input (exit status 2, one line naming the limit); it was exit
// status 1. 72 bytes is the longest taken.
func TestPasswdLength(t *testing.T) {
	for _, tt := range []struct {
		desc string
		pw   string
		code int
	}{
		{desc: "empty", pw: "", code: 2},
		{desc: "73 bytes", pw: strings.Repeat("p", 73), code: 2},
		{desc: "72 bytes", pw: strings.Repeat("p", 72), code: 0},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			err := runPasswd(context.Background(), []string{"--user", "ops"}, strings.NewReader(tt.pw+"\n"), io.Discard, io.Discard)
			code := 0
			if err != nil {
				code = exitStatus(err)
			}
			if code != tt.code {
				t.Fatalf("exit status %d (%v), want %d", code, err, tt.code)
			}
			if tt.code == 0 {
				return
			}
			want := fmt.Sprintf("password of %d bytes: want 1 to 72 (bcrypt reads 72 bytes, so the rest would not count)", len(tt.pw))
			if err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
		})
	}
}

// readCounter is an empty stdin that counts its reads.
type readCounter struct{ reads int }

func (r *readCounter) Read([]byte) (int, error) { r.reads++; return 0, io.EOF }
