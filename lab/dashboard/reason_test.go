package dashboard

import (
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
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
