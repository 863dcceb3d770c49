package plural

import "testing"

// TestCount: a count agrees with its noun ("1 sample", "3 samples"), as the
// tuner's periods and the policy's samples, cuts, notifications, windows
// and times are written; Noun alone, as an error names its keys.
func TestCount(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{{0, "0 windows"}, {1, "1 window"}, {2, "2 windows"}} {
		if got := Count(tt.n, "window"); got != tt.want {
			t.Errorf("Count(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
	if got := Noun(1, "key") + " " + Noun(2, "key"); got != "key keys" {
		t.Errorf("Noun: %q", got)
	}
}
