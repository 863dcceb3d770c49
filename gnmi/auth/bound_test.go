package auth

import (
	"context"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// login returns the context of an RPC with the user's credentials.
func login(ctx context.Context, user, pw string) context.Context {
	return metadata.NewIncomingContext(ctx, metadata.Pairs(MetadataUsername, user, MetadataPassword, pw))
}

// usersWith returns users of one read-write user with the password, hashed
// at bcrypt's minimum cost.
func usersWith(t *testing.T, user, pw string) *Users {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return NewUsers(User{Name: user, Role: ReadWrite, Hash: h})
}

// TestAuthBcryptBounded: with WithMaxConcurrentBcrypt(1), a wrong password
// checked while another comparison holds the slot waits for it (onWait)
// instead of comparing alongside (compare entered twice), and fails with
// its context's error when the RPC ends first; a password already verified
// is answered from the cache without waiting. Comparisons are held by the
// compare hook, not timed. It failed before: every check ran bcrypt at
// once, so wrong passwords from many streams kept every core busy.
func TestAuthBcryptBounded(t *testing.T) {
	a := New(usersWith(t, "carol", "right"), WithMaxConcurrentBcrypt(1))
	if _, err := a.Authenticate(login(context.Background(), "carol", "right")); err != nil {
		t.Fatalf("carol's password: %v", err)
	}
	entered := make(chan string)      // the password a comparison started with
	release := make(chan struct{})    // closed: held comparisons go on
	waiting := make(chan struct{}, 4) // a check waits for a slot
	a.cr.compare = func(hash, pw []byte) error {
		entered <- string(pw)
		<-release
		return bcrypt.CompareHashAndPassword(hash, pw)
	}
	a.cr.onWait = func() { waiting <- struct{}{} }
	check := func(ctx context.Context, user, pw string) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := a.Authenticate(login(ctx, user, pw))
			done <- err
		}()
		return done
	}

	first := check(context.Background(), "carol", "wrong-1")
	if got := <-entered; got != "wrong-1" {
		t.Fatalf("comparing %q, want wrong-1", got)
	}
	second := check(context.Background(), "mallory", "wrong-2")
	select {
	case got := <-entered:
		t.Fatalf("%q compared while wrong-1 held the only slot", got)
	case <-waiting:
	}

	select {
	case err := <-check(context.Background(), "carol", "right"):
		if err != nil {
			t.Errorf("carol's verified password while the slot is held: %v", err)
		}
	case <-waiting:
		t.Error("carol's verified password waited for a bcrypt slot")
	}

	ctx, cancel := context.WithCancel(context.Background())
	third := check(ctx, "carol", "wrong-3")
	<-waiting
	cancel()
	if err := <-third; status.Code(err) != codes.Canceled {
		t.Errorf("a waiting check whose RPC ended: %v, want CANCELLED", err)
	}

	close(release)
	if err := <-first; status.Code(err) != codes.Unauthenticated {
		t.Errorf("wrong-1: %v, want UNAUTHENTICATED", err)
	}
	if got := <-entered; got != "wrong-2" {
		t.Errorf("after wrong-1, comparing %q, want wrong-2", got)
	}
	if err := <-second; status.Code(err) != codes.Unauthenticated {
		t.Errorf("wrong-2: %v, want UNAUTHENTICATED", err)
	}
}

// TestAuthBcryptWaitingBounded: with one bcrypt slot and room for one
// check to wait, a third check while the slot is held and one waits is
// refused at once, RESOURCE_EXHAUSTED naming the limit, without waiting
// (onWait); a verified password still gets in; once the queue empties,
// checks go on. Comparisons are held by the compare hook, not timed.
// It failed before: every check waited, so wrong passwords from many
// connections piled up goroutines without end.
func TestAuthBcryptWaitingBounded(t *testing.T) {
	a := New(usersWith(t, "carol", "right"), WithMaxConcurrentBcrypt(1), WithMaxBcryptWaiting(1))
	if _, err := a.Authenticate(login(context.Background(), "carol", "right")); err != nil {
		t.Fatalf("carol's password: %v", err)
	}
	entered := make(chan string)
	release := make(chan struct{})
	waiting := make(chan struct{}, 4)
	a.cr.compare = func(hash, pw []byte) error {
		entered <- string(pw)
		<-release
		return bcrypt.CompareHashAndPassword(hash, pw)
	}
	a.cr.onWait = func() { waiting <- struct{}{} }
	check := func(user, pw string) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := a.Authenticate(login(context.Background(), user, pw))
			done <- err
		}()
		return done
	}

	first := check("carol", "wrong-1")
	<-entered // holds the slot
	second := check("mallory", "wrong-2")
	<-waiting // the one check that may wait
	select {
	case err := <-check("mallory", "wrong-3"):
		if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "too many password checks waiting for bcrypt: limit 1") {
			t.Errorf("a check over the waiting bound: %v, want RESOURCE_EXHAUSTED naming the limit", err)
		}
	case <-waiting:
		t.Fatal("a check over the waiting bound waits")
	}
	if err := <-check("carol", "right"); err != nil {
		t.Errorf("carol's verified password with the queue full: %v", err)
	}

	close(release)
	<-first
	<-entered // wrong-2 has the slot: nothing waits
	<-second
	fourth := check("mallory", "wrong-4")
	<-entered
	if err := <-fourth; status.Code(err) != codes.Unauthenticated {
		t.Errorf("a check after the queue emptied: %v, want UNAUTHENTICATED", err)
	}
}
