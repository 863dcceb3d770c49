package netsim

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/internal/cputime"
)

// cutNet describes a network cut into partitions: switches joined in a
// tree, hosts on the switches, flows between hosts. The same description
// builds the same network for every thread count.
type cutNet struct {
	parts    int
	seed     uint64
	swPart   []int         // partition of each switch
	swParent []int         // tree: parent switch of switch i > 0
	swDelay  []engine.Time // delay of the link to the parent
	hosts    []int         // switch of each host
	flows    [][2]int      // src, dst host
	sizes    []int64
	starts   []engine.Time
	port     PortConfig
}

// build makes the network on a group of c.parts partitions.
func (c *cutNet) build(t testing.TB) (*engine.Group, *Network) {
	t.Helper()
	g := engine.NewGroup(c.parts, c.seed)
	n := NewPartitioned(g)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var sws []*Switch
	for i, p := range c.swPart {
		sw, err := n.AddSwitch(fmt.Sprintf("sw%d", i), netip.AddrFrom4([4]byte{10, 255, 0, byte(i + 1)}), SwitchConfig{Port: c.port})
		must(err)
		must(n.SetPartition(sw, p))
		sws = append(sws, sw)
	}
	for i := 1; i < len(sws); i++ {
		_, _, err := n.Connect(sws[c.swParent[i]], sws[i], LinkConfig{RateBitsPerSec: 40e9, Delay: c.swDelay[i]})
		must(err)
	}
	var hosts []*Host
	for i, s := range c.hosts {
		h, err := n.AddHost(fmt.Sprintf("h%d", i), netip.AddrFrom4([4]byte{10, 0, byte(s), byte(i + 1)}), DefaultHostConfig())
		must(err)
		must(n.SetPartition(h, c.swPart[s]))
		_, _, err = n.Connect(h, sws[s], LinkConfig{RateBitsPerSec: 100e9, Delay: engine.Microsecond})
		must(err)
		hosts = append(hosts, h)
	}
	n.ComputeRoutes()
	for i, f := range c.flows {
		_, err := n.AddFlow(FlowConfig{Src: hosts[f[0]], Dst: hosts[f[1]], Bytes: c.sizes[i], Start: c.starts[i], Prio: 3})
		must(err)
	}
	if c.parts > 1 {
		must(g.SetLookahead(n.Lookahead()))
	}
	return g, n
}

// run runs the network to until at threads and returns a digest of a
// snapshot every 20 µs (a global event) and at the end.
func (c *cutNet) run(t testing.TB, until engine.Time, threads int) (string, uint64) {
	g, n := c.build(t)
	h := fnv.New64a()
	g.EveryGlobal(0, 20*engine.Microsecond, func(now engine.Time) { fmt.Fprintf(h, "%+v\n", *n.Snapshot()) })
	g.Run(until, threads)
	fmt.Fprintf(h, "%+v live %d\n", *n.Snapshot(), n.LivePackets())
	return fmt.Sprintf("%x", h.Sum64()), g.Events()
}

// twoDC is two data centres, each a switch with four hosts, joined by a
// 100 µs WAN link: flows inside each DC and across, both ways, into
// ports that mark, so both partitions draw from their random sources.
func twoDC() *cutNet {
	c := &cutNet{parts: 2, seed: 3, swPart: []int{0, 1}, swParent: []int{0, 0},
		swDelay: []engine.Time{0, 100 * engine.Microsecond},
		hosts:   []int{0, 0, 0, 0, 1, 1, 1, 1},
		port:    dcqcnPort(20_000, 80_000, 4<<20)}
	for i := 0; i < 4; i++ {
		c.flows = append(c.flows, [2]int{i, 4 + i}, [2]int{4 + i, (i + 1) % 4}, [2]int{i, (i + 2) % 4})
	}
	for i := range c.flows {
		c.sizes = append(c.sizes, int64(200_000+50_000*i))
		c.starts = append(c.starts, engine.Time(i)*3*engine.Microsecond)
	}
	return c
}

func TestPartitionsSameForEveryThreadCount(t *testing.T) {
	c := twoDC()
	want, events := c.run(t, 3*engine.Millisecond, 1)
	if events < 5_000 { // 9 919
		t.Fatalf("only %d events", events)
	}
	for _, threads := range []int{2, 4} {
		if got, ev := c.run(t, 3*engine.Millisecond, threads); got != want || ev != events {
			t.Errorf("threads=%d: %s (%d events), threads=1: %s (%d events)", threads, got, ev, want, events)
		}
	}
}

// TestOnePartitionIsTheNetwork: a network on a group of one partition is
// the network on a lone Sim with the same seed, event for event.
func TestOnePartitionIsTheNetwork(t *testing.T) {
	c := twoDC()
	c.parts, c.swPart = 1, []int{0, 0}
	got, ev := c.run(t, 2*engine.Millisecond, 2)

	sim := engine.New(engine.WithSeed(c.seed))
	n := New(sim)
	var sws []*Switch
	for i := range c.swPart {
		sw, _ := n.AddSwitch(fmt.Sprintf("sw%d", i), netip.AddrFrom4([4]byte{10, 255, 0, byte(i + 1)}), SwitchConfig{Port: c.port})
		sws = append(sws, sw)
	}
	n.Connect(sws[0], sws[1], LinkConfig{RateBitsPerSec: 40e9, Delay: c.swDelay[1]})
	var hosts []*Host
	for i, s := range c.hosts {
		h, _ := n.AddHost(fmt.Sprintf("h%d", i), netip.AddrFrom4([4]byte{10, 0, byte(s), byte(i + 1)}), DefaultHostConfig())
		n.Connect(h, sws[s], LinkConfig{RateBitsPerSec: 100e9, Delay: engine.Microsecond})
		hosts = append(hosts, h)
	}
	n.ComputeRoutes()
	for i, f := range c.flows {
		n.AddFlow(FlowConfig{Src: hosts[f[0]], Dst: hosts[f[1]], Bytes: c.sizes[i], Start: c.starts[i], Prio: 3})
	}
	h := fnv.New64a()
	sim.Every(0, 20*engine.Microsecond, func(now engine.Time) { fmt.Fprintf(h, "%+v\n", *n.Snapshot()) })
	sim.Run(2 * engine.Millisecond)
	fmt.Fprintf(h, "%+v live %d\n", *n.Snapshot(), n.LivePackets())
	if want := fmt.Sprintf("%x", h.Sum64()); got != want || ev != sim.Events() {
		t.Errorf("one partition %s (%d events), lone Sim %s (%d events)", got, ev, want, sim.Events())
	}
}

// randomCut draws a small random network cut into 2–4 partitions.
func randomCut(r *rand.Rand) *cutNet {
	c := &cutNet{parts: 2 + r.IntN(3), seed: r.Uint64()}
	nsw := c.parts + r.IntN(4)
	for i := 0; i < nsw; i++ {
		p := i
		if i >= c.parts {
			p = r.IntN(c.parts)
		}
		c.swPart = append(c.swPart, p)
		parent := 0
		if i > 0 {
			parent = r.IntN(i)
		}
		c.swParent = append(c.swParent, parent)
		d := engine.Time(1+r.IntN(5)) * engine.Microsecond
		if i > 0 && c.swPart[parent] != p {
			d = engine.Time(2+r.IntN(60)) * engine.Microsecond // a cut: some lookahead
		}
		c.swDelay = append(c.swDelay, d)
	}
	nh := 2 + r.IntN(8)
	for i := 0; i < nh; i++ {
		c.hosts = append(c.hosts, r.IntN(nsw))
	}
	nf := 1 + r.IntN(10)
	for i := 0; i < nf; i++ {
		a := r.IntN(nh)
		b := (a + 1 + r.IntN(nh-1)) % nh
		c.flows = append(c.flows, [2]int{a, b})
		c.sizes = append(c.sizes, int64(10_000+r.IntN(400_000)))
		c.starts = append(c.starts, engine.Time(r.IntN(200))*engine.Microsecond)
	}
	c.port = dcqcnPort(int64(5_000+r.IntN(20_000)), int64(40_000+r.IntN(100_000)), int64(200_000+r.IntN(2<<20)))
	if r.IntN(2) == 0 {
		c.port.PFC = PFCConfig{Enabled: true, XOFFBytes: 60_000, XONBytes: 30_000}
	}
	return c
}

// TestPartitionsProperty: random small networks cut into partitions give
// byte-identical snapshots at 1, 2 and 4 threads.
func TestPartitionsProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 4))
	cases := 25
	if testing.Short() {
		cases = 5
	}
	for i := 0; i < cases; i++ {
		c := randomCut(r)
		want, events := c.run(t, engine.Millisecond, 1)
		for _, threads := range []int{2, 4} {
			if got, ev := c.run(t, engine.Millisecond, threads); got != want || ev != events {
				t.Fatalf("case %d (%d partitions, %d switches, %d hosts, %d flows): threads=%d %s (%d events), threads=1 %s (%d events)",
					i, c.parts, len(c.swPart), len(c.hosts), len(c.flows), threads, got, ev, want, events)
			}
		}
	}
}

func TestPartitionErrors(t *testing.T) {
	g := engine.NewGroup(2, 1)
	n := NewPartitioned(g)
	a, _ := n.AddSwitch("a", netip.Addr{}, SwitchConfig{})
	b, _ := n.AddSwitch("b", netip.Addr{}, SwitchConfig{})
	if err := n.SetPartition(b, 2); err == nil {
		t.Error("partition 2 of 2 accepted")
	}
	if err := n.SetPartition(b, 1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.Connect(a, b, LinkConfig{RateBitsPerSec: 1e9}); err != nil {
		t.Fatal(err)
	}
	if err := n.SetPartition(b, 0); err == nil {
		t.Error("partition changed after Connect")
	}
	if la := n.Lookahead(); la != 0 {
		t.Errorf("Lookahead = %v, want 0 (the zero-delay cut)", la)
	}
	if err := g.SetLookahead(n.Lookahead()); err == nil {
		t.Error("a zero-delay cut gave a lookahead")
	}
	if err := n.RetireFinished(engine.Millisecond); err == nil {
		t.Error("retirement accepted on a cut network")
	}
}

// BenchmarkPartitions runs two data centres of 8 hosts each, joined by a
// 100 µs WAN and cut there, at 1 and 2 threads in the same benchmark run:
// endless flows inside each DC and across, 5 ms simulated per op. It
// reports events per wall second (the speedup), per CPU second (what the
// barriers and the merge cost) and per window.
func BenchmarkPartitions(b *testing.B) {
	c := &cutNet{parts: 2, seed: 1, swPart: []int{0, 1}, swParent: []int{0, 0},
		swDelay: []engine.Time{0, 100 * engine.Microsecond}, port: dcqcnPort(100_000, 400_000, 32<<20)}
	for i := 0; i < 16; i++ {
		c.hosts = append(c.hosts, i/8)
	}
	for i := 0; i < 8; i++ {
		c.flows = append(c.flows, [2]int{i, (i + 1) % 8}, [2]int{8 + i, 8 + (i+1)%8})
		if i < 2 {
			c.flows = append(c.flows, [2]int{i, 8 + i}, [2]int{8 + i, i})
		}
	}
	for range c.flows {
		c.sizes = append(c.sizes, 0)
		c.starts = append(c.starts, 0)
	}
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			b.ReportAllocs()
			var events, windows uint64
			var wall, cpu time.Duration
			for i := 0; i < b.N; i++ {
				g, _ := c.build(b)
				w0, c0 := time.Now(), cputime.Process()
				g.Run(5*engine.Millisecond, threads)
				wall += time.Since(w0)
				cpu += cputime.Process() - c0
				events += g.Events()
				windows += g.Windows()
			}
			b.ReportMetric(float64(events)/wall.Seconds(), "events/s")
			if cpu > 0 {
				b.ReportMetric(float64(events)/cpu.Seconds(), "events/cpu-s")
			}
			b.ReportMetric(float64(events)/float64(windows), "events/window")
		})
	}
}

// TestPacketsStayHome: a packet that crosses a cut link arrives as a copy
// from the receiving partition's pool and the original goes back to the
// sender's, so every packet a pool holds is one it allocated (a packet
// never shares a cache line with one the other partition uses:
// docs/engine.md, "Side by side"). twoDC's flows cross the cut both ways;
// the pools are looked at after the run, and the packets in use and
// those on their way home add up.
func TestPacketsStayHome(t *testing.T) {
	for _, threads := range []int{1, 2} {
		t.Run(fmt.Sprintf("threads=%d", threads), func(t *testing.T) {
			g, n := twoDC().build(t)
			for _, pt := range n.parts {
				pt.pool.own = map[*Packet]bool{}
			}
			g.Run(2*engine.Millisecond, threads)
			var crossed int64
			for _, l := range n.links {
				if l.cut {
					crossed += l.from.Stats().TxPackets
				}
			}
			if crossed == 0 {
				t.Fatal("no packet crossed the cut")
			}
			for _, pt := range n.parts {
				pp := &pt.pool
				free := append([]*Packet(nil), pp.cur...)
				for _, c := range pp.full {
					free = append(free, c...)
				}
				stray := 0
				for _, p := range free {
					if !pp.own[p] {
						stray++
					}
				}
				if stray > 0 || len(free) == 0 {
					t.Errorf("partition %d: %d of the %d free packets in its pool were allocated elsewhere", pt.id, stray, len(free))
				}
				if pp.live() < 0 {
					t.Errorf("partition %d: %d live packets", pt.id, pp.live())
				}
			}
			if live := n.LivePackets(); live < 0 {
				t.Errorf("%d live packets", live)
			}
		})
	}
}
