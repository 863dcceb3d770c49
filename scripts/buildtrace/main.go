// Command buildtrace says where the time of a Go build went, from the trace
// `go build -debug-trace=FILE` writes: the actions' total time, the longest
// chain of actions that wait for each other (no number of cores builds
// faster), a replay of the action graph on a given number of cores, the
// shares of the standard library, the main module and the other module
// groups, and the longest actions.
//
// The replay is what turns a build traced on a busy machine into an
// estimate for an idle one: -sum scales every action's duration so that
// they add up to the given seconds (for example the build's CPU time, user
// plus system, times the ratio of action time to CPU time of a build on an
// idle machine), and the actions are then started in the order the trace
// started them, each as soon as its dependencies are done and a core is
// free (docs/lab.md, "How fast it comes up").
//
// Usage:
//
//	go build -debug-trace=trace.json -o /dev/null ./cmd/lhcnp
//	go run ./scripts/buildtrace [-cores 2] [-sum SECONDS] [-module PATH] [-top N] trace.json
package main

import (
	"cmp"
	"container/heap"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

func main() {
	cores := flag.Int("cores", 2, "cores of the replay")
	sum := flag.Float64("sum", 0, "scale the actions' durations to add up to this many seconds (0: as traced)")
	module := flag.String("module", "github.com/lhcnp/lhcnp", "the main module, one group of its own")
	top := flag.Int("top", 15, "how many of the longest actions to list")
	flag.Parse()
	if flag.NArg() != 1 || *cores < 1 {
		fmt.Fprintln(os.Stderr, "usage: buildtrace [-cores N] [-sum SECONDS] [-module PATH] [-top N] trace.json")
		os.Exit(2)
	}
	data, err := os.ReadFile(flag.Arg(0))
	if err == nil {
		var g *graph
		if g, err = parse(data); err == nil {
			err = report(os.Stdout, g, *cores, *sum, *module, *top)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "buildtrace: %s: %v\n", flag.Arg(0), err)
		os.Exit(1)
	}
}

// event is one entry of the trace (Chrome's trace event format).
type event struct {
	Name string  `json:"name"`
	Ph   string  `json:"ph"`
	TS   float64 `json:"ts"` // microseconds
	TID  int64   `json:"tid"`
}

// action is one step of the build: compiling a package, linking.
type action struct {
	name       string  // "build net/http", "link example.com/cmd"
	seconds    float64 // time it ran (cgo steps of a package added to its build)
	startedAt  float64 // seconds since the trace's first event
	dependsOn  []int
	longestEnd float64 // the longest chain ending with this action, itself included
	prev       int     // the action before it on that chain, -1 if none
}

// graph is the build's actions, their dependencies in order.
type graph struct {
	actions []*action
}

const prefix = "Executing action ("

// actionName returns the action an "Executing action (...)" span or flow
// end belongs to: the cgo steps of a package count as its build, the
// shared "collect cgo" step as none.
func actionName(s string) (name string, ok bool) {
	if !strings.HasPrefix(s, prefix) || !strings.HasSuffix(s, ")") {
		return "", false
	}
	name = s[len(prefix) : len(s)-1]
	switch f := strings.Fields(name); {
	case name == "collect cgo", len(f) == 0:
		return "", false
	case f[0] == "cgo" && len(f) >= 3:
		return "build " + f[len(f)-1], true // cgo run P, cgo compile FILE P
	}
	return name, true
}

// parse reads a trace and returns its actions in an order where every
// action comes after those it depends on.
func parse(data []byte) (*graph, error) {
	var evs []event
	if err := json.Unmarshal(data, &evs); err != nil {
		return nil, fmt.Errorf("not a JSON array of trace events: %w", err)
	}
	if len(evs) == 0 {
		return nil, errors.New("no events")
	}
	t0 := evs[0].TS
	type key struct {
		tid  int64
		name string
	}
	open := map[key][]float64{}
	byName := map[string]*action{}
	edges := map[string][]string{}
	for i, e := range evs {
		switch e.Ph {
		case "B":
			k := key{e.TID, e.Name}
			open[k] = append(open[k], e.TS)
		case "E":
			k := key{e.TID, e.Name}
			st := open[k]
			if len(st) == 0 {
				return nil, fmt.Errorf("event %d: end of %q, which did not begin", i, e.Name)
			}
			begin := st[len(st)-1]
			open[k] = st[:len(st)-1]
			name, ok := actionName(e.Name)
			if !ok {
				continue
			}
			a := byName[name]
			if a == nil {
				a = &action{name: name, startedAt: (begin - t0) / 1e6, prev: -1}
				byName[name] = a
			}
			a.seconds += (e.TS - begin) / 1e6
			a.startedAt = min(a.startedAt, (begin-t0)/1e6)
		case "s":
			from, to, ok := strings.Cut(e.Name, " -> ")
			if !ok {
				return nil, fmt.Errorf("event %d: flow %q is not \"A -> B\"", i, e.Name)
			}
			edges[to] = append(edges[to], from)
		}
	}
	// Dependencies between actions, through the spans that are none (the
	// shared "collect cgo" is skipped: it would join unrelated packages).
	deps := func(name string) []string {
		var out []string
		seen := map[string]bool{}
		todo := slices.Clone(edges[prefix+name+")"])
		for len(todo) > 0 {
			x := todo[len(todo)-1]
			todo = todo[:len(todo)-1]
			if seen[x] || x == prefix+"collect cgo)" {
				continue
			}
			seen[x] = true
			if n, ok := actionName(x); ok && byName[n] != nil {
				if n != name {
					out = append(out, n)
				}
				continue
			}
			todo = append(todo, edges[x]...)
		}
		return out
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(byName[a].startedAt, byName[b].startedAt), strings.Compare(a, b))
	})
	// Topological order (depth first), refusing cycles.
	g := &graph{}
	index := map[string]int{}
	const visiting = -2
	var visit func(n string, path []string) error
	visit = func(n string, path []string) error {
		switch i, ok := index[n]; {
		case ok && i == visiting:
			return fmt.Errorf("the actions depend on each other in a cycle: %s", strings.Join(append(path, n), " -> "))
		case ok:
			return nil
		}
		index[n] = visiting
		a := byName[n]
		var ds []int
		for _, d := range deps(n) {
			if err := visit(d, append(path, n)); err != nil {
				return err
			}
			ds = append(ds, index[d])
		}
		slices.Sort(ds)
		a.dependsOn = slices.Compact(ds)
		index[n] = len(g.actions)
		g.actions = append(g.actions, a)
		return nil
	}
	for _, n := range names {
		if err := visit(n, nil); err != nil {
			return nil, err
		}
	}
	if len(g.actions) == 0 {
		return nil, errors.New("no \"Executing action\" spans: not the trace of a go build")
	}
	return g, nil
}

// total returns the sum of the actions' durations.
func (g *graph) total() float64 {
	var s float64
	for _, a := range g.actions {
		s += a.seconds
	}
	return s
}

// scaled returns the actions' durations multiplied by f.
func (g *graph) scaled(f float64) []float64 {
	d := make([]float64, len(g.actions))
	for i, a := range g.actions {
		d[i] = a.seconds * f
	}
	return d
}

// criticalPath returns the longest chain of dependent actions (durations
// d), first action first, and its length in seconds.
func (g *graph) criticalPath(d []float64) (path []int, seconds float64) {
	last := -1
	for i, a := range g.actions { // dependencies come first
		a.longestEnd, a.prev = 0, -1
		for _, p := range a.dependsOn {
			if e := g.actions[p].longestEnd; e > a.longestEnd {
				a.longestEnd, a.prev = e, p
			}
		}
		a.longestEnd += d[i]
		if last < 0 || a.longestEnd > g.actions[last].longestEnd {
			last = i
		}
	}
	for i := last; i >= 0; i = g.actions[i].prev {
		path = append(path, i)
	}
	slices.Reverse(path)
	return path, g.actions[last].longestEnd
}

// running is a heap of the actions on the cores, by their end.
type running []struct {
	end float64
	i   int
}

func (r running) Len() int           { return len(r) }
func (r running) Less(i, j int) bool { return r[i].end < r[j].end }
func (r running) Swap(i, j int)      { r[i], r[j] = r[j], r[i] }
func (r *running) Push(x any) {
	*r = append(*r, x.(struct {
		end float64
		i   int
	}))
}
func (r *running) Pop() any {
	old := *r
	x := old[len(old)-1]
	*r = old[:len(old)-1]
	return x
}

// replay returns the wall time of the build on cores cores with durations
// d: whenever a core is free, the ready action the trace started first
// runs on it.
func (g *graph) replay(d []float64, cores int) float64 {
	waiting := make([]int, len(g.actions)) // dependencies not yet done
	dependents := make([][]int, len(g.actions))
	for i, a := range g.actions {
		waiting[i] = len(a.dependsOn)
		for _, p := range a.dependsOn {
			dependents[p] = append(dependents[p], i)
		}
	}
	var ready []int
	for i := range g.actions {
		if waiting[i] == 0 {
			ready = append(ready, i)
		}
	}
	byStart := func(a, b int) int { return cmp.Compare(g.actions[a].startedAt, g.actions[b].startedAt) }
	var now float64
	var on running
	for len(ready) > 0 || on.Len() > 0 {
		slices.SortStableFunc(ready, byStart)
		for on.Len() < cores && len(ready) > 0 {
			heap.Push(&on, struct {
				end float64
				i   int
			}{now + d[ready[0]], ready[0]})
			ready = ready[1:]
		}
		x := heap.Pop(&on).(struct {
			end float64
			i   int
		})
		now = x.end
		for _, n := range dependents[x.i] {
			if waiting[n]--; waiting[n] == 0 {
				ready = append(ready, n)
			}
		}
	}
	return now
}

// group returns the group of an action's package: "std", the main module,
// or the first two elements of the import path ("golang.org/x",
// "github.com/jackc").
func group(name, module string) string {
	_, pkg, _ := strings.Cut(name, " ")
	switch first, _, _ := strings.Cut(pkg, "/"); {
	case pkg == module || strings.HasPrefix(pkg, module+"/"):
		return module
	case !strings.Contains(first, "."):
		return "std"
	}
	parts := strings.SplitN(pkg, "/", 3)
	return strings.Join(parts[:min(2, len(parts))], "/")
}

func report(w io.Writer, g *graph, cores int, sum float64, module string, top int) error {
	f := 1.0
	if sum > 0 {
		f = sum / g.total()
	}
	d := g.scaled(f)
	var total float64
	for _, x := range d {
		total += x
	}
	path, crit := g.criticalPath(d)
	fmt.Fprintf(w, "%d actions, %.1f s in all (traced %.1f s, scaled by %.3f)\n", len(d), total, g.total(), f)
	fmt.Fprintf(w, "replay on %d cores: %.1f s; longest chain: %.1f s\n", cores, g.replay(d, cores), crit)
	fmt.Fprintln(w, "\nthe longest chain (actions of 0.2 s and more):")
	for _, i := range path {
		if d[i] >= 0.2 {
			fmt.Fprintf(w, "  %6.2f s  %s\n", d[i], g.actions[i].name)
		}
	}
	shares := map[string]float64{}
	for i, a := range g.actions {
		shares[group(a.name, module)] += d[i]
	}
	groups := make([]string, 0, len(shares))
	for k := range shares {
		groups = append(groups, k)
	}
	slices.SortFunc(groups, func(a, b string) int { return cmp.Or(cmp.Compare(shares[b], shares[a]), strings.Compare(a, b)) })
	fmt.Fprintln(w, "\nby group:")
	for _, k := range groups {
		fmt.Fprintf(w, "  %6.1f s %5.1f %%  %s\n", shares[k], 100*shares[k]/total, k)
	}
	order := make([]int, len(d))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(d[b], d[a]) })
	fmt.Fprintf(w, "\nthe %d longest actions:\n", min(top, len(order)))
	for _, i := range order[:min(top, len(order))] {
		fmt.Fprintf(w, "  %6.2f s  %s\n", d[i], g.actions[i].name)
	}
	return nil
}
