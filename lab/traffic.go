package lab

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/server/dataplane"
)

// Traffic is how the lab keeps its switches busy.
type Traffic struct {
	// Period is the length of one window of traffic: the file's sized
	// flows (the §7 pattern: bursts and flows joining at the congestion
	// points) start again at their offsets in every window, and each
	// window has its own web-search flows. 0 keeps the file's flows as
	// written, once: there are no windows, so WebSearchLoad must be 0.
	Period time.Duration
	// WebSearchLoad adds flows drawn from the web-search size distribution
	// (scenarios/cdf/websearch.txt) from the senders of the file's sized
	// flows to their receivers, at this share of each sender's link rate;
	// 0 adds none.
	WebSearchLoad float64
	// Until, when positive, is the simulated time after which no new
	// window starts; 0 loops for ever. With Period 0 there are no
	// windows, so Until must be 0.
	Until time.Duration
	// RetireFinished drops the queue pairs of each finished flow
	// (netsim.Network.RetireFinished, RetireAfter), so that memory and the
	// hosts' per-packet work stay bounded by the flows running however long
	// the lab runs; the hosts' counters keep the retired flows' counts
	// (netsim.Host.Retired). A retired flow stays in Flows with a nil
	// Sender and Receiver.
	RetireFinished bool
}

// Loop is the lab's traffic: the scenario's long-lived flows as they are,
// and window after window of the §7 pattern and the web-search mix,
// without end. The engine needs no horizon: window 0 is part of the
// scenario the network is built from (Scenario), and Install adds the
// flows of each following window to the running network half a period
// before the window starts. A window's flows depend only on the file, the
// Traffic and the window's number (its web-search flows are drawn with the
// scenario's seed and the window number), so a run is deterministic.
//
// Without Traffic.RetireFinished the engine keeps every flow it has run
// (its queue pairs and counters), so memory grows with the flows started:
// about 15 web-search flows per sender and simulated second at the lab's
// defaults (docs/lab.md).
type Loop struct {
	path      string
	doc       map[string]any // the file, as YAML values
	base      *scenario.Scenario
	t         Traffic
	sized     []scenario.Flow // the file's sized flows, repeated each window
	senders   []string
	receivers []string
	window0   *scenario.Scenario
}

// webSearchGroup names the generated block of the lab's web-search mix.
const webSearchGroup = "lab-websearch"

// NewLoop reads the scenario at path (the lab topology) and prepares its
// looping traffic. The scenario of window 0 (Scenario) is parsed and
// validated by the scenario package as any file is.
func NewLoop(path string, t Traffic) (*Loop, error) {
	if t.Period < 0 || t.WebSearchLoad < 0 || t.WebSearchLoad > 1 || t.Until < 0 {
		return nil, fmt.Errorf("lab traffic: period %v, web-search load %g, until %v: want a period and until not negative, a load within [0, 1]",
			t.Period, t.WebSearchLoad, t.Until)
	}
	if t.Period == 0 && t.WebSearchLoad > 0 {
		// The mix is drawn window by window: without windows it was
		// dropped without a word.
		return nil, fmt.Errorf("lab traffic: web-search load %g with period 0: the mix is drawn in the windows of a period; period 0 runs the file's flows once",
			t.WebSearchLoad)
	}
	if t.Period == 0 && t.Until > 0 {
		// Until stops new windows: without windows it had no effect.
		return nil, fmt.Errorf("lab traffic: until %v with period 0: until stops the windows of a period; period 0 runs the file's flows once",
			t.Until)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	l := &Loop{path: path, t: t}
	if err := yaml.Unmarshal(data, &l.doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// The file as the scenario package reads it, for its flows' times.
	if l.base, err = scenario.Parse(path, data); err != nil {
		return nil, err
	}
	if traffic, _ := l.doc["traffic"].(map[string]any); traffic == nil {
		return nil, fmt.Errorf("%s: traffic: missing", path)
	}
	for _, f := range l.base.Flows {
		if f.Group != "" || f.LongLived() {
			continue
		}
		l.sized = append(l.sized, f)
		if !slices.Contains(l.senders, f.Src) {
			l.senders = append(l.senders, f.Src)
		}
		if !slices.Contains(l.receivers, f.Dst) {
			l.receivers = append(l.receivers, f.Dst)
		}
	}
	if t.Period <= 0 {
		l.window0 = l.base
		return l, nil
	}
	// Window 0: the file with the web-search flows of [0, Period).
	doc := l.withWebSearch(0)
	if l.window0, err = l.parse(doc); err != nil {
		return nil, err
	}
	return l, nil
}

// Scenario is the scenario to build the network from: the file's flows and
// the web-search flows of window 0.
func (l *Loop) Scenario() *scenario.Scenario { return l.window0 }

// Window returns the flows that start in window k (k >= 1): the file's
// sized flows moved by k periods (named NAME-wK) and the web-search flows
// of [k·Period, (k+1)·Period) (named lab-websearch-wK/N). Their queue pair
// numbers are 0: the hosts allocate free ones when the flows are added.
func (l *Loop) Window(k int) ([]scenario.Flow, error) {
	if k < 1 || l.t.Period <= 0 {
		return nil, nil
	}
	shift := time.Duration(k) * l.t.Period
	var out []scenario.Flow
	for _, f := range l.sized {
		c := f
		c.Name = fmt.Sprintf("%s-w%d", f.Name, k)
		c.Start += shift
		if c.Stop > 0 {
			c.Stop += shift
		}
		c.SrcQP, c.DstQP = 0, 0
		out = append(out, c)
	}
	if l.t.WebSearchLoad <= 0 || len(l.senders) == 0 {
		return out, nil
	}
	// The window's web-search flows, drawn by the scenario package from a
	// file holding only them.
	doc := l.withWebSearch(k)
	gen := doc["traffic"].(map[string]any)["generated"].([]any)
	doc["traffic"] = map[string]any{"generated": gen[len(gen)-1:]}
	delete(doc, "events")
	sc, err := l.parse(doc)
	if err != nil {
		return nil, err
	}
	for _, f := range sc.Flows {
		if f.Group != webSearchGroup {
			continue
		}
		f.Name = fmt.Sprintf("%s-w%d%s", webSearchGroup, k, f.Name[len(webSearchGroup):])
		f.SrcQP, f.DstQP = 0, 0
		out = append(out, f)
	}
	return out, nil
}

// withWebSearch returns a copy of the file's document with the web-search
// block of window k (if any) and a duration that covers it.
func (l *Loop) withWebSearch(k int) map[string]any {
	doc := maps.Clone(l.doc)
	traffic := maps.Clone(l.doc["traffic"].(map[string]any))
	doc["traffic"] = traffic
	start := time.Duration(k) * l.t.Period
	stop := start + l.t.Period
	doc["duration"] = yamlDuration(max(l.base.Duration, stop))
	if l.t.WebSearchLoad > 0 && len(l.senders) > 0 {
		gen, _ := traffic["generated"].([]any)
		traffic["generated"] = append(slices.Clone(gen), map[string]any{
			"name": webSearchGroup, "senders": l.senders, "receivers": l.receivers,
			"load": l.t.WebSearchLoad, "cdf_file": "cdf/websearch.txt",
			"seed": l.base.Seed*1000003 + int64(k), "start": yamlDuration(start), "stop": yamlDuration(stop),
		})
	}
	return doc
}

func (l *Loop) parse(doc map[string]any) (*scenario.Scenario, error) {
	var out bytes.Buffer
	if err := yaml.NewEncoder(&out).Encode(doc); err != nil {
		return nil, err
	}
	return scenario.Parse(l.path, out.Bytes())
}

// Install schedules the windows from 1 on in the network built from
// Scenario: each window's flows are added half a period before it starts,
// on the engine's goroutine, until Until (for ever when 0). A window that
// cannot be made (its CDF file gone) is reported to onErr and skipped.
// With Traffic.RetireFinished it also makes the network retire finished
// flows (window 0's too) RetireAfter after their last acknowledgement.
// Call it before the engine runs.
func (l *Loop) Install(n *dataplane.Network, onErr func(error)) {
	if l.t.RetireFinished {
		if err := n.Net.RetireFinished(RetireAfter(n.Net)); err != nil && onErr != nil {
			onErr(fmt.Errorf("lab traffic: %w", err))
		}
	}
	if l.t.Period <= 0 {
		return
	}
	var add func(k int)
	add = func(k int) {
		start := time.Duration(k) * l.t.Period
		if l.t.Until > 0 && start >= l.t.Until {
			return
		}
		if err := l.addWindow(n, k); err != nil && onErr != nil {
			onErr(fmt.Errorf("lab traffic: window %d: %w", k, err))
		}
		n.Sim.AtFunc(engine.FromDuration(start+l.t.Period/2), func() { add(k + 1) })
	}
	n.Sim.AtFunc(engine.FromDuration(l.t.Period/2), func() { add(1) })
}

// addWindow adds window k's flows to the network, as BuildNetwork adds a
// scenario's: dormant when their sender runs in another process.
func (l *Loop) addWindow(n *dataplane.Network, k int) error {
	flows, err := l.Window(k)
	if err != nil {
		return err
	}
	for _, f := range flows {
		if err := n.AddFlow(f); err != nil {
			return err
		}
	}
	return nil
}

// RetireAfter is how long the lab keeps a finished flow before retiring
// it: twice the sum of the delays of every link in both directions (so
// more than any round trip on a shortest path, with as much again for
// queueing), at least a millisecond. The CM disconnect (DREQ, DREP) and
// any CNP still on its way arrive before it; at the lab's delays (a 5 ms
// WAN) it is a few tens of milliseconds of simulated time.
func RetireAfter(n *netsim.Network) engine.Time {
	var sum engine.Time
	for _, l := range n.Links() {
		sum += l.Delay()
	}
	return max(2*sum, engine.Millisecond)
}

// yamlDuration writes d in the scenario grammar's units (no minutes).
func yamlDuration(d time.Duration) string { return fmt.Sprintf("%dus", d.Microseconds()) }
