package udpwire

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

func TestPeerSilent(t *testing.T) {
	const deadAfter, rounds = 200 * time.Millisecond, 10
	for _, tt := range []struct {
		desc   string
		quiet  time.Duration
		silent int
		want   bool
	}{
		{"heard recently", 40 * time.Millisecond, 2, false},
		{"awake and nothing heard for the dead interval", 210 * time.Millisecond, 10, true},
		{"awake and nothing heard for long", 5 * time.Second, 250, true},
		{"rounds enough, interval not yet (extra wake-ups)", 150 * time.Millisecond, 12, false},
		{"starved: one round after 300 ms", 300 * time.Millisecond, 1, false},
		{"starved a while, then awake a full interval", 900 * time.Millisecond, 10, true},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if got := peerSilent(tt.quiet, tt.silent, deadAfter, rounds); got != tt.want {
				t.Errorf("peerSilent(%v, %d rounds) = %v, want %v", tt.quiet, tt.silent, got, tt.want)
			}
		})
	}
}

// starveHelperEnv runs TestStarvedProcessKeepsItsLinks as the process that
// is stopped.
const starveHelperEnv = "LHCNP_UDPWIRE_STARVE_HELPER"

// TestStarvedProcessKeepsItsLinks: a process whose two wires join each
// other over loopback is stopped (SIGSTOP) for five dead intervals and
// continued, as a loaded machine starves a process: neither link goes down.
// The silence was the process's own, the hellos wait in its sockets; taking
// the links down lost the frames in flight (fabric's
// TestRestartedPeerDetected lost its CM exchange that way at load 7-9). A
// peer really gone is still found (TestRestartedPeerDetected in
// server/fabric, TestPeerSilent).
func TestStarvedProcessKeepsItsLinks(t *testing.T) {
	const keepalive, deadAfter = 10 * time.Millisecond, 100 * time.Millisecond
	if os.Getenv(starveHelperEnv) == "1" {
		starveHelper(t, keepalive, deadAfter)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", "^TestStarvedProcessKeepsItsLinks$")
	cmd.Env = append(os.Environ(), starveHelperEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stdout)
	var other strings.Builder // the helper's test output
	next := func(what string) string {
		t.Helper()
		for lines.Scan() {
			l := lines.Text()
			if strings.HasPrefix(l, "starve: ") {
				return strings.TrimPrefix(l, "starve: ")
			}
			fmt.Fprintln(&other, l)
		}
		t.Fatalf("the helper process ended before %s: %v\n%s%s", what, lines.Err(), &other, &stderr)
		return ""
	}
	if l := next("its links came up"); l != "up" {
		t.Fatalf("helper: %s", l)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * deadAfter) // the starvation itself: the fault injected, not a wait for an event
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(stdin, "report")
	var got [2]Stats
	if err := json.Unmarshal([]byte(next("its report")), &got); err != nil {
		t.Fatal(err)
	}
	for i, st := range got {
		if st.Downs != 0 || !st.Up {
			t.Errorf("wire %d after the stop: %d downs, up %v; want the link kept (%+v)", i+1, st.Downs, st.Up, st)
		}
	}
}

// starveHelper runs two wires joined to each other, says "up" once both
// links are, and on "report" (after being stopped and continued) waits
// until each wire has heard two dead intervals' worth of hellos more, then
// prints both wires' counters.
func starveHelper(t *testing.T, keepalive, deadAfter time.Duration) {
	s1, s2 := engine.New(), engine.New()
	h1, h2 := buildHalves(t, s1, "s1"), buildHalves(t, s2, "s2")
	a1, a2 := freePort(t), freePort(t)
	cfg := Config{Name: "wan", VNI: 7, Speed: 1, Keepalive: keepalive, DeadAfter: deadAfter}
	c1, c2 := cfg, cfg
	c1.Listen, c1.Peer = a1, a2.String()
	c2.Listen, c2.Peer = a2, a1.String()
	w1, err := New(h1.net, h1.wan[0], c1)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := New(h2.net, h2.wan[1], c2)
	if err != nil {
		t.Fatal(err)
	}
	epoch := time.Now()
	s1.SetEpoch(epoch)
	s2.SetEpoch(epoch)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, w := range []*Wire{w1, w2} {
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Run(ctx) }()
	}
	defer wg.Wait()
	defer cancel()
	poll := func(what string, cond func() bool) {
		tick := time.NewTicker(keepalive)
		defer tick.Stop()
		for !cond() {
			select {
			case <-ctx.Done():
				fmt.Printf("starve: %s: not within the deadline: %+v / %+v\n", what, w1.Stats(), w2.Stats())
				t.FailNow()
			case <-tick.C: // polling interval
			}
		}
	}
	poll("links up", func() bool { return w1.Up() && w2.Up() })
	fmt.Println("starve: up")
	if l, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil || l != "report\n" {
		t.Fatalf("helper: read %q, %v", l, err)
	}
	rx1, rx2 := w1.Stats().HellosRx, w2.Stats().HellosRx
	n := uint64(2 * deadAfter / keepalive)
	poll("hellos after the stop", func() bool { return w1.Stats().HellosRx >= rx1+n && w2.Stats().HellosRx >= rx2+n })
	b, err := json.Marshal([2]Stats{w1.Stats(), w2.Stats()})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("starve: %s\n", b)
}

// TestSilenceOnTheWiresClock: the keepalive rounds judge the peer's
// silence on the wire's clock (WithClock), not the wall clock: with the
// clock stepped one keepalive per round, the link goes down at the first
// round past the dead interval, and a clock that jumps five dead intervals
// in one round (a starved process) keeps it up. No socket, no sleep.
func TestSilenceOnTheWiresClock(t *testing.T) {
	const keepalive, deadAfter = 10 * time.Millisecond, 100 * time.Millisecond
	for _, tt := range []struct {
		desc     string
		steps    []time.Duration // the clock's step before each round
		wantDown int             // the round (1-based) the link goes down at; 0: never
	}{
		{"awake: one keepalive per round", slices.Repeat([]time.Duration{keepalive}, 12), 11},
		{"starved: five dead intervals in one round", []time.Duration{5 * deadAfter}, 0},
		{"starved, then awake a full interval", append([]time.Duration{5 * deadAfter}, slices.Repeat([]time.Duration{keepalive}, 10)...), 10},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
			h := buildHalves(t, engine.New(), "s1")
			w, err := New(h.net, h.wan[0], Config{Name: "wan", VNI: 7, Speed: 1, Keepalive: keepalive, DeadAfter: deadAfter,
				Listen: netip.MustParseAddrPort("127.0.0.1:1"), Peer: "127.0.0.1:2"}, WithClock(func() time.Time { return now }))
			if err != nil {
				t.Fatal(err)
			}
			w.setUp(true, "test")
			w.noteHeard()
			var r silence
			w.judgeSilence(&r) // the round that sees the datagram
			down := 0
			for i, d := range tt.steps {
				now = now.Add(d)
				w.judgeSilence(&r)
				if !w.Up() && down == 0 {
					down = i + 1
				}
			}
			if down != tt.wantDown {
				t.Errorf("link down at round %d, want %d (0: never); stats %+v", down, tt.wantDown, w.Stats())
			}
		})
	}
}
