package mechanism

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/dataplane-sim/engine"
	"github.com/lhcnp/lhcnp/dataplane-sim/lhcnp"
)

// The batch runner sums the functions' counters over the switches; a
// max_ counter keeps the largest.
func TestAddCounters(t *testing.T) {
	tests := []struct {
		desc       string
		into, from map[string]int64
		want       map[string]int64
	}{
		{desc: "into nothing", into: map[string]int64{}, from: map[string]int64{"sent": 2, "max_delay_ns": 5},
			want: map[string]int64{"sent": 2, "max_delay_ns": 5}},
		{desc: "sums and the largest", into: map[string]int64{"sent": 3, "max_delay_ns": 7}, from: map[string]int64{"sent": 2, "max_delay_ns": 5},
			want: map[string]int64{"sent": 5, "max_delay_ns": 7}},
		{desc: "a zero counter is there", into: map[string]int64{}, from: map[string]int64{"dropped": 0},
			want: map[string]int64{"dropped": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			AddCounters(tt.into, tt.from)
			if diff := cmp.Diff(tt.want, tt.into); diff != "" {
				t.Errorf("counters (-want +got):\n%s", diff)
			}
		})
	}
}

type testConfig struct{ N int }

func (c *testConfig) Validate() error {
	if c.N < 0 {
		return errNegative
	}
	return nil
}

var errNegative = errors.New("n must not be negative")

func TestValidate(t *testing.T) {
	tests := []struct {
		desc    string
		cfg     any
		wantErr string
	}{
		{desc: "valid", cfg: testConfig{N: 1}},
		{desc: "invalid", cfg: testConfig{N: -1}, wantErr: "test: switch s1: n must not be negative"},
		{desc: "another mechanism's type", cfg: 3, wantErr: "test: switch s1: configuration of type int, want mechanism.testConfig"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			err := Validate[testConfig](tt.cfg, "test: switch s1")
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Validate = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestDetectionConfig: the node under a mechanism's mode notifies within
// the mechanism's limits, re-evaluates a queue once per per-flow interval,
// never pauses, resumes or collaborates.
func TestDetectionConfig(t *testing.T) {
	l := Limits{MinCNPInterval: 50 * engine.Microsecond, PortCNPRatePerSec: 1000, PortCNPBurst: 10, MaxFlowsPerTrigger: 3}
	lc := DetectionConfig(true, 46, 6, l)
	ic, q := lc.Interface, lc.Interface.Queue
	for _, tt := range []struct {
		desc      string
		got, want any
	}{
		{"enabled", lc.Enabled, true},
		{"dscp, prio", [2]uint8{lc.CNPDSCP, lc.CNPPrio}, [2]uint8{46, 6}},
		{"collaboration", [2]bool{lc.Collaborative.Enabled, lc.Collaborative.UpstreamFirst}, [2]bool{}},
		{"port bucket", [2]int64{ic.CNPRatePerSec, ic.CNPBurst}, [2]int64{1000, 10}},
		{"per-flow interval, measurement, EMR window", [3]engine.Time{q.MinCNPInterval, q.MeasurementInterval, q.EMRWindow},
			[3]engine.Time{l.MinCNPInterval, l.MinCNPInterval, l.MinCNPInterval}},
		{"pause level", q.Action.PauseLevel, lhcnp.PauseLevelNever},
		{"resume", q.Action.ResumeEnabled, false},
		{"flows per trigger", q.Action.MaxFlowsPerTrigger, 3},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: %v, want %v", tt.desc, tt.got, tt.want)
		}
	}
}
