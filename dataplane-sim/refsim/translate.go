// Package refsim compares our models with the RDMA ns-3 simulator that
// most RDMA congestion-control papers since 2019 ran (first published
// with HPCC: github.com/alibaba-edu/High-Precision-Congestion-Control,
// ns-3.17, program scratch/third): it translates one of our scenarios into
// that simulator's input files (config.txt, topology, flows, trace list),
// reads what it writes (the binary packet trace, fct.txt, pfc.txt) into a
// Summary, runs the same scenario on our models into the same Summary, and
// compares two Summaries figure by figure.
//
// The reference simulator itself is not part of the repository, nor any
// recipe that builds it (docs/validation.md says why and where it comes
// from); its summarised outputs are, in testdata/, with the command line
// that produced them.
//
// The package depends on build, engine, netsim, scenario and the standard
// library.
package refsim

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/build"
	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/netsim"
	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
)

// Reference simulator constants that the translation must respect (from
// its source: switch-mmu.cc, rdma-hw.cc, third.cc).
const (
	// refReserveBytes is the per-ingress-queue reserve before the shared
	// buffer counts (SwitchMmu::reserve).
	refReserveBytes = 4 * 1024
	// refResumeOffsetBytes is how far below the pause threshold a queue
	// must fall to resume (SwitchMmu::resume_offset).
	refResumeOffsetBytes = 3 * 1024
	// refPFCShift is the dynamic threshold's 1/8 of the free shared
	// buffer (third.cc: shift = 3 for ports at the NIC rate).
	refPFCShift = 3
	// refDataPG is the priority group our flows use there: queue 3.
	refDataPG = 3
	// refFirstSport is the first UDP source port of a host pair (third.cc).
	refFirstSport = 10000
	// refDport is the destination port written into the flow file.
	refDport = 100
)

// RefSource is the reference simulator every stored output must come from
// (docs/validation.md).
const RefSource = "github.com/alibaba-edu/High-Precision-Congestion-Control@9f4be2a9ead8a90e8bf732c66bd758c00e58e5be"

// Bottleneck names the switch egress port whose queue and per-flow
// throughput a Summary records: the port of Switch towards Peer.
type Bottleneck struct {
	Switch, Peer string
}

// Translation is a scenario in the reference simulator's terms.
type Translation struct {
	// Files are the input files by name: config.txt, topology.txt,
	// flow.txt, trace.txt. config.txt names the others relative to Dir.
	Files map[string]string
	// NodeID maps our node names to the reference's node numbers.
	NodeID map[string]int
	// Bottleneck is the reference's switch node and device index of the
	// bottleneck port.
	BottleneckNode, BottleneckIf int
	// FlowKey maps (source node, destination node, source port) in the
	// reference to our flow names.
	FlowKey map[FlowKey]string
	// FlowOrder is the scenario's flow names in scenario order.
	FlowOrder []string
	// Fabric is a generated fabric's translation: no bottleneck; the
	// packet trace covers the switches with host ports, and HostPorts are
	// those ports (node, device).
	Fabric    bool
	HostPorts map[[2]int]bool
	// FlowSize is each flow's size in bytes as written (long-lived: the
	// bytes written for it).
	FlowSize map[string]int64
	// FlowStartNs is each flow's start in the reference (ours plus the
	// path's base round trip: Translate).
	FlowStartNs map[string]int64
	// Notes are the places where the translation is not one to one (a
	// mechanism the reference lacks, a threshold it derives itself).
	Notes []string
}

// FlowKey identifies a flow in the reference's outputs.
type FlowKey struct {
	Src, Dst int
	Sport    uint16
}

// Translate writes sc for the reference simulator. dir is where its input
// and output files will be, as config.txt names them. Parameters the
// reference cannot express are errors naming the scenario key; parameters
// it expresses differently are Notes.
func Translate(sc *scenario.Scenario, dir string, bn Bottleneck) (*Translation, error) {
	// Generated fabrics: the reference does per-flow ECMP too (a hash of
	// the five-tuple over the equal-cost next hops, its own hash), and one
	// shared buffer per switch; a fabric is compared as a whole (no single
	// bottleneck: Fabric).
	fabric := IsFabric(sc)
	if sc.ECMP.Enabled && !fabric {
		return nil, errors.New("refsim: topology.ecmp: compared on generated fabrics only (topology.fabrics)")
	}
	for _, s := range sc.Switches {
		if s.SharedBuffer%(1<<20) != 0 {
			return nil, fmt.Errorf("refsim: topology.fabrics: switch %s: shared_buffer %d bytes is not whole MiB (the reference's unit)", s.Name, int64(s.SharedBuffer))
		}
	}
	nw, err := build.New(sc, build.Options{Seed: sc.Seed, End: engine.FromDuration(sc.Duration)})
	if err != nil {
		return nil, err
	}
	t := &Translation{Files: map[string]string{}, NodeID: map[string]int{}, FlowKey: map[FlowKey]string{}, Fabric: fabric, HostPorts: map[[2]int]bool{}, FlowSize: map[string]int64{}, FlowStartNs: map[string]int64{}}
	if sc.ECMP.Enabled {
		t.Notes = append(t.Notes, "topology.ecmp: the reference hashes each flow's five-tuple onto its equal-cost next hops too, with its own hash "+
			"(seeded by switch, the same in every run); a flow's path differs between the two, so the fabric is compared by distributions")
	}
	// Hosts first, then switches: the reference numbers nodes in file
	// order and lists the switches.
	for _, h := range sc.Hosts {
		t.NodeID[h.Name] = len(t.NodeID)
	}
	for _, s := range sc.Switches {
		t.NodeID[s.Name] = len(t.NodeID)
	}
	hc := nw.Net.NodeByName(sc.Hosts[0].Name).(*netsim.Host).Config()
	cfg, err := t.dcqcn(sc, hc)
	if err != nil {
		return nil, err
	}
	// Topology: one line per link; a switch's devices are numbered from
	// 1 in the order of its links.
	var topo strings.Builder
	fmt.Fprintf(&topo, "%d %d %d\n", len(t.NodeID), len(sc.Switches), len(sc.Links))
	for i, s := range sc.Switches {
		if i > 0 {
			topo.WriteString(" ")
		}
		fmt.Fprintf(&topo, "%d", t.NodeID[s.Name])
	}
	topo.WriteString("\n")
	devs := map[string]int{}
	rates := map[int64]bool{}
	hdrm := map[string]int64{}
	swPorts := map[string]int{}
	t.BottleneckNode, t.BottleneckIf = -1, -1
	for _, lk := range sc.Links {
		fmt.Fprintf(&topo, "%d %d %dbps %dns 0\n", t.NodeID[lk.A], t.NodeID[lk.B], int64(lk.Rate), lk.Delay.Nanoseconds())
		rates[int64(lk.Rate)] = true
		for _, end := range [][2]string{{lk.A, lk.B}, {lk.B, lk.A}} {
			devs[end[0]]++
			if t.isSwitch(sc, end[0]) {
				swPorts[end[0]]++
				// third.cc: headroom = rate * delay * 3 per switch port.
				hdrm[end[0]] += int64(lk.Rate) * lk.Delay.Nanoseconds() / 8 / 1e9 * 3
				if !t.isSwitch(sc, end[1]) {
					t.HostPorts[[2]int{t.NodeID[end[0]], devs[end[0]]}] = true
				}
				if end[0] == bn.Switch && end[1] == bn.Peer {
					t.BottleneckNode, t.BottleneckIf = t.NodeID[end[0]], devs[end[0]]
				}
			}
		}
	}
	if t.BottleneckNode < 0 && !fabric {
		return nil, fmt.Errorf("refsim: no link from switch %q to %q for the bottleneck", bn.Switch, bn.Peer)
	}
	if err := t.queue(sc, rates, hdrm, swPorts, &cfg); err != nil {
		return nil, err
	}
	// Flows, in start order (the reference reads them in file order and
	// requires it sorted by time).
	for _, f := range sc.Flows {
		t.FlowOrder = append(t.FlowOrder, f.Name)
	}
	flows := slices.Clone(sc.Flows)
	sort.SliceStable(flows, func(i, j int) bool {
		return flows[i].Start+setupRTT(sc, flows[i].Src, flows[i].Dst) < flows[j].Start+setupRTT(sc, flows[j].Src, flows[j].Dst)
	})
	var fl strings.Builder
	fmt.Fprintf(&fl, "%d\n", len(flows))
	nextSport := map[[2]int]uint16{}
	end := sc.Duration
	for _, f := range flows {
		if f.Stop > 0 || f.Rate > 0 {
			return nil, fmt.Errorf("refsim: flow %s: stop and rate have no counterpart in the reference", f.Name)
		}
		size := int64(f.Size)
		if size == 0 {
			// A long-lived flow: more than the link can carry in the run.
			size = int64(math.Ceil(float64(sc.Links[0].Rate)/8*end.Seconds())) * 4
		}
		s, d := t.NodeID[f.Src], t.NodeID[f.Dst]
		pair := [2]int{s, d}
		sport, ok := nextSport[pair]
		if !ok {
			sport = refFirstSport
		}
		nextSport[pair] = sport + 1
		t.FlowKey[FlowKey{Src: s, Dst: d, Sport: sport}] = f.Name
		t.FlowSize[f.Name] = size
		// Ours connects first (IB CM REQ, REP: one round trip) and sends
		// after; the reference sends at its start time. Its flow starts
		// one base round trip of the path later, so data leaves both at
		// the same time (to within the MADs' serialisation).
		start := f.Start + setupRTT(sc, f.Src, f.Dst)
		fmt.Fprintf(&fl, "%d %d %d %d %d %.9f\n", s, d, refDataPG, refDport, size, start.Seconds())
		t.FlowStartNs[f.Name] = start.Nanoseconds()
	}
	t.Files["topology.txt"] = topo.String()
	t.Files["flow.txt"] = fl.String()
	t.Files["trace.txt"] = fmt.Sprintf("1\n%d\n", t.BottleneckNode)
	if fabric {
		// Every switch with a host port: their queues towards the hosts.
		nodes := map[int]bool{}
		for p := range t.HostPorts {
			nodes[p[0]] = true
		}
		ids := slices.Sorted(maps.Keys(nodes))
		var tr strings.Builder
		fmt.Fprintf(&tr, "%d\n", len(ids))
		for i, id := range ids {
			if i > 0 {
				tr.WriteString(" ")
			}
			fmt.Fprint(&tr, id)
		}
		tr.WriteString("\n")
		t.Files["trace.txt"] = tr.String()
	}
	cfg.set("TOPOLOGY_FILE", dir+"/topology.txt")
	cfg.set("FLOW_FILE", dir+"/flow.txt")
	cfg.set("TRACE_FILE", dir+"/trace.txt")
	cfg.set("TRACE_OUTPUT_FILE", dir+"/mix.tr")
	cfg.set("FCT_OUTPUT_FILE", dir+"/fct.txt")
	cfg.set("PFC_OUTPUT_FILE", dir+"/pfc.txt")
	cfg.set("QLEN_MON_FILE", dir+"/qlen.txt")
	cfg.set("QLEN_MON_START", "0")
	cfg.set("QLEN_MON_END", "0")
	cfg.set("SIMULATOR_STOP_TIME", fmt.Sprintf("%.9f", sc.Duration.Seconds()))
	cfg.set("ENABLE_TRACE", "1")
	cfg.set("ERROR_RATE_PER_LINK", "0")
	cfg.set("LINK_DOWN", "0 0 0")
	t.Files["config.txt"] = cfg.String()
	return t, nil
}

func (t *Translation) isSwitch(sc *scenario.Scenario, name string) bool {
	return slices.ContainsFunc(sc.Switches, func(s scenario.Switch) bool { return s.Name == name })
}

// config is config.txt's keys in the order written.
type config struct {
	keys []string
	vals map[string]string
}

func (c *config) set(k, v string) {
	if c.vals == nil {
		c.vals = map[string]string{}
	}
	if _, ok := c.vals[k]; !ok {
		c.keys = append(c.keys, k)
	}
	c.vals[k] = v
}

func (c *config) String() string {
	var b strings.Builder
	for _, k := range c.keys {
		fmt.Fprintf(&b, "%s %s\n", k, c.vals[k])
	}
	return b.String()
}

// dcqcn maps the RNIC's DCQCN (reaction and notification point) to the
// reference's Mellanox-style DCQCN (CC_MODE 1, RdmaHw's *Mlx functions).
func (t *Translation) dcqcn(sc *scenario.Scenario, hc netsim.HostConfig) (config, error) {
	var c config
	d := hc.DCQCN
	c.set("ENABLE_QCN", "1")
	c.set("USE_DYNAMIC_PFC_THRESHOLD", "1")
	c.set("PACKET_PAYLOAD_SIZE", fmt.Sprint(hc.MTUBytes))
	c.set("CC_MODE", "1")
	if !d.Enabled {
		// No rate control: the reference's DCQCN never sees a CNP when
		// the switches do not mark (ENABLE_QCN 0, set by queue).
		if slices.ContainsFunc(sc.Switches, func(s scenario.Switch) bool { return s.Queue.ECN.Enabled }) {
			return c, errors.New("refsim: dcqcn.enabled false with ECN marking on: the reference cannot ignore marks")
		}
	}
	bad := func(key, why string) error { return fmt.Errorf("refsim: dcqcn.%s: %s", key, why) }
	switch {
	case d.AlphaPerCNP:
		return c, bad("alpha_per_cnp", "the reference updates alpha once per period (firmware timing) only")
	case d.ByteResetBytes != 0:
		return c, bad("byte_reset", "the reference has no byte counter: set it to 0")
	case d.InitialAlpha != 1024:
		return c, bad("initial_alpha", "the reference starts alpha at 1.0 (1024)")
	case d.GD != 11:
		return c, bad("rpg_gd", "the reference cuts by alpha/2 (rpg_gd 11)")
	case d.MinDecFacPercent != 0 && d.MinDecFacPercent != 50:
		return c, bad("min_dec_fac", "the reference bounds a cut only by alpha <= 1, i.e. 50 %")
	case !d.ClampTargetAfterTimeInc:
		return c, bad("clamp_tgt_rate_after_time_inc", "the reference clamps after a timer increase always")
	case d.MaxRateBitsPerSec != 0:
		return c, bad("max_rate", "the reference's rates are bounded by the line rate only")
	case d.RateOnFirstCNPBitsPerSec != 0:
		return c, bad("rate_on_first_cnp", "the reference's RateOnFirstCnp is a fraction; only the default (none) maps")
	case hc.NP.CNPInterval != 0:
		return c, fmt.Errorf("refsim: dcqcn.cnp_interval: the reference echoes every marked packet in its ACK: set it to 0")
	}
	us := func(t engine.Time) string { return fmt.Sprintf("%g", float64(t)/float64(engine.Microsecond)) }
	c.set("ALPHA_RESUME_INTERVAL", us(d.AlphaUpdatePeriod))
	c.set("RATE_DECREASE_INTERVAL", us(d.RateReduceMonitorPeriod))
	c.set("CLAMP_TARGET_RATE", b01(d.ClampTargetRate))
	c.set("RP_TIMER", us(d.TimeReset))
	c.set("EWMA_GAIN", fmt.Sprintf("%.10g", float64(1024-d.G)/1024))
	// One to one: both do fast recovery while the timer stage an event
	// finds is below the threshold (F events after a cut) and an additive
	// step at F; they part only above it (the rate_hai note).
	c.set("FAST_RECOVERY_TIMES", fmt.Sprint(d.Threshold))
	c.set("RATE_AI", fmt.Sprintf("%db/s", d.AIRateBitsPerSec))
	c.set("RATE_HAI", fmt.Sprintf("%db/s", d.HAIRateBitsPerSec))
	c.set("MIN_RATE", fmt.Sprintf("%db/s", d.MinRateBitsPerSec))
	c.set("DCTCP_RATE_AI", "1000Mb/s")
	if d.Enabled && d.HAIRateBitsPerSec != d.AIRateBitsPerSec {
		t.Notes = append(t.Notes, "dcqcn.rate_hai differs from rate_ai: both do fast recovery while the timer stage is below the threshold "+
			"and an additive step at it, but above it the reference's steps are hyper increases on timer stages alone, ours stay additive "+
			"until timer and byte-counter stages both pass the threshold, which never happens without a byte counter")
	}
	c.set("L2_CHUNK_SIZE", "4000")
	c.set("L2_ACK_INTERVAL", fmt.Sprint(max(hc.AckEveryPackets, 1)))
	// Go back N to the NAKed packet, as our RNICs by default; the
	// reference has no switch for none.
	c.set("L2_BACK_TO_ZERO", "0")
	if !hc.GoBackN {
		t.Notes = append(t.Notes, "nic.loss_recovery none: the reference always resends (go back N to the NAKed packet); a lost packet is resent there and not here")
	}
	c.set("HAS_WIN", "0")
	c.set("GLOBAL_T", "1")
	c.set("VAR_WIN", "0")
	c.set("FAST_REACT", "1")
	c.set("U_TARGET", "0.95")
	c.set("MI_THRESH", "0")
	c.set("INT_MULTI", "1")
	c.set("MULTI_RATE", "0")
	c.set("SAMPLE_FEEDBACK", "0")
	c.set("PINT_LOG_BASE", "1.05")
	c.set("PINT_PROB", "1.0")
	c.set("RATE_BOUND", "1")
	c.set("ACK_HIGH_PRIO", "1") // our ACKs and CNPs go before data (priority 6 / control)
	t.Notes = append(t.Notes, "the reference has no connection setup: its flows start one base RTT of their path after ours, when ours have connected (IB CM REQ and REP)")
	return c, nil
}

func b01(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// queue maps RED/ECN (per link rate, as the reference keys it) and the
// buffer. The reference's buffer is one shared buffer per switch and its
// PFC threshold is dynamic (1/8 of the free shared buffer); ours are per
// port and static. BUFFER_SIZE is chosen so that with the switch's
// ingress ports equally loaded the reference pauses where our XOFF does
// (Notes say so); with PFC off it is large enough that the reference never
// pauses.
func (t *Translation) queue(sc *scenario.Scenario, rates map[int64]bool, hdrms map[string]int64, ports map[string]int, c *config) error {
	var q *scenario.Queue
	for i := range sc.Switches {
		s := &sc.Switches[i].Queue
		if q != nil && *q != *s {
			return fmt.Errorf("refsim: switch %s: queue differs from %s's; the reference has one ECN setting per link rate", sc.Switches[i].Name, sc.Switches[0].Name)
		}
		q = s
	}
	if q == nil {
		return errors.New("refsim: no switch")
	}
	if !q.ECN.Enabled {
		c.set("ENABLE_QCN", "0")
	}
	for _, v := range []scenario.Size{q.ECN.KMin, q.ECN.KMax} {
		if v%1000 != 0 {
			return fmt.Errorf("refsim: queue.ecn: %d bytes is not whole KB (the reference's unit)", int64(v))
		}
	}
	rs := make([]int64, 0, len(rates))
	for r := range rates {
		rs = append(rs, r)
	}
	slices.Sort(rs)
	kmin, kmax, pmax := fmt.Sprint(len(rs)), fmt.Sprint(len(rs)), fmt.Sprint(len(rs))
	for _, r := range rs {
		kmin += fmt.Sprintf(" %d %d", r, int64(q.ECN.KMin)/1000)
		kmax += fmt.Sprintf(" %d %d", r, int64(q.ECN.KMax)/1000)
		pmax += fmt.Sprintf(" %d %g", r, q.ECN.PMax)
	}
	c.set("KMAX_MAP", kmax)
	c.set("KMIN_MAP", kmin)
	c.set("PMAX_MAP", pmax)
	// The switch with the most ports and headroom decides (one switch in
	// the scenarios compared so far).
	var hdrm, rsrv int64
	for sw, n := range ports {
		hdrm = max(hdrm, hdrms[sw])
		rsrv = max(rsrv, int64(n)*refReserveBytes) // SwitchMmu::ConfigNPort: one reserve per port
	}
	var mb int64
	var shared scenario.Size
	for i, s := range sc.Switches {
		if i > 0 && s.SharedBuffer != shared {
			return fmt.Errorf("refsim: switch %s: shared_buffer differs from %s's; the reference has one buffer size", s.Name, sc.Switches[0].Name)
		}
		shared = s.SharedBuffer
	}
	switch {
	case shared > 0 && q.PFC.Enabled:
		return errors.New("refsim: queue.pfc with shared_buffer: not translated (the fabrics compared run PFC off)")
	case shared > 0:
		mb = int64(shared) >> 20
		t.Notes = append(t.Notes, fmt.Sprintf("shared_buffer: BUFFER_SIZE %d MB; ours drops at egress when a queue reaches alpha times the unused buffer, "+
			"the reference (lossless) pauses an ingress queue at 1/8 of the unused buffer (PFC cannot be turned off there)", mb))
	case q.PFC.Enabled:
		if int64(q.PFC.XOff)-int64(q.PFC.XOn) != refResumeOffsetBytes {
			t.Notes = append(t.Notes, fmt.Sprintf("queue.pfc: the reference resumes %d B below its pause threshold; ours at xon", refResumeOffsetBytes))
		}
		// Pause when an ingress's shared use s reaches (B - hdrm - rsrv -
		// n s) / 8 with n loaded ingresses: B = s (8 + n) + hdrm + rsrv,
		// rounded up to whole MiB (the reference's unit).
		n := int64(loadedIngress(sc))
		s := int64(q.PFC.XOff) - refReserveBytes
		need := s*(1<<refPFCShift+n) + hdrm + rsrv
		mb = (need + 1<<20 - 1) >> 20
		got := (mb<<20-hdrm-rsrv)/(1<<refPFCShift+n) + refReserveBytes
		t.Notes = append(t.Notes, fmt.Sprintf("queue.pfc: BUFFER_SIZE %d MB gives the reference's dynamic threshold about %d B per ingress with %d loaded ingresses (ours: xoff %d B)", mb, got, n, int64(q.PFC.XOff)))
	default:
		// Never pause: a threshold far above any queue of the run.
		mb = 1024
		t.Notes = append(t.Notes, "queue.pfc off: the reference cannot turn PFC off; BUFFER_SIZE 1024 MB keeps its threshold out of reach")
	}
	c.set("BUFFER_SIZE", fmt.Sprint(mb))
	return nil
}

// setupRTT is the base round trip of the path from src to dst: twice the
// links' one-way delays.
func setupRTT(sc *scenario.Scenario, src, dst string) time.Duration {
	delay := map[[2]string]time.Duration{}
	for _, lk := range sc.Links {
		delay[[2]string{lk.A, lk.B}], delay[[2]string{lk.B, lk.A}] = lk.Delay, lk.Delay
	}
	for _, f := range sc.Flows {
		if f.Src != src || f.Dst != dst || len(f.Path) < 2 {
			continue
		}
		// Equal-cost paths have equal delays here (one delay per fabric).
		var d time.Duration
		for i := 0; i+1 < len(f.Path); i++ {
			d += delay[[2]string{f.Path[i], f.Path[i+1]}]
		}
		return 2 * d
	}
	for _, rt := range sc.Routes {
		if rt.Src != src || rt.Dst != dst {
			continue
		}
		var d time.Duration
		for i := 0; i+1 < len(rt.Path); i++ {
			d += delay[[2]string{rt.Path[i], rt.Path[i+1]}]
		}
		return 2 * d
	}
	return 0
}

// loadedIngress counts the distinct switch ingress links that carry the
// scenario's flows, at the most loaded switch: the senders of an incast.
func loadedIngress(sc *scenario.Scenario) int {
	in := map[string]map[string]bool{}
	pairs := map[[2]string]bool{}
	for _, f := range sc.Flows {
		pairs[[2]string{f.Src, f.Dst}] = true
	}
	for _, rt := range sc.Routes {
		if !pairs[[2]string{rt.Src, rt.Dst}] {
			continue // a reverse path (ACKs, CNPs) loads no ingress with data
		}
		for i := 1; i+1 < len(rt.Path); i++ {
			if in[rt.Path[i]] == nil {
				in[rt.Path[i]] = map[string]bool{}
			}
			in[rt.Path[i]][rt.Path[i-1]] = true
		}
	}
	n := 1
	for _, m := range in {
		n = max(n, len(m))
	}
	return n
}
