package scenario

import (
	"fmt"
	"math"
	"math/rand/v2"
	slashpath "path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// maxQP is the largest 24-bit queue pair number.
const maxQP = 1<<24 - 1

// defaultMaxFlows bounds CDF traffic unless the block raises it: a load or
// a duration off by a factor of 1000 should fail, not fill the memory.
const defaultMaxFlows = 100000

func (l *loader) traffic(n *yaml.Node) {
	d := l.d
	if n == nil {
		return
	}
	o := d.object(n, "traffic", "flows", "incasts", "generated")
	if o == nil {
		return
	}
	for i, fn := range d.list(o.get("flows"), "traffic.flows") {
		l.flow(fn, index("traffic.flows", i))
	}
	groups := map[string]*yaml.Node{}
	group := func(obj *object) (string, bool) {
		nn := obj.must("name")
		name, ok := d.name(nn, obj.field("name"))
		if !ok {
			return "", false
		}
		if prev, dup := groups[name]; dup {
			d.errAt(nn, obj.field("name"), "duplicate traffic block name %q (first at line %d)", name, prev.Line)
			return "", false
		}
		groups[name] = nn
		return name, true
	}
	for i, in := range d.list(o.get("incasts"), "traffic.incasts") {
		path := index("traffic.incasts", i)
		io := d.object(in, path, "name", "senders", "receiver", "size", "start", "rate")
		if io == nil {
			continue
		}
		name, okName := group(io)
		recv, okR := l.nodeRef(io.must("receiver"), io.field("receiver"), kindHost)
		senders, okS := l.hostList(io.must("senders"), io.field("senders"))
		size, okSize := d.positiveSize(io.must("size"), io.field("size"))
		var start time.Duration
		okStart := true
		if sn := io.get("start"); sn != nil {
			start, okStart = l.startTime(sn, io.field("start"))
		}
		var rate Rate
		io.setRate("rate", &rate, true)
		if !okName || !okR || !okS || !okSize || !okStart {
			continue
		}
		for _, s := range senders {
			if !l.withinLineRate(s, rate, io.get("rate"), io.field("rate")) {
				break // one error for the block
			}
		}
		for j, s := range senders {
			if s == recv {
				d.errAt(io.get("senders").Content[j], index(io.field("senders"), j), "%s is also the receiver", s)
				continue
			}
			l.addFlow(Flow{Name: name + "/" + s, Src: s, Dst: recv, Start: start, Size: size, Rate: rate, Group: name},
				io.node, io.field("name"))
		}
	}
	for i, gn := range d.list(o.get("generated"), "traffic.generated") {
		path := index("traffic.generated", i)
		g := d.object(gn, path, "name", "senders", "receivers", "load", "cdf_file", "cdf", "seed", "start", "stop", "max_flows",
			"pattern", "load_of", "fan_in")
		if g == nil {
			continue
		}
		name, okName := group(g)
		l.generated(g, name, okName, int64(i))
	}
}

func (l *loader) hostList(n *yaml.Node, field string) ([]string, bool) {
	if n == nil {
		return nil, false
	}
	items := l.d.list(n, field)
	if n.Kind == yaml.SequenceNode && len(items) == 0 {
		l.d.errAt(n, field, "empty list")
		return nil, false
	}
	ok := n.Kind == yaml.SequenceNode
	seen := map[string]bool{}
	var out []string
	for j, x := range items {
		f := index(field, j)
		names, good := l.groupRef(x, f, kindHost)
		if !good {
			ok = false
			continue
		}
		for _, h := range names {
			if seen[h] {
				l.d.errAt(x, f, "%s is listed twice", h)
				ok = false
				continue
			}
			seen[h] = true
			out = append(out, h)
		}
	}
	return out, ok
}

func (l *loader) startTime(n *yaml.Node, field string) (time.Duration, bool) {
	v, ok := l.d.duration(n, field)
	if !ok {
		return 0, false
	}
	if l.sc.Duration > 0 && v >= l.sc.Duration {
		l.d.errAt(n, field, "starts at %v, not before the end of the run (%v)", v, l.sc.Duration)
		return 0, false
	}
	return v, true
}

func (l *loader) flow(n *yaml.Node, path string) {
	d := l.d
	o := d.object(n, path, "name", "src", "dst", "src_qp", "dst_qp", "start", "stop", "size", "rate")
	if o == nil {
		return
	}
	var f Flow
	ok := true
	var good bool
	if f.Name, good = d.name(o.must("name"), o.field("name")); !good {
		ok = false
	}
	if f.Src, good = l.nodeRef(o.must("src"), o.field("src"), kindHost); !good {
		ok = false
	}
	if f.Dst, good = l.nodeRef(o.must("dst"), o.field("dst"), kindHost); !good {
		ok = false
	}
	if ok && f.Src == f.Dst {
		d.errAt(o.get("dst"), o.field("dst"), "flow from %s to itself", f.Src)
		ok = false
	}
	if sn := o.get("start"); sn != nil {
		if f.Start, good = l.startTime(sn, o.field("start")); !good {
			ok = false
		}
	}
	if sn := o.get("stop"); sn != nil {
		if f.Stop, good = d.positiveDuration(sn, o.field("stop")); !good {
			ok = false
		} else if f.Stop <= f.Start {
			d.errAt(sn, o.field("stop"), "stop (%v) must be after start (%v)", f.Stop, f.Start)
			ok = false
		}
	}
	o.setSize("size", &f.Size, true)
	o.setRate("rate", &f.Rate, true)
	qp := func(key string, dst *uint32) {
		if qn := o.get(key); qn != nil {
			if v, good := d.integer(qn, o.field(key), 1, maxQP); good {
				*dst = uint32(v)
				l.qpPos = append(l.qpPos, qpRef{qn, o.field(key)})
			} else {
				ok = false
			}
		}
	}
	qp("src_qp", &f.SrcQP)
	qp("dst_qp", &f.DstQP)
	if !ok {
		// The flow is refused, but its name is the file's: an event or a
		// later flow naming it is not "undefined" because of this error
		// (as a fabric that cannot be built is reported once).
		if _, named := l.flowSet[f.Name]; f.Name != "" && !named {
			l.flowSet[f.Name] = o.get("name")
		}
		return
	}
	l.withinLineRate(f.Src, f.Rate, o.get("rate"), o.field("rate"))
	l.addFlow(f, o.get("name"), o.field("name"))
}

// lineRate is the rate of host h's NIC port, its one link (0 when it has
// none: the topology's error).
func (l *loader) lineRate(h string) (Rate, string) {
	if lk := l.hostLnk[h]; len(lk) > 0 {
		return l.sc.Links[lk[0]].Rate, l.sc.Links[lk[0]].Name
	}
	return 0, ""
}

// withinLineRate reports whether a flow's rate (0: none, the line rate)
// from host src is within its NIC's line rate, and reports it at n (the
// rate's node) when it is not: the sender never sends faster than its
// port, so a cap above it would be a number that means nothing.
func (l *loader) withinLineRate(src string, rate Rate, n *yaml.Node, field string) bool {
	line, link := l.lineRate(src)
	if rate == 0 || line == 0 || rate <= line {
		return true
	}
	l.d.errAt(n, field, "%v is above the line rate of %s's NIC (link %s: %v)", rate, src, link, line)
	return false
}

// addFlow records a flow, rejecting a name already taken. at and field
// say where to report a clash.
func (l *loader) addFlow(f Flow, at *yaml.Node, field string) {
	if prev, dup := l.flowSet[f.Name]; dup {
		l.d.errAt(at, field, "duplicate flow name %q (first at line %d)", f.Name, prev.Line)
		return
	}
	l.flowSet[f.Name] = at
	l.sc.Flows = append(l.sc.Flows, f)
	l.flowPos = append(l.flowPos, qpRef{at, field})
}

func (l *loader) generated(g *object, name string, ok bool, idx int64) {
	d := l.d
	senders, good := l.hostList(g.must("senders"), g.field("senders"))
	ok = ok && good
	receivers, good := l.hostList(g.must("receivers"), g.field("receivers"))
	ok = ok && good
	// (0, 1]: a zero load is its own mistake, and above 1 the message
	// names the range the load has, not the decoder's [0, 1].
	load, good := d.float(g.must("load"), g.field("load"), 0, math.Inf(1))
	ok = ok && good
	if good && load == 0 {
		d.errAt(g.get("load"), g.field("load"), "must be greater than zero")
		ok = false
	} else if good && load > 1 {
		d.errAt(g.get("load"), g.field("load"), "%s is out of range (0, 1]: the offered load is a fraction of the link rate", g.get("load").Value)
		ok = false
	}
	seed := l.sc.Seed*1000003 + idx
	if sn := g.get("seed"); sn != nil {
		v, good := d.integer(sn, g.field("seed"), 0, MaxSeed)
		ok = ok && good
		seed = v
	}
	start, stop := time.Duration(0), l.sc.Duration
	if sn := g.get("start"); sn != nil {
		v, good := l.startTime(sn, g.field("start"))
		ok = ok && good
		start = v
	}
	if sn := g.get("stop"); sn != nil {
		v, good := d.positiveDuration(sn, g.field("stop"))
		if good && v <= start {
			d.errAt(sn, g.field("stop"), "stop (%v) must be after start (%v)", v, start)
			good = false
		}
		ok = ok && good
		stop = v
	}
	maxFlows := defaultMaxFlows
	g.setInt("max_flows", &maxFlows, 1, 1<<31)

	var cdf *CDF
	fileN, inlineN := g.get("cdf_file"), g.get("cdf")
	switch {
	case fileN != nil && inlineN != nil:
		d.errAt(inlineN, g.field("cdf"), "give cdf_file or cdf, not both")
		ok = false
	case fileN != nil:
		if p, good := d.scalar(fileN, g.field("cdf_file")); good {
			cdf = l.cdfFile(fileN, g.field("cdf_file"), p)
		}
	case inlineN != nil:
		cdf = l.cdfInline(inlineN, g.field("cdf"))
	default:
		d.errAt(g.node, g.field("cdf_file"), "missing required field: cdf_file or cdf")
	}
	if cdf == nil || !ok || len(receivers) == 0 || len(senders) == 0 {
		return
	}
	incast := false
	if pn := g.get("pattern"); pn != nil && pn.Kind == yaml.ScalarNode {
		incast = Pattern(pn.Value) == PatternIncast
	}
	if !incast && len(receivers) == 1 && contains(senders, receivers[0]) {
		d.errAt(g.get("receivers"), g.field("receivers"), "%s is the only receiver and also a sender: it would have no one to send to", receivers[0])
		return
	}
	gp := genParams{
		group: name, senders: senders, receivers: receivers, load: load, cdf: cdf,
		seed: seed, start: start, stop: stop, limit: maxFlows,
		rate: func(h string) Rate {
			r, _ := l.lineRate(h)
			return r
		},
	}
	if !l.pattern(g, &gp) {
		return
	}
	flows := generate(gp)
	if len(flows) > maxFlows {
		d.errAt(g.node, g.field("max_flows"), "would generate more than %d flows; raise max_flows or lower the load or the time span", maxFlows)
		return
	}
	for _, f := range flows {
		l.addFlow(f, g.get("name"), g.field("name"))
	}
}

// CDF is a flow-size distribution: cumulative probability P[i] for size
// Size[i], linear between points (the ns-3/HPCC traffic generator's
// convention).
type CDF struct {
	Size []float64 // bytes, non-decreasing
	P    []float64 // in [0, 1], non-decreasing, last is 1
}

// Mean is the mean flow size under linear interpolation.
func (c *CDF) Mean() float64 {
	var m float64
	for i := 1; i < len(c.P); i++ {
		m += (c.P[i] - c.P[i-1]) * (c.Size[i] + c.Size[i-1]) / 2
	}
	m += c.P[0] * c.Size[0]
	return m
}

// Sample maps u in [0, 1) to a size.
func (c *CDF) Sample(u float64) float64 {
	if u <= c.P[0] {
		return c.Size[0]
	}
	i := sort.SearchFloat64s(c.P, u) // first P >= u
	if i >= len(c.P) {
		return c.Size[len(c.Size)-1]
	}
	p0, p1 := c.P[i-1], c.P[i]
	if p1 == p0 {
		return c.Size[i]
	}
	return c.Size[i-1] + (u-p0)/(p1-p0)*(c.Size[i]-c.Size[i-1])
}

type cdfPoint struct {
	size, p     float64
	file        string
	line, col   int
	field       string
	sizeN, rawP string
}

// checkCDF validates points and returns the CDF, or nil after reporting.
// When the last probability is 100 the column is read as percent, so the
// ns-3/HPCC distribution files load unchanged.
func (l *loader) checkCDF(pts []cdfPoint, whole *yaml.Node, field, file string) *CDF {
	report := func(pt cdfPoint, format string, args ...any) {
		l.d.errs = append(l.d.errs, &Error{File: pt.file, Line: pt.line, Col: pt.col, Field: pt.field, Reason: fmt.Sprintf(format, args...)})
	}
	if len(pts) < 2 {
		e := &Error{File: file, Field: field, Reason: "a CDF needs at least two points"}
		if whole != nil {
			e.Line, e.Col = whole.Line, whole.Column
		}
		l.d.errs = append(l.d.errs, e)
		return nil
	}
	scale := 1.0
	if pts[len(pts)-1].p == 100 {
		scale = 100
	}
	c := &CDF{}
	ok := true
	for i, pt := range pts {
		p := pt.p / scale
		switch {
		case pt.size < 0:
			report(pt, "negative size %s", pt.sizeN)
			ok = false
		case pt.size > maxQuantity:
			// A flow's size is an int64 of bytes: a larger point would
			// be drawn as a size that wrapped around.
			report(pt, "size %s is too large (at most %d bytes)", pt.sizeN, int64(maxQuantity))
			ok = false
		case p < 0 || p > 1:
			report(pt, "cumulative probability %s is outside [0, 1] (or [0, 100] when the last point is 100)", pt.rawP)
			ok = false
		case i > 0 && pt.size < pts[i-1].size:
			report(pt, "CDF not monotonic: size %s is smaller than the previous point's", pt.sizeN)
			ok = false
		case i > 0 && p < c.P[i-1]:
			report(pt, "CDF not monotonic: cumulative probability %s is below the previous point's", pt.rawP)
			ok = false
		}
		c.Size = append(c.Size, pt.size)
		c.P = append(c.P, p)
	}
	if ok && c.P[len(c.P)-1] != 1 {
		last := pts[len(pts)-1]
		report(last, "the last cumulative probability is %s; a CDF ends at 1 (or 100)", last.rawP)
		ok = false
	}
	if ok && c.Mean() <= 0 {
		report(pts[len(pts)-1], "mean flow size is zero")
		ok = false
	}
	if !ok {
		return nil
	}
	return c
}

func (l *loader) cdfFile(n *yaml.Node, field, p string) *CDF {
	path := p
	if !filepath.IsAbs(path) {
		path = filepath.Join(l.dir, p)
	}
	if l.opts.fsys != nil {
		path = slashpath.Join(slashpath.Dir(l.d.file), p) // fs.FS's paths are slash-separated
	}
	data, err := l.opts.readFile(path)
	if err != nil {
		l.d.wrapAt(n, field, fmt.Errorf("cannot read CDF file: %w", err))
		return nil
	}
	var pts []cdfPoint
	bad := false
	for i, line := range strings.Split(string(data), "\n") {
		if j := strings.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		fs := strings.Fields(line)
		if len(fs) == 0 {
			continue
		}
		pt := cdfPoint{file: path, line: i + 1, col: 1, field: field}
		if len(fs) != 2 {
			l.d.errs = append(l.d.errs, &Error{File: path, Line: i + 1, Col: 1, Field: field, Reason: "want two columns: size_bytes cumulative_probability"})
			bad = true
			continue
		}
		s, err1 := strconv.ParseFloat(fs[0], 64)
		q, err2 := strconv.ParseFloat(fs[1], 64)
		if err1 != nil || err2 != nil || math.IsNaN(s) || math.IsNaN(q) || math.IsInf(s, 0) || math.IsInf(q, 0) {
			l.d.errs = append(l.d.errs, &Error{File: path, Line: i + 1, Col: 1, Field: field, Reason: fmt.Sprintf("not two numbers: %q", strings.TrimSpace(line))})
			bad = true
			continue
		}
		pt.size, pt.p, pt.sizeN, pt.rawP = s, q, fs[0], fs[1]
		pts = append(pts, pt)
	}
	if bad {
		// The lines are reported; the points left are not the file's
		// CDF, and "needs at least two points" would blame the wrong thing.
		return nil
	}
	return l.checkCDF(pts, nil, field, path)
}

// cdfInline reads cdf: [[size, p], ...] where size is a size with units
// ("10KB") or a plain number of bytes.
func (l *loader) cdfInline(n *yaml.Node, field string) *CDF {
	d := l.d
	var pts []cdfPoint
	ok := true
	for i, pn := range d.list(n, field) {
		f := index(field, i)
		if pn.Kind != yaml.SequenceNode || len(pn.Content) != 2 {
			d.errAt(pn, f, "want a pair [size, cumulative_probability]")
			ok = false
			continue
		}
		sn, qn := resolve(pn.Content[0]), resolve(pn.Content[1])
		var size float64
		if sn.Tag == "!!int" || sn.Tag == "!!float" {
			v, good := d.float(sn, index(f, 0), math.Inf(-1), math.Inf(1))
			if !good {
				ok = false
				continue
			}
			size = v
		} else {
			v, good := d.size(sn, index(f, 0))
			if !good {
				ok = false
				continue
			}
			size = float64(v)
		}
		q, good := d.float(qn, index(f, 1), math.Inf(-1), math.Inf(1))
		if !good {
			ok = false
			continue
		}
		pts = append(pts, cdfPoint{size: size, p: q, file: d.file, line: pn.Line, col: pn.Column, field: f, sizeN: sn.Value, rawP: qn.Value})
	}
	if !ok || n.Kind != yaml.SequenceNode {
		return nil
	}
	return l.checkCDF(pts, n, field, d.file)
}

type genParams struct {
	group              string
	senders, receivers []string
	load               float64
	cdf                *CDF
	seed               int64
	start, stop        time.Duration
	limit              int
	rate               func(host string) Rate
	// pattern is the block's pattern ("" and random alike); choices, for
	// intra-dc and cross-dc, the receivers each sender may pick; fanIn the
	// senders of one incast.
	pattern Pattern
	choices [][]string
	fanIn   int
	// offered, when set, is the bits per second each sender offers (by
	// sender index), in place of load times its link rate; for incast the
	// block's total.
	offered func(s int) float64
}

// Pattern is how a generated block pairs senders and receivers.
type Pattern string

// The traffic patterns of a generated block.
const (
	// PatternRandom: each flow to a receiver drawn uniformly (not the
	// sender), HPCC's traffic_gen.py.
	PatternRandom Pattern = "random"
	// PatternIntraDC and PatternCrossDC draw the receiver among those in
	// the sender's own fabric, or in another one.
	PatternIntraDC Pattern = "intra-dc"
	PatternCrossDC Pattern = "cross-dc"
	// PatternAllToAll: each arrival at a sender is a flow to every
	// receiver (a shuffle round), sizes drawn per flow.
	PatternAllToAll Pattern = "all-to-all"
	// PatternIncast: arrivals for the whole block; each is fan_in senders
	// sending one drawn size to one receiver drawn uniformly.
	PatternIncast Pattern = "incast"
)

var patterns = []Pattern{PatternRandom, PatternIntraDC, PatternCrossDC, PatternAllToAll, PatternIncast}

// generate draws flows as the ns-3/HPCC traffic generator does: each sender
// starts flows as a Poisson process whose mean gap makes the offered load
// the given fraction of its NIC rate, to a receiver drawn uniformly (never
// itself), with a size drawn from the CDF. One PCG stream per block keeps
// the result a function of the seed alone. It stops after limit+1 flows.
func generate(p genParams) []Flow {
	rng := rand.New(rand.NewPCG(uint64(p.seed), 0x6c68636e70))
	mean := p.cdf.Mean()
	type next struct {
		at     time.Duration
		sender int
	}
	if p.pattern == PatternIncast {
		return generateIncast(p, rng, mean)
	}
	var heap []next
	gap := func(s int) time.Duration {
		perArrival := 1.0 // flows per arrival
		if p.pattern == PatternAllToAll {
			perArrival = float64(len(p.receivers))
			if contains(p.receivers, p.senders[s]) {
				perArrival--
			}
		}
		bits := p.load * float64(p.rate(p.senders[s]))
		if p.offered != nil {
			bits = p.offered(s)
		}
		meanGapNs := perArrival * mean * 8 / bits * 1e9
		return expGap(rng, meanGapNs)
	}
	for s := range p.senders {
		heap = append(heap, next{p.start + gap(s), s})
	}
	var out []Flow
	for len(heap) > 0 && len(out) <= p.limit {
		// Few senders: a linear scan for the earliest is simpler than a heap
		// and the order (time, then sender index) is total.
		bi := 0
		for i, h := range heap {
			if h.at < heap[bi].at || h.at == heap[bi].at && h.sender < heap[bi].sender {
				bi = i
			}
		}
		cur := heap[bi]
		if cur.at >= p.stop {
			heap = append(heap[:bi], heap[bi+1:]...)
			continue
		}
		src := p.senders[cur.sender]
		switch {
		case p.pattern == PatternAllToAll:
			for _, dst := range p.receivers {
				if dst != src {
					out = append(out, p.flow(len(out), src, dst, cur.at, rng))
				}
			}
		case p.choices != nil:
			c := p.choices[cur.sender]
			out = append(out, p.flow(len(out), src, c[rng.IntN(len(c))], cur.at, rng))
		default:
			var dst string
			for {
				dst = p.receivers[rng.IntN(len(p.receivers))]
				if dst != src {
					break
				}
			}
			out = append(out, p.flow(len(out), src, dst, cur.at, rng))
		}
		heap[bi].at = cur.at + gap(cur.sender)
	}
	return out
}

// expGap draws an exponential gap of mean meanGapNs. A gap past any run
// (a small load of very large flows) is held at maxQuantity, beyond every
// stop, where converting it would wrap around to a negative time.
func expGap(rng *rand.Rand, meanGapNs float64) time.Duration {
	ns := rng.ExpFloat64() * meanGapNs
	if ns >= maxQuantity {
		return maxQuantity
	}
	return time.Duration(ns)
}

// flow is the i-th flow of the block, from src to dst at at, with a size
// drawn from the CDF.
func (p *genParams) flow(i int, src, dst string, at time.Duration, rng *rand.Rand) Flow {
	return p.flowSized(i, src, dst, at, p.size(rng))
}

func (p *genParams) size(rng *rand.Rand) Size {
	return max(Size(math.Round(p.cdf.Sample(rng.Float64()))), 1)
}

func (p *genParams) flowSized(i int, src, dst string, at time.Duration, size Size) Flow {
	return Flow{Name: fmt.Sprintf("%s/%d", p.group, i), Src: src, Dst: dst, Start: at, Size: size, Group: p.group}
}

// generateIncast draws incasts: one Poisson process for the block whose
// mean gap makes fan_in flows of the mean size per arrival the offered
// load (load times the receivers' link rates, or p.offered(0) bits per
// second); at each, a receiver drawn uniformly and fan_in distinct
// senders drawn uniformly among the others, each sending one size drawn
// for the incast.
func generateIncast(p genParams, rng *rand.Rand, mean float64) []Flow {
	var bits float64
	if p.offered != nil {
		bits = p.offered(0)
	} else {
		for _, r := range p.receivers {
			bits += p.load * float64(p.rate(r))
		}
	}
	meanGapNs := float64(p.fanIn) * mean * 8 / bits * 1e9
	var out []Flow
	cands := make([]string, 0, len(p.senders))
	for at := p.start + expGap(rng, meanGapNs); at < p.stop && len(out) <= p.limit; at += expGap(rng, meanGapNs) {
		dst := p.receivers[rng.IntN(len(p.receivers))]
		cands = cands[:0]
		for _, s := range p.senders {
			if s != dst {
				cands = append(cands, s)
			}
		}
		size := p.size(rng)
		for k := 0; k < p.fanIn; k++ {
			j := k + rng.IntN(len(cands)-k)
			cands[k], cands[j] = cands[j], cands[k]
			out = append(out, p.flowSized(len(out), cands[k], dst, at, size))
		}
	}
	return out
}

// pattern reads a generated block's pattern, load_of and fan_in into p,
// reporting what cannot work (a sender with no receiver of its pattern,
// a WAN load without WAN links or outside a fabric).
func (l *loader) pattern(g *object, p *genParams) bool {
	d, sc := l.d, l.sc
	p.pattern = PatternRandom
	ok := true
	if pn := g.get("pattern"); pn != nil {
		if v, good := d.scalar(pn, g.field("pattern")); good {
			p.pattern = Pattern(v)
			if !contains(patterns, p.pattern) {
				names := make([]string, len(patterns))
				for i, x := range patterns {
					names[i] = string(x)
				}
				d.errAt(pn, g.field("pattern"), "unknown pattern %q (want one of: %s)", v, strings.Join(names, ", "))
				return false
			}
		} else {
			return false
		}
	}
	fabric := map[string]string{}
	for _, h := range sc.Hosts {
		fabric[h.Name] = h.Fabric
	}
	switch p.pattern {
	case PatternIntraDC, PatternCrossDC:
		p.choices = make([][]string, len(p.senders))
		for i, s := range p.senders {
			for _, r := range p.receivers {
				same := fabric[r] == fabric[s]
				if r != s && same == (p.pattern == PatternIntraDC) {
					p.choices[i] = append(p.choices[i], r)
				}
			}
			if len(p.choices[i]) == 0 {
				d.errAt(g.get("receivers"), g.field("receivers"), "sender %s has no receiver in %s: pattern %s", s,
					map[bool]string{true: "its own fabric", false: "another fabric"}[p.pattern == PatternIntraDC], p.pattern)
				return false
			}
		}
	case PatternIncast:
		p.fanIn = 2
		fn := g.get("fan_in")
		if fn != nil {
			if v, good := d.integer(fn, g.field("fan_in"), 1, 1<<16); good {
				p.fanIn = int(v)
			} else {
				ok = false
			}
		}
		most := len(p.senders) // senders a receiver can have
		if overlaps(p.senders, p.receivers) {
			most--
		}
		if ok && p.fanIn > most {
			at := fn
			if at == nil {
				at = g.get("senders")
			}
			d.errAt(at, g.field("fan_in"), "fan_in %d is more than the %d senders a receiver can have", p.fanIn, most)
			ok = false
		}
	}
	if p.pattern != PatternIncast {
		if fn := g.get("fan_in"); fn != nil {
			d.errAt(fn, g.field("fan_in"), "fan_in belongs to pattern incast")
			ok = false
		}
	}
	if ln := g.get("load_of"); ln != nil {
		v, good := d.scalar(ln, g.field("load_of"))
		switch {
		case !good:
			ok = false
		case v == "host":
		case v == "wan":
			ok = l.wanLoad(g, ln, p, fabric) && ok
		default:
			d.errAt(ln, g.field("load_of"), "unknown load_of %q (want host or wan)", v)
			ok = false
		}
	}
	return ok
}

// wanLoad sets p.offered for load_of wan: the senders of each fabric
// together offer load times the rate of the WAN links at its border
// router, shared equally; for incast the block offers load times the
// rate of every WAN link.
func (l *loader) wanLoad(g *object, at *yaml.Node, p *genParams, fabric map[string]string) bool {
	sc := l.sc
	wanOf := map[string]float64{} // fabric -> WAN rate at its border
	var total float64
	accepted := 0
	for _, lk := range sc.Links {
		if !lk.WAN || lk.Rate == 0 { // 0: its rate was refused
			continue
		}
		accepted++
		total += float64(lk.Rate)
		for _, f := range sc.Fabrics {
			if f.Border != "" && (lk.A == f.Border || lk.B == f.Border) {
				wanOf[f.Name] += float64(lk.Rate)
			}
		}
	}
	// A WAN link the file wrote and the loader refused is reported at
	// its own line: a block that needs it is not reported again.
	refused := accepted < l.wanWritten
	if total == 0 {
		if !refused {
			l.d.errAt(at, g.field("load_of"), "load_of wan: the topology has no topology.wan links")
		}
		return false
	}
	if p.pattern == PatternIncast {
		p.offered = func(int) float64 { return p.load * total }
		return true
	}
	count := map[string]int{}
	for _, s := range p.senders {
		count[fabric[s]]++
	}
	for _, s := range p.senders {
		if wanOf[fabric[s]] == 0 {
			if !refused {
				l.d.errAt(at, g.field("load_of"), "load_of wan: sender %s is not in a fabric with WAN links", s)
			}
			return false
		}
	}
	p.offered = func(i int) float64 {
		f := fabric[p.senders[i]]
		return p.load * wanOf[f] / float64(count[f])
	}
	return true
}

func overlaps(a, b []string) bool {
	for _, x := range a {
		if contains(b, x) {
			return true
		}
	}
	return false
}
