package sim

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/install"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/report"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

// LongHaulCNP is the installed Long-haul CNP mechanism of a run: one node
// per congestion-aware switch and one reaction point per host. Tests and
// tools reach it through WithLongHaulCNP.
type LongHaulCNP struct {
	// Nodes are the congestion-aware nodes, in mechanism.nodes order.
	Nodes []*lhcnp.Node
	// ReactionPoints are the sources' reaction points, by host name.
	ReactionPoints map[string]*lhcnp.ReactionPoint
	// Events is every event the nodes reported, in time order (kept only
	// when the run was started with WithLongHaulCNP).
	Events []lhcnp.Event
	// Tuner is every change of the closed-loop tuner (scenario key tuner).
	Tuner []TunerChange
	// TunerDecisions is every decision of the closed-loop tuner, held or
	// not, and every judgement of a change, in time order (tuner.csv).
	TunerDecisions []TunerDecision
}

// Node returns the node on the named switch.
func (m *LongHaulCNP) Node(name string) *lhcnp.Node {
	for _, n := range m.Nodes {
		if n.Switch().Name() == name {
			return n
		}
	}
	return nil
}

// WithLongHaulCNP calls f with the installed mechanism once it is in place
// (before the first event) and keeps the nodes' events in it; f may
// schedule its own observations on the engine (e.g. sim.AtFunc to read
// Node.State at chosen times).
func WithLongHaulCNP(f func(m *LongHaulCNP, env *Env)) Option {
	return WithMechanism(scenario.MechanismLongHaulCNP, metered(MechanismFunc(func(env *Env) error {
		return installLongHaulCNP(env, f)
	})))
}

func init() {
	install.RegisterCutInstaller(scenario.MechanismLongHaulCNP, func(env *Env) error { return installLongHaulCNP(env, nil) })
}

// installLongHaulCNP attaches a Long-haul CNP node (package lhcnp) to every
// congestion-aware switch and a reaction point to every host, configured
// from the scenario's mechanism params (docs/scenarios.md):
//
//   - K_max = max(k_base, alpha * R_port * RTT_est / 8) per egress port,
//     K_min = k_min_fraction * K_max; RTT_est is rtt_est or, when zero,
//     twice the port's link delay, updated when an event changes the link;
//   - the QD trigger always, EMR when v_ecn > 0, QGR when v_growth > 0,
//     measured over growth_interval;
//   - Rate Reduce reduce_percent, Pause pause_duration from pause_factor *
//     K_max (never when pause_duration is 0), Resume resume_percent after
//     resume_after below K_min;
//   - the RoCEv2 format goes to every host (all are configured receivers,
//     §10.5), else ICMPv6 (IPv6 sources only, §4);
//   - trigger_persistence (default 0, the draft) before generating;
//     upstream_first (§5.7) with the mechanism's nodes as peers;
//   - the sources trust the congestion-aware nodes' addresses and recover
//     after recovery_interval by recovery_step (b/s) per RTT_est / 10.
//
// The nodes' notifications are counted by action (sent_long-haul-cnp and
// sent_long-haul-cnp/<action> in counters.csv), with deferrals and
// escalations, in the summary's mechanism_counters.
func installLongHaulCNP(env *Env, observe func(*LongHaulCNP, *Env)) error {
	p := env.Mech.LongHaulCNP()
	m := &LongHaulCNP{ReactionPoints: map[string]*lhcnp.ReactionPoint{}}
	keep := observe != nil
	counts := env.Counters()

	var trusted []netip.Prefix
	var maxRTT engine.Time
	nodeCfgs := make([]lhcnp.Config, len(env.Nodes))
	for i, sw := range env.Nodes {
		cfg, err := nodeConfig(env, p, sw)
		if err != nil {
			return fmt.Errorf("switch %s: %w", sw.Name(), err)
		}
		nodeCfgs[i] = cfg
		if a := sw.Addr(); a.IsValid() {
			trusted = append(trusted, netip.PrefixFrom(a, a.BitLen()))
		}
		for _, ic := range cfg.Interfaces {
			maxRTT = max(maxRTT, ic.RTTEst)
		}
	}
	// Each node counts and keeps its events on its own (on a scenario
	// cut into partitions the nodes run side by side); the counts are
	// summed, and the events merged in time order, at the end.
	type nodeCounts struct{ escalations, deferrals, learned int64 }
	perNode := make([]nodeCounts, len(env.Nodes))
	events := make([][]lhcnp.Event, len(env.Nodes))
	cut := env.Group.Len() > 1
	for i, sw := range env.Nodes {
		name := sw.Name()
		nc := &perNode[i]
		onEvent := func(ev lhcnp.Event) {
			switch ev.Kind {
			case lhcnp.EventCNPSent:
				env.Count(name, "long-haul-cnp", 1)
				env.Count(name, "long-haul-cnp/"+ev.Action.String(), 1)
				if ev.Escalated {
					nc.escalations++
				}
			case lhcnp.EventDeferral:
				nc.deferrals++
			case lhcnp.EventFlowLearned:
				nc.learned++
			}
			env.NodeEvent(&ev)
			switch {
			case keep && cut:
				events[i] = append(events[i], ev)
			case keep:
				m.Events = append(m.Events, ev)
			}
		}
		node, err := lhcnp.Attach(env.Net, sw, nodeCfgs[i], lhcnp.WithEvents(onEvent))
		if err != nil {
			return err
		}
		env.TapSwitch(sw, node)
		m.Nodes = append(m.Nodes, node)
	}

	// The sources. RTT_est of a source is the configured one or the
	// largest of the nodes' ports: the WAN round trip its notifications
	// and recovery are about (§5.6: recovery after 2 * RTT_est).
	rtt := engine.FromDuration(p.RTTEst)
	if rtt == 0 {
		rtt = max(maxRTT, lhcnp.DefaultRTTEst)
	}
	for _, h := range env.Net.Hosts() {
		rc := lhcnp.DefaultReactionConfig()
		rc.TrustedSources = trusted
		rc.RTTEst = rtt
		rc.RecoveryInterval = engine.FromDuration(p.RecoveryInterval)
		// recovery_step is bits per second added per tick, as written;
		// recovery_step_percent a share of the QP's normal rate instead.
		rc.RecoveryStepBitsPerSec = int64(p.RecoveryStep)
		if p.RecoveryStepPercent > 0 {
			rc.RecoveryStepBitsPerSec, rc.RecoveryStepPercent = 0, p.RecoveryStepPercent
		}
		// The sender's side of one_cut_per_episode with per_flow_rtt:
		// the node's cut, sized from the arrival rates it measured
		// (loopCut), replaces the receivers' CNPs' cuts of the same
		// episode. A fixed percentage (one_cut alone) is not sized
		// from anything: counted from the rate before those cuts it
		// undid them (mid-wan 89 % -> 61 %).
		rc.CutFromEpisodeRate = p.OneCutPerEpisode && p.PerFlowRTT
		rp, err := lhcnp.NewReactionPoint(env.Net, rc)
		if err != nil {
			return fmt.Errorf("host %s: %w", h.Name(), err)
		}
		env.TapHost(h, rp)
		m.ReactionPoints[h.Name()] = rp
	}

	env.Signal("long-haul-cnp", false)
	// §5.3.2: recompute K_max when an event changes a link's RTT or rate.
	env.OnLinkChange(func(_ *scenario.Link, a, b *netsim.Port) {
		for i, node := range m.Nodes {
			for _, pt := range []*netsim.Port{a, b} {
				if pt.Node() != netsim.Node(node.Switch()) {
					continue
				}
				cfg := node.Config()
				setPortThresholds(&cfg, p, pt)
				if err := node.ApplyConfig(cfg); err != nil {
					env.Warn("long-haul-cnp: %s: %v", pt.Name(), err)
				}
				nodeCfgs[i] = cfg
				node.LinkChanged(pt)
			}
		}
	})
	env.OnSummary(func(*report.Input) {
		for _, nc := range perNode {
			// A count appears once it is not zero, as it always has.
			for k, v := range map[string]int64{"escalations": nc.escalations, "deferrals": nc.deferrals, "flows_learned": nc.learned} {
				if v > 0 {
					counts[k] += v
				}
			}
		}
		if cut {
			m.Events = mergeEvents(events)
		}
		for _, rp := range m.ReactionPoints {
			c := rp.Counters()
			counts["rp_received"] += c.Received
			counts["rp_rate_reduce"] += c.AcceptedRateReduce
			counts["rp_pause"] += c.AcceptedPause
			counts["rp_resume"] += c.AcceptedResume
			counts["rp_notify"] += c.AcceptedNotify
			counts["rp_recoveries"] += c.Recoveries
			counts["rp_dropped"] += c.Untrusted + c.InactiveQP + c.Malformed + c.Inconsistent + c.Unsupported
		}
		for _, node := range m.Nodes {
			st := node.State(false)
			for _, ps := range st.Ports {
				for _, q := range ps.Queues {
					c := q.Counters
					counts["suppressed_flow_interval"] += c.SuppressedFlowInterval
					counts["suppressed_port_limit"] += c.SuppressedPortLimit
					counts["suppressed_deferral"] += c.SuppressedDeferral
					counts["qd_triggers"] += c.QDTriggers
					counts["emr_triggers"] += c.EMRTriggers
					counts["qgr_triggers"] += c.QGRTriggers
				}
			}
			nc := st.Counters
			counts["not_sent"] += nc.NoAddress + nc.NoFormat + nc.NoRoute + nc.EncodeErrors
			// A mistake of the file, not of the run: say it, or the
			// mechanism looks as if it had nothing to do.
			if nc.NoAddress > 0 {
				env.Warn("long-haul-cnp: %s: %d notifications not sent: the switch has no address of their sources' family (its ip)", node.Switch().Name(), nc.NoAddress)
			}
			if nc.NoFormat > 0 {
				env.Warn("long-haul-cnp: %s: %d notifications not sent: no format of the node applies to their sources (format icmpv6 needs IPv6 sources)", node.Switch().Name(), nc.NoFormat)
			}
		}
	})
	runOf(env).onSampleSplit(thresholdRecorder(runOf(env).r.rec.Thresholds, env.Net, m.Nodes))
	if env.Scenario.Tuner != nil {
		installTuner(env, m, *env.Scenario.Tuner)
	}
	if observe != nil {
		observe(m, env)
	}
	return nil
}

// mergeEvents merges the nodes' events (each in time order) in time
// order, ties in node order.
func mergeEvents(byNode [][]lhcnp.Event) []lhcnp.Event {
	var out []lhcnp.Event
	for _, evs := range byNode {
		out = append(out, evs...)
	}
	slices.SortStableFunc(out, func(a, b lhcnp.Event) int { return cmp.Compare(a.Time, b.Time) })
	return out
}

// thresholdRecorder returns a sampler that records every node's ports'
// K_min and K_max (their first queue's: the scenario configures every queue
// of a port alike) into thresholds.csv when they change, so that the queue
// plot draws them as steps (the tuner and link events move them). It is
// cut in two: snap reads the nodes of a partition (for each, its number
// of ports, then each port's K_min and K_max), merge records the nodes in
// their order, each port's series created when first seen.
func thresholdRecorder(f *report.Family, net *netsim.Network, nodes []*lhcnp.Node) splitHook {
	type port struct {
		kmin, kmax       report.SeriesID
		lastMin, lastMax int64
		recorded         bool
	}
	ports := map[string]*port{} // node + "\x00" + port name
	names := make([][]string, len(nodes))
	snap := func(part int, now engine.Time, buf []int64) []int64 {
		for _, n := range nodes {
			if net.Partition(n.Switch()) != part {
				continue
			}
			st := n.State(false).Ports
			buf = append(buf, int64(len(st)))
			for _, ps := range st {
				buf = append(buf, ps.Queues[0].KMinBytes, ps.Queues[0].KMaxBytes)
			}
		}
		return buf
	}
	merge := func(now engine.Time, snaps [][]int64) {
		cur := make([]int, len(snaps))
		for i, n := range nodes {
			sw := n.Switch()
			part := net.Partition(sw)
			s := snaps[part][cur[part]:]
			np := int(s[0])
			cur[part] += 1 + 2*np
			if names[i] == nil {
				for _, ps := range n.State(false).Ports {
					names[i] = append(names[i], ps.Name)
				}
			}
			for j := 0; j < np; j++ {
				kmin, kmax := s[1+2*j], s[2+2*j]
				k := sw.Name() + "\x00" + names[i][j]
				p := ports[k]
				if p == nil {
					var peer string
					for _, pt := range sw.Ports() {
						if pt.Name() == names[i][j] {
							peer = pt.Peer().Node().Name()
						}
					}
					p = &port{kmin: f.Series(sw.Name(), peer, "K_min"), kmax: f.Series(sw.Name(), peer, "K_max")}
					ports[k] = p
				}
				if p.recorded && p.lastMin == kmin && p.lastMax == kmax {
					continue
				}
				p.recorded, p.lastMin, p.lastMax = true, kmin, kmax
				f.Add(now.Nanos(), p.kmin, kmin)
				f.Add(now.Nanos(), p.kmax, kmax)
			}
		}
	}
	return splitHook{snap: snap, merge: merge}
}

// nodeConfig maps the scenario's parameters onto one node's configuration.
func nodeConfig(env *Env, p scenario.LongHaulCNP, sw *netsim.Switch) (lhcnp.Config, error) {
	c := lhcnp.DefaultConfig()
	c.Enabled = true
	c.FormatRoCEv2 = p.Format == "rocev2"
	c.FormatICMPv6 = p.Format == "icmpv6"
	if c.FormatRoCEv2 {
		// §10.5: every RNIC of the scenario runs the reaction point, so
		// every host is configured to accept the RoCEv2 format.
		for _, h := range env.Net.Hosts() {
			if a := h.Addr(); a.IsValid() {
				c.RoCEv2Receivers = append(c.RoCEv2Receivers, netip.PrefixFrom(a, a.BitLen()))
			}
		}
	}
	c.FlowTable.IdleTimeout = engine.FromDuration(p.FlowAging)
	c.Collaborative.Enabled = p.Collaborative
	c.Collaborative.ObservationWindow = engine.FromDuration(p.ObservationWindow)
	// §5.7 upstream priority: the peers are the scenario's
	// congestion-aware nodes (the addresses the sources trust).
	c.Collaborative.UpstreamFirst = p.UpstreamFirst
	c.Collaborative.UpstreamFirstMarked = p.UpstreamFirstMarked
	for _, n := range env.Nodes {
		if a := n.Addr(); a.IsValid() {
			c.Collaborative.Peers = append(c.Collaborative.Peers, netip.PrefixFrom(a, a.BitLen()))
		}
	}

	ic := &c.Interface
	if p.PortCNPInterval > 0 {
		// One notification per interval, no burst.
		ic.CNPRatePerSec = max(1, int64(time.Second/p.PortCNPInterval))
		ic.CNPBurst = 1
	}
	q := &ic.Queue
	q.KBaseBytes = int64(p.KBase)
	q.Alpha = p.Alpha
	if sc, ok := switchOf(env.Scenario, sw.Name()); ok && sc.Queue.ECN.PMax > 0 {
		q.PMax = sc.Queue.ECN.PMax
	}
	q.VECNPercent = 100 * p.VECN
	q.VGrowthBytesPerSec = int64(p.VGrowth) / 8
	q.MeasurementInterval = engine.FromDuration(p.GrowthInterval)
	q.EMRWindow = q.MeasurementInterval
	// 0 (the draft): generate when a condition is satisfied; a scenario
	// that wants a persistence says so (trigger_persistence).
	q.TriggerPersistence = engine.FromDuration(p.TriggerPersistence)
	q.MinCNPInterval = engine.FromDuration(p.CNPInterval)
	q.OneCutPerEpisode = p.OneCutPerEpisode
	q.PerFlowRTT = p.PerFlowRTT
	q.OverloadCut = p.OverloadCut
	q.OverloadCutGrowth = p.OverloadCutGrowth
	q.EqualCut = p.EqualCut
	q.OneCutInFlight = p.OneCutInFlight
	a := &q.Action
	a.RateReducePercent = uint16(p.ReducePercent)
	a.PauseLevel = lhcnp.PauseLevelNever
	c.Collaborative.EscalationAction = wire.ActionRateReduce
	if p.PauseDuration > 0 {
		a.PauseDuration = engine.FromDuration(p.PauseDuration)
		// The node's level is 170 at K_max and 255 at 4/3 K_max
		// (docs/longhaul.md); the loader refuses a factor above 4/3
		// (scenario.MaxPauseFactor), which no level could tell apart.
		a.PauseLevel = int(lhcnp.LevelAtKMaxFactor(p.PauseFactor))
		c.Collaborative.EscalationAction = wire.ActionPause
	}
	a.ResumePercent = uint16(p.ResumePercent)
	a.ResumeHold = engine.FromDuration(p.ResumeAfter)
	a.RepeatResume = p.RepeatResume
	a.ResumeOnDrain = p.ResumeOnDrain

	for _, pt := range sw.Ports() {
		setPortThresholds(&c, p, pt)
	}
	return c, c.Validate()
}

// setPortThresholds writes the port's RTT_est and, when K_min is not the
// node's own K_max / 2, explicit K_max and K_min into c.Interfaces.
func setPortThresholds(c *lhcnp.Config, p scenario.LongHaulCNP, pt *netsim.Port) {
	if c.Interfaces == nil {
		c.Interfaces = map[string]lhcnp.InterfaceConfig{}
	}
	ic := c.Interface
	ic.RTTSource = lhcnp.RTTStatic
	rtt := p.RTTEst
	if rtt == 0 {
		rtt = 2 * pt.Out().Delay().Duration()
	}
	ic.RTTEst = max(engine.FromDuration(rtt), engine.Microsecond)
	if p.KMinFraction != lhcnp.KMinDerivedFraction {
		kmax, kmin := BDPThresholds(p, pt.RateBitsPerSec(), pt.Out().Delay().Duration())
		q := ic.Queue
		q.KMaxMode, q.KMaxBytes = lhcnp.KMaxExplicit, kmax
		q.KMinMode, q.KMinBytes = lhcnp.KMinExplicit, min(kmin, kmax-1)
		ic.Queue = q
	}
	c.Interfaces[pt.Name()] = ic
}

func switchOf(sc *scenario.Scenario, name string) (scenario.Switch, bool) {
	for _, s := range sc.Switches {
		if s.Name == name {
			return s, true
		}
	}
	return scenario.Switch{}, false
}
