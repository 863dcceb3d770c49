package dashboard

import (
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// TestQueueRequestWindow: a window in whole seconds whose nanoseconds
// overflow a time.Duration is refused, not wrapped round into a short
// window that passes the range check (18446744075 s was read as 1.29 s).
func TestQueueRequestWindow(t *testing.T) {
	s := New(nil)
	for _, c := range []struct {
		window string
		want   time.Duration // 0: refused
	}{
		{"", 5 * time.Minute},
		{"300", 300 * time.Second},
		{"86400", 24 * time.Hour},
		{"90s", 90 * time.Second},
		{"86401", 0},
		{"0", 0},
		{"-5", 0},
		{"18446744075", 0},
		{"9223372037", 0},
		{"-9223372037", 0},
		{"99999999999999999999", 0},
	} {
		t.Run(c.window, func(t *testing.T) {
			q := url.Values{"target": {"n1"}, "interface": {"eth0"}, "queue": {"3"}}
			if c.window != "" {
				q.Set("window", c.window)
			}
			got, err := s.parseQueueRequest(httptest.NewRequest("GET", "/api/queue?"+q.Encode(), nil))
			switch {
			case c.want == 0 && err == nil:
				t.Errorf("window %q read as %v, want an error", c.window, got.Window)
			case c.want != 0 && (err != nil || got.Window != c.want):
				t.Errorf("window %q read as %v, %v; want %v", c.window, got.Window, err, c.want)
			}
		})
	}
}

// FuzzParseQueueRequest: any window a browser sends in /api/queue's query
// string is refused or read as a window within (0, maxWindow]; one given
// as an integer is that many whole seconds.
func FuzzParseQueueRequest(f *testing.F) {
	for _, w := range []string{"", "10", "300", "86400", "86401", "0", "-5", "30s", "1h", "24h", "25h", "1.5m", "x"} {
		f.Add(w)
	}
	s := New(nil)
	f.Fuzz(func(t *testing.T, w string) {
		q := url.Values{"target": {"n1"}, "interface": {"eth0"}, "queue": {"3"}, "window": {w}}
		got, err := s.parseQueueRequest(httptest.NewRequest("GET", "/api/queue?"+q.Encode(), nil))
		if err != nil {
			return
		}
		if got.Window <= 0 || got.Window > s.opts.maxWindow {
			t.Fatalf("window %q read as %v, outside (0, %v]", w, got.Window, s.opts.maxWindow)
		}
		if n, perr := strconv.ParseInt(w, 10, 64); perr == nil && (got.Window%time.Second != 0 || int64(got.Window/time.Second) != n) {
			t.Fatalf("window %q read as %v, want %d s", w, got.Window, n)
		}
	})
}
