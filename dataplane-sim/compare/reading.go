package compare

import "strings"

// Reading returns the paragraphs of docs/results.md that explain the
// "who wins where" table for ref: the reasons that hold by construction of
// the mechanisms, then every place ref loses, listed from the data.
func Reading(r *Result, ref string) []string {
	paras := []string{
		"**Why, in short.** " + why,
		"**Near the sources** (near-source-incast, two-node-congestion, rtt-step). " + nearSources,
		"**In the middle of the WAN and at the far end** (mid-wan, far-end). " + farther,
		"**Web-search mixes.** " + webMixes,
		"**Where " + ref + " loses.** Every scenario and figure in which it is not the best row:",
	}
	if l := r.Losses(ref); len(l) > 0 {
		paras = append(paras, strings.Join(l, "\n"))
	} else {
		paras = append(paras, "(none)")
	}
	paras = append(paras, "**Caveats of the models.** "+caveats)
	return paras
}

// why holds by construction: it says what each mechanism can and cannot
// do, not which numbers it gets.
const why = `Feedback latency is set by where the notifying node sits: every switch-originated mechanism ` +
	`(Long-haul CNP, Fast CNP, the white paper's switch CNP, FCN through its ingress PE) answers a queue next to ` +
	`the senders within microseconds and one in the middle of the WAN within that node's one-way delay to the ` +
	`senders, while DCQCN waits for the marks to reach the receiver and its CNP to come back, a whole path round ` +
	`trip; at the far end, next to the receiver, nobody is much faster than DCQCN. The queue a mechanism lets ` +
	`build is set by when it acts and how hard it cuts: Fast CNP, switch CNP and FCN act at 100 KB with DCQCN's ` +
	`cut, Long-haul CNP acts at its BDP-scaled K_max or when the queue grows faster than V_growth, with its own ` +
	`Rate Reduce held until recovery, and Rate Advice caps every capable sender at its fair share before any ` +
	`queue exists (which also caps a flow whose competitors went idle, until the next advice). PFC alone never ` +
	`drops but holds whole ports, and pauses spread upstream.`

const caveats = `The DCQCN reaction point of the network model (netsim) cuts by an alpha that decays with ` +
	`integer arithmetic between CNPs and is raised only at the next alpha period, so a CNP arriving long after ` +
	`the previous period cuts by almost nothing while resetting the increase timer: the rate of a sender that ` +
	`receives isolated CNPs can freeze (docs/engine.md). Every row whose senders react through DCQCN (dcqcn, ` +
	`Fast CNP, switch CNP, FCN, the receivers' CNPs under Rate Advice) inherits it; Long-haul CNP's own Rate ` +
	`Reduce does not. FCN's tunnel header is modelled, not encoded (no 40-byte overhead). Fast CNP and the ` +
	`ICMPv6 format need IPv6 hosts: the comparison scenarios are IPv6.`

const nearSources = `Every switch-originated mechanism answers within about a microsecond. Long-haul ` +
	`CNP with the comparison's params is the one that also holds the WAN queue to tens of megabytes and drops ` +
	`nothing in all three, because its Rate Reduce is a ceiling held until recovery; Fast CNP, the switch CNP ` +
	`and FCN's PE deliver their CNPs as early, but the senders react through DCQCN, whose cuts after the first ` +
	`are tiny in this model (caveats), so the queue grows far deeper than under Long-haul CNP and, in the ` +
	`incasts, fills and drops. Rate Advice keeps the ` +
	`smallest queue of all (the fair share is set before a queue exists) at a few percent of utilisation; PFC ` +
	`alone keeps queues small and drops nothing by holding the senders' ports paused for long stretches. The ` +
	`draft's defaults (a 10 ms per-flow gap) are too slow here: see the bar tables.`

const farther = `Here Long-haul CNP loses clearly: its congested-period utilisation is among the lowest ` +
	`of all rows. A node 2.5 or 5 ms from the senders cuts each flow by 30% every millisecond (the comparison's ` +
	`per-flow gap, tuned for the near-source loop) while the receivers' CNPs keep cutting too (DCQCN stays on), ` +
	`and its held ceilings come back slowly (recovery after 2 RTT_est, then 1 Gb/s per tick), so the bottleneck ` +
	`runs far below capacity; DCQCN, tuned or not, keeps the link fuller. Its feedback is as early as the other ` +
	`switch-originated mechanisms', and at the far end no mechanism gains much over the receiver's CNP. The ` +
	`per-flow gap and the recovery that suit a node next to the senders do not suit one a WAN away: a node ` +
	`should take both from the round trip to each flow's source, which is not implemented.`

const webMixes = `Most flows are small and finish within a round trip or two; no mechanism changes their ` +
	`completion much, Rate Advice a little (the best small-flow p99: it keeps queues near empty). Long-haul ` +
	`CNP is competitive on small and medium flows, but its held rate reductions hurt the large flows: their ` +
	`p99 slowdown is among the worst at 30 and 50% load and mid-table at 70%, where a tuned DCQCN does best. ` +
	`Rate Advice also costs the large flows (a fair-share ceiling stays while competitors come and go): at 70% ` +
	`only PFC alone does worse on them. FCN's ` +
	`feedback is the earliest on these mixes because N1, next to the senders, is its ingress PE and reports ` +
	`its own congestion directly.`
