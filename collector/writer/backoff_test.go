package writer

import (
	"testing"
	"time"
)

// TestBackOffLongestWait: no wait of the back-off exceeds the configured
// longest one, jitter included (backoff's own MaxInterval is exceeded by
// up to its randomization factor), and the waits do reach near it.
func TestBackOffLongestWait(t *testing.T) {
	tests := []struct {
		desc             string
		initial, longest time.Duration
	}{
		{"writer: 50 ms up to 10 s", 50 * time.Millisecond, 10 * time.Second},
		{"latest reads: 100 ms up to 1 s", 100 * time.Millisecond, time.Second},
		{"initial above the longest", 2 * time.Second, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			bo := NewBackOff(tt.initial, tt.longest)
			var most time.Duration
			for range 2000 {
				d := bo.NextBackOff()
				if d > tt.longest {
					t.Fatalf("waited %v, longer than %v", d, tt.longest)
				}
				most = max(most, d)
			}
			if most < tt.longest*8/10 {
				t.Errorf("longest wait %v in 2000, want near %v", most, tt.longest)
			}
		})
	}
}
