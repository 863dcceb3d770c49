package lhcnp

import (
	"fmt"
	"math"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// The node's formulas and rules that other layers apply too. The node owns
// them; the gNMI target's schema checks (gnmi/schema) and the tuner's
// policy (tuner/policy) call these instead of restating them, so that a
// Set the node would refuse is refused naming the leaf, and the K_max the
// tuner reasons with is the one the node computes.

// DefaultKBaseBytes is the default K_base: the draft's 64KB (§7), KB =
// 1000 bytes. The YANG default of queue config/k-base is checked equal to
// it by a test (server/dataplane), not kept equal by hand.
const DefaultKBaseBytes = 64_000

// DefaultRTTEst is the RTT_est a port starts with until configured or
// measured (§5.3.1), and a reaction point's until told its own: 1 ms. The
// YANG default of interface config/rtt-est (1000 µs) is checked equal to
// it by a test (server/dataplane).
const DefaultRTTEst = engine.Millisecond

// PauseLevelNever is the ActionPolicy.PauseLevel that never pauses: one
// above the highest congestion level (255, §6.1). The model's
// pause-congestion-level, a uint8, cannot say it: such a policy has none.
const PauseLevelNever = 256

// KMinDerivedFraction is K_min / K_max in KMinDerived mode: the draft's
// RECOMMENDED K_min = K_max / 2 (§5.3.2).
const KMinDerivedFraction = 0.5

// BDPBytes is alpha · R_port · RTT_est / 8 in bytes: the BDP-adaptive
// K_max before its K_base floor (§5.3.2). With alpha 1 it is one RTT_est
// of queue at R_port.
func BDPBytes(alpha float64, rateBitsPerSec int64, rtt time.Duration) float64 {
	return alpha * float64(rateBitsPerSec) * (float64(rtt) / float64(time.Second)) / 8
}

// BDPKMaxBytes is K_max in the BDP-adaptive mode (§5.3.2): max(K_base,
// alpha · R_port · RTT_est / 8), in whole bytes, held at the int64 top
// (a port rate near it, or a long RTT_est, would wrap negative in the
// conversion and leave K_base).
func BDPKMaxBytes(kbaseBytes int64, alpha float64, rateBitsPerSec int64, rtt time.Duration) int64 {
	b := BDPBytes(alpha, rateBitsPerSec, rtt)
	if b >= math.MaxInt64 { // float64(math.MaxInt64) is 2^63, past the top
		return math.MaxInt64
	}
	return max(kbaseBytes, int64(b))
}

// MinExplicitKMaxBytes is the smallest explicit K_max the node takes
// (KMaxExplicit): its derived K_min, K_max / 2, is then at least one byte.
const MinExplicitKMaxBytes = 2

// KMinError is an explicit K_min that is not below K_max (§5.3.2: K_min
// MUST be less than K_max).
type KMinError struct {
	KMinBytes int64
	// BoundBytes is the K_max it must be below: the explicit K_max, or,
	// when K_max is BDP-adaptive (KBase), K_base, the smallest it can be.
	BoundBytes int64
	KBase      bool
}

func (e *KMinError) Error() string {
	if e.KBase {
		return fmt.Sprintf("%d is not below K_base %d, the smallest BDP-adaptive K_max (K_min must be less than K_max, draft §5.3.2)",
			e.KMinBytes, e.BoundBytes)
	}
	return fmt.Sprintf("%d is not below K_max %d (K_min must be less than K_max, draft §5.3.2)", e.KMinBytes, e.BoundBytes)
}

// CheckKMin checks an explicit K_min of kminBytes against the K_max it
// must stay below: kmaxBytes in KMaxExplicit mode, kbaseBytes in KMaxBDP
// mode. A derived K_min (K_max / 2) needs no check. It returns nil or a
// *KMinError.
func CheckKMin(kminBytes int64, kmaxMode KMaxMode, kmaxBytes, kbaseBytes int64) error {
	if kmaxMode == KMaxExplicit {
		if kminBytes >= kmaxBytes {
			return &KMinError{KMinBytes: kminBytes, BoundBytes: kmaxBytes}
		}
		return nil
	}
	if kminBytes >= kbaseBytes {
		return &KMinError{KMinBytes: kminBytes, BoundBytes: kbaseBytes, KBase: true}
	}
	return nil
}

// ActionError is an action that a congestion response may not request: a
// trigger's (ActionPolicy.DefaultAction) and an escalation's
// (CollaborativeConfig.EscalationAction) is Notify, Pause or Rate Reduce
// (§5.5.1); Resume says that congestion has subsided, and §5.7 escalates
// to a stricter action.
type ActionError struct {
	Action wire.Action
}

func (e *ActionError) Error() string {
	return fmt.Sprintf("%v is not a congestion action (draft §5.5.1: notify, pause or rate-reduce; resume is sent when congestion has subsided)", e.Action)
}

// CheckCongestionAction checks an action the node would send for
// congestion (a trigger's default action, an escalation). It returns nil
// or an *ActionError.
func CheckCongestionAction(a wire.Action) error {
	if a >= wire.ActionResume {
		return &ActionError{Action: a}
	}
	return nil
}
