package lab

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// Traffic is how the lab keeps its switches busy.
type Traffic struct {
	// Horizon is the simulated time the traffic lasts (the scenario's
	// duration).
	Horizon time.Duration
	// Period repeats the file's sized flows (the §7 pattern: bursts and
	// flows joining at the congestion points) every Period; 0 keeps them
	// as written.
	Period time.Duration
	// WebSearchLoad adds flows drawn from the web-search size distribution
	// (scenarios/cdf/websearch.txt) from the senders of the file's sized
	// flows to their receivers, at this share of each sender's link rate;
	// 0 adds none.
	WebSearchLoad float64
}

// LoopScenario reads the scenario at path (the lab topology) and returns it
// with the lab's traffic: the file's long-lived flows as they are, its
// sized flows repeated every t.Period until t.Horizon, and a web-search mix
// between the same hosts. The result is parsed and validated by the
// scenario package as any file is.
func LoopScenario(path string, t Traffic) (*scenario.Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// The file as the scenario package reads it, for its flows' times.
	base, err := scenario.Parse(path, data)
	if err != nil {
		return nil, err
	}
	if t.Horizon <= 0 {
		t.Horizon = base.Duration
	}
	traffic, _ := doc["traffic"].(map[string]any)
	if traffic == nil {
		return nil, fmt.Errorf("%s: traffic: missing", path)
	}
	rawFlows, _ := traffic["flows"].([]any)
	var flows []any
	var senders, receivers []string
	nextQP := uint32(10000)
	for _, f := range base.Flows {
		nextQP = max(nextQP, f.SrcQP+1, f.DstQP+1)
	}
	for i, rf := range rawFlows {
		m, ok := rf.(map[string]any)
		if !ok || i >= len(base.Flows) || base.Flows[i].Group != "" {
			flows = append(flows, rf)
			continue
		}
		f := base.Flows[i]
		flows = append(flows, m)
		if f.LongLived() || t.Period <= 0 {
			continue
		}
		if !slices.Contains(senders, f.Src) {
			senders = append(senders, f.Src)
		}
		if !slices.Contains(receivers, f.Dst) {
			receivers = append(receivers, f.Dst)
		}
		for k := 1; ; k++ {
			start := f.Start + time.Duration(k)*t.Period
			if start >= t.Horizon {
				break
			}
			c := map[string]any{}
			for key, v := range m {
				c[key] = v
			}
			c["name"] = fmt.Sprintf("%s-loop%d", f.Name, k)
			c["start"] = yamlDuration(start)
			c["src_qp"], c["dst_qp"] = nextQP, nextQP+1
			nextQP += 2
			flows = append(flows, c)
		}
	}
	traffic["flows"] = flows
	if t.WebSearchLoad > 0 && len(senders) > 0 {
		gen, _ := traffic["generated"].([]any)
		traffic["generated"] = append(gen, map[string]any{
			"name": "lab-websearch", "senders": senders, "receivers": receivers,
			"load": t.WebSearchLoad, "cdf_file": "cdf/websearch.txt", "start": "0s", "stop": yamlDuration(t.Horizon),
		})
	}
	doc["duration"] = yamlDuration(t.Horizon)
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return scenario.Parse(path, out.Bytes())
}

// yamlDuration writes d in the scenario grammar's units (no minutes).
func yamlDuration(d time.Duration) string { return fmt.Sprintf("%dus", d.Microseconds()) }
