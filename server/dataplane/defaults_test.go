package dataplane

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/openconfig/ygot/ygot"

	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
	"github.com/lhcnp/lhcnp/gen/oc"
)

// TestYANGDefaultsAreTheNodes: the YANG model's defaults and the node's
// (lhcnp.DefaultConfig) are checked equal here, not kept equal by hand. A
// tree holding every container of the model, one interface and one queue,
// filled with the YANG defaults (PopulateDefaults, as a client that sends
// the defaults explicitly), translates to the node's defaults: every leaf
// that has a YANG default and a field in the node's configuration has the
// same default in both. The one declared difference is metric-type
// (ToConfig).
func TestYANGDefaultsAreTheNodes(t *testing.T) {
	root := &oc.Root{}
	ygot.BuildEmptyTree(root)
	i := root.GetOrCreateLhcnp().GetOrCreateInterfaces().GetOrCreateInterface("wan0")
	ygot.BuildEmptyTree(i)
	ygot.BuildEmptyTree(i.GetOrCreateQueues().GetOrCreateQueue(0))
	root.PopulateDefaults()
	ports, err := NewPorts([][2]string{{"wan0", "n1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ToConfig(root.GetLhcnp(), ports)
	if err != nil {
		t.Fatalf("ToConfig of the YANG defaults: %v", err)
	}

	want := lhcnp.DefaultConfig()
	// The model reports the queue depth by default, the node the metric of
	// the trigger that fired (ToConfig).
	want.MetricType = wire.MetricQueueDepth
	ic := lhcnp.DefaultInterfaceConfig()
	ic.Queues = map[uint8]lhcnp.QueueConfig{0: lhcnp.DefaultQueueConfig()}
	want.Interfaces = map[string]lhcnp.InterfaceConfig{"n1:0": ic}
	if diff := cmp.Diff(want, got, cmpopts.EquateComparable(netip.Addr{}, netip.Prefix{})); diff != "" {
		t.Errorf("the YANG defaults translated (+) differ from the node's defaults (-):\n%s", diff)
	}
}

// TestQueueDefaultsAreTheDrafts: a queue configured with nothing, and one
// with the YANG defaults, run the draft's values: trigger persistence 0
// (§5.4: generate when a condition is satisfied) and K_base 64KB = 64000
// bytes (§7; KB = 1000 bytes).
func TestQueueDefaultsAreTheDrafts(t *testing.T) {
	root := &oc.Root{}
	q := root.GetOrCreateLhcnp().GetOrCreateInterfaces().GetOrCreateInterface("wan0").
		GetOrCreateQueues().GetOrCreateQueue(0)
	q.GetOrCreateConfig()
	q.GetOrCreateActionPolicy().GetOrCreateConfig()
	root.PopulateDefaults()
	fromYANG := queueConfig(q)
	unset := queueConfig(&oc.Lhcnp_Lhcnp_Interfaces_Interface_Queues_Queue{})
	node := lhcnp.DefaultQueueConfig()
	type key struct {
		TriggerPersistence int64
		KBaseBytes         int64
	}
	pick := func(c lhcnp.QueueConfig) key { return key{int64(c.TriggerPersistence), c.KBaseBytes} }
	want := key{0, 64_000}
	for _, tt := range []struct {
		desc string
		got  lhcnp.QueueConfig
	}{
		{"yang defaults", fromYANG}, {"nothing set", unset}, {"node defaults", node},
	} {
		if diff := cmp.Diff(want, pick(tt.got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.desc, diff)
		}
	}
}
