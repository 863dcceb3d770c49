package scenario

// The params of fast-cnp (draft-xiao-rtgwg-rocev2-fast-cnp, run by package
// fastcnp on the congestion-aware switches and the RNICs): defaults and
// reader.

import (
	"time"

	"go.yaml.in/yaml/v3"
)

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

// fastCNPParams reads the typed parameters of fast-cnp.
func (l *loader) fastCNPParams(n *yaml.Node, path string, p *FastCNP) {
	if n == nil {
		return
	}
	o := l.d.object(n, path, "k_max", "k_min", "p_max", "cnp_interval", "port_cnp_rate", "port_cnp_burst",
		"max_flows", "ioam", "capable_senders", "mark_unknown", "rnic", "dscp", "flow_aging")
	if o == nil {
		return
	}
	o.setSize("k_max", &p.KMax, true)
	o.setSize("k_min", &p.KMin, false)
	o.setFloat("p_max", &p.PMax, 0, 1)
	o.setDuration("cnp_interval", &p.CNPInterval, true)
	o.setInt("port_cnp_rate", &p.PortCNPRate, 1, 1e9)
	o.setInt("port_cnp_burst", &p.PortCNPBurst, 1, 1e6)
	o.setInt("max_flows", &p.MaxFlows, 1, 1024)
	o.setBool("ioam", &p.IOAM)
	o.setBool("mark_unknown", &p.MarkUnknown)
	o.setBool("rnic", &p.RNIC)
	o.setInt("dscp", &p.DSCP, 0, 63)
	o.setDuration("flow_aging", &p.FlowAging, true)
	if cn := o.get("capable_senders"); cn != nil {
		if s, ok := l.d.scalar(cn, o.field("capable_senders")); ok {
			if s != "all" && s != "none" {
				l.d.errAt(cn, o.field("capable_senders"), "unknown value %q (want all or none)", s)
			} else {
				p.CapableSenders = s
			}
		}
	}
	if p.KMin >= p.KMax {
		at, field := o.get("k_min"), o.field("k_min")
		if at == nil {
			at, field = o.get("k_max"), o.field("k_max")
		}
		l.d.errAt(at, field, "k_min %v must be below k_max %v", p.KMin, p.KMax)
	}
}
