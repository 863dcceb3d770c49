package dataplane_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// touchedLeaves are leaves a Set changes and the next sets back, each
// with the value it sets: a leaf of a mechanism the configuration leaves
// off, or one the running mechanisms read only when something happens
// (the Long-haul CNP node's K_max, read as packets are enqueued and
// ignored but in its explicit mode; the interval between two
// notifications; the device identifier they carry), so that changing it
// and setting it back at one instant changes nothing (nor does a Set
// refused as a whole). A leaf is not touched once a configuration that
// contains unless was applied: Rate Advice's function, once created,
// sweeps its flows at min-advice-interval whether on or off, and a new
// period re-arms the sweep.
var touchedLeaves = []struct{ path, val, unless string }{
	{path: "/lhcnp/fast-cnp/config/min-cnp-interval", val: "250"},
	{path: "/lhcnp/rate-advice/config/min-advice-interval", val: "250", unless: `"rate-advice-enabled": true`},
	{path: "/lhcnp/switch-cnp/config/min-cnp-interval", val: "250"},
	{path: "/lhcnp/fcn/config/min-cnp-interval", val: "250"},
	{path: q0 + "/config/kmax", val: `"30000000"`},
	{path: "/lhcnp/global/config/device-identifier", val: `"touched"`},
}

// TestNoOpSetChangesNothing: a Set that changes nothing that runs changes
// nothing anyone can observe. Seeded random sequences of the
// configurations of failedSetPool go to two switches built alike; one of
// them also gets, halfway through each millisecond of simulation, a Set
// that re-applies the configuration it runs, or a Set that changes one
// of touchedLeaves and one that sets it back. After each Set and each
// half millisecond the two must be the same, as in
// TestFailedSetChangesNothing: the state tree (every leaf, counters and
// timestamps included), the engine's clock and events pending, every
// host's counters and QPs, every switch port's counters and what the
// served switch's ports report to and its forwarders are.
func TestNoOpSetChangesNothing(t *testing.T) {
	const steps = 10
	forSeeds(t, 12, 0x0b, func(t *testing.T, rng *rand.Rand) {
		every, good, compare := twinRigs(t)
		var history, applied []string
		for step := range steps {
			c := failedSetPool[rng.IntN(len(failedSetPool))]
			for _, r := range []*rig{every, good} {
				if err := r.setIETF("/lhcnp", c.cfg, true); err != nil {
					t.Fatalf("step %d: %s: %v", step, c.desc, err)
				}
			}
			history = append(history, c.desc)
			half := engine.Time(step)*engine.Millisecond + engine.Millisecond/2
			if !compareRun(t, every, good, compare, history, fmt.Sprintf("step %d, ", step), "the Set", half) {
				return
			}
			applied = append(applied, c.cfg)
			k := rng.IntN(len(touchedLeaves) + 2)
			if k < len(touchedLeaves) && touchedLeaves[k].unless != "" && slices.ContainsFunc(applied, func(cfg string) bool {
				return strings.Contains(cfg, touchedLeaves[k].unless)
			}) {
				k = len(touchedLeaves) // read: re-apply instead
			}
			switch {
			case k < len(touchedLeaves):
				l := touchedLeaves[k]
				err := every.setIETF(l.path, l.val, false)
				if err := every.setIETF("/lhcnp", c.cfg, true); err != nil {
					t.Fatalf("step %d: %s set back: %v", step, c.desc, err)
				}
				what := "touching " + l.path + " and setting it back"
				if err != nil {
					what = "touching " + l.path + " (refused)"
				}
				history = append(history, what)
			default:
				if err := every.setIETF("/lhcnp", c.cfg, true); err != nil {
					t.Fatalf("step %d: %s again: %v", step, c.desc, err)
				}
				history = append(history, c.desc+" again")
			}
			if !compareRun(t, every, good, compare, history, fmt.Sprintf("step %d, ", step), "the no-op Set", engine.Time(step+1)*engine.Millisecond) {
				return
			}
		}
	})
}
