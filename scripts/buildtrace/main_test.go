package main

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// trace writes a trace as go build -debug-trace does: a span per action
// (seconds since 0) and a flow "A -> B" per dependency of B on A.
func trace(spans [][3]any, flows [][2]string) string {
	var ev []string
	for _, s := range spans {
		name, begin, end := s[0].(string), s[1].(float64), s[2].(float64)
		ev = append(ev,
			fmt.Sprintf(`{"name":"Executing action (%s)","ph":"B","ts":%g,"pid":0,"tid":1}`, name, begin*1e6),
			fmt.Sprintf(`{"name":"Executing action (%s)","ph":"E","ts":%g,"pid":0,"tid":1}`, name, end*1e6))
	}
	for i, f := range flows {
		ev = append(ev, fmt.Sprintf(`{"name":"Executing action (%s) -> Executing action (%s)","ph":"s","ts":0,"pid":0,"tid":1,"id":%d,"cat":"flow"}`, f[0], f[1], i))
	}
	return "[" + strings.Join(ev, ",\n") + "]"
}

// After runtime (2 s), the trace started fmt (3 s), net (1.5 s with its cgo
// step) and a module package (4 s), in that order; the main package (1 s)
// needs all three, its link (1 s) the main package.
var diamond = trace([][3]any{
	{"build runtime", 0.0, 2.0},
	{"build fmt", 2.0, 5.0},
	{"cgo run net", 2.1, 2.6}, // counts as net's build
	{"collect cgo", 2.6, 2.7}, // shared by packages: no action
	{"build net", 2.7, 3.7},
	{"build example.com/mod/pkg", 2.2, 6.2},
	{"build github.com/lhcnp/lhcnp/cmd/x", 6.0, 7.0},
	{"link github.com/lhcnp/lhcnp/cmd/x", 7.0, 8.0},
}, [][2]string{
	{"build runtime", "build fmt"},
	{"build runtime", "build net"},
	{"build runtime", "build example.com/mod/pkg"},
	{"build fmt", "build github.com/lhcnp/lhcnp/cmd/x"},
	{"build net", "build github.com/lhcnp/lhcnp/cmd/x"},
	{"build example.com/mod/pkg", "build github.com/lhcnp/lhcnp/cmd/x"},
	{"build github.com/lhcnp/lhcnp/cmd/x", "link github.com/lhcnp/lhcnp/cmd/x"},
	{"cgo run net", "collect cgo"},
	{"collect cgo", "build runtime"}, // would make a cycle through the shared step
})

func TestAnalysis(t *testing.T) {
	g, err := parse([]byte(diamond))
	if err != nil {
		t.Fatal(err)
	}
	names := func(is []int) []string {
		var out []string
		for _, i := range is {
			out = append(out, g.actions[i].name)
		}
		return out
	}
	d := g.scaled(1)
	path, crit := g.criticalPath(d)
	got := map[string]any{
		"total":    g.total(),
		"critical": crit,
		"path":     names(path),
		"1 core":   g.replay(d, 1),
		"2 cores":  g.replay(d, 2),
		"3 cores":  g.replay(d, 3),
		"halved":   g.replay(g.scaled(0.5), 2),
	}
	want := map[string]any{
		"total":    12.5, // 2 + 3 + (0.5 + 1) + 4 + 1 + 1
		"critical": 8.0,  // runtime, example.com/mod/pkg, cmd/x, link
		"path":     []string{"build runtime", "build example.com/mod/pkg", "build github.com/lhcnp/lhcnp/cmd/x", "link github.com/lhcnp/lhcnp/cmd/x"},
		"1 core":   12.5,
		// fmt and net from 2 s, the module package once net is done
		// (3.5 s), so the main package waits for it until 7.5 s.
		"2 cores": 9.5,
		"3 cores": 8.0,
		"halved":  4.75,
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestGroup(t *testing.T) {
	tests := []struct {
		desc, action, want string
	}{
		{"standard library", "build net/http", "std"},
		{"vendored in std", "build vendor/golang.org/x/net/idna", "std"},
		{"main module", "build github.com/lhcnp/lhcnp/gen/oc", "github.com/lhcnp/lhcnp"},
		{"main module's link", "link github.com/lhcnp/lhcnp/cmd/lhcnp", "github.com/lhcnp/lhcnp"},
		{"module", "build github.com/jackc/pgx/v5/pgtype", "github.com/jackc"},
		{"short path", "build go.yaml.in/yaml", "go.yaml.in/yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			if got := group(tt.action, "github.com/lhcnp/lhcnp"); got != tt.want {
				t.Errorf("group(%q) = %q, want %q", tt.action, got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		desc, trace, want string
	}{
		{"not JSON", `{`, "not a JSON array"},
		{"empty", `[]`, "no events"},
		{"no actions", `[{"name":"load","ph":"B","ts":1,"tid":0},{"name":"load","ph":"E","ts":2,"tid":0}]`, "no \"Executing action\" spans"},
		{"end without begin", `[{"name":"Executing action (build a)","ph":"E","ts":1,"tid":0}]`, "did not begin"},
		{"bad flow", `[{"name":"x","ph":"s","ts":1,"tid":0}]`, "is not \"A -> B\""},
		{"cycle", trace([][3]any{{"build a", 0.0, 1.0}, {"build b", 1.0, 2.0}},
			[][2]string{{"build a", "build b"}, {"build b", "build a"}}), "cycle"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			_, err := parse([]byte(tt.trace))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parse: %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// FuzzParse: any input gives a graph or an error, never a panic, and a
// graph's replay is never shorter than its longest chain nor longer than
// its total.
func FuzzParse(f *testing.F) {
	f.Add([]byte(diamond))
	f.Add([]byte(`[{"name":"Executing action (cgo compile a.c p)","ph":"B","ts":0,"tid":3},{"name":"Executing action (cgo compile a.c p)","ph":"E","ts":5,"tid":3}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := parse(data)
		if err != nil {
			return
		}
		d := g.scaled(1)
		for _, x := range d {
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				return // timestamps out of order or huge: nothing to check
			}
		}
		_, crit := g.criticalPath(d)
		r := g.replay(d, 2)
		if r < crit-1e-6*math.Max(1, crit) || r > g.total()+1e-6*math.Max(1, g.total()) {
			t.Errorf("replay %v outside [longest chain %v, total %v]", r, crit, g.total())
		}
	})
}
