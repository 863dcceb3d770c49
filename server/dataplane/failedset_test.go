package dataplane_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openconfig/ygot/ygot"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/gnmi/service"
	"github.com/lhcnp/lhcnp/server/dataplane"
)

// longHaulLine6 is a Long-haul CNP configuration of n1 on the IPv6 line
// (testdata/line6.yaml): format, WAN queue 0's explicit K_max and the WAN
// port's RTT_est (µs) as given.
func longHaulLine6(format, kmax string, rttEst int) string {
	return fmt.Sprintf(`{
  "global": {"config": {"enabled": true, %q: true},
    "rocev2-receivers": {"receiver": [{"prefix": "2001:db8::/32", "config": {"prefix": "2001:db8::/32"}}]}},
  "interfaces": {"interface": [{"name": "wan", "config": {"name": "wan", "rtt-est": %d},
    "queues": {"queue": [{"id": 0, "config": {"id": 0, "kmax-mode": "EXPLICIT", "kmax": %q,
      "v-growth": "1000000000000000", "v-ecn": "100"}}]}}]}
}`, format, rttEst, kmax)
}

// failedSetPool are configurations of /lhcnp (JSON_IETF) for n1 of the
// IPv6 line that the target accepts, each as a whole: every mode, Rate
// Advice beside some, Fast CNP's border filtering alone, the master
// switch off.
var failedSetPool = []struct{ desc, cfg string }{
	{"long-haul quiet", longHaulLine6("long-haul-cnp-rocev2", "50000000", 2000)},
	{"long-haul 1 MB", longHaulLine6("long-haul-cnp-rocev2", "1000000", 2000)},
	{"long-haul 1 MB rtt 3 ms", longHaulLine6("long-haul-cnp-rocev2", "1000000", 3000)},
	{"long-haul small table", strings.Replace(longHaulLine6("long-haul-cnp-rocev2", "1000000", 2000), `"interfaces":`,
		`"flow-table": {"config": {"max-entries": 1, "idle-timeout": 5}}, "interfaces":`, 1)},
	{"long-haul icmpv6 2 MB", longHaulLine6("long-haul-cnp-icmpv6", "2000000", 1500)},
	{"long-haul border", strings.Replace(longHaulLine6("long-haul-cnp-rocev2", "1000000", 2000), `"interfaces":`,
		`"fast-cnp": {"config": {"border-interface": ["wan"]}}, "interfaces":`, 1)},
	{"fast cnp", fastConfig},
	{"fast cnp marking", fastMarking},
	{"fast cnp master off", strings.Replace(fastConfig, `"enabled": true`, `"enabled": false`, 1)},
	{"fast cnp and rate advice", strings.Replace(fastConfig, `"fast-cnp-enabled": true`, `"fast-cnp-enabled": true, "rate-advice-enabled": true`, 1)},
	{"switch cnp", switchCNP},
	{"ingress pe", ingressPE},
	{"ingress pe border", strings.Replace(ingressPE, `"fcn":`, `"fast-cnp": {"config": {"border-interface": ["wan"]}}, "fcn":`, 1)},
	{"fcn transit", fcnTransitConfig},
	{"rate advice", rateAdvice},
	{"rate advice beside long-haul", rateAdviceLongHaul},
	{"rate advice 250 us", strings.Replace(rateAdvice, `"rate-advice": {`, `"rate-advice": {"config": {"min-advice-interval": 250}, `, 1)},
	{"master off", `{"global": {"config": {"enabled": false}}}`},
}

// TestFailedSetChangesNothing: a Set that fails at apply time, after some
// mechanisms were set (a mechanism beside the mode that cannot be
// created, or one that refuses its configuration, the switch then set
// back, each before Rate Advice in the kinds' order or after it), changes
// nothing anyone can observe. Seeded random sequences of the
// configurations of failedSetPool, some of them failing, go to one
// switch; the same sequences without the failing Sets go to another,
// built alike. After each Set and after each millisecond of simulation
// the two must be the same: the state tree (every leaf, counters and
// timestamps included), the engine's clock, events pending and events
// run (no timer left behind, not even one that would fire once and do
// nothing), every host's counters and QPs (rates, bytes, the capability
// bits), every switch port's counters and what the served switch's ports
// report to and its forwarders are. Just after a Set the events pending
// were not compared, nor the events run at all, and a failed Set that
// created Rate Advice left its sweep pending (it fired once, stale): seed
// 0 failed at step 1 once they were, on the code before
// TestFailedSetLeavesNoSweep.
func TestFailedSetChangesNothing(t *testing.T) {
	// A fault is a mechanism beside the mode that cannot be created
	// (before Rate Advice in the kinds' order, or after it), or one that
	// exists and refuses its configuration when configured (before or
	// after Rate Advice): the Set fails after the mechanisms before it
	// were configured, and the switch is set back.
	faults := []struct{ name, err string }{
		{"fault", "fault: cannot be created"},
		{"zz-fault", "zz-fault: cannot be created"},
		{"a-refuse", "a-refuse: configuration refused"},
		{"zz-refuse", "zz-refuse: configuration refused"},
	}
	failing := ""
	for _, f := range faults[:2] {
		dataplane.RegisterUncreatable(t, f.name, func(*oc.Lhcnp_Lhcnp) bool { return failing == f.name })
	}
	for _, f := range faults[2:] {
		// Once: setting the switch back configures it again.
		dataplane.RegisterUnconfigurable(t, f.name, func() bool {
			refuse := failing == f.name
			if refuse {
				failing = ""
			}
			return refuse
		})
	}
	const steps = 10
	forSeeds(t, 20, 0x5e7, func(t *testing.T, rng *rand.Rand) {
		every, good, compare := twinRigs(t)
		var history []string
		for step := range steps {
			c := failedSetPool[rng.IntN(len(failedSetPool))]
			fault := -1
			if rng.IntN(3) == 0 {
				fault = rng.IntN(len(faults))
			}
			if fault >= 0 {
				failing = faults[fault].name
			}
			err := every.setIETF("/lhcnp", c.cfg, true)
			failing = ""
			if fault >= 0 {
				if err == nil || !strings.Contains(err.Error(), faults[fault].err) {
					t.Fatalf("step %d: %s with %s: %v, want the fault's error", step, c.desc, faults[fault].name, err)
				}
				history = append(history, c.desc+" failing at "+faults[fault].name)
			} else {
				if err != nil {
					t.Fatalf("step %d: %s: %v", step, c.desc, err)
				}
				if err := good.setIETF("/lhcnp", c.cfg, true); err != nil {
					t.Fatalf("step %d: %s on the other switch: %v", step, c.desc, err)
				}
				history = append(history, c.desc)
			}
			if !compareRun(t, every, good, compare, history, fmt.Sprintf("step %d, ", step), "the Set", engine.Time(step+1)*engine.Millisecond) {
				return
			}
		}
	})
}

// forSeeds runs f as a subtest "seed N" for each seed N below n, with a
// generator seeded with N and stream: n seeds, one under -short (the race
// step of make test; the unit step runs them all).
func forSeeds(t *testing.T, n, stream uint64, f func(t *testing.T, rng *rand.Rand)) {
	t.Helper()
	if testing.Short() {
		n = 1
	}
	for seed := range n {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			f(t, rand.New(rand.NewPCG(seed, stream)))
		})
	}
}

// TestFailedSetLeavesNoSweep: a Set that creates Rate Advice's function
// and fails after it, at a mechanism beside the mode that cannot be
// created or at one that refuses its configuration (the switch set
// back), leaves no event of it in the engine: the events pending, the
// next one's time and, after a millisecond, the events run are those of
// a switch that never saw the Set. The function armed its sweep when
// created, and the Set that removed it left the sweep pending, to fire
// once and find itself stale (this test failed then, for either fault:
// one event more pending just after the Set).
func TestFailedSetLeavesNoSweep(t *testing.T) {
	failing := ""
	dataplane.RegisterUncreatable(t, "zz-fault", func(*oc.Lhcnp_Lhcnp) bool { return failing == "zz-fault" })
	dataplane.RegisterUnconfigurable(t, "zz-refuse", func() bool {
		refuse := failing == "zz-refuse"
		failing = "" // once: setting the switch back configures it again
		return refuse
	})
	for _, fault := range []string{"zz-fault", "zz-refuse"} {
		t.Run(fault, func(t *testing.T) {
			every, good, compare := twinRigs(t)
			failing = fault
			err := every.setIETF("/lhcnp", rateAdvice, true)
			failing = ""
			if err == nil || !strings.Contains(err.Error(), fault+":") {
				t.Fatalf("rate advice failing at %s: %v, want its error", fault, err)
			}
			compareRun(t, every, good, compare, []string{"rate advice failing at " + fault}, "", "the Set", engine.Millisecond)
		})
	}
}

// twinRigs serves n1 of the IPv6 line twice, alike, from the first
// configuration of failedSetPool, with the same wall-clock start: every
// (its handler made with everyOpts) is to get the Sets that must change
// nothing, good not. compare reports (as an error, when, after the
// history of Sets) whether the two show the same (observe).
func twinRigs(t *testing.T, everyOpts ...service.HandlerOption) (every, good *rig, compare func(t *testing.T, history []string, when string) bool) {
	t.Helper()
	wall := dataplane.WithWallStart(time.Unix(1_700_000_000, 0))
	first := wholeTree(failedSetPool[0].cfg)
	every = newRigsWith(t, "testdata/line6.yaml", map[string]string{"n1": first}, everyOpts, wall)["n1"]
	good = newRigFrom(t, "testdata/line6.yaml", first, wall)
	compare = func(t *testing.T, history []string, when string) bool {
		t.Helper()
		if diff := cmp.Diff(observe(t, good), observe(t, every)); diff != "" {
			t.Errorf("%s, after %s (-without the Sets that change nothing +with them):\n%s", when, strings.Join(history, ", "), diff)
			return false
		}
		return true
	}
	return every, good, compare
}

// compareRun compares every and good (twinRigs) just after a Set (set,
// in a step), runs both to until and compares them again.
func compareRun(t *testing.T, every, good *rig, compare func(t *testing.T, history []string, when string) bool,
	history []string, step, set string, until engine.Time) bool {
	t.Helper()
	if !compare(t, history, step+"just after "+set) {
		return false
	}
	every.run(t, until)
	good.run(t, until)
	return compare(t, history, fmt.Sprintf("%sat %v", step, until))
}

// observe is what a rig shows of its switch and network, deterministic
// for a seeded run: the state tree as JSON, then the engine, hosts and
// switches, one line each. The engine's line has its events pending and
// the time of the next, and the events it ran: a Set that changes
// nothing schedules nothing, where a timer it left behind or re-armed is
// pending just after it and runs once more, even one that fires once and
// does nothing (a superseded sweep that finds itself stale), which
// nothing else shows.
func observe(t *testing.T, r *rig) []string {
	t.Helper()
	out := strings.Split(stateJSON(t, r), "\n")
	add := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	r.sw.Sim.Do(func() {
		add("engine: now %v", r.sw.Sim.Now())
		add("engine: %d events pending, the next at %v; %d run", r.sw.Sim.Pending(), r.sw.Sim.NextAt(), r.sw.Sim.Events())
		for _, h := range r.sw.Net.Hosts() {
			add("host %s: %+v, reserved bits %#x, control %T", h.Name(), h.Stats(), h.ReservedBits(), h.ControlHandler())
			for _, q := range h.SendQPs() {
				add("host %s QP %d: sent %d acked %d, rate %d target %d ceiling %d alpha %g, reserved bits %#x", h.Name(), q.QPN,
					q.SentBytes(), q.AckedBytes(), q.RateBitsPerSec(), q.TargetRateBitsPerSec(), q.CeilingBitsPerSec(), q.Alpha(), q.ReservedBits())
			}
		}
		for _, sw := range r.sw.Net.Switches() {
			add("switch %s: %+v", sw.Name(), sw.Stats())
			for _, pt := range sw.Ports() {
				add("switch %s port %s: %+v", sw.Name(), pt.Name(), pt.Stats())
			}
		}
		sw := r.sw.Switch
		for st := range netsim.NumForwardStages {
			add("switch %s %v stage: %T", sw.Name(), st, sw.Forwarder(st))
		}
		for _, pt := range sw.Ports() {
			add("switch %s port %s reports to %T", sw.Name(), pt.Name(), pt.Observer())
		}
	})
	return out
}

// stateJSON is the binding's state tree (Snapshot), every leaf, as
// indented JSON (RFC 7951).
func stateJSON(t *testing.T, r *rig) string {
	t.Helper()
	root, err := r.b.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	js, err := ygot.EmitJSON(root, &ygot.EmitJSONConfig{Format: ygot.RFC7951, Indent: " ", SkipValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// TestRefusedModeChangesNothing: a Set refused by a mode after the modes
// before it in the kinds' order were switched off, each handing the node
// the Set's configuration (RTT_est changed, say), changes nothing once
// the switch is set back: the node's count and time of RTT_est updates
// are as before (lhcnp.Node.Checkpoint), as is every other observable
// (observe). Fast CNP, FCN and the switch CNP exist, off, and every
// configuration of failedSetPool is refused in turn by zz-mode, which
// sorts after them. Setting back counted the change and the change back
// before (this test failed then).
func TestRefusedModeChangesNothing(t *testing.T) {
	failing := false
	dataplane.RegisterUnconfigurableMode(t, "zz-mode", func() bool {
		refuse := failing
		failing = false // once: setting back configures it again
		return refuse
	})
	every, good, compare := twinRigs(t)
	byDesc := map[string]string{}
	for _, c := range failedSetPool {
		byDesc[c.desc] = c.cfg
	}
	history := []string{}
	for _, desc := range []string{"fast cnp", "ingress pe", "switch cnp", "long-haul quiet"} {
		for _, r := range []*rig{every, good} {
			if err := r.setIETF("/lhcnp", byDesc[desc], true); err != nil {
				t.Fatalf("%s: %v", desc, err)
			}
		}
		history = append(history, desc)
	}
	for i, c := range failedSetPool {
		failing = true
		err := every.setIETF("/lhcnp", c.cfg, true)
		failing = false
		if err == nil || !strings.Contains(err.Error(), "zz-mode: configuration refused") {
			t.Fatalf("%s with zz-mode refusing: %v, want its error", c.desc, err)
		}
		history = append(history, c.desc+" refused by zz-mode")
		if !compareRun(t, every, good, compare, history, "", "the Set", engine.Time(i+1)*engine.Millisecond) {
			return
		}
	}
}
