package dataplane

import (
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/gen/oc"
)

// TestIdleStates: every registered mechanism has a state for before its
// function exists, so its configuration is echoed from the first Set.
func TestIdleStates(t *testing.T) {
	ports, err := NewPorts([][2]string{{"wan", "n1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	lc := lhcnp.DefaultConfig()
	for _, k := range kinds() {
		cfg, _, err := k.translate(nil, &lc, ports)
		if err != nil {
			t.Fatalf("%s: %v", k.name, err)
		}
		if k.idle == nil {
			t.Errorf("%s: no idle state", k.name)
			continue
		}
		// Its state writer takes it with the configuration.
		k.state(&oc.Root{}, k.idle, cfg, stateEnv{ports: ports, wallNS: func(engine.Time) uint64 { return 0 }})
	}
}
