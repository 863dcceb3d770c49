package dataplane_test

import (
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
