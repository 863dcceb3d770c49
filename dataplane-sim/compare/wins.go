package compare

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// metric is one figure the "who wins where" table ranks the rows of a
// scenario on; ok says whether a row has it.
type metric struct {
	name   string
	lower  bool // lower is better
	value  func(*Row) float64
	ok     func(*Row) bool
	format func(float64) string
}

func metrics(web bool) []metric {
	always := func(*Row) bool { return true }
	ms := []metric{
		{"feedback latency (mean)", true, func(r *Row) float64 { return r.FeedbackMeanNs }, func(r *Row) bool { return r.FeedbackSenders > 0 }, dur},
		{"peak queue", true, func(r *Row) float64 { return float64(r.PeakQueueBytes) }, always, func(v float64) string { return mb(int64(v)) }},
		{"drops", true, func(r *Row) float64 { return float64(r.Drops) }, always, func(v float64) string { return fmt.Sprintf("%.0f", v) }},
		{"utilisation (congested)", false, func(r *Row) float64 { return r.Utilisation }, func(r *Row) bool { return r.CongestedNs > 0 },
			func(v float64) string { return fmt.Sprintf("%.2f%%", 100*v) }},
	}
	if web {
		for i, name := range []string{"small", "medium", "large"} {
			ms = append(ms, metric{name + " flows p99 slowdown", true,
				func(r *Row) float64 { return r.Buckets[i].P99 },
				func(r *Row) bool { return len(r.Buckets) > i && r.Buckets[i].Finished > 0 },
				func(v float64) string { return fmt.Sprintf("%.2f", v) }})
		}
	}
	return ms
}

// Wins is, for one scenario and metric, the best rows and how a reference
// mechanism ranks.
type Wins struct {
	Scenario, Metric string
	Best             []string
	BestValue        string
	Ref              string // the reference's value, "—" when it has none
	RefRank, Ranked  int    // 1-based rank of the reference among the rows that have the metric
}

// tie is the relative difference under which two values count as equal:
// the RoCEv2 and ICMPv6 formats differ by a few bytes of frame, which is
// no win.
const tie = 0.01

// family reports whether m is ref or one of its variants ("ref:...").
func family(m, ref string) bool { return m == ref || strings.HasPrefix(m, ref+":") }

// Wins ranks the rows of every scenario on every metric and places ref
// (e.g. "long-haul-cnp") among them: values within 1% are ties, and ref's
// own variants (ref:...) are not ranked against it.
func (r *Result) Wins(ref string) []Wins {
	var out []Wins
	var order []string
	by := map[string][]*Row{}
	for i := range r.Rows {
		row := &r.Rows[i]
		if _, ok := by[row.Scenario]; !ok {
			order = append(order, row.Scenario)
		}
		by[row.Scenario] = append(by[row.Scenario], row)
	}
	for _, sc := range order {
		rows := by[sc]
		for _, m := range metrics(web(rows[0])) {
			var have []*Row
			for _, row := range rows {
				if m.ok(row) {
					have = append(have, row)
				}
			}
			if len(have) == 0 {
				continue
			}
			same := func(a, b float64) bool { return math.Abs(a-b) <= tie*math.Max(math.Abs(a), math.Abs(b)) }
			better := func(a, b float64) bool {
				if same(a, b) {
					return false
				}
				if m.lower {
					return a < b
				}
				return a > b
			}
			// The best is the extreme value itself (better's 1 % would keep
			// the first of a run of rows each within 1 % of the last), and
			// its ties are the rows within 1 % of it.
			best := have[0]
			for _, row := range have[1:] {
				if v, b := m.value(row), m.value(best); (m.lower && v < b) || (!m.lower && v > b) {
					best = row
				}
			}
			w := Wins{Scenario: sc, Metric: m.name, BestValue: m.format(m.value(best)), Ref: "—", Ranked: len(have)}
			for _, row := range have {
				if same(m.value(row), m.value(best)) {
					w.Best = append(w.Best, row.Mechanism)
				}
			}
			for _, row := range have {
				if row.Mechanism != ref {
					continue
				}
				w.Ref = m.format(m.value(row))
				w.RefRank = 1
				w.Ranked = 0
				for _, o := range have {
					if family(o.Mechanism, ref) && o.Mechanism != ref {
						continue
					}
					w.Ranked++
					if better(m.value(o), m.value(row)) {
						w.RefRank++
					}
				}
			}
			out = append(out, w)
		}
	}
	return out
}

// WriteWinsMarkdown writes Wins(ref) as a table.
func (r *Result) WriteWinsMarkdown(w io.Writer, ref string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| scenario | figure | best (within 1%%) | best value | %s | its rank (its own variants not ranked) |\n|---|---|---|---|---|---|\n", ref)
	for _, x := range r.Wins(ref) {
		rank := "—"
		if x.RefRank > 0 {
			rank = fmt.Sprintf("%d of %d", x.RefRank, x.Ranked)
			if x.RefRank > 1 {
				rank = "**" + rank + "**"
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", x.Scenario, x.Metric, strings.Join(x.Best, ", "), x.BestValue, x.Ref, rank)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Losses lists, as markdown bullets, every scenario and figure where ref
// does not win, with the winner.
func (r *Result) Losses(ref string) []string {
	var out []string
	for _, w := range r.Wins(ref) {
		if w.RefRank <= 1 {
			continue
		}
		out = append(out, fmt.Sprintf("- %s, %s: %s has %s (rank %d of %d); best %s with %s.",
			w.Scenario, w.Metric, ref, w.Ref, w.RefRank, w.Ranked, strings.Join(w.Best, ", "), w.BestValue))
	}
	return out
}
