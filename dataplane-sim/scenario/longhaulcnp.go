package scenario

// The params of long-haul-cnp (draft-tian-ccwg-long-haul-cnp, run by
// package lhcnp on the congestion-aware switches): defaults and reader.

import (
	"time"

	"go.yaml.in/yaml/v3"
)

// DefaultLongHaulCNP are the Long-haul CNP parameters when the file sets
// none: the draft's recommendations and its §7 example where it gives a
// value, and a real node's own defaults where it does not — V_ecn and
// V_growth (§5.4 "a configured threshold", no value) are those of
// lhcnp.DefaultQueueConfig and the YANG model (v-ecn 20 %, v-growth
// 10 Gb/s), so a simulated node starts as `lhcnp switch` does. The
// package may not import lhcnp: TestParamDefaultsAreTheNodes keeps every
// value that stands for a node default equal to the node's, and says
// which differ on purpose (format, pause, flow_aging, recovery_step);
// sim's TestDefaultsAreTheNodes checks the configured nodes.
func DefaultLongHaulCNP() LongHaulCNP {
	return LongHaulCNP{
		KBase:          64 * KB,
		Alpha:          1.0,
		KMinFraction:   0.5,
		VECN:           0.2,
		VGrowth:        10 * Gbps,
		GrowthInterval: 100 * time.Microsecond,
		ReducePercent:  30,
		PauseFactor:    1.5,
		ResumePercent:  50,
		RecoveryStep:   1 * Gbps,
		FlowAging:      time.Second,
		Collaborative:  true,
		UpstreamFirst:  true,
		Format:         "rocev2",
	}
}

// longHaulParams reads the typed parameters of long-haul-cnp; unknown keys
// are errors.
func (l *loader) longHaulParams(n *yaml.Node, path string, p *LongHaulCNP) {
	if n == nil {
		return
	}
	o := l.d.object(n, path,
		"k_base", "alpha", "k_min_fraction", "rtt_est", "v_ecn", "v_growth", "growth_interval",
		"cnp_interval", "port_cnp_interval", "reduce_percent", "pause_duration", "pause_factor",
		"resume_percent", "resume_after", "recovery_interval", "recovery_step", "flow_aging",
		"collaborative", "observation_window", "format", "trigger_persistence", "upstream_first")
	if o == nil {
		return
	}
	o.setSize("k_base", &p.KBase, true)
	o.setFloat("alpha", &p.Alpha, 0, 1e6)
	o.setFloat("k_min_fraction", &p.KMinFraction, 0, 0.999999)
	o.setDuration("rtt_est", &p.RTTEst, false)
	o.setFloat("v_ecn", &p.VECN, 0, 1)
	o.setRate("v_growth", &p.VGrowth, false)
	o.setDuration("growth_interval", &p.GrowthInterval, true)
	o.setDuration("trigger_persistence", &p.TriggerPersistence, false)
	o.setDuration("cnp_interval", &p.CNPInterval, false)
	o.setDuration("port_cnp_interval", &p.PortCNPInterval, false)
	o.setInt("reduce_percent", &p.ReducePercent, 1, 100)
	o.setDuration("pause_duration", &p.PauseDuration, false)
	o.setFloat("pause_factor", &p.PauseFactor, 1, 1e6)
	o.setInt("resume_percent", &p.ResumePercent, 0, 100)
	o.setDuration("resume_after", &p.ResumeAfter, false)
	o.setDuration("recovery_interval", &p.RecoveryInterval, false)
	o.setRate("recovery_step", &p.RecoveryStep, true)
	o.setDuration("flow_aging", &p.FlowAging, true)
	o.setBool("collaborative", &p.Collaborative)
	o.setBool("upstream_first", &p.UpstreamFirst)
	o.setDuration("observation_window", &p.ObservationWindow, false)
	if fn := o.get("format"); fn != nil {
		if s, ok := l.d.scalar(fn, o.field("format")); ok {
			if s != "rocev2" && s != "icmpv6" {
				l.d.errAt(fn, o.field("format"), "unknown format %q (want rocev2 or icmpv6)", s)
			} else {
				p.Format = s
			}
		}
	}
	if p.PauseDuration > 0 && p.PauseDuration%time.Microsecond != 0 {
		l.d.errAt(o.get("pause_duration"), o.field("pause_duration"), "must be whole microseconds (the Parameter field counts µs)")
	}
}
