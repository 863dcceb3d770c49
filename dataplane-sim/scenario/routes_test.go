package scenario

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/ecmp"
)

// naiveRoutes is the loader's routing as it was before its tables were
// compact (a search from every destination over string maps), kept as
// the reference: every route and every flow's path, by pair and by flow.
// explicit are the file's routes (its topology.routes).
func naiveRoutes(sc *Scenario, explicit []Route) (map[[2]string][]string, map[string][]string) {
	host := map[string]bool{}
	addr := map[string]ecmp.Addr{}
	for _, h := range sc.Hosts {
		host[h.Name] = true
		addr[h.Name] = ecmp.AddrOf(h.IP)
	}
	for _, s := range sc.Switches {
		addr[s.Name] = ecmp.AddrOf(s.IP)
	}
	adj := map[string][]string{}
	for _, lk := range sc.Links {
		adj[lk.A] = append(adj[lk.A], lk.B)
		adj[lk.B] = append(adj[lk.B], lk.A)
	}
	table := func(dst string) map[string][]string {
		dist := map[string]int{dst: 0}
		for queue := []string{dst}; len(queue) > 0; queue = queue[1:] {
			x := queue[0]
			if x != dst && host[x] {
				continue
			}
			for _, y := range adj[x] {
				if _, seen := dist[y]; !seen {
					dist[y] = dist[x] + 1
					queue = append(queue, y)
				}
			}
		}
		next := map[string][]string{}
		for x, nbrs := range adj {
			if dx, ok := dist[x]; ok && x != dst {
				for _, y := range nbrs {
					if dy, ok := dist[y]; ok && dy == dx-1 {
						next[x] = append(next[x], y)
						if !sc.ECMP.Enabled {
							break
						}
					}
				}
			}
		}
		for _, r := range explicit {
			if r.Dst == dst {
				for i := 0; i+1 < len(r.Path); i++ {
					next[r.Path[i]] = []string{r.Path[i+1]}
				}
			}
		}
		return next
	}
	walk := func(src, dst string, pick func(at string, n int) int) []string {
		t := table(dst)
		p := []string{src}
		seen := map[string]bool{src: true}
		for at := src; at != dst; {
			nxs := t[at]
			if len(nxs) == 0 {
				return nil
			}
			nx := nxs[0]
			if len(nxs) > 1 && pick != nil {
				nx = nxs[pick(at, len(nxs))]
			}
			if seen[nx] {
				return nil
			}
			seen[nx] = true
			p = append(p, nx)
			at = nx
		}
		return p
	}
	routes := map[[2]string][]string{}
	for _, f := range sc.Flows {
		for _, pr := range [][2]string{{f.Src, f.Dst}, {f.Dst, f.Src}} {
			if p := walk(pr[0], pr[1], nil); p != nil {
				routes[pr] = p
			}
		}
	}
	for _, r := range explicit {
		routes[[2]string{r.Src, r.Dst}] = walk(r.Src, r.Dst, nil)
	}
	paths := map[string][]string{}
	for _, f := range sc.Flows {
		if !sc.ECMP.Enabled {
			paths[f.Name] = routes[[2]string{f.Src, f.Dst}]
			continue
		}
		t := ecmp.RoCE(addr[f.Src], addr[f.Dst], f.SrcQP, f.DstQP)
		paths[f.Name] = walk(f.Src, f.Dst, func(at string, n int) int {
			return ecmp.Pick(ecmp.Hash(uint64(sc.ECMP.Seed), addr[at], t), n)
		})
	}
	return routes, paths
}

// The routes and flow paths the loader computes by destination switch
// and node id are the ones a search from every destination gives: on
// generated fabrics with and without ECMP, and on a hand-written topology
// with two hosts linked to each other (their tables are their own),
// parallel equal-cost paths and explicit routes towards hosts that share
// a switch with hosts that have none.
func TestRoutesAsSearchFromEveryDestination(t *testing.T) {
	const handWritten = `duration: 1ms
sample_interval: 1ms
topology:
  ecmp: {enabled: %v}
  hosts: [{name: a}, {name: b}, {name: c}, {name: d}, {name: e}, {name: g}, {name: h}]
  switches: [{name: s1}, {name: s2}, {name: s3}, {name: s4}]
  links:
    - {a: a, b: s1, rate: 100G, delay: 1us}
    - {a: b, b: s1, rate: 100G, delay: 1us}
    - {a: s1, b: s2, rate: 100G, delay: 1us}
    - {a: s1, b: s3, rate: 100G, delay: 1us}
    - {a: s2, b: s4, rate: 100G, delay: 1us}
    - {a: s3, b: s4, rate: 100G, delay: 1us}
    - {a: c, b: s4, rate: 100G, delay: 1us}
    - {a: d, b: s4, rate: 100G, delay: 1us}
    - {a: e, b: s2, rate: 100G, delay: 1us}
    - {a: g, b: h, rate: 100G, delay: 1us}
  routes:
    - {src: a, dst: c, path: [a, s1, s3, s4, c]}
    - {src: b, dst: d, path: [b, s1, s3, s4, d]}
traffic:
  flows:
    - {name: ac, src: a, dst: c, src_qp: 5}
    - {name: bc, src: b, dst: c, src_qp: 6}
    - {name: ad, src: a, dst: d}
    - {name: bd, src: b, dst: d}
    - {name: ae, src: a, dst: e}
    - {name: ec, src: e, dst: c}
    - {name: cb, src: c, dst: b}
    - {name: gh, src: g, dst: h}
  generated:
    - {name: mix, senders: [a, b, c, e], receivers: [a, b, c, e], load: 0.5, cdf: [[1KB, 0], [10KB, 1]], seed: 3, stop: 100us}
`
	explicit := []Route{
		{Src: "a", Dst: "c", Path: []string{"a", "s1", "s3", "s4", "c"}},
		{Src: "b", Dst: "d", Path: []string{"b", "s1", "s3", "s4", "d"}},
	}
	cases := []struct {
		desc     string
		data     string
		explicit []Route
	}{
		{"hand-written, ECMP", fmt.Sprintf(handWritten, true), explicit},
		{"hand-written, single paths", fmt.Sprintf(handWritten, false), explicit},
		{"fat-tree k=8, ECMP", string(fatTreeFlows(8, 300, "")), nil},
		{"fat-tree k=8, single paths", string(fatTreeFlows(8, 300, "  ecmp: {enabled: false}\n")), nil},
	}
	for _, tt := range cases {
		t.Run(tt.desc, func(t *testing.T) {
			sc, err := Parse("r.yaml", []byte(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			wantRoutes, wantPaths := naiveRoutes(sc, tt.explicit)
			gotRoutes := map[[2]string][]string{}
			for _, r := range sc.Routes {
				gotRoutes[[2]string{r.Src, r.Dst}] = r.Path
			}
			gotPaths := map[string][]string{}
			for _, f := range sc.Flows {
				gotPaths[f.Name] = f.Path
			}
			if diff := cmp.Diff(wantRoutes, gotRoutes); diff != "" {
				t.Errorf("routes (-want, +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantPaths, gotPaths); diff != "" {
				t.Errorf("flow paths (-want, +got):\n%s", diff)
			}
			if len(sc.Flows) < 8 {
				t.Errorf("%d flows: the case routes too little", len(sc.Flows))
			}
		})
	}
}

// Loading a k = 16 fat-tree with 512 flows towards nearly as many hosts
// allocates a few megabytes: the tables are by destination switch and
// node id and one at a time (a string map of every node per destination,
// kept for the whole load, took 285 MB; BenchmarkLoadFatTree).
func TestLoadFatTreeRoutesMemory(t *testing.T) {
	data := fatTreeFlows(16, 512, "")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	sc, err := Parse("f.yaml", data)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 40 << 20
	if got := after.TotalAlloc - before.TotalAlloc; got > limit {
		t.Errorf("loading %d flows on %d hosts allocated %d MB, want at most %d", len(sc.Flows), len(sc.Hosts), got>>20, limit>>20)
	}
}
