// Package family draws seeded scenarios from a family spec: documented
// ranges of link rate, WAN round trip, congestion point, overload, steps
// and background traffic (docs/tuner.md, "A family of scenarios"). A
// family names two disjoint seed sets, train (the seeds a policy may be
// developed on) and test (held out: the bars are reported on them).
// `lhcnp sim generate` writes the scenarios; `lhcnp sim eval` (make
// tuner-eval) runs them with the tuner and the static grid.
package family
