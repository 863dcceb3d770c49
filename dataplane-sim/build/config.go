package build

import (
	"fmt"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// portConfig maps a scenario queue onto a netsim port: the same ECN
// thresholds on every priority, PFC on every priority.
func portConfig(q scenario.Queue, bufferBytes int64) netsim.PortConfig {
	return netsim.PortConfig{
		BufferBytes: bufferBytes,
		ECN: netsim.SameECN(netsim.ECNConfig{
			Enabled: q.ECN.Enabled, KMinBytes: int64(q.ECN.KMin), KMaxBytes: int64(q.ECN.KMax), PMax: q.ECN.PMax,
		}),
		PFC: netsim.PFCConfig{Enabled: q.PFC.Enabled, XOFFBytes: int64(q.PFC.XOff), XONBytes: int64(q.PFC.XOn)},
	}
}

// hostConfig applies the scenario's DCQCN and NIC overrides to the model's
// defaults.
func hostConfig(sc *scenario.Scenario) (netsim.HostConfig, error) {
	c := netsim.DefaultHostConfig()
	d, rp := sc.DCQCN, &c.DCQCN
	if d.Profile == scenario.DCQCNProfilePaper {
		c.DCQCN, c.NP = netsim.PaperDCQCN(), netsim.PaperNP()
	}
	set(&rp.AlphaPerCNP, d.AlphaPerCNP, func(v bool) bool { return v })
	set(&rp.Enabled, d.Enabled, func(v bool) bool { return v })
	set(&rp.G, d.G, func(v int) uint32 { return uint32(v) })
	set(&rp.AlphaUpdatePeriod, d.AlphaUpdatePeriod, engine.FromDuration)
	set(&rp.InitialAlpha, d.InitialAlpha, func(v int) uint32 { return uint32(v) })
	set(&rp.RateOnFirstCNPBitsPerSec, d.RateOnFirstCNP, rateBitsPerSec)
	set(&rp.MinDecFacPercent, d.MinDecFacPercent, func(v int) int64 { return int64(v) })
	set(&rp.MinRateBitsPerSec, d.MinRate, rateBitsPerSec)
	set(&rp.GD, d.GD, func(v int) uint { return uint(v) })
	set(&rp.RateReduceMonitorPeriod, d.RateReduceMonitorPeriod, engine.FromDuration)
	set(&rp.ClampTargetRate, d.ClampTargetRate, func(v bool) bool { return v })
	set(&rp.ClampTargetAfterTimeInc, d.ClampTargetAfterTimeInc, func(v bool) bool { return v })
	set(&rp.TimeReset, d.TimeReset, engine.FromDuration)
	set(&rp.ByteResetBytes, d.ByteReset, func(v scenario.Size) int64 { return int64(v) })
	set(&rp.Threshold, d.Threshold, func(v int) int { return v })
	set(&rp.MaxRateBitsPerSec, d.MaxRate, rateBitsPerSec)
	set(&rp.AIRateBitsPerSec, d.RateAI, rateBitsPerSec)
	set(&rp.HAIRateBitsPerSec, d.RateHAI, rateBitsPerSec)
	set(&c.NP.CNPInterval, d.CNPInterval, engine.FromDuration)
	set(&c.NP.CNPPrio, d.CNPPrio, func(v int) uint8 { return uint8(v) })
	set(&c.MTUBytes, sc.NIC.MTU, func(v scenario.Size) int32 { return int32(v) })
	set(&c.AckEveryPackets, sc.NIC.AckEveryPackets, func(v int) uint32 { return uint32(v) })
	if r := sc.NIC.LossRecovery; r != "" {
		c.GoBackN = r == scenario.LossRecoveryGoBackN
	}
	set(&c.AckTimeout, sc.NIC.LocalAckTimeout, netsim.AckTimeoutFor)
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("build: rnic configuration: %w", err)
	}
	return c, nil
}

func rateBitsPerSec(r scenario.Rate) int64 { return int64(r) }

// set assigns conv(*v) to dst when the scenario overrides the field.
func set[S, D any](dst *D, v *S, conv func(S) D) {
	if v != nil {
		*dst = conv(*v)
	}
}
