package pidlock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestAcquire(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	l, err := Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	// A second open file description is refused while the first holds it,
	// naming this process.
	_, err = Acquire(path)
	var held *HeldError
	if !errors.As(err, &held) || held.PID != os.Getpid() {
		t.Fatalf("second Acquire: %v, want held by pid %d", err, os.Getpid())
	}
	l.Release()
	l.Release()
	l2, err := Acquire(path)
	if err != nil {
		t.Fatalf("after Release: %v", err)
	}
	l2.Release()
}
