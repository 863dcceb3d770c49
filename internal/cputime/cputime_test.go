package cputime

import (
	"runtime"
	"testing"
	"time"
)

// TestProcessGrows: work done on this goroutine shows in the process's CPU
// time within a few seconds (on Linux; elsewhere Process is 0).
func TestProcessGrows(t *testing.T) {
	if runtime.GOOS != "linux" {
		if got := Process(); got != 0 {
			t.Fatalf("Process() = %v off Linux, want 0", got)
		}
		return
	}
	before := Process()
	deadline := time.Now().Add(10 * time.Second)
	x := uint64(1)
	for Process() <= before {
		if time.Now().After(deadline) {
			t.Fatalf("CPU time still %v after 10 s of work", before)
		}
		for range 1_000_000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	t.Logf("CPU time %v -> %v (%d)", before, Process(), x&1)
}

// TestPeakRSS: the peak resident set is at least what the heap holds
// after touching a 64 MB slice.
func TestPeakRSS(t *testing.T) {
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = 1
	}
	if got := PeakRSS(); runtime.GOOS == "linux" && got < int64(len(buf)) {
		t.Errorf("PeakRSS %d after touching %d bytes, want at least that", got, len(buf))
	}
	runtime.KeepAlive(buf)
}

// TestThreadGrows: work done on a locked goroutine shows in its thread's
// CPU time (on Linux; elsewhere Thread is 0).
func TestThreadGrows(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if runtime.GOOS != "linux" {
		if got := Thread(); got != 0 {
			t.Fatalf("Thread() = %v off Linux, want 0", got)
		}
		return
	}
	before, pbefore := Thread(), Process()
	x := uint64(1)
	for Thread() <= before {
		for range 1_000_000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	if d, pd := Thread()-before, Process()-pbefore; d <= 0 {
		t.Fatalf("thread CPU time went from %v by %v", before, d)
	} else {
		t.Logf("thread +%v, process +%v (%d)", d, pd, x&1)
	}
}
