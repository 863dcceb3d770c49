package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// sizeTap is a wire on every link that checks the size of each packet
// that carries its frame (the notifications every mechanism encodes, CM
// MADs, tunnelled data) against that frame, and passes it on unchanged.
type sizeTap struct {
	t    *testing.T
	net  *netsim.Network
	dec  wire.Decoder
	f    wire.Frame
	seen map[string]int
	bad  map[string]int
}

func (w *sizeTap) Send(l *netsim.Link, p *netsim.Packet, txEnd engine.Time) {
	w.check(p)
	l.Arrive(p, txEnd)
}

func (w *sizeTap) check(p *netsim.Packet) {
	fr := p.Frame()
	if fr == nil {
		return // data, ACKs and CNPs of the hosts: netsim.TestPacketSizesMatchEncoder
	}
	var kind string
	var want int32
	var h wire.Encap
	if p.Kind == netsim.KindRoCE && wire.DecodeEncap(fr, &h) == nil && h.HeadLen == len(fr) {
		// A data packet in FCN's tunnel: its frame is the head only.
		set, _ := wire.OpcodeHeaders(p.Opcode())
		kind = "tunnelled " + p.Opcode().String()
		want = netsim.DataBytes(w.net.Node(p.Src).Addr(), p.PayloadBytes, set&wire.HasRETH != 0) + wire.TunnelOverheadBytes
	} else {
		if err := w.dec.Decode(fr, &w.f); err != nil {
			w.t.Errorf("frame of %d bytes from node %d does not decode: %v", len(fr), p.Src, err)
			return
		}
		kind = w.f.Kind.String()
		want = int32(len(fr) + netsim.FCSBytes)
	}
	w.seen[kind]++
	if p.SizeBytes != want {
		if w.bad[kind] == 0 {
			w.t.Errorf("%s packet from node %d sized %d bytes, its frame makes %d", kind, p.Src, p.SizeBytes, want)
		}
		w.bad[kind]++
	}
}

// TestNotificationSizesMatchFrames: every mechanism's notification (Fast
// CNP, FCN, Rate Advice, the white paper's switch CNP, Long-haul CNP in
// both formats), every CM MAD and every tunnelled data packet is sized as
// the frame wire.Encoder wrote for it (plus the FCS), over IPv6 and, for
// the formats that exist there, over IPv4.
func TestNotificationSizesMatchFrames(t *testing.T) {
	v4 := strings.NewReplacer(`"2001:db8::`, `"10.0.0.`, `"2001:db8:1::`, `"10.0.1.`, `"2001:db8:2::`, `"10.0.2.`)
	for _, tt := range []struct {
		desc, yaml, mech string
		want             []string // frame kinds that must be seen
	}{
		{"fast-cnp", incast6, "{kind: fast-cnp, nodes: [n1]}", []string{"fast-cnp", "cm"}},
		{"fcn", wan6, "{kind: fcn, nodes: [pe1, t1], params: {ingress: [pe1]}}",
			[]string{"fcn", "cnp", "cm", "tunnelled " + wire.OpRCWriteMiddle.String()}},
		{"rate-advice ipv6", incast6, "{kind: rate-advice, nodes: [n1]}", []string{"rate-advice", "cm"}},
		{"rate-advice ipv4", v4.Replace(incast6), "{kind: rate-advice, nodes: [n1]}", []string{"rate-advice", "cm"}},
		{"switch-cnp ipv6", incast6, "{kind: switch-cnp, nodes: [n1]}", []string{"cnp", "cm"}},
		{"switch-cnp ipv4", v4.Replace(incast6), "{kind: switch-cnp, nodes: [n1]}", []string{"cnp", "cm"}},
		{"long-haul-cnp icmpv6", incast6, "{kind: long-haul-cnp, nodes: [n1, n2], params: {format: icmpv6}}",
			[]string{"long-haul-cnp-icmpv6", "cm"}},
		{"long-haul-cnp rocev2 ipv6", incast6, "{kind: long-haul-cnp, nodes: [n1, n2], params: {format: rocev2}}",
			[]string{"long-haul-cnp-rocev2", "cm"}},
		{"long-haul-cnp rocev2 ipv4", v4.Replace(incast6), "{kind: long-haul-cnp, nodes: [n1, n2], params: {format: rocev2}}",
			[]string{"long-haul-cnp-rocev2", "cm"}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			sc, err := scenario.Parse("test.yaml", []byte(tt.yaml+"mechanism: "+tt.mech+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			sc.Duration = 8 * time.Millisecond // enough for every notification kind
			tap := &sizeTap{t: t, seen: map[string]int{}, bad: map[string]int{}}
			kind := sc.Mechanism.Kind
			inst, ok := (&options{}).mechanismFor(kind)
			if !ok {
				t.Fatalf("no installer for %s", kind)
			}
			_, err = Run(context.Background(), sc, t.TempDir(), WithoutPlots(), WithMechanism(kind,
				MechanismFunc(func(env *Env) error {
					tap.net = env.Net
					for _, n := range env.Net.Nodes() {
						for _, pt := range n.Ports() {
							pt.Out().SetWire(tap)
						}
					}
					return inst.Install(env)
				})))
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range tt.want {
				if tap.seen[k] == 0 {
					t.Errorf("no %s packet on any link (seen %v): the test does not exercise it", k, tap.seen)
				}
			}
			for k, n := range tap.bad {
				t.Errorf("%d of %d %s packets sized unlike their frames", n, tap.seen[k], k)
			}
		})
	}
}
