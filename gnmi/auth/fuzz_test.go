package auth

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParseUsers: a users file never makes the parser panic, and every
// rejection wraps ErrUsersFile (or is a read error) and names the line.
func FuzzParseUsers(f *testing.F) {
	f.Add("alice:read-write:$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy\n")
	f.Add("# comment\n\nbob:ro:$2a$04$abcdefghijklmnopqrstuu5Q0dOVm1Mw2TsXGvMx9F6rYfQ3Qe5lO\n")
	f.Add("carol:admin:x\n")
	f.Add(":rw:$2a$10$\n")
	f.Add("dave:rw\n")
	f.Fuzz(func(t *testing.T, file string) {
		u, err := ParseUsers(strings.NewReader(file))
		if err != nil {
			if errors.Is(err, ErrUsersFile) && !strings.Contains(err.Error(), "line ") {
				t.Fatalf("rejection without a line: %v", err)
			}
			return
		}
		if u == nil {
			t.Fatal("nil users without an error")
		}
	})
}
