// Package policy is the tuner's algorithm: from a window of one egress
// queue's telemetry and its current configuration it decides a new K_max
// (through alpha, or an explicit K_max) and V_growth, or no change, and
// says why (draft-tian-ccwg-long-haul-cnp-00 §5.8 leaves the algorithm to
// the implementation; docs/tuner.md describes this one and its objective).
//
// The package is pure: no I/O, no clock, no state between calls. The time
// of a decision is the end of its window, and what the policy must
// remember about a queue between decisions (the last change, its
// direction, the current step) is a Memory value the caller passes in and
// stores back. The same window, memory and configuration always give the
// same decision, so the tuner service (tuner/) and the simulator's closed
// loop (dataplane-sim/sim) run exactly the same controller.
//
// It must not depend on gNMI, YANG-generated code, the database or the
// simulator's engine; its bounds are plain numbers that Config.Validate
// checks against the YANG model's ranges, written down here as constants
// (a test reads them from the model). The node's own formulas it takes
// from the node (dataplane-sim/lhcnp: K_max), so that the policy cannot
// reason with a K_max the switch does not compute.
package policy
