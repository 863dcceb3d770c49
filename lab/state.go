package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrInUse is returned (wrapped) by Start when another lab holds the state
// directory or the dashboard's address.
var ErrInUse = errors.New("in use by another lhcnp lab")

// stateLock is the lab's hold on its state directory: an exclusive flock
// on STATE/lock, released by the kernel when the process ends however it
// ends, so a killed lab leaves no stale lock behind.
type stateLock struct {
	f *os.File
}

// lockStateDir creates dir if needed and locks it. A directory locked by a
// running lab is refused with ErrInUse naming that lab's pid; nothing in the
// directory is touched before the lock is held.
func lockStateDir(dir string) (*stateLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	path := filepath.Join(dir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		holder := "another process"
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
			holder = fmt.Sprintf("pid %d", pid)
		}
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("state directory %s is %w (%s): stop it, or give this one another --state-dir", dir, ErrInUse, holder)
		}
		return nil, fmt.Errorf("state directory %s: lock: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &stateLock{f: f}, nil
}

// release drops the lock (the file stays: removing it would race with a
// lab that opened it meanwhile).
func (l *stateLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
	l.f = nil
}

// lockHolder reports whether a lab holds dir's lock now, and its pid.
func lockHolder(dir string) (pid int, held bool) {
	path := filepath.Join(dir, "lock")
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return 0, false
	}
	b, _ := os.ReadFile(path)
	pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, true
}
