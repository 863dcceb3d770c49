// Package cputime reads the CPU time the process has used, so that
// benchmarks on a shared machine can report the work done apart from the
// wait for a core (b.ReportMetric next to the wall time).
//
// It depends on the standard library alone.
package cputime

import "time"

// Process returns the CPU time of the process, user and system, all
// threads (the GC's included); 0 where the platform does not tell.
func Process() time.Duration { return process() }

// PeakRSS returns the process's peak resident set in bytes (getrusage's
// maxrss, Linux's VmHWM), 0 where the platform does not tell. It covers
// the whole process: a benchmark that reports it runs alone.
func PeakRSS() int64 { return peakRSS() }

// Thread returns the CPU time of the calling OS thread (0 where the
// platform does not tell). A goroutine that reads it twice must be locked
// to its thread in between (runtime.LockOSThread) for the difference to
// be its own work.
func Thread() time.Duration { return thread() }
