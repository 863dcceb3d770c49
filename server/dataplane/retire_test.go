package dataplane_test

import (
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/server/dataplane"
)

// TestRetiredFlowStopAndEvents: when the network retires finished flows
// (the lab's traffic does), a flow's stop and its flow-stop and
// flow-start events that come after it was retired find no queue pair
// (Flow.Sender is nil) and do nothing: the built network checks
// Flow.Retired before it stops or starts a sender.
func TestRetiredFlowStopAndEvents(t *testing.T) {
	sc, err := scenario.LoadFile("testdata/retired.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sw, err := dataplane.Build(sc, "n1", dataplane.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sw.Net.RetireFinished(5 * engine.Millisecond); err != nil {
		t.Fatal(err)
	}
	sw.Sim.Run(90 * engine.Millisecond)
	f := sw.Net.Flows()[0]
	done, at := f.Done()
	if !f.Retired() || !done || at > 60*engine.Millisecond {
		t.Errorf("flow %s: retired %v, done %v at %v; want it done and retired before its stop at 60ms", f.Name, f.Retired(), done, at)
	}
}
