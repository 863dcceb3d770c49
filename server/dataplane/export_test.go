package dataplane

import (
	"errors"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/mechanism"
	"github.com/lhcnp/lhcnp/gen/oc"
)

// RegisterUncreatable registers, until the test ends, a mechanism beside
// the node named name, configured on when on says so, whose function
// cannot be created: a Set that turns it on fails once the mechanisms
// before it are set.
func RegisterUncreatable(t testing.TB, name string, on func(*oc.Lhcnp_Lhcnp) bool) {
	register(mechanismKind{
		name:   name,
		beside: true,
		translate: func(l *oc.Lhcnp_Lhcnp, _ *lhcnp.Config, _ *Ports) (any, bool, error) {
			return struct{}{}, on(l), nil
		},
		off: func(cfg any) any { return cfg },
		create: func(*lhcnp.Node, any) (mechanism.Function, error) {
			return nil, errors.New(name + ": cannot be created")
		},
		state: func(*oc.Root, any, any, stateEnv) {},
		idle:  struct{}{},
	})
	t.Cleanup(func() { delete(registry, name) })
}

// Unregister removes a mechanism RegisterUncreatable registered, before
// the test ends.
func Unregister(name string) { delete(registry, name) }
