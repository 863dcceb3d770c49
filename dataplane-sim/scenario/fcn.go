package scenario

// The params of fcn (FCN over WAN tunnels, run by package fcn on the
// ingress and transit PEs): defaults and reader.

import (
	"fmt"
	"strings"
	"time"
)

// DefaultFCN returns the fcn defaults (fcn.DefaultConfig,
// TestParamDefaultsAreTheNodes; the ingress PE is the block's first node
// unless ingress says otherwise).
func DefaultFCN() FCN {
	return FCN{KMax: 100 * KB, CNPInterval: 50 * time.Microsecond, Aging: 60 * time.Second, MaxMappings: 65536}
}

func init() { RegisterMechanism(MechanismSpec{Kind: MechanismFCN, Params: fcnParams}) }

// fcnParams reads the typed parameters of fcn; ingress must name nodes of
// the block.
func fcnParams(b ParamsBlock) any {
	p := DefaultFCN()
	nodes := b.Nodes()
	if len(nodes) > 0 {
		p.Ingress = []string{nodes[0]}
	}
	if !b.Keys("ingress", "k_max", "cnp_interval", "aging", "max_mappings") {
		return p
	}
	b.Size("k_max", &p.KMax, true)
	b.Duration("cnp_interval", &p.CNPInterval, true)
	b.Duration("aging", &p.Aging, true)
	b.Int("max_mappings", &p.MaxMappings, 1, 1<<20-1)
	if b.Has("ingress") {
		var items int
		p.Ingress, items = b.Strings("ingress", func(name string) error {
			if !contains(nodes, name) {
				return fmt.Errorf("%s is not one of the block's nodes (%s)", name, strings.Join(nodes, ", "))
			}
			return nil
		})
		if items == 0 {
			b.Errorf("ingress", "no ingress PE")
		}
	}
	return p
}
