package netsim

import (
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

type countObserver struct {
	enq, deq, mark, drop int64
	badBTH               int64
	srcQPs               map[[2]uint32]bool // (source node, source QP): QPNs are per host
}

func (o *countObserver) OnEnqueue(_ *Port, p *Packet, _ int64) {
	o.enq++
	if p.Kind == KindRoCE {
		if _, err := p.BTH(); err != nil {
			o.badBTH++
		}
		// QP1 carries CM MADs, not data: a node learns flows from data
		// (and from the MADs' contents), not from the GSI QP.
		if p.Opcode().IsData() && p.DestQP() != wire.GSIQP {
			o.srcQPs[[2]uint32{uint32(p.Src), p.SrcQP}] = true
		}
	}
}
func (o *countObserver) OnDequeue(*Port, *Packet, int64) { o.deq++ }
func (o *countObserver) OnMark(*Port, *Packet, int64)    { o.mark++ }
func (o *countObserver) OnDrop(*Port, *Packet, int64)    { o.drop++ }

// cnpTaker consumes every CNP and checks its BTH as the wire package reads it.
type cnpTaker struct {
	t    *testing.T
	seen int
}

func (c *cnpTaker) HandleControl(h *Host, p *Packet) bool {
	b, err := wire.DecodeBTH(p.Hdr[:p.HdrLen])
	if err != nil || b.Opcode != wire.OpCNP || !b.BECN() || h.QP(b.DestQP) == nil {
		c.t.Errorf("CNP BTH %+v (err %v) does not name a local QP with BECN", b, err)
	}
	c.seen++
	return true
}

// The observer sees all traffic of the congested port, CNPs go to the
// control handler instead of DCQCN, and every header decodes.
func TestHooks(t *testing.T) {
	in := newIncast(t, incastCfg{senders: 2, rateBitsPerSec: 25e9, accessDelay: engine.Microsecond,
		bnDelay: engine.Microsecond, port: dcqcnPort(10_000, 40_000, 1<<20), host: DefaultHostConfig()})
	obs := &countObserver{srcQPs: map[[2]uint32]bool{}}
	in.sw.SetObserver(obs)
	taker := &cnpTaker{t: t}
	for _, h := range in.senders {
		h.SetControlHandler(taker)
	}
	in.sim.Run(2 * engine.Millisecond)
	if obs.enq == 0 || obs.mark == 0 || obs.badBTH != 0 {
		t.Errorf("observer: %d enqueues, %d marks, %d undecodable BTHs", obs.enq, obs.mark, obs.badBTH)
	}
	if obs.mark != in.bottleneck.Stats().ECNMarks {
		t.Errorf("observer saw %d marks, port counted %d", obs.mark, in.bottleneck.Stats().ECNMarks)
	}
	if len(obs.srcQPs) != 2 {
		t.Errorf("observer learned source QPs %v, want two", obs.srcQPs)
	}
	if taker.seen == 0 {
		t.Fatal("control handler saw no CNPs")
	}
	for i, f := range in.flows {
		if f.Sender.CNPs() != 0 || f.Sender.RateBitsPerSec() != 25e9 {
			t.Errorf("flow %d: DCQCN processed %d CNPs (rate %d); the handler consumed them all", i, f.Sender.CNPs(), f.Sender.RateBitsPerSec())
		}
	}
	// Drive a QP by hand, as a Long-haul CNP reaction point would.
	q := in.flows[0].Sender
	in.sim.Do(func() {
		q.SetRate(5e9, 10e9)
		q.PauseUntil(in.sim.Now() + 100*engine.Microsecond)
	})
	if q.RateBitsPerSec() != 5e9 || q.TargetRateBitsPerSec() != 10e9 {
		t.Errorf("after SetRate: rc %d rt %d", q.RateBitsPerSec(), q.TargetRateBitsPerSec())
	}
	sent := q.SentBytes()
	in.sim.Run(in.sim.Now() + 90*engine.Microsecond)
	if q.SentBytes() != sent {
		t.Errorf("paused QP sent %d bytes", q.SentBytes()-sent)
	}
	in.sim.Run(in.sim.Now() + 200*engine.Microsecond)
	if q.SentBytes() == sent {
		t.Errorf("QP did not resume after the pause")
	}
}
