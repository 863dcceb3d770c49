package dashboard

import (
	"net/http/httptest"
	"net/url"
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
