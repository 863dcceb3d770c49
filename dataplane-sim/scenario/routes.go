package scenario

// Route tables at load time. The loader walks every flow's path (and the
// reverse one) through tables computed as the network model computes its
// own (netsim.Network.ComputeRoutes), by integer node id. A host with one
// link to a switch forwards nothing, so its table is its switch's with one
// entry more: the flows towards the hosts of one switch share a table, and
// a table is dropped once the paths towards its destinations are walked.
// A k = 48 fat-tree has 30 529 nodes; the string maps kept per destination
// before took megabytes each (docs/scaling.md, "The simulator: route tables
// of a large fabric").

import "strings"

// graph is the topology by node id (in order of first appearance in the
// links): node x's neighbours are nbr[off[x]:off[x+1]], in port order
// (file order of links, then the generated ones), one entry per link.
type graph struct {
	ids   map[string]int32
	names []string
	host  []bool
	off   []int32
	nbr   []int32
	// dist and queue are routesTo's scratch.
	dist, queue []int32
}

// graph builds the loader's graph once.
func (l *loader) graph() *graph {
	if l.g != nil {
		return l.g
	}
	g := &graph{ids: map[string]int32{}}
	for _, lk := range l.sc.Links {
		for _, name := range []string{lk.A, lk.B} {
			if _, ok := g.ids[name]; !ok {
				g.ids[name] = int32(len(g.names))
				g.names = append(g.names, name)
				g.host = append(g.host, l.nodes[name].kind == kindHost)
			}
		}
	}
	n := len(g.names)
	g.off = make([]int32, n+1)
	for _, lk := range l.sc.Links {
		g.off[g.ids[lk.A]+1]++
		g.off[g.ids[lk.B]+1]++
	}
	for x := range n {
		g.off[x+1] += g.off[x]
	}
	g.nbr = make([]int32, g.off[n])
	fill := append([]int32(nil), g.off[:n]...)
	for _, lk := range l.sc.Links {
		a, b := g.ids[lk.A], g.ids[lk.B]
		g.nbr[fill[a]] = b
		fill[a]++
		g.nbr[fill[b]] = a
		fill[b]++
	}
	l.g = g
	return g
}

func (g *graph) neighbours(x int32) []int32 { return g.nbr[g.off[x]:g.off[x+1]] }

// tableRoot is the node whose search gives dst's table: the switch of a
// host with a single link to it, else dst itself.
func (g *graph) tableRoot(dst int32) int32 {
	if nb := g.neighbours(dst); g.host[dst] && len(nb) == 1 && !g.host[nb[0]] {
		return nb[0]
	}
	return dst
}

// routes is how the switches forward towards one root node: node x's
// next hops are hops[off[x]:off[x+1]], the equal-cost ones in port order
// (one unless ECMP is on). Fewest hops, hosts other than the root do not
// forward, and without ECMP ties go to the lowest port.
type routes struct {
	off  []int32
	hops []int32
}

// routesTo computes the routes towards root into r, reusing its storage
// and the graph's scratch: a load computes one root's routes after the
// other.
func (g *graph) routesTo(root int32, ecmp bool, r *routes) {
	n := len(g.names)
	if g.dist == nil {
		g.dist = make([]int32, n)
		g.queue = make([]int32, 0, n)
	}
	dist := g.dist
	for x := range dist {
		dist[x] = -1
	}
	dist[root] = 0
	queue := append(g.queue[:0], root)
	for head := 0; head < len(queue); head++ {
		x := queue[head]
		if x != root && g.host[x] {
			continue
		}
		for _, y := range g.neighbours(x) {
			if dist[y] < 0 {
				dist[y] = dist[x] + 1
				queue = append(queue, y)
			}
		}
	}
	if len(r.off) != n+1 {
		r.off = make([]int32, n+1)
	}
	r.hops = r.hops[:0]
	for x := range int32(n) {
		r.off[x] = int32(len(r.hops))
		if dist[x] <= 0 {
			continue // unreachable, or the root
		}
		for _, y := range g.neighbours(x) {
			if dist[y] == dist[x]-1 {
				r.hops = append(r.hops, y)
				if !ecmp {
					break
				}
			}
		}
	}
	r.off[n] = int32(len(r.hops))
}

// table is the routes towards one destination: its root's, with the
// entries of its own laid over them (a host's switch forwards to it, the
// host itself nowhere; explicit routes set the next hop at every switch
// on their path).
type table struct {
	base *routes
	over map[int32][]int32
}

func (t *table) next(x int32) []int32 {
	if h, ok := t.over[x]; ok {
		return h
	}
	return t.base.hops[t.base.off[x]:t.base.off[x+1]]
}

// tableTo is the table towards dst given base, the routes towards
// g.tableRoot(dst).
func (l *loader) tableTo(dst int32, base *routes) *table {
	g := l.graph()
	t := &table{base: base}
	set := func(x int32, hops []int32) {
		if t.over == nil {
			t.over = map[int32][]int32{}
		}
		t.over[x] = hops
	}
	if root := g.tableRoot(dst); root != dst {
		var hops []int32
		for _, y := range g.neighbours(root) {
			if y == dst {
				hops = append(hops, y)
				if !l.sc.ECMP.Enabled {
					break
				}
			}
		}
		set(root, hops)
		set(dst, nil)
	}
	name := g.names[dst]
	for _, r := range l.explicit {
		if r.Dst != name {
			continue
		}
		for i := 0; i+1 < len(r.Path); i++ {
			set(g.ids[r.Path[i]], []int32{g.ids[r.Path[i+1]]})
		}
	}
	return t
}

// walk follows t from src to dst; nil when there is no way or a loop (or
// no table: dst has no link).
// pick chooses among n > 1 equal-cost next hops at a node (nil: the
// first, the lowest port).
func (g *graph) walk(t *table, src, dst string, pick func(at string, n int) int) []string {
	if src == dst {
		return []string{src}
	}
	s, ok := g.ids[src]
	if !ok || t == nil {
		return nil
	}
	d := g.ids[dst]
	p := []string{src}
	seen := map[int32]bool{s: true}
	for at := s; at != d; {
		nxs := t.next(at)
		if len(nxs) == 0 {
			return nil
		}
		nx := nxs[0]
		if len(nxs) > 1 && pick != nil {
			nx = nxs[pick(g.names[at], len(nxs))]
		}
		if seen[nx] {
			return nil
		}
		seen[nx] = true
		p = append(p, g.names[nx])
		at = nx
	}
	return p
}

// routes fills sc.Routes, both directions of every flow (acknowledgements
// and CNPs travel back) then the explicit routes no flow uses, and each
// flow's own path. The pairs are walked grouped by table root, each
// root's routes computed once and dropped once its destinations are done;
// sc.Routes and the errors then follow the pairs' order.
func (l *loader) routes() {
	sc := l.sc
	g := l.graph()
	type pair struct {
		src, dst string
		at       qpRef
		// fwd is, for the reverse of a flow's pair, the forward pair:
		// a reverse path is reported missing only if the forward one
		// exists. -1 for the others.
		fwd  int
		path []string
	}
	var pairs []pair
	index := map[[2]string]int{}
	add := func(src, dst string, at qpRef, fwd int) {
		key := [2]string{src, dst}
		if _, ok := index[key]; ok {
			return
		}
		index[key] = len(pairs)
		pairs = append(pairs, pair{src: src, dst: dst, at: at, fwd: fwd})
	}
	for i, f := range sc.Flows {
		add(f.Src, f.Dst, l.flowPos[i], -1)
		add(f.Dst, f.Src, l.flowPos[i], index[[2]string{f.Src, f.Dst}])
	}
	for _, r := range l.explicit {
		add(r.Src, r.Dst, qpRef{}, -1)
	}

	// What to walk towards each destination, and the destinations of each
	// root in order of first appearance.
	type work struct{ pairs, flows []int }
	todo := map[int32]*work{}
	byRoot := map[int32][]int32{}
	var roots []int32
	need := func(dst string) *work {
		x, ok := g.ids[dst]
		if !ok {
			return nil // no link: no table
		}
		w := todo[x]
		if w == nil {
			w = &work{}
			todo[x] = w
			root := g.tableRoot(x)
			if _, ok := byRoot[root]; !ok {
				roots = append(roots, root)
			}
			byRoot[root] = append(byRoot[root], x)
		}
		return w
	}
	for i := range pairs {
		if w := need(pairs[i].dst); w != nil {
			w.pairs = append(w.pairs, i)
		} else {
			pairs[i].path = g.walk(nil, pairs[i].src, pairs[i].dst, nil)
		}
	}
	// With ECMP each flow has its own path: the one its five-tuple hashes
	// onto at every switch with a choice. Flows on the same path share
	// one slice (as the pair's route is shared without ECMP): a fabric
	// has far fewer paths than a run has flows (a k=4 fat-tree 848 host
	// to host, scenarios/fabric/million-flows.yaml a million flows), and
	// a path is 16 bytes a hop.
	ecmpOn := sc.ECMP.Enabled
	flowPath := make([][]string, len(sc.Flows))
	shared := map[string][]string{}
	share := func(p []string) []string {
		if p == nil {
			return nil
		}
		k := strings.Join(p, "\x00")
		if q, ok := shared[k]; ok {
			return q
		}
		shared[k] = p
		return p
	}
	if ecmpOn {
		for i, f := range sc.Flows {
			if w := need(f.Dst); w != nil {
				w.flows = append(w.flows, i)
			} else {
				flowPath[i] = share(g.walk(nil, f.Src, f.Dst, nil))
			}
		}
	}
	var base routes
	for _, root := range roots {
		g.routesTo(root, ecmpOn, &base)
		for _, dst := range byRoot[root] {
			t := l.tableTo(dst, &base)
			w := todo[dst]
			for _, i := range w.pairs {
				pairs[i].path = g.walk(t, pairs[i].src, pairs[i].dst, nil)
			}
			for _, i := range w.flows {
				f := &sc.Flows[i]
				flowPath[i] = share(g.walk(t, f.Src, f.Dst, l.flowPicker(f.Src, f.Dst, f.SrcQP, f.DstQP)))
			}
		}
	}

	explicit := map[[2]string]bool{}
	for _, r := range l.explicit {
		explicit[[2]string{r.Src, r.Dst}] = true
	}
	routeOf := map[[2]string]int{} // pair -> index in sc.Routes
	for _, p := range pairs {
		if p.path == nil {
			if p.at.n != nil && (p.fwd < 0 || pairs[p.fwd].path != nil) {
				l.d.errAt(p.at.n, p.at.field, "no path from %s to %s", p.src, p.dst)
			}
			continue
		}
		key := [2]string{p.src, p.dst}
		routeOf[key] = len(sc.Routes)
		sc.Routes = append(sc.Routes, Route{Src: p.src, Dst: p.dst, Path: p.path, Explicit: explicit[key]})
	}
	for i := range sc.Flows {
		f := &sc.Flows[i]
		if ecmpOn {
			f.Path = flowPath[i]
		} else if r, ok := routeOf[[2]string{f.Src, f.Dst}]; ok {
			f.Path = sc.Routes[r].Path
		}
	}
}
