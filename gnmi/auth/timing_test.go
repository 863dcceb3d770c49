package auth

import (
	"context"
	"testing"

	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc/metadata"
)

// TestUnknownUserCostsAsMuch: a name not in the users file costs a bcrypt
// comparison at the cost the users' hashes have (the most common one), so
// that its refusal takes as long as a wrong password's and timing does not
// tell which names exist. htpasswd -B hashes at cost 5, lhcnp passwd at
// bcrypt's default 10. It inspects the hash compared against: timing it
// would make a flaky test.
func TestUnknownUserCostsAsMuch(t *testing.T) {
	hash := func(cost int) []byte {
		h, err := bcrypt.GenerateFromPassword([]byte("pw"), cost)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	for _, tt := range []struct {
		desc  string
		costs []int
		want  int
	}{
		{"one user at the minimum cost", []int{bcrypt.MinCost}, bcrypt.MinCost},
		{"htpasswd -B's cost", []int{5, 5}, 5},
		{"the most common cost", []int{bcrypt.MinCost, 5, 5}, 5},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			var users []User
			for i, c := range tt.costs {
				users = append(users, User{Name: string(rune('a' + i)), Role: ReadOnly, Hash: hash(c)})
			}
			a := New(NewUsers(users...))
			ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(MetadataUsername, "mallory", MetadataPassword, "pw"))
			if _, err := a.Authenticate(ctx); err == nil {
				t.Fatal("an unknown user authenticated")
			}
			if got, err := bcrypt.Cost(a.cr.dummy); err != nil || got != tt.want {
				t.Errorf("an unknown user is compared against a hash of cost %d (%v), want %d, the users'", got, err, tt.want)
			}
		})
	}
}

// TestPasswordOverBcryptsLimit: bcrypt reads 72 bytes of a password, so a
// user whose password is 72 bytes long would be let in with any bytes
// after them; a presented password longer than bcrypt can tell apart is
// refused before any comparison. It failed before: the 72 bytes and a
// suffix authenticated.
func TestPasswordOverBcryptsLimit(t *testing.T) {
	pw := make([]byte, 72)
	for i := range pw {
		pw[i] = 'a' + byte(i%26)
	}
	h, err := bcrypt.GenerateFromPassword(pw, bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	a := New(NewUsers(User{Name: "carol", Role: ReadWrite, Hash: h}))
	login := func(p string) error {
		_, err := a.Authenticate(metadata.NewIncomingContext(context.Background(), metadata.Pairs(MetadataUsername, "carol", MetadataPassword, p)))
		return err
	}
	if err := login(string(pw)); err != nil {
		t.Fatalf("the 72-byte password: %v", err)
	}
	if err := login(string(pw) + "anything"); err == nil {
		t.Error("the 72-byte password with a suffix authenticated")
	}
}
