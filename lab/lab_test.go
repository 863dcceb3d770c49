package lab

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStateDirLocked: a second lab on a state directory in use is refused
// with ErrInUse naming the holder; once released, the directory is free.
func TestStateDirLocked(t *testing.T) {
	dir := t.TempDir()
	first, err := lockStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockStateDir(dir)
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "pid ") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second lock: %v, want ErrInUse naming the directory and the pid", err)
	}
	first.release()
	again, err := lockStateDir(dir)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again.release()
}

// TestStartRefusesBusyAddress: with the dashboard's address taken, Start
// fails with ErrInUse before it starts PostgreSQL or anything else, and
// leaves the state directory unlocked.
func TestStartRefusesBusyAddress(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	_, err = Start(context.Background(), Config{StateDir: dir, HTTPAddr: busy.Addr().String()})
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "--http") {
		t.Fatalf("Start: %v, want ErrInUse saying to choose another --http", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "postgres")); !os.IsNotExist(err) {
		t.Errorf("a postgres directory was made (%v): nothing should start before the address is ours", err)
	}
	l, err := lockStateDir(dir)
	if err != nil {
		t.Fatalf("the failed start kept the state directory locked: %v", err)
	}
	l.release()
}
