package lhcnp

import (
	"errors"
	"strings"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestValidate checks that each broken field is named in the error.
func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		desc, field string
		edit        func(c *Config)
	}{
		{"no format", "formats", func(c *Config) { c.Enabled, c.FormatICMPv6, c.FormatRoCEv2 = true, false, false }},
		{"k_min above explicit k_max", "interface.queue.k-min-bytes", func(c *Config) {
			q := &c.Interface.Queue
			q.KMaxMode, q.KMaxBytes, q.KMinMode, q.KMinBytes = KMaxExplicit, 1000, KMinExplicit, 1000
		}},
		// A BDP K_max is at least K_base, so an explicit K_min at K_base
		// could reach it (§5.3.2: K_min less than K_max).
		{"k_min at k_base with a bdp k_max", "interface.queue.k-min-bytes", func(c *Config) {
			q := &c.Interface.Queue
			q.KMinMode, q.KMinBytes = KMinExplicit, q.KBaseBytes
		}},
		{"no port limit", "interface.cnp-rate-per-sec", func(c *Config) { c.Interface.CNPRatePerSec = 0 }},
		{"pause too long", "interface.queue.action.pause-duration", func(c *Config) { c.Interface.Queue.Action.PauseDuration = 70 * engine.Millisecond }},
		{"resume as default action", "interface.queue.action.default-action", func(c *Config) { c.Interface.Queue.Action.DefaultAction = wire.ActionResume }},
		{"resume as escalation", "collaborative.escalation-action", func(c *Config) { c.Collaborative.EscalationAction = wire.ActionResume }},
		{"per-port queue override", "interfaces[n1:1].queues[3].alpha", func(c *Config) {
			ic := DefaultInterfaceConfig()
			q := DefaultQueueConfig()
			q.Alpha = 0
			ic.Queues = map[uint8]QueueConfig{3: q}
			c.Interfaces = map[string]InterfaceConfig{"n1:1": ic}
		}},
		{"flow table size", "flow-table.max-entries", func(c *Config) { c.FlowTable.MaxEntries = 0 }},
		{"drop threshold", "collaborative.arrival-rate-drop-percent", func(c *Config) { c.Collaborative.ArrivalRateDropPercent = 0 }},
		{"cnp priority", "cnp-prio", func(c *Config) { c.CNPPrio = 8 }},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			c := DefaultConfig()
			tt.edit(&c)
			err := c.Validate()
			if err == nil || !errors.Is(err, ErrConfig) || !strings.HasPrefix(err.Error(), tt.field+":") {
				t.Errorf("error %v, want one naming %s", err, tt.field)
			}
		})
	}
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Errorf("default config: %v", err)
	}
}

// TestApplyConfigAtomic checks that an invalid configuration changes
// nothing and a valid one is applied with K_max recomputed.
func TestApplyConfigAtomic(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Enabled, cfg.FormatRoCEv2 = true, true
	l := newLine(t, lineOpts{srcRate: 100e9, cfg1: &cfg, noRP: true})
	kmax := func() int64 { return l.node1.State(false).Ports[l.n1Out.Index()].Queues[0].KMaxBytes }
	before := kmax()
	bad := cfg
	bad.Interface.RTTEst = 10 * engine.Millisecond
	bad.FlowTable.MaxEntries = -1
	if err := l.node1.ApplyConfig(bad); err == nil {
		t.Fatal("invalid config accepted")
	}
	if kmax() != before || l.node1.Config().Interface.RTTEst != engine.Millisecond {
		t.Errorf("a rejected config changed the node")
	}
	good := cfg
	good.Interface.RTTEst = 10 * engine.Millisecond
	if err := l.node1.ApplyConfig(good); err != nil {
		t.Fatal(err)
	}
	if kmax() != 125_000_000 || l.n1Out.Config().ECN[0].KMaxBytes != 125_000_000 {
		t.Errorf("K_max %d after rtt 10 ms, want 125 MB", kmax())
	}
	// §5.8: K_min, K_max, V_ecn, V_growth and the per-flow interval
	// adjusted at run time take effect at once.
	tuned := good
	tq := &tuned.Interface.Queue
	tq.KMaxMode, tq.KMaxBytes, tq.KMinMode, tq.KMinBytes = KMaxExplicit, 3_000_000, KMinExplicit, 1_000_000
	tq.VECNPercent, tq.VGrowthBytesPerSec, tq.MinCNPInterval = 35, 40_000_000, 3*engine.Millisecond
	if err := l.node1.ApplyConfig(tuned); err != nil {
		t.Fatal(err)
	}
	qs := l.node1.State(false).Ports[l.n1Out.Index()].Queues[0]
	qc := l.node1.portOf(l.n1Out).queues[0].cfg
	if qs.KMaxBytes != 3_000_000 || qs.KMinBytes != 1_000_000 || qs.MinCNPInterval != 3*engine.Millisecond ||
		qc.VECNPercent != 35 || qc.VGrowthBytesPerSec != 40_000_000 {
		t.Errorf("after a run-time change: K_max %d K_min %d interval %v V_ecn %v V_growth %d, want 3 MB, 1 MB, 3ms, 35, 40 MB/s",
			qs.KMaxBytes, qs.KMinBytes, qs.MinCNPInterval, qc.VECNPercent, qc.VGrowthBytesPerSec)
	}
	// Disabling restores the port's own marking.
	off := good
	off.Enabled = false
	if err := l.node1.ApplyConfig(off); err != nil {
		t.Fatal(err)
	}
	if l.n1Out.Config().ECN[0].Enabled {
		t.Error("disabled node left ECN marking programmed")
	}
}

// TestDeterminism runs the same congested line twice.
func TestDeterminism(t *testing.T) {
	run := func() []Event {
		cfg := testConfig(200_000, 400*engine.Microsecond)
		l := newLine(t, lineOpts{srcRate: 10e9, midRate: 5e9, dcqcn: true, cfg1: &cfg})
		l.sim.Run(3 * engine.Millisecond)
		return l.events1
	}
	a, b := run(), run()
	if len(a) < 3 || len(a) != len(b) {
		t.Fatalf("%d and %d events", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("event %d differs: %+v vs %+v", i, a[i], b[i])
		}
	}
}
