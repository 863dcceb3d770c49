package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lhcnp/lhcnp/internal/pidlock"
)

// ErrInUse is returned (wrapped) by Start when another lab holds the state
// directory or the dashboard's address.
var ErrInUse = errors.New("in use by another lhcnp lab")

// lockStateDir takes the lab's hold on its state directory dir (a pidlock
// on DIR/lock), creating the directory; a directory held by a running lab
// is refused with ErrInUse naming that lab's pid; nothing in the directory
// is touched before the lock is held. Its errors name the directory
// named, as the user named it (the banner's and lhcnp lab status' form):
// they gave dir, the absolute path.
func lockStateDir(dir, named string) (*pidlock.Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	l, err := pidlock.Acquire(filepath.Join(dir, "lock"))
	var held *pidlock.HeldError
	if errors.As(err, &held) {
		return nil, fmt.Errorf("state directory %s is %w (%v): stop it, or give this one another --state-dir", named, ErrInUse, held)
	}
	if err != nil {
		return nil, fmt.Errorf("state directory %s: lock: %w", named, err)
	}
	return l, nil
}

// lockHolder reports whether a lab holds dir's lock now, and its pid.
func lockHolder(dir string) (pid int, held bool) { return pidlock.Holder(filepath.Join(dir, "lock")) }
