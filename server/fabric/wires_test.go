package fabric

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/gnmi/service"
)

// udpPair returns two loopback UDP addresses free a moment ago.
func udpPair(t *testing.T) (string, string) {
	t.Helper()
	var addrs []string
	var conns []net.PacketConn
	for range 2 {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		addrs = append(addrs, c.LocalAddr().String())
	}
	for _, c := range conns {
		c.Close()
	}
	return addrs[0], addrs[1]
}

// halfLab builds one process of the lab, cut at the WAN: "n1" runs t1 and
// n1, "n2" runs n2.
func halfLab(t *testing.T, side string, speed float64, epoch time.Time, a, b string) *Fabric {
	t.Helper()
	cfg := Config{Scenario: loadLab(t), Speed: speed, Epoch: epoch, Keepalive: 20 * time.Millisecond,
		DeadAfter: 200 * time.Millisecond, StartWait: 30 * time.Second,
		TargetOptions: []service.Option{service.WithInsecure()}}
	if side == "n1" {
		cfg.Switches = []Switch{{Name: "t1", Listen: "127.0.0.1:0"}, {Name: "n1", Listen: "127.0.0.1:0"}}
		cfg.Wires = []Wire{{Link: "wan", Listen: a, Peer: b}}
	} else {
		cfg.Switches = []Switch{{Name: "n2", Listen: "127.0.0.1:0"}}
		cfg.Wires = []Wire{{Link: "wan", Listen: b, Peer: a}}
	}
	f, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func run(t *testing.T, f *Fabric) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// TestPeersShareTheEarliestClock: of two processes joined by a wire, the
// one started later adopts the epoch of the one started first, and frames
// cross both ways. (How many arrive late depends on the machine's load:
// the wires count them, no test asserts on it.)
func TestPeersShareTheEarliestClock(t *testing.T) {
	a, b := udpPair(t)
	early := time.Now().Add(-2 * time.Second)
	f1 := halfLab(t, "n1", 0.02, early, a, b)
	f2 := halfLab(t, "n2", 0.02, time.Time{}, a, b)
	run(t, f1)
	run(t, f2)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pollUntil(ctx, t, "frames cross the wire both ways", func() (bool, error) {
		s1, s2 := f1.Wires()[0].Stats(), f2.Wires()[0].Stats()
		return s1.RxFrames > 100 && s2.RxFrames > 100, nil
	})
	if got := f2.Sim().Epoch(); !got.Equal(early) {
		t.Errorf("the later process's epoch is %v, want the earlier one's %v", got, early)
	}
	if got := f1.Sim().Epoch(); !got.Equal(early) {
		t.Errorf("the earlier process's epoch moved to %v", got)
	}
}

// TestPeerAtAnotherSpeedIsRefused: processes at different speeds cannot
// share a clock: hellos cross, the link never comes up.
func TestPeerAtAnotherSpeedIsRefused(t *testing.T) {
	a, b := udpPair(t)
	f1 := halfLab(t, "n1", 0.02, time.Time{}, a, b)
	f2 := halfLab(t, "n2", 0.03, time.Time{}, a, b)
	run(t, f1)
	run(t, f2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pollUntil(ctx, t, "hellos cross", func() (bool, error) {
		return f1.Wires()[0].Stats().HellosRx > 5 && f2.Wires()[0].Stats().HellosRx > 5, nil
	})
	for _, f := range []*Fabric{f1, f2} {
		if st := f.Wires()[0].Stats(); st.Up || st.Ups != 0 || st.RxFrames != 0 {
			t.Errorf("link came up between different speeds: %+v", st)
		}
	}
}

// TestRestartedPeerDetected: a peer that goes away takes the link down
// (dead interval); a new one on the same address brings it up again.
func TestRestartedPeerDetected(t *testing.T) {
	a, b := udpPair(t)
	f1 := halfLab(t, "n1", 0.02, time.Time{}, a, b)
	run(t, f1)
	f2 := halfLab(t, "n2", 0.02, time.Time{}, a, b)
	stop2 := run(t, f2)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w := f1.Wires()[0]
	pollUntil(ctx, t, "data crosses the wire", func() (bool, error) {
		s1, s2 := w.Stats(), f2.Wires()[0].Stats()
		return w.Up() && s2.RxFrames > 100, fmt.Errorf("n1's wire %+v; n2's wire %+v", s1, s2)
	})
	stop2()
	pollUntil(ctx, t, "link down after the peer left", func() (bool, error) { return !w.Up(), nil })
	wan := f1.Network().Wired["wan"]
	var drops int64
	pollUntil(ctx, t, "frames lost to the down link are counted", func() (bool, error) {
		f1.Sim().Do(func() { drops = wan.Stats().DownDropPackets })
		return drops > 0, nil
	})
	f3 := halfLab(t, "n2", 0.02, time.Time{}, a, b)
	run(t, f3)
	pollUntil(ctx, t, "link up again with the new peer and traffic through it", func() (bool, error) {
		return w.Up() && f3.Wires()[0].Stats().RxFrames > 0, nil
	})
	// At least the restart's down and up; a machine too loaded to send
	// hellos within dead_after may add a flap of its own, never an up
	// without its down.
	t.Logf("n1's wire at the end: %+v", w.Stats())
	if st := w.Stats(); st.Downs < 1 || st.Ups != st.Downs+1 {
		t.Errorf("ups %d, downs %d; want one more up than downs, and at least one down", st.Ups, st.Downs)
	}
}
