package scenario

// The mechanism block: the mechanism under test, the switches it runs on
// and its params, and the node mechanisms added beside it (with), placed
// so that no node runs two that cannot coexist (CanCoexist). Each kind is
// looked up among the registered ones (registry.go), whose reader returns
// its typed params with their defaults: longhaulcnp.go, fastcnp.go,
// fcn.go, switchcnp.go and rateadvice.go here, any other kind in its own
// package.

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

func (l *loader) mechanism(n *yaml.Node) {
	sc := l.sc
	sc.Mechanism = Mechanism{Kind: MechanismDCQCN}
	if n == nil {
		return
	}
	m, items, o, ok := l.mechanismBlock(n, "mechanism", true)
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
	// items[i] is the list item b.Nodes[i] came from (a fabric's group
	// names several).
	check := func(b *Mechanism, items []int, path string, nodes *yaml.Node) {
		for i, name := range b.Nodes {
			field := index(join(path, "nodes"), items[i])
			for _, o := range placed[name] {
				if !CanCoexist(o.kind, b.Kind) {
					l.d.errAt(nodeAt(nodes, items[i]), field, "%s already runs %s (%s); %s", name, o.kind, o.field, coexistReason(o.kind, b.Kind))
				}
			}
			placed[name] = append(placed[name], onNode{b.Kind, field})
		}
	}
	check(&sc.Mechanism, items, "mechanism", o.get("nodes"))
	wn := o.get("with")
	for i, x := range l.d.list(wn, "mechanism.with") {
		path := index("mechanism.with", i)
		w, witems, wo, ok := l.mechanismBlock(x, path, false)
		if !ok {
			continue
		}
		if mechanisms[w.Kind].Nodeless {
			l.d.errAt(x, join(path, "kind"), "%s is not a node mechanism (mechanism.with adds congestion-aware nodes)", w.Kind)
			continue
		}
		if sc.Mechanism.Kind == MechanismNone {
			l.d.errAt(x, path, "mechanism kind none turns the RNICs' rate control off; nothing could react to %s", w.Kind)
			continue
		}
		check(&w, witems, path, wo.get("nodes"))
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

// The kinds at the hosts only: DCQCN alone (the baseline every other
// kind adds to) and none (no rate control at all). Neither takes params.
func init() {
	RegisterMechanism(MechanismSpec{Kind: MechanismNone, Nodeless: true})
	RegisterMechanism(MechanismSpec{Kind: MechanismDCQCN, Nodeless: true})
}

// CanCoexist reports whether mechanisms a and b can run on one node. A
// kind that runs beside the others (Rate Advice: it sets a ceiling that a
// CNP still cuts below) runs beside any notification mechanism; two
// notification mechanisms (Long-haul CNP, Fast CNP, FCN) on one node would
// each notify the sender of the same congestion, cutting it twice per
// event, and both would own the port's ECN marking and its observer.
func CanCoexist(a, b MechanismKind) bool {
	return a != b && (mechanisms[a].Beside || mechanisms[b].Beside)
}

func coexistReason(a, b MechanismKind) string {
	if a == b {
		return fmt.Sprintf("%s is listed twice on the node", a)
	}
	var beside []string
	for _, k := range MechanismKinds() {
		if mechanisms[k].Beside {
			beside = append(beside, string(k))
		}
	}
	return fmt.Sprintf("%s and %s cannot both run on one node: each would notify the sender of the same congestion (two cuts per event) and both would drive the port's ECN marking; only %s coexists with a notification mechanism", a, b, strings.Join(beside, ", "))
}

// mechanismBlock reads one mechanism block (kind, nodes, params and, at
// the top, with) at path. items holds, per node of the block, the index
// of the nodes item that named it.
func (l *loader) mechanismBlock(n *yaml.Node, path string, top bool) (m Mechanism, items []int, o *object, ok bool) {
	d, sc := l.d, l.sc
	keys := []string{"kind", "nodes", "params"}
	if top {
		keys = append(keys, "with")
	}
	o = d.object(n, path, keys...)
	if o == nil {
		return Mechanism{}, nil, nil, false
	}
	kn := o.must("kind")
	if kn == nil {
		return Mechanism{}, nil, nil, false
	}
	k, ok := d.scalar(kn, join(path, "kind"))
	if !ok {
		return Mechanism{}, nil, nil, false
	}
	kind := MechanismKind(k)
	spec, ok := mechanisms[kind]
	if !ok {
		var names []string
		for _, m := range MechanismKinds() {
			names = append(names, string(m))
		}
		d.errAt(kn, join(path, "kind"), "unknown mechanism %q (want one of: %s)", k, strings.Join(names, ", "))
		return Mechanism{}, nil, nil, false
	}
	m = Mechanism{Kind: kind}
	nodal := !spec.Nodeless
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
			names, ok := l.groupRef(x, field, kindSwitch)
			if !ok {
				continue
			}
			for _, name := range names {
				if seen[name] {
					d.errAt(x, field, "%s is listed twice", name)
					continue
				}
				seen[name] = true
				m.Nodes = append(m.Nodes, name)
				items = append(items, i)
				sc.Switches[l.nodes[name].index].CongestionAware = true
			}
		}
		if len(m.Nodes) == 0 && len(nn.Content) == 0 {
			d.errAt(nn, join(path, "nodes"), "no nodes")
		}
	}
	pn := o.get("params")
	pp := join(path, "params")
	if spec.Params != nil {
		m.Params = spec.Params(&paramsBlock{d: d, n: resolve(pn), path: pp, nodes: m.Nodes})
		return m, items, o, true
	}
	if po := d.object(pn, pp, nil...); po != nil {
		given := 0
		for i := 0; i+1 < len(po.node.Content); i += 2 {
			if _, ok := d.scalar(resolve(po.node.Content[i+1]), join(pp, po.node.Content[i].Value)); ok {
				given++
			}
		}
		if given > 0 {
			hint := ""
			if spec.Nodeless {
				hint = " (DCQCN is tuned in the top-level dcqcn block)"
			}
			d.errAt(pn, pp, "%s takes no params%s", kind, hint)
		}
	}
	return m, items, o, true
}
