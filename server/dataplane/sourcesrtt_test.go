package dataplane_test

import (
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/server/dataplane"
)

// TestSourcesRTTEst: the hosts' reaction point recovers a cut rate after
// 2 × its RTT_est (§5.6); a fabric's hosts take the largest round trip of
// a switch's link, as the simulator's sources take its nodes' largest
// RTT_est: the lab's 10 ms WAN round trip, not the 1 ms default that let
// its senders recover a Rate Reduce before its effect could come back.
// A fabric whose links are all short keeps the default.
func TestSourcesRTTEst(t *testing.T) {
	for _, tt := range []struct {
		file     string
		switches []string
		want     engine.Time
	}{
		{"../../scenarios/lab.yaml", []string{"t1", "n1", "n2"}, 10 * engine.Millisecond},
		{"../../scenarios/lab.yaml", []string{"n1"}, 10 * engine.Millisecond},
	} {
		sc, err := scenario.LoadFile(tt.file)
		if err != nil {
			t.Fatal(err)
		}
		var served []dataplane.Served
		for _, n := range tt.switches {
			served = append(served, dataplane.Served{Name: n})
		}
		nw, err := dataplane.BuildNetwork(sc, served, dataplane.BuildOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := nw.Reaction.Config().RTTEst; got != tt.want {
			t.Errorf("%s serving %v: the sources' RTT_est %v, want %v", tt.file, tt.switches, got, tt.want)
		}
	}
	// Short links only: the default.
	sc, err := scenario.Parse("short.yaml", []byte(`name: short
duration: 1ms
sample_interval: 100us
topology:
  hosts: [{name: h1, ip: 10.0.0.1}, {name: h2, ip: 10.0.0.2}]
  switches: [{name: s1, ip: 10.0.0.3}]
  links:
    - {a: h1, b: s1, rate: 10Gbps, delay: 1us}
    - {a: s1, b: h2, rate: 10Gbps, delay: 1us}
traffic:
  flows: [{name: f, src: h1, dst: h2, src_qp: 100, dst_qp: 200, start: 0s}]
`))
	if err != nil {
		t.Fatal(err)
	}
	nw, err := dataplane.BuildNetwork(sc, []dataplane.Served{{Name: "s1"}}, dataplane.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := nw.Reaction.Config().RTTEst; got != lhcnp.DefaultRTTEst {
		t.Errorf("short links: the sources' RTT_est %v, want the default %v", got, lhcnp.DefaultRTTEst)
	}
}
