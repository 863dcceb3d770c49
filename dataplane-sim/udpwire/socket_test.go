package udpwire

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// relay forwards datagrams from one UDP socket to an address and keeps a
// copy of each: a capture of what really crossed the loopback.
type relay struct {
	conn *net.UDPConn
	to   netip.AddrPort
	mu   sync.Mutex
	got  [][]byte
}

func newRelay(t *testing.T, to netip.AddrPort) *relay {
	t.Helper()
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{conn: c, to: to}
	go func() {
		buf := make([]byte, 65536)
		for {
			n, _, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			r.mu.Lock()
			r.got = append(r.got, append([]byte(nil), buf[:n]...))
			r.mu.Unlock()
			_, _ = c.WriteToUDPAddrPort(buf[:n], to)
		}
	}()
	t.Cleanup(func() { c.Close() })
	return r
}

func (r *relay) captured() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.got...)
}

func freePort(t testing.TB) netip.AddrPort {
	t.Helper()
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort()
}

// TestLoopbackCaptureReadsInTshark: two halves of a network on two
// engines paced to the wall clock with one epoch, joined by wires over
// real loopback sockets through a relay that keeps every datagram s1's
// side sends. The link comes up by the handshake, data crosses, and
// tshark dissects the captured UDP payloads (written to a pcap inside
// Ethernet, IPv4 and UDP headers) as Geneve keepalives and Geneve around
// RoCEv2 frames of the link's VNI. The wire's own capture (WithCapture)
// opens in tshark too.
func TestLoopbackCaptureReadsInTshark(t *testing.T) {
	tshark := needTshark(t)
	const speed = 0.01
	s1, s2 := engine.New(engine.WithSeed(3)), engine.New(engine.WithSeed(3))
	h1, h2 := buildHalves(t, s1, "s1"), buildHalves(t, s2, "s2")
	a1, a2 := freePort(t), freePort(t)
	rl := newRelay(t, a2)
	var frames bytes.Buffer
	var framesMu sync.Mutex
	w1, err := New(h1.net, h1.wan[0], Config{Name: "wan", Listen: a1, Peer: rl.conn.LocalAddr().String(), VNI: 77, Speed: speed,
		Keepalive: 20 * time.Millisecond, DeadAfter: time.Second}, WithCapture(lockedWriter{&framesMu, &frames}))
	if err != nil {
		t.Fatal(err)
	}
	w2, err := New(h2.net, h2.wan[1], Config{Name: "wan", Listen: a2, Peer: a1.String(), VNI: 77, Speed: speed,
		Keepalive: 20 * time.Millisecond, DeadAfter: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	epoch := time.Now()
	s1.SetEpoch(epoch)
	s2.SetEpoch(epoch)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	run := func(f func(context.Context) error) {
		wg.Add(1)
		go func() { defer wg.Done(); _ = f(ctx) }()
	}
	run(w1.Run)
	run(w2.Run)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	// As the fabric does: the engines start once the link is up, so
	// that the CM exchange does not go into a link still down.
	for !w1.Up() || !w2.Up() {
		select {
		case <-ctx.Done():
			t.Fatalf("the link did not come up: %+v / %+v", w1.Stats(), w2.Stats())
		case <-tick.C: // polling interval
		}
	}
	run(func(ctx context.Context) error { return s1.RunRealtime(ctx, speed, engine.Never) })
	run(func(ctx context.Context) error { return s2.RunRealtime(ctx, speed, engine.Never) })
	for w2.Stats().RxFrames < 50 {
		select {
		case <-ctx.Done():
			t.Fatalf("data did not cross: %+v / %+v", w1.Stats(), w2.Stats())
		case <-tick.C: // polling interval
		}
	}
	cancel()
	wg.Wait()
	if !w1.Stats().Up || !w2.Stats().Up {
		t.Errorf("links not up: %+v / %+v", w1.Stats(), w2.Stats())
	}

	var buf bytes.Buffer
	pw, err := wire.NewPcapWriter(&buf, true)
	if err != nil {
		t.Fatal(err)
	}
	captured := rl.captured()
	for i, d := range captured {
		eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{0, 0, 0, 0, 0, 0}, DstMAC: net.HardwareAddr{0, 0, 0, 0, 0, 0}, EthernetType: layers.EthernetTypeIPv4}
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: net.IPv4(127, 0, 0, 1), DstIP: net.IPv4(127, 0, 0, 1)}
		udp := &layers.UDP{SrcPort: layers.UDPPort(a1.Port()), DstPort: layers.UDPPort(rl.conn.LocalAddr().(*net.UDPAddr).Port)}
		if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
			t.Fatal(err)
		}
		sb := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(sb, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
			eth, ip, udp, gopacket.Payload(d)); err != nil {
			t.Fatal(err)
		}
		if err := pw.WritePacket(time.Unix(1, int64(i)*1000), sb.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	loop := filepath.Join(dir, "loopback.pcap")
	if err := os.WriteFile(loop, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(rl.conn.LocalAddr().(*net.UDPAddr).Port)
	out, err := exec.Command(tshark, "-r", loop, "-d", "udp.port=="+port+",geneve", "-T", "fields", "-E", "separator=|",
		"-e", "geneve.vni", "-e", "geneve.flags.oam", "-e", "infiniband.bth.opcode", "-e", "_ws.malformed").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(captured) {
		t.Fatalf("tshark read %d datagrams of %d", len(lines), len(captured))
	}
	var hellos, data int
	for i, l := range lines {
		f := strings.Split(l, "|")
		if vni, _ := strconv.ParseUint(f[0], 0, 32); vni != 77 || f[3] != "" {
			t.Fatalf("datagram %d: %q (want vni 77, not malformed)", i, l)
		}
		switch {
		case f[1] == "1" || f[1] == "True":
			hellos++
		case f[2] != "":
			data++
		default:
			t.Errorf("datagram %d is neither a keepalive nor a RoCEv2 frame: %q", i, l)
		}
	}
	if hellos == 0 || data == 0 {
		t.Errorf("%d keepalives and %d RoCEv2 frames in the capture; want both", hellos, data)
	}

	own := filepath.Join(dir, "frames.pcap")
	framesMu.Lock()
	err = os.WriteFile(own, frames.Bytes(), 0o644)
	framesMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(tshark, "-r", own, "-T", "fields", "-e", "infiniband.bth.opcode").Output()
	if err != nil {
		t.Fatalf("tshark on the wire's capture: %v", err)
	}
	if n := strings.Count(strings.TrimSpace(string(out)), "\n") + 1; n < data {
		t.Errorf("the wire's capture has %d frames, the socket carried %d", n, data)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestResolveAddr: a wire's address may be ip:port, :port or a host name
// (containers); a bad one is an error.
func TestResolveAddr(t *testing.T) {
	tests := []struct {
		desc, in, want string
	}{
		{"ip and port", "127.0.0.1:47001", "127.0.0.1:47001"},
		{"every interface", ":47001", "0.0.0.0:47001"},
		{"a host name", "localhost:47001", "127.0.0.1:47001"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			got, err := ResolveAddr(context.Background(), tt.in)
			if err != nil || got.String() != tt.want {
				t.Errorf("ResolveAddr(%q) = %v, %v; want %s", tt.in, got, err, tt.want)
			}
		})
	}
	for _, bad := range []string{"47001", "nosuchhost.invalid:47001", "127.0.0.1:nope"} {
		if got, err := ResolveAddr(context.Background(), bad); err == nil {
			t.Errorf("ResolveAddr(%q) = %v, want an error", bad, got)
		}
	}
}

// TestPeerNotFoundYet: a peer name that does not resolve leaves the wire
// running (link down), looking again, until ctx ends; a peer that is no
// host:port is an error at once.
func TestPeerNotFoundYet(t *testing.T) {
	sim := engine.New()
	h := buildHalves(t, sim, "s1")
	w, err := New(h.net, h.wan[0], Config{Name: "wan", Listen: freePort(t), Peer: "nosuchhost.invalid:47001", Speed: 1,
		Keepalive: 10 * time.Millisecond, DeadAfter: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := w.Run(ctx); err != nil {
		t.Errorf("Run = %v, want nil when ctx ends", err)
	}
	if w.Up() {
		t.Error("link up without a peer")
	}
	w2, err := New(h.net, h.wan[0], Config{Name: "wan", Listen: freePort(t), Peer: "47001", Speed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := w2.Run(context.Background()); err == nil || !strings.Contains(err.Error(), `peer "47001"`) {
		t.Errorf("Run = %v, want an error naming the peer", err)
	}
}
