package family

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lhcnp/lhcnp/dataplane-sim/scenario"
	"github.com/lhcnp/lhcnp/internal/yamlsyntax"
)

// Congestion points a family draws from.
const (
	NearSource = "near-source" // the first node's WAN egress: the senders' aggregate into the WAN
	MidWAN     = "mid-wan"     // a node in the middle of the WAN
	FarEnd     = "far-end"     // the far node's egress towards the receiver (a DC-side port)
	Two        = "two"         // mid-WAN and far end at once, in series
)

// Steps a family draws from.
const (
	StepNone      = "none"       // the same load throughout
	StepLoadUp    = "load-up"    // more senders start half-way
	StepLoadDown  = "load-down"  // some senders stop half-way
	StepRTT       = "rtt"        // the WAN's round trip doubles or halves half-way
	StepJoinLeave = "join-leave" // senders join and leave at random times
)

var (
	congestions = []string{NearSource, MidWAN, FarEnd, Two}
	steps       = []string{StepNone, StepLoadUp, StepLoadDown, StepRTT, StepJoinLeave}
	ipVersions  = []string{"v4", "v6"}
)

// The documented limits of a family's ranges: what the generator can
// build (a spec outside them is refused).
const (
	minRate, maxRate         = 1 * scenario.Gbps, 1600 * scenario.Gbps
	minRTT, maxRTT           = 100 * time.Microsecond, 200 * time.Millisecond
	minOverload, maxOverload = 1.0, 16.0
)

// MaxSimSeeds bounds sim_seeds: every simulation seed is a whole
// evaluation's runs again (the static grid too), and the standard error
// falls as 1/√N, so twenty already measures four and a half times finer
// than one at twenty times its cost.
const MaxSimSeeds = 20

// MaxSeed bounds a family seed: its simulation seeds, up to
// (MaxSimSeeds-1)·SimSeedStride above it, are the generated scenarios'
// seeds, which the scenario loader takes up to 2^62.
const MaxSeed = 1 << 60

// Range is a closed interval [Min, Max], drawn log-uniformly.
type Range[T ~int64 | ~float64] struct{ Min, Max T }

// Seeds is a closed interval of seeds [From, To].
type Seeds struct{ From, To int64 }

// List is the seeds in order.
func (s Seeds) List() []int64 {
	var out []int64
	for i := s.From; i <= s.To; i++ {
		out = append(out, i)
	}
	return out
}

// Spec is a family: the ranges its scenarios are drawn from and its two
// seed sets.
type Spec struct {
	File string
	Name string
	// LinkRate is the bottleneck's rate; WANRTT the WAN's round trip.
	LinkRate Range[scenario.Rate]
	WANRTT   Range[time.Duration]
	// Overload is the offered load over the bottleneck's rate.
	Overload   Range[float64]
	Congestion []string
	Steps      []string
	IP         []string
	// WebSearch is the share of scenarios with web-search background
	// traffic (at WebSearchLoad of the bottleneck's rate).
	WebSearch     float64
	WebSearchLoad Range[float64]
	// DurationRTT is each run's length in WAN round trips, shortened to
	// MaxPackets packets of the bottleneck's MTU at its rate, but never
	// under MinJudgements judgement cycles (Judgement) nor MinDuration
	// (Duration).
	DurationRTT   float64
	MinDuration   time.Duration
	MinJudgements int
	MaxPackets    int64
	Train, Test   Seeds
	// SimSeeds is how many simulation seeds every run of an evaluation
	// is repeated at (SimSeed k = 0..SimSeeds-1; J per setting their
	// mean): 1 unless the spec's sim_seeds says more.
	SimSeeds int
	// Retired are the seed sets whose results were seen (held-out sets
	// used up, oldest first): never a test seed again (none: empty).
	Retired []Seeds
	// RTTEst is how the scenarios configure the nodes' RTT_est (the
	// spec's rtt_est): RTTEstWAN (the default, the spec without the key)
	// the WAN's round trip on every port, RTTEstPort each port's own link
	// (the scenario's rtt_est 0: 2 µs at a port next to a host), as
	// docs/results.md's scenarios do.
	RTTEst string
	// RecoveryStepPercent is the sources' additive recovery step as a
	// share of each QP's normal rate (the spec's recovery_step_percent,
	// the scenarios' param of the same name; 1..100). 0, the spec
	// without the key, leaves the scenarios' default, an absolute
	// 1 Gbit/s per tick: 29 % of a 3.5 Gbit/s sender's line rate and
	// 0.16 % of a 641 Gbit/s one's (docs/tuner.md, "A scale-free
	// recovery").
	RecoveryStepPercent int
	// NodeParams are long-haul-cnp params every generated scenario's
	// mechanism.params carries after the ones the generator writes (the
	// spec's node_params, in its order; none: the files are those of a
	// spec without the key, byte for byte): the node's options of issue
	// #27, say, for a family read with them on.
	NodeParams []NodeParam
}

// NodeParam is one key of the spec's node_params: a long-haul-cnp param
// and its value as the scenario file writes it.
type NodeParam struct {
	Key, Value string
	line, col  int // in the family file, for the loader's errors
}

// generatorParams are the long-haul-cnp params the generator writes
// itself (build): node_params may not set them again.
var generatorParams = map[string]string{
	"k_base":                "64 KB in every generated file",
	"rtt_est":               "the family's rtt_est key",
	"format":                "drawn per scenario from the family's ip",
	"recovery_step_percent": "the family's recovery_step_percent key",
}

// paramName is a param name a scenario file's params block can hold
// as written: node_params refuses any other key before the loader sees it.
var paramName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// How a family's scenarios configure RTT_est (the spec's rtt_est).
const (
	// RTTEstWAN configures the WAN's round trip on every node's ports,
	// as an operator would: the default, what every family written
	// before the key had.
	RTTEstWAN = "wan"
	// RTTEstPort leaves RTT_est to each port's own link (twice its
	// one-way delay): a port next to the receivers has a 2 µs RTT_est
	// while its flows' round trip is the WAN's, so the rules that act
	// where RTT_est is under half the flows' round trip (shareResume)
	// can fire (docs/longhaul.md, session 12).
	RTTEstPort = "port"
)

var rttEsts = []string{RTTEstWAN, RTTEstPort}

// Error is a bad family spec: the file, the line and column, and the key
// (none for a YAML syntax error), as the scenario loader's errors
// ("file:line:col: key: msg").
type Error struct {
	File      string
	Line, Col int // 1-based; 0 when the mistake is not tied to a place
	Key       string
	Msg       string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// LoadFile reads and checks a family spec.
func LoadFile(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

type parser struct {
	file string
	errs []error
}

func (p *parser) bad(n *yaml.Node, key, format string, args ...any) {
	e := &Error{File: p.file, Key: key, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Col = n.Line, n.Column
	}
	p.errs = append(p.errs, e)
}

// mapping returns the keys of a mapping node, refusing unknown ones.
func (p *parser) mapping(n *yaml.Node, path string, allowed ...string) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	if n == nil || n.Kind != yaml.MappingNode {
		p.bad(n, cmp.Or(path, "(document)"), "want a mapping")
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		if path != "" {
			key = path + "." + k.Value
		}
		if !slices.Contains(allowed, k.Value) {
			p.bad(k, key, "unknown key (want one of %s)", strings.Join(allowed, ", "))
			continue
		}
		if _, dup := out[k.Value]; dup {
			p.bad(k, key, "given twice")
			continue
		}
		out[k.Value] = v
	}
	return out
}

func (p *parser) scalar(n *yaml.Node, key string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		p.bad(n, key, "want a scalar")
		return "", false
	}
	return n.Value, true
}

// float and integer take a plain YAML number: a quoted "0.3" is a string,
// as the scenario loader has it, not a number that happens to parse.
func (p *parser) float(n *yaml.Node, key string) (float64, bool) {
	s, ok := p.scalar(n, key)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || n.Tag != "!!float" && n.Tag != "!!int" || math.IsNaN(v) || math.IsInf(v, 0) {
		p.bad(n, key, "%q is not a finite number", s)
		return 0, false
	}
	return v, true
}

func (p *parser) integer(n *yaml.Node, key string) (int64, bool) {
	s, ok := p.scalar(n, key)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n.Tag != "!!int" {
		p.bad(n, key, "%q is not an integer", s)
		return 0, false
	}
	return v, true
}

// rng reads {min, max} with parse, both within [lo, hi], min ≤ max.
func rng[T ~int64 | ~float64](p *parser, n *yaml.Node, key string, parse func(*yaml.Node, string) (T, bool), lo, hi T, show func(T) string) Range[T] {
	m := p.mapping(n, key, "min", "max")
	var r Range[T]
	var ok [2]bool
	for i, k := range []string{"min", "max"} {
		v, has := m[k]
		if !has {
			if n != nil && n.Kind == yaml.MappingNode {
				p.bad(n, key+"."+k, "missing")
			}
			continue
		}
		x, good := parse(v, key+"."+k)
		if !good {
			continue
		}
		if x < lo || x > hi {
			p.bad(v, key+"."+k, "%s is outside what the generator builds, %s..%s", show(x), show(lo), show(hi))
			continue
		}
		if i == 0 {
			r.Min = x
		} else {
			r.Max = x
		}
		ok[i] = true
	}
	if ok[0] && ok[1] && r.Min > r.Max {
		p.bad(m["min"], key, "impossible range: min %s is above max %s", show(r.Min), show(r.Max))
	}
	return r
}

func (p *parser) choices(n *yaml.Node, key string, allowed []string) []string {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		p.bad(n, key, "want a non-empty list of %s", strings.Join(allowed, ", "))
		return nil
	}
	var out []string
	for i, c := range n.Content {
		s, ok := p.scalar(c, fmt.Sprintf("%s[%d]", key, i))
		if !ok {
			continue
		}
		if !slices.Contains(allowed, s) {
			p.bad(c, fmt.Sprintf("%s[%d]", key, i), "%q is not one of %s", s, strings.Join(allowed, ", "))
			continue
		}
		if slices.Contains(out, s) {
			p.bad(c, fmt.Sprintf("%s[%d]", key, i), "%q listed twice", s)
			continue
		}
		out = append(out, s)
	}
	return out
}

// retiredSeeds reads retired_seeds: one {from, to} set, or a list of them
// (every held-out set used up, oldest first), none overlapping another.
func (p *parser) retiredSeeds(n *yaml.Node) []Seeds {
	if n.Kind != yaml.SequenceNode {
		return []Seeds{p.seeds(n, "retired_seeds")}
	}
	if len(n.Content) == 0 {
		p.bad(n, "retired_seeds", "want {from, to} or a non-empty list of them")
		return nil
	}
	var out []Seeds
	for i, c := range n.Content {
		key := fmt.Sprintf("retired_seeds[%d]", i)
		before := len(p.errs)
		r := p.seeds(c, key)
		if len(p.errs) > before {
			continue
		}
		for j, o := range out {
			if r.From <= o.To && o.From <= r.To {
				p.bad(c, key, "%d..%d overlaps retired_seeds[%d] %d..%d (at %d): each seed is retired once",
					r.From, r.To, j, o.From, o.To, max(r.From, o.From))
			}
		}
		out = append(out, r)
	}
	return out
}

func (p *parser) seeds(n *yaml.Node, key string) Seeds {
	m := p.mapping(n, key, "from", "to")
	var s Seeds
	var ok [2]bool
	for i, k := range []string{"from", "to"} {
		v, has := m[k]
		if !has {
			if n != nil && n.Kind == yaml.MappingNode {
				p.bad(n, key+"."+k, "missing")
			}
			continue
		}
		x, good := p.integer(v, key+"."+k)
		if !good {
			continue
		}
		if x < 0 {
			p.bad(v, key+"."+k, "%d is negative", x)
			continue
		}
		if x > MaxSeed {
			p.bad(v, key+"."+k, "%d is above %d: every simulation seed of a family seed (SimSeed) must stay a scenario's seed", x, int64(MaxSeed))
			continue
		}
		if i == 0 {
			s.From = x
		} else {
			s.To = x
		}
		ok[i] = true
	}
	switch {
	case ok[0] && ok[1] && s.From > s.To:
		p.bad(m["from"], key, "impossible range: from %d is above to %d", s.From, s.To)
	case ok[0] && ok[1] && s.To-s.From >= 100_000:
		p.bad(m["to"], key, "%d seeds: at most 100000", s.To-s.From+1)
	}
	return s
}

func showRate(r scenario.Rate) string { return r.String() }
func showDur(d time.Duration) string  { return d.String() }
func showFloat(f float64) string      { return strconv.FormatFloat(f, 'g', -1, 64) }

// unit reads a scalar with one of the scenario files' unit parsers
// (scenario.ParseRate, ParseDuration).
func unit[T any](p *parser, parse func(string) (T, error)) func(*yaml.Node, string) (T, bool) {
	return func(n *yaml.Node, key string) (T, bool) {
		var zero T
		s, ok := p.scalar(n, key)
		if !ok {
			return zero, false
		}
		v, err := parse(s)
		if err != nil {
			p.bad(n, key, "%v", err)
			return zero, false
		}
		return v, true
	}
}

// Parse reads a family spec; file names it in errors. Every error names
// the file, the line and the key: an unknown or missing key, a value
// outside what the generator builds, an impossible range (min above max),
// seed sets that overlap, and node_params the scenario loader refuses.
func Parse(file string, data []byte) (*Spec, error) {
	p := &parser{file: file}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line, col, reason := yamlsyntax.Locate(data, err.Error())
		return nil, &Error{File: file, Line: line, Col: col, Msg: reason}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, &Error{File: file, Key: "(document)", Msg: "empty"}
	}
	keys := []string{"name", "link_rate", "wan_rtt", "overload", "congestion", "steps", "ip", "web_search",
		"web_search_load", "duration_rtt", "min_duration", "min_judgements", "max_packets", "train_seeds", "test_seeds"}
	m := p.mapping(doc.Content[0], "", append(keys, "retired_seeds", "sim_seeds", "rtt_est", "recovery_step_percent", "node_params")...)
	s := &Spec{File: file, SimSeeds: 1, RTTEst: RTTEstWAN}
	for _, k := range keys {
		if _, ok := m[k]; !ok && doc.Content[0].Kind == yaml.MappingNode {
			p.bad(doc.Content[0], k, "missing")
		}
	}
	if n, ok := m["name"]; ok {
		if v, good := p.scalar(n, "name"); good {
			if v == "" || strings.ContainsAny(v, "/\\ ") {
				p.bad(n, "name", "%q: want a non-empty name without spaces or slashes", v)
			}
			s.Name = v
		}
	}
	if n, ok := m["link_rate"]; ok {
		s.LinkRate = rng(p, n, "link_rate", unit(p, scenario.ParseRate), minRate, maxRate, showRate)
	}
	if n, ok := m["wan_rtt"]; ok {
		s.WANRTT = rng(p, n, "wan_rtt", unit(p, scenario.ParseDuration), minRTT, maxRTT, showDur)
	}
	if n, ok := m["overload"]; ok {
		s.Overload = rng(p, n, "overload", p.float, minOverload, maxOverload, showFloat)
	}
	if n, ok := m["web_search_load"]; ok {
		s.WebSearchLoad = rng(p, n, "web_search_load", p.float, 0.01, 0.9, showFloat)
	}
	if n, ok := m["congestion"]; ok {
		s.Congestion = p.choices(n, "congestion", congestions)
	}
	if n, ok := m["steps"]; ok {
		s.Steps = p.choices(n, "steps", steps)
	}
	if n, ok := m["ip"]; ok {
		s.IP = p.choices(n, "ip", ipVersions)
	}
	if n, ok := m["web_search"]; ok {
		if v, good := p.float(n, "web_search"); good {
			if v < 0 || v > 1 {
				p.bad(n, "web_search", "%v is not a share in [0, 1]", v)
			}
			s.WebSearch = v
		}
	}
	if n, ok := m["duration_rtt"]; ok {
		if v, good := p.float(n, "duration_rtt"); good {
			if v < 10 || v > 10_000 {
				p.bad(n, "duration_rtt", "%v is outside 10..10000 round trips", v)
			}
			s.DurationRTT = v
		}
	}
	if n, ok := m["min_duration"]; ok {
		if v, good := unit(p, scenario.ParseDuration)(n, "min_duration"); good {
			if v <= 0 || v > 10*time.Second {
				p.bad(n, "min_duration", "%v is outside (0, 10s]", v)
			}
			s.MinDuration = v
		}
	}
	if n, ok := m["min_judgements"]; ok {
		if v, good := p.integer(n, "min_judgements"); good {
			if v < 1 || v > 10_000 {
				p.bad(n, "min_judgements", "%d is outside 1..10000 judgement cycles", v)
			}
			s.MinJudgements = int(v)
		}
	}
	if n, ok := m["max_packets"]; ok {
		if v, good := p.integer(n, "max_packets"); good {
			if v < 10_000 || v > 1_000_000_000 {
				p.bad(n, "max_packets", "%d is outside 10000..1000000000 packets", v)
			}
			s.MaxPackets = v
		}
	}
	if n, ok := m["recovery_step_percent"]; ok {
		if v, good := p.integer(n, "recovery_step_percent"); good {
			if v < 1 || v > 100 {
				p.bad(n, "recovery_step_percent", "%d is outside 1..100 (a share of each QP's normal rate, in %%)", v)
			}
			s.RecoveryStepPercent = int(v)
		}
	}
	if n, ok := m["sim_seeds"]; ok {
		if v, good := p.integer(n, "sim_seeds"); good {
			if v < 1 || v > MaxSimSeeds {
				p.bad(n, "sim_seeds", "%d is outside 1..%d simulation seeds per run", v, MaxSimSeeds)
			}
			s.SimSeeds = int(v)
		}
	}
	if n, ok := m["rtt_est"]; ok {
		if v, good := p.scalar(n, "rtt_est"); good {
			if !slices.Contains(rttEsts, v) {
				p.bad(n, "rtt_est", "%q is not one of %s", v, strings.Join(rttEsts, ", "))
			}
			s.RTTEst = v
		}
	}
	if n, ok := m["train_seeds"]; ok {
		s.Train = p.seeds(n, "train_seeds")
	}
	if n, ok := m["retired_seeds"]; ok {
		s.Retired = p.retiredSeeds(n)
	}
	if n, ok := m["test_seeds"]; ok {
		s.Test = p.seeds(n, "test_seeds")
		overlaps := func(o Seeds) bool { return s.Test.From <= o.To && o.From <= s.Test.To }
		if len(p.errs) == 0 && overlaps(s.Train) {
			p.bad(n, "test_seeds", "%d..%d overlaps train_seeds %d..%d (at %d): a held-out seed must never be a training seed",
				s.Test.From, s.Test.To, s.Train.From, s.Train.To, max(s.Test.From, s.Train.From))
		}
		for _, r := range s.Retired {
			if len(p.errs) == 0 && overlaps(r) {
				p.bad(n, "test_seeds", "%d..%d overlaps retired_seeds %d..%d (at %d): a retired set's results were seen, it is held out no more",
					s.Test.From, s.Test.To, r.From, r.To, max(s.Test.From, r.From))
			}
		}
	}
	if n, ok := m["node_params"]; ok {
		s.NodeParams = p.nodeParams(n)
		if len(p.errs) == 0 {
			p.checkNodeParams(s, n)
		}
	}
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return s, nil
}

// nodeParams reads node_params: a mapping of long-haul-cnp param names to
// scalars, none of them a param the generator writes itself.
func (p *parser) nodeParams(n *yaml.Node) []NodeParam {
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		p.bad(n, "node_params", "want a non-empty mapping of long-haul-cnp params (docs/scenarios.md)")
		return nil
	}
	var out []NodeParam
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := "node_params." + k.Value
		switch {
		case k.Kind != yaml.ScalarNode || !paramName.MatchString(k.Value):
			p.bad(k, "node_params", "%q is not a param name (lower case, digits and underscores)", k.Value)
			continue
		case generatorParams[k.Value] != "":
			p.bad(k, key, "the generator writes %s itself (%s): node_params may not set it", k.Value, generatorParams[k.Value])
			continue
		case slices.ContainsFunc(out, func(o NodeParam) bool { return o.Key == k.Value }):
			p.bad(k, key, "given twice")
			continue
		case v.Kind != yaml.ScalarNode || v.Value == "":
			p.bad(v, key, "want a scalar (a bool, a number, a size, a rate or a duration)")
			continue
		}
		val := v.Value
		if v.Style != 0 && v.Style != yaml.TaggedStyle || v.Style == yaml.TaggedStyle && v.Tag == "!!str" {
			val = strconv.Quote(val) // a quoted value, or one tagged a string, stays one string
		}
		out = append(out, NodeParam{Key: k.Value, Value: val, line: k.Line, col: k.Column})
	}
	return out
}

// checkNodeParams loads the first train seed's scenario with the spec's
// node_params: the scenario loader's own checks of long-haul-cnp params
// (unknown keys, bad values, keys that need others), each reported at the
// family file's line of the key it names.
func (p *parser) checkNodeParams(s *Spec, n *yaml.Node) {
	_, _, _, err := s.Generate("train", s.Train.From)
	if err == nil {
		return
	}
	errs := scenario.Errors(err)
	if len(errs) == 0 {
		p.bad(n, "node_params", "%v", err)
		return
	}
	for _, e := range errs {
		key, _ := strings.CutPrefix(e.Field, "mechanism.params.")
		i := slices.IndexFunc(s.NodeParams, func(np NodeParam) bool { return np.Key == key })
		if i < 0 {
			p.bad(n, "node_params", "the generated scenarios do not load: %v", e)
			continue
		}
		p.errs = append(p.errs, &Error{File: p.file, Line: s.NodeParams[i].line, Col: s.NodeParams[i].col, Key: "node_params." + key, Msg: e.Reason})
	}
	s.NodeParams = nil
}
