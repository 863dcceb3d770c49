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
	`queue exists (which also caps a flow whose competitors went idle, until the next advice). Whether the ` +
	`congested port keeps marking ECN matters as much: Fast CNP never marks a sender known to process it (§4 ` +
	`MUST NOT), so its senders hear of the congestion once; the switch CNP and FCN leave the port's marking on, ` +
	`so a sender is cut by the switch's CNPs and then, a path round trip later, again by its receiver's CNPs ` +
	`for the same congestion. DCQCN runs NVIDIA's firmware defaults: a receiver sends a CNP every 4 µs while ` +
	`marked packets arrive, and over a WAN the marks of one episode keep arriving for a whole round trip after ` +
	`the sender has cut, so DCQCN alone overshoots both ways (a deep queue first, an under-used link after); ` +
	`the paper's parameters (dcqcn:paper: alpha near 1, every CNP halves the rate) cut harder still. PFC alone ` +
	`never drops but holds whole ports, and pauses spread upstream.`

// caveats are the limits of the models that bear on the numbers.
const caveats = `DCQCN is NVIDIA's firmware as documented (docs/engine.md, "DCQCN parameters"): its alpha ` +
	`decays by 0.5 % per microsecond, so an isolated CNP after a few hundred microseconds of silence cuts almost ` +
	`nothing, a property of the firmware's parameters, not of the model; the paper's set is the dcqcn:paper row. ` +
	`Fast CNP and the ICMPv6 format need IPv6 hosts: the comparison scenarios are IPv6. The FCT slowdown ranks ` +
	`finished flows only: a row that leaves large flows running at the end (the finished/flows counts) looks ` +
	`better in p99 than it is. ` +
	`Our DCQCN, PFC and switch models were checked against the RDMA ns-3 most RDMA papers run (HPCC's simulator) ` +
	`and against the DCQCN fluid model: docs/validation.md has every scenario and figure, and the column "our DCQCN ` +
	`vs the reference" below gives the largest difference for every row that reacts through DCQCN. On the incasts ` +
	`and the long-lived flow meeting bursts, the mean queue, utilisation, fairness, PFC pause time and FCT p50/p99 ` +
	`agree within 10 % (most within 3 %); the step-by-step queue of a DCQCN incast does not (run-to-run noise in ` +
	`both, and ours cuts up to 4 µs sooner after a CNP than the reference's 4 µs grid, so it runs about 0.2 ms ahead ` +
	`of the 8:1 incast's oscillation). On a k = 4 fat-tree with the web-search flow sizes at 30 % and 50 % load ` +
	`(16 hosts, 5 runs each), the FCT slowdown p50 per flow size agrees within 5 % for the short and the long ` +
	`flows and within 13–16 % for the 100 KB – 1 MB ones, the host ports' mean queue within 7–19 %, and the ` +
	`slowdown tails (p99) and queue tail differ by up to 50 %: the two simulators hash flows onto different ` +
	`paths, the reference the same paths in every run, and over 20 hash seeds of ours the reference's figures ` +
	`lie inside our range.`

const nearSources = `Fast CNP is the strongest of the mechanisms that act through DCQCN: the congested ` +
	`node itself notifies within a microsecond and no ECN mark follows, and it holds the queue to 21 MB in the ` +
	`incast, 5 MB with two congestion points and under 2 MB after the RTT step, at 98–99 % utilisation without ` +
	`a drop. Long-haul CNP with the comparison's params also drops nothing and keeps the link the fullest ` +
	`(100 %, 100 %, 94 %) but lets the queue grow two to five times deeper than Fast CNP (43, 26 and 6 MB): it ` +
	`acts at its BDP-scaled K_max or on the growth trigger, not at 100 KB, and its Rate Reduce is a ceiling held ` +
	`until recovery. The switch CNP and FCN notify as early but lose a third to three quarters of the link to ` +
	`the double cut (the marks stay on). DCQCN alone, its feedback a 10 ms round trip late, fills the 256 MB ` +
	`buffer and drops in the incast, tuned or not. Rate Advice keeps the smallest queue of all (under 1.5 MB; ` +
	`the fair share is set before a queue exists) at 94–95 %; PFC alone keeps queues small by pausing the ` +
	`senders' ports for long stretches. The draft's defaults (a 10 ms per-flow gap, Rate Reduce 30 %, no Pause) are too ` +
	`slow in the incast: see the bar tables.`

const farther = `Here Long-haul CNP loses with the comparison's params. In the middle of the WAN the ` +
	`tuned DCQCN (its K_min at 20 MB) keeps the link fullest, Fast CNP next; Long-haul CNP runs the bottleneck ` +
	`at about two thirds with a deeper queue than Fast CNP. A node 2.5 ms from the senders cuts each flow by 30 % ` +
	`every millisecond (the comparison's per-flow gap, tuned for the near-source loop) while the receivers' ` +
	`CNPs for its first-level marks keep cutting too (DCQCN stays on), and its held ceilings come back slowly ` +
	`(recovery after 2 RTT_est, then 1 Gb/s per tick). That loss is the params', not the mechanism's: the ` +
	`tuner's grid finds a static setting (the long-haul-cnp:best-static row, alpha 4 and V_growth 20 Gb/s: a ` +
	`higher K_max, so far fewer marks and receiver CNPs) that keeps the link as full as the tuned DCQCN; the ` +
	`closed-loop tuner, which lifts K_max while the growth trigger cuts (rule overrun, docs/tuner.md), keeps it ` +
	`69 % used with a lower objective than that setting (the tuner's rows below). At the far end every mechanism's feedback is the receiver's round ` +
	`trip, and Long-haul CNP's utilisation is the lowest of all rows whatever its setting: a node 5 ms from ` +
	`the senders whose cuts add to the receivers' leaves the bottleneck idle. The options of issue #27 ` +
	`(deviations, off by default: docs/conformance.md) address these causes: with the three together ` +
	`(long-haul-cnp:options) the middle of the WAN runs at 95.1 % with a 75.8 MB peak queue (one cut per ` +
	`episode alone: 89.0 %) and the far end at 90.0 %, the best row (the tuned DCQCN: 69.0 %), with 2751 drops ` +
	`against the draft node's 2664 and the tuned DCQCN's 5230. No mechanism can drop nothing there: every ` +
	`sender's first packets reach N2 at line rate for a whole 10 ms round trip before any cut can, 60 Gb/s ` +
	`over the port for 10 ms, 75 MB into a 64 MB buffer: at least 2640 drops whatever reacts at N2 ` +
	`(docs/longhaul.md, the bound per scenario). The senders' reaction points count the node's cut from ` +
	`their rate before the receivers' CNPs of the same episode, so the two do not compound. A node with the per-flow round trip cuts once per ` +
	`round trip, so its cut is sized for the loop (the arrivals to the port's rate less the drain of the queue ` +
	`it will find), it does not wait a whole round trip for an upstream node, it does not cut again while the ` +
	`queue drains, and with repeat_resume it resumes the flows to the port's spare rate. FCN's 1 µs ` +
	`feedback at the far end (and in the busier mixes) is its ingress PE's own: the tunnel's 40-byte outer ` +
	`header takes the senders' 100 Gb/s about 1 % over the PE's 100 Gb/s tunnel port, so the PE, next to the ` +
	`senders, congests and sends its direct CNPs before the transit node's report comes back (mid-wan gives ` +
	`the PE a 200 Gb/s port, and there FCN's feedback is the WAN loop's, like the others').`

const webMixes = `Most flows are small and finish within a round trip or two; at 30 % load nothing ` +
	`queues for long and no mechanism changes the completion times much. At 50 and 70 % Rate Advice gives ` +
	`small flows the lowest p99 (queues near empty) and Long-haul CNP the next lowest, but both cost the large ` +
	`flows: a fair-share ceiling or a held Rate Reduce stays while competitors come and go. Long-haul CNP's ` +
	`large flows are the slowest at 50 % (several still running at the end, the finished ones' p99 among the ` +
	`worst) and mid-table at 70 %, and its congested-period utilisation is the lowest at 50 %. The tuned DCQCN ` +
	`gives the large flows the best p99 at 50 and 70 %, Fast CNP (and at 70 % the switch CNP) close behind. ` +
	`PFC alone is the worst for small and medium flows above 30 %. With the options (long-haul-cnp:options) ` +
	`Long-haul CNP's congested-period utilisation is within 1.4 % of the best at 50 % (50.2 %) and among the ` +
	`best at 70 % (73.5 %), every large flow finishes (6 of 6, 16 of 16, 25 of 25), and their p99 comes down ` +
	`(1.81 and 1.92) but stays above the tuned DCQCN's (1.43 and 1.63): ` +
	`most of the mixes' congestion is at N2's 25 Gb/s ports to the receivers, a 10 ms loop from the senders, ` +
	`where each new flow arrives at line rate for a round trip before it can be cut and the large flows ` +
	`carry the cuts; the tuned DCQCN barely marks (K_min 5 and 20 MB) and lets the 32 MB buffers absorb it.`
