package service_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/internal/gnmicbin"
	"github.com/lhcnp/lhcnp/internal/oracle"
	"github.com/openconfig/gnmi/proto/gnmi"
)

// TestGnmicSetErrors: the errors of Sets of two operations, one at fault
// (or both, each breaking an entry: both named), as a user of gnmic reads them (`gnmic set` with two --update-path, or a
// --delete beside one): the code and the message, which names the
// operation at fault by its index in its field, its path and, below it,
// the node at fault with its keys. gnmic prints the message alone, not
// the status details' UpdateResults: the message is all a user sees.
func TestGnmicSetErrors(t *testing.T) {
	gnmic, err := gnmicbin.Path("../..")
	if err != nil {
		oracle.Missing(t, err)
	}
	e := newEnv(t)
	const wan0 = "/lhcnp/interfaces/interface[name=wan0]"
	const q = wan0 + "/queues/queue"
	const policies = "/lhcnp/rate-advice/policies"
	alpha := []string{"--update-path", q + "[id=3]/config/alpha", "--update-value", "0.5"}
	for _, tt := range []struct {
		desc string
		args []string
		want string // after "rpc error: "
		// cut: want is the line's beginning (what follows quotes a YANG
		// pattern).
		cut bool
	}{
		{desc: "a key leaf set to another value than its key (the entry's own)",
			args: slices.Concat(alpha, []string{"--update-path", q + "[id=4]/id", "--update-value", "5"}),
			want: `code = InvalidArgument desc = update[1] ` + q + `[id=4]/id: 5 differs from the list key 4`},
		{desc: "a value refused in an entry below the operation's path",
			args: []string{"--update-path", wan0 + "/config/rtt-est", "--update-value", "20000",
				"--update-path", policies, "--update-value", `{"policy": [{"name": "p1", "config": {"name": "p1", "source-prefix": "10.0.0.0/33"}}]}`},
			want: `code = InvalidArgument desc = update[1] ` + policies + `: invalid value: ` + policies + `/policy[name=p1]/config/source-prefix: "10.0.0.0/33" does not match regular expression pattern`,
			cut:  true},
		{desc: "a value not of the leaf's type",
			args: slices.Concat(alpha, []string{"--update-path", q + "[id=4]/config/alpha", "--update-value", "fast"}),
			want: `code = InvalidArgument desc = update[1] ` + q + `[id=4]/config/alpha: invalid value: the string "fast" is not a decimal64 number`},
		{desc: "a delete of a path the schema does not have",
			args: slices.Concat([]string{"--delete", wan0 + "/config/nope"}, alpha),
			want: `code = NotFound desc = delete[0] ` + wan0 + `/config/nope: not in the schema`},
		{desc: "a rule of the model",
			args: []string{"--update-path", q + "[id=3]/config/kmin-mode", "--update-value", "EXPLICIT", "--update-path", q + "[id=3]/config/kmin", "--update-value", "99999999999"},
			want: `code = InvalidArgument desc = update[1] ` + q + `[id=3]/config/kmin: 99999999999 is not below K_base 64000, the smallest BDP-adaptive K_max (K_min must be less than K_max, draft §5.3.2)`},
		{desc: "a rule broken by the first of two sibling updates",
			args: []string{"--update-path", q + "[id=3]/config/kmax-mode", "--update-value", "EXPLICIT", "--update-path", q + "[id=3]/config/alpha", "--update-value", "0.5"},
			want: `code = InvalidArgument desc = update[0] ` + q + `[id=3]/config/kmax: must be set when kmax-mode is EXPLICIT`},
		{desc: "a config key leaf set to another value than its key",
			args: slices.Concat(alpha, []string{"--update-path", wan0 + "/config/name", "--update-value", "wan1"}),
			want: `code = InvalidArgument desc = update[1] ` + wan0 + `/config/name: wan1 differs from the list key wan0`},
		{desc: "two entries broken, by two operations: both named",
			args: []string{"--update-path", q + "[id=4]/config/kmax-mode", "--update-value", "EXPLICIT", "--update-path", q + "[id=3]/config/kmin-mode", "--update-value", "EXPLICIT"},
			want: `code = InvalidArgument desc = update[1] ` + q + `[id=3]/config/kmin: must be set when kmin-mode is EXPLICIT; update[0] ` + q + `[id=4]/config/kmax: must be set when kmax-mode is EXPLICIT`},
		{desc: "a number in a string with a space (RFC 7951 §6.1)",
			args: slices.Concat(alpha, []string{"--update-path", q + "[id=3]/config/v-growth", "--update-value", `" 5"`}),
			want: `code = InvalidArgument desc = update[1] ` + q + `[id=3]/config/v-growth: invalid value: the string " 5" is not a uint64: a number in a string is written without spaces (RFC 7951 §6.1)`},
		{desc: "hex for an integer (RFC 7950 §9.2.1: decimal digits after an optional sign)",
			args: slices.Concat(alpha, []string{"--update-path", q + "[id=3]/config/v-growth", "--update-value", "0x10"}),
			want: `code = InvalidArgument desc = update[1] ` + q + `[id=3]/config/v-growth: invalid value: the string "0x10" is not a uint64: an integer is written as decimal digits after an optional sign (RFC 7950 §9.2.1)`},
		{desc: "a list entry given twice (RFC 7950 §7.8.2)",
			args: slices.Concat(alpha, []string{"--update-path", wan0 + "/queues", "--update-value", `{"queue": [{"id": 4}, {"id": 5}, {"id": 4}]}`}),
			want: `code = InvalidArgument desc = update[1] ` + wan0 + `/queues: invalid value: queue[id=4]: list entry given twice (entries 0 and 2 of the array): a list's keys are unique (RFC 7950 §7.8.2)`},
		{desc: "a decimal64 in a string with an exponent (RFC 7950 §9.3.1)",
			args: slices.Concat(alpha, []string{"--update-path", q + "[id=4]/config/alpha", "--update-value", `"5e-1"`}),
			want: `code = InvalidArgument desc = update[1] ` + q + `[id=4]/config/alpha: invalid value: the string "5e-1" is not a decimal64 number: a decimal64 in a string is written as decimal digits after an optional sign, then optionally a point and more digits (RFC 7950 §9.3.1)`},
		{desc: "a decimal64 without a digit before its point (gnmic sends a string)",
			args: slices.Concat(alpha, []string{"--update-path", q + "[id=4]/config/alpha", "--update-value", ".5"}),
			want: `code = InvalidArgument desc = update[1] ` + q + `[id=4]/config/alpha: invalid value: the string ".5" is not a decimal64 number: a decimal64 in a string is written as decimal digits after an optional sign, then optionally a point and more digits (RFC 7950 §9.3.1)`},
		{desc: "a decimal64 with more fraction digits than its type, beyond a float64's",
			args: slices.Concat(alpha, []string{"--update-path", q + "[id=4]/config/alpha", "--update-value", "0.10000000000000000001"}),
			want: `code = InvalidArgument desc = update[1] ` + q + `[id=4]/config/alpha: invalid value: 0.10000000000000000001 has more than the 3 fraction digits of its type`},
		{desc: "read-only state",
			args: slices.Concat(alpha, []string{"--update-path", q + "[id=3]/state/alpha", "--update-value", "0.5"}),
			want: `code = InvalidArgument desc = update[1] ` + q + `[id=3]/state/alpha: read-only state cannot be changed`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, gnmic, append([]string{"-a", e.addr, "--insecure", "set"}, tt.args...)...).CombinedOutput()
			if err == nil {
				t.Fatalf("gnmic set %q succeeded:\n%s", tt.args, out)
			}
			_, got, ok := strings.Cut(string(out), "rpc error: ")
			if !ok {
				t.Fatalf("gnmic set %q: no rpc error in its output:\n%s", tt.args, out)
			}
			got, _, _ = strings.Cut(got, "\n")
			if tt.cut && len(got) > len(tt.want) {
				got = got[:len(tt.want)]
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("gnmic set %q: error (-want, +got):\n%s", tt.args, diff)
			}
		})
	}
}

// TestGnmicSetNumberForms: a number in any lexical form of RFC 7950
// (§9.2.1, §9.3.1: an optional sign, leading zeros), which gnmic sends as
// a JSON string when it is not JSON's own form, is taken as its value,
// where "05" was refused in Go's words (`json: invalid number literal
// "05"`) and "+3" for a uint8 as out of its range.
func TestGnmicSetNumberForms(t *testing.T) {
	const q = "/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=3]"
	gnmicSetHas(t, []string{
		"--update-path", q + "/action-policy/config/rate-reduce-percent", "--update-value", "05",
		"--update-path", q + "/config/kmin", "--update-value", "+0064000",
		"--update-path", q + "/config/alpha", "--update-value", "+00.50"},
		q+"/action-policy/config/rate-reduce-percent = uint 5", q+"/config/kmin = uint 64000", q+"/config/alpha = double 0.5")
}

// TestGnmicSetDecimal64Forms: the forms gnmic sends a decimal64 in are
// read exactly: a JSON number with an exponent (its value, as JSON's
// grammar has it), a float_val (`--update path:::float:::0.1`, the float32
// nearest 0.1, read as 0.1: it was read as 0.10000000149011612 and
// refused for more than alpha's 3 fraction digits), and a JSON number at
// the top of the leaf's range.
func TestGnmicSetDecimal64Forms(t *testing.T) {
	const q = "/lhcnp/interfaces/interface[name=wan0]/queues/queue[id=3]"
	gnmicSetHas(t, []string{
		"--update", q + "/config/alpha:::float:::0.1",
		"--update-path", q + "/config/ecn-max-probability", "--update-value", "1e-4",
		"--update-path", q + "/config/v-ecn", "--update-value", "100.00"},
		q+"/config/alpha = double 0.1", q+"/config/ecn-max-probability = double 0.0001", q+"/config/v-ecn = double 100")
}

// gnmicSetHas runs `gnmic set` with args against a new target, which must
// succeed, and checks that the configuration then has each of want
// (configLeaves' lines).
func gnmicSetHas(t *testing.T, args []string, want ...string) {
	t.Helper()
	gnmic, err := gnmicbin.Path("../..")
	if err != nil {
		oracle.Missing(t, err)
	}
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args = append([]string{"-a", e.addr, "--insecure", "set"}, args...)
	if out, err := exec.CommandContext(ctx, gnmic, args...).CombinedOutput(); err != nil {
		t.Fatalf("gnmic set %q: %v\n%s", args, err, out)
	}
	got := configLeaves(t, e)
	for _, w := range want {
		if !has(got, w) {
			t.Errorf("config lacks %q:\n%s", w, strings.Join(got, "\n"))
		}
	}
}

// TestGnmicSetLeafList: a leaf-list as gnmic can send it, in its
// container's object or from a file, is set; an --update-value in
// brackets gnmic sends as one string (the text between them), which is
// refused saying the leaf-list takes an array (docs/gnmi-target.md,
// "Value forms Set accepts", says so and shows the two forms).
func TestGnmicSetLeafList(t *testing.T) {
	gnmic, err := gnmicbin.Path("../..")
	if err != nil {
		oracle.Missing(t, err)
	}
	const fc = "/lhcnp/fast-cnp/config"
	file := filepath.Join(t.TempDir(), "bi.json")
	if err := os.WriteFile(file, []byte(`["a1", "wan0"]`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		desc string
		args []string
		want []string // the leaf-list after the Set; nil: refused
		msg  string   // the refusal, after "rpc error: "
	}{
		{desc: "in its container's object", args: []string{"--update-path", fc, "--update-value", `{"border-interface": ["a1", "wan0"]}`},
			want: []string{"a1", "wan0"}},
		{desc: "from a file", args: []string{"--update-path", fc + "/border-interface", "--update-file", file},
			want: []string{"a1", "wan0"}},
		{desc: "in brackets on the command line", args: []string{"--update-path", fc + "/border-interface", "--update-value", `["a1","wan0"]`},
			msg: `code = InvalidArgument desc = update[0] ` + fc + `/border-interface: invalid value: leaf-list border-interface takes a JSON array, not the string "\"a1\",\"wan0\""`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			e := newEnv(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, gnmic, append([]string{"-a", e.addr, "--insecure", "set"}, tt.args...)...).CombinedOutput()
			if tt.want == nil {
				_, got, _ := strings.Cut(string(out), "rpc error: ")
				got, _, _ = strings.Cut(got, "\n")
				if err == nil || got != tt.msg {
					t.Errorf("gnmic set %q: %v, want the error %q:\n%s", tt.args, err, tt.msg, out)
				}
				return
			}
			if err != nil {
				t.Fatalf("gnmic set %q: %v\n%s", tt.args, err, out)
			}
			resp, err := e.c.Get(ctx, &gnmi.GetRequest{Path: []*gnmi.Path{mustPath(fc + "/border-interface")}, Type: gnmi.GetRequest_CONFIG, Encoding: gnmi.Encoding_PROTO})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, el := range resp.GetNotification()[0].GetUpdate()[0].GetVal().GetLeaflistVal().GetElement() {
				got = append(got, el.GetStringVal())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("border-interface after gnmic set %q (-want, +got):\n%s", tt.args, diff)
			}
		})
	}
}
