package scenario

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTunerKey(t *testing.T) {
	base, err := os.ReadFile("../../scenarios/compare/rtt-step.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(string(base), "\n")
	tests := []struct {
		desc    string
		extra   string
		dcqcn   bool
		want    *Tuner
		wantErr string
	}{
		{desc: "absent: no tuner", want: nil},
		{desc: "empty block: every default", extra: "tuner: {}\n", want: &Tuner{}},
		{desc: "every key", extra: "tuner:\n  period: 1ms\n  window: 2ms\n  judge_window: 10ms\n  cooldown: 5ms\n  set_delay: 3ms\n  weights: {utilisation: 2, delay: 1, loss: 50, notifications: 0.01}\n",
			want: &Tuner{Period: time.Millisecond, Window: 2 * time.Millisecond, JudgeWindow: 10 * time.Millisecond,
				Cooldown: 5 * time.Millisecond, SetDelay: 3 * time.Millisecond,
				Weights: TunerWeights{Utilisation: 2, Delay: 1, Loss: 50, Notifications: 0.01}}},
		{desc: "unknown key", extra: "tuner: {perod: 1ms}\n", wantErr: "tuner.perod"},
		{desc: "a duration that is not one", extra: "tuner: {period: 10Gbps}\n", wantErr: "tuner.period"},
		{desc: "a negative weight", extra: "tuner: {weights: {delay: -1}}\n", wantErr: "tuner.weights.delay"},
		{desc: "not long-haul-cnp", extra: "tuner: {}\n", dcqcn: true, wantErr: "needs mechanism.kind long-haul-cnp"},
		{desc: "the policy's starting point and rules off", extra: "tuner: {alpha_start: 0.707, rules_off: [under-use, growth]}\n",
			want: &Tuner{AlphaStart: ptr(0.707), RulesOff: &[]string{"under-use", "growth"}}},
		{desc: "every rule on, the switch's K_max kept", extra: "tuner: {alpha_start: 0, rules_off: []}\n",
			want: &Tuner{AlphaStart: ptr(0.0), RulesOff: &[]string{}}},
		{desc: "alpha_start above alpha_max", extra: "tuner: {alpha_start: 20}\n", wantErr: "tuner.alpha_start: 20 is neither 0 nor an alpha"},
		{desc: "alpha_start not a number", extra: "tuner: {alpha_start: half}\n", wantErr: "tuner.alpha_start"},
		{desc: "rules_off: loss", extra: "tuner: {rules_off: [delay, loss]}\n", wantErr: `tuner.rules_off[1]: "loss" is not a rule that can be switched off`},
		{desc: "rules_off: a misspelt rule", extra: "tuner: {rules_off: [under_use]}\n", wantErr: `tuner.rules_off[0]: "under_use" is not a rule`},
		{desc: "rules_off: twice", extra: "tuner: {rules_off: [delay, delay]}\n", wantErr: `tuner.rules_off[1]: "delay" is listed twice`},
		{desc: "rules_off: not a list", extra: "tuner: {rules_off: delay}\n", wantErr: "tuner.rules_off"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			text := string(base)
			if tt.dcqcn {
				text = strings.Replace(text, "kind: long-haul-cnp\n  nodes: [n1, n2]", "kind: dcqcn", 1)
				i := strings.Index(text, "  params:")
				j := strings.Index(text, "traffic:")
				text = text[:i] + text[j:]
			}
			sc, err := Parse("rtt-step.yaml", []byte(text+tt.extra))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse: %v, want an error naming %q", err, tt.wantErr)
				}
				if !tt.dcqcn && !strings.Contains(err.Error(), ":"+strconv.Itoa(lines+1)+":") {
					t.Errorf("error %q does not name line %d", err, lines+1)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, sc.Tuner); diff != "" {
				t.Errorf("Tuner (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTunerScenarios: the tuner's step scenarios load.
func TestTunerScenarios(t *testing.T) {
	files, err := filepath.Glob("../../scenarios/tuner/*.yaml")
	if err != nil || len(files) < 2 {
		t.Fatalf("scenarios/tuner: %v %v", files, err)
	}
	for _, f := range files {
		if _, err := LoadFile(f); err != nil {
			t.Errorf("%v", err)
		}
	}
}

func ptr[T any](v T) *T { return &v }
