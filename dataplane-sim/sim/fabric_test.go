package sim

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// Every flow's scenario path (Flow.Path, ECMP included) is the path the
// network model forwards its packets on.
func TestFlowPathsMatchModel(t *testing.T) {
	sc, err := scenario.LoadFile("../scenario/testdata/fabric.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc.Mechanism = scenario.Mechanism{Kind: scenario.MechanismDCQCN}
	r := newRunner(sc, options{duration: sc.Duration})
	if err := r.build(); err != nil {
		t.Fatal(err)
	}
	cores := map[string]bool{} // the cores dc1's flows between pods use
	for _, fl := range r.b.Flows {
		f := fl.Scenario
		src := r.net.NodeByName(f.Src).(*netsim.Host)
		dst := r.net.NodeByName(f.Dst)
		got := []string{f.Src}
		pt := src.Port()
		for pt != nil && len(got) < 32 {
			next := pt.Peer().Node()
			got = append(got, next.Name())
			if next == dst {
				break
			}
			pt = next.(*netsim.Switch).RouteFlow(src.ID(), dst.ID(), fl.Net.Sender.QPN, fl.Net.Sender.PeerQPN)
		}
		if diff := cmp.Diff(f.Path, got); diff != "" {
			t.Fatalf("%s: path (-scenario, +model):\n%s", f.Name, diff)
		}
		if len(got) == 7 && strings.HasPrefix(got[3], "dc1-c") {
			cores[got[3]] = true
		}
	}
	if len(cores) < 2 {
		t.Errorf("dc1's flows between pods use cores %v: ECMP spreads nothing", cores)
	}
}

// With ECMP, the packets of a flow never arrive out of order: a receiver
// counts a PSN gap as a loss, so a run that drops nothing (unlimited
// buffers) must count no loss in any flow.
func TestECMPNoReordering(t *testing.T) {
	data := `duration: 3ms
sample_interval: 100us
topology:
  fabrics:
    - {name: f, kind: fat-tree, k: 4, rate: 100G, delay: 1us}
traffic:
  generated:
    - {name: x, senders: [f], receivers: [f], load: 0.6, cdf: [[10KB, 0], [2MB, 1]], stop: 2ms}
`
	sc, err := scenario.Parse("noreorder.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), sc, t.TempDir(), WithoutPlots())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Totals.DropPackets != 0 {
		t.Fatalf("%d drops with unlimited buffers", sum.Totals.DropPackets)
	}
	if sum.Totals.Flows < 100 {
		t.Fatalf("%d flows, want a few hundred", sum.Totals.Flows)
	}
	for _, f := range sum.Flows {
		if f.LostPackets != 0 {
			t.Errorf("%s: %d packets counted lost (out of order) without a drop", f.Name, f.LostPackets)
		}
	}
}

// The congestion-aware nodes of every mechanism keep working when each
// sees only some of a flow's siblings: on a leaf-spine whose two spines
// share the flows into one leaf by ECMP, both spines congest towards
// that leaf, each carries its own subset of the flows, and each notifies.
func TestMechanismsAtECMPSiblings(t *testing.T) {
	base := `duration: 3ms
sample_interval: 50us
topology:
  fabrics:
    - {name: f, kind: leaf-spine, leaves: 3, spines: 2, hosts_per_leaf: 4, rate: 100G, uplink_rate: 50G, delay: 1us, ipv6: true}
  ecmp: {seed: %d}
traffic:
  flows:
%s
mechanism:
%s
`
	var flows string
	for i, src := range []string{"f-h0-0", "f-h0-1", "f-h0-2", "f-h0-3", "f-h1-0", "f-h1-1", "f-h1-2", "f-h1-3"} {
		flows += fmt.Sprintf("    - {name: f%d, src: %s, dst: f-h2-%d, rate: 20G}\n", i, src, i%4)
	}
	for _, tt := range []struct {
		desc, mechanism string
		counter         string // counters.csv counter each spine must have raised
	}{
		{"long-haul-cnp", "  kind: long-haul-cnp\n  nodes: [f-spine]\n  params: {v_ecn: 0, v_growth: 0}", "sent_long-haul-cnp"},
		{"fast-cnp", "  kind: fast-cnp\n  nodes: [f-spine]", "sent_fast-cnp"},
		{"switch-cnp", "  kind: switch-cnp\n  nodes: [f-spine]", "sent_switch-cnp"},
		{"rate-advice", "  kind: rate-advice\n  nodes: [f-spine]", "sent_rate-advice"},
		{"fcn", "  kind: fcn\n  nodes: [f-l0, f-l1, f-s0, f-s1]\n  params: {ingress: [f-l0, f-l1]}", "sent_fcn"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			// A seed whose hash puts flows on both spines (any seed
			// almost surely does; the test says which it used).
			var sc *scenario.Scenario
			for seed := 1; ; seed++ {
				var err error
				sc, err = scenario.Parse("siblings.yaml", fmt.Appendf(nil, base, seed, flows, tt.mechanism))
				if err != nil {
					t.Fatal(err)
				}
				per := map[string]int{}
				for _, f := range sc.Flows {
					per[f.Path[2]]++
				}
				if per["f-s0"] == 4 && per["f-s1"] == 4 { // 80 Gb/s into 50 at each

					break
				}
			}
			dir := t.TempDir()
			if _, err := Run(context.Background(), sc, dir, WithoutPlots()); err != nil {
				t.Fatal(err)
			}
			sent := lastCounters(t, filepath.Join(dir, CountersCSV))
			for _, spine := range []string{"f-s0", "f-s1"} {
				if sent[[2]string{spine, tt.counter}] == 0 {
					t.Errorf("%s sent no %s (counters: %v)", spine, tt.counter, sent)
				}
			}
		})
	}
}

// lastCounters reads the last value of every (node, counter) of port "-"
// in counters.csv.
func lastCounters(t *testing.T, path string) map[[2]string]int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	out := map[[2]string]int64{}
	for _, r := range rows[1:] {
		if r[2] != "-" {
			continue
		}
		v, err := strconv.ParseInt(r[4], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		out[[2]string{r[1], r[3]}] = v
	}
	return out
}
