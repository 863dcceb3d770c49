package scenario

// Generated fabrics (topology.fabrics) and the WAN that joins them
// (topology.wan). A fabric is a data centre written as a few numbers: a
// k-ary fat-tree or a leaf-spine, its link rates, per-hop delay and
// buffers. The loader expands it into ordinary hosts, switches and links
// with generated names (docs/scenarios.md, "Generated fabrics"), so that
// everything downstream (routes, mechanisms, events, traffic, the network
// model) sees the same topology as if it had been written out by hand.

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// FabricKind names the shape of a generated fabric.
type FabricKind string

// The fabric shapes.
const (
	FabricFatTree   FabricKind = "fat-tree"
	FabricLeafSpine FabricKind = "leaf-spine"
)

// Limits on generated fabrics: a fat-tree of k = 48 has 27 648 hosts. A
// mistyped k must fail, not fill the memory.
const (
	maxFatTreeK     = 48
	maxFabricHosts  = 1 << 16
	maxFabricSwitch = 1 << 12
)

// Fabric is a generated data centre. Its nodes and links are also in
// Scenario.Hosts, Switches and Links, in the order given in
// docs/scenarios.md.
type Fabric struct {
	Name string
	Kind FabricKind
	// K is the fat-tree's arity; Oversubscription its hosts per edge
	// switch over k/2.
	K, Oversubscription int
	// Leaves, Spines and HostsPerLeaf shape a leaf-spine.
	Leaves, Spines, HostsPerLeaf int
	// Rate is the host links' rate, UplinkRate the switch-to-switch
	// links' (and the border router's links into the fabric).
	Rate, UplinkRate Rate
	// Delay is every link's one-way delay (per hop).
	Delay time.Duration
	// Buffer is each switch egress port's own buffer (0: unlimited unless
	// SharedBuffer is set).
	Buffer Size
	// SharedBuffer, when positive, is one buffer per switch shared by its
	// ports with dynamic thresholds: a port admits a packet while its
	// queue is below SharedAlpha times the unused shared buffer
	// (Choudhury and Hahne), as merchant-silicon switches do.
	SharedBuffer Size
	SharedAlpha  float64
	// Hosts are the fabric's hosts; Tiers its switches by tier name
	// (core, agg, edge; spine, leaf); Border its border router ("" when
	// it has none).
	Hosts  []string
	Tiers  map[string][]string
	Border string
	// IPv6 gives the fabric's nodes addresses from fd00::1 (the first
	// free ones) instead of 10.0.0.1.
	IPv6 bool
	// Partition is the partition of the parallel engine its nodes (the
	// border router included) run in: the fabric's name unless the file
	// says (key partition). Fabrics in partitions of their own are cut at
	// the WAN links, whose least delay is the lookahead.
	Partition string
}

// Tier names of generated switches, usable as groups (fabric-tier) in
// mechanism.nodes.
var fabricTiers = map[FabricKind][]string{
	FabricFatTree:   {"core", "agg", "edge"},
	FabricLeafSpine: {"spine", "leaf"},
}

// fabricDef is a fabric as read, before its links exist.
type fabricDef struct {
	Fabric
	obj   *object
	queue Queue
	// border links the border router to the fabric.
	links []Link
}

// fabricNodes reads topology.fabrics and defines their hosts and
// switches (links come with fabricLinks, after the file's own links).
// bordered are the fabric names topology.wan refers to: they get a
// border router without asking.
func (l *loader) fabricNodes(o *object, defQueue Queue, ips *addrs) {
	d, sc := l.d, l.sc
	bordered := map[string]bool{}
	for _, wn := range d.list(o.get("wan"), "topology.wan") {
		if wn.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i+1 < len(wn.Content); i += 2 {
			if k := wn.Content[i].Value; k == "a" || k == "b" {
				bordered[wn.Content[i+1].Value] = true
			}
		}
	}
	for i, fn := range d.list(o.get("fabrics"), "topology.fabrics") {
		path := index("topology.fabrics", i)
		f := d.object(fn, path, "name", "kind", "k", "oversubscription", "leaves", "spines", "hosts_per_leaf",
			"rate", "uplink_rate", "delay", "buffer", "shared_buffer", "queue", "border", "ipv6", "partition")
		if f == nil {
			continue
		}
		fd := &fabricDef{obj: f, queue: defQueue}
		ok := true
		nameN := f.must("name")
		name, good := d.name(nameN, f.field("name"))
		ok = ok && good
		named := good // a name of its own: lost with the fabric if it fails
		if good {
			if prev, dup := l.fabricIdx[name]; dup {
				d.errAt(nameN, f.field("name"), "duplicate fabric name %q (first is topology.fabrics[%d])", name, prev)
				ok = false
				named = false
			}
		}
		fd.Name = name
		if kn := f.must("kind"); kn != nil {
			if k, good := d.scalar(kn, f.field("kind")); good {
				fd.Kind = FabricKind(k)
				if _, known := fabricTiers[fd.Kind]; !known {
					d.errAt(kn, f.field("kind"), "unknown fabric kind %q (want fat-tree or leaf-spine)", k)
					ok = false
				}
			} else {
				ok = false
			}
		} else {
			ok = false
		}
		ok = l.fabricShape(fd) && ok
		if v, good := d.positiveRate(f.must("rate"), f.field("rate")); good {
			fd.Rate, fd.UplinkRate = v, v
		} else {
			ok = false
		}
		if n := f.get("uplink_rate"); n != nil {
			if v, good := d.positiveRate(n, f.field("uplink_rate")); good {
				fd.UplinkRate = v
			} else {
				ok = false
			}
		}
		if v, good := d.duration(f.must("delay"), f.field("delay")); good {
			fd.Delay = v
		} else {
			ok = false
		}
		f.setSize("buffer", &fd.Buffer, false)
		if sn := f.get("shared_buffer"); sn != nil {
			so := d.object(sn, f.field("shared_buffer"), "size", "alpha")
			fd.SharedAlpha = 1
			if so != nil {
				if v, good := d.positiveSize(so.must("size"), so.field("size")); good {
					fd.SharedBuffer = v
				} else {
					ok = false
				}
				so.setFloat("alpha", &fd.SharedAlpha, 0, 1024)
				if an := so.get("alpha"); an != nil && fd.SharedAlpha == 0 {
					d.errAt(an, so.field("alpha"), "must be greater than zero")
					ok = false
				}
			} else {
				ok = false
			}
			if fd.Buffer > 0 {
				d.errAt(sn, f.field("shared_buffer"), "give buffer (per port) or shared_buffer (per switch), not both")
				ok = false
			}
		}
		l.queue(f.get("queue"), f.field("queue"), &fd.queue)
		f.setBool("ipv6", &fd.IPv6)
		fd.Partition = name
		if pn := f.get("partition"); pn != nil {
			if v, good := d.name(pn, f.field("partition")); good {
				fd.Partition = v
			} else {
				ok = false
			}
		}
		border := bordered[name]
		if bn := f.get("border"); bn != nil {
			if v, good := d.boolean(bn, f.field("border")); good {
				border = border || v
			}
		}
		if !ok {
			if named {
				lf := lostFabric{name: name, border: border}
				if _, known := fabricTiers[fd.Kind]; known {
					lf.kind = fd.Kind
				}
				l.lostFabrics = append(l.lostFabrics, lf)
			}
			continue
		}
		l.fabricIdx[name] = len(sc.Fabrics)
		l.generateFabric(fd, border, nameN, ips)
		sc.Fabrics = append(sc.Fabrics, fd.Fabric)
		l.fabricDefs = append(l.fabricDefs, fd)
	}
}

// fabricShape reads the numbers that shape a fabric of fd.Kind.
func (l *loader) fabricShape(fd *fabricDef) bool {
	d, f := l.d, fd.obj
	ok := true
	count := func(key string, dst *int, lo, hi int64) {
		n := f.must(key)
		if n == nil {
			ok = false
			return
		}
		v, good := d.integer(n, f.field(key), lo, hi)
		if !good {
			ok = false
			return
		}
		*dst = int(v)
	}
	refuse := func(keys ...string) {
		for _, k := range keys {
			if n := f.get(k); n != nil {
				d.errAt(n, f.field(k), "not a key of a %s fabric", fd.Kind)
				ok = false
			}
		}
	}
	switch fd.Kind {
	case FabricFatTree:
		refuse("leaves", "spines", "hosts_per_leaf")
		count("k", &fd.K, 2, maxFatTreeK)
		if fd.K%2 != 0 {
			d.errAt(f.get("k"), f.field("k"), "k = %d is odd; a k-ary fat-tree needs an even k", fd.K)
			ok = false
		}
		fd.Oversubscription = 1
		if n := f.get("oversubscription"); n != nil {
			if v, good := d.integer(n, f.field("oversubscription"), 1, 64); good {
				fd.Oversubscription = int(v)
			} else {
				ok = false
			}
		}
		if ok && fd.K*fd.K*fd.K/4*fd.Oversubscription > maxFabricHosts {
			d.errAt(f.get("k"), f.field("k"), "%d hosts is more than %d", fd.K*fd.K*fd.K/4*fd.Oversubscription, maxFabricHosts)
			ok = false
		}
	case FabricLeafSpine:
		refuse("k", "oversubscription")
		count("leaves", &fd.Leaves, 1, maxFabricSwitch)
		count("spines", &fd.Spines, 1, maxFabricSwitch)
		count("hosts_per_leaf", &fd.HostsPerLeaf, 1, maxFabricHosts)
		if ok && fd.Leaves*fd.HostsPerLeaf > maxFabricHosts {
			d.errAt(f.get("hosts_per_leaf"), f.field("hosts_per_leaf"), "%d hosts is more than %d", fd.Leaves*fd.HostsPerLeaf, maxFabricHosts)
			ok = false
		}
	default:
		return false
	}
	return ok
}

// generateFabric defines fd's nodes and remembers its links. Names:
// fat-tree F-c<i> (core), F-a<pod>-<i>, F-e<pod>-<i>, F-h<pod>-<edge>-<j>;
// leaf-spine F-s<i>, F-l<i>, F-h<leaf>-<j>; the border router F-br.
func (l *loader) generateFabric(fd *fabricDef, border bool, at *yaml.Node, ips *addrs) {
	sc := l.sc
	field := fd.obj.field("name")
	fd.Tiers = map[string][]string{}
	base := netip.MustParseAddr("10.0.0.1")
	if fd.IPv6 {
		base = netip.MustParseAddr("fd00::1")
	}
	host := func(name string) {
		if !l.defineNode(name, at, field, kindHost, len(sc.Hosts)) {
			return
		}
		i := len(sc.Hosts)
		sc.Hosts = append(sc.Hosts, Host{Name: name, Fabric: fd.Name, Partition: fd.Partition})
		ips.auto = append(ips.auto, func() { sc.Hosts[i].IP = ips.next(name, base) })
		fd.Hosts = append(fd.Hosts, name)
	}
	sw := func(tier, name string) {
		if !l.defineNode(name, at, field, kindSwitch, len(sc.Switches)) {
			return
		}
		j := len(sc.Switches)
		sc.Switches = append(sc.Switches, Switch{Name: name, Queue: fd.queue, Fabric: fd.Name, Tier: tier,
			SharedBuffer: fd.SharedBuffer, SharedAlpha: fd.SharedAlpha, Partition: fd.Partition})
		ips.auto = append(ips.auto, func() { sc.Switches[j].IP = ips.next(name, base) })
		if tier != "" {
			fd.Tiers[tier] = append(fd.Tiers[tier], name)
		}
	}
	link := func(a, b string, rate Rate) {
		fd.links = append(fd.links, Link{Name: a + "-" + b, A: a, B: b, Rate: rate, Delay: fd.Delay, Buffer: fd.Buffer})
	}
	F := fd.Name
	var top []string // the switches a border router joins
	switch fd.Kind {
	case FabricFatTree:
		half := fd.K / 2
		perEdge := half * fd.Oversubscription
		for c := range half * half {
			sw("core", fmt.Sprintf("%s-c%d", F, c))
		}
		for p := range fd.K {
			for i := range half {
				sw("agg", fmt.Sprintf("%s-a%d-%d", F, p, i))
			}
			for i := range half {
				sw("edge", fmt.Sprintf("%s-e%d-%d", F, p, i))
			}
		}
		for p := range fd.K {
			for e := range half {
				for j := range perEdge {
					host(fmt.Sprintf("%s-h%d-%d-%d", F, p, e, j))
				}
			}
		}
		// Links: hosts to edges, edges to aggregations, aggregations to
		// cores (aggregation i of every pod joins cores i*k/2 .. i*k/2+k/2-1).
		for p := range fd.K {
			for e := range half {
				for j := range perEdge {
					link(fmt.Sprintf("%s-h%d-%d-%d", F, p, e, j), fmt.Sprintf("%s-e%d-%d", F, p, e), fd.Rate)
				}
			}
		}
		for p := range fd.K {
			for e := range half {
				for a := range half {
					link(fmt.Sprintf("%s-e%d-%d", F, p, e), fmt.Sprintf("%s-a%d-%d", F, p, a), fd.UplinkRate)
				}
			}
		}
		for p := range fd.K {
			for a := range half {
				for c := range half {
					link(fmt.Sprintf("%s-a%d-%d", F, p, a), fmt.Sprintf("%s-c%d", F, a*half+c), fd.UplinkRate)
				}
			}
		}
		top = fd.Tiers["core"]
	case FabricLeafSpine:
		for s := range fd.Spines {
			sw("spine", fmt.Sprintf("%s-s%d", F, s))
		}
		for lf := range fd.Leaves {
			sw("leaf", fmt.Sprintf("%s-l%d", F, lf))
		}
		for lf := range fd.Leaves {
			for j := range fd.HostsPerLeaf {
				host(fmt.Sprintf("%s-h%d-%d", F, lf, j))
			}
		}
		for lf := range fd.Leaves {
			for j := range fd.HostsPerLeaf {
				link(fmt.Sprintf("%s-h%d-%d", F, lf, j), fmt.Sprintf("%s-l%d", F, lf), fd.Rate)
			}
		}
		for lf := range fd.Leaves {
			for s := range fd.Spines {
				link(fmt.Sprintf("%s-l%d", F, lf), fmt.Sprintf("%s-s%d", F, s), fd.UplinkRate)
			}
		}
		top = fd.Tiers["spine"]
	}
	if border {
		// A border router is a deep-buffer router, not a merchant-silicon
		// switch: no shared buffer; its ports into the fabric get the
		// fabric's per-port buffer, or the size of the shared one, and its
		// WAN ports their wan link's buffer.
		fd.Border = F + "-br"
		sw("", fd.Border)
		j := len(sc.Switches) - 1
		if sc.Switches[j].Name == fd.Border {
			sc.Switches[j].SharedBuffer, sc.Switches[j].SharedAlpha = 0, 0
		}
		buf := fd.Buffer
		if buf == 0 {
			buf = fd.SharedBuffer
		}
		for _, t := range top {
			link(t, fd.Border, fd.UplinkRate)
			fd.links[len(fd.links)-1].Buffer = buf
		}
	}
}

// fabricLinks adds the generated fabrics' links (after the file's own,
// so that the ports of hand-written links come first) and then
// topology.wan.
func (l *loader) fabricLinks(o *object) {
	for _, fd := range l.fabricDefs {
		for _, lk := range fd.links {
			l.addLink(lk, fd.obj.get("name"), fd.obj.field("name"), nil, "", qpRef{fd.obj.node, fd.obj.field("name")})
		}
	}
	for i, wn := range l.d.list(o.get("wan"), "topology.wan") {
		l.wanWritten++
		l.link(wn, index("topology.wan", i), true)
	}
}

// lost reports whether name is one that a fabric which could not be
// built would have defined (lostFabric.generated), or a wan link to such
// a fabric. A reference to it is unknown because of the fabric's error,
// reported already, and is not reported again as undefined (an odd k gave
// one error and then one for every name the fabric would have made). Any
// other name is reported, one that merely begins with the fabric's name
// and a dash (a hand-written node F-gw next to fabric F) too.
func (l *loader) lost(name string) bool {
	if l.lostLinks[name] {
		return true
	}
	for _, f := range l.lostFabrics {
		if f.generated(name) {
			return true
		}
	}
	return false
}

// lostFabric is a fabric that could not be built, as far as the file
// said: its name, its kind when the file gave a known one ("": either
// kind's names) and whether it would have had a border router.
type lostFabric struct {
	name   string
	kind   FabricKind
	border bool
}

// fabricNodeShapes are the names generateFabric gives a kind's nodes
// after "F-" ('#' a number written as %d does), the border router aside.
var fabricNodeShapes = map[FabricKind][]string{
	FabricFatTree:   {"c#", "a#-#", "e#-#", "h#-#-#"},
	FabricLeafSpine: {"s#", "l#", "h#-#"},
}

// generated reports whether the fabric would have defined name: the
// fabric's own name (its hosts; its border router on a wan link), a group
// (F-switches, F-<tier>), a node or a link between two of its nodes (a
// generated link is named a-b). A node's numbers are not checked against
// the fabric's size: those numbers may be what failed.
func (f lostFabric) generated(name string) bool {
	if name == f.name {
		return true
	}
	rest, ok := strings.CutPrefix(name, f.name+"-")
	if !ok {
		return false
	}
	if rest == "switches" {
		return true
	}
	for kind, tiers := range fabricTiers {
		if (f.kind == "" || f.kind == kind) && slices.Contains(tiers, rest) {
			return true
		}
	}
	if f.node(rest) {
		return true
	}
	sep := "-" + f.name + "-"
	for i := 0; i < len(rest); i++ {
		j := strings.Index(rest[i:], sep)
		if j < 0 {
			return false
		}
		i += j
		if f.node(rest[:i]) && f.node(rest[i+len(sep):]) {
			return true
		}
	}
	return false
}

// node reports whether the fabric would have had a node F-rest.
func (f lostFabric) node(rest string) bool {
	if rest == "br" {
		return f.border
	}
	for kind, shapes := range fabricNodeShapes {
		if f.kind != "" && f.kind != kind {
			continue
		}
		for _, sh := range shapes {
			if nameShape(rest, sh) {
				return true
			}
		}
	}
	return false
}

// nameShape reports whether s is shape with each '#' a number as %d
// writes it (no sign, no leading zero).
func nameShape(s, shape string) bool {
	for shape != "" {
		if shape[0] != '#' {
			if s == "" || s[0] != shape[0] {
				return false
			}
			s, shape = s[1:], shape[1:]
			continue
		}
		n := 0
		for n < len(s) && '0' <= s[n] && s[n] <= '9' {
			n++
		}
		if n == 0 || (n > 1 && s[0] == '0') {
			return false
		}
		s, shape = s[n:], shape[1:]
	}
	return s == ""
}

// fabricEnd resolves an end of a wan link: a fabric's name stands for
// its border router.
func (l *loader) fabricEnd(name string) string {
	if i, ok := l.fabricIdx[name]; ok {
		if b := l.sc.Fabrics[i].Border; b != "" {
			return b
		}
	}
	return name
}

// group expands a name that stands for several nodes: a fabric's name
// for its hosts (want kindHost), fabric-tier for its switches of that
// tier and fabric-switches for all of them (want kindSwitch). ok is false
// when name is no group.
func (l *loader) group(name string, want nodeKind) ([]string, bool) {
	for _, f := range l.sc.Fabrics {
		switch {
		case want == kindHost && name == f.Name:
			return f.Hosts, true
		case want == kindSwitch && name == f.Name+"-switches":
			var all []string
			for _, t := range fabricTiers[f.Kind] {
				all = append(all, f.Tiers[t]...)
			}
			if f.Border != "" {
				all = append(all, f.Border)
			}
			return all, true
		case want == kindSwitch:
			for _, t := range fabricTiers[f.Kind] {
				if name == f.Name+"-"+t {
					return f.Tiers[t], true
				}
			}
		}
	}
	return nil, false
}

// FabricOf returns the fabric a node belongs to ("" for a node written
// by hand). It looks through every node: callers with many questions
// read Host.Fabric and Switch.Fabric into a map.
func (s *Scenario) FabricOf(node string) string {
	for _, h := range s.Hosts {
		if h.Name == node {
			return h.Fabric
		}
	}
	for _, sw := range s.Switches {
		if sw.Name == node {
			return sw.Fabric
		}
	}
	return ""
}

// groupRef resolves an item of a list of hosts or switches: a node, or a
// group of a generated fabric (group).
func (l *loader) groupRef(n *yaml.Node, field string, want nodeKind) ([]string, bool) {
	if n != nil && n.Kind == yaml.ScalarNode {
		if _, isNode := l.nodes[n.Value]; !isNode {
			if g, ok := l.group(n.Value, want); ok {
				return g, true
			}
		}
	}
	name, ok := l.nodeRef(n, field, want)
	if !ok {
		return nil, false
	}
	return []string{name}, true
}
