package scenario

import (
	"strings"
	"testing"
)

// threeSwitches is a line of three switches between two hosts, up to the
// mechanism block (which starts at line 13).
const threeSwitches = `name: three-switches
duration: 1ms
sample_interval: 10us
topology:
  hosts: [{name: h1}, {name: h2}]
  switches: [{name: s1}, {name: s2}, {name: s3}]
  links:
    - {a: h1, b: s1, rate: 10Gbps, delay: 1us}
    - {a: s1, b: s2, rate: 10Gbps, delay: 1ms}
    - {a: s2, b: s3, rate: 10Gbps, delay: 1us}
    - {a: s3, b: h2, rate: 10Gbps, delay: 1us}
mechanism:
`

// TestParamsErrors: each kind's params reader, through the ParamsBlock,
// reports its mistakes at the file, line and key they were before the
// kinds were registered.
func TestParamsErrors(t *testing.T) {
	const line = 13 // the mechanism block's first line
	for _, tt := range []struct {
		desc, mech string
		line       int // relative to the block
		field      string
		reason     string
	}{
		{"fcn without ingress", "  kind: fcn\n  nodes: [s1, s2]\n  params:\n    ingress: []\n", 3, "mechanism.params.ingress", "no ingress PE"},
		{"fcn ingress not plain", "  kind: fcn\n  nodes: [s1, s2]\n  params:\n    ingress: [[s1]]\n", 3, "mechanism.params.ingress[0]", "want a single value"},
		{"fast-cnp k_min above k_max", "  kind: fast-cnp\n  nodes: [s1]\n  params: {k_min: 200KB}\n", 2, "mechanism.params.k_min", "k_min 200KB must be below k_max 100KB"},
		{"fast-cnp k_max below the default k_min", "  kind: fast-cnp\n  nodes: [s1]\n  params: {k_max: 0B}\n", 2, "mechanism.params.k_max", "greater than zero"},
		{"long-haul-cnp format", "  kind: long-haul-cnp\n  nodes: [s1]\n  params: {format: udp}\n", 2, "mechanism.params.format", `unknown format "udp" (want rocev2 or icmpv6)`},
		{"long-haul-cnp pause in ns", "  kind: long-haul-cnp\n  nodes: [s1]\n  params: {pause_duration: 1500ns}\n", 2, "mechanism.params.pause_duration", "must be whole microseconds"},
		{"long-haul-cnp pause_factor above 4/3", "  kind: long-haul-cnp\n  nodes: [s1]\n  params: {pause_duration: 1ms, pause_factor: 1.5}\n", 2, "mechanism.params.pause_factor", "1.5 above 4/3: the node's congestion level is capped at 255"},
		{"long-haul-cnp one_cut_per_episode not a bool", "  kind: long-haul-cnp\n  nodes: [s1]\n  params: {one_cut_per_episode: sometimes}\n", 2, "mechanism.params.one_cut_per_episode", `want true or false, got "sometimes"`},
		{"long-haul-cnp per_flow_rtt not a bool", "  kind: long-haul-cnp\n  nodes: [s1]\n  params:\n    collaborative: true\n    per_flow_rtt: 3ms\n", 4, "mechanism.params.per_flow_rtt", `want true or false, got "3ms"`},
		{"long-haul-cnp repeat_resume not a bool", "  kind: long-haul-cnp\n  nodes: [s1]\n  params: {repeat_resume: 1}\n", 2, "mechanism.params.repeat_resume", `want true or false, got "1"`},
		{"long-haul-cnp resume_on_drain not a bool", "  kind: long-haul-cnp\n  nodes: [s1]\n  params: {per_flow_rtt: true, repeat_resume: true, resume_on_drain: yes please}\n", 2, "mechanism.params.resume_on_drain", `want true or false, got "yes please"`},
		{"long-haul-cnp equal_cut not a bool", "  kind: long-haul-cnp\n  nodes: [s1]\n  params: {per_flow_rtt: true, equal_cut: 2}\n", 2, "mechanism.params.equal_cut", `want true or false, got "2"`},
		{"long-haul-cnp equal_cut alone", "  kind: long-haul-cnp\n  nodes: [s1]\n  params:\n    one_cut_per_episode: true\n    equal_cut: true\n", 4, "mechanism.params.equal_cut", "needs per_flow_rtt"},
		{"long-haul-cnp one_cut_in_flight not a bool", "  kind: long-haul-cnp\n  nodes: [s1]\n  params: {one_cut_per_episode: true, one_cut_in_flight: yes please}\n", 2, "mechanism.params.one_cut_in_flight", `want true or false`},
		{"long-haul-cnp overload_cut_growth not a bool", "  kind: long-haul-cnp\n  nodes: [s1]\n  params: {overload_cut: true, overload_cut_growth: 1}\n", 2, "mechanism.params.overload_cut_growth", `want true or false`},
		{"long-haul-cnp overload_cut_growth alone", "  kind: long-haul-cnp\n  nodes: [s1]\n  params:\n    per_flow_rtt: true\n    overload_cut_growth: true\n", 4, "mechanism.params.overload_cut_growth", "needs overload_cut"},
		{"long-haul-cnp upstream_first_marked not a bool", "  kind: long-haul-cnp\n  nodes: [s1]\n  params: {upstream_first_marked: maybe}\n", 2, "mechanism.params.upstream_first_marked", `want true or false`},
		{"long-haul-cnp upstream_first_marked without upstream_first", "  kind: long-haul-cnp\n  nodes: [s1]\n  params:\n    upstream_first: false\n    upstream_first_marked: true\n", 4, "mechanism.params.upstream_first_marked", "needs upstream_first"},
		{"long-haul-cnp one_cut_in_flight alone", "  kind: long-haul-cnp\n  nodes: [s1]\n  params:\n    per_flow_rtt: true\n    one_cut_in_flight: true\n", 4, "mechanism.params.one_cut_in_flight", "needs one_cut_per_episode"},
		{"long-haul-cnp resume_on_drain alone", "  kind: long-haul-cnp\n  nodes: [s1]\n  params:\n    per_flow_rtt: true\n    resume_on_drain: true\n", 4, "mechanism.params.resume_on_drain", "needs per_flow_rtt and repeat_resume"},
		{"long-haul-cnp recovery_step_percent above 100", "  kind: long-haul-cnp\n  nodes: [s1]\n  params: {recovery_step_percent: 101}\n", 2, "mechanism.params.recovery_step_percent", "101 is out of range [0, 100]"},
		{"long-haul-cnp recovery_step and recovery_step_percent", "  kind: long-haul-cnp\n  nodes: [s1]\n  params:\n    recovery_step: 1Gbps\n    recovery_step_percent: 5\n", 4, "mechanism.params.recovery_step_percent", "either a rate (recovery_step) or a share"},
		{"long-haul-cnp unknown key", "  kind: long-haul-cnp\n  nodes: [s1]\n  params: {k_bse: 64KB}\n", 2, "mechanism.params.k_bse", "unknown field"},
		{"rate-advice advises nothing", "  kind: rate-advice\n  nodes: [s1]\n  params: {queue_based: false}\n", 2, "mechanism.params", "nothing would be advised"},
		{"rate-advice below 1 Mb/s", "  kind: rate-advice\n  nodes: [s1]\n  params: {policy_rate: 10Kbps}\n", 2, "mechanism.params.policy_rate", "below 1Mbps"},
		{"rate-advice capable", "  kind: rate-advice\n  nodes: [s1]\n  params: {capable: some}\n", 2, "mechanism.params.capable", `unknown value "some" (want all or none)`},
		{"switch-cnp range", "  kind: switch-cnp\n  nodes: [s1]\n  params: {dscp: 64}\n", 2, "mechanism.params.dscp", "out of range"},
		{"params not a mapping", "  kind: switch-cnp\n  nodes: [s1]\n  params: [dscp]\n", 2, "mechanism.params", "want a mapping"},
		{"dcqcn takes none", "  kind: dcqcn\n  params: {k: 1}\n", 1, "mechanism.params", "dcqcn takes no params (DCQCN is tuned in the top-level dcqcn block)"},
		{"unknown kind", "  kind: hpcc\n", 0, "mechanism.kind", `unknown mechanism "hpcc" (want one of: `},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			_, err := Parse("params.yaml", []byte(threeSwitches+tt.mech))
			errs := Errors(err)
			if len(errs) != 1 {
				t.Fatalf("Parse = %v, want one error", err)
			}
			e := errs[0]
			if e.File != "params.yaml" || e.Line != line+tt.line || e.Field != tt.field || !strings.Contains(e.Reason, tt.reason) {
				t.Errorf("error %q, want params.yaml:%d: %s: ...%s...", e, line+tt.line, tt.field, tt.reason)
			}
		})
	}
}

// TestRecoveryStepPercent: recovery_step_percent replaces the absolute
// recovery_step with a share of each QP's normal rate; absent, the
// absolute default stays.
func TestRecoveryStepPercent(t *testing.T) {
	for _, tt := range []struct {
		params string
		pct    int
		step   Rate
	}{
		{"{}", 0, 1 * Gbps},
		{"{recovery_step: 250Mbps}", 0, 250 * Mbps},
		{"{recovery_step_percent: 5}", 5, 1 * Gbps},
		{"{recovery_step_percent: 0}", 0, 1 * Gbps},
	} {
		sc, err := Parse("params.yaml", []byte(threeSwitches+"  kind: long-haul-cnp\n  nodes: [s1]\n  params: "+tt.params+"\n"))
		if err != nil {
			t.Fatalf("%s: %v", tt.params, err)
		}
		p := sc.Mechanism.Params.(LongHaulCNP)
		if p.RecoveryStepPercent != tt.pct || p.RecoveryStep != tt.step {
			t.Errorf("%s: recovery_step_percent %d, recovery_step %v; want %d, %v", tt.params, p.RecoveryStepPercent, p.RecoveryStep, tt.pct, tt.step)
		}
	}
}

// TestPauseFactorRange: pause_factor takes 1..4/3, the factors the node's
// congestion level tells apart (170 at K_max, 255 from 4/3 K_max on), and
// the default is the top of that range.
func TestPauseFactorRange(t *testing.T) {
	if got := DefaultLongHaulCNP().PauseFactor; got != MaxPauseFactor {
		t.Errorf("default pause_factor %g, want %g", got, MaxPauseFactor)
	}
	for _, tt := range []struct {
		desc, factor string
		want         float64
	}{
		{"K_max", "1", 1},
		{"between", "1.2", 1.2},
		{"4/3", "1.3333333333333333", MaxPauseFactor},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			sc, err := Parse("params.yaml", []byte(threeSwitches+
				"  kind: long-haul-cnp\n  nodes: [s1]\n  params: {pause_duration: 1ms, pause_factor: "+tt.factor+"}\n"))
			if err != nil {
				t.Fatal(err)
			}
			if got := sc.Mechanism.Params.(LongHaulCNP).PauseFactor; got != tt.want {
				t.Errorf("pause_factor %s read as %g, want %g", tt.factor, got, tt.want)
			}
		})
	}
}
