package dataplane_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// fastConfig runs Fast CNP on n1 for the IPv6 line: the whole 2001:db8::/32
// is the domain and its senders process Fast CNP.
const fastConfig = `{
  "global": {"config": {"enabled": true, "long-haul-cnp-rocev2": false, "long-haul-cnp-icmpv6": false,
    "fast-cnp-enabled": true}},
  "fast-cnp": {
    "config": {"congestion-threshold": "1000000", "min-cnp-interval": 100},
    "source-prefixes": {"source-prefix": [{"prefix": "2001:db8::/32",
      "config": {"prefix": "2001:db8::/32", "sender-capable": true}}]}
  }
}`

// TestSetFastCNP: Fast CNP configured through gNMI runs on the switch: the
// senders get Fast CNPs (state counters, the node's and the queue's), the capable senders' packets are
// not marked, and the sources slow down. Turning it on beside a Long-haul
// CNP format is refused naming fast-cnp-enabled (the two cannot run on one
// node), and so is a marking threshold above the congestion threshold;
// neither changes anything.
func TestSetFastCNP(t *testing.T) {
	r := newRigFrom(t, "testdata/line6.yaml", lineConfig)
	r.run(t, 2*engine.Millisecond)

	err := r.setJSON(t, "/lhcnp/global/config/fast-cnp-enabled", "true")
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "fast-cnp-enabled") ||
		!strings.Contains(err.Error(), "cannot both run on one node") {
		t.Fatalf("fast cnp beside long-haul cnp: %v, want InvalidArgument naming fast-cnp-enabled", err)
	}
	if !r.sw.Node.Config().FormatRoCEv2 {
		t.Fatalf("a refused Set changed the node")
	}

	if err := r.setIETF("/lhcnp", fastConfig, true); err != nil {
		t.Fatalf("replace with fast cnp: %v", err)
	}
	r.run(t, 8*engine.Millisecond)
	const c = "/lhcnp/fast-cnp/state/counters"
	if got := r.uint(t, c+"/sent"); got == 0 {
		t.Errorf("%s/sent = 0, want Fast CNPs", c)
	}
	// Per queue: the Fast CNPs sent for congestion on the WAN queue, here
	// every one the node sent (one congested queue).
	if got, want := r.uint(t, q0+"/state/counters/fast-cnp-sent"), r.uint(t, c+"/sent"); got != want {
		t.Errorf("%s/state/counters/fast-cnp-sent = %d, want the node's %d", q0, got, want)
	}
	// The queue's last CNP is a Fast CNP: its format, and none of a
	// Long-haul CNP's fields (it carries no action, parameter, level or
	// metric).
	last := r.getJSON(t, q0+"/state/last-cnp")
	if !strings.Contains(last, `"lhcnp:format":"FAST_CNP"`) {
		t.Errorf("%s/state/last-cnp = %s, want format FAST_CNP", q0, last)
	}
	for _, leaf := range []string{`"lhcnp:action"`, `"lhcnp:parameter"`, `"lhcnp:congestion-level"`, `"lhcnp:metric-type"`, `"lhcnp:metric-value"`} {
		if strings.Contains(last, leaf) {
			t.Errorf("%s/state/last-cnp = %s: a Fast CNP has no %s", q0, last, leaf)
		}
	}
	if got := r.uint(t, c+"/ecn-marks-withheld"); got == 0 {
		t.Errorf("%s/ecn-marks-withheld = 0: capable senders' packets must not be marked", c)
	}
	if got := r.uint(t, "/lhcnp/fast-cnp/state/congestion-threshold"); got != 1_000_000 {
		t.Errorf("state congestion-threshold = %d", got)
	}
	for _, h := range r.sw.Net.Hosts() {
		for _, q := range h.SendQPs() {
			if q.RateBitsPerSec() >= q.LineRateBitsPerSec() {
				t.Errorf("%s QP %d at line rate: no Fast CNP slowed it", h.Name(), q.QPN)
			}
		}
	}

	err = r.setJSON(t, "/lhcnp/fast-cnp/config/marking-threshold", `"2000000"`)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "/lhcnp/fast-cnp/config/marking-threshold") {
		t.Fatalf("marking threshold above congestion threshold: %v, want InvalidArgument naming it", err)
	}
	if got := r.uint(t, "/lhcnp/fast-cnp/state/congestion-threshold"); got != 1_000_000 {
		t.Errorf("after a refused Set: congestion-threshold %d", got)
	}
}

// TestFastCNPBorderThroughGNMI: border-interface makes a port a border of
// the domain (draft §5 border filtering): the Fast CNPs that would leave
// through it are dropped and counted in border-dropped, the others still go
// out; the state echoes the interfaces; an unknown interface is refused
// naming the leaf.
func TestFastCNPBorderThroughGNMI(t *testing.T) {
	r := newRigFrom(t, "testdata/line6.yaml", lineConfig)
	var border string // the interface towards the host "source"
	for _, name := range r.sw.Ports.Names() {
		if port, _ := r.sw.Ports.Port(name); port == "n1:0" {
			border = name
		}
	}
	if border == "" {
		t.Fatalf("no interface on port n1:0 (interfaces %v)", r.sw.Ports.Names())
	}
	cfg := strings.Replace(fastConfig, `"min-cnp-interval": 100}`, `"min-cnp-interval": 100, "border-interface": ["`+border+`"]}`, 1)
	if err := r.setIETF("/lhcnp", cfg, true); err != nil {
		t.Fatalf("replace with fast cnp and a border: %v", err)
	}
	r.run(t, 8*engine.Millisecond)
	const c = "/lhcnp/fast-cnp/state/counters"
	dropped, sent := r.uint(t, c+"/border-dropped"), r.uint(t, c+"/sent")
	if dropped == 0 || sent == 0 {
		t.Errorf("border-dropped %d, sent %d: want Fast CNPs to source dropped at the border and those to a1 sent", dropped, sent)
	}
	if got := r.getJSON(t, "/lhcnp/fast-cnp/state/border-interface"); !strings.Contains(got, border) {
		t.Errorf("state border-interface = %s, want %q", got, border)
	}
	for _, h := range r.sw.Net.Hosts() {
		for _, q := range h.SendQPs() {
			slowed := q.RateBitsPerSec() < q.LineRateBitsPerSec()
			if want := h.Name() != "source"; slowed != want {
				t.Errorf("%s QP %d slowed %v, want %v (its Fast CNPs cross the border: %v)", h.Name(), q.QPN, slowed, want, !want)
			}
		}
	}
	err := r.setJSON(t, "/lhcnp/fast-cnp/config/border-interface", `["nowhere"]`)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "/lhcnp/fast-cnp/config/border-interface") {
		t.Fatalf("unknown border interface: %v, want InvalidArgument naming the leaf", err)
	}
}

// TestSourceAddressIPv4WithoutFastCNP: on a Long-haul CNP node of an IPv4
// fabric, Fast CNP off, an IPv4 source-address is taken by the node (its
// Long-haul CNPs leave from it). Fast CNP is IPv6 only, so its check runs
// while Fast CNP is configured on, and names source-address; the old target
// ran it whether or not, refusing the address naming /lhcnp/fast-cnp/config
// (this test failed before the fix).
func TestSourceAddressIPv4WithoutFastCNP(t *testing.T) {
	r := newRig(t) // line.yaml: IPv4, Long-haul CNP RoCEv2 format
	r.run(t, engine.Millisecond)
	const path = "/lhcnp/global/config/source-address"
	if err := r.setJSON(t, path, `"10.0.0.2"`); err != nil {
		t.Fatalf("set %s 10.0.0.2 on an IPv4 Long-haul CNP node without Fast CNP: %v", path, err)
	}
	if got := r.sw.Node.Config().SourceAddress.String(); got != "10.0.0.2" {
		t.Errorf("the node's source address = %s, want 10.0.0.2", got)
	}
	err := r.setIETF("/lhcnp/global/config", `{"long-haul-cnp-rocev2": false, "fast-cnp-enabled": true}`, false)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), path) {
		t.Errorf("Fast CNP on with source-address 10.0.0.2: %v, want InvalidArgument naming %s", err, path)
	}
}

// TestFastCNPMarkingThresholdZero: a marking-threshold of 0 is refused
// naming the leaf. The node reads 0 as "not set" (marking from half the
// congestion threshold, the state leaving the leaf out); the old target
// took the 0 and ran it as that (this test failed before the fix).
func TestFastCNPMarkingThresholdZero(t *testing.T) {
	cfg := strings.Replace(fastMarking, `"min-cnp-interval": 100}`, `"min-cnp-interval": 100, "marking-threshold": "300000"}`, 1)
	r := newRigFrom(t, "testdata/line6.yaml", wholeTree(cfg))
	r.run(t, engine.Millisecond)
	const path = "/lhcnp/fast-cnp/config/marking-threshold"
	err := r.setJSON(t, path, `"0"`)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), path) {
		t.Fatalf("marking-threshold 0: %v, want InvalidArgument naming %s", err, path)
	}
	if got := r.uint(t, "/lhcnp/fast-cnp/state/marking-threshold"); got != 300_000 {
		t.Errorf("after a refused Set: state marking-threshold %d, want 300000", got)
	}
}

// TestCodePointErrorsNameTheLeaf: a code point a mechanism's rule forbids
// (Fast CNP's option types need §4's action bits, the Rate Advice opcode
// must not be one RNICs execute) is refused, mechanisms off or on, naming
// the leaf set, /lhcnp/global/code-points/config/<leaf>; the old target
// named /lhcnp/fast-cnp/config and /lhcnp/rate-advice (this test failed
// before the fix).
func TestCodePointErrorsNameTheLeaf(t *testing.T) {
	r := newRig(t)
	for _, leaf := range []string{"fast-cnp-option-type", "fast-cnp-ioam-option-type", "rate-advice-opcode"} {
		path := "/lhcnp/global/code-points/config/" + leaf
		err := r.setJSON(t, path, "16")
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), path) {
			t.Errorf("%s 16: %v, want InvalidArgument naming %s", leaf, err, path)
		}
	}
}

// TestBorderFilterWithoutFastCNPEnabled: a border router configured with
// border-interface alone (fast-cnp-enabled false) drops the other
// switches' Fast CNPs at its border, with the master switch on or off
// (border filtering is a protection, not a notification: the master switch
// gates what the switch sends). Here the Fast CNPs of the congested transit
// node t1 would cross pe1's border interface wan1 and slow DC-A's senders;
// pe1 counts them in border-dropped. The old target created the Fast CNP
// function only with fast-cnp-enabled on: pe1 filtered nothing (this test
// failed before the fix).
func TestBorderFilterWithoutFastCNPEnabled(t *testing.T) {
	const t1 = `{"global": {"config": {"enabled": true, "fast-cnp-enabled": true}},
  "fast-cnp": {"config": {"congestion-threshold": "1000000", "min-cnp-interval": 100},
    "source-prefixes": {"source-prefix": [{"prefix": "2001:db8:a::/48",
      "config": {"prefix": "2001:db8:a::/48", "sender-capable": true}}]}}}`
	for _, master := range []bool{true, false} {
		t.Run(fmt.Sprintf("master switch %v", master), func(t *testing.T) {
			pe1 := fmt.Sprintf(`{"global": {"config": {"enabled": %v, "long-haul-cnp-icmpv6": true}},
  "fast-cnp": {"config": {"border-interface": ["wan1"]}}}`, master)
			rigs := newRigs(t, "testdata/wan6.yaml", map[string]string{"pe1": wholeTree(pe1), "t1": wholeTree(t1)})
			rigs["t1"].run(t, 8*engine.Millisecond)
			rigs["pe1"].run(t, 8*engine.Millisecond)
			if got := rigs["t1"].uint(t, "/lhcnp/fast-cnp/state/counters/sent"); got == 0 {
				t.Fatal("t1 sent no Fast CNP: the test needs some")
			}
			if got := rigs["pe1"].uint(t, "/lhcnp/fast-cnp/state/counters/border-dropped"); got == 0 {
				t.Error("pe1's border-dropped = 0, want t1's Fast CNPs dropped at wan1")
			}
			if got := rigs["pe1"].getJSON(t, "/lhcnp/global/state/fast-cnp-enabled"); got != "false" {
				t.Errorf("pe1's fast-cnp-enabled state %s, want false", got)
			}
			for _, h := range rigs["pe1"].sw.Net.Hosts() {
				for _, q := range h.SendQPs() {
					if q.RateBitsPerSec() < q.LineRateBitsPerSec() {
						t.Errorf("%s QP %d slowed to %d b/s: t1's Fast CNPs crossed pe1's border interface wan1", h.Name(), q.QPN, q.RateBitsPerSec())
					}
				}
			}
		})
	}
}

// TestBorderFilterBesideFCN: an FCN ingress PE that also filters Fast CNP
// at its border (border-interface, fast-cnp-enabled false) has the Fast
// CNP function for it (border-dropped published; the old target had none,
// and this test failed) and still runs as a PE; the notifications its node
// hands to the PE (its direct CNPs) are not counted per queue as Fast
// CNPs: fast-cnp-sent is the node's notifications only while Fast CNP is
// configured on. With the function there for border filtering alone, the
// old rule ("once the switch has had Fast CNP") would have published the
// PE's CNPs as fast-cnp-sent.
func TestBorderFilterBesideFCN(t *testing.T) {
	cfg := strings.Replace(ingressPE, `"fcn":`, `"fast-cnp": {"config": {"border-interface": ["wan"]}},
  "fcn":`, 1)
	r := newRigFrom(t, "testdata/line6.yaml", wholeTree(cfg))
	r.run(t, 6*engine.Millisecond)
	sent := "/lhcnp/interfaces/interface[name=wan]/state/counters/notifications-sent"
	if got := r.uint(t, sent); got == 0 {
		t.Fatalf("%s = 0, want the PE's direct CNPs", sent)
	}
	if got := r.uint(t, "/lhcnp/fcn/state/mapping-count"); got == 0 {
		t.Errorf("mapping-count 0: the switch is not running as an ingress PE")
	}
	r.uint(t, "/lhcnp/fast-cnp/state/counters/border-dropped") // published: the border filter is there
	if got := r.getJSON(t, q0+"/state/counters"); strings.Contains(got, "fast-cnp-sent") {
		t.Errorf("%s/state/counters = %s: the PE's CNPs counted as Fast CNPs", q0, got)
	}
}

// TestFastCNPThresholdsAboveInt64: congestion-threshold and
// marking-threshold are uint64 leaves; the values above the node's int64
// range are held at its top (2^63-1 bytes, which no queue reaches), as
// gnmi/schema's rules read them, and the node runs with that, the state
// showing it. The old target wrapped them negative in int64(): 2^64-1
// became -1, refused as a K_max that must be positive (this test failed
// before the fix).
func TestFastCNPThresholdsAboveInt64(t *testing.T) {
	r := newRigFrom(t, "testdata/line6.yaml", wholeTree(fastMarking))
	r.run(t, engine.Millisecond)
	if err := r.setMany([][2]string{
		{"/lhcnp/fast-cnp/config/congestion-threshold", "18446744073709551615"},
		{"/lhcnp/fast-cnp/config/marking-threshold", "9223372036854775808"},
	}); err != nil {
		t.Fatalf("thresholds 2^64-1 and 2^63: %v", err)
	}
	r.run(t, 2*engine.Millisecond)
	if q := r.sw.Node.Config().Interface.Queue; q.KMaxBytes != math.MaxInt64 || q.KMinBytes != math.MaxInt64-1 {
		t.Errorf("the node's K_max %d, K_min %d; want 2^63-1 and one byte below", q.KMaxBytes, q.KMinBytes)
	}
	if got := r.uint(t, "/lhcnp/fast-cnp/state/congestion-threshold"); got != math.MaxInt64 {
		t.Errorf("state congestion-threshold %d, want the value held, 2^63-1", got)
	}
}

// TestFastCNPOnTwoSwitches: Fast CNP turned on by Set on n1, the congested
// switch, and then on n2 of the same network (two targets in one process,
// as in the lab): n1's Fast CNPs still reach the senders and slow them.
// n2's management, on for Fast CNP or for border filtering alone, put its
// own receivers in front of every host after n1's; the old ones took
// every Fast CNP and dropped n1's as untrusted (or discarded, Fast CNP
// off at n2): the senders ran at line rate and this test failed.
func TestFastCNPOnTwoSwitches(t *testing.T) {
	const borderOnly = `{"global": {"config": {"enabled": false}},
  "fast-cnp": {"config": {"border-interface": ["n2-dest"]}}}`
	for _, tt := range []struct{ desc, n2 string }{
		{"both on", fastConfig},
		{"n2 border filtering alone", borderOnly},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			rigs := newRigs(t, "testdata/line6.yaml", map[string]string{"n1": lineConfig, "n2": lineConfig})
			n1, n2 := rigs["n1"], rigs["n2"]
			n1.run(t, engine.Millisecond)
			if err := n1.setIETF("/lhcnp", fastConfig, true); err != nil {
				t.Fatalf("n1: replace with fast cnp: %v", err)
			}
			if err := n2.setIETF("/lhcnp", tt.n2, true); err != nil {
				t.Fatalf("n2: replace with %s: %v", tt.desc, err)
			}
			n1.run(t, 8*engine.Millisecond)
			if got := n1.uint(t, "/lhcnp/fast-cnp/state/counters/sent"); got == 0 {
				t.Fatal("n1 sent no Fast CNP: the test needs some")
			}
			for _, h := range n1.sw.Net.Hosts() {
				for _, q := range h.SendQPs() {
					if q.RateBitsPerSec() >= q.LineRateBitsPerSec() {
						t.Errorf("%s QP %d at line rate: n1's Fast CNPs did not slow it", h.Name(), q.QPN)
					}
				}
			}
		})
	}
}
