package compare

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/dataplane-sim/sim"
)

// Variant is one mechanism row of the comparison: how a scenario is
// rewritten to run it. Apply may run simulations of its own (a grid
// search) in scratch, and returns a note stating what it chose.
type Variant struct {
	Name string
	// Doc is the sentence docs/results.md gives the row.
	Doc   string
	Apply func(ctx context.Context, sc *scenario.Scenario, scratch string) (*scenario.Scenario, string, error)
}

// DefaultVariants returns the rows the comparison knows, in table order.
// A caller with rows of its own (the tuner) passes them in
// Options.Variants; Run looks names up there first.
func DefaultVariants() []Variant {
	return []Variant{
		{"pfc", "no end-to-end congestion control: DCQCN off at every RNIC, PFC (XOFF 1 MB, XON 512 KB unless the file says) on every switch port; lossless by back-pressure alone", applyPFC},
		{"dcqcn", "DCQCN at the RNICs with receiver CNPs only (NVIDIA defaults, docs/engine.md); every switch port marks ECN with the file's RED thresholds, the WAN ports included", applyPlain(scenario.MechanismDCQCN)},
		{"dcqcn:wan-tuned", "DCQCN with the best static RED thresholds for the scenario, found by a grid search over K_min ∈ {100 KB, 1 MB, 5 MB, 20 MB} (K_max = 4 K_min) and P_max ∈ {0.01, 0.2}: fewest drops, then the highest congested-period utilisation (for web-search mixes the lowest p99 FCT slowdown), then the lowest peak queue; the choice is stated per scenario below", applyTunedDCQCN},
		{"dcqcn" + PaperSuffix, "DCQCN with the SIGCOMM 2015 paper's parameters instead of NVIDIA's (`dcqcn.profile: paper`: g = 1/256 per K = 55 µs, alpha updated on every CNP, a cut per CNP, receiver CNPs at most every 50 µs; docs/engine.md), the file's RED thresholds: how much of DCQCN's result is its parameters", applyDCQCNPaper},
		{"fast-cnp", "Fast CNP (package fastcnp) on the file's congestion-aware nodes with its defaults: Fast CNP above 100 KB to the queue's largest flows, one per flow per 50 µs, every host known capable (never marked) and processing it; DCQCN reacts", applyNodal(scenario.MechanismFastCNP, nil)},
		{"switch-cnp", "the white paper's practice (package switchcnp) on the same nodes: standard CNPs from the switch, congestion confirmed by forwarding delay (20 µs, 1% of the available buffer)", applyNodal(scenario.MechanismSwitchCNP, nil)},
		{"fcn", "FCN over WAN tunnels (package fcn): the first congestion-aware node is the ingress PE, the others transit nodes; transit nodes report to the PE above 100 KB, the PE sends standard CNPs (and on its own congestion directly)", applyNodal(scenario.MechanismFCN, nil)},
		{"rate-advice", "SCONE Rate Advice (package rateadvice) on the same nodes: the fair share of each egress port as the senders' ceiling, every RNIC capable; DCQCN and receiver CNPs stay", applyNodal(scenario.MechanismRateAdvice, nil)},
		{"long-haul-cnp", "Long-haul CNP (package lhcnp) on the same nodes with the file's params, RoCEv2 format, and a reaction point on every host", applyLongHaul("", false)},
		{"long-haul-cnp:icmpv6", "the same with the ICMPv6 format (IPv6 sources)", applyLongHaul("icmpv6", false)},
		{"long-haul-cnp" + DefaultsSuffix, "the same nodes with the draft's defaults (`scenario.DefaultLongHaulCNP`; a real node's V_ecn 20 % and V_growth 10 Gb/s, where the draft gives no value): per-flow gap one RTT_est, Rate Reduce 30%, no Pause", applyLongHaul("", true)},
		{"long-haul-cnp" + OneCutSuffix, "`long-haul-cnp` with `one_cut_per_episode` (a deviation, docs/conformance.md): a node does not mark a flow it cut until its queue drains below K_min, so the receiver's CNPs do not cut it a second time", applyLongHaulOptions(oneCut)},
		{"long-haul-cnp" + PerFlowRTTSuffix, "`long-haul-cnp` with `per_flow_rtt` (a deviation): each flow's per-flow interval is its round trip to its source, learnt from its CM exchange, plus a measurement interval, instead of the file's `cnp_interval`", applyLongHaulOptions(perFlowRTT)},
		{"long-haul-cnp" + RepeatResumeSuffix, "`long-haul-cnp` with `repeat_resume` (a deviation): a node keeps resuming the flows it slowed while its queue stays below K_min and their rate follows", applyLongHaulOptions(repeatResume)},
		{"long-haul-cnp" + OptionsSuffix, "`long-haul-cnp` with the three options together", applyLongHaulOptions(allOptions)},
	}
}

// The rows of the options of issue #27 (docs/conformance.md, Deviations):
// each alone and the three together, on the file's params.
const (
	OneCutSuffix       = ":one-cut"
	PerFlowRTTSuffix   = ":per-flow-rtt"
	RepeatResumeSuffix = ":repeat-resume"
	OptionsSuffix      = ":options"
)

func oneCut(p *scenario.LongHaulCNP)       { p.OneCutPerEpisode = true }
func perFlowRTT(p *scenario.LongHaulCNP)   { p.PerFlowRTT = true }
func repeatResume(p *scenario.LongHaulCNP) { p.RepeatResume = true }
func allOptions(p *scenario.LongHaulCNP)   { oneCut(p); perFlowRTT(p); repeatResume(p) }

// applyLongHaulOptions is the long-haul-cnp row with edit applied to the
// file's params.
func applyLongHaulOptions(edit func(*scenario.LongHaulCNP)) func(context.Context, *scenario.Scenario, string) (*scenario.Scenario, string, error) {
	return func(ctx context.Context, sc *scenario.Scenario, scratch string) (*scenario.Scenario, string, error) {
		c, note, err := applyLongHaul("", false)(ctx, sc, scratch)
		if err != nil {
			return nil, "", err
		}
		p := c.Mechanism.LongHaulCNP()
		edit(&p)
		c.Mechanism.Params = p
		return c, note, nil
	}
}

// VariantNames returns the names of DefaultVariants.
func VariantNames() []string {
	vs := DefaultVariants()
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = v.Name
	}
	return names
}

// tunerVariant is the row of the tuner (docs/tuner.md): Long-haul CNP on the
// file's nodes with the file's params, alpha and V_growth starting at the
// draft's defaults, the tuner's policy closing the loop every period.
var tunerVariant = Variant{"long-haul-cnp" + TunerSuffix,
	"Long-haul CNP as `long-haul-cnp`, alpha and V_growth starting at the draft's defaults, tuned in closed loop by the tuner's policy (package tuner/policy) with a Set's delay",
	func(ctx context.Context, sc *scenario.Scenario, scratch string) (*scenario.Scenario, string, error) {
		c, _, err := applyLongHaul("", false)(ctx, sc, scratch)
		if err != nil {
			return nil, "", err
		}
		return withTuner(c), "", nil
	}}

// optionsTunerVariant is the tuner's row with the three options on.
var optionsTunerVariant = Variant{"long-haul-cnp" + OptionsSuffix + TunerSuffix,
	"`long-haul-cnp:options` tuned in closed loop as `long-haul-cnp+tuner`",
	func(ctx context.Context, sc *scenario.Scenario, scratch string) (*scenario.Scenario, string, error) {
		c, _, err := applyLongHaulOptions(allOptions)(ctx, sc, scratch)
		if err != nil {
			return nil, "", err
		}
		return withTuner(c), "", nil
	}}

// TunerVariant returns the tuner's row (long-haul-cnp+tuner).
func TunerVariant() Variant { return tunerVariant }

// OptionsTunerVariant returns the tuner's row with the options on
// (long-haul-cnp:options+tuner).
func OptionsTunerVariant() Variant { return optionsTunerVariant }

func lookupVariant(extra []Variant, name string) (Variant, bool) {
	for _, vs := range [][]Variant{extra, DefaultVariants(), {tunerVariant, optionsTunerVariant}} {
		if i := slices.IndexFunc(vs, func(v Variant) bool { return v.Name == name }); i >= 0 {
			return vs[i], true
		}
	}
	return Variant{}, false
}

// plain strips the file's mechanism: no congestion-aware node.
func plain(sc *scenario.Scenario, kind scenario.MechanismKind) *scenario.Scenario {
	c := *sc
	c.Mechanism = scenario.Mechanism{Kind: kind}
	c.Switches = make([]scenario.Switch, len(sc.Switches))
	for i, s := range sc.Switches {
		s.CongestionAware = false
		c.Switches[i] = s
	}
	return &c
}

func applyPlain(kind scenario.MechanismKind) func(context.Context, *scenario.Scenario, string) (*scenario.Scenario, string, error) {
	return func(_ context.Context, sc *scenario.Scenario, _ string) (*scenario.Scenario, string, error) {
		return plain(sc, kind), "", nil
	}
}

func applyDCQCNPaper(_ context.Context, sc *scenario.Scenario, _ string) (*scenario.Scenario, string, error) {
	c := plain(sc, scenario.MechanismDCQCN)
	c.DCQCN.Profile = scenario.DCQCNProfilePaper
	return c, "", nil
}

func applyPFC(_ context.Context, sc *scenario.Scenario, _ string) (*scenario.Scenario, string, error) {
	c := plain(sc, scenario.MechanismNone)
	for i := range c.Switches {
		q := &c.Switches[i].Queue
		q.PFC.Enabled = true
		if q.PFC.XOff == 0 {
			q.PFC.XOff, q.PFC.XOn = 1*scenario.MB, 512*scenario.KB
		}
	}
	return c, "", nil
}

// nodes returns the file's congestion-aware nodes.
func nodes(sc *scenario.Scenario, m string) ([]string, error) {
	if len(sc.Mechanism.Nodes) == 0 {
		return nil, fmt.Errorf("compare: scenario %s: %s needs the file to name its congestion-aware nodes (mechanism.nodes)", sc.Name, m)
	}
	return sc.Mechanism.Nodes, nil
}

func applyNodal(kind scenario.MechanismKind, edit func(*scenario.Mechanism)) func(context.Context, *scenario.Scenario, string) (*scenario.Scenario, string, error) {
	return func(_ context.Context, sc *scenario.Scenario, _ string) (*scenario.Scenario, string, error) {
		ns, err := nodes(sc, string(kind))
		if err != nil {
			return nil, "", err
		}
		c := *sc
		// The kind's defaults on these nodes (fcn: the first is the
		// ingress PE).
		m := scenario.Mechanism{Kind: kind, Nodes: ns, Params: scenario.DefaultParams(kind, ns)}
		if edit != nil {
			edit(&m)
		}
		c.Mechanism = m
		return &c, "", nil
	}
}

func applyLongHaul(format string, defaults bool) func(context.Context, *scenario.Scenario, string) (*scenario.Scenario, string, error) {
	return func(_ context.Context, sc *scenario.Scenario, _ string) (*scenario.Scenario, string, error) {
		ns, err := nodes(sc, "long-haul-cnp")
		if err != nil {
			return nil, "", err
		}
		c := *sc
		p := sc.Mechanism.LongHaulCNP()
		if sc.Mechanism.Kind != scenario.MechanismLongHaulCNP || defaults {
			p = scenario.DefaultLongHaulCNP()
		}
		if format != "" {
			p.Format = format
		}
		c.Mechanism = scenario.Mechanism{Kind: scenario.MechanismLongHaulCNP, Nodes: ns, Params: p}
		return &c, "", nil
	}
}

// applyTunedDCQCN runs the grid of static RED thresholds on the scenario
// and keeps the best (see Variants).
func applyTunedDCQCN(ctx context.Context, sc *scenario.Scenario, scratch string) (*scenario.Scenario, string, error) {
	type cand struct {
		kmin scenario.Size
		pmax float64
		sc   *scenario.Scenario
		sum  *Row
	}
	var best *cand
	better := func(a, b *cand) bool {
		ra, rb := a.sum, b.sum
		if ra.Drops != rb.Drops {
			return ra.Drops < rb.Drops
		}
		if web(ra) || web(rb) {
			pa, pb := ra.slowdownP99(), rb.slowdownP99()
			if pa != pb {
				return pa < pb
			}
		} else if ra.Utilisation != rb.Utilisation {
			return ra.Utilisation > rb.Utilisation
		}
		return ra.PeakQueueBytes < rb.PeakQueueBytes
	}
	for _, kmin := range []scenario.Size{100 * scenario.KB, 1 * scenario.MB, 5 * scenario.MB, 20 * scenario.MB} {
		for _, pmax := range []float64{0.01, 0.2} {
			c := plain(sc, scenario.MechanismDCQCN)
			for i := range c.Switches {
				e := &c.Switches[i].Queue.ECN
				e.Enabled, e.KMin, e.KMax, e.PMax = true, kmin, 4*kmin, pmax
			}
			dir := filepath.Join(scratch, fmt.Sprintf("kmin-%d-pmax-%g", int64(kmin), pmax))
			sum, err := sim.Run(ctx, c, dir, sim.WithoutPlots())
			if err != nil {
				return nil, "", fmt.Errorf("compare: %s grid %v/%g: %w", sc.Name, kmin, pmax, err)
			}
			r := &Row{Summary: sum}
			node, peer := bottleneck([]Row{*r})
			fill(r, node, peer)
			x := &cand{kmin: kmin, pmax: pmax, sc: c, sum: r}
			if best == nil || better(x, best) {
				best = x
			}
		}
	}
	note := fmt.Sprintf("K_min %v, K_max %v, P_max %g", best.kmin, 4*best.kmin, best.pmax)
	return best.sc, note, nil
}

// web reports whether a row is a web-search mix (finite flows with FCTs).
func web(r *Row) bool { return len(r.Buckets) > 0 }

func (r *Row) slowdownP99() float64 {
	var worst float64
	for _, b := range r.Buckets {
		worst = max(worst, b.P99)
	}
	return worst
}
