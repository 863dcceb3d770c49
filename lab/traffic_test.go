package lab

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/server/dataplane"
)

const labScenario = "../scenarios/lab.yaml"

// labNetwork builds the lab topology from the loop's window 0, all three
// switches in this process, and installs the loop.
func labNetwork(t testing.TB, loop *Loop) *dataplane.Network {
	t.Helper()
	n, err := dataplane.BuildNetwork(loop.Scenario(), []dataplane.Served{{Name: "t1"}, {Name: "n1"}, {Name: "n2"}}, dataplane.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLoopWindows: window 0 is the file's flows and the first period of
// web-search; window k is the file's sized flows moved by k periods, with
// fresh names and queue pairs left to the hosts, and web-search flows of
// its own period only; the long-lived flow is never repeated; a window is
// the same every time it is made.
func TestLoopWindows(t *testing.T) {
	base, err := scenario.LoadFile(labScenario)
	if err != nil {
		t.Fatal(err)
	}
	const period = 4 * time.Second
	loop, err := NewLoop(labScenario, Traffic{Period: period, WebSearchLoad: 0.02})
	if err != nil {
		t.Fatal(err)
	}
	var sized []scenario.Flow
	for _, f := range base.Flows {
		if f.Group == "" && !f.LongLived() {
			sized = append(sized, f)
		}
	}
	var web0 int
	for _, f := range loop.Scenario().Flows {
		if f.Group == webSearchGroup {
			web0++
			if f.Start >= period {
				t.Errorf("window 0: web-search flow %s starts at %v, after the window", f.Name, f.Start)
			}
		}
	}
	if got, want := len(loop.Scenario().Flows), len(base.Flows)+web0; web0 == 0 || got != want {
		t.Errorf("window 0: %d flows (%d web-search), want the file's %d and some web-search", got, web0, len(base.Flows))
	}
	for _, k := range []int{1, 2, 45, 1000} {
		flows, err := loop.Window(k)
		if err != nil {
			t.Fatal(err)
		}
		again, err := loop.Window(k)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(flows, again); d != "" {
			t.Errorf("window %d made twice differs (-first +second):\n%s", k, d)
		}
		lo, hi := time.Duration(k)*period, time.Duration(k+1)*period
		var gotSized, web int
		for _, f := range flows {
			if f.SrcQP != 0 || f.DstQP != 0 {
				t.Errorf("window %d: flow %s has queue pairs %d/%d, want them left to the hosts", k, f.Name, f.SrcQP, f.DstQP)
			}
			if f.LongLived() {
				t.Errorf("window %d: long-lived flow %s repeated", k, f.Name)
			}
			if f.Group == webSearchGroup {
				web++
				if f.Start < lo || f.Start >= hi || !strings.HasPrefix(f.Name, webSearchGroup+"-w") {
					t.Errorf("window %d: web-search flow %s at %v, want within [%v, %v)", k, f.Name, f.Start, lo, hi)
				}
				continue
			}
			orig := sized[gotSized]
			gotSized++
			want := orig
			want.Name = orig.Name + "-w" + strconv.Itoa(k)
			want.Start = orig.Start + lo
			want.SrcQP, want.DstQP = 0, 0
			if d := cmp.Diff(want, f); d != "" {
				t.Errorf("window %d: sized flow (-want +got):\n%s", k, d)
			}
		}
		if gotSized != len(sized) || web == 0 {
			t.Errorf("window %d: %d sized and %d web-search flows, want %d sized and some web-search", k, gotSized, web, len(sized))
		}
	}
}

// TestLoopPeriodZero: period 0 is the file's flows once, as written, with
// no window after; a web-search load with it is refused, where it was
// dropped without a word (there is no window to draw it in).
func TestLoopPeriodZero(t *testing.T) {
	base, err := scenario.LoadFile(labScenario)
	if err != nil {
		t.Fatal(err)
	}
	loop, err := NewLoop(labScenario, Traffic{})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(flowNames(base.Flows), flowNames(loop.Scenario().Flows)); d != "" {
		t.Errorf("period 0: window 0's flows (-the file's, +got):\n%s", d)
	}
	if w, err := loop.Window(1); err != nil || w != nil {
		t.Errorf("period 0: Window(1) = %d flows, %v; want none", len(w), err)
	}
	if _, err := NewLoop(labScenario, Traffic{WebSearchLoad: 0.02}); err == nil {
		t.Error("period 0 with a web-search load: no error")
	}
	if _, err := NewLoop(labScenario, Traffic{Until: time.Second}); err == nil {
		t.Error("period 0 with until: no error")
	}
}

func flowNames(fs []scenario.Flow) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name)
	}
	return out
}

// TestLoopRunsInTheEngine: on the engine, the flows of every window start
// and send. Ten windows of 100 ms of simulated time (the file's bursts move
// by a window each time, so they overlap: a busy lab), and in each window
// some of its repeated flows and some of its web-search flows connect and
// send. Simulated time only.
func TestLoopRunsInTheEngine(t *testing.T) {
	const period = 100 * time.Millisecond
	loop, err := NewLoop(labScenario, Traffic{Period: period, WebSearchLoad: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	n := labNetwork(t, loop)
	var errs []error
	loop.Install(n, func(err error) { errs = append(errs, err) })
	n.Sim.Run(engine.FromDuration(10 * period))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	// Per window (by the flows' names), the flows that connected and sent.
	sized, web := map[int]int{}, map[int]int{}
	for _, f := range n.Net.Flows() {
		m := windowRE.FindStringSubmatch(f.Name)
		if m == nil || f.Sender.ConnectedAt() < 0 || f.Sender.SentBytes() == 0 {
			continue
		}
		k, _ := strconv.Atoi(m[1])
		if strings.HasPrefix(f.Name, webSearchGroup) {
			web[k]++
		} else {
			sized[k]++
		}
	}
	// The first repeated flows of window k start at k·100 ms + 100 ms
	// (the file's first burst) and cross the WAN (10 ms of round trip and
	// the bursts' queue): windows 1 to 7 have had the time.
	for k := 1; k <= 7; k++ {
		if sized[k] == 0 || web[k] == 0 {
			t.Errorf("window %d: %d repeated and %d web-search flows connected and sent, want some of each (repeated %v, web-search %v)", k, sized[k], web[k], sized, web)
		}
	}
}

// TestLoopPastTheOldHorizon: the traffic no longer ends. Before, the lab
// expanded its windows up to --horizon (1 h of wall clock, 180 s of
// simulated time at speed 0.05) and after that only the long-lived flow
// ran; now every window is added while the engine runs. The generator is
// run alone to 200 s of simulated time (the flows held: their senders
// stopped, so the engine has only the generator's events) and every
// window up to the end has its flows, past 180 s too; with Until the
// windows stop there.
func TestLoopPastTheOldHorizon(t *testing.T) {
	const period = 4 * time.Second
	const oldHorizon = 180 * time.Second
	for _, tt := range []struct {
		desc  string
		until time.Duration
	}{
		{desc: "for ever"},
		{desc: "until 100s", until: 100 * time.Second},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			loop, err := NewLoop(labScenario, Traffic{Period: period, WebSearchLoad: 0.02, Until: tt.until})
			if err != nil {
				t.Fatal(err)
			}
			n := labNetwork(t, loop)
			for _, f := range n.Net.Flows() {
				f.Sender.AdminStop()
			}
			// Every flow added from here on is dormant: no packets.
			held := *n
			held.Local = map[string]bool{}
			loop.Install(&held, func(err error) { t.Error(err) })
			end := oldHorizon + 20*time.Second
			n.Sim.Run(engine.FromDuration(end))
			// Flows per window, by their names (NAME-wK, lab-websearch-wK/N).
			last := map[int]int{}
			for _, f := range n.Net.Flows() {
				if m := windowRE.FindStringSubmatch(f.Name); m != nil {
					k, _ := strconv.Atoi(m[1])
					last[k]++
				}
			}
			stopAt := int(end / period)
			if tt.until > 0 {
				stopAt = int(tt.until / period)
			}
			for w := 1; w < int(end/period); w++ {
				if (w < stopAt) != (last[w] > 0) {
					t.Errorf("window %d (from %v): %d flows; windows stop at %d", w, time.Duration(w)*period, last[w], stopAt)
				}
			}
		})
	}
}

var windowRE = regexp.MustCompile(`-w([0-9]+)(/|$)`)

// TestLoopRetiresFinishedFlows: with Traffic.RetireFinished the lab's
// network drops the queue pairs of finished flows. Twenty windows of
// 100 ms of simulated time: the hosts' QP tables and scheduling lists
// stay at what a few windows run at once while the flows ever run grow
// window after window, the reaction point keeps no state for a retired QP,
// and the run is the run without retirement: every flow finishes at the
// same time, every switch port counts the same, and every host's
// counters (live QPs plus Retired) add up to the same totals.
func TestLoopRetiresFinishedFlows(t *testing.T) {
	const period = 100 * time.Millisecond
	const windows = 20
	type result struct {
		done        map[string]engine.Time
		ports       []netsim.PortStats
		hosts       map[string][2]int64 // sent, received payload bytes
		maxSendQPs  int
		maxTracked  int
		flows       int
		retired     int64
		unknownDrop int64
	}
	run := func(retire bool) result {
		loop, err := NewLoop(labScenario, Traffic{Period: period, WebSearchLoad: 0.1, RetireFinished: retire})
		if err != nil {
			t.Fatal(err)
		}
		n := labNetwork(t, loop)
		loop.Install(n, func(err error) { t.Error(err) })
		var res result
		n.Sim.Every(0, engine.FromDuration(period/10), func(engine.Time) {
			for _, h := range n.Net.Hosts() {
				s, _ := h.LiveQPs()
				res.maxSendQPs = max(res.maxSendQPs, s)
			}
			if n.Reaction != nil {
				res.maxTracked = max(res.maxTracked, n.Reaction.TrackedQPs())
			}
		})
		n.Sim.Run(engine.FromDuration(windows * period))
		res.done = map[string]engine.Time{}
		for _, f := range n.Net.Flows() {
			if ok, at := f.Done(); ok {
				res.done[f.Name] = at
			}
		}
		for _, pt := range n.Net.Ports() {
			res.ports = append(res.ports, pt.Stats())
		}
		res.hosts = map[string][2]int64{}
		for _, h := range n.Net.Hosts() {
			r := h.Retired()
			sent, recv := r.SentBytes, r.RxBytes
			for _, q := range h.SendQPs() {
				sent += q.SentBytes()
			}
			for _, f := range n.Net.Flows() {
				if f.Receiver != nil && f.Receiver.Host() == h {
					recv += f.Receiver.RxBytes()
				}
			}
			res.hosts[h.Name()] = [2]int64{sent, recv}
			res.unknownDrop += h.Stats().UnknownDropped
		}
		res.flows = len(n.Net.Flows())
		res.retired = n.Net.RetiredFlows()
		return res
	}
	on, off := run(true), run(false)
	t.Logf("%d flows, %d retired; sender QPs on a host at most %d with retirement, %d without; reaction states at most %d with, %d without",
		on.flows, on.retired, on.maxSendQPs, off.maxSendQPs, on.maxTracked, off.maxTracked)
	if on.retired < int64(on.flows)/2 {
		t.Errorf("%d of %d flows retired, want most", on.retired, on.flows)
	}
	if on.maxSendQPs*3 > off.maxSendQPs {
		t.Errorf("sender QPs on a host at most %d with retirement, %d without: want a third or less", on.maxSendQPs, off.maxSendQPs)
	}
	if on.maxTracked > off.maxTracked {
		t.Errorf("reaction point states at most %d with retirement, more than %d without", on.maxTracked, off.maxTracked)
	}
	if len(on.done) == 0 {
		t.Fatal("no flow finished")
	}
	if diff := cmp.Diff(off.done, on.done); diff != "" {
		t.Errorf("flow completion times (-without +with retirement):\n%s", diff)
	}
	if diff := cmp.Diff(off.ports, on.ports); diff != "" {
		t.Errorf("port counters (-without +with retirement):\n%s", diff)
	}
	if diff := cmp.Diff(off.hosts, on.hosts); diff != "" {
		t.Errorf("hosts' sent and received bytes (-without +with retirement):\n%s", diff)
	}
	if on.unknownDrop != off.unknownDrop {
		t.Errorf("packets for unknown QPs: %d with retirement, %d without (a retired QP got a packet)", on.unknownDrop, off.unknownDrop)
	}
}

// TestLoopRetiredFlowStop: a sized flow that ends long before its stop,
// in window 0 and in the repeated windows: with
// Traffic.RetireFinished each window's copy finishes, is retired, and its
// stop then finds no queue pair (Flow.Sender is nil) and does nothing.
func TestLoopRetiredFlowStop(t *testing.T) {
	const path = "../server/dataplane/testdata/retired.yaml"
	const period = 100 * time.Millisecond
	loop, err := NewLoop(path, Traffic{Period: period, RetireFinished: true})
	if err != nil {
		t.Fatal(err)
	}
	n, err := dataplane.BuildNetwork(loop.Scenario(), []dataplane.Served{{Name: "n1"}}, dataplane.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	loop.Install(n, func(err error) { t.Error(err) })
	// Past the stops of windows 0, 1 and 2 (window 3 is added, not begun)
	// and window 0's flow-stop and flow-start events.
	n.Sim.Run(engine.FromDuration(3*period - period/4))
	var stopped []string
	for _, f := range n.Net.Flows() {
		if f.Name == "short-w3" {
			continue
		}
		if done, at := f.Done(); !done || !f.Retired() {
			t.Errorf("flow %s: done %v at %v, retired %v: want each copy done and retired before its stop", f.Name, done, at, f.Retired())
		}
		stopped = append(stopped, f.Name)
	}
	if diff := cmp.Diff([]string{"short", "short-w1", "short-w2"}, stopped); diff != "" {
		t.Errorf("flows past their stop (-want +got):\n%s", diff)
	}
}
