package dataplane_test

import (
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

const (
	masterConfig = "/lhcnp/global/config/enabled"
	masterState  = "/lhcnp/global/state/enabled"
)

// wholeTree wraps the JSON_IETF value of /lhcnp as a whole initial
// configuration.
func wholeTree(lhcnp string) string { return `{"lhcnp:lhcnp": ` + lhcnp + `}` }

// The mechanisms' configurations of the master switch's tests, each on
// with the master switch on, with no Long-haul CNP format but in
// rateAdviceLongHaul.
const (
	// fastMarking is fastConfig with the senders not known capable: Fast
	// CNP also marks their packets (ecn-mark-alongside).
	fastMarking = `{
  "global": {"config": {"enabled": true, "fast-cnp-enabled": true}},
  "fast-cnp": {
    "config": {"congestion-threshold": "1000000", "min-cnp-interval": 100},
    "source-prefixes": {"source-prefix": [{"prefix": "2001:db8::/32",
      "config": {"prefix": "2001:db8::/32", "sender-capable": false}}]}
  }
}`
	ingressPE = `{
  "global": {"config": {"enabled": true, "fcn-role": "INGRESS_PE"}},
  "fcn": {"config": {"congestion-threshold": "1000000", "domain": ["2001:db8::/32"]}}
}`
	rateAdvice = `{
  "global": {"config": {"enabled": true, "rate-advice-enabled": true}},
  "rate-advice": {"policies": {"policy": [{"name": "p1", "config": {"name": "p1", "rate": 3000}}]}}
}`
	rateAdviceLongHaul = `{
  "global": {"config": {"enabled": true, "rate-advice-enabled": true, "long-haul-cnp-rocev2": true},
    "rocev2-receivers": {"receiver": [{"prefix": "10.0.0.0/8", "config": {"prefix": "10.0.0.0/8"}}]}},
  "rate-advice": {"policies": {"policy": [{"name": "p1", "config": {"name": "p1", "rate": 8000}}]}}
}`
	// The FCN network's (testdata/wan6.yaml): pe1 its ingress PE, t1 the
	// congested transit node.
	fcnPEConfig      = `{"global": {"config": {"enabled": true, "fcn-role": "INGRESS_PE"}}, "fcn": {"config": {"domain": ["2001:db8:f::/48"], "congestion-threshold": "100000000"}}}`
	fcnTransitConfig = `{"global": {"config": {"enabled": true, "fcn-role": "TRANSIT"}}, "fcn": {"config": {"congestion-threshold": "200000"}}}`
	switchCNP        = `{
  "global": {"config": {"enabled": true, "cnp-dscp": 26}},
  "switch-cnp": {"config": {"enabled": true, "delay-threshold": 20, "buffer-share": 1}}
}`
)

// TestMasterSwitchGatesMechanisms: the master switch (global enabled) is
// the YANG model's: off, no mechanism sends or marks, whatever its own
// leaf says, and back on each runs again. For each mechanism, configured
// on with the master switch off from the start, its counters are
// published and stay at zero; the master switch on, they grow; off, they
// stay where they were over a further run of the engine; on again, they
// grow. The global state's enabled echoes the master switch throughout
// (not the mechanism's detection, which is on), and the mechanism's own
// leaf stays as configured in the state while the master switch holds it
// off. On the old target every mechanism ran on its own leaf alone and
// the state echoed enabled true with the master switch off.
func TestMasterSwitchGatesMechanisms(t *testing.T) {
	for _, tt := range []struct {
		desc, file string
		configs    map[string]string // initial configuration per served switch
		subject    string            // the switch whose master switch is turned
		counters   []string          // each grows while the mechanism runs
		echo       [2]string         // the mechanism's own leaf in the state, and its value
		// whileOff, if set, is a leaf and its JSON_IETF value set while
		// the master switch is off, which would have the mechanism send
		// (Rate Advice advises a flow again only when its advice changes).
		whileOff [2]string
	}{
		{desc: "fast cnp", file: "testdata/line6.yaml", configs: map[string]string{"n1": wholeTree(fastMarking)}, subject: "n1",
			counters: []string{"/lhcnp/fast-cnp/state/counters/sent", "/lhcnp/fast-cnp/state/counters/ecn-marked-alongside"},
			echo:     [2]string{"/lhcnp/global/state/fast-cnp-enabled", "true"}},
		{desc: "fcn ingress pe", file: "testdata/line6.yaml", configs: map[string]string{"n1": wholeTree(ingressPE)}, subject: "n1",
			// The PE's direct CNPs for its own congestion.
			counters: []string{"/lhcnp/interfaces/interface[name=wan]/state/counters/notifications-sent"},
			echo:     [2]string{"/lhcnp/global/state/fcn-role", `"INGRESS_PE"`}},
		{desc: "fcn transit", file: "testdata/wan6.yaml", configs: map[string]string{"pe1": wholeTree(fcnPEConfig), "t1": wholeTree(fcnTransitConfig)},
			subject:  "t1",
			counters: []string{"/lhcnp/fcn/state/counters/fcn-sent"},
			echo:     [2]string{"/lhcnp/global/state/fcn-role", `"TRANSIT"`}},
		// Beside Long-haul CNP (RoCEv2 format, the node's default
		// thresholds; the policy's 8 Gb/s per sender still congests the
		// WAN), whose CNPs the master switch holds back too.
		{desc: "rate advice", file: "testdata/line.yaml", configs: map[string]string{"n1": wholeTree(rateAdviceLongHaul)}, subject: "n1",
			counters: []string{"/lhcnp/rate-advice/state/counters/messages-sent", "/lhcnp/interfaces/interface[name=wan]/state/counters/notifications-sent"},
			echo:     [2]string{"/lhcnp/global/state/rate-advice-enabled", "true"},
			whileOff: [2]string{"/lhcnp/rate-advice/policies/policy[name=p1]/config/rate", "6000"}},
		{desc: "switch cnp", file: "testdata/line.yaml", configs: map[string]string{"n1": wholeTree(switchCNP)}, subject: "n1",
			counters: []string{"/lhcnp/switch-cnp/state/counters/sent"},
			echo:     [2]string{"/lhcnp/switch-cnp/state/enabled", "true"}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			// The subject starts with its master switch off (the first
			// "enabled" of its configuration is the global one).
			configs := maps.Clone(tt.configs)
			configs[tt.subject] = strings.Replace(configs[tt.subject], `"enabled": true`, `"enabled": false`, 1)
			r := newRigs(t, tt.file, configs)[tt.subject]
			read := func() []uint64 {
				var v []uint64
				for _, c := range tt.counters {
					v = append(v, r.uint(t, c))
				}
				return v
			}
			for i, master := range []bool{false, true, false, true} {
				when := fmt.Sprintf("phase %d, master switch %v", i, master)
				if i > 0 {
					if err := r.setJSON(t, masterConfig, strconv.FormatBool(master)); err != nil {
						t.Fatalf("%s: %v", when, err)
					}
				}
				if i == 2 && tt.whileOff[0] != "" {
					if err := r.setJSON(t, tt.whileOff[0], tt.whileOff[1]); err != nil {
						t.Fatalf("%s: set %s: %v", when, tt.whileOff[0], err)
					}
				}
				// The mechanism's state is there from the start, its own
				// leaf as configured; the master switch's as configured.
				if got := r.getJSON(t, masterState); got != strconv.FormatBool(master) {
					t.Errorf("%s: %s = %s, want the master switch's %v", when, masterState, got, master)
				}
				if got := r.getJSON(t, tt.echo[0]); got != tt.echo[1] {
					t.Errorf("%s: %s = %s, want it as configured, %s", when, tt.echo[0], got, tt.echo[1])
				}
				from := read()
				r.run(t, engine.Time(i+1)*8*engine.Millisecond)
				to := read()
				for k, c := range tt.counters {
					if master && to[k] <= from[k] {
						t.Errorf("%s: %s %d -> %d over 8 ms, want it to grow", when, c, from[k], to[k])
					}
					if !master && to[k] != from[k] {
						t.Errorf("%s: %s %d -> %d over 8 ms, want it still", when, c, from[k], to[k])
					}
				}
			}
		})
	}
}

// TestMasterSwitchWithoutLongHaulFormat: the master switch on with no
// Long-haul CNP format is accepted when another mechanism runs (here Rate
// Advice alone, which sends its advice while the node sends no Long-haul
// CNP), and refused when nothing would be sent at all (Rate Advice turned
// off), naming the master switch and §6; the refused Set changes neither
// the configuration, nor the state, nor the node. The old target refused
// the first: the node's own check (§6) counted Long-haul CNP formats only.
func TestMasterSwitchWithoutLongHaulFormat(t *testing.T) {
	r := newRigFrom(t, "testdata/line.yaml", wholeTree(rateAdvice))
	r.run(t, 4*engine.Millisecond)
	const advice = "/lhcnp/rate-advice/state/counters/messages-sent"
	if sent := r.uint(t, advice); sent == 0 {
		t.Errorf("%s = 0, want Rate Advice running", advice)
	}
	// The queue's Long-haul CNPs by action (notifications-sent counts
	// the Rate Advice messages too).
	for _, action := range []string{"notify", "pause", "rate-reduce", "resume"} {
		lhcnps := q0 + "/state/counters/cnp-" + action + "-sent"
		if got := r.uint(t, lhcnps); got != 0 || r.sw.Node.Config().Enabled {
			t.Errorf("%s = %d, node enabled %v: want no Long-haul CNP without a format", lhcnps, got, r.sw.Node.Config().Enabled)
		}
	}
	if got := r.getJSON(t, masterState); got != "true" {
		t.Errorf("%s = %s, want true", masterState, got)
	}

	before := r.sw.Node.Config()
	err := r.setJSON(t, "/lhcnp/global/config/rate-advice-enabled", "false")
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), masterConfig) || !strings.Contains(err.Error(), "§6") {
		t.Fatalf("master switch on with nothing to send: %v, want InvalidArgument naming %s and §6", err, masterConfig)
	}
	if after := r.sw.Node.Config(); !reflect.DeepEqual(after, before) {
		t.Errorf("a refused Set changed the node's configuration")
	}
	for _, leaf := range []string{"config", "state"} {
		if got := r.getJSON(t, "/lhcnp/global/"+leaf+"/rate-advice-enabled"); got != "true" {
			t.Errorf("after a refused Set: %s rate-advice-enabled = %s, want true", leaf, got)
		}
	}
}

// TestModeChangeWithMasterOn: with the master switch on and no Long-haul
// CNP format, one mode replaces another in one Set (Fast CNP by the
// switch CNP and back) and the new one runs. The old target refused it:
// the mode switched off handed the node back its Long-haul CNP
// configuration, enabled with no format.
func TestModeChangeWithMasterOn(t *testing.T) {
	for _, tt := range []struct {
		desc            string
		from, to        string
		counter, format string
	}{
		{"fast cnp to switch cnp", fastConfig, switchCNP, "/lhcnp/switch-cnp/state/counters/sent", "STANDARD_CNP"},
		{"switch cnp to fast cnp", switchCNP, fastConfig, "/lhcnp/fast-cnp/state/counters/sent", "FAST_CNP"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			r := newRigFrom(t, "testdata/line6.yaml", wholeTree(tt.from))
			r.run(t, 4*engine.Millisecond)
			if err := r.setIETF("/lhcnp", tt.to, true); err != nil {
				t.Fatalf("replace: %v", err)
			}
			r.run(t, 12*engine.Millisecond)
			if got := r.uint(t, tt.counter); got == 0 {
				t.Errorf("%s = 0, want the new mode running", tt.counter)
			}
			if last := r.getJSON(t, q0+"/state/last-cnp"); !strings.Contains(last, `"lhcnp:format":"`+tt.format+`"`) {
				t.Errorf("%s/state/last-cnp = %s, want format %s", q0, last, tt.format)
			}
			if got := r.getJSON(t, masterState); got != "true" {
				t.Errorf("%s = %s, want true", masterState, got)
			}
		})
	}
}
