package lhcnp

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
)

func TestBDPKMaxBytes(t *testing.T) {
	for _, tt := range []struct {
		desc           string
		kbase          int64
		alpha          float64
		rateBitsPerSec int64
		rtt            time.Duration
		want           int64
	}{
		{desc: "§7: 100 Gbit/s, 10 ms", kbase: DefaultKBaseBytes, alpha: 1, rateBitsPerSec: 100e9, rtt: 10 * time.Millisecond, want: 125_000_000},
		{desc: "alpha scales the BDP", kbase: DefaultKBaseBytes, alpha: 0.5, rateBitsPerSec: 100e9, rtt: 10 * time.Millisecond, want: 62_500_000},
		{desc: "the K_base floor", kbase: DefaultKBaseBytes, alpha: 1, rateBitsPerSec: 100e9, rtt: 2 * time.Microsecond, want: DefaultKBaseBytes},
		{desc: "whole bytes, truncated", kbase: 1, alpha: 1, rateBitsPerSec: 12, rtt: time.Second, want: 1},
		// Wrapped negative before, leaving K_base.
		{desc: "held at the int64 top", kbase: 1, alpha: 1, rateBitsPerSec: math.MaxInt64, rtt: 4294967295 * time.Microsecond, want: math.MaxInt64},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, BDPKMaxBytes(tt.kbase, tt.alpha, tt.rateBitsPerSec, tt.rtt)); diff != "" {
				t.Errorf("BDPKMaxBytes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckKMin(t *testing.T) {
	for _, tt := range []struct {
		desc              string
		kmin, kmax, kbase int64
		mode              KMaxMode
		want              *KMinError
	}{
		{desc: "below an explicit K_max", kmin: 9, kmax: 10, kbase: 64_000, mode: KMaxExplicit},
		{desc: "at an explicit K_max", kmin: 10, kmax: 10, kbase: 64_000, mode: KMaxExplicit,
			want: &KMinError{KMinBytes: 10, BoundBytes: 10}},
		{desc: "an explicit K_max ignores K_base", kmin: 70_000, kmax: 100_000, kbase: 64_000, mode: KMaxExplicit},
		{desc: "below K_base, the smallest BDP-adaptive K_max", kmin: 63_999, kbase: 64_000, mode: KMaxBDP},
		{desc: "at K_base", kmin: 64_000, kbase: 64_000, mode: KMaxBDP,
			want: &KMinError{KMinBytes: 64_000, BoundBytes: 64_000, KBase: true}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var got *KMinError
			if err := CheckKMin(tt.kmin, tt.mode, tt.kmax, tt.kbase); err != nil {
				got = err.(*KMinError)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("CheckKMin (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckCongestionAction(t *testing.T) {
	for _, tt := range []struct {
		desc string
		a    wire.Action
		want *ActionError
	}{
		{desc: "notify", a: wire.ActionNotify},
		{desc: "pause", a: wire.ActionPause},
		{desc: "rate reduce", a: wire.ActionRateReduce},
		{desc: "resume", a: wire.ActionResume, want: &ActionError{Action: wire.ActionResume}},
		{desc: "no such action", a: wire.ActionResume + 1, want: &ActionError{Action: wire.ActionResume + 1}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var got *ActionError
			if err := CheckCongestionAction(tt.a); err != nil {
				got = err.(*ActionError)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("CheckCongestionAction (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLevelAtKMaxFactor: the level of f times K_max is the one the node
// gives such a queue (levelQD), whatever K_max.
func TestLevelAtKMaxFactor(t *testing.T) {
	for _, tt := range []struct {
		desc string
		f    float64
		want uint8
	}{
		{desc: "at K_max", f: 1, want: 170},
		{desc: "1.2 K_max", f: 1.2, want: 221},
		{desc: "rounded", f: 1.25, want: 234},
		{desc: "4/3 K_max", f: 4.0 / 3, want: 255},
		{desc: "capped", f: 1.5, want: 255},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			got := LevelAtKMaxFactor(tt.f)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("LevelAtKMaxFactor(%g) (-want +got):\n%s", tt.f, diff)
			}
			for _, kmax := range []int64{255_000, 125_000_000} {
				qd := int64(math.Round(tt.f * float64(kmax)))
				if l := levelQD(qd, kmax/2, kmax); l != got {
					t.Errorf("levelQD(%d, K_max %d) = %d, want %d", qd, kmax, l, got)
				}
			}
		})
	}
}

// TestKMinDerivedFraction: the derived K_min is K_max times the fraction.
func TestKMinDerivedFraction(t *testing.T) {
	qc := DefaultQueueConfig()
	qc.KMaxMode, qc.KMaxBytes = KMaxExplicit, 125_000_000
	_, kmin := thresholds(&qc, 100e9, DefaultRTTEst)
	if want := int64(KMinDerivedFraction * float64(qc.KMaxBytes)); kmin != want {
		t.Errorf("derived K_min %d, want %d", kmin, want)
	}
}
