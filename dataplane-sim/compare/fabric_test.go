package compare

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/report"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// Flows are classed by the fabrics of their ends, each class bucketed by
// size with p50, p95 and p99; the WAN link is read in both directions.
func TestFabricFigures(t *testing.T) {
	data := `duration: 1ms
sample_interval: 1ms
topology:
  fabrics:
    - {name: a, kind: leaf-spine, leaves: 1, spines: 1, hosts_per_leaf: 2, rate: 10G, delay: 1us}
    - {name: b, kind: leaf-spine, leaves: 1, spines: 1, hosts_per_leaf: 2, rate: 10G, delay: 1us}
  wan:
    - {name: w, a: a, b: b, rate: 10G, delay: 1ms}
`
	sc, err := scenario.Parse("f.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	slow := func(v float64) *report.Float { f := report.Float(v); return &f }
	var flows []report.FlowSummary
	for i := 1; i <= 100; i++ { // inside a: slowdowns 1..100
		flows = append(flows, report.FlowSummary{Src: "a-h0-0", Dst: "a-h0-1", SizeBytes: 1000, Finished: true, Slowdown: slow(float64(i))})
	}
	flows = append(flows,
		report.FlowSummary{Src: "a-h0-0", Dst: "b-h0-0", SizeBytes: 20_000_000, Finished: true, Slowdown: slow(3)},
		report.FlowSummary{Src: "b-h0-1", Dst: "a-h0-1", SizeBytes: 1_000_000})
	s := &report.Summary{Flows: flows, Ports: []report.PortSummary{
		{Node: "a-br", Port: "b-br", Utilisation: 0.25, PeakQueueBytes: 7, DropPackets: 1},
		{Node: "b-br", Port: "a-br", Utilisation: 0.5},
	}}
	got := fabricFigures(s, sc)
	want := &FabricFigures{
		Classes: []FCTClass{
			{Name: "a", Buckets: []Bucket{{Name: "small < 100 KB", Flows: 100, Finished: 100, P50: 50, P95: 95, P99: 99}, {Name: "medium"}, {Name: "large > 10 MB"}}},
			{Name: CrossDC, Buckets: []Bucket{{Name: "small < 100 KB"}, {Name: "medium", Flows: 1}, {Name: "large > 10 MB", Flows: 1, Finished: 1, P50: 3, P95: 3, P99: 3}}},
		},
		WAN: []WANPort{{Link: "w", From: "a-br", To: "b-br", Utilisation: 0.25, PeakQueueBytes: 7, Drops: 1}, {Link: "w", From: "b-br", To: "a-br", Utilisation: 0.5}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fabricFigures (-want, +got):\n%s", diff)
	}
	var b strings.Builder
	r := &Result{Rows: []Row{{Scenario: "f", Mechanism: "dcqcn", Fabric: got}}}
	if err := r.WriteFabricMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"| f | dcqcn | a | 50.00 / 95.00 / 99.00 (100/100) | — (0/0) | — (0/0) |",
		"| f | dcqcn | cross-DC | — (0/0) | — (0/1) | 3.00 / 3.00 / 3.00 (1/1) |",
		"| f | dcqcn | w (a-br→b-br) | 25.00% | 0.0 MB | 1 |",
	} {
		if !strings.Contains(b.String(), line+"\n") {
			t.Errorf("markdown lacks %q:\n%s", line, b.String())
		}
	}
}

// One fabric has no WAN: fabrics.md holds its FCT table and no WAN table
// (it held the WAN's header with no row under it).
func TestFabricMarkdownWithoutWAN(t *testing.T) {
	sc, err := scenario.Parse("one.yaml", []byte(`duration: 1ms
sample_interval: 1ms
topology:
  fabrics:
    - {name: a, kind: leaf-spine, leaves: 1, spines: 1, hosts_per_leaf: 2, rate: 10G, delay: 1us}
`))
	if err != nil {
		t.Fatal(err)
	}
	one := report.Float(1)
	s := &report.Summary{Flows: []report.FlowSummary{{Src: "a-h0-0", Dst: "a-h0-1", SizeBytes: 1000, Finished: true, Slowdown: &one}}}
	r := &Result{Rows: []Row{{Scenario: "one", Mechanism: "dcqcn", Fabric: fabricFigures(s, sc)}}}
	var b strings.Builder
	if err := r.WriteFabricMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	want := "| scenario | mechanism | flows | small < 100 KB p50 / p95 / p99 (finished/flows) | medium p50 / p95 / p99 (finished/flows) | large > 10 MB p50 / p95 / p99 (finished/flows) |\n" +
		"|---|---|---|---|---|---|\n" +
		"| one | dcqcn | a | 1.00 / 1.00 / 1.00 (1/1) | — (0/0) | — (0/0) |\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("fabrics.md (-want, +got):\n%s", diff)
	}
}
