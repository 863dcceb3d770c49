package auth

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestWithStreamLimits: the authenticators WithStreamLimits derives from
// one (the switches of a process) each count their own streams against
// their own limits, and share the users: a SetUsers on the first is what
// every one checks. It failed before: the switches of a process shared one
// authenticator, so a user's streams on one switch counted against the
// others'.
func TestWithStreamLimits(t *testing.T) {
	base := New(usersWith(t, "carol", "old-pw"))
	n1, n2 := base.WithStreamLimits(3, 1), base.WithStreamLimits(2, 2)
	for _, tt := range []struct {
		desc string
		a    *Authenticator
		user string
		want string // "" for admitted, else the refusal's limit
	}{
		{"n1, carol's first", n1, "carol", ""},
		{"n1, carol's second", n1, "carol", `too many streams for user "carol": limit 1 (max_streams_per_user)`},
		{"n2, carol's first: n1's do not count", n2, "carol", ""},
		{"n2, carol's second", n2, "carol", ""},
		{"n2, dave's first: over n2's total", n2, "dave", "too many streams on this target: limit 2 (max_streams)"},
		{"n1, dave's first", n1, "dave", ""},
	} {
		err := tt.a.acquire(tt.user)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.desc, err)
		case tt.want != "" && (status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want RESOURCE_EXHAUSTED %q", tt.desc, err, tt.want)
		}
	}
	if n1.Streams() != 2 || n2.Streams() != 2 || base.Streams() != 0 {
		t.Errorf("streams n1 %d, n2 %d, base %d; want 2, 2, 0", n1.Streams(), n2.Streams(), base.Streams())
	}

	base.SetUsers(usersWith(t, "carol", "new-pw"))
	for _, a := range []*Authenticator{n1, n2} {
		if _, err := a.Authenticate(login(context.Background(), "carol", "new-pw")); err != nil {
			t.Errorf("the new password after the base's SetUsers: %v", err)
		}
	}
}
