package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Option changes how a scenario is loaded.
type Option func(*options)

type options struct {
	seed    int64
	hasSeed bool
}

// WithSeed replaces the file's seed before anything is drawn from it, so
// that generated traffic changes with it too (a block's own seed still
// wins).
func WithSeed(seed int64) Option {
	return func(o *options) { o.seed, o.hasSeed = seed, true }
}

// LoadFile reads and validates the scenario at path. CDF files named in
// the scenario are read relative to the scenario's directory.
func LoadFile(path string, opts ...Option) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Reason: err.Error(), Err: err}
	}
	return Parse(path, data, opts...)
}

// Parse validates the scenario in data. file names it in errors and is the
// base for relative CDF file paths. The error, when not nil, is an
// ErrorList of every mistake found.
func Parse(file string, data []byte, opts ...Option) (*Scenario, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, ErrorList{{File: file, Reason: "empty scenario"}}
		}
		return nil, ErrorList{yamlSyntaxError(file, err)}
	}
	root := resolve(&doc)
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, ErrorList{{File: file, Reason: "empty scenario"}}
		}
		root = resolve(root.Content[0])
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, ErrorList{{File: file, Line: extra.Line, Col: extra.Column, Reason: "more than one yaml document; a scenario is one document"}}
	}
	l := &loader{
		d:       &decoder{file: file},
		dir:     filepath.Dir(file),
		sc:      &Scenario{File: file},
		nodes:   map[string]nodeInfo{},
		links:   map[string]int{},
		pairs:   map[[2]string]int{},
		flowSet: map[string]*yaml.Node{},
		opts:    o,
	}
	l.load(root)
	if len(l.d.errs) > 0 {
		return nil, l.d.sorted()
	}
	return l.sc, nil
}

// yamlSyntaxError turns yaml.v3's "yaml: line N: reason" into an Error.
func yamlSyntaxError(file string, err error) *Error {
	msg := err.Error()
	e := &Error{File: file, Reason: msg, Err: err}
	var line int
	if rest, ok := strings.CutPrefix(msg, "yaml: line "); ok {
		if i := strings.Index(rest, ": "); i > 0 {
			if _, serr := fmt.Sscanf(rest[:i], "%d", &line); serr == nil {
				e.Line, e.Col, e.Reason = line, 1, rest[i+2:]
			}
		}
	}
	return e
}

type nodeKind int

const (
	kindHost nodeKind = iota + 1
	kindSwitch
)

type nodeInfo struct {
	kind  nodeKind
	index int
	n     *yaml.Node
}

type loader struct {
	opts options
	d    *decoder
	dir  string
	sc   *Scenario

	nodes    map[string]nodeInfo
	links    map[string]int    // link name -> index in sc.Links
	pairs    map[[2]string]int // sorted endpoint pair -> index in sc.Links
	hostLnk  map[string][]int  // host -> links
	explicit []Route           // explicit routes in file order
	adj      map[string][]string
	flowSet  map[string]*yaml.Node
	flowPos  []qpRef // per flow in sc.Flows before sorting: where to report it
	qpPos    []qpRef // explicit queue pair numbers, in flow order
}

// qpRef is a place in the file and its field path.
type qpRef struct {
	n     *yaml.Node
	field string
}

var topKeys = []string{
	"name", "description", "seed", "duration", "sample_interval",
	"topology", "queue", "mechanism", "dcqcn", "nic", "traffic", "events", "tuner",
}

func (l *loader) load(root *yaml.Node) {
	d, sc := l.d, l.sc
	top := d.object(root, "", topKeys...)
	if top == nil {
		return
	}
	sc.Name = strings.TrimSuffix(filepath.Base(sc.File), filepath.Ext(sc.File))
	if n := top.get("name"); n != nil {
		if v, ok := d.name(n, "name"); ok {
			sc.Name = v
		}
	}
	if n := top.get("description"); n != nil {
		sc.Description, _ = d.scalar(n, "description")
	}
	sc.Seed = 1
	if n := top.get("seed"); n != nil {
		if v, ok := d.integer(n, "seed", 0, 1<<62); ok {
			sc.Seed = v
		}
	}
	if l.opts.hasSeed {
		sc.Seed = l.opts.seed
	}
	if v, ok := d.positiveDuration(top.must("duration"), "duration"); ok {
		sc.Duration = v
	}
	if n := top.must("sample_interval"); n != nil {
		if v, ok := d.positiveDuration(n, "sample_interval"); ok {
			if sc.Duration > 0 && v > sc.Duration {
				d.errAt(n, "sample_interval", "%v is longer than the duration %v", v, sc.Duration)
			}
			sc.SampleInterval = v
		}
	}

	defQueue := DefaultQueue()
	l.queue(top.get("queue"), "queue", &defQueue)
	l.topology(top.must("topology"), defQueue)
	l.mechanism(top.get("mechanism"))
	l.dcqcn(top.get("dcqcn"))
	l.nic(top.get("nic"))
	l.traffic(top.get("traffic"))
	l.events(top.get("events"))
	l.tuner(top.get("tuner"))
	if len(d.errs) == 0 {
		l.finish()
	}
}

// DefaultQueue is the switch queue configuration when the file has none:
// the ECN thresholds HPCC's ns-3 configuration uses for 100 Gb/s ports,
// PFC off.
func DefaultQueue() Queue {
	return Queue{
		ECN: ECN{Enabled: true, KMin: 100 * KB, KMax: 400 * KB, PMax: 0.2},
		PFC: PFC{Enabled: false, XOff: 1 * MB, XOn: 512 * KB},
	}
}

// DefaultLongHaulCNP are the Long-haul CNP parameters when the file sets
// none: the draft's recommendations and its §7 example where it gives a
// value, and a real node's own defaults where it does not — V_ecn and
// V_growth (§5.4 "a configured threshold", no value) are those of
// lhcnp.DefaultQueueConfig and the YANG model (v-ecn 20 %, v-growth
// 10 Gb/s), so a simulated node starts as `lhcnp switch` does
// (TestDefaultsAreTheNodes).
func DefaultLongHaulCNP() LongHaulCNP {
	return LongHaulCNP{
		KBase:          64 * KB,
		Alpha:          1.0,
		KMinFraction:   0.5,
		VECN:           0.2,
		VGrowth:        10 * Gbps,
		GrowthInterval: 100 * time.Microsecond,
		ReducePercent:  30,
		PauseFactor:    1.5,
		ResumePercent:  50,
		RecoveryStep:   1 * Gbps,
		FlowAging:      time.Second,
		Collaborative:  true,
		UpstreamFirst:  true,
		Format:         "rocev2",
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

func (l *loader) topology(n *yaml.Node, defQueue Queue) {
	d, sc := l.d, l.sc
	o := d.object(n, "topology", "hosts", "switches", "links", "routes")
	if o == nil {
		return
	}
	usedIP := map[netip.Addr]string{}
	// Addresses are assigned after all explicit ones are known, through an
	// accessor: the slices may still grow, so no pointers are kept.
	var autoIP []func()
	ipOf := func(obj *object, name string, dst func() *netip.Addr) {
		if ipn := obj.get("ip"); ipn != nil {
			s, ok := d.scalar(ipn, obj.field("ip"))
			if !ok {
				return
			}
			a, err := netip.ParseAddr(s)
			if err != nil {
				d.errAt(ipn, obj.field("ip"), "%q is not an IP address", s)
				return
			}
			if other, dup := usedIP[a]; dup {
				d.errAt(ipn, obj.field("ip"), "address %v is already used by %s", a, other)
				return
			}
			usedIP[a] = name
			*dst() = a
			return
		}
		autoIP = append(autoIP, func() { *dst() = nextFreeIP(usedIP, name) })
	}
	addNode := func(nameNode *yaml.Node, field string, kind nodeKind, idx int) (string, bool) {
		name, ok := d.name(nameNode, field)
		if !ok {
			return "", false
		}
		if prev, dup := l.nodes[name]; dup {
			d.errAt(nameNode, field, "duplicate node name %q (first defined at line %d)", name, prev.n.Line)
			return "", false
		}
		l.nodes[name] = nodeInfo{kind: kind, index: idx, n: nameNode}
		return name, true
	}

	hosts := d.list(o.must("hosts"), "topology.hosts")
	for i, hn := range hosts {
		path := index("topology.hosts", i)
		h := d.object(hn, path, "name", "ip")
		if h == nil {
			continue
		}
		name, ok := addNode(h.must("name"), h.field("name"), kindHost, len(sc.Hosts))
		if !ok {
			continue
		}
		i := len(sc.Hosts)
		sc.Hosts = append(sc.Hosts, Host{Name: name})
		ipOf(h, name, func() *netip.Addr { return &sc.Hosts[i].IP })
	}
	if len(hosts) == 0 && o.get("hosts") != nil {
		d.errAt(o.get("hosts"), "topology.hosts", "no hosts")
	}
	switches := d.list(o.get("switches"), "topology.switches")
	sc.Switches = make([]Switch, 0, len(switches))
	for i, sn := range switches {
		path := index("topology.switches", i)
		s := d.object(sn, path, "name", "ip", "queue")
		if s == nil {
			continue
		}
		name, ok := addNode(s.must("name"), s.field("name"), kindSwitch, len(sc.Switches))
		if !ok {
			continue
		}
		sw := Switch{Name: name, Queue: defQueue}
		l.queue(s.get("queue"), s.field("queue"), &sw.Queue)
		j := len(sc.Switches)
		sc.Switches = append(sc.Switches, sw)
		ipOf(s, name, func() *netip.Addr { return &sc.Switches[j].IP })
	}
	for _, f := range autoIP {
		f()
	}

	l.hostLnk = map[string][]int{}
	links := d.list(o.must("links"), "topology.links")
	for i, ln := range links {
		path := index("topology.links", i)
		lo := d.object(ln, path, "name", "a", "b", "rate", "delay", "buffer")
		if lo == nil {
			continue
		}
		var lk Link
		okA, okB := false, false
		if an := lo.must("a"); an != nil {
			lk.A, okA = l.nodeRef(an, lo.field("a"), 0)
		}
		if bn := lo.must("b"); bn != nil {
			lk.B, okB = l.nodeRef(bn, lo.field("b"), 0)
		}
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
			continue
		}
		at, field := lo.get("name"), lo.field("name")
		if at == nil {
			at, field = lo.node, path
		}
		if prev, dup := l.links[lk.Name]; dup {
			d.errAt(at, field, "duplicate link name %q (first is topology.links[%d])", lk.Name, prev)
			continue
		}
		pair := [2]string{min(lk.A, lk.B), max(lk.A, lk.B)}
		if prev, dup := l.pairs[pair]; dup {
			d.errAt(lo.get("b"), lo.field("b"), "%s and %s are already linked by %s; parallel links are not supported", lk.A, lk.B, sc.Links[prev].Name)
			continue
		}
		idx := len(sc.Links)
		l.links[lk.Name] = idx
		l.pairs[pair] = idx
		for _, end := range []string{lk.A, lk.B} {
			if l.nodes[end].kind == kindHost {
				l.hostLnk[end] = append(l.hostLnk[end], idx)
			}
		}
		sc.Links = append(sc.Links, lk)
	}
	for _, h := range sc.Hosts {
		info := l.nodes[h.Name]
		switch n := len(l.hostLnk[h.Name]); {
		case n == 0 && len(links) > 0:
			d.errAt(info.n, fmt.Sprintf("topology.hosts[%d].name", info.index), "host %s has no link", h.Name)
		case n > 1:
			d.errAt(info.n, fmt.Sprintf("topology.hosts[%d].name", info.index), "host %s has %d links; a host has one NIC port", h.Name, n)
		}
	}

	for i, rn := range d.list(o.get("routes"), "topology.routes") {
		path := index("topology.routes", i)
		ro := d.object(rn, path, "src", "dst", "path")
		if ro == nil {
			continue
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
			continue
		}
		if src == dst {
			d.errAt(ro.get("dst"), ro.field("dst"), "route from %s to itself", src)
			continue
		}
		if err := l.checkPath(p, src, dst); err != "" {
			d.errAt(pn, ro.field("path"), "%s", err)
			continue
		}
		clash := ""
		for j, other := range l.explicit {
			if other.Dst != dst {
				continue
			}
			if other.Src == src {
				clash = fmt.Sprintf("second route from %s to %s (first is topology.routes[%d])", src, dst, j)
				break
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
		if clash != "" {
			d.errAt(pn, ro.field("path"), "%s", clash)
			continue
		}
		l.explicit = append(l.explicit, Route{Src: src, Dst: dst, Path: p, Explicit: true})
	}
}

func nextFreeIP(used map[netip.Addr]string, name string) netip.Addr {
	a := netip.MustParseAddr("10.0.0.1")
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
		l.d.errAt(n, field, "undefined node %q", name)
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

// routeTable is how the switches forward towards dst: node -> next node.
// It mirrors the network model (netsim.Network.ComputeRoutes): fewest hops,
// hosts do not forward, ties broken by the switch's lowest port, ports
// numbered in the order of topology.links. Explicit routes then override the
// next hop at every switch on their path.
func (l *loader) routeTable(dst string) map[string]string {
	dist := map[string]int{dst: 0}
	queue := []string{dst}
	adj := l.adjacency()
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		if x != dst && l.nodes[x].kind == kindHost {
			continue
		}
		for _, y := range adj[x] {
			if _, seen := dist[y]; !seen {
				dist[y] = dist[x] + 1
				queue = append(queue, y)
			}
		}
	}
	next := map[string]string{}
	for x, nbrs := range adj {
		dx, ok := dist[x]
		if !ok || x == dst {
			continue
		}
		for _, y := range nbrs {
			if dy, ok := dist[y]; ok && dy == dx-1 {
				next[x] = y
				break
			}
		}
	}
	for _, r := range l.explicit {
		if r.Dst != dst {
			continue
		}
		for i := 0; i+1 < len(r.Path); i++ {
			next[r.Path[i]] = r.Path[i+1]
		}
	}
	return next
}

// adjacency lists each node's neighbours in port order (file order of
// links).
func (l *loader) adjacency() map[string][]string {
	if l.adj == nil {
		l.adj = map[string][]string{}
		for _, lk := range l.sc.Links {
			l.adj[lk.A] = append(l.adj[lk.A], lk.B)
			l.adj[lk.B] = append(l.adj[lk.B], lk.A)
		}
	}
	return l.adj
}

// walk follows table from src to dst; nil when there is no way or a loop.
func walk(table map[string]string, src, dst string) []string {
	p := []string{src}
	seen := map[string]bool{src: true}
	for at := src; at != dst; {
		nx, ok := table[at]
		if !ok || seen[nx] {
			return nil
		}
		seen[nx] = true
		p = append(p, nx)
		at = nx
	}
	return p
}

func (l *loader) mechanism(n *yaml.Node) {
	sc := l.sc
	sc.Mechanism = Mechanism{Kind: MechanismDCQCN}
	if n == nil {
		return
	}
	m, o, ok := l.mechanismBlock(n, "mechanism", true)
	if !ok {
		return
	}
	sc.Mechanism = m
	// Which block runs on which node: two mechanisms that cannot coexist
	// on one node (CanCoexist) are refused at the second one's entry.
	type onNode struct {
		kind  MechanismKind
		field string
	}
	placed := map[string][]onNode{}
	check := func(b *Mechanism, path string, nodes *yaml.Node) {
		for i, name := range b.Nodes {
			field := index(join(path, "nodes"), i)
			for _, o := range placed[name] {
				if !CanCoexist(o.kind, b.Kind) {
					l.d.errAt(nodeAt(nodes, i), field, "%s already runs %s (%s); %s", name, o.kind, o.field, coexistReason(o.kind, b.Kind))
				}
			}
			placed[name] = append(placed[name], onNode{b.Kind, field})
		}
	}
	check(&sc.Mechanism, "mechanism", o.get("nodes"))
	wn := o.get("with")
	for i, x := range l.d.list(wn, "mechanism.with") {
		path := index("mechanism.with", i)
		w, wo, ok := l.mechanismBlock(x, path, false)
		if !ok {
			continue
		}
		if w.Kind == MechanismDCQCN || w.Kind == MechanismNone {
			l.d.errAt(x, join(path, "kind"), "%s is not a node mechanism (mechanism.with adds congestion-aware nodes)", w.Kind)
			continue
		}
		if sc.Mechanism.Kind == MechanismNone {
			l.d.errAt(x, path, "mechanism kind none turns the RNICs' rate control off; nothing could react to %s", w.Kind)
			continue
		}
		check(&w, path, wo.get("nodes"))
		sc.Mechanism.With = append(sc.Mechanism.With, w)
	}
}

// nodeAt returns the i-th item of a nodes list, or the list itself.
func nodeAt(list *yaml.Node, i int) *yaml.Node {
	if list != nil && list.Kind == yaml.SequenceNode && i < len(list.Content) {
		return list.Content[i]
	}
	return list
}

// CanCoexist reports whether mechanisms a and b can run on one node. Rate
// Advice sets a ceiling that a CNP still cuts below, so it runs beside any
// notification mechanism; two notification mechanisms (Long-haul CNP,
// Fast CNP, FCN) on one node would each notify the sender of the same
// congestion, cutting it twice per event, and both would own the port's
// ECN marking and its observer.
func CanCoexist(a, b MechanismKind) bool {
	return a != b && (a == MechanismRateAdvice || b == MechanismRateAdvice)
}

func coexistReason(a, b MechanismKind) string {
	if a == b {
		return fmt.Sprintf("%s is listed twice on the node", a)
	}
	return fmt.Sprintf("%s and %s cannot both run on one node: each would notify the sender of the same congestion (two cuts per event) and both would drive the port's ECN marking; only rate-advice coexists with a notification mechanism", a, b)
}

// mechanismBlock reads one mechanism block (kind, nodes, params and, at
// the top, with) at path.
func (l *loader) mechanismBlock(n *yaml.Node, path string, top bool) (Mechanism, *object, bool) {
	d, sc := l.d, l.sc
	keys := []string{"kind", "nodes", "params"}
	if top {
		keys = append(keys, "with")
	}
	o := d.object(n, path, keys...)
	if o == nil {
		return Mechanism{}, nil, false
	}
	kn := o.must("kind")
	if kn == nil {
		return Mechanism{}, nil, false
	}
	k, ok := d.scalar(kn, join(path, "kind"))
	if !ok {
		return Mechanism{}, nil, false
	}
	kind := MechanismKind(k)
	if !contains(mechanismKinds, kind) {
		names := make([]string, len(mechanismKinds))
		for i, m := range mechanismKinds {
			names[i] = string(m)
		}
		d.errAt(kn, join(path, "kind"), "unknown mechanism %q (want one of: %s)", k, strings.Join(names, ", "))
		return Mechanism{}, nil, false
	}
	m := Mechanism{Kind: kind}
	nodal := kind != MechanismDCQCN && kind != MechanismNone
	nn := o.get("nodes")
	switch {
	case nodal && nn == nil:
		d.errAt(o.node, join(path, "nodes"), "missing required field: %s needs its congestion-aware switches", kind)
	case !nodal && nn != nil:
		d.errAt(nn, join(path, "nodes"), "%s has no congestion-aware nodes", kind)
	case nodal:
		seen := map[string]bool{}
		for i, x := range d.list(nn, join(path, "nodes")) {
			field := index(join(path, "nodes"), i)
			name, ok := l.nodeRef(x, field, kindSwitch)
			if !ok {
				continue
			}
			if seen[name] {
				d.errAt(x, field, "%s is listed twice", name)
				continue
			}
			seen[name] = true
			m.Nodes = append(m.Nodes, name)
			sc.Switches[l.nodes[name].index].CongestionAware = true
		}
		if len(m.Nodes) == 0 && len(nn.Content) == 0 {
			d.errAt(nn, join(path, "nodes"), "no nodes")
		}
	}
	pn := o.get("params")
	pp := join(path, "params")
	switch kind {
	case MechanismLongHaulCNP:
		m.LongHaulCNP = DefaultLongHaulCNP()
		l.longHaulParams(pn, pp, &m.LongHaulCNP)
	case MechanismFastCNP:
		m.FastCNP = DefaultFastCNP()
		l.fastCNPParams(pn, pp, &m.FastCNP)
	case MechanismRateAdvice:
		m.RateAdvice = DefaultRateAdvice()
		l.rateAdviceParams(pn, pp, &m.RateAdvice)
	case MechanismSwitchCNP:
		m.SwitchCNP = DefaultSwitchCNP()
		l.switchCNPParams(pn, pp, &m.SwitchCNP)
	case MechanismFCN:
		m.FCN = DefaultFCN()
		l.fcnParams(pn, pp, &m.FCN, m.Nodes)
	default:
		if pn == nil {
			return m, o, true
		}
		po := d.object(pn, pp, nil...)
		if po == nil {
			return m, o, true
		}
		m.Params = map[string]string{}
		for i := 0; i+1 < len(po.node.Content); i += 2 {
			k, v := po.node.Content[i], resolve(po.node.Content[i+1])
			if s, ok := d.scalar(v, join(pp, k.Value)); ok {
				m.Params[k.Value] = s
			}
		}
		if kind == MechanismDCQCN || kind == MechanismNone {
			if len(m.Params) > 0 {
				d.errAt(pn, pp, "%s takes no params (DCQCN is tuned in the top-level dcqcn block)", kind)
			}
		}
	}
	return m, o, true
}

// fastCNPParams reads the typed parameters of fast-cnp.
func (l *loader) fastCNPParams(n *yaml.Node, path string, p *FastCNP) {
	if n == nil {
		return
	}
	o := l.d.object(n, path, "k_max", "k_min", "p_max", "cnp_interval", "port_cnp_rate", "port_cnp_burst",
		"max_flows", "ioam", "capable_senders", "mark_unknown", "rnic", "dscp", "flow_aging")
	if o == nil {
		return
	}
	o.setSize("k_max", &p.KMax, true)
	o.setSize("k_min", &p.KMin, false)
	o.setFloat("p_max", &p.PMax, 0, 1)
	o.setDuration("cnp_interval", &p.CNPInterval, true)
	o.setInt("port_cnp_rate", &p.PortCNPRate, 1, 1e9)
	o.setInt("port_cnp_burst", &p.PortCNPBurst, 1, 1e6)
	o.setInt("max_flows", &p.MaxFlows, 1, 1024)
	o.setBool("ioam", &p.IOAM)
	o.setBool("mark_unknown", &p.MarkUnknown)
	o.setBool("rnic", &p.RNIC)
	o.setInt("dscp", &p.DSCP, 0, 63)
	o.setDuration("flow_aging", &p.FlowAging, true)
	if cn := o.get("capable_senders"); cn != nil {
		if s, ok := l.d.scalar(cn, o.field("capable_senders")); ok {
			if s != "all" && s != "none" {
				l.d.errAt(cn, o.field("capable_senders"), "unknown value %q (want all or none)", s)
			} else {
				p.CapableSenders = s
			}
		}
	}
	if p.KMin >= p.KMax {
		at, field := o.get("k_min"), o.field("k_min")
		if at == nil {
			at, field = o.get("k_max"), o.field("k_max")
		}
		l.d.errAt(at, field, "k_min %v must be below k_max %v", p.KMin, p.KMax)
	}
}

// DefaultFCN returns the fcn defaults (fcn.DefaultConfig; the ingress PE
// is the block's first node unless ingress says otherwise).
func DefaultFCN() FCN {
	return FCN{KMax: 100 * KB, CNPInterval: 50 * time.Microsecond, Aging: 60 * time.Second, MaxMappings: 65536}
}

// fcnParams reads the typed parameters of fcn; ingress must name nodes of
// the block.
func (l *loader) fcnParams(n *yaml.Node, path string, p *FCN, nodes []string) {
	if len(nodes) > 0 {
		p.Ingress = []string{nodes[0]}
	}
	if n == nil {
		return
	}
	o := l.d.object(n, path, "ingress", "k_max", "cnp_interval", "aging", "max_mappings")
	if o == nil {
		return
	}
	o.setSize("k_max", &p.KMax, true)
	o.setDuration("cnp_interval", &p.CNPInterval, true)
	o.setDuration("aging", &p.Aging, true)
	o.setInt("max_mappings", &p.MaxMappings, 1, 1<<20-1)
	if in := o.get("ingress"); in != nil {
		p.Ingress = nil
		for i, x := range l.d.list(in, o.field("ingress")) {
			field := index(o.field("ingress"), i)
			name, ok := l.d.scalar(x, field)
			if !ok {
				continue
			}
			if !contains(nodes, name) {
				l.d.errAt(x, field, "%s is not one of the block's nodes (%s)", name, strings.Join(nodes, ", "))
				continue
			}
			p.Ingress = append(p.Ingress, name)
		}
		if len(in.Content) == 0 {
			l.d.errAt(in, o.field("ingress"), "no ingress PE")
		}
	}
}

// DefaultSwitchCNP returns the switch-cnp defaults (the package's,
// switchcnp.DefaultConfig).
func DefaultSwitchCNP() SwitchCNP {
	return SwitchCNP{DSCP: 48, DelayThreshold: 20 * time.Microsecond, BufferShare: 1, CNPInterval: 50 * time.Microsecond,
		FlowAging: time.Second, MaxEntries: 65536}
}

// switchCNPParams reads the typed parameters of switch-cnp.
func (l *loader) switchCNPParams(n *yaml.Node, path string, p *SwitchCNP) {
	if n == nil {
		return
	}
	o := l.d.object(n, path, "dscp", "delay_threshold", "buffer_share", "cnp_interval", "flow_aging", "max_entries")
	if o == nil {
		return
	}
	o.setInt("dscp", &p.DSCP, 0, 63)
	o.setDuration("delay_threshold", &p.DelayThreshold, true)
	o.setInt("buffer_share", &p.BufferShare, 1, 100)
	o.setDuration("cnp_interval", &p.CNPInterval, true)
	o.setDuration("flow_aging", &p.FlowAging, true)
	o.setInt("max_entries", &p.MaxEntries, 1, 1<<24)
}

// DefaultRateAdvice returns the rate-advice defaults (docs/scenarios.md):
// the package's (rateadvice.DefaultConfig), every RNIC capable.
func DefaultRateAdvice() RateAdvice {
	return RateAdvice{QueueBased: true, Interval: 100 * time.Microsecond, DrainInterval: time.Millisecond,
		ChangePercent: 10, Capable: "all"}
}

// rateAdviceParams reads the typed parameters of rate-advice.
func (l *loader) rateAdviceParams(n *yaml.Node, path string, p *RateAdvice) {
	if n == nil {
		return
	}
	o := l.d.object(n, path, "queue_based", "policy_rate", "interval", "drain_interval", "change_percent", "capable")
	if o == nil {
		return
	}
	o.setBool("queue_based", &p.QueueBased)
	o.setRate("policy_rate", &p.PolicyRate, false)
	o.setDuration("interval", &p.Interval, true)
	o.setDuration("drain_interval", &p.DrainInterval, true)
	o.setInt("change_percent", &p.ChangePercent, 0, 100)
	if cn := o.get("capable"); cn != nil {
		if s, ok := l.d.scalar(cn, o.field("capable")); ok {
			if s != "all" && s != "none" {
				l.d.errAt(cn, o.field("capable"), "unknown value %q (want all or none)", s)
			} else {
				p.Capable = s
			}
		}
	}
	if p.PolicyRate > 0 && p.PolicyRate < Mbps {
		l.d.errAt(o.get("policy_rate"), o.field("policy_rate"), "%v is below 1Mbps (advice is in Mb/s)", p.PolicyRate)
	}
	if !p.QueueBased && p.PolicyRate == 0 {
		l.d.errAt(o.node, path, "queue_based is false and there is no policy_rate: nothing would be advised")
	}
}

// DefaultFastCNP returns the fast-cnp defaults (docs/scenarios.md): the
// package's (fastcnp.DefaultConfig), on, every RNIC processing Fast CNP
// and known to the nodes as capable.
func DefaultFastCNP() FastCNP {
	return FastCNP{
		KMax: 100 * KB, PMax: 0.2, CNPInterval: 50 * time.Microsecond, PortCNPRate: 1_000_000, PortCNPBurst: 100,
		MaxFlows: 4, CapableSenders: "all", MarkUnknown: true, RNIC: true, DSCP: 48, FlowAging: time.Second,
	}
}

// longHaulParams reads the typed parameters of long-haul-cnp; unknown keys
// are errors here, while kinds without a model yet accept any key.
func (l *loader) longHaulParams(n *yaml.Node, path string, p *LongHaulCNP) {
	if n == nil {
		return
	}
	o := l.d.object(n, path,
		"k_base", "alpha", "k_min_fraction", "rtt_est", "v_ecn", "v_growth", "growth_interval",
		"cnp_interval", "port_cnp_interval", "reduce_percent", "pause_duration", "pause_factor",
		"resume_percent", "resume_after", "recovery_interval", "recovery_step", "flow_aging",
		"collaborative", "observation_window", "format", "trigger_persistence", "upstream_first")
	if o == nil {
		return
	}
	o.setSize("k_base", &p.KBase, true)
	o.setFloat("alpha", &p.Alpha, 0, 1e6)
	o.setFloat("k_min_fraction", &p.KMinFraction, 0, 0.999999)
	o.setDuration("rtt_est", &p.RTTEst, false)
	o.setFloat("v_ecn", &p.VECN, 0, 1)
	o.setRate("v_growth", &p.VGrowth, false)
	o.setDuration("growth_interval", &p.GrowthInterval, true)
	o.setDuration("trigger_persistence", &p.TriggerPersistence, false)
	o.setDuration("cnp_interval", &p.CNPInterval, false)
	o.setDuration("port_cnp_interval", &p.PortCNPInterval, false)
	o.setInt("reduce_percent", &p.ReducePercent, 1, 100)
	o.setDuration("pause_duration", &p.PauseDuration, false)
	o.setFloat("pause_factor", &p.PauseFactor, 1, 1e6)
	o.setInt("resume_percent", &p.ResumePercent, 0, 100)
	o.setDuration("resume_after", &p.ResumeAfter, false)
	o.setDuration("recovery_interval", &p.RecoveryInterval, false)
	o.setRate("recovery_step", &p.RecoveryStep, true)
	o.setDuration("flow_aging", &p.FlowAging, true)
	o.setBool("collaborative", &p.Collaborative)
	o.setBool("upstream_first", &p.UpstreamFirst)
	o.setDuration("observation_window", &p.ObservationWindow, false)
	if fn := o.get("format"); fn != nil {
		if s, ok := l.d.scalar(fn, o.field("format")); ok {
			if s != "rocev2" && s != "icmpv6" {
				l.d.errAt(fn, o.field("format"), "unknown format %q (want rocev2 or icmpv6)", s)
			} else {
				p.Format = s
			}
		}
	}
	if p.PauseDuration > 0 && p.PauseDuration%time.Microsecond != 0 {
		l.d.errAt(o.get("pause_duration"), o.field("pause_duration"), "must be whole microseconds (the Parameter field counts µs)")
	}
}

func (l *loader) dcqcn(n *yaml.Node) {
	if n == nil {
		return
	}
	o := l.d.object(n, "dcqcn", "enabled", "g", "alpha_update_period", "initial_alpha", "rate_on_first_cnp",
		"min_dec_fac_percent", "min_rate", "gd", "rate_reduce_monitor_period", "clamp_target_rate",
		"clamp_target_after_time_inc", "time_reset", "byte_reset", "threshold", "max_rate", "rate_ai",
		"rate_hai", "cnp_interval", "cnp_prio", "profile", "alpha_per_cnp")
	if o == nil {
		return
	}
	p := &l.sc.DCQCN
	if fn := o.get("profile"); fn != nil {
		if s, ok := l.d.scalar(fn, o.field("profile")); ok {
			if s != DCQCNProfileNVIDIA && s != DCQCNProfilePaper {
				l.d.errAt(fn, o.field("profile"), "unknown profile %q (want %s or %s)", s, DCQCNProfileNVIDIA, DCQCNProfilePaper)
			} else {
				p.Profile = s
			}
		}
	}
	p.AlphaPerCNP = optBool(o, "alpha_per_cnp")
	p.Enabled = optBool(o, "enabled")
	p.G = optInt(o, "g", 0, 1024)
	p.AlphaUpdatePeriod = optDuration(o, "alpha_update_period", true)
	p.InitialAlpha = optInt(o, "initial_alpha", 0, 1024)
	p.RateOnFirstCNP = optRate(o, "rate_on_first_cnp", false)
	p.MinDecFacPercent = optInt(o, "min_dec_fac_percent", 0, 100)
	p.MinRate = optRate(o, "min_rate", true)
	p.GD = optInt(o, "gd", 0, 30)
	p.RateReduceMonitorPeriod = optDuration(o, "rate_reduce_monitor_period", false)
	p.ClampTargetRate = optBool(o, "clamp_target_rate")
	p.ClampTargetAfterTimeInc = optBool(o, "clamp_target_after_time_inc")
	p.TimeReset = optDuration(o, "time_reset", true)
	p.ByteReset = optSize(o, "byte_reset", false)
	p.Threshold = optInt(o, "threshold", 0, 1<<20)
	p.MaxRate = optRate(o, "max_rate", false)
	p.RateAI = optRate(o, "rate_ai", false)
	p.RateHAI = optRate(o, "rate_hai", false)
	p.CNPInterval = optDuration(o, "cnp_interval", false)
	p.CNPPrio = optInt(o, "cnp_prio", 0, 7)
}

func (l *loader) nic(n *yaml.Node) {
	if n == nil {
		return
	}
	o := l.d.object(n, "nic", "mtu", "ack_every_packets")
	if o == nil {
		return
	}
	l.sc.NIC.MTU = optSize(o, "mtu", true)
	if l.sc.NIC.MTU != nil && *l.sc.NIC.MTU > 65536 {
		l.d.errAt(o.get("mtu"), o.field("mtu"), "%v is above 64KiB", *l.sc.NIC.MTU)
	}
	l.sc.NIC.AckEveryPackets = optInt(o, "ack_every_packets", 0, 1<<20)
}

// opt* return a pointer to the value when the field is present and valid.

func optBool(o *object, key string) *bool {
	var v bool
	if o.get(key) == nil {
		return nil
	}
	n := len(o.d.errs)
	o.setBool(key, &v)
	return ptrIf(&v, len(o.d.errs) == n)
}

func optInt(o *object, key string, lo, hi int64) *int {
	var v int
	if o.get(key) == nil {
		return nil
	}
	n := len(o.d.errs)
	o.setInt(key, &v, lo, hi)
	return ptrIf(&v, len(o.d.errs) == n)
}

func optRate(o *object, key string, positive bool) *Rate {
	var v Rate
	if o.get(key) == nil {
		return nil
	}
	n := len(o.d.errs)
	o.setRate(key, &v, positive)
	return ptrIf(&v, len(o.d.errs) == n)
}

func optSize(o *object, key string, positive bool) *Size {
	var v Size
	if o.get(key) == nil {
		return nil
	}
	n := len(o.d.errs)
	o.setSize(key, &v, positive)
	return ptrIf(&v, len(o.d.errs) == n)
}

func optDuration(o *object, key string, positive bool) *time.Duration {
	var v time.Duration
	if o.get(key) == nil {
		return nil
	}
	n := len(o.d.errs)
	o.setDuration(key, &v, positive)
	return ptrIf(&v, len(o.d.errs) == n)
}

func ptrIf[T any](v *T, ok bool) *T {
	if !ok {
		return nil
	}
	return v
}
