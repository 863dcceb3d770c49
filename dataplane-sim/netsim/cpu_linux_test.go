//go:build linux

package netsim

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time of the process (all threads, GC included), so
// that benchmarks on a shared machine can report the work done apart from
// the wait for a core. A benchmark runs nothing else in the process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
