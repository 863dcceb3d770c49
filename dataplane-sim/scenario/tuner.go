package scenario

import (
	"math"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Tuner is the closed-loop tuner of the scenario's Long-haul CNP nodes
// (docs/tuner.md): the tuner's policy called every Period on each queue's
// own telemetry, its decisions applied through the node's configuration
// SetDelay later and judged like a commit-confirmed Set. A zero duration
// is derived from the queue's port's RTT_est (Period and Window a tenth,
// JudgeWindow one, Cooldown a half); SetDelay 0 means the gNMI target's
// measured Set latency (2 ms). Zero weights keep the policy's.
// SearchAfterRTT turns the policy's online search on (its
// search_after_rtt; 0: the policy's default).
type Tuner struct {
	Period, Window, JudgeWindow, Cooldown, SetDelay time.Duration
	Weights                                         TunerWeights
	SearchAfterRTT                                  float64
	// AlphaStart and RulesOff are the policy's alpha_start and rules_off
	// (docs/tuner.md); nil: the policy's defaults. The scenario checks them
	// against TunerAlphaStartMin/Max and TunerRulesOff, the policy's own
	// (sim.TestTunerKeysArePolicys): the dataplane does not import the
	// tuner's packages (docs/architecture.md).
	AlphaStart *float64
	RulesOff   *[]string
	// Fixed replaces the policy: at each queue's first decision (when the
	// policy would first decide on it) the loop sets this alpha and
	// V_growth, through the Set delay like any change, and never decides
	// again. It is the family evaluation's oracle floor (`lhcnp sim eval
	// --oracle`, docs/tuner.md): the best static setting applied as early
	// as a tuner that starts from the switch's configuration can apply
	// anything. Code only, not a scenario file's key.
	Fixed *TunerFixed
}

// TunerFixed is a Tuner's fixed setting: alpha and V_growth (0: the QGR
// trigger off), as a static long-haul-cnp block's params give them.
type TunerFixed struct {
	Alpha   float64
	VGrowth Rate
}

// TunerWeights are the objective's weights (0: the policy's default).
type TunerWeights struct {
	Utilisation, Delay, Loss, Notifications float64
}

// The policy's bounds of alpha_start, the YANG model's fraction digits of
// alpha and the rules rules_off may name (its alpha_min, alpha_max,
// YANGAlphaFractionDigit and SwitchableRules; sim.TestTunerKeysArePolicys
// keeps them equal).
const (
	TunerAlphaStartMin, TunerAlphaStartMax = 0.1, 10
	TunerAlphaDigits                       = 3
)

var TunerRulesOff = []string{"growth", "delay", "under-use", "overrun", "overhead"}

// tuner reads the top-level tuner block; its presence turns the tuner on.
func (l *loader) tuner(n *yaml.Node) {
	if n == nil {
		return
	}
	t := &Tuner{}
	l.sc.Tuner = t
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // "tuner:" alone: every default
	}
	o := l.d.object(n, "tuner", "period", "window", "judge_window", "cooldown", "set_delay", "weights", "search_after_rtt", "alpha_start", "rules_off")
	if o == nil {
		return
	}
	o.setDuration("period", &t.Period, false)
	o.setDuration("window", &t.Window, false)
	o.setDuration("judge_window", &t.JudgeWindow, false)
	o.setDuration("cooldown", &t.Cooldown, false)
	o.setDuration("set_delay", &t.SetDelay, false)
	o.setFloat("search_after_rtt", &t.SearchAfterRTT, 0, 1e6)
	if an := o.get("alpha_start"); an != nil {
		if v, ok := l.d.float(an, o.field("alpha_start"), 0, 1e6); ok {
			switch {
			case v != 0 && (v < TunerAlphaStartMin || v > TunerAlphaStartMax):
				l.d.errAt(an, o.field("alpha_start"), "%v is neither 0 nor an alpha in [alpha_min %v, alpha_max %v]", v, TunerAlphaStartMin, TunerAlphaStartMax)
			case math.Abs(math.Round(v*math.Pow10(TunerAlphaDigits))-v*math.Pow10(TunerAlphaDigits)) > 1e-6:
				l.d.errAt(an, o.field("alpha_start"), "%v has more than the YANG model's %d fraction digits", v, TunerAlphaDigits)
			default:
				t.AlphaStart = &v
			}
		}
	}
	if rn := o.get("rules_off"); rn != nil {
		off := []string{}
		for i, r := range l.d.list(rn, o.field("rules_off")) {
			field := index(o.field("rules_off"), i)
			if v, ok := l.d.scalar(r, field); ok {
				switch {
				case !slices.Contains(TunerRulesOff, v):
					l.d.errAt(r, field, "%q is not a rule that can be switched off (%s; loss and settle never are)", v, strings.Join(TunerRulesOff, ", "))
				case slices.Contains(off, v):
					l.d.errAt(r, field, "%q is listed twice", v)
				default:
					off = append(off, v)
				}
			}
		}
		t.RulesOff = &off
	}
	if wn := o.get("weights"); wn != nil {
		w := l.d.object(wn, "tuner.weights", "utilisation", "delay", "loss", "notifications")
		if w == nil {
			return
		}
		w.setFloat("utilisation", &t.Weights.Utilisation, 0, 1e9)
		w.setFloat("delay", &t.Weights.Delay, 0, 1e9)
		w.setFloat("loss", &t.Weights.Loss, 0, 1e9)
		w.setFloat("notifications", &t.Weights.Notifications, 0, 1e9)
	}
	if l.sc.Mechanism.Kind != MechanismLongHaulCNP {
		l.d.errAt(n, "tuner", "needs mechanism.kind long-haul-cnp (the tuner adjusts its nodes)")
	}
}
