package lhcnp

import (
	"fmt"
	"testing"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// TestDrainResume: with ResumeOnDrain (and PerFlowRTT, RepeatResume), a far-end node (port
// RTT_est 2 µs, K_min 32 KB; the flow 10 ms away) whose bottleneck rises
// from 4 to 10 Gb/s resumes the flow it cut while its queue is still above
// K_min, once the port's spare rate drains the queue within the flow's
// round trip: the first Resume after the rise carries a level above
// K_min's (42), and comes before the queue is below K_min. Waiting for K_min
// left the port idle for a round trip after the queue drained. Without the
// option the pair's own rule (shareResume, TestShareResume) resumes the
// flow above K_min too, since session 11; without RepeatResume the first
// Resume waits for K_min (TestShareResume).
func TestDrainResume(t *testing.T) {
	for _, on := range []bool{true, false} {
		l := resumeLine(t, on)
		q, resume, qdAt, err := firstResumeAfterRise(l)
		if err != "" {
			t.Fatalf("on %v: %s", on, err)
		}
		if above := qdAt >= q.kmin && resume.CongLevel > levelQD(q.kmin, q.kmin, q.kmax); !above {
			t.Errorf("on %v: first Resume at %v with the queue at %d B (K_min %d B), level %d; want it above K_min", on, resume.Time, qdAt, q.kmin, resume.CongLevel)
		}
		if !on {
			continue
		}
		l.sim.Run(75 * engine.Millisecond)
		if got, c := l.flow.Sender.RateBitsPerSec(), l.flow.Sender.CeilingBitsPerSec(); got != 10e9 || c != 0 {
			t.Errorf("rate %d, ceiling %d at 75 ms; want 10 Gb/s and no ceiling", got, c)
		}
	}
}

// TestDrainResumeBeyondShareResume: where the port's RTT_est (5.5 ms) is
// more than half the flow's 10 ms loop, the pair's own rule (shareResume)
// keeps the K_min Resume, and only ResumeOnDrain resumes the flow while
// the queue is still above K_min (its rule: any flow further than the
// port's own round trip).
func TestDrainResumeBeyondShareResume(t *testing.T) {
	for _, on := range []bool{true, false} {
		l := resumeLine(t, on)
		c := l.node2.Config()
		c.Interface.RTTEst = 5500 * engine.Microsecond
		if err := l.node2.ApplyConfig(c); err != nil {
			t.Fatal(err)
		}
		q, resume, qdAt, err := firstResumeAfterRise(l)
		if err != "" {
			t.Fatalf("on %v: %s", on, err)
		}
		if above := qdAt >= q.kmin; above != on {
			t.Errorf("on %v: first Resume at %v with the queue at %d B (K_min %d B); want it above K_min only with the option", on, resume.Time, qdAt, q.kmin)
		}
	}
}

// firstResumeAfterRise runs the far-end line of the Resume tests 40 ms at
// its 4 Gb/s bottleneck (a held ceiling, the queue above K_min), raises the
// bottleneck to 10 Gb/s and runs until the node's first Resume (at most to
// 75 ms): the node's queue, that Resume and the queue's depth when it was
// sent, or what went wrong.
func firstResumeAfterRise(l *line) (q *queueState, resume *Event, qdAt int64, err string) {
	l.sim.Run(40 * engine.Millisecond)
	q = &l.node2.portOf(l.n2Out).queues[0]
	if l.flow.Sender.CeilingBitsPerSec() == 0 {
		return q, nil, 0, fmt.Sprintf("no held ceiling after 40 ms at the bottleneck (rate %d)", l.flow.Sender.RateBitsPerSec())
	}
	if q.qd < q.kmin {
		return q, nil, 0, fmt.Sprintf("queue %d B below K_min %d B at the rise: nothing to drain", q.qd, q.kmin)
	}
	l.n2Out.Out().SetRateBitsPerSec(10e9)
	from := len(l.events2)
	for l.sim.Now() < 75*engine.Millisecond {
		l.sim.Run(l.sim.Now() + engine.Microsecond)
		for i := from; i < len(l.events2); i++ {
			if ev := l.events2[i]; ev.Kind == EventCNPSent && ev.Action == wire.ActionResume {
				return q, &l.events2[i], q.qd, ""
			}
		}
	}
	return q, nil, 0, "no Resume within 35 ms of the rise"
}

// TestResumeUnmeasuredCut: with ResumeOnDrain (and PerFlowRTT,
// RepeatResume), a flow the
// node cut before its first whole measurement interval (a node next to the
// sources, on a burst) has no measured rate before the cut; the node then
// resumes it unconditionally (Parameter 0, the source restores its own
// rate) once the port has spare rate. Judged from the unmeasured rate (0)
// the flow seemed back at it and was never resumed, and a source 1 µs from
// the node stayed at its cut rate for the rest of the flow.
func TestResumeUnmeasuredCut(t *testing.T) {
	for _, measured := range []bool{false, true} {
		l, cfg, ps, q, e := optionsLine(t, true)
		// A cut as account records it: before the first measurement
		// (preCutRate 0, nothing known of the reduction) or after it.
		e.needResume, e.hasCNP = true, false
		e.preCutUnknown = !measured
		e.preCutRate, e.lastReduction = 0, 0
		if measured {
			e.preCutRate = e.rateAt(l.sim.Now(), cfg.Interface.Queue.MeasurementInterval) / 2
			e.lastReduction = e.preCutRate
		}
		// Spare rate: the flow is the port's only one, at a fraction.
		ps.rateBitsPerSec = 40e9
		before := len(l.events1)
		l.node1.resume(ps, q, l.sim.Now())
		var sent []Event
		for _, ev := range l.events1[before:] {
			if ev.Kind == EventCNPSent && ev.Action == wire.ActionResume {
				sent = append(sent, ev)
			}
		}
		switch {
		case !measured && (len(sent) != 1 || sent[0].Parameter != 0 || e.needResume):
			t.Errorf("cut before a measurement: %d Resumes %v, needResume %v; want one unconditional (Parameter 0) and none left", len(sent), sent, e.needResume)
		case measured && len(sent) != 0:
			t.Errorf("measured cut, rate back above its pre-cut rate: %d Resumes %v; want none", len(sent), sent)
		}
	}
}
