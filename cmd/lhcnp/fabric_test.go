//go:build !lhcnpstub

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
)

// syncBuffer is a bytes.Buffer safe for a writing process and a reading test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is `lhcnp switch` running as a process of its own: the test binary
// re-executed as the command (TestMain).
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	done           chan struct{}
}

func startSwitchProc(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], append([]string{"switch"}, args...)...)
	p.cmd.Env = append(os.Environ(), "LHCNP_TEST_AS_LHCNP=1")
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.kill() })
	return p
}

// kill ends the process at once (SIGKILL: no clean shutdown, as a crash).
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

var switchAddrRE = regexp.MustCompile(`lhcnp switch (\S+): gNMI on (\S+),`)

// addrs waits for the process to print its gNMI addresses.
func (p *proc) addrs(ctx context.Context, t *testing.T, n int) map[string]string {
	t.Helper()
	var m map[string]string
	poll(ctx, t, "the switch process prints its addresses", func() bool {
		m = map[string]string{}
		for _, sm := range switchAddrRE.FindAllStringSubmatch(p.stdout.String(), -1) {
			m[sm[1]] = sm[2]
		}
		select {
		case <-p.done:
			t.Fatalf("the switch process ended: %s", p.stderr.String())
		default:
		}
		return len(m) == n
	})
	return m
}

func poll(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within the deadline", what)
		case <-tick.C: // polling interval
		}
	}
}

// freeUDP returns n loopback UDP addresses free a moment ago.
func freeUDP(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var conns []net.PacketConn
	for range n {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		out = append(out, c.LocalAddr().String())
	}
	for _, c := range conns {
		c.Close()
	}
	return out
}

// readers reads switch counters over gNMI, one client per address.
type readers struct {
	t *testing.T
	m map[string]gnmi.GNMIClient
}

// counter reads one queue counter of a switch (0 when unreachable).
func (r *readers) counter(ctx context.Context, addr, iface, leaf string) uint64 {
	t := r.t
	t.Helper()
	c, ok := r.m[addr]
	if !ok {
		c = gnmi.NewGNMIClient(dialGNMI(t, addr))
		r.m[addr] = c
	}
	p := &gnmi.Path{Origin: "lhcnp", Elem: []*gnmi.PathElem{{Name: "lhcnp"}, {Name: "interfaces"},
		{Name: "interface", Key: map[string]string{"name": iface}}, {Name: "queues"},
		{Name: "queue", Key: map[string]string{"id": "0"}}, {Name: "state"}, {Name: "counters"}, {Name: leaf}}}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := c.Get(cctx, &gnmi.GetRequest{Path: []*gnmi.Path{p}, Type: gnmi.GetRequest_STATE, Encoding: gnmi.Encoding_JSON_IETF})
	if err != nil {
		return 0
	}
	for _, n := range resp.GetNotification() {
		for _, u := range n.GetUpdate() {
			var s string
			if json.Unmarshal(u.GetVal().GetJsonIetfVal(), &s) == nil {
				v, _ := strconv.ParseUint(s, 10, 64)
				return v
			}
		}
	}
	return 0
}

// TestTwoProcessesJoinedByWires: the lab as two processes (t1 and n1; n2)
// joined by a UDP wire on the WAN link. Traffic crosses the wire (n1's
// WAN queue and n2's queue to dest both count packets); when n2's process
// is killed, n1 sees the link down and counts the frames it loses; n2
// restarted joins the running clock, the link comes back up and the
// traffic resumes.
func TestTwoProcessesJoinedByWires(t *testing.T) {
	ports := freeUDP(t, 4)
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	cfg := fmt.Sprintf(`scenario: %s
speed: 0.02
publish_interval: 50ms
keepalive: 50ms
dead_after: 400ms
switches:
  - {name: t1, listen: 127.0.0.1:0}
  - {name: n1, listen: 127.0.0.1:0, config: %s}
  - {name: n2, listen: 127.0.0.1:0, config: %s, interfaces: {to-dest: n2-dest}}
wires:
  - {link: t1-n1, a: %s, b: %s}
  - {link: wan, a: %s, b: %s}
`, abs("../../scenarios/lab.yaml"), abs("../../examples/lab-n1.json"), abs("../../examples/lab-n2.json"),
		ports[0], ports[1], ports[2], ports[3])
	file := filepath.Join(t.TempDir(), "fabric.yaml")
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	rd := &readers{t: t, m: map[string]gnmi.GNMIClient{}}
	p1 := startSwitchProc(t, "--config", file, "--switches", "t1,n1", "--insecure")
	p2 := startSwitchProc(t, "--config", file, "--switches", "n2", "--insecure")
	a1, a2 := p1.addrs(ctx, t, 2), p2.addrs(ctx, t, 1)
	if strings.Contains(p1.stdout.String(), "wire t1-n1") {
		t.Error("t1-n1 joins two switches of the same process: it must stay an engine link")
	}
	poll(ctx, t, "traffic crosses the wire", func() bool {
		return rd.counter(ctx, a1["n1"], "wan", "packets") > 0 && rd.counter(ctx, a2["n2"], "to-dest", "packets") > 0
	})

	p2.kill()
	poll(ctx, t, "n1 sees the WAN link down", func() bool {
		return strings.Contains(p1.stderr.String(), `msg="wire: link down" link=wan`)
	})
	drops := rd.counter(ctx, a1["n1"], "wan", "dropped-packets")
	poll(ctx, t, "n1 counts the frames lost to the down link", func() bool {
		return rd.counter(ctx, a1["n1"], "wan", "dropped-packets") > drops
	})

	p3 := startSwitchProc(t, "--config", file, "--switches", "n2", "--insecure")
	a3 := p3.addrs(ctx, t, 1)
	poll(ctx, t, "the link comes back up", func() bool {
		return strings.Count(p1.stderr.String(), `msg="wire: link up" link=wan`) >= 2
	})
	if !strings.Contains(p3.stderr.String(), "adopting the peer's clock") {
		t.Errorf("the restarted process did not join the running clock:\n%s", p3.stderr.String())
	}
	poll(ctx, t, "traffic resumes through the restarted n2", func() bool {
		return rd.counter(ctx, a3["n2"], "to-dest", "packets") > 0
	})
}

// TestFabricFileErrors: a bad fabric file, or a wire that cannot open, is
// an error naming the file, the entry or the address.
func TestFabricFileErrors(t *testing.T) {
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	sc := abs("../../scenarios/lab.yaml")
	taken, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	tests := []struct {
		desc, file string
		args       []string
		want       string
	}{
		{"switch and switches", "switch: n1\nswitches: [{name: n2}]\nscenario: " + sc, nil, "not both"},
		{"listen outside the list", "listen: 127.0.0.1:0\nswitches: [{name: n2}]\nscenario: " + sc, nil, "belong to each entry"},
		{"unnamed switch", "switches: [{listen: 127.0.0.1:0}]\nscenario: " + sc, nil, "switches[0]: name missing"},
		{"twice", "switches: [{name: n1}, {name: n1}]\nscenario: " + sc, nil, "listed twice"},
		{"wire without ends", "switches: [{name: n1}]\nwires: [{link: wan}]\nscenario: " + sc, nil, "wires[0]: need link, a and b"},
		{"no such link", "switches: [{name: n1, listen: 127.0.0.1:0}]\nwires: [{link: nope, a: 127.0.0.1:1, b: 127.0.0.1:2}]\nscenario: " + sc, nil, `no link "nope"`},
		{"no such switch", "switches: [{name: n1}]\nscenario: " + sc, []string{"--switches", "n9"}, `no switch "n9"`},
		{"listen with two switches", "switches: [{name: n1}, {name: n2}]\nscenario: " + sc, []string{"--listen", "127.0.0.1:0"}, "exactly one switch"},
		{"wire address taken", "switches: [{name: n1, listen: 127.0.0.1:0}, {name: n2, listen: 127.0.0.1:0}]\nwires: [{link: wan, a: " +
			taken.LocalAddr().String() + ", b: 127.0.0.1:9}]\nscenario: " + sc, []string{"--switches", "n1"}, "address already in use"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "fabric.yaml")
			if err := os.WriteFile(file, []byte(tt.file), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := runSwitch(ctx, append([]string{"--config", file, "--insecure"}, tt.args...), &bytes.Buffer{}, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("runSwitch: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
