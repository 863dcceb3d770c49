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

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
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
	p.cmd = exec.Command(os.Args[0], append([]string{"switch"}, withStateDir(t, args)...)...)
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

// counter reads one counter of a switch's queue 0 on iface (0 when
// unreachable).
func (r *readers) counter(ctx context.Context, addr, iface, leaf string) uint64 {
	r.t.Helper()
	return r.read(ctx, addr, iface, []*gnmi.PathElem{{Name: "queues"}, {Name: "queue", Key: map[string]string{"id": "0"}},
		{Name: "state"}, {Name: "counters"}, {Name: leaf}})
}

// ifCounter reads one counter of a switch's interface (0 when
// unreachable).
func (r *readers) ifCounter(ctx context.Context, addr, iface, leaf string) uint64 {
	r.t.Helper()
	return r.read(ctx, addr, iface, []*gnmi.PathElem{{Name: "state"}, {Name: "counters"}, {Name: leaf}})
}

// read reads the counter at under interface iface of a switch.
func (r *readers) read(ctx context.Context, addr, iface string, under []*gnmi.PathElem) uint64 {
	t := r.t
	t.Helper()
	c, ok := r.m[addr]
	if !ok {
		c = gnmi.NewGNMIClient(dialGNMI(t, addr))
		r.m[addr] = c
	}
	p := &gnmi.Path{Origin: "lhcnp", Elem: append([]*gnmi.PathElem{{Name: "lhcnp"}, {Name: "interfaces"},
		{Name: "interface", Key: map[string]string{"name": iface}}}, under...)}
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

// labFabricFile writes a fabric file of the lab with free wire ports and gNMI on
// any free port, at a speed a shared test machine keeps up with.
func labFabricFile(t *testing.T) string {
	t.Helper()
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
	return file
}

// TestProcessesJoinedByWires: the lab as separate processes joined by UDP
// wires. Traffic crosses the wires (n1's WAN queue and n2's queue to dest
// both count packets); when one process is killed, its neighbours see
// their links down, count the frames they lose in the interface's
// link-down-drops (dropped-packets counts buffer overflows) and keep
// running; restarted, it joins the running clock,
// the links come back up and the traffic resumes through it.
func TestProcessesJoinedByWires(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc   string
		groups []string // --switches of each process
		kill   int      // the process killed and restarted
		// links whose far end is the killed process, by the process that
		// holds the near end.
		neighbours map[int]string
	}{
		{"two processes, n2 killed", []string{"t1,n1", "n2"}, 1, map[int]string{0: "wan"}},
		{"three processes, n1 killed", []string{"t1", "n1", "n2"}, 1, map[int]string{0: "t1-n1", 2: "wan"}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			file := labFabricFile(t)
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			rd := &readers{t: t, m: map[string]gnmi.GNMIClient{}}
			procs := make([]*proc, len(tt.groups))
			addr := map[string]string{} // switch -> gNMI address
			for i, g := range tt.groups {
				procs[i] = startSwitchProc(t, "--config", file, "--switches", g, "--insecure")
			}
			for i, g := range tt.groups {
				for sw, a := range procs[i].addrs(ctx, t, strings.Count(g, ",")+1) {
					addr[sw] = a
				}
			}
			if strings.Contains(procs[0].stdout.String(), "wire t1-n1") && tt.groups[0] == "t1,n1" {
				t.Error("t1-n1 joins two switches of the same process: it must stay an engine link")
			}
			// Main's data, not only its CM REQ, reaches dest (the REQ and
			// the RTU are two packets; data follows the REP): main is
			// connected before the kill. A REQ whose REP dies with the
			// killed process is sent again only after the CM response
			// timeout (4.3 simulated s, minutes at this speed), and until
			// then only c1's flow, which never crosses the restarted
			// process, moved n2's queue to dest.
			poll(ctx, t, "traffic crosses the wires", func() bool {
				return rd.counter(ctx, addr["n1"], "wan", "packets") > 0 && rd.counter(ctx, addr["n2"], "to-dest", "packets") > 2
			})

			procs[tt.kill].kill()
			for i, link := range tt.neighbours {
				poll(ctx, t, tt.groups[i]+" sees link "+link+" down", func() bool {
					return strings.Contains(procs[i].stderr.String(), `msg="wire: link down" link=`+link)
				})
			}
			if n, ok := tt.neighbours[0]; ok && n == "wan" {
				lost := rd.ifCounter(ctx, addr["n1"], "wan", "link-down-drops")
				poll(ctx, t, "n1 counts the frames lost to the down link", func() bool {
					return rd.ifCounter(ctx, addr["n1"], "wan", "link-down-drops") > lost
				})
			}
			for i, p := range procs {
				select {
				case <-p.done:
					if i != tt.kill {
						t.Fatalf("process %s ended with its neighbour: %s", tt.groups[i], p.stderr.String())
					}
				default:
				}
			}

			// What the survivors counted while their links were down: the
			// traffic must move past it once the killed process is back.
			g := tt.groups[tt.kill]
			killed := map[string]bool{}
			for _, sw := range strings.Split(g, ",") {
				killed[sw] = true
			}
			base := map[string]uint64{}
			for _, c := range [][2]string{{"n1", "wan"}, {"n2", "to-dest"}} {
				if !killed[c[0]] {
					base[c[0]] = rd.counter(ctx, addr[c[0]], c[1], "packets")
				}
			}
			re := startSwitchProc(t, "--config", file, "--switches", g, "--insecure")
			for sw, a := range re.addrs(ctx, t, strings.Count(g, ",")+1) {
				addr[sw] = a
			}
			for i, link := range tt.neighbours {
				poll(ctx, t, tt.groups[i]+" sees link "+link+" up again", func() bool {
					return strings.Count(procs[i].stderr.String(), `msg="wire: link up" link=`+link) >= 2
				})
			}
			// The first hellos may arrive before its engine has an epoch
			// to compare; a later one is adopted.
			poll(ctx, t, "the restarted process joins the running clock", func() bool {
				return strings.Contains(re.stderr.String(), "adopting the peer's clock")
			})
			poll(ctx, t, "traffic resumes through the restarted process", func() bool {
				return rd.counter(ctx, addr["n1"], "wan", "packets") > base["n1"] && rd.counter(ctx, addr["n2"], "to-dest", "packets") > base["n2"]
			})
		})
	}
}

// TestFabricFileErrors: a bad fabric file, or a wire that cannot open, is
// an error naming the file, the entry or the address.
// TestSwitchCaptureCreatesDir: --capture names a directory that need not
// exist, as sim run's --out: the switch creates it and a pcap per wire in
// it. It failed before: "open DIR/t1-n1.pcap: no such file or directory".
func TestSwitchCaptureCreatesDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pcaps", "run1")
	r := startSwitchArgs(t, "--config", labFabricFile(t), "--switches", "t1", "--insecure", "--capture", dir)
	if err := r.stop(); err != nil {
		t.Fatalf("runSwitch after cancel: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "t1-n1.pcap")); err != nil {
		t.Error(err)
	}
}

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
		{"switch and switches", "switch: n1\nswitches: [{name: n2}]\nscenario: " + sc, nil, "fabric.yaml:1:9: switch: give one switch or a list (switches), not both"},
		{"listen outside the list", "listen: 127.0.0.1:0\nswitches: [{name: n2}]\nscenario: " + sc, nil,
			"fabric.yaml:1:9: listen: listen, config and interfaces belong to each entry of switches:"},
		{"no switch", "scenario: " + sc, nil, "fabric.yaml: switch: missing (the name of the scenario's switch to run, or a switches: list)"},
		{"unnamed switch", "switches: [{listen: 127.0.0.1:0}]\nscenario: " + sc, nil, "fabric.yaml:1:12: switches[0]: name missing"},
		{"twice", "switches: [{name: n1}, {name: n1}]\nscenario: " + sc, nil, "fabric.yaml:1:31: switches[1].name: switch \"n1\" listed twice"},
		{"wire without ends", "switches: [{name: n1}]\nwires: [{link: wan}]\nscenario: " + sc, nil, "fabric.yaml:2:9: wires[0]: need link, a and b"},
		{"no such link", "switches: [{name: n1, listen: 127.0.0.1:0}]\nwires: [{link: nope, a: 127.0.0.1:1, b: 127.0.0.1:2}]\nscenario: " + sc, nil, `fabric.yaml:2:16: wires[0].link: scenario lab has no link "nope"`},
		{"no such switch", "switches: [{name: n1}]\nscenario: " + sc, []string{"--switches", "n9"}, `no switch "n9"`},
		{"listen with two switches", "switches: [{name: n1}, {name: n2}]\nscenario: " + sc, []string{"--listen", "127.0.0.1:9"}, "exactly one switch"},
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
			err := runSwitch(ctx, withStateDir(t, append([]string{"--config", file, "--insecure"}, tt.args...)), &bytes.Buffer{}, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("runSwitch: %v, want an error containing %q", err, tt.want)
			}
			// A mistake in the file is a configuration error (exit
			// status 2), a port taken a failure of the work (1).
			if want := 2; tt.desc == "wire address taken" {
				if got := exitStatus(err); got != 1 {
					t.Errorf("exit status %d, want 1", got)
				}
			} else if got := exitStatus(err); got != want {
				t.Errorf("exit status %d, want %d (%v)", got, want, err)
			}
		})
	}
}

// FuzzSwitchFile: no switch or fabric file makes loading it, or choosing
// this process's wires from it, panic; every line of an error loading it
// starts with the file's name, as lhcnp switch and the lab report it.
func FuzzSwitchFile(f *testing.F) {
	for _, p := range []string{"../../examples/lab.yaml", "../../examples/switch.yaml"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "n1")
	}
	f.Add([]byte("switches: [{name: n1}, {name: n2}]\nwires: [{link: wan, a: x, b: y}]\nscenario: s.yaml\n"), "n2")
	// A wire of a link the scenario lacks: localWires' error.
	f.Add([]byte("switches: [{name: n1}]\nwires: [{link: nope, a: x:1, b: y:2}]\nscenario: s.yaml\n"), "n1")
	// Errors of every stage: the strict decoding, a check of resolve's
	// (a name with a line break, split into two lines), an address.
	f.Add([]byte("scenario: s.yaml\nswitches: [{name: n2, interfaces: {\"a.b\": x, c: {d: 1}}}]\n"), "n2")
	f.Add([]byte("scenario: s.yaml\nswitches: [{name: \"a\\nb\"}, {name: \"a\\nb\"}]\n"), "a")
	f.Add([]byte("switch: n1\nscenario: s.yaml\nspeed: .nan\nlisten: localhost\n"), "n1")
	sc, err := scenario.LoadFile("../../scenarios/lab.yaml")
	if err != nil {
		f.Fatal(err)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, only string) {
		path := filepath.Join(dir, "switch.yaml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		named := func(err error) {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, path) {
					t.Fatalf("error line without the file name: %q (of %q)", line, err)
				}
			}
		}
		sf, cc, err := loadSwitchFile(path)
		if err != nil {
			named(err)
			return
		}
		run := sf.Switches
		for _, s := range sf.Switches {
			if s.Name == only {
				run = []fileSwitch{s}
			}
		}
		if _, err := localWires(sc, sf, run, cc); err != nil {
			named(err)
		}
	})
}

// TestLocalWiresNamesKey: a wire of a link the scenario lacks is named at
// its key in the file, FILE:LINE:COL: wires[N].link, as the file's other
// errors are (lhcnp switch's check refuses it first; localWires names it
// for any other caller). It failed before: "wires: scenario lab has no
// link", neither the file nor the entry named.
func TestLocalWiresNamesKey(t *testing.T) {
	sc, err := scenario.LoadFile("../../scenarios/lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := fileWriter(t, t.TempDir())("fabric.yaml",
		"scenario: s.yaml\nswitches: [{name: n1}]\nwires:\n  - {link: wan, a: 127.0.0.1:1, b: 127.0.0.1:2}\n  - {link: nope, a: 127.0.0.1:3, b: 127.0.0.1:4}\n")
	f, cc, err := loadSwitchFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = localWires(sc, f, f.Switches, cc)
	if want := path + `:5:12: wires[1].link: scenario lab has no link "nope"`; err == nil || err.Error() != want {
		t.Errorf("localWires: %v, want %s", err, want)
	}
}

// TestFabricFilesChooseWires: the shipped fabric files give each process
// the wires of its switches: both ends named, the local one to listen on.
func TestFabricFilesChooseWires(t *testing.T) {
	sc, err := scenario.LoadFile("../../scenarios/lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		desc, file string
		run        []string
		want       []string // link listen peer
	}{
		{"loopback, one process", "lab.yaml", []string{"t1", "n1", "n2"}, nil},
		{"loopback, t1", "lab.yaml", []string{"t1"}, []string{"t1-n1 127.0.0.1:47001 127.0.0.1:47002"}},
		{"loopback, n1", "lab.yaml", []string{"n1"}, []string{"t1-n1 127.0.0.1:47002 127.0.0.1:47001", "wan 127.0.0.1:47003 127.0.0.1:47004"}},
		{"loopback, t1 and n1", "lab.yaml", []string{"t1", "n1"}, []string{"wan 127.0.0.1:47003 127.0.0.1:47004"}},
		{"containers, n2", "lab-containers.yaml", []string{"n2"}, []string{"wan n2:47002 n1:47002"}},
		{"containers, n1", "lab-containers.yaml", []string{"n1"}, []string{"t1-n1 n1:47001 t1:47001", "wan n1:47002 n2:47002"}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			f, cc, err := loadSwitchFile(filepath.Join("../../examples", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			var run []fileSwitch
			for _, s := range f.Switches {
				for _, name := range tt.run {
					if s.Name == name {
						run = append(run, s)
					}
				}
			}
			wires, err := localWires(sc, f, run, cc)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range wires {
				got = append(got, w.Link+" "+w.Listen+" "+w.Peer)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("wires %q, want %q", got, tt.want)
			}
		})
	}
}
