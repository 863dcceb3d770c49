package netsim

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// nextHops returns the port indices s sends packets for dst to: the
// equal-cost group, or its one port, or nil without a route.
func nextHops(s *Switch, dst NodeID) []int32 {
	if int(dst) >= len(s.hop) {
		return nil
	}
	h := s.hops[s.hop[dst]]
	switch {
	case h.group != nil:
		return h.group
	case h.port != nil:
		return []int32{int32(h.port.index)}
	}
	return nil
}

// searchRoutes is ComputeRoutes' definition, searched from every node (as
// it once was computed): by switch and destination, the ports towards a
// neighbour one hop nearer (the lowest alone without ECMP), hosts other
// than the destination not forwarding; before, where a switch cannot
// reach the destination.
func searchRoutes(n *Network, before map[[2]NodeID][]int32) map[[2]NodeID][]int32 {
	want := map[[2]NodeID][]int32{}
	dist := make([]int, len(n.nodes))
	for _, dst := range n.nodes {
		for i := range dist {
			dist[i] = -1
		}
		dist[dst.ID()] = 0
		queue := []Node{dst}
		for len(queue) > 0 {
			x := queue[0]
			queue = queue[1:]
			if _, isHost := x.(*Host); isHost && x != dst {
				continue
			}
			for _, pt := range x.Ports() {
				if y := pt.Peer().node; dist[y.ID()] < 0 {
					dist[y.ID()] = dist[x.ID()] + 1
					queue = append(queue, y)
				}
			}
		}
		for _, s := range n.switches {
			k := [2]NodeID{s.id, dst.ID()}
			if dist[s.id] < 0 || s == dst {
				if before[k] != nil {
					want[k] = before[k]
				}
				continue
			}
			var g []int32
			for i, pt := range s.ports {
				if d := dist[pt.Peer().node.ID()]; d >= 0 && d == dist[s.id]-1 {
					g = append(g, int32(i))
					if !n.ecmpOn {
						break
					}
				}
			}
			want[k] = g
		}
	}
	return want
}

// routeTables returns every switch's next hops by switch and destination.
func routeTables(n *Network) map[[2]NodeID][]int32 {
	got := map[[2]NodeID][]int32{}
	for _, s := range n.switches {
		for _, dst := range n.nodes {
			if g := nextHops(s, dst.ID()); g != nil {
				got[[2]NodeID{s.id, dst.ID()}] = g
			}
		}
	}
	return got
}

// randomTopology: switches joined at random (parallel links and separate
// islands included), most hosts on a switch, some on another host, some
// on nothing, a few routes set by hand before ComputeRoutes.
func randomTopology(t *testing.T, seed uint64, ecmpOn bool) *Network {
	r := rand.New(rand.NewPCG(seed, 7))
	n := New(engine.New(engine.WithSeed(seed)))
	n.SetECMP(ecmpOn, seed)
	lc := LinkConfig{RateBitsPerSec: 100e9, Delay: engine.Microsecond}
	var sws []*Switch
	var hosts []*Host
	addr := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, byte(i / 250), byte(i%250 + 1)}) }
	// Nodes in a random order of kinds, so that ids interleave.
	for i := 0; i < 40; i++ {
		if r.IntN(3) == 0 {
			s, err := n.AddSwitch(fmt.Sprintf("s%d", i), addr(i), SwitchConfig{})
			if err != nil {
				t.Fatal(err)
			}
			sws = append(sws, s)
		} else {
			h, err := n.AddHost(fmt.Sprintf("h%d", i), addr(i), DefaultHostConfig())
			if err != nil {
				t.Fatal(err)
			}
			hosts = append(hosts, h)
		}
	}
	if len(sws) < 2 {
		t.Skip("too few switches")
	}
	for i := 0; i < 2*len(sws); i++ {
		a, b := sws[r.IntN(len(sws))], sws[r.IntN(len(sws))]
		if a == b {
			continue
		}
		if _, _, err := n.Connect(a, b, lc); err != nil {
			t.Fatal(err)
		}
	}
	for i, h := range hosts {
		if h.port != nil {
			continue
		}
		switch r.IntN(10) {
		case 0: // on nothing
		case 1: // on another host
			if j := r.IntN(len(hosts)); j != i && hosts[j].port == nil {
				if _, _, err := n.Connect(h, hosts[j], lc); err != nil {
					t.Fatal(err)
				}
			}
		default:
			if _, _, err := n.Connect(h, sws[r.IntN(len(sws))], lc); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 0; i < 10; i++ {
		s := sws[r.IntN(len(sws))]
		if len(s.ports) > 0 {
			if err := s.SetRoute(n.nodes[r.IntN(len(n.nodes))].ID(), r.IntN(len(s.ports))); err != nil {
				t.Fatal(err)
			}
		}
	}
	return n
}

// TestComputeRoutesAsSearchFromEveryNode: the tables ComputeRoutes fills,
// searching from the switches alone and sharing next hops, hold the
// routes a search from every node gives (ports and ECMP groups), on
// random topologies with and without ECMP; a switch that cannot reach a
// node keeps the route set before, and a second ComputeRoutes changes
// nothing.
func TestComputeRoutesAsSearchFromEveryNode(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		for _, ecmpOn := range []bool{false, true} {
			t.Run(fmt.Sprintf("seed=%d/ecmp=%v", seed, ecmpOn), func(t *testing.T) {
				n := randomTopology(t, seed, ecmpOn)
				before := routeTables(n)
				n.ComputeRoutes()
				want := searchRoutes(n, before)
				if diff := cmp.Diff(want, routeTables(n)); diff != "" {
					t.Fatalf("routes (-want, +got):\n%s", diff)
				}
				n.ComputeRoutes()
				if diff := cmp.Diff(want, routeTables(n)); diff != "" {
					t.Fatalf("routes after a second ComputeRoutes (-want, +got):\n%s", diff)
				}
			})
		}
	}
}

// TestRouteTablesCompact: a k = 16 fat-tree's route tables hold less than
// 4 KB per host (they took 28.6 KB with a port and an ECMP group per
// switch and node, what put k = 48 over 4 GB; BenchmarkRoutesFatTree
// measures every k).
func TestRouteTablesCompact(t *testing.T) {
	n := fatTree(t, 16)
	h0 := liveHeap()
	n.ComputeRoutes()
	perHost := float64(liveHeap()-h0) / float64(len(n.Hosts()))
	runtime.KeepAlive(n)
	if perHost >= 4096 {
		t.Errorf("route tables of a k=16 fat-tree: %.0f bytes per host, want < 4096", perHost)
	}
}
