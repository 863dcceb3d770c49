package scenario

// The params of fast-cnp (draft-xiao-rtgwg-rocev2-fast-cnp, run by package
// fastcnp on the congestion-aware switches and the RNICs): defaults and
// reader.

import "time"

// DefaultFastCNP returns the fast-cnp defaults (docs/scenarios.md): the
// package's (fastcnp.DefaultConfig, TestParamDefaultsAreTheNodes) but a
// flow_aging of 1 s, on, every RNIC processing Fast CNP and known to the
// nodes as capable.
func DefaultFastCNP() FastCNP {
	return FastCNP{
		KMax: 100 * KB, PMax: 0.2, CNPInterval: 50 * time.Microsecond, PortCNPRate: 1_000_000, PortCNPBurst: 100,
		MaxFlows: 4, CapableSenders: "all", MarkUnknown: true, RNIC: true, DSCP: 48, FlowAging: time.Second,
	}
}

func init() { RegisterMechanism(MechanismSpec{Kind: MechanismFastCNP, Params: fastCNPParams}) }

// fastCNPParams reads the typed parameters of fast-cnp.
func fastCNPParams(b ParamsBlock) any {
	p := DefaultFastCNP()
	if !b.Keys("k_max", "k_min", "p_max", "cnp_interval", "port_cnp_rate", "port_cnp_burst",
		"max_flows", "ioam", "capable_senders", "mark_unknown", "rnic", "dscp", "flow_aging") {
		return p
	}
	b.Size("k_max", &p.KMax, true)
	b.Size("k_min", &p.KMin, false)
	b.Float("p_max", &p.PMax, 0, 1)
	b.Duration("cnp_interval", &p.CNPInterval, true)
	b.Int("port_cnp_rate", &p.PortCNPRate, 1, 1e9)
	b.Int("port_cnp_burst", &p.PortCNPBurst, 1, 1e6)
	b.Int("max_flows", &p.MaxFlows, 1, 1024)
	b.Bool("ioam", &p.IOAM)
	b.Bool("mark_unknown", &p.MarkUnknown)
	b.Bool("rnic", &p.RNIC)
	b.Int("dscp", &p.DSCP, 0, 63)
	b.Duration("flow_aging", &p.FlowAging, true)
	b.OneOf("capable_senders", &p.CapableSenders, "value", "all", "none")
	if p.KMin >= p.KMax {
		key := "k_min"
		if !b.Has(key) {
			key = "k_max"
		}
		b.Errorf(key, "k_min %v must be below k_max %v", p.KMin, p.KMax)
	}
	return p
}
