package family

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/dataplane-sim/sim"
)

// Draw is what a seed drew: the scenario's shape in the family's terms
// (docs/tuner.md's tables list it per scenario).
type Draw struct {
	Seed       int64
	Set        string // "train" or "test"
	Rate       scenario.Rate
	RTT        time.Duration
	Congestion string
	Overload   float64
	Step       string
	IP         string
	WebSearch  float64 // the background's share of the bottleneck (0: none)
	Duration   time.Duration
}

// IsStep says whether the scenario has a step (load, RTT, or flows
// joining and leaving): the bar "beats every static setting over the
// whole run" applies to it.
func (d Draw) IsStep() bool { return d.Step != StepNone }

// Short is the draw in a few words.
func (d Draw) Short() string {
	s := fmt.Sprintf("%s %v RTT %v %.2g:1 %s %s", d.Congestion, d.Rate, d.RTT, d.Overload, d.Step, d.IP)
	if d.WebSearch > 0 {
		s += fmt.Sprintf(" +web %.0f%%", 100*d.WebSearch)
	}
	return s
}

// webSearchCDF is the DCTCP paper's web-search flow sizes
// (scenarios/cdf/websearch.txt), inline so a generated file stands alone.
const webSearchCDF = "[[0, 0], [10000, 15], [20000, 20], [30000, 30], [50000, 40], [80000, 53], [200000, 60], [1000000, 70], [2000000, 80], [5000000, 90], [10000000, 97], [30000000, 100]]"

// logUniform draws from [lo, hi] uniformly in log.
func logUniform(r *rand.Rand, lo, hi float64) float64 {
	if lo >= hi {
		return lo
	}
	return math.Exp(math.Log(lo) + r.Float64()*(math.Log(hi)-math.Log(lo)))
}

func pick(r *rand.Rand, list []string) string { return list[r.IntN(len(list))] }

// Sets are the family's seed sets by name.
func (s *Spec) Sets() map[string]Seeds { return map[string]Seeds{"train": s.Train, "test": s.Test} }

// SimSeedStride spaces a scenario's simulation seeds: its k-th
// simulation seed is its family seed + k·SimSeedStride (SimSeed). The
// family's draw (rate, round trip, load, steps) is the family seed's
// alone; the simulation seed is the file's `seed:` (the engine's ECN
// draws) and the web-search block's (its arrivals and sizes).
const SimSeedStride = 100_000

// SimSeed is the k-th simulation seed of the scenario of family seed
// seed: seed + k·SimSeedStride (k = 0: the family seed itself, the
// scenario Generate writes).
func SimSeed(seed int64, k int) int64 { return seed + int64(k)*SimSeedStride }

// Generate draws the scenario of seed (of set "train" or "test") and
// returns it as a scenario file's text and loaded. The same spec and seed
// always give the same file.
func (s *Spec) Generate(set string, seed int64) (Draw, []byte, *scenario.Scenario, error) {
	return s.GenerateAt(set, seed, 0)
}

// GenerateAt is Generate at the k-th simulation seed (SimSeed): the same
// draw and the same file but for its simulation seeds (k = 0: Generate's
// file, byte for byte).
func (s *Spec) GenerateAt(set string, seed int64, k int) (Draw, []byte, *scenario.Scenario, error) {
	if k < 0 {
		return Draw{}, nil, nil, fmt.Errorf("family %s: simulation seed index %d is negative", s.Name, k)
	}
	seeds, ok := s.Sets()[set]
	if !ok {
		return Draw{}, nil, nil, fmt.Errorf("family %s: no seed set %q (want train or test)", s.Name, set)
	}
	if seed < seeds.From || seed > seeds.To {
		return Draw{}, nil, nil, fmt.Errorf("family %s: seed %d is not in %s_seeds %d..%d", s.Name, seed, set, seeds.From, seeds.To)
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x6c68636e70))
	d := Draw{Seed: seed, Set: set}
	// Rates rounded to 0.1 Gbit/s, round trips to 10 µs: a readable file.
	d.Rate = scenario.Rate(math.Round(logUniform(r, float64(s.LinkRate.Min), float64(s.LinkRate.Max))/1e8) * 1e8)
	d.RTT = time.Duration(math.Round(logUniform(r, float64(s.WANRTT.Min), float64(s.WANRTT.Max))/1e4) * 1e4)
	d.Congestion = pick(r, s.Congestion)
	d.Overload = math.Round(logUniform(r, s.Overload.Min, s.Overload.Max)*100) / 100
	d.Step = pick(r, s.Steps)
	d.IP = pick(r, s.IP)
	if r.Float64() < s.WebSearch {
		d.WebSearch = math.Round(logUniform(r, s.WebSearchLoad.Min, s.WebSearchLoad.Max)*100) / 100
	}
	d.Duration = s.Duration(d.Rate, d.RTT)
	text := build(s.Name, s.RTTEst, s.RecoveryStepPercent, s.NodeParams, d, SimSeed(seed, k), r)
	sc, err := scenario.Parse(fmt.Sprintf("%s-%s-%d.yaml", s.Name, set, seed), text)
	if err != nil {
		return d, text, nil, fmt.Errorf("family %s seed %d (%s): the generated scenario does not load: %w", s.Name, seed, d.Short(), err)
	}
	return d, text, sc, nil
}

// Judgement is one judgement cycle of the closed-loop tuner on a queue
// whose RTT_est is rtt: the Set's delay (sim.DefaultSetDelay, the measured
// push) and the judge window of one RTT_est after it. A tuner that
// searches (one experiment per commit) gets one experiment per cycle.
func Judgement(rtt time.Duration) time.Duration { return sim.DefaultSetDelay + rtt }

// MTU is the RDMA MTU of a scenario whose bottleneck runs at rate: 4 KB
// at 25 Gbit/s and below, growing with the rate to 64 KB at 400 Gbit/s and
// above, so a run's packets per second stay bounded.
func MTU(rate scenario.Rate) int64 {
	return int64(4096 * math.Min(16, math.Max(1, math.Round(float64(rate)/25e9))))
}

// Duration is the length of a run at the bottleneck's rate and the WAN's
// round trip rtt: DurationRTT round trips, shortened to what MaxPackets
// packets of the MTU take at the rate (the per-run budget: a 40 ms round
// trip at 400 Gbit/s would otherwise simulate 8 s), but never under
// MinJudgements judgement cycles (Judgement) nor MinDuration; whole
// milliseconds.
func (s *Spec) Duration(rate scenario.Rate, rtt time.Duration) time.Duration {
	d := time.Duration(s.DurationRTT * float64(rtt))
	if s.MaxPackets > 0 && rate > 0 {
		d = min(d, time.Duration(float64(s.MaxPackets)*float64(8*MTU(rate))/float64(rate)*1e9))
	}
	d = max(d, time.Duration(s.MinJudgements)*Judgement(rtt), s.MinDuration)
	return d.Round(time.Millisecond)
}

// rate formats a rate in Mbit/s (exact for the drawn values).
func rate(r float64) string { return fmt.Sprintf("%dMbps", int64(math.Max(1, math.Round(r/1e6)))) }

func us(d time.Duration) string { return fmt.Sprintf("%dus", max(1, d.Microseconds())) }

// size formats bytes in KB (at least 64 KB).
func size(b float64) string { return fmt.Sprintf("%dKB", int64(math.Max(64, math.Ceil(b/1000)))) }

// build writes the scenario file of d. The topology (R the bottleneck's
// rate, RTT the WAN's round trip):
//
//	near-source:  s1..sN --H-- n1 ==R, RTT/2== n2 --F-- r1
//	mid-wan:      s1..sN --H-- n1 ==F, RTT/4== m1 ==R, RTT/4== n2 --F-- r1
//	far-end:      s1..sN --H-- n1 ==F, RTT/2== n2 --R-- r1
//	two:          s1..sN --H-- n1 ==F, RTT/4== m1 ==R, RTT/4== n2 --R·f-- r1 (f in 0.5..0.9: a second bottleneck in series)
//
// with N senders whose host links H = overload·R/N offer the overload,
// and F fast enough never to congest. Every switch is a Long-haul CNP
// node with the draft's defaults and RTT_est the WAN's round trip (with the family's rtt_est: port,
// each port's own link), then the family's node_params (none: nothing more); buffers hold four BDPs of the
// bottleneck. Load and RTT steps come half-way (Duration gives each half
// at least MinJudgements/2 judgement cycles); joins and leaves on slots
// an eighth of the run apart, from a quarter of it.
func build(family, rttEst string, recoveryPct int, nodeParams []NodeParam, d Draw, simSeed int64, r *rand.Rand) []byte {
	R := float64(d.Rate)
	n := 2 + r.IntN(7) // 2..8 senders
	late := 0          // senders starting (load-up) or stopping (load-down) half-way
	switch d.Step {
	case StepLoadUp, StepLoadDown:
		late = 1 + r.IntN(n-1)
	}
	// Per-sender rate: the full set offers the overload.
	h := d.Overload * R / float64(n)
	fast := 2 * (d.Overload*R + R) // never the bottleneck
	bdp := R / 8 * d.RTT.Seconds()
	buf := size(math.Max(4e6, 4*bdp))
	hostBuf := size(math.Max(4e6, bdp))
	half := d.Duration / 2
	mtu := MTU(d.Rate)
	sample := max(10*time.Microsecond, (d.RTT / 40).Truncate(time.Microsecond))

	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	v6 := d.IP == "v6"
	ip := func(net, host int) string {
		if v6 {
			return fmt.Sprintf("\"2001:db8:%x::%x\"", net, host)
		}
		return fmt.Sprintf("10.0.%d.%d", net, host)
	}
	name := fmt.Sprintf("%s-%s-%d", family, d.Set, d.Seed)
	p("# Generated by `lhcnp sim generate` from family %s, %s seed %d: do not edit.\n", family, d.Set, d.Seed)
	p("# %s\n", d.Short())
	p("name: %s\n", name)
	p("description: %q\n", d.Short())
	p("seed: %d\nduration: %dms\nsample_interval: %s\n\n", simSeed, d.Duration.Milliseconds(), us(sample))
	p("topology:\n  hosts:\n")
	for i := 1; i <= n; i++ {
		p("    - {name: s%d, ip: %s}\n", i, ip(10, i))
	}
	p("    - {name: r1, ip: %s}\n", ip(20, 1))
	web := d.WebSearch > 0
	const nWeb = 4
	if web {
		for i := 1; i <= nWeb; i++ {
			p("    - {name: w%d, ip: %s}\n", i, ip(11, i))
		}
		p("    - {name: r2, ip: %s}\n", ip(20, 2))
	}
	mid := d.Congestion == MidWAN || d.Congestion == Two
	p("  switches:\n    - {name: n1, ip: %s}\n", ip(1, 1))
	if mid {
		p("    - {name: m1, ip: %s}\n", ip(1, 3))
	}
	p("    - {name: n2, ip: %s}\n", ip(1, 2))
	p("  links:\n")
	for i := 1; i <= n; i++ {
		p("    - {a: s%d, b: n1, rate: %s, delay: 1us, buffer: %s}\n", i, rate(h), hostBuf)
	}
	webRate := 0.0
	if web {
		webRate = 2 * R
		for i := 1; i <= nWeb; i++ {
			p("    - {a: w%d, b: n1, rate: %s, delay: 1us, buffer: %s}\n", i, rate(webRate), hostBuf)
		}
	}
	oneWay := d.RTT / 2
	wanOneWay := oneWay // the one-way delay of the link named wan (the RTT step's target)
	var farRate float64
	switch d.Congestion {
	case NearSource:
		p("    - {name: wan, a: n1, b: n2, rate: %s, delay: %s, buffer: %s}\n", rate(R), us(oneWay), buf)
		farRate = fast
	case FarEnd:
		p("    - {name: wan, a: n1, b: n2, rate: %s, delay: %s, buffer: %s}\n", rate(fast), us(oneWay), buf)
		farRate = R
	case MidWAN, Two:
		p("    - {name: wan1, a: n1, b: m1, rate: %s, delay: %s, buffer: %s}\n", rate(fast), us(oneWay/2), buf)
		wanOneWay = oneWay - oneWay/2
		p("    - {name: wan, a: m1, b: n2, rate: %s, delay: %s, buffer: %s}\n", rate(R), us(wanOneWay), buf)
		farRate = fast
		if d.Congestion == Two {
			farRate = R * (0.5 + 0.4*r.Float64())
		}
	}
	p("    - {a: n2, b: r1, rate: %s, delay: 1us, buffer: %s}\n", rate(farRate), buf)
	if web {
		p("    - {a: n2, b: r2, rate: %s, delay: 1us, buffer: %s}\n", rate(fast), buf)
	}
	p("\nqueue:\n  ecn: {enabled: true, k_min: 100KB, k_max: 400KB, p_max: 0.2}\n  pfc: {enabled: false}\n\n")
	p("nic: {mtu: %dB}\n\n", mtu)
	format := "rocev2"
	if v6 && r.IntN(2) == 0 {
		format = "icmpv6"
	}
	nodes := "n1, n2"
	if mid {
		nodes = "n1, m1, n2"
	}
	// RTT_est: the WAN's round trip on every node's ports (configured, as
	// an operator would: derived from a DC-side link it would be 2 µs), or
	// with the family's rtt_est: port each port's own link (0).
	est := us(d.RTT)
	if rttEst == RTTEstPort {
		est = "0"
	}
	p("mechanism:\n  kind: long-haul-cnp\n  nodes: [%s]\n  params:\n    k_base: 64KB\n    rtt_est: %s\n    format: %s\n", nodes, est, format)
	if recoveryPct > 0 {
		p("    recovery_step_percent: %d\n", recoveryPct)
	}
	for _, np := range nodeParams {
		p("    %s: %s\n", np.Key, np.Value)
	}
	p("\n")
	p("traffic:\n  flows:\n")
	start := func(i int) time.Duration { // staggered by a tenth of a round trip
		return time.Millisecond/10 + time.Duration(i-1)*d.RTT/10/time.Duration(n)
	}
	for i := 1; i <= n; i++ {
		st, stop := start(i), time.Duration(0)
		switch {
		case d.Step == StepLoadUp && i > n-late:
			st = half + time.Duration(i-1)*time.Microsecond
		case d.Step == StepLoadDown && i > n-late:
			stop = half + time.Duration(i-1)*time.Microsecond
		case d.Step == StepJoinLeave && i > 1:
			// Joins and leaves on slots an eighth of the run apart
			// (at least 5 judgement cycles), none in the first quarter
			// (the tuner has had 10 judgements first): a join at 1/4,
			// 3/8, 1/2 or 5/8 of the run, half of them leaving 1-3
			// slots later.
			slot := d.Duration / 8
			st = 2*slot + time.Duration(r.IntN(4))*slot + time.Duration(i-1)*time.Microsecond
			if r.IntN(2) == 0 {
				stop = st + time.Duration(1+r.IntN(3))*slot
			}
		}
		p("    - {name: f%d, src: s%d, dst: r1, src_qp: %d, dst_qp: %d, start: %s", i, i, 100+i, 200+i, us(st))
		if stop > 0 && stop < d.Duration {
			p(", stop: %s", us(stop))
		}
		p("}\n")
	}
	if web {
		// Per sender of its link: nWeb · webRate · load = share · R.
		load := d.WebSearch * R / (nWeb * webRate)
		p("  generated:\n    - name: web\n      senders: [w1, w2, w3, w4]\n      receivers: [r1, r2]\n")
		p("      load: %.4f\n      cdf: %s\n      seed: %d\n      start: 0s\n      max_flows: 200000\n", load, webSearchCDF, simSeed)
	}
	if d.Step == StepRTT {
		f := 2.0
		if r.IntN(2) == 0 {
			f = 0.5
		}
		p("\nevents:\n  - {at: %s, kind: rtt, target: wan, value: %s}\n", us(half), us(2*time.Duration(f*float64(wanOneWay))))
	}
	return []byte(b.String())
}
