package dataplane_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/gnmi/service"
)

// failingPersister is a startup file whose write fails while fail is set.
type failingPersister struct{ fail bool }

func (p *failingPersister) Persist(context.Context, []byte) error {
	if p.fail {
		return errors.New("disk full")
	}
	return nil
}

// TestUnkeptSetChangesNothing: a Set the dataplane accepted whose startup
// configuration cannot be written fails (INTERNAL) and changes nothing
// anyone can observe, as a Set the dataplane refuses
// (TestFailedSetChangesNothing): the switch is set back at the instant it
// was set, no RTT_est update counted, no timer re-armed, and a role
// created by the Set (FCN's ingress PE: the switch's local handler and
// rewrite stage, its aging timer) undone. Every configuration of
// failedSetPool fails in turn on a switch that has run only the first,
// each creating its mechanisms for the first time; then seeded random
// sequences of them, some failing, go to one switch and the same without
// the failing ones to another, compared as there (observe).
func TestUnkeptSetChangesNothing(t *testing.T) {
	unkept := func(t *testing.T, r *rig, p *failingPersister, c struct{ desc, cfg string }) {
		t.Helper()
		p.fail = true
		err := r.setIETF("/lhcnp", c.cfg, true)
		p.fail = false
		if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "startup configuration: disk full") {
			t.Fatalf("%s with the startup file failing: %v, want INTERNAL naming the startup configuration", c.desc, err)
		}
	}
	t.Run("each first", func(t *testing.T) {
		p := &failingPersister{}
		every, good, compare := twinRigs(t, service.WithPersister(p))
		var history []string
		for i, c := range failedSetPool {
			unkept(t, every, p, c)
			history = append(history, c.desc+" not kept")
			if !compareRun(t, every, good, compare, history, "", "the Set", engine.Time(i+1)*engine.Millisecond) {
				return
			}
		}
	})
	const steps = 10
	forSeeds(t, 12, 0xf11e, func(t *testing.T, rng *rand.Rand) {
		p := &failingPersister{}
		every, good, compare := twinRigs(t, service.WithPersister(p))
		var history []string
		for step := range steps {
			c := failedSetPool[rng.IntN(len(failedSetPool))]
			if rng.IntN(3) == 0 {
				unkept(t, every, p, c)
				history = append(history, c.desc+" not kept")
			} else {
				for _, r := range []*rig{every, good} {
					if err := r.setIETF("/lhcnp", c.cfg, true); err != nil {
						t.Fatalf("step %d: %s: %v", step, c.desc, err)
					}
				}
				history = append(history, c.desc)
			}
			if !compareRun(t, every, good, compare, history, fmt.Sprintf("step %d, ", step), "the Set", engine.Time(step+1)*engine.Millisecond) {
				return
			}
		}
	})
}
