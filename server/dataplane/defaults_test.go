package dataplane

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/gen/oc"
)

// TestQueueDefaultsAreTheDrafts: a queue configured with nothing but the
// YANG defaults (PopulateDefaults, as a client that sends the defaults
// explicitly) runs the node's defaults, which are the draft's: trigger
// persistence 0 (§5.4: generate when a condition is satisfied) and K_base
// 64KB = 64000 bytes (§7; KB = 1000 bytes).
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
