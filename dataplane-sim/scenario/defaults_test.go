package scenario

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/fastcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/fcn"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/rateadvice"
	"github.com/lhcnp/lhcnp/dataplane-sim/switchcnp"
)

// TestParamDefaultsAreTheNodes: every default of a mechanism's params that
// stands for a default of the mechanism's node (k_base for K_base,
// cnp_interval for MinCNPInterval, ...) equals the node's, read in the
// node's units (v_growth is bits per second of growth, the node's
// threshold bytes per second; v_ecn a fraction, the node's a percent;
// durations time.Duration, the node's simulated time). The package may
// not import the network models (package doc), so the values are written
// here and in the nodes, and this test keeps them equal.
//
// Params left out differ on purpose, or have no node default:
//   - long-haul-cnp: format rocev2 (the node sends no format until told);
//     pause_duration 0 (a scenario never Pauses unless it says so; the
//     node's Pause is at level 224 for 1 ms) and pause_factor; flow_aging
//     1 s (the scenarios' value since the first ones, which the results
//     depend on; the node's 60 s is the YANG default of a switch);
//     port_cnp_interval 0 (keeps the node's bucket); recovery_step 1 Gb/s
//     (the node's reaction point steps by a percentage of the normal
//     rate); rtt_est, recovery_interval (derived per port and source).
//   - fast-cnp and switch-cnp: flow_aging 1 s, as above; capable_senders,
//     rnic, ioam: the hosts and the variant, no node default.
//   - rate-advice: capable (the RNICs), policy_rate 0 (no policy).
func TestParamDefaultsAreTheNodes(t *testing.T) {
	type longHaul struct {
		KBaseBytes          int64
		Alpha               float64
		KMinIsHalfKMax      bool
		VECNPercent         float64
		VGrowthBytesPerSec  int64
		MeasurementInterval time.Duration
		TriggerPersistence  time.Duration
		MinCNPInterval      time.Duration
		RateReducePercent   int
		ResumePercent       int
		ResumeHold          time.Duration
		Collaborative       bool
		ObservationWindow   time.Duration
		UpstreamFirst       bool
		UpstreamFirstMarked bool
	}
	lc := lhcnp.DefaultConfig()
	q := lc.Interface.Queue
	lp := DefaultLongHaulCNP()

	type fastCNP struct {
		KMaxBytes, KMinBytes int64
		PMax                 float64
		MinCNPInterval       time.Duration
		PortCNPRatePerSec    int64
		PortCNPBurst         int64
		MaxFlowsPerTrigger   int
		MarkUnknown          bool
		CNPDSCP              int
	}
	fc, fp := fastcnp.DefaultConfig(), DefaultFastCNP()

	type fcnParams struct {
		KMaxBytes      int64
		MinCNPInterval time.Duration
		AgingTimeout   time.Duration
		MaxMappings    int
	}
	nc, np := fcn.DefaultConfig(), DefaultFCN()

	type switchCNP struct {
		DSCP               int
		DelayThreshold     time.Duration
		BufferSharePercent int
		MinCNPInterval     time.Duration
		MaxEntries         int
	}
	sc, sp := switchcnp.DefaultConfig(), DefaultSwitchCNP()

	type rateAdvice struct {
		QueueBased        bool
		Policies          int
		MinAdviceInterval time.Duration
		DrainInterval     time.Duration
		ChangePercent     int
	}
	rc, rp := rateadvice.DefaultConfig(), DefaultRateAdvice()
	policies := 0
	if rp.PolicyRate > 0 {
		policies = 1
	}

	for _, tt := range []struct {
		desc string
		node any // the node's defaults
		got  any // the params' defaults, in the node's units
	}{
		{
			desc: "long-haul-cnp: lhcnp.DefaultConfig",
			node: longHaul{
				KBaseBytes: q.KBaseBytes, Alpha: q.Alpha, KMinIsHalfKMax: q.KMinMode == lhcnp.KMinDerived,
				VECNPercent: q.VECNPercent, VGrowthBytesPerSec: q.VGrowthBytesPerSec,
				MeasurementInterval: q.MeasurementInterval.Duration(), TriggerPersistence: q.TriggerPersistence.Duration(),
				MinCNPInterval: q.MinCNPInterval.Duration(), RateReducePercent: int(q.Action.RateReducePercent),
				ResumePercent: int(q.Action.ResumePercent), ResumeHold: q.Action.ResumeHold.Duration(),
				Collaborative: lc.Collaborative.Enabled, ObservationWindow: lc.Collaborative.ObservationWindow.Duration(),
				UpstreamFirst: lc.Collaborative.UpstreamFirst, UpstreamFirstMarked: lc.Collaborative.UpstreamFirstMarked,
			},
			got: longHaul{
				KBaseBytes: int64(lp.KBase), Alpha: lp.Alpha, KMinIsHalfKMax: lp.KMinFraction == 0.5,
				VECNPercent: 100 * lp.VECN, VGrowthBytesPerSec: int64(lp.VGrowth) / 8,
				MeasurementInterval: lp.GrowthInterval, TriggerPersistence: lp.TriggerPersistence,
				MinCNPInterval: lp.CNPInterval, RateReducePercent: lp.ReducePercent,
				ResumePercent: lp.ResumePercent, ResumeHold: lp.ResumeAfter,
				Collaborative: lp.Collaborative, ObservationWindow: lp.ObservationWindow,
				UpstreamFirst: lp.UpstreamFirst, UpstreamFirstMarked: lp.UpstreamFirstMarked,
			},
		},
		{
			desc: "long-haul-cnp: EMR's window is QGR's interval",
			node: q.EMRWindow.Duration(),
			got:  lp.GrowthInterval,
		},
		{
			desc: "fast-cnp: fastcnp.DefaultConfig",
			node: fastCNP{
				KMaxBytes: fc.KMaxBytes, KMinBytes: fc.KMinBytes, PMax: fc.PMax, MinCNPInterval: fc.MinCNPInterval.Duration(),
				PortCNPRatePerSec: fc.PortCNPRatePerSec, PortCNPBurst: fc.PortCNPBurst,
				MaxFlowsPerTrigger: fc.MaxFlowsPerTrigger, MarkUnknown: fc.MarkUnknown, CNPDSCP: int(fc.CNPDSCP),
			},
			got: fastCNP{
				KMaxBytes: int64(fp.KMax), KMinBytes: int64(fp.KMin), PMax: fp.PMax, MinCNPInterval: fp.CNPInterval,
				PortCNPRatePerSec: int64(fp.PortCNPRate), PortCNPBurst: int64(fp.PortCNPBurst),
				MaxFlowsPerTrigger: fp.MaxFlows, MarkUnknown: fp.MarkUnknown, CNPDSCP: fp.DSCP,
			},
		},
		{
			desc: "fcn: fcn.DefaultConfig",
			node: fcnParams{KMaxBytes: nc.KMaxBytes, MinCNPInterval: nc.MinCNPInterval.Duration(),
				AgingTimeout: nc.AgingTimeout.Duration(), MaxMappings: nc.MaxMappings},
			got: fcnParams{KMaxBytes: int64(np.KMax), MinCNPInterval: np.CNPInterval, AgingTimeout: np.Aging,
				MaxMappings: np.MaxMappings},
		},
		{
			desc: "switch-cnp: switchcnp.DefaultConfig",
			node: switchCNP{DSCP: int(sc.DSCP), DelayThreshold: sc.DelayThreshold.Duration(),
				BufferSharePercent: sc.BufferSharePercent, MinCNPInterval: sc.MinCNPInterval.Duration(),
				MaxEntries: sc.FlowTable.MaxEntries},
			got: switchCNP{DSCP: sp.DSCP, DelayThreshold: sp.DelayThreshold, BufferSharePercent: sp.BufferShare,
				MinCNPInterval: sp.CNPInterval, MaxEntries: sp.MaxEntries},
		},
		{
			desc: "rate-advice: rateadvice.DefaultConfig",
			node: rateAdvice{QueueBased: rc.QueueBased, Policies: len(rc.Policies),
				MinAdviceInterval: rc.MinAdviceInterval.Duration(), DrainInterval: rc.DrainInterval.Duration(),
				ChangePercent: rc.ChangePercent},
			got: rateAdvice{QueueBased: rp.QueueBased, Policies: policies, MinAdviceInterval: rp.Interval,
				DrainInterval: rp.DrainInterval, ChangePercent: rp.ChangePercent},
		},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if diff := cmp.Diff(tt.node, tt.got); diff != "" {
				t.Errorf("the params' defaults are not the node's (-node +params):\n%s", diff)
			}
		})
	}
}
