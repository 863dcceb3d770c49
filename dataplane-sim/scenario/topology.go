package scenario

// The topology block: hosts and switches with their addresses, the links
// between them, explicit routes, and the switches' queues (the top-level
// queue block is every switch's default). The routes the file does not give
// are computed here as the network model computes them (routes.go), so
// that every flow's path is known at load time.

import (
	"fmt"
	"net/netip"

	"github.com/lhcnp/lhcnp/dataplane-sim/ecmp"
	"go.yaml.in/yaml/v3"
)

// DefaultQueue is the switch queue configuration when the file has none:
// the ECN thresholds HPCC's ns-3 configuration uses for 100 Gb/s ports,
// PFC off.
func DefaultQueue() Queue {
	return Queue{
		ECN: ECN{Enabled: true, KMin: 100 * KB, KMax: 400 * KB, PMax: 0.2},
		PFC: PFC{Enabled: false, XOff: 1 * MB, XOn: 512 * KB},
	}
}

func (l *loader) queue(n *yaml.Node, path string, q *Queue) {
	if n == nil {
		return
	}
	o := l.d.object(n, path, "ecn", "pfc")
	if e := l.d.object(o.get("ecn"), join(path, "ecn"), "enabled", "k_min", "k_max", "p_max"); e != nil {
		e.setBool("enabled", &q.ECN.Enabled)
		e.setSize("k_min", &q.ECN.KMin, false)
		e.setSize("k_max", &q.ECN.KMax, true)
		e.setFloat("p_max", &q.ECN.PMax, 0, 1)
		if q.ECN.Enabled && q.ECN.KMin >= q.ECN.KMax {
			field, at := e.field("k_min"), e.get("k_min")
			if at == nil {
				field, at = e.field("k_max"), e.get("k_max")
			}
			if at == nil {
				at = e.node
			}
			l.d.errAt(at, field, "k_min (%v) must be less than k_max (%v)", q.ECN.KMin, q.ECN.KMax)
		}
	}
	if p := l.d.object(o.get("pfc"), join(path, "pfc"), "enabled", "xoff", "xon"); p != nil {
		p.setBool("enabled", &q.PFC.Enabled)
		p.setSize("xoff", &q.PFC.XOff, true)
		p.setSize("xon", &q.PFC.XOn, false)
		if q.PFC.Enabled && q.PFC.XOn >= q.PFC.XOff {
			at, field := p.get("xon"), p.field("xon")
			if at == nil {
				at, field = p.node, p.path
			}
			l.d.errAt(at, field, "xon (%v) must be less than xoff (%v)", q.PFC.XOn, q.PFC.XOff)
		}
	}
}

// topology reads the topology block: nodes first, so that links and
// routes can refer to them, then links, then routes, which need the links.
func (l *loader) topology(n *yaml.Node, defQueue Queue) {
	o := l.d.object(n, "topology", "hosts", "switches", "links", "routes", "fabrics", "wan", "ecmp")
	if o == nil {
		return
	}
	l.nodesOf(o, defQueue)
	fabrics := len(l.sc.Fabrics) > 0 || o.get("fabrics") != nil
	var linksN *yaml.Node
	if fabrics {
		linksN = o.get("links")
	} else {
		linksN = o.must("links")
	}
	links := l.d.list(linksN, "topology.links")
	l.hostLnk = map[string][]int{}
	for i, ln := range links {
		l.link(ln, index("topology.links", i), false)
	}
	l.fileLinks, l.fileLinksDone = len(l.sc.Links), true
	l.fabricLinks(o)
	l.checkHostLinks(len(l.sc.Links) > 0 || linksN != nil)
	l.cuts()
	l.ecmpBlock(o.get("ecmp"), fabrics)
	for i, rn := range l.d.list(o.get("routes"), "topology.routes") {
		l.route(rn, index("topology.routes", i))
	}
}

// nodesOf reads topology.hosts and topology.switches.
func (l *loader) nodesOf(o *object, defQueue Queue) {
	d, sc := l.d, l.sc
	ips := addrs{d: d, used: map[netip.Addr]string{}}
	hostsN := o.get("hosts")
	if o.get("fabrics") == nil {
		hostsN = o.must("hosts")
	}
	hosts := d.list(hostsN, "topology.hosts")
	for i, hn := range hosts {
		path := index("topology.hosts", i)
		h := d.object(hn, path, "name", "ip", "partition")
		if h == nil {
			continue
		}
		name, ok := l.addNode(h.must("name"), h.field("name"), kindHost, len(sc.Hosts))
		if !ok {
			continue
		}
		i := len(sc.Hosts)
		sc.Hosts = append(sc.Hosts, Host{Name: name, Partition: l.partition(h)})
		ips.read(h, name, func() *netip.Addr { return &sc.Hosts[i].IP })
	}
	if len(hosts) == 0 && o.get("hosts") != nil {
		d.errAt(o.get("hosts"), "topology.hosts", "no hosts")
	}
	switches := d.list(o.get("switches"), "topology.switches")
	sc.Switches = make([]Switch, 0, len(switches))
	for i, sn := range switches {
		path := index("topology.switches", i)
		s := d.object(sn, path, "name", "ip", "queue", "partition")
		if s == nil {
			continue
		}
		name, ok := l.addNode(s.must("name"), s.field("name"), kindSwitch, len(sc.Switches))
		if !ok {
			continue
		}
		sw := Switch{Name: name, Queue: defQueue, Partition: l.partition(s)}
		l.queue(s.get("queue"), s.field("queue"), &sw.Queue)
		j := len(sc.Switches)
		sc.Switches = append(sc.Switches, sw)
		ips.read(s, name, func() *netip.Addr { return &sc.Switches[j].IP })
	}
	// Hosts given IPv6 addresses, none IPv4: the nodes without an ip take
	// IPv6 ones too. A switch's notifications (Long-haul CNP, Fast CNP)
	// leave from its address, so one of 10.0.0.x sent none to IPv6 hosts,
	// and a host of 10.0.0.x could reach none of the others.
	v4, v6 := false, false
	for _, h := range sc.Hosts {
		if h.IP.IsValid() {
			v4, v6 = v4 || h.IP.Is4(), v6 || !h.IP.Is4()
		}
	}
	if v6 && !v4 {
		ips.base = netip.MustParseAddr("fd00::1")
	}
	l.fabricNodes(o, defQueue, &ips)
	ips.assign()
}

// addNode defines a host or a switch; node names are one namespace.
func (l *loader) addNode(nameNode *yaml.Node, field string, kind nodeKind, idx int) (string, bool) {
	name, ok := l.d.name(nameNode, field)
	if !ok {
		return "", false
	}
	return name, l.defineNode(name, nameNode, field, kind, idx)
}

// defineNode defines the node name, written at (or generated from) at.
func (l *loader) defineNode(name string, at *yaml.Node, field string, kind nodeKind, idx int) bool {
	if prev, dup := l.nodes[name]; dup {
		l.d.errAt(at, field, "duplicate node name %q (first defined at line %d)", name, prev.n.Line)
		return false
	}
	l.nodes[name] = nodeInfo{kind: kind, index: idx, n: at}
	return true
}

// addrs gives the nodes their addresses: a node's own ip, checked unique,
// or, for a node without one, the first free address from base (10.0.0.1,
// or fd00::1 in a network of IPv6 hosts) once all explicit ones are known.
type addrs struct {
	d    *decoder
	base netip.Addr            // of the automatic addresses; zero: 10.0.0.1
	used map[netip.Addr]string // address -> node
	// auto assigns the addresses of nodes without one, through an
	// accessor: the slices may still grow, so no pointers are kept.
	auto []func()
	// cursor is, by first address, where the search for the next free
	// one resumes: every address below it is taken.
	cursor map[netip.Addr]netip.Addr
}

// next takes the first free address from base for name.
func (a *addrs) next(name string, base netip.Addr) netip.Addr {
	if a.cursor == nil {
		a.cursor = map[netip.Addr]netip.Addr{}
	}
	from, ok := a.cursor[base]
	if !ok {
		from = base
	}
	got := nextFreeFrom(a.used, name, from)
	a.cursor[base] = got.Next()
	return got
}

// read takes obj's ip, or queues an automatic address for name.
func (a *addrs) read(obj *object, name string, dst func() *netip.Addr) {
	d := a.d
	if ipn := obj.get("ip"); ipn != nil {
		s, ok := d.scalar(ipn, obj.field("ip"))
		if !ok {
			return
		}
		addr, err := netip.ParseAddr(s)
		if err != nil {
			d.errAt(ipn, obj.field("ip"), "%q is not an IP address", s)
			return
		}
		if other, dup := a.used[addr]; dup {
			d.errAt(ipn, obj.field("ip"), "address %v is already used by %s", addr, other)
			return
		}
		a.used[addr] = name
		*dst() = addr
		return
	}
	a.auto = append(a.auto, func() {
		base := a.base
		if !base.IsValid() {
			base = netip.MustParseAddr("10.0.0.1")
		}
		*dst() = a.next(name, base)
	})
}

// assign gives the nodes without an ip theirs, in file order.
func (a *addrs) assign() {
	for _, f := range a.auto {
		f()
	}
}

// link reads one item of topology.links (or, wan, of topology.wan) at
// path. A link joins two distinct nodes, at most one link a pair; its
// name defaults to "a-b". A wan link's ends may name fabrics: their
// border routers.
func (l *loader) link(ln *yaml.Node, path string, wan bool) {
	d := l.d
	lo := d.object(ln, path, "name", "a", "b", "rate", "delay", "buffer")
	if lo == nil {
		return
	}
	lk := Link{WAN: wan}
	okA, okB := false, false
	lostEnd := false
	end := func(key string) (string, bool) {
		n := lo.must(key)
		if n == nil {
			return "", false
		}
		if n.Kind == yaml.ScalarNode && l.lost(n.Value) {
			lostEnd = true
			return "", false
		}
		if wan && n.Kind == yaml.ScalarNode {
			if _, isFabric := l.fabricIdx[n.Value]; isFabric && l.fabricEnd(n.Value) == n.Value {
				d.errAt(n, lo.field(key), "fabric %s has no border router", n.Value)
				return "", false
			}
			c := *n
			c.Value = l.fabricEnd(n.Value)
			n = &c
		}
		return l.nodeRef(n, lo.field(key), 0)
	}
	lk.A, okA = end("a")
	lk.B, okB = end("b")
	if okA && okB && lk.A == lk.B {
		d.errAt(lo.get("b"), lo.field("b"), "link from %s to itself", lk.A)
		okB = false
	}
	if v, ok := d.positiveRate(lo.must("rate"), lo.field("rate")); ok {
		lk.Rate = v
	}
	if v, ok := d.duration(lo.must("delay"), lo.field("delay")); ok {
		lk.Delay = v
	}
	lo.setSize("buffer", &lk.Buffer, false)
	if okA && okB {
		lk.Name = lk.A + "-" + lk.B
	}
	if nn := lo.get("name"); nn != nil {
		if v, ok := d.name(nn, lo.field("name")); ok {
			lk.Name = v
		}
	}
	if !okA || !okB || lk.Name == "" {
		if lk.Name != "" && lostEnd {
			// A link to a fabric that could not be built: lost with it.
			if l.lostLinks == nil {
				l.lostLinks = map[string]bool{}
			}
			l.lostLinks[lk.Name] = true
		}
		return
	}
	at, field := lo.get("name"), lo.field("name")
	if at == nil {
		at, field = lo.node, path
	}
	delay := qpRef{lo.get("delay"), lo.field("delay")}
	if delay.n == nil {
		delay = qpRef{lo.node, path}
	}
	l.addLink(lk, at, field, lo.get("b"), lo.field("b"), delay)
}

// addLink adds lk unless its name or its pair of nodes is taken; at and
// field say where to report that (bAt and bField the pair, or at and
// field when nil), and delay where a cut without lookahead is reported.
func (l *loader) addLink(lk Link, at *yaml.Node, field string, bAt *yaml.Node, bField string, delay qpRef) {
	d, sc := l.d, l.sc
	if bAt == nil {
		bAt, bField = at, field
	}
	if prev, dup := l.links[lk.Name]; dup {
		d.errAt(at, field, "duplicate link name %q (first is %s)", lk.Name, l.linkPlace(prev))
		return
	}
	pair := [2]string{min(lk.A, lk.B), max(lk.A, lk.B)}
	if prev, dup := l.pairs[pair]; dup {
		d.errAt(bAt, bField, "%s and %s are already linked by %s; parallel links are not supported", lk.A, lk.B, sc.Links[prev].Name)
		return
	}
	idx := len(sc.Links)
	l.linkPos = append(l.linkPos, delay)
	l.links[lk.Name] = idx
	l.pairs[pair] = idx
	for _, end := range []string{lk.A, lk.B} {
		if l.nodes[end].kind == kindHost {
			l.hostLnk[end] = append(l.hostLnk[end], idx)
		}
	}
	sc.Links = append(sc.Links, lk)
}

// linkPlace names where link i came from: its item of topology.links, or
// the fabric or wan link it is.
func (l *loader) linkPlace(i int) string {
	if !l.fileLinksDone || i < l.fileLinks {
		return fmt.Sprintf("topology.links[%d]", i)
	}
	return fmt.Sprintf("the generated link %s", l.sc.Links[i].Name)
}

// checkHostLinks checks that every host has its one NIC port linked
// (anyLinks: the file lists links; without any, the missing list is the
// error already).
func (l *loader) checkHostLinks(anyLinks bool) {
	for _, h := range l.sc.Hosts {
		info := l.nodes[h.Name]
		switch n := len(l.hostLnk[h.Name]); {
		case n == 0 && anyLinks:
			l.d.errAt(info.n, fmt.Sprintf("topology.hosts[%d].name", info.index), "host %s has no link", h.Name)
		case n > 1:
			l.d.errAt(info.n, fmt.Sprintf("topology.hosts[%d].name", info.index), "host %s has %d links; a host has one NIC port", h.Name, n)
		}
	}
}

// route reads one item of topology.routes at path: a path of linked nodes
// from a host to another that no earlier route contradicts.
func (l *loader) route(rn *yaml.Node, path string) {
	d := l.d
	ro := d.object(rn, path, "src", "dst", "path")
	if ro == nil {
		return
	}
	src, okS := l.nodeRef(ro.must("src"), ro.field("src"), kindHost)
	dst, okD := l.nodeRef(ro.must("dst"), ro.field("dst"), kindHost)
	pn := ro.must("path")
	hops := d.list(pn, ro.field("path"))
	var p []string
	okP := pn != nil
	for j, hn := range hops {
		name, ok := l.nodeRef(hn, index(ro.field("path"), j), 0)
		if !ok {
			okP = false
			continue
		}
		p = append(p, name)
	}
	if !okS || !okD || !okP {
		return
	}
	if src == dst {
		d.errAt(ro.get("dst"), ro.field("dst"), "route from %s to itself", src)
		return
	}
	if err := l.checkPath(p, src, dst); err != "" {
		d.errAt(pn, ro.field("path"), "%s", err)
		return
	}
	if clash := l.routeClash(p, src, dst); clash != "" {
		d.errAt(pn, ro.field("path"), "%s", clash)
		return
	}
	l.explicit = append(l.explicit, Route{Src: src, Dst: dst, Path: p, Explicit: true})
}

// routeClash says why path p from src to dst cannot join the explicit
// routes read so far, or "": a second route for the pair (said first,
// whatever else clashes), or a switch that would have to forward towards
// dst on two ways (switches forward by destination only).
func (l *loader) routeClash(p []string, src, dst string) string {
	clash := ""
	for j, other := range l.explicit {
		if other.Dst != dst {
			continue
		}
		if other.Src == src {
			return fmt.Sprintf("second route from %s to %s (first is topology.routes[%d])", src, dst, j)
		}
		for a := 0; a+1 < len(other.Path) && clash == ""; a++ {
			for b := 0; b+1 < len(p); b++ {
				if other.Path[a] == p[b] && other.Path[a+1] != p[b+1] {
					clash = fmt.Sprintf("%s forwards towards %s by destination only: this route leaves it to %s, topology.routes[%d] to %s",
						p[b], dst, p[b+1], j, other.Path[a+1])
					break
				}
			}
		}
	}
	return clash
}

// nextFreeFrom takes the first address from a that no node uses.
func nextFreeFrom(used map[netip.Addr]string, name string, a netip.Addr) netip.Addr {
	for {
		if _, taken := used[a]; !taken {
			used[a] = name
			return a
		}
		a = a.Next()
	}
}

// nodeRef resolves a reference to a node; want 0 accepts hosts and
// switches.
func (l *loader) nodeRef(n *yaml.Node, field string, want nodeKind) (string, bool) {
	if n == nil {
		return "", false
	}
	name, ok := l.d.name(n, field)
	if !ok {
		return "", false
	}
	info, ok := l.nodes[name]
	if !ok {
		if !l.lost(name) {
			l.d.errAt(n, field, "undefined node %q", name)
		}
		return "", false
	}
	switch {
	case want == kindHost && info.kind != kindHost:
		l.d.errAt(n, field, "%s is a switch, not a host", name)
		return "", false
	case want == kindSwitch && info.kind != kindSwitch:
		l.d.errAt(n, field, "%s is a host, not a switch", name)
		return "", false
	}
	return name, true
}

func (l *loader) checkPath(p []string, src, dst string) string {
	if len(p) < 2 || p[0] != src || p[len(p)-1] != dst {
		return fmt.Sprintf("path must start at %s and end at %s", src, dst)
	}
	seen := map[string]bool{}
	for i, hop := range p {
		if seen[hop] {
			return fmt.Sprintf("path visits %s twice", hop)
		}
		seen[hop] = true
		if i > 0 && i < len(p)-1 && l.nodes[hop].kind != kindSwitch {
			return fmt.Sprintf("path goes through host %s", hop)
		}
		if i > 0 {
			if _, ok := l.pairs[[2]string{min(p[i-1], hop), max(p[i-1], hop)}]; !ok {
				return fmt.Sprintf("no link between %s and %s", p[i-1], hop)
			}
		}
	}
	return ""
}

// partition reads a node's partition key ("" without one).
func (l *loader) partition(o *object) string {
	n := o.get("partition")
	if n == nil {
		return ""
	}
	v, _ := l.d.name(n, o.field("partition"))
	return v
}

// cuts gives a host without a partition key its switch's partition and
// rejects a cut link without delay: the parallel engine's lookahead is the
// least delay of a link between two partitions (docs/engine.md).
func (l *loader) cuts() {
	sc := l.sc
	if len(sc.Partitions()) < 2 {
		return
	}
	part := map[string]string{}
	for _, s := range sc.Switches {
		part[s.Name] = s.Partition
	}
	for i := range sc.Hosts {
		h := &sc.Hosts[i]
		if h.Partition == "" {
			for _, li := range l.hostLnk[h.Name] {
				peer := sc.Links[li].A
				if peer == h.Name {
					peer = sc.Links[li].B
				}
				h.Partition = part[peer]
			}
		}
	}
	for _, h := range sc.Hosts {
		part[h.Name] = h.Partition
	}
	first := sc.Partitions()[0]
	name := func(p string) string {
		if p == "" {
			return first
		}
		return p
	}
	for i, lk := range sc.Links {
		pa, pb := name(part[lk.A]), name(part[lk.B])
		if pa == pb {
			continue
		}
		if l.cut == nil {
			l.cut = map[string]bool{}
		}
		l.cut[lk.Name] = true
		if lk.Delay <= 0 {
			pos := l.linkPos[i]
			l.d.errAt(pos.n, pos.field, "link %s joins partitions %s and %s without delay: a link between partitions needs a positive delay, the parallel engine's lookahead", lk.Name, pa, pb)
		}
	}
}

// Partitions returns the names of the partitions the file cuts the network
// into, in order of first appearance (hosts, then switches); nil when it
// names none. A node without a partition runs in the first.
func (sc *Scenario) Partitions() []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, h := range sc.Hosts {
		add(h.Partition)
	}
	for _, s := range sc.Switches {
		add(s.Partition)
	}
	return out
}

// PartitionOf returns the index in Partitions of the named node's partition
// (0 for a node without one).
func (sc *Scenario) PartitionOf(node string) int {
	ps := sc.Partitions()
	p := ""
	for _, h := range sc.Hosts {
		if h.Name == node {
			p = h.Partition
		}
	}
	for _, s := range sc.Switches {
		if s.Name == node {
			p = s.Partition
		}
	}
	for i, x := range ps {
		if x == p {
			return i
		}
	}
	return 0
}

// flowPicker returns walk's pick for the packets from src to dst between
// queue pairs srcQP and dstQP: package ecmp's hash, as the switches of
// the network model choose.
func (l *loader) flowPicker(src, dst string, srcQP, dstQP uint32) func(at string, n int) int {
	t := ecmp.RoCE(l.addrOf(src), l.addrOf(dst), srcQP, dstQP)
	seed := uint64(l.sc.ECMP.Seed)
	return func(at string, n int) int {
		return ecmp.Pick(ecmp.Hash(seed, l.addrOf(at), t), n)
	}
}

// addrOf is a node's address as the ECMP hash reads it.
func (l *loader) addrOf(name string) ecmp.Addr {
	info := l.nodes[name]
	if info.kind == kindHost {
		return ecmp.AddrOf(l.sc.Hosts[info.index].IP)
	}
	return ecmp.AddrOf(l.sc.Switches[info.index].IP)
}

// ecmpBlock reads topology.ecmp: whether switches spread flows over
// their equal-cost next hops (default: when the topology has generated
// fabrics, so that hand-written topologies keep their single paths) and
// the seed of the hash (default: the scenario's seed).
func (l *loader) ecmpBlock(n *yaml.Node, fabrics bool) {
	sc := l.sc
	sc.ECMP = ECMP{Enabled: fabrics, Seed: sc.Seed}
	o := l.d.object(n, "topology.ecmp", "enabled", "seed")
	if o == nil {
		return
	}
	o.setBool("enabled", &sc.ECMP.Enabled)
	if sn := o.get("seed"); sn != nil {
		if v, ok := l.d.integer(sn, o.field("seed"), 0, MaxSeed); ok {
			sc.ECMP.Seed = v
		}
	}
}
