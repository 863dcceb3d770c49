package sim

import (
	"context"
	"fmt"
	"slices"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/report"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// NodeActivity is what one congestion-aware node did in a run.
type NodeActivity struct {
	Node string
	// Notifications sent, by action and by trigger; Flows is the number of
	// distinct flows notified.
	RateReduce, Pause, Resume, Notify int64
	QD, EMR, QGR                      int64
	Flows                             int
	// §5.7: deferrals started (Upstream of them by upstream priority) and
	// escalated notifications.
	Deferrals, Upstream, Escalations int64
	// First is the node's first congestion notification (not a Resume).
	First      lhcnp.Event
	FirstValid bool
	// The node's busiest egress port (named by its peer): peak queue,
	// drops, utilisation.
	Port            string
	PeakQueueBytes  int64
	DropPackets     int64
	UtilisationPerc float64
}

// LongHaulReport is what the Long-haul CNP nodes and the sources' reaction
// points did in a run, without any expectation of what they should do:
// the report of an unstaged run.
type LongHaulReport struct {
	Scenario string
	Nodes    []NodeActivity
	// Sources sums the reaction points' counters.
	Sources lhcnp.ReactionCounters
	Summary *report.Summary
}

// CheckLongHaulReport refuses a scenario RunLongHaulReport would run
// only to refuse at its end: one without a long-haul-cnp block (the top
// one or one of mechanism.with).
func CheckLongHaulReport(sc *scenario.Scenario) error {
	blocks := append([]scenario.Mechanism{sc.Mechanism}, sc.Mechanism.With...)
	if !slices.ContainsFunc(blocks, func(m scenario.Mechanism) bool { return m.Kind == scenario.MechanismLongHaulCNP }) {
		return fmt.Errorf("sim: scenario %s: no long-haul-cnp mechanism to report on (mechanism is %s)", sc.Name, sc.Mechanism.Kind)
	}
	return nil
}

// RunLongHaulReport runs a long-haul-cnp scenario and reports what its
// nodes did. opts are passed to Run.
func RunLongHaulReport(ctx context.Context, sc *scenario.Scenario, outDir string, opts ...Option) (*LongHaulReport, error) {
	if err := CheckLongHaulReport(sc); err != nil {
		return nil, err
	}
	var mech *LongHaulCNP
	opts = append(opts, WithLongHaulCNP(func(m *LongHaulCNP, _ *Env) { mech = m }))
	sum, err := Run(ctx, sc, outDir, opts...)
	if err != nil {
		return nil, err
	}
	if mech == nil {
		return nil, fmt.Errorf("sim: scenario %s: no long-haul-cnp mechanism ran", sc.Name)
	}
	r := &LongHaulReport{Scenario: sc.Name, Summary: sum}
	for _, rp := range mech.ReactionPoints {
		c := rp.Counters()
		s := &r.Sources
		s.Received += c.Received
		s.AcceptedNotify += c.AcceptedNotify
		s.AcceptedPause += c.AcceptedPause
		s.AcceptedRateReduce += c.AcceptedRateReduce
		s.AcceptedResume += c.AcceptedResume
		s.Untrusted += c.Untrusted
		s.InactiveQP += c.InactiveQP
		s.Malformed += c.Malformed
		s.Inconsistent += c.Inconsistent
		s.ResumeCapped += c.ResumeCapped
		s.Recoveries += c.Recoveries
	}
	for _, n := range mech.Nodes {
		a := NodeActivity{Node: n.Switch().Name()}
		flows := map[lhcnp.FlowKey]bool{}
		for _, e := range mech.Events {
			if e.Node != a.Node {
				continue
			}
			switch e.Kind {
			case lhcnp.EventCNPSent:
				flows[e.Flow] = true
				switch e.Action {
				case wire.ActionRateReduce:
					a.RateReduce++
				case wire.ActionPause:
					a.Pause++
				case wire.ActionResume:
					a.Resume++
				default:
					a.Notify++
				}
				switch e.Trigger {
				case lhcnp.TriggerQD:
					a.QD++
				case lhcnp.TriggerEMR:
					a.EMR++
				case lhcnp.TriggerQGR:
					a.QGR++
				}
				if e.Escalated {
					a.Escalations++
				}
				if !a.FirstValid && e.Action != wire.ActionResume {
					a.First, a.FirstValid = e, true
				}
			case lhcnp.EventDeferral:
				a.Deferrals++
				if e.Upstream {
					a.Upstream++
				}
			}
		}
		a.Flows = len(flows)
		for _, p := range sum.Ports {
			if p.Node == a.Node && p.PeakQueueBytes > a.PeakQueueBytes {
				a.Port, a.PeakQueueBytes, a.DropPackets = p.Port, p.PeakQueueBytes, p.DropPackets
				a.UtilisationPerc = 100 * float64(p.Utilisation)
			}
		}
		r.Nodes = append(r.Nodes, a)
	}
	slices.SortFunc(r.Nodes, func(a, b NodeActivity) int {
		switch {
		case a.Node < b.Node:
			return -1
		case a.Node > b.Node:
			return 1
		}
		return 0
	})
	return r, nil
}

// Lines describes the report, one line per node, then the sources and
// the network.
func (r *LongHaulReport) Lines() []string {
	ms := func(t engine.Time) string { return fmt.Sprintf("%.3f ms", float64(t)/1e6) }
	var out []string
	for _, a := range r.Nodes {
		first := "none"
		if a.FirstValid {
			e := a.First
			first = fmt.Sprintf("%s to QP %d at %s on %v, level %d, metric %v %d", e.Action, e.Flow.SrcQP, ms(e.Time),
				e.Trigger, e.CongLevel, e.MetricType, e.MetricValue)
		}
		out = append(out, fmt.Sprintf("%s: %d notifications to %d flows (rate reduce %d, pause %d, resume %d, notify %d; "+
			"triggers qd %d, emr %d, qgr %d); deferrals %d (upstream priority %d), escalations %d; first: %s; "+
			"busiest port %s→%s: peak queue %.1f MB, %d drops, utilisation %.1f%%",
			a.Node, a.RateReduce+a.Pause+a.Resume+a.Notify, a.Flows, a.RateReduce, a.Pause, a.Resume, a.Notify,
			a.QD, a.EMR, a.QGR, a.Deferrals, a.Upstream, a.Escalations, first,
			a.Node, a.Port, float64(a.PeakQueueBytes)/1e6, a.DropPackets, a.UtilisationPerc))
	}
	s := r.Sources
	out = append(out, fmt.Sprintf("sources: received %d, applied rate reduce %d, pause %d, resume %d (capped %d), notify %d; "+
		"dropped %d (untrusted %d, inactive qp %d, malformed %d, inconsistent %d); recoveries %d",
		s.Received, s.AcceptedRateReduce, s.AcceptedPause, s.AcceptedResume, s.ResumeCapped, s.AcceptedNotify,
		s.Untrusted+s.InactiveQP+s.Malformed+s.Inconsistent, s.Untrusted, s.InactiveQP, s.Malformed, s.Inconsistent,
		s.Recoveries))
	t := r.Summary.Totals
	var cnps int64
	for _, f := range r.Summary.Flows {
		cnps += f.CNPs
	}
	out = append(out, fmt.Sprintf("network: %d drops, %d ECN marks, %d receiver CNPs, Jain %.3f over %d flows",
		t.DropPackets, t.ECNMarks, cnps, float64(t.JainFairness), t.Flows))
	return out
}
