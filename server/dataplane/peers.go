package dataplane

import (
	"net/netip"
	"slices"
)

// prefixes parses a leaf-list of lhcnp-t:ip-prefix values (the YANG pattern
// has checked their form) into masked prefixes, sorted and without
// duplicates so that the same set always makes the same node
// configuration. A value the pattern let through but netip refuses is an
// error naming the leaf-list and the value.
func prefixes(path string, vals []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(vals))
	for _, v := range vals {
		p, err := netip.ParsePrefix(v)
		if err != nil {
			return nil, invalid(path, "%q: %v", v, err)
		}
		out = append(out, p.Masked())
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return slices.Compact(out), nil
}
