package dataplane_test

import (
	"testing"

	"github.com/lhcnp/lhcnp/collector/dbschema"
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// TestLearnFailuresArePackets: the flow table's learn-failures counts
// packets, as its units say: every packet of a flow the full table did not
// learn (the table keeps no memory of the flows it turned away, so it
// could not count each once). Here a table of one entry that replaces
// nothing turns the second flow away hundreds of times, once per packet.
func TestLearnFailuresArePackets(t *testing.T) {
	const path = "/lhcnp/flow-table/state/counters/learn-failures"
	c, err := dbschema.New()
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := c.Lookup(path); !ok || l.Unit != "packets" {
		t.Errorf("%s: units %q (found %v), want packets", path, l.Unit, ok)
	}
	r := newRig(t)
	if err := r.setIETF("/lhcnp/flow-table/config", `{"max-entries": 1, "replacement-policy": "NO_REPLACE"}`, false); err != nil {
		t.Fatalf("a table of one entry: %v", err)
	}
	// The flows' CM exchanges take the WAN's 2 ms round trip.
	r.run(t, 4*engine.Millisecond)
	if got, entries := r.uint(t, path), r.uint(t, "/lhcnp/flow-table/state/entries"); entries != 1 || got < 100 {
		t.Errorf("%s = %d with %d entries, want one entry and a failure per packet of the other flow (>= 100)", path, got, entries)
	}
}
