package scenario

// The params of fcn (FCN over WAN tunnels, run by package fcn on the
// ingress and transit PEs): defaults and reader.

import (
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// DefaultFCN returns the fcn defaults (fcn.DefaultConfig,
// TestParamDefaultsAreTheNodes; the ingress PE is the block's first node
// unless ingress says otherwise).
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
