// Package pidlock is a process's exclusive hold on a file: a flock on it,
// with the holder's pid written inside, released by the kernel when the
// process ends however it ends (a killed process leaves no stale lock). The
// lab's state directory and each switch's startup configuration use it.
package pidlock

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// HeldError says the lock is held by another process (or another holder in
// this one); PID is the holder's, 0 when the file did not say.
type HeldError struct{ PID int }

func (e *HeldError) Error() string {
	if e.PID == 0 {
		return "held by another process"
	}
	return "held by pid " + strconv.Itoa(e.PID)
}

// Lock is a held lock.
type Lock struct{ f *os.File }

// Acquire takes path's lock without waiting, creating the file; a lock
// held elsewhere is a *HeldError.
func Acquire(path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			return nil, &HeldError{PID: pid}
		}
		return nil, err
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// Release drops the lock (the file stays: removing it would race with a
// process that opened it meanwhile). Safe to call more than once, and on nil.
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
	l.f = nil
}

// Holder reports whether a process holds path's lock now, and its pid,
// without taking it.
func Holder(path string) (pid int, held bool) {
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
