package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lhcnp/lhcnp/gnmi/auth"
	"github.com/lhcnp/lhcnp/gnmi/store"
)

// TestSwitchStreamLimits: lhcnp switch limits each user's Subscribe
// streams (auth.DefaultMaxStreamsPerUser): one more is RESOURCE_EXHAUSTED, and
// another user still subscribes. Before, a user could open streams without
// end.
func TestSwitchStreamLimits(t *testing.T) {
	r := startSwitch(t, "--users", usersFileOf(t, "nms", "tuner"))
	c := gnmi.NewGNMIClient(dialGNMI(t, r.addr))
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel() // ends the streams
	for i := range auth.DefaultMaxStreamsPerUser {
		if err := openStream(ctx, c, "nms"); err != nil {
			t.Fatalf("stream %d of %d: %v", i+1, auth.DefaultMaxStreamsPerUser, err)
		}
	}
	if err := openStream(ctx, c, "nms"); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("stream %d of one user: %v, want RESOURCE_EXHAUSTED", auth.DefaultMaxStreamsPerUser+1, err)
	}
	if err := openStream(ctx, c, "tuner"); err != nil {
		t.Errorf("another user's stream: %v", err)
	}
}

// TestSwitchStreamLimitsPerSwitch: the stream limits are keys
// (max_streams_per_user, ...), and each switch of a process has its own:
// a user at its limit on n1 still subscribes to n2. It failed before: the
// limits were constants, and the switches of a process shared them, so a
// user's 32 streams on one switch shut it out of the others.
func TestSwitchStreamLimitsPerSwitch(t *testing.T) {
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel() // ends the streams, then the fabric
	var stdout, stderr lockedBuffer
	var runErr error
	done := make(chan struct{})
	args := withStateDir(t, []string{"--config", "../../examples/lab.yaml", "--listen", "127.0.0.1:0", "--insecure",
		"--users", usersFileOf(t, "nms"), "--max-streams-per-user", "2"})
	fctx, stop := context.WithCancel(context.Background())
	go func() { runErr = runSwitch(fctx, args, &stdout, &stderr); close(done) }()
	t.Cleanup(func() {
		stop()
		if <-done; runErr != nil {
			t.Errorf("lab fabric: %v", runErr)
		}
	})
	addrs := map[string]string{}
	poll(ctx, t, "the fabric prints its switches' addresses", func() bool {
		select {
		case <-done:
			t.Fatalf("the lab fabric returned before serving: %v", runErr)
		default:
		}
		for _, m := range switchAddrRE.FindAllStringSubmatch(stdout.String(), -1) {
			addrs[m[1]] = m[2]
		}
		return addrs["n1"] != "" && addrs["n2"] != ""
	})
	n1 := gnmi.NewGNMIClient(dialGNMI(t, addrs["n1"]))
	for i := range 2 {
		if err := openStream(ctx, n1, "nms"); err != nil {
			t.Fatalf("n1: stream %d of 2: %v", i+1, err)
		}
	}
	if err := openStream(ctx, n1, "nms"); status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "limit 2") {
		t.Errorf("n1: stream 3 of one user: %v, want RESOURCE_EXHAUSTED naming limit 2", err)
	}
	if err := openStream(ctx, gnmi.NewGNMIClient(dialGNMI(t, addrs["n2"])), "nms"); err != nil {
		t.Errorf("n2: the user's first stream, at the limit on n1: %v", err)
	}
}

// openStream opens a STREAM subscription as user (password NAME-secret)
// and waits for its sync_response; the stream stays open until ctx ends.
func openStream(ctx context.Context, c gnmi.GNMIClient, user string) error {
	sc, err := c.Subscribe(metadata.AppendToOutgoingContext(ctx, auth.MetadataUsername, user, auth.MetadataPassword, user+"-secret"))
	if err != nil {
		return err
	}
	if err := sc.Send(&gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Subscribe{Subscribe: &gnmi.SubscriptionList{
		Mode: gnmi.SubscriptionList_STREAM, Subscription: []*gnmi.Subscription{{Path: store.MustPath("/lhcnp/global/state/enabled"), Mode: gnmi.SubscriptionMode_ON_CHANGE}}}}}); err != nil && !errors.Is(err, io.EOF) {
		return err
	} // io.EOF: the server ended the stream; Recv has its status
	for {
		resp, err := sc.Recv()
		if err != nil || resp.GetSyncResponse() {
			return err
		}
	}
}

// usersFileOf writes a users file of read-only users, each with the
// password NAME-secret, and returns its path.
func usersFileOf(t *testing.T, names ...string) string {
	t.Helper()
	var lines []string
	for _, name := range names {
		l, err := auth.PasswdLine(name, auth.ReadOnly, name+"-secret")
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	users := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(users, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return users
}

// clearPasswordsWarning starts the warning of users over plaintext gNMI.
const clearPasswordsWarning = "passwords cross the network in clear text"

// TestSwitchUsersOverInsecureWarns: lhcnp switch with users and without
// TLS warns on stderr that the passwords cross the network in clear text,
// naming the address, unless it listens on loopback only; without users
// there are no passwords to warn of. It failed before: no warning.
func TestSwitchUsersOverInsecureWarns(t *testing.T) {
	users := usersFileOf(t, "nms")
	for _, tt := range []struct {
		desc   string
		listen string
		users  bool
		warn   bool
	}{
		{"users on every interface", "0.0.0.0:0", true, true},
		{"users on loopback", "127.0.0.1:0", true, false},
		{"no users on every interface", "0.0.0.0:0", false, false},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			args := []string{"--config", "../../examples/switch.yaml", "--listen", tt.listen, "--speed", "0.01", "--insecure"}
			if tt.users {
				args = append(args, "--users", users)
			}
			// The warning comes before the switch listens.
			got := startSwitchArgs(t, args...).stderr.String()
			want := "lhcnp switch: warning: --users over --insecure: " + clearPasswordsWarning + " (gNMI on " + tt.listen + ")"
			if strings.Contains(got, want) != tt.warn {
				t.Errorf("stderr:\n%s\nwant the warning %q: %v", got, want, tt.warn)
			}
		})
	}
}

// TestSwitchAnonymousOverInsecureWarns: lhcnp switch without users and
// without TLS on an address other than loopback warns on stderr, naming the
// address, that anyone who reaches it may Set the switch; on loopback it
// says only that every client is the anonymous user. It failed before: the
// same notice on every address.
func TestSwitchAnonymousOverInsecureWarns(t *testing.T) {
	testAnonymousWarning(t, func(t *testing.T, listen string) string {
		return startSwitchArgs(t, "--config", "../../examples/switch.yaml", "--listen", listen, "--speed", "0.01", "--insecure").stderr.String()
	}, "lhcnp switch: warning: no --users over --insecure: anyone who reaches gNMI on %s can Get, Subscribe and Set the switch as the anonymous read-write user")
}

// testAnonymousWarning checks the warning of gNMI without users and without
// TLS (format: its text, %s the address) in the stderr of a server started
// by stderrOn on an address: there on every interface, and on loopback no
// warning of the kind (the format up to its first ':').
func testAnonymousWarning(t *testing.T, stderrOn func(t *testing.T, listen string) string, format string) {
	t.Helper()
	for _, tt := range []struct {
		desc   string
		listen string
		warn   bool
	}{
		{"every interface", "0.0.0.0:0", true},
		{"loopback", "127.0.0.1:0", false},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			got := stderrOn(t, tt.listen)
			want := fmt.Sprintf(format, tt.listen)
			kind := format[:strings.Index(format, ": anyone")]
			if strings.Contains(got, want) != tt.warn || strings.Contains(got, kind) != tt.warn {
				t.Errorf("stderr:\n%s\nwant the warning %q: %v", got, want, tt.warn)
			}
		})
	}
}

// TestSwitchLoopbackAddr: a listen address is loopback only when its host
// is a loopback IP or a name whose every address is loopback (resolved by
// a fake resolver here: the test must not depend on the machine's). It
// failed before for names other than localhost (lo.example, a name of
// 127.0.0.1 and ::1, was warned of as if on the network).
func TestSwitchLoopbackAddr(t *testing.T) {
	names := map[string][]netip.Addr{
		"localhost":      {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")},
		"lo.example":     {netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("::1")},
		"mapped.example": {netip.MustParseAddr("::ffff:127.0.0.1")},
		"mixed.example":  {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("192.0.2.1")},
		"switch.example": {netip.MustParseAddr("192.0.2.1")},
		"empty.example":  {},
	}
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		ips, ok := names[host]
		if !ok {
			return nil, errors.New("no such host")
		}
		return ips, nil
	}
	for addr, want := range map[string]bool{
		"127.0.0.1:9339": true, "127.1.2.3:0": true, "[::1]:9339": true, "localhost:9339": true,
		"lo.example:9339": true, "mapped.example:9339": true,
		"0.0.0.0:9339": false, ":9339": false, "[::]:9339": false, "192.0.2.1:9339": false, "switch.example:9339": false,
		"mixed.example:9339": false, "empty.example:9339": false, "nx.example:9339": false, "bad": false,
	} {
		if got := loopbackAddr(context.Background(), lookup, addr); got != want {
			t.Errorf("loopbackAddr(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestSwitchWarnsOfGRPCBinaryLog: with GRPC_BINARY_LOG_FILTER set, lhcnp
// switch warns on stderr that grpc-go builds log entries of the RPCs'
// metadata, passwords included (the variable is read by grpc-go when the
// process starts, so setting it here logs nothing). It failed before: no
// word of it.
func TestSwitchWarnsOfGRPCBinaryLog(t *testing.T) {
	t.Setenv(grpcBinaryLogVar, "*")
	got := startSwitch(t).stderr.String()
	want := `lhcnp switch: warning: GRPC_BINARY_LOG_FILTER="*": grpc-go builds a log entry of every matching RPC, its metadata (gNMI usernames and passwords)`
	if !strings.Contains(got, want) {
		t.Errorf("stderr:\n%s\nwant %q", got, want)
	}
}

// TestLabWarnsOfGRPCBinaryLog: lhcnp lab, which runs the switches, the
// collector and the tuner, warns of GRPC_BINARY_LOG_FILTER as they do, before
// it reads its fabric file (here one that does not exist). It failed
// before: no word of it.
func TestLabWarnsOfGRPCBinaryLog(t *testing.T) {
	t.Setenv(grpcBinaryLogVar, "*")
	var stdout, stderr strings.Builder
	err := runLab(context.Background(), []string{"--fabric", filepath.Join(t.TempDir(), "none.yaml"),
		"--postgres", "postgres://127.0.0.1:1/none", "--state-dir", t.TempDir(), "--northbound", "127.0.0.1:0"}, &stdout, &stderr)
	if err == nil {
		t.Fatal("lhcnp lab started without its fabric file")
	}
	want := `lhcnp lab: warning: GRPC_BINARY_LOG_FILTER="*": grpc-go builds a log entry of every matching RPC`
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr:\n%s\nwant %q", stderr.String(), want)
	}
}

// TestNoGRPCBinaryLogSink: no package of lhcnp imports
// google.golang.org/grpc/binarylog, whose SetSink would make grpc-go write
// the binary log entries GRPC_BINARY_LOG_FILTER asks for, every RPC's
// metadata with the gNMI passwords, to a file. Without it they go nowhere,
// and warnGRPCBinaryLog says so; should a dependency bring it in, the
// variable must be refused at start instead.
func TestNoGRPCBinaryLogSink(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/lhcnp/lhcnp/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list found %d packages, too few", len(deps))
	}
	if slices.Contains(deps, "google.golang.org/grpc/binarylog") {
		t.Error("google.golang.org/grpc/binarylog is linked: GRPC_BINARY_LOG_FILTER would write the gNMI passwords out; refuse it at start (warnGRPCBinaryLog)")
	}
}
