// Package auth secures the gNMI target: TLS (mutual TLS optional) from
// certificate files, username/password from gRPC metadata checked against
// bcrypt hashes in a users file, two roles (read-only, read-write), and
// limits on concurrent streams. It provides gRPC interceptors; it knows
// nothing about the gNMI data it protects beyond the RPC method names.
//
// The users file has one user per line, "name:role:bcrypt-hash", where role
// is read-only (ro) or read-write (rw); blank lines and lines starting with
// '#' are ignored. PasswdLine (exposed as `lhcnp passwd`) writes such a line.
// LoadUsers refuses a file others may read or its group or others write.
package auth

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// Role is what an authenticated user may do.
type Role int

// The roles.
const (
	// ReadOnly may call Capabilities, Get and Subscribe.
	ReadOnly Role = iota + 1
	// ReadWrite may also call Set.
	ReadWrite
)

func (r Role) String() string {
	switch r {
	case ReadOnly:
		return "read-only"
	case ReadWrite:
		return "read-write"
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// ParseRole accepts "read-only"/"ro" and "read-write"/"rw".
func ParseRole(s string) (Role, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "read-only", "ro", "readonly":
		return ReadOnly, nil
	case "read-write", "rw", "readwrite":
		return ReadWrite, nil
	}
	return 0, fmt.Errorf("unknown role %q: want read-only or read-write", s)
}

// User is one entry of the users file.
type User struct {
	Name string
	Role Role
	Hash []byte // bcrypt
}

// Users is a parsed users file.
type Users struct {
	byName map[string]User
}

// ErrUsersFile reports a malformed users file.
var ErrUsersFile = errors.New("bad users file")

// LineError is a malformed line of a users file: its number (from 1) and
// what is wrong, an error wrapping ErrUsersFile. LoadUsers reports it as
// PATH:LINE: ...
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// maxUsersLine bounds one line of a users file (a bcrypt line is about
// 80 bytes); a longer line is an error naming it.
const maxUsersLine = 64 << 10

// ParseUsers reads the "name:role:bcrypt-hash" format. A malformed line is
// a *LineError.
func ParseUsers(r io.Reader) (*Users, error) {
	u := &Users{byName: map[string]User{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxUsersLine)
	bad := func(line int, format string, args ...any) error {
		return &LineError{Line: line, Err: fmt.Errorf("%w: "+format, append([]any{ErrUsersFile}, args...)...)}
	}
	line := 1
	for ; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		parts := strings.SplitN(text, ":", 3)
		if len(parts) != 3 || parts[0] == "" {
			return nil, bad(line, "want name:role:bcrypt-hash")
		}
		role, err := ParseRole(parts[1])
		if err != nil {
			return nil, bad(line, "%v", err)
		}
		if _, err := bcrypt.Cost([]byte(parts[2])); err != nil {
			return nil, bad(line, "user %q: not a bcrypt hash: %v", parts[0], err)
		}
		if _, dup := u.byName[parts[0]]; dup {
			return nil, bad(line, "user %q listed twice", parts[0])
		}
		u.byName[parts[0]] = User{Name: parts[0], Role: role, Hash: []byte(parts[2])}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, bad(line, "longer than %d bytes", maxUsersLine)
		}
		return nil, err
	}
	return u, nil
}

// looseModeBits are the permissions a users file must not have: read by
// others (its hashes cracked offline) or written by its group or others (a
// read-write user added).
const looseModeBits fs.FileMode = 0o026

// LoadUsers reads a users file. It refuses one that others may read or its
// group or others may write, as ssh refuses such a key (Windows has no such
// bits: there it is not checked).
func LoadUsers(path string) (*Users, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if runtime.GOOS != "windows" {
		st, err := f.Stat()
		if err != nil {
			return nil, err
		}
		if m := st.Mode().Perm(); m&looseModeBits != 0 {
			return nil, fmt.Errorf("%s: %w: mode %04o lets others read the hashes or change the users: chmod 600 (or 640) it",
				path, ErrUsersFile, m)
		}
	}
	u, err := ParseUsers(f)
	var le *LineError
	switch {
	case errors.As(err, &le):
		return nil, fmt.Errorf("%s:%d: %w", path, le.Line, le.Err)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return u, nil
}

// NewUsers builds a Users from entries (tests, embedding).
func NewUsers(users ...User) *Users {
	u := &Users{byName: map[string]User{}}
	for _, x := range users {
		u.byName[x.Name] = x
	}
	return u
}

// commonCost returns the bcrypt cost most of the users' hashes have (the
// higher of a tie), bcrypt's default when there are none.
func (u *Users) commonCost() int {
	n := map[int]int{}
	best := bcrypt.DefaultCost
	for _, x := range u.byName {
		c, err := bcrypt.Cost(x.Hash)
		if err != nil {
			continue
		}
		if n[c]++; n[c] > n[best] || n[c] == n[best] && c > best {
			best = c
		}
	}
	return best
}

// Len returns the number of users.
func (u *Users) Len() int { return len(u.byName) }

// MaxPasswordBytes is the longest password bcrypt tells apart: it reads 72
// bytes. PasswdLine refuses a longer one, and Authenticate refuses one
// presented.
const MaxPasswordBytes = 72

// HashPassword returns the bcrypt hash of a password at cost (0: bcrypt's
// default cost).
func HashPassword(password string, cost int) (string, error) {
	if cost == 0 {
		cost = bcrypt.DefaultCost
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), cost)
	return string(h), err
}

// CheckUserName says why name cannot be a users-file name (`"a:b": must be
// non-empty without ':', '#' or spaces`), for a command to refuse it before
// it asks for the password.
func CheckUserName(name string) error {
	if name == "" || strings.ContainsAny(name, ": \t\n#") {
		return fmt.Errorf("%q: must be non-empty without ':', '#' or spaces", name)
	}
	return nil
}

// PasswdLine returns a users-file line for the user: "name:role:hash".
func PasswdLine(name string, role Role, password string) (string, error) {
	if err := CheckUserName(name); err != nil {
		return "", fmt.Errorf("user name %w", err)
	}
	if role != ReadOnly && role != ReadWrite {
		return "", fmt.Errorf("unknown role %v", role)
	}
	if password == "" {
		return "", errors.New("empty password")
	}
	if len(password) > MaxPasswordBytes {
		return "", fmt.Errorf("password of %d bytes: bcrypt reads %d, so the rest would not count", len(password), MaxPasswordBytes)
	}
	h, err := HashPassword(password, 0)
	if err != nil {
		return "", err
	}
	return name + ":" + role.String() + ":" + h, nil
}
