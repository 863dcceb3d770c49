package auth

import (
	"context"
	"testing"

	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestSetUsersDuringCheck: a password verified against the users SetUsers
// is replacing is not cached after the reload cleared the cache, so the
// old password does not keep working. The compare hook reloads between
// the comparison and the cache's store. It failed before: the old
// password, cached after the reload, let carol in against the new users.
func TestSetUsersDuringCheck(t *testing.T) {
	a := New(usersWith(t, "carol", "old-pw"))
	reloaded := usersWith(t, "carol", "new-pw")
	a.cr.compare = func(hash, pw []byte) error {
		err := bcrypt.CompareHashAndPassword(hash, pw)
		a.SetUsers(reloaded)
		return err
	}
	// Verified against the users at the start of its RPC: let in.
	if _, err := a.Authenticate(login(context.Background(), "carol", "old-pw")); err != nil {
		t.Fatalf("the old password during the reload: %v", err)
	}
	a.cr.compare = bcrypt.CompareHashAndPassword
	if _, err := a.Authenticate(login(context.Background(), "carol", "old-pw")); status.Code(err) != codes.Unauthenticated {
		t.Errorf("the old password after the reload: %v, want UNAUTHENTICATED", err)
	}
	if _, err := a.Authenticate(login(context.Background(), "carol", "new-pw")); err != nil {
		t.Errorf("the new password after the reload: %v", err)
	}
}
