package fabric

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/gnmi/service"
)

// fcnScenario is server/dataplane's FCN test network: s1, s2 -> pe1 ==
// wan1 == t1 == wan2 (the bottleneck) == pe2 -> r1.
const fcnScenario = "../dataplane/testdata/wan6.yaml"

const (
	fcnPE = `{"lhcnp:lhcnp": {"global": {"config": {"enabled": true, "fcn-role": "INGRESS_PE"}},
  "fcn": {"config": {"domain": ["2001:db8:f::/48"], "congestion-threshold": "100000000"}}}}`
	fcnTransit = `{"lhcnp:lhcnp": {"global": {"config": {"enabled": true, "fcn-role": "TRANSIT"}},
  "fcn": {"config": {"congestion-threshold": "200000"}}}}`
)

// TestFCNAcrossAWire: FCN with the ingress PE in one process and the
// transit node in another, the tunnel's first link a UDP wire between
// them: the tunnelled packets cross it whole (outer header included), the
// transit node reads their labels and its FCN messages cross back to the
// PE, which translates them.
func TestFCNAcrossAWire(t *testing.T) {
	sc, err := scenario.LoadFile(fcnScenario)
	if err != nil {
		t.Fatal(err)
	}
	a, b := udpPair(t)
	build := func(sw Switch, listen, peer string) *Fabric {
		t.Helper()
		sw.Listen = "127.0.0.1:0"
		f, err := New(context.Background(), Config{Scenario: sc, Speed: 0.05, Keepalive: 20 * time.Millisecond,
			DeadAfter: 2 * time.Second, StartWait: 30 * time.Second, TargetOptions: []service.Option{service.WithInsecure()},
			Switches: []Switch{sw}, Wires: []Wire{{Link: "wan1", Listen: listen, Peer: peer}}})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	pe := build(Switch{Name: "pe1", Config: []byte(fcnPE)}, a, b)
	tr := build(Switch{Name: "t1", Config: []byte(fcnTransit)}, b, a)
	run(t, pe)
	run(t, tr)
	counters := func(f *Fabric) map[string]uint64 {
		root, err := f.Switches()[0].Binding.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		c := root.GetLhcnp().GetFcn().GetState().GetCounters()
		return map[string]uint64{"encapsulated": c.GetEncapsulatedPackets(), "tunnelled": c.GetTunnelledPackets(),
			"fcn-sent": c.GetFcnSent(), "fcn-received": c.GetFcnReceived(), "translated": c.GetCnpTranslated(),
			"unknown": c.GetUnknownFlowLabel()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	pollUntil(ctx, t, "FCN messages from t1 translated by pe1", func() (bool, error) {
		p, x := counters(pe), counters(tr)
		return p["encapsulated"] > 0 && x["tunnelled"] > 0 && x["fcn-sent"] > 0 && p["translated"] > 0,
			fmt.Errorf("pe1 %v, t1 %v, pe1's wire %+v", p, x, pe.Wires()[0].Stats())
	})
	if p := counters(pe); p["unknown"] != 0 || p["fcn-received"] != p["translated"] {
		t.Errorf("pe1 %v: want every message for a known label translated", p)
	}
	for _, w := range []*Fabric{pe, tr} {
		if st := w.Wires()[0].Stats(); st.RxFrames == 0 || st.RxMalformed != 0 {
			t.Errorf("%s's wire: %+v, want frames and none malformed", w.Switches()[0].Name, st)
		}
	}
}
