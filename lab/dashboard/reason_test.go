package dashboard

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/tuner/policy"
)

func TestReadableReason(t *testing.T) {
	tests := []struct {
		desc, in, want string
	}{
		{desc: "durations rounded with units", in: "last change 1m3.2843s ago, cool-down 30s",
			want: "last change 63 s ago, cool-down 30 s"},
		{desc: "long and short durations", in: "ended after 2h30m0.5s; held 250.123ms, 4.21µs",
			want: "ended after 2.5 h; held 250 ms, 4.2 µs"},
		{desc: "bytes and byte rates with prefixes", in: "the queue (12500000 B) is at or above K_max (125000000 B): the QD trigger fires",
			want: "the queue (12.5 MB) is at or above K_max (125 MB): the QD trigger fires"},
		{desc: "a rate in %g notation", in: "the queue grows at 1.235e+07 B/s, above V_growth (5000000 B/s)",
			want: "the queue grows at 12.3 MB/s, above V_growth (5 MB/s)"},
		{desc: "configuration keys in words", in: "queueing delay 1.2 RTT_est (mean 0.9, last 1.2) above delay_high_rtt 1 with the link 97.0% used",
			want: "queueing delay 1.2 RTT (mean 0.9, last 1.2) above the high-delay limit 1 with the link 97.0% used"},
		{desc: "plain words and numbers stay", in: "kmax: queue above K_max for 3 windows; alpha 0.5 -> 0.25",
			want: "kmax: queue above K_max for 3 windows; alpha 0.5 -> 0.25"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ReadableReason(tt.in)); diff != "" {
				t.Errorf("ReadableReason(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// FuzzReadableReason: any reason text in tuner_actions (the tuner's, an
// older tuner's, one written by hand) is shown, never a panic, and the
// page's text stays valid UTF-8 when the reason was.
func FuzzReadableReason(f *testing.F) {
	for _, s := range []string{
		"last change 1m3.2843s ago, cool-down 30s",
		"the queue grows at 1.235e+07 B/s, above V_growth (5000000 B/s)",
		"queueing delay 1.2 RTT_est (mean 0.9, last 1.2) above delay_high_rtt 1 with the link 97.0% used",
		"pinned: 0.05 of packets dropped or paused (loss_high 0.0001); queue 30400000 B",
		"1e999 B 9999999999999999999h -0s NaN B/s",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := ReadableReason(in)
		if utf8.ValidString(in) && !utf8.ValidString(out) {
			t.Fatalf("%q read as %q: not UTF-8", in, out)
		}
	})
}

// TestReadableReasonKeys: every key of the policy's configuration that its
// reasons name (a string literal of tuner/policy, its validation in
// config.go aside) is said in words on the page, as ReadableReason
// promises. The page showed "(v_growth_start_share 0.1 of R_port)" in a
// lab's every bound and under-use row, and alpha_start, qgr_off_rtt,
// settle_unjudged, settle_whole and under_use_after_rtt as the tuner
// wrote them.
func TestReadableReasonKeys(t *testing.T) {
	var keys []string
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for f := range typ.Fields() {
			if k, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); strings.Contains(k, "_") {
				keys = append(keys, k)
			}
			if f.Type.Kind() == reflect.Struct {
				walk(f.Type)
			}
		}
	}
	walk(reflect.TypeFor[policy.Config]())

	files, err := filepath.Glob("../../tuner/policy/*.go")
	if err != nil {
		t.Fatal(err)
	}
	var literals []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || filepath.Base(name) == "config.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				literals = append(literals, lit.Value)
			}
			return true
		})
	}
	named := 0
	for _, k := range keys {
		word := regexp.MustCompile(`\b` + k + `\b`)
		for _, lit := range literals {
			if !word.MatchString(lit) {
				continue
			}
			named++
			got := ReadableReason(lit)
			if word.MatchString(got) {
				t.Errorf("policy key %s stays a key on the page: %s read as %s", k, lit, got)
			}
			// Nor a tail of it, a shorter key's words put before it
			// ("the starting alpha_overload_cut").
			for i := range len(k) {
				if k[i] == '_' && strings.Contains(got, k[i:]) {
					t.Errorf("policy key %s half read on the page: %s read as %s", k, lit, got)
					break
				}
			}
			break
		}
	}
	if named < 10 {
		t.Errorf("%d keys of policy.Config named in tuner/policy's strings; the reasons name more: is the scan broken?", named)
	}
}
