package netsim

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
)

// incast is N senders -> sw -> receiver; bottleneck is sw's port to the receiver.
type incast struct {
	sim        *engine.Sim
	net        *Network
	sw         *Switch
	senders    []*Host
	recv       *Host
	bottleneck *Port
	flows      []*Flow
}

type incastCfg struct {
	senders        int
	rateBitsPerSec int64
	accessDelay    engine.Time // sender <-> switch
	bnDelay        engine.Time // switch <-> receiver
	port           PortConfig
	host           HostConfig
	seed           uint64
	starts         []engine.Time
	// sharedBytes and alpha: the switch's shared buffer (0: none).
	sharedBytes int64
	alpha       float64
}

func newIncast(t testing.TB, c incastCfg) *incast {
	t.Helper()
	if c.seed == 0 {
		c.seed = 1
	}
	sim := engine.New(engine.WithSeed(c.seed))
	n := New(sim)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	sw, err := n.AddSwitch("sw", netip.MustParseAddr("10.0.0.254"), SwitchConfig{Port: c.port, SharedBufferBytes: c.sharedBytes, SharedAlpha: c.alpha})
	must(err)
	in := &incast{sim: sim, net: n, sw: sw}
	in.recv, err = n.AddHost("recv", netip.MustParseAddr("10.0.1.1"), c.host)
	must(err)
	_, _, err = n.Connect(sw, in.recv, LinkConfig{RateBitsPerSec: c.rateBitsPerSec, Delay: c.bnDelay})
	must(err)
	in.bottleneck = sw.Ports()[0]
	for i := 0; i < c.senders; i++ {
		h, err := n.AddHost(fmt.Sprintf("s%d", i), netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}), c.host)
		must(err)
		_, _, err = n.Connect(h, sw, LinkConfig{RateBitsPerSec: c.rateBitsPerSec, Delay: c.accessDelay})
		must(err)
		in.senders = append(in.senders, h)
	}
	n.ComputeRoutes()
	for i, h := range in.senders {
		var start engine.Time
		if i < len(c.starts) {
			start = c.starts[i]
		}
		f, err := n.AddFlow(FlowConfig{Src: h, Dst: in.recv, Start: start, Prio: 3})
		must(err)
		in.flows = append(in.flows, f)
	}
	return in
}

func dcqcnPort(kminBytes, kmaxBytes int64, bufferBytes int64) PortConfig {
	return PortConfig{
		BufferBytes: bufferBytes,
		ECN:         SameECN(ECNConfig{Enabled: true, KMinBytes: kminBytes, KMaxBytes: kmaxBytes, PMax: 0.2}),
	}
}
