package scenario

// The params of long-haul-cnp (draft-tian-ccwg-long-haul-cnp, run by
// package lhcnp on the congestion-aware switches): defaults and reader.

import "time"

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
		PauseFactor:    MaxPauseFactor,
		ResumePercent:  50,
		RecoveryStep:   1 * Gbps,
		FlowAging:      time.Second,
		Collaborative:  true,
		UpstreamFirst:  true,
		Format:         "rocev2",
	}
}

// MaxPauseFactor is the deepest queue, in K_max, that pause_factor can
// name: the node pauses from a congestion level (lhcnp.LevelAtKMaxFactor),
// 170 at K_max and capped at 255 from 4/3 K_max on, so every factor above
// 4/3 paused at 4/3 K_max, whatever it said. A larger factor is an error,
// and the default is this one (the former default 1.5 paused there too).
const MaxPauseFactor = 4.0 / 3

func init() { RegisterMechanism(MechanismSpec{Kind: MechanismLongHaulCNP, Params: longHaulParams}) }

// longHaulParams reads the typed parameters of long-haul-cnp; unknown keys
// are errors.
func longHaulParams(b ParamsBlock) any {
	p := DefaultLongHaulCNP()
	if !b.Keys("k_base", "alpha", "k_min_fraction", "rtt_est", "v_ecn", "v_growth", "growth_interval",
		"cnp_interval", "port_cnp_interval", "reduce_percent", "pause_duration", "pause_factor",
		"resume_percent", "resume_after", "recovery_interval", "recovery_step", "recovery_step_percent", "flow_aging",
		"collaborative", "observation_window", "format", "trigger_persistence", "upstream_first",
		"one_cut_per_episode", "per_flow_rtt", "repeat_resume", "resume_on_drain",
		"overload_cut", "equal_cut", "one_cut_in_flight", "upstream_first_marked", "overload_cut_growth") {
		return p
	}
	b.Size("k_base", &p.KBase, true)
	b.Float("alpha", &p.Alpha, 0, 1e6)
	b.Float("k_min_fraction", &p.KMinFraction, 0, 0.999999)
	b.Duration("rtt_est", &p.RTTEst, false)
	b.Float("v_ecn", &p.VECN, 0, 1)
	b.Rate("v_growth", &p.VGrowth, false)
	b.Duration("growth_interval", &p.GrowthInterval, true)
	b.Duration("trigger_persistence", &p.TriggerPersistence, false)
	b.Duration("cnp_interval", &p.CNPInterval, false)
	b.Duration("port_cnp_interval", &p.PortCNPInterval, false)
	b.Int("reduce_percent", &p.ReducePercent, 1, 100)
	b.Duration("pause_duration", &p.PauseDuration, false)
	b.Float("pause_factor", &p.PauseFactor, 1, 1e6)
	if p.PauseFactor > MaxPauseFactor {
		b.Errorf("pause_factor", "%g above 4/3: the node's congestion level is capped at 255 from 4/3 K_max on, "+
			"so a Pause cannot wait for a deeper queue (use 1..4/3)", p.PauseFactor)
	}
	b.Int("resume_percent", &p.ResumePercent, 0, 100)
	b.Duration("resume_after", &p.ResumeAfter, false)
	b.Duration("recovery_interval", &p.RecoveryInterval, false)
	b.Rate("recovery_step", &p.RecoveryStep, true)
	b.Int("recovery_step_percent", &p.RecoveryStepPercent, 0, 100)
	if p.RecoveryStepPercent > 0 && b.Has("recovery_step") {
		b.Errorf("recovery_step_percent", "with recovery_step: a source's recovery step is either a rate (recovery_step) or a share of its normal rate (recovery_step_percent), not both")
	}
	b.Duration("flow_aging", &p.FlowAging, true)
	b.Bool("collaborative", &p.Collaborative)
	b.Bool("upstream_first", &p.UpstreamFirst)
	b.Bool("upstream_first_marked", &p.UpstreamFirstMarked)
	b.Bool("one_cut_per_episode", &p.OneCutPerEpisode)
	b.Bool("per_flow_rtt", &p.PerFlowRTT)
	b.Bool("repeat_resume", &p.RepeatResume)
	b.Bool("resume_on_drain", &p.ResumeOnDrain)
	b.Bool("overload_cut", &p.OverloadCut)
	b.Bool("overload_cut_growth", &p.OverloadCutGrowth)
	b.Bool("equal_cut", &p.EqualCut)
	b.Bool("one_cut_in_flight", &p.OneCutInFlight)
	b.Duration("observation_window", &p.ObservationWindow, false)
	b.OneOf("format", &p.Format, "format", "rocev2", "icmpv6")
	if p.ResumeOnDrain && (!p.PerFlowRTT || !p.RepeatResume) {
		b.Errorf("resume_on_drain", "needs per_flow_rtt and repeat_resume (its Resumes are sized to the port's spare rate by them)")
	}
	if p.OverloadCutGrowth && !p.OverloadCut {
		b.Errorf("overload_cut_growth", "needs overload_cut (it sizes the growth trigger's cut as that option sizes a severe queue's)")
	}
	if p.UpstreamFirstMarked && !p.UpstreamFirst {
		b.Errorf("upstream_first_marked", "needs upstream_first (it narrows that wait to the flows that arrive CE-marked)")
	}
	if p.OneCutInFlight && !p.OneCutPerEpisode {
		b.Errorf("one_cut_in_flight", "needs one_cut_per_episode (it narrows that option's sparing of a flow's marks to its cut on its way)")
	}
	if p.EqualCut && !p.PerFlowRTT {
		b.Errorf("equal_cut", "needs per_flow_rtt (it shares the cuts per_flow_rtt sizes for a flow's loop)")
	}
	if p.PauseDuration > 0 && p.PauseDuration%time.Microsecond != 0 {
		b.Errorf("pause_duration", "must be whole microseconds (the Parameter field counts µs)")
	}
	return p
}
