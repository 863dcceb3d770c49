package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/report"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// incast6 is a 4:1 incast at n1, one microsecond from the senders and a
// 2 ms RTT from the receiver, over IPv6 (Fast CNP is IPv6 only).
const incast6 = `
name: incast6
seed: 1
duration: 20ms
sample_interval: 50us
topology:
  hosts:
    - {name: s1, ip: "2001:db8::1"}
    - {name: s2, ip: "2001:db8::2"}
    - {name: s3, ip: "2001:db8::3"}
    - {name: s4, ip: "2001:db8::4"}
    - {name: r1, ip: "2001:db8:2::1"}
  switches:
    - {name: n1, ip: "2001:db8:1::1"}
    - {name: n2, ip: "2001:db8:1::2"}
  links:
    - {a: s1, b: n1, rate: 10Gbps, delay: 1us, buffer: 32MB}
    - {a: s2, b: n1, rate: 10Gbps, delay: 1us, buffer: 32MB}
    - {a: s3, b: n1, rate: 10Gbps, delay: 1us, buffer: 32MB}
    - {a: s4, b: n1, rate: 10Gbps, delay: 1us, buffer: 32MB}
    - {name: wan, a: n1, b: n2, rate: 10Gbps, delay: 1ms, buffer: 64MB}
    - {a: n2, b: r1, rate: 10Gbps, delay: 1us, buffer: 32MB}
queue:
  ecn: {enabled: true, k_min: 100KB, k_max: 400KB, p_max: 0.2}
traffic:
  flows:
    - {name: f1, src: s1, dst: r1, src_qp: 101, dst_qp: 201, start: 1ms}
    - {name: f2, src: s2, dst: r1, src_qp: 102, dst_qp: 202, start: 1ms}
    - {name: f3, src: s3, dst: r1, src_qp: 103, dst_qp: 203, start: 1ms}
    - {name: f4, src: s4, dst: r1, src_qp: 104, dst_qp: 204, start: 1ms}
`

func runYAML(t *testing.T, y string) *report.Summary {
	t.Helper()
	sc, err := scenario.Parse("test.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), sc, t.TempDir(), WithoutPlots())
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// TestFastCNPRun: the fast-cnp mechanism runs end to end: n1 notifies the
// senders itself (feedback about a microsecond, the signal fast-cnp),
// their packets are not marked (every host capable), no receiver sends a
// CNP; DCQCN alone is first told a WAN round trip later.
func TestFastCNPRun(t *testing.T) {
	base := runYAML(t, incast6)
	fc := runYAML(t, incast6+`
mechanism:
  kind: fast-cnp
  nodes: [n1]
`)
	fb := fc.Feedback
	if fb == nil || fb.Signal != "fast-cnp" || fb.Senders != 4 {
		t.Fatalf("feedback %+v, want fast-cnp for 4 senders", fb)
	}
	if fb.MaxLatencyNs > 5_000 {
		t.Errorf("max feedback latency %d ns, want about a microsecond (n1 is 1 µs from the senders)", fb.MaxLatencyNs)
	}
	if fc.Notifications["fast-cnp"] == 0 || fc.Notifications["cnp"] != 0 {
		t.Errorf("notifications %v, want fast-cnp and no receiver cnp", fc.Notifications)
	}
	if c := fc.MechanismCounters; c["rnic_accepted"] == 0 || c["rnic_no_qp"] != 0 || c["rnic_untrusted"] != 0 || c["marks_withheld"] == 0 {
		t.Errorf("mechanism counters %v", c)
	}
	if b := base.Feedback; b == nil || b.Signal != "ce-mark" || b.MeanLatencyNs < 1e6 {
		t.Errorf("DCQCN feedback %+v, want ce-mark with at least the 2 ms WAN RTT", b)
	}
}

// TestFastCNPRNICOff: with rnic: false the hosts discard Fast CNPs (the
// option's action bits), and the receivers' CNPs (unknown capability:
// marked) do the work.
func TestFastCNPRNICOff(t *testing.T) {
	sum := runYAML(t, incast6+`
mechanism:
  kind: fast-cnp
  nodes: [n1]
  params: {rnic: false, capable_senders: none}
`)
	c := sum.MechanismCounters
	if c["rnic_discarded"] == 0 || c["rnic_accepted"] != 0 || sum.Notifications["cnp"] == 0 {
		t.Errorf("counters %v, notifications %v: want discarded Fast CNPs and receiver CNPs", c, sum.Notifications)
	}
}

// TestWithBlocks: Long-haul CNP on n2 and Fast CNP on n1 in one run
// (different nodes); the two on one node are refused when loading.
func TestWithBlocks(t *testing.T) {
	sum := runYAML(t, incast6+`
mechanism:
  kind: long-haul-cnp
  nodes: [n2]
  params: {format: icmpv6}
  with:
    - {kind: fast-cnp, nodes: [n1]}
`)
	if sum.Notifications["fast-cnp"] == 0 {
		t.Errorf("notifications %v: no fast-cnp from n1", sum.Notifications)
	}
	sc, err := scenario.Parse("test.yaml", []byte(incast6+`
mechanism:
  kind: long-haul-cnp
  nodes: [n1]
  with:
    - {kind: fast-cnp, nodes: [n1]}
`))
	if err == nil || !strings.Contains(err.Error(), "mechanism.with[0].nodes[0]: n1 already runs long-haul-cnp") {
		t.Errorf("two notification mechanisms on n1: %v, %v", sc != nil, err)
	}
}

// TestRateAdviceRun: rate-advice on n1 advises the four senders their fair
// share of the WAN port (2.5 Gb/s) and they hold to it. Beside Long-haul
// CNP on the same node (with: the two coexist), a 5 Gb/s policy still
// oversubscribes the port twice, and Long-haul CNP cuts below the advice.
func TestRateAdviceRun(t *testing.T) {
	sum := runYAML(t, incast6+`
mechanism:
  kind: rate-advice
  nodes: [n1]
`)
	c := sum.MechanismCounters
	if sum.Notifications["rate-advice"] == 0 || c["advice_queue"] == 0 || c["rnic_advice_applied"] == 0 || c["rnic_advice_dropped"] != 0 {
		t.Errorf("notifications %v, counters %v", sum.Notifications, c)
	}
	for _, f := range sum.Flows {
		if f.ThroughputBitsPerSec > 3e9 {
			t.Errorf("flow %s at %v b/s, above its 2.5 Gb/s fair share", f.Name, f.ThroughputBitsPerSec)
		}
	}
	both := runYAML(t, incast6+`
mechanism:
  kind: long-haul-cnp
  nodes: [n1]
  params: {format: icmpv6}
  with:
    - {kind: rate-advice, nodes: [n1], params: {queue_based: false, policy_rate: 5Gbps}}
`)
	if both.Notifications["rate-advice"] == 0 || both.Notifications["long-haul-cnp"] == 0 {
		t.Errorf("notifications %v, want both mechanisms on n1", both.Notifications)
	}
}

// TestSwitchCNPRun: the white paper's practice on n1: standard CNPs from
// the switch, detected by forwarding delay, reach the senders in about a
// microsecond and DCQCN takes them.
func TestSwitchCNPRun(t *testing.T) {
	sum := runYAML(t, incast6+`
mechanism:
  kind: switch-cnp
  nodes: [n1]
  params: {dscp: 26, buffer_share: 1}
`)
	fb := sum.Feedback
	if fb == nil || fb.Signal != "switch-cnp" || fb.Senders != 4 || fb.MaxLatencyNs > 5_000 {
		t.Fatalf("feedback %+v, want switch-cnp for 4 senders within a few µs", fb)
	}
	if c := sum.MechanismCounters; sum.Notifications["switch-cnp"] == 0 || c["congestion_confirmed"] == 0 || c["max_delay_ns"] < 20_000 {
		t.Errorf("notifications %v, counters %v", sum.Notifications, c)
	}
}

// wan6 is a WAN congested in its middle: DC-A's senders reach pe1, the
// tunnel crosses t1, whose 10 Gb/s port towards pe2 is the bottleneck.
const wan6 = `
name: wan6
seed: 1
duration: 20ms
sample_interval: 50us
topology:
  hosts:
    - {name: s1, ip: "2001:db8:a::1"}
    - {name: s2, ip: "2001:db8:a::2"}
    - {name: r1, ip: "2001:db8:b::1"}
  switches:
    - {name: pe1, ip: "2001:db8:f::1"}
    - {name: t1, ip: "2001:db8:f::2"}
    - {name: pe2, ip: "2001:db8:f::3"}
  links:
    - {a: s1, b: pe1, rate: 10Gbps, delay: 1us, buffer: 32MB}
    - {a: s2, b: pe1, rate: 10Gbps, delay: 1us, buffer: 32MB}
    - {a: pe1, b: t1, rate: 100Gbps, delay: 500us, buffer: 64MB}
    - {a: t1, b: pe2, rate: 10Gbps, delay: 500us, buffer: 64MB}
    - {a: pe2, b: r1, rate: 10Gbps, delay: 1us, buffer: 32MB}
queue:
  ecn: {enabled: true, k_min: 100KB, k_max: 400KB, p_max: 0.2}
traffic:
  flows:
    - {name: f1, src: s1, dst: r1, src_qp: 101, dst_qp: 201, start: 1ms}
    - {name: f2, src: s2, dst: r1, src_qp: 102, dst_qp: 202, start: 1ms}
`

// TestFCNRun: fcn on the WAN: t1 reports to pe1, pe1 sends the senders
// standard CNPs; the feedback is half a WAN RTT from t1 back to the
// senders (about 0.5 ms), not the receiver's full loop.
func TestFCNRun(t *testing.T) {
	sum := runYAML(t, wan6+`
mechanism:
  kind: fcn
  nodes: [pe1, t1]
  params: {ingress: [pe1]}
`)
	c := sum.MechanismCounters
	if sum.Notifications["fcn"] == 0 || c["fcn_translated"] == 0 || c["fcn_unknown_label"] != 0 || c["fcn_mappings"] != 2 {
		t.Fatalf("notifications %v, counters %v", sum.Notifications, c)
	}
	fb := sum.Feedback
	if fb == nil || fb.Signal != "fcn" || fb.Senders != 2 || fb.MaxLatencyNs > 600_000 || fb.MaxLatencyNs < 500_000 {
		t.Errorf("feedback %+v, want fcn for 2 senders at about 0.5 ms", fb)
	}
	base := runYAML(t, wan6)
	if b := base.Feedback; b == nil || b.MeanLatencyNs < 1.5e6 {
		t.Errorf("DCQCN feedback %+v, want the receiver's loop (at least 1.5 ms)", b)
	}
}

// A node mechanism whose notifications cannot leave says so in a warning:
// it looked as if it had had nothing to do (no notification, no warning,
// the queue growing unchecked). fast-cnp on IPv4 hosts, long-haul-cnp's
// ICMPv6 format with IPv4 sources, and long-haul-cnp's switches of
// 10.0.0.x in front of IPv6 hosts.
func TestUnsendableNotificationsWarned(t *testing.T) {
	const base = `
duration: 20ms
sample_interval: 100us
topology:
  hosts: [{name: a1%s}, {name: a2%s}, {name: b1%s}]
  switches: [{name: n1, ip: 10.9.0.1}, {name: n2, ip: 10.9.0.2}]
  links:
    - {a: a1, b: n1, rate: 25Gbps, delay: 1us}
    - {a: a2, b: n1, rate: 25Gbps, delay: 1us}
    - {name: wan, a: n1, b: n2, rate: 25Gbps, delay: 2ms, buffer: 64MB}
    - {a: n2, b: b1, rate: 25Gbps, delay: 1us}
mechanism: {kind: %s, nodes: [n1, n2]%s}
traffic:
  flows: [{name: f1, src: a1, dst: b1}, {name: f2, src: a2, dst: b1}]
`
	v6 := []any{`, ip: "fd00::1"`, `, ip: "fd00::2"`, `, ip: "fd00::3"`}
	for _, tt := range []struct {
		desc string
		args []any
		want string
	}{
		{"fast-cnp on IPv4", []any{"", "", "", "fast-cnp", ""}, "fast-cnp: n1: "},
		{"long-haul-cnp icmpv6 on IPv4", []any{"", "", "", "long-haul-cnp", ", params: {format: icmpv6}"}, "long-haul-cnp: n1: "},
		{"long-haul-cnp from IPv4 switches to IPv6 hosts", append(v6, "long-haul-cnp", ""), "long-haul-cnp: n1: "},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			sum := runYAML(t, fmt.Sprintf(base, tt.args...))
			if !slices.ContainsFunc(sum.Warnings, func(w string) bool {
				return strings.HasPrefix(w, tt.want) && strings.Contains(w, " notifications not sent: ")
			}) {
				t.Errorf("warnings %q: none %s... notifications not sent", sum.Warnings, tt.want)
			}
		})
	}
}
