package scenario

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

func (l *loader) events(n *yaml.Node) {
	d, sc := l.d, l.sc
	for i, en := range d.list(n, "events") {
		path := index("events", i)
		o := d.object(en, path, "at", "kind", "target", "value")
		if o == nil {
			continue
		}
		var ev Event
		ok := true
		at, good := d.duration(o.must("at"), o.field("at"))
		if good && sc.Duration > 0 && at > sc.Duration {
			d.errAt(o.get("at"), o.field("at"), "at %v is after the end of the run (%v)", at, sc.Duration)
			good = false
		}
		ok = ok && good
		ev.At = at
		kn := o.must("kind")
		k, good := d.scalar(kn, o.field("kind"))
		if good && !contains(eventKinds, EventKind(k)) {
			names := make([]string, len(eventKinds))
			for i, e := range eventKinds {
				names[i] = string(e)
			}
			d.errAt(kn, o.field("kind"), "unknown event kind %q (want one of: %s)", k, strings.Join(names, ", "))
			good = false
		}
		if !good {
			continue
		}
		ev.Kind = EventKind(k)
		tn := o.must("target")
		target, good := d.name(tn, o.field("target"))
		vn := o.get("value")
		switch ev.Kind {
		case EventLinkRate, EventLinkDelay, EventRTT:
			if good {
				if _, exists := l.links[target]; !exists {
					if !l.lost(target) {
						d.errAt(tn, o.field("target"), "undefined link %q%s", target, l.linkHint(target))
					}
					good = false
				}
			}
			ok = ok && good
			if vn == nil {
				d.errAt(o.node, o.field("value"), "missing required field: %s needs a value", ev.Kind)
				ok = false
				break
			}
			switch ev.Kind {
			case EventLinkRate:
				ev.Rate, good = d.positiveRate(vn, o.field("value"))
			case EventLinkDelay:
				ev.Delay, good = d.duration(vn, o.field("value"))
			case EventRTT:
				ev.Delay, good = d.positiveDuration(vn, o.field("value"))
			}
			oneWay := ev.Delay
			if ev.Kind == EventRTT {
				oneWay /= 2
			}
			if good && ev.Kind != EventLinkRate && l.cut[target] && oneWay <= 0 {
				d.errAt(vn, o.field("value"), "link %s joins two partitions: its delay must stay positive (the parallel engine's lookahead)", target)
				good = false
			}
			ok = ok && good
		case EventFlowStart, EventFlowStop:
			if good {
				if _, exists := l.flowSet[target]; !exists {
					d.errAt(tn, o.field("target"), "undefined flow %q", target)
					good = false
				}
			}
			ok = ok && good
			if vn != nil {
				d.errAt(vn, o.field("value"), "%s takes no value", ev.Kind)
				ok = false
			}
		}
		ev.Target = target
		if ok {
			sc.Events = append(sc.Events, ev)
		}
	}
}

// sameFamily refuses a flow between an IPv4 and an IPv6 host: its packets
// have one IP header, so no RoCEv2 network carries it, and the model would
// run it without its CM exchange rather than say so. Reported once per
// place in the file (a generated block's flows share their block's).
func (l *loader) sameFamily() {
	ip := make(map[string]netip.Addr, len(l.sc.Hosts))
	for _, h := range l.sc.Hosts {
		ip[h.Name] = h.IP
	}
	said := map[*yaml.Node]bool{}
	for i, f := range l.sc.Flows {
		a, b := ip[f.Src], ip[f.Dst]
		at := l.flowPos[i]
		if !a.IsValid() || !b.IsValid() || a.Is4() == b.Is4() || said[at.n] {
			continue
		}
		said[at.n] = true
		l.d.errAt(at.n, at.field, "flow %s from %s (%v) to %s (%v) mixes IPv4 and IPv6: a flow's two hosts are of one address family", f.Name, f.Src, a, f.Dst, b)
	}
}

// linkHint helps with the most common slip: naming a link "b-a" when the
// file wrote a then b.
func (l *loader) linkHint(target string) string {
	if a, b, ok := strings.Cut(target, "-"); ok {
		if _, exists := l.links[b+"-"+a]; exists {
			return fmt.Sprintf(" (did you mean %q?)", b+"-"+a)
		}
	}
	return ""
}

// finish assigns queue pair numbers, computes routes and sorts flows and
// events. It runs only on a file without errors so far.
func (l *loader) finish() {
	d, sc := l.d, l.sc

	// Queue pairs: explicit numbers first (each must be unique on its
	// host), then the others get the smallest free numbers per host in
	// flow order.
	used := map[string]map[uint32]int{}
	take := func(host string, qp uint32, flow int) (int, bool) {
		m := used[host]
		if m == nil {
			m = map[uint32]int{}
			used[host] = m
		}
		if prev, dup := m[qp]; dup {
			return prev, false
		}
		m[qp] = flow
		return 0, true
	}
	const reservedQP = 1
	ref := 0
	for i := range sc.Flows {
		f := &sc.Flows[i]
		for _, side := range []struct {
			host string
			qp   uint32
		}{{f.Src, f.SrcQP}, {f.Dst, f.DstQP}} {
			if side.qp == 0 {
				continue
			}
			r := l.qpPos[ref]
			ref++
			if side.qp == reservedQP {
				d.errAt(r.n, r.field, "queue pair %d is reserved: it is the GSI queue pair that carries CM messages", side.qp)
				continue
			}
			if prev, ok := take(side.host, side.qp, i); !ok {
				d.errAt(r.n, r.field, "queue pair %d on %s is already used by flow %s", side.qp, side.host, sc.Flows[prev].Name)
			}
		}
	}
	// Automatic queue pair numbers start above the reserved ones: QP 0 is
	// the SMI, QP 1 the GSI that carries CM messages (IBA Vol 1, 10.2.5).
	next := map[string]uint32{}
	auto := func(host string, flow int) uint32 {
		for q := max(next[host]+1, reservedQP+1); ; q++ {
			if _, ok := take(host, q, flow); ok {
				next[host] = q
				return q
			}
		}
	}
	for i := range sc.Flows {
		f := &sc.Flows[i]
		if f.SrcQP == 0 {
			f.SrcQP = auto(f.Src, i)
		}
		if f.DstQP == 0 {
			f.DstQP = auto(f.Dst, i)
		}
	}

	l.sameFamily()
	l.routes()

	sort.SliceStable(sc.Flows, func(i, j int) bool {
		a, b := sc.Flows[i], sc.Flows[j]
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		return a.Name < b.Name
	})
	sort.SliceStable(sc.Events, func(i, j int) bool { return sc.Events[i].At < sc.Events[j].At })
}
